# exercise: attention
# diagnosis: sdpa_softmax_over_queries
import math

import torch
from torch import nn


def scaled_dot_product_attention(Q, K, V, mask=None):
    s = torch.einsum('...qd,...kd->...qk', Q, K) / math.sqrt(K.shape[-1])
    if mask is not None:
        s = torch.where(mask, s, torch.full_like(s, float('-inf')))
    a = s.softmax(dim=-2)   # normalised over queries
    if mask is not None:
        a = torch.where(mask, a, torch.zeros_like(a))
    return torch.einsum('...qk,...kv->...qv', a, V), a


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

