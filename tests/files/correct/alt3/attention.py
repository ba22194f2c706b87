"""Attention computed in float64 with a hand-written masked softmax (exp, normalise, guard);
multi-head attention with one fused matmul from the three projection weights."""
import math

import torch
import torch.nn.functional as F
from torch import nn


def scaled_dot_product_attention(Q, K, V, mask=None):
    dtype = Q.dtype
    q, k, v = Q.double(), K.double(), V.double()
    scores = q @ k.mT / math.sqrt(q.shape[-1])  # (..., Tq, Tk)
    allowed = torch.ones_like(scores, dtype=torch.bool) if mask is None else mask.expand_as(scores)
    scores = scores.masked_fill(~allowed, float("-inf"))
    top = scores.amax(dim=-1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top)).detach()  # a row with no key: 0
    e = torch.exp(scores - top)  # masked keys: exp(-inf) = 0
    weights = e / e.sum(dim=-1, keepdim=True).clamp_min(1e-300)  # guard: an empty row stays 0
    return (weights @ v).to(dtype), weights.to(dtype)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"{d_model} is not divisible by {num_heads}")
        self.d, self.H = d_model, num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x_q, x_kv, mask=None):
        d, H = self.d, self.H
        B, Tq, Tk = x_q.shape[0], x_q.shape[1], x_kv.shape[1]
        W = torch.cat([self.W_q.weight, self.W_k.weight, self.W_v.weight])  # (3 d, d), fused
        b = None if self.W_q.bias is None else torch.cat([self.W_q.bias, self.W_k.bias, self.W_v.bias])
        q = F.linear(x_q, W, b)[..., :d]
        k, v = F.linear(x_kv, W, b)[..., d:].split(d, dim=-1)
        q = q.reshape(B, Tq, H, d // H).transpose(1, 2)
        k = k.reshape(B, Tk, H, d // H).transpose(1, 2)
        v = v.reshape(B, Tk, H, d // H).transpose(1, 2)
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        out = out.transpose(1, 2).contiguous().view(B, Tq, d)
        return F.linear(out, self.W_o.weight, self.W_o.bias), weights
