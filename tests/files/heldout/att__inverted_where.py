# exercise: attention
# diagnosis: sdpa_mask_inverted
import math

import torch
from torch import nn


def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = torch.where(mask, torch.full_like(scores, -math.inf), scores)
    p = torch.softmax(scores, dim=-1)
    if mask is not None:
        p = torch.where(mask, torch.zeros_like(p), p)
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

