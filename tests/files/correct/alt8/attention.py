"""Correct, written differently: each function as written by someone who had only the contract
(the source file is named above each one)."""
import math
import torch
from torch import nn
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
