"""`out` from torch.nn.functional.scaled_dot_product_attention, the weights computed separately
(nan_to_num after the softmax); heads folded into the batch axis."""
import math

import torch
import torch.nn.functional as F
from torch import nn


def scaled_dot_product_attention(Q, K, V, mask=None):
    out = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return out, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
        self.d_model, self.num_heads = d_model, num_heads
        for name in ("W_q", "W_k", "W_v", "W_o"):
            setattr(self, name, nn.Linear(d_model, d_model, bias=bias))

    def forward(self, x_q, x_kv, mask=None):
        B, Tq, d = x_q.shape
        Tk, H = x_kv.shape[1], self.num_heads

        def fold(x, T):  # (B, T, d) -> (B * H, T, dh)
            return x.view(B, T, H, d // H).transpose(1, 2).reshape(B * H, T, d // H)

        q, k, v = fold(self.W_q(x_q), Tq), fold(self.W_k(x_kv), Tk), fold(self.W_v(x_kv), Tk)
        m = None if mask is None else mask.expand(B, H, Tq, Tk).reshape(B * H, Tq, Tk)
        out, weights = scaled_dot_product_attention(q, k, v, m)
        out = out.view(B, H, Tq, d // H).transpose(1, 2).reshape(B, Tq, d)
        return self.W_o(out), weights.view(B, H, Tq, Tk)
