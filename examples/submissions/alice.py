# Alice: all five exercises in one file.
"""Reference solution: masks / 参考答案：掩码.

Information boundary: a query at position i may look at key j only if j is a real token
(not padding) and, for a causal model, j <= i.  True = allowed (may attend).
"""
import torch


def padding_mask(lengths, max_len=None):
    """mask[b, t] = (t < lengths[b]); True marks a real token."""
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths > T).any():
        raise ValueError(f"every length must be <= max_len={T}, got {lengths.tolist()}")
    t = torch.arange(T, device=lengths.device)  # (T,)
    return t[None, :] < lengths[:, None]  # (B, T)


def causal_mask(T, device=None):
    """mask[i, j] = (j <= i): query i sees keys 0..i, never the future."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()  # (T, T)


def attention_mask(lengths, max_len=None, causal=False):
    """(B, 1, T, T): key j is real and, if causal, j <= i; broadcasts over heads."""
    keys = padding_mask(lengths, max_len)  # (B, T)  which keys are real
    T = keys.shape[1]
    mask = keys[:, None, None, :].expand(-1, 1, T, T)  # (B, 1, T, T)  mask on the key axis
    if causal:
        mask = mask & causal_mask(T, device=lengths.device)  # (B, 1, T, T)
    return mask


"""Reference solution: sinusoidal positional encoding / 参考答案：正弦位置编码.

PE[t, 2i] = sin(t / base**(2i/d)),  PE[t, 2i+1] = cos(t / base**(2i/d)),  t = 0, 1, ...
"""
import torch


def sinusoidal_encoding(T, d, base=10000.0):
    """(T, d) float32 table, interleaved sin (even columns) / cos (odd columns)."""
    if d % 2 != 0:
        raise ValueError(f"d must be even, got d={d}")
    t = torch.arange(T, dtype=torch.float64)[:, None]  # (T, 1)
    two_i = torch.arange(0, d, 2, dtype=torch.float64)  # (d/2,)  = 2i
    angle = t / base ** (two_i / d)  # (T, d/2)
    pe = torch.empty(T, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)  # even columns
    pe[:, 1::2] = torch.cos(angle)  # odd columns
    return pe.float()  # (T, d)


def add_positional_encoding(X):
    """X + PE, broadcast over the batch; X's dtype and device, no scaling."""
    B, T, d = X.shape
    pe = sinusoidal_encoding(T, d).to(dtype=X.dtype, device=X.device)  # (T, d)
    return X + pe  # (B, T, d)


"""Reference solution: scaled dot-product and multi-head attention / 参考答案：注意力.

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


"""Reference solution: LSTM and GRU cells, an LSTM over padded sequences / 参考答案：循环单元.

Weights are laid out as torch.nn.LSTMCell (gates i, f, g, o) and torch.nn.GRUCell (r, z, n).
Row convention: x (B, d_in) @ W_ih.T.
"""
import torch


def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    """One LSTM step: (h, c) -> (h_new, c_new)."""
    h, c = state  # (B, d_h) each
    gates = x @ W_ih.T + b_ih + h @ W_hh.T + b_hh  # (B, 4 d_h)
    i, f, g, o = gates.chunk(4, dim=-1)  # (B, d_h) each
    i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
    c_new = f * c + i * g  # (B, d_h)
    h_new = o * torch.tanh(c_new)  # (B, d_h)
    return h_new, c_new


def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    """One GRU step: h -> h_new."""
    x_r, x_z, x_n = (x @ W_ih.T + b_ih).chunk(3, dim=-1)  # (B, d_h) each
    h_r, h_z, h_n = (h @ W_hh.T + b_hh).chunk(3, dim=-1)  # (B, d_h) each
    r = torch.sigmoid(x_r + h_r)
    z = torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)  # r gates W_hn h + b_hn
    return (1 - z) * n + z * h  # (B, d_h)


def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    """Run lstm_cell over (B, T, d_in); padded steps keep the state and output 0."""
    B, T, _ = X.shape
    d_h = W_hh.shape[1]
    if state is None:
        h = X.new_zeros(B, d_h)  # (B, d_h)
        c = X.new_zeros(B, d_h)
    else:
        h, c = state
    outputs = []
    for t in range(T):
        h_t, c_t = lstm_cell(X[:, t], (h, c), W_ih, W_hh, b_ih, b_hh)  # (B, d_h)
        valid = (t < lengths).to(X.device)[:, None]  # (B, 1)  is step t real?
        h = torch.where(valid, h_t, h)  # padded step: keep the state
        c = torch.where(valid, c_t, c)
        outputs.append(torch.where(valid, h_t, torch.zeros_like(h_t)))  # padded step: output 0
    return torch.stack(outputs, dim=1), (h, c)  # (B, T, d_h), ((B, d_h), (B, d_h))


"""Reference solution: masked cross-entropy / 参考答案：带掩码的交叉熵.

loss = sum over valid tokens of -log softmax(logits)[target] / number of valid tokens.
Logits go straight to cross_entropy (log-softmax inside is stable); padding never enters.
"""
import torch
import torch.nn.functional as F


def masked_cross_entropy(logits, targets, mask):
    """logits (B, T, V), targets (B, T), mask (B, T) -> scalar, mean over valid tokens."""
    n_valid = mask.sum()
    if n_valid == 0:
        raise ValueError("mask has no valid token: the loss would be 0/0")
    V = logits.shape[-1]
    valid_logits = logits[mask]  # (N, V)  padding removed before anything is computed
    valid_targets = targets[mask]  # (N,)
    losses = F.cross_entropy(valid_logits.reshape(-1, V), valid_targets, reduction="none")  # (N,)
    return losses.sum() / n_valid
