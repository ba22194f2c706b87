# exercise: attention
# diagnosis: sdpa_scale_by_sqrt_dv
import torch
from torch import nn


def scaled_dot_product_attention(Q, K, V, mask=None):
    temperature = V.size(-1) ** 0.5
    scores = (Q @ K.transpose(-1, -2)) / temperature
    if mask is not None:
        scores = scores.masked_fill(~mask, float('-inf'))
    p = scores.softmax(-1)
    if mask is not None:
        p = p.masked_fill(~mask, 0.0)
    return p @ V, p


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model must be divisible by num_heads")
        self.h, self.dh, self.d = num_heads, d_model // num_heads, d_model
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x_q, x_kv, mask=None):
        B, Tq, _ = x_q.shape
        Tk = x_kv.shape[1]
        q = self.W_q(x_q).reshape(B, Tq, self.h, self.dh).permute(0, 2, 1, 3)
        k = self.W_k(x_kv).reshape(B, Tk, self.h, self.dh).permute(0, 2, 1, 3)
        v = self.W_v(x_kv).reshape(B, Tk, self.h, self.dh).permute(0, 2, 1, 3)
        o, w = scaled_dot_product_attention(q, k, v, mask)
        return self.W_o(o.permute(0, 2, 1, 3).reshape(B, Tq, self.d)), w

