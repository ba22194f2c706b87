# exercise: attention
# diagnosis: mha_scale_by_sqrt_d_model
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
        Tk = x_kv.shape[1]
        q = self.W_q(x_q).view(B, Tq, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.W_k(x_kv).view(B, Tk, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.W_v(x_kv).view(B, Tk, self.n_heads, self.head_dim).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_model)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        w = torch.softmax(scores, -1)
        if mask is not None:
            w = w.masked_fill(~mask, 0.0)
        out = (w @ v).transpose(1, 2).reshape(B, Tq, D)
        return self.W_o(out), w
