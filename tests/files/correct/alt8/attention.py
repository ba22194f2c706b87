"""Correct, written differently: the reference solution, then functions written another way by a
reviewer who had only the contract (red-team, 2026-11-30); the later definitions replace the earlier.

Reference solution: scaled dot-product and multi-head attention / 参考答案：注意力.

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


# ---- written differently (red-team variants, graded correct) ----
from torch import nn
import math
import torch
import torch.nn.functional as F


# scaled_dot_product_attention: from c09_manual_softmax.py: CORRECT: manual stable softmax exp(x - max over allowed)/sum, multiplicative mask, safe for empty rows
def scaled_dot_product_attention(Q, K, V, mask=None):
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is None:
        mask = torch.ones_like(s, dtype=torch.bool)
    mask = mask.expand_as(s)
    m = s.masked_fill(~mask, float("-inf")).amax(dim=-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m)).detach()
    e = torch.exp(torch.where(mask, s - m, torch.full_like(s, float("-inf"))))
    denom = e.sum(-1, keepdim=True)
    denom = torch.where(denom > 0, denom, torch.ones_like(denom))
    w = e / denom
    return w @ V, w


# MultiHeadAttention: from c21_mha_chunk_loop.py: CORRECT: MHA: chunk projections by columns, loop over heads, cat outputs, stack weights
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model not divisible by num_heads")
        self.d_model, self.num_heads, self.dh = d_model, num_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x_q, x_kv, mask=None):
        qs = self.W_q(x_q).chunk(self.num_heads, dim=-1)
        ks = self.W_k(x_kv).chunk(self.num_heads, dim=-1)
        vs = self.W_v(x_kv).chunk(self.num_heads, dim=-1)
        outs, ws = [], []
        for h in range(self.num_heads):
            m = None
            if mask is not None:
                m = mask
                while m.dim() < 4:
                    m = m.unsqueeze(0)
                m = m[:, 0] if m.shape[1] == 1 else m[:, h]
            o, w = scaled_dot_product_attention(qs[h], ks[h], vs[h], m)
            outs.append(o); ws.append(w)
        return self.W_o(torch.cat(outs, dim=-1)), torch.stack(ws, dim=1)
