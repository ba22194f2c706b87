"""Attention with einsum and a -1e9 fill; heads split with unflatten/permute."""
import torch
from torch import nn


def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", Q, K) * Q.shape[-1] ** -0.5  # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), -1e9)
    weights = scores.softmax(dim=-1)
    return torch.einsum("...qk,...kv->...qv", weights, V), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        self.H = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _heads(self, x):
        return x.unflatten(-1, (self.H, -1)).permute(0, 2, 1, 3)  # (B, H, T, dh)

    def forward(self, x_q, x_kv, mask=None):
        q, k, v = self._heads(self.W_q(x_q)), self._heads(self.W_k(x_kv)), self._heads(self.W_v(x_kv))
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.W_o(out.permute(0, 2, 1, 3).flatten(2)), weights
