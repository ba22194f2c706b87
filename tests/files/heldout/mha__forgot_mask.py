# exercise: attention
# diagnosis: mha_mask_not_passed
import math

import torch
from torch import nn


def scaled_dot_product_attention(Q, K, V, mask=None):
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = torch.softmax(s, dim=-1)
    if mask is not None:
        w = w.masked_fill(~mask, 0.0)
    return w @ V, w


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("indivisible")
        self.n_heads, self.head_dim, self.d_model = num_heads, d_model // num_heads, d_model
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x_q, x_kv, mask=None):
        B, Tq, D = x_q.shape
        Tk = x_kv.size(1)
        split = lambda x, T: x.view(B, T, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        q, k, v = split(self.W_q(x_q), Tq), split(self.W_k(x_kv), Tk), split(self.W_v(x_kv), Tk)
        out, w = scaled_dot_product_attention(q, k, v)
        return self.W_o(out.permute(0, 2, 1, 3).flatten(2)), w
