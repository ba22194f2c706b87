# exercise: attention
# diagnosis: mha_keys_and_values_from_x_q
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

    def _heads(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)

    def forward(self, x_q, x_kv, mask=None):
        x = x_q  # self-attention
        out, w = scaled_dot_product_attention(self._heads(self.W_q(x)), self._heads(self.W_k(x)),
                                              self._heads(self.W_v(x)), mask)
        B, H, T, dh = out.shape
        return self.W_o(out.transpose(1, 2).reshape(B, T, H * dh)), w
