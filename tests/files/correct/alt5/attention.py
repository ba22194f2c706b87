"""Attention with an additive float mask and a guard for empty rows; W_o applied by hand."""
import math

import torch
from torch import nn


def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = torch.matmul(Q, K.transpose(-1, -2)) / math.sqrt(K.size(-1))
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
    else:
        has_key = mask.any(dim=-1, keepdim=True)
        safe = mask | ~has_key  # a query with no allowed key looks at everything, then is zeroed
        additive = torch.zeros(safe.shape, dtype=scores.dtype).masked_fill(~safe, float("-inf"))
        weights = torch.softmax(scores + additive, dim=-1) * mask
    return torch.matmul(weights, V), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be a multiple of num_heads")
        self.num_heads = num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x_q, x_kv, mask=None):
        H = self.num_heads
        q = self.W_q(x_q).unflatten(2, (H, -1)).transpose(1, 2)  # (B, H, Tq, dh)
        k = self.W_k(x_kv).unflatten(2, (H, -1)).transpose(1, 2)  # (B, H, Tk, dh)
        v = self.W_v(x_kv).unflatten(2, (H, -1)).transpose(1, 2)  # (B, H, Tk, dh)
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        out = out.transpose(1, 2).flatten(2)  # (B, Tq, d_model)
        out = out @ self.W_o.weight.T
        if self.W_o.bias is not None:
            out = out + self.W_o.bias
        return out, weights
