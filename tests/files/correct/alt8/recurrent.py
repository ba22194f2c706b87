"""Correct, written differently: the reference solution, then functions written another way by a
reviewer who had only the contract (red-team, 2026-11-30); the later definitions replace the earlier.

Reference solution: LSTM and GRU cells, an LSTM over padded sequences / 参考答案：循环单元.

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


# ---- written differently (red-team variants, graded correct) ----
from torch import nn
import math
import torch
import torch.nn.functional as F


# _sig: from c05_lstm_handwritten_sigmoid_tanh.py: CORRECT: lstm_cell with sigmoid as 1/(1+exp(-x)) and tanh as 2*sigmoid(2x)-1
def _sig(v):
    return 1.0 / (1.0 + torch.exp(-v))


# _tanh: from c05_lstm_handwritten_sigmoid_tanh.py: CORRECT: lstm_cell with sigmoid as 1/(1+exp(-x)) and tanh as 2*sigmoid(2x)-1
def _tanh(v):
    return 2.0 * _sig(2.0 * v) - 1.0


# lstm_cell: from c05_lstm_handwritten_sigmoid_tanh.py: CORRECT: lstm_cell with sigmoid as 1/(1+exp(-x)) and tanh as 2*sigmoid(2x)-1
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = state
    gates = x @ W_ih.T + h @ W_hh.T + (b_ih + b_hh)
    d_h = h.shape[1]
    i = _sig(gates[:, :d_h]); f = _sig(gates[:, d_h:2 * d_h])
    g = _tanh(gates[:, 2 * d_h:3 * d_h]); o = _sig(gates[:, 3 * d_h:])
    c_new = f * c + i * g
    return o * _tanh(c_new), c_new


# gru_cell: from c07_gru_interp_form.py: CORRECT: gru_cell with h_new = h + (1 - z) * (n - h)
def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    gi = x @ W_ih.T + b_ih
    gh = h @ W_hh.T + b_hh
    d = h.shape[-1]
    r = torch.sigmoid(gi[..., :d] + gh[..., :d])
    z = torch.sigmoid(gi[..., d:2 * d] + gh[..., d:2 * d])
    n = torch.tanh(gi[..., 2 * d:] + r * gh[..., 2 * d:])
    return h + (1 - z) * (n - h)


# lstm_sequence: from c10_seq_sort_by_length.py: CORRECT: lstm_sequence sorting by length, shrinking active prefix, then unsorting
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    B, T, _ = X.shape
    d_h = W_hh.shape[1]
    lengths = torch.as_tensor(lengths).to(torch.int64).cpu()
    order = torch.argsort(lengths, descending=True, stable=True)
    inv = torch.empty_like(order); inv[order] = torch.arange(B)
    Xs = X[order.to(X.device)]
    ls = lengths[order].tolist()
    if state is None:
        h = X.new_zeros(B, d_h); c = X.new_zeros(B, d_h)
    else:
        h, c = state[0][order.to(X.device)], state[1][order.to(X.device)]
    outs = []
    h_fin = [None] * B; c_fin = [None] * B
    for t in range(T):
        nb = sum(1 for l in ls if l > t)
        if nb == 0:
            outs.append(X.new_zeros(B, d_h)); continue
        h_a, c_a = lstm_cell(Xs[:nb, t], (h[:nb], c[:nb]), W_ih, W_hh, b_ih, b_hh)
        h = torch.cat([h_a, h[nb:]], 0); c = torch.cat([c_a, c[nb:]], 0)
        outs.append(torch.cat([h_a, X.new_zeros(B - nb, d_h)], 0))
    out = torch.stack(outs, 1)
    idx = inv.to(X.device)
    return out[idx], (h[idx], c[idx])
