# exercise: attention
# diagnosis: mha_missing_output_projection
import math

import torch
from torch import nn


def scaled_dot_product_attention(Q, K, V, mask=None):
    s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = torch.softmax(s, dim=-1)
    if mask is not None:
        w = w.masked_fill(~mask, 0.0)
    return w @ V, w


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("indivisible")
        self.n_heads, self.head_dim, self.d_model = num_heads, d_model // num_heads, d_model
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x_q, x_kv, mask=None):
        q, k, v = self.W_q(x_q), self.W_k(x_kv), self.W_v(x_kv)
        outs, ws = [], []
        for h in range(self.n_heads):
            sl = slice(h * self.head_dim, (h + 1) * self.head_dim)
            m = None if mask is None else (mask[:, h] if mask.dim() == 4 and mask.shape[1] > 1 else
                                           (mask[:, 0] if mask.dim() == 4 else mask))
            o, w = scaled_dot_product_attention(q[..., sl], k[..., sl], v[..., sl], m)
            outs.append(o)
            ws.append(w)
        return torch.cat(outs, dim=-1), torch.stack(ws, dim=1)
