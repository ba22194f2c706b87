"""Attention on the flattened leading axes with bmm and a finfo(dtype).min fill; each head projected
by its own slice of W_o and the heads summed (the same as concatenating them first)."""
import torch
import torch.nn.functional as F
from torch import nn


def scaled_dot_product_attention(Q, K, V, mask=None):
    *lead, Tq, dk = Q.shape
    Tk, dv = K.shape[-2], V.shape[-1]
    q = Q.reshape(-1, Tq, dk) * dk ** -0.5  # scaled before the product, out of place
    scores = torch.bmm(q, K.reshape(-1, Tk, dk).transpose(1, 2))  # (N, Tq, Tk)
    if mask is not None:
        m = torch.broadcast_to(mask, (*lead, Tq, Tk)).reshape(-1, Tq, Tk)
        scores = scores.masked_fill(~m, torch.finfo(scores.dtype).min)
    weights = F.softmax(scores, dim=-1)
    out = torch.bmm(weights, V.reshape(-1, Tk, dv))
    return out.reshape(*lead, Tq, dv), weights.reshape(*lead, Tq, Tk)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        dh, rest = divmod(d_model, num_heads)
        if rest:
            raise ValueError(f"cannot split d_model={d_model} into {num_heads} heads")
        self.H, self.dh = num_heads, dh
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x_q, x_kv, mask=None):
        B, Tq, d = x_q.shape
        Tk = x_kv.shape[1]
        q = self.W_q(x_q).reshape(B, Tq, self.H, self.dh).permute(0, 2, 1, 3)
        k = self.W_k(x_kv).reshape(B, Tk, self.H, self.dh).permute(0, 2, 1, 3)
        v = self.W_v(x_kv).reshape(B, Tk, self.H, self.dh).permute(0, 2, 1, 3)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, H, Tq, dh)
        W_o = self.W_o.weight.reshape(d, self.H, self.dh)  # W_o[:, h*dh:(h+1)*dh] for each h
        out = torch.einsum("bhqe,dhe->bqd", heads, W_o)
        if self.W_o.bias is not None:
            out = out + self.W_o.bias
        return out, weights
