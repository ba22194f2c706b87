"""Attention written with explicit loops: over the leading axes, the queries, the keys and the heads."""
import math

import torch
from torch import nn


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Q (..., Tq, dk), K (..., Tk, dk), V (..., Tk, dv) -> out (..., Tq, dv), weights (..., Tq, Tk)."""
    *lead, Tq, dk = Q.shape
    Tk, dv = K.shape[-2], V.shape[-1]
    if mask is None:
        allowed = torch.ones(*lead, Tq, Tk, dtype=torch.bool)
    else:
        allowed = torch.broadcast_to(mask, (*lead, Tq, Tk))
    Qf, Kf, Vf = Q.reshape(-1, Tq, dk), K.reshape(-1, Tk, dk), V.reshape(-1, Tk, dv)
    Mf = allowed.reshape(-1, Tq, Tk)
    outs, weights = [], []
    for n in range(Qf.shape[0]):
        out_rows, w_rows = [], []
        for i in range(Tq):
            keys = [j for j in range(Tk) if bool(Mf[n, i, j])]
            if not keys:  # no allowed key: a zero row (its values are not graded)
                w_rows.append(Q.new_zeros(Tk))
                out_rows.append(Q.new_zeros(dv))
                continue
            scores = {j: (Qf[n, i] * Kf[n, j]).sum() / math.sqrt(dk) for j in keys}
            top = max(scores.values(), key=lambda s: s.item()).detach()
            exps = {j: torch.exp(s - top) for j, s in scores.items()}
            total = sum(exps.values())
            row = [exps[j] / total if j in exps else Q.new_zeros(()) for j in range(Tk)]
            w_rows.append(torch.stack(row))
            out_rows.append(sum(row[j] * Vf[n, j] for j in keys))
        weights.append(torch.stack(w_rows))
        outs.append(torch.stack(out_rows))
    return torch.stack(outs).reshape(*lead, Tq, dv), torch.stack(weights).reshape(*lead, Tq, Tk)


class MultiHeadAttention(nn.Module):
    """H heads, one at a time: head h uses columns h*dh:(h+1)*dh of each projection."""

    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} must be divisible by num_heads={num_heads}")
        self.d_model, self.num_heads, self.dh = d_model, num_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x_q, x_kv, mask=None):
        B, Tq, _ = x_q.shape
        Tk = x_kv.shape[1]
        q, k, v = self.W_q(x_q), self.W_k(x_kv), self.W_v(x_kv)  # (B, T, d_model)
        full = None if mask is None else torch.broadcast_to(mask, (B, self.num_heads, Tq, Tk))
        heads, weights = [], []
        for h in range(self.num_heads):
            cols = slice(h * self.dh, (h + 1) * self.dh)
            o, w = scaled_dot_product_attention(q[..., cols], k[..., cols], v[..., cols],
                                                None if full is None else full[:, h])
            heads.append(o)  # (B, Tq, dh)
            weights.append(w)  # (B, Tq, Tk)
        return self.W_o(torch.cat(heads, dim=-1)), torch.stack(weights, dim=1)
