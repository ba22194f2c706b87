# exercise: attention
# diagnosis: mha_interleaved_heads
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
        H = self.n_heads
        q, k, v = self.W_q(x_q), self.W_k(x_kv), self.W_v(x_kv)
        # head h takes every H-th feature
        qs = torch.stack([q[..., h::H] for h in range(H)], dim=1)
        ks = torch.stack([k[..., h::H] for h in range(H)], dim=1)
        vs = torch.stack([v[..., h::H] for h in range(H)], dim=1)
        out, w = scaled_dot_product_attention(qs, ks, vs, mask)     # (B, H, Tq, dh)
        B, _, Tq, dh = out.shape
        merged = torch.empty(B, Tq, self.d_model, dtype=out.dtype)
        merged = torch.stack([out[:, h] for h in range(H)], dim=-1).reshape(B, Tq, dh * H)
        return self.W_o(merged), w
