# exercise: attention
# diagnosis: none
# Not catalogued: a temperature of 2 * sqrt(dk); and the MHA adds a residual connection.
import math

import torch
from torch import nn


def scaled_dot_product_attention(Q, K, V, mask=None):
    s = Q @ K.transpose(-2, -1) / (2 * math.sqrt(Q.shape[-1]))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = torch.softmax(s, dim=-1)
    if mask is not None:
        w = w.masked_fill(~mask, 0.0)
    return w @ V, w


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("indivisible")
        self.H, self.dh = num_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x_q, x_kv, mask=None):
        B, Tq, D = x_q.shape
        sp = lambda x: x.view(B, x.shape[1], self.H, self.dh).transpose(1, 2)
        q, k, v = sp(self.W_q(x_q)), sp(self.W_k(x_kv)), sp(self.W_v(x_kv))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.dh)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        w = torch.softmax(s, -1)
        if mask is not None:
            w = w.masked_fill(~mask, 0.0)
        return x_q + self.W_o((w @ v).transpose(1, 2).reshape(B, Tq, D)), w
