"""Reference solution: scaled dot-product and multi-head attention / 参考答案：注意力.

weights = softmax(Q K^T / sqrt(dk)) over keys (masked keys get 0),  out = weights V.
Row convention: Q is (..., Tq, dk), so Q K^T is Q @ K.transpose(-2, -1).
"""
import math

import torch
from torch import nn


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Q (..., Tq, dk), K (..., Tk, dk), V (..., Tk, dv) -> out (..., Tq, dv), weights (..., Tq, Tk)."""
    dk = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(dk)  # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # blocked keys -> -inf
    weights = torch.softmax(scores, dim=-1)  # (..., Tq, Tk)  over keys
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)  # exact 0; also turns an all-blocked row's NaN into 0
    return weights @ V, weights  # (..., Tq, dv), (..., Tq, Tk)


class MultiHeadAttention(nn.Module):
    """H heads of width dh = d_model / H, as torch.nn.MultiheadAttention."""

    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model, self.num_heads, self.dh = d_model, num_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x):
        """(B, T, d_model) -> (B, H, T, dh): head h gets columns h*dh:(h+1)*dh."""
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.dh).transpose(1, 2)  # (B, H, T, dh)

    def forward(self, x_q, x_kv, mask=None):
        B, Tq, _ = x_q.shape
        q = self.split_heads(self.W_q(x_q))  # (B, H, Tq, dh)
        k = self.split_heads(self.W_k(x_kv))  # (B, H, Tk, dh)
        v = self.split_heads(self.W_v(x_kv))  # (B, H, Tk, dh)
        out, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, H, Tq, dh), (B, H, Tq, Tk)
        out = out.transpose(1, 2).reshape(B, Tq, self.d_model)  # (B, Tq, d_model)  heads side by side
        return self.W_o(out), weights
