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


# lstm_cell: from c02_lstm_torch_op.py: CORRECT: lstm_cell via torch.lstm_cell (torch functional op)
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h_new, c_new = torch.lstm_cell(x, tuple(state), W_ih, W_hh, b_ih, b_hh)
    return h_new, c_new


# gru_cell: from c06_gru_torch_op.py: CORRECT: gru_cell via torch.gru_cell (torch functional op)
def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    return torch.gru_cell(x, h, W_ih, W_hh, b_ih, b_hh)


# lstm_sequence: from c12_seq_nn_LSTM_functional_call.py: CORRECT: lstm_sequence via torch.nn.LSTM + torch.func.functional_call (weights stay differentiable) on pack_padded_sequence, pad_packed_sequence(total_length=T)
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    B, T, d_in = X.shape
    d_h = W_hh.shape[1]
    lstm = torch.nn.LSTM(d_in, d_h, batch_first=True).to(dtype=X.dtype, device=X.device)
    params = {'weight_ih_l0': W_ih, 'weight_hh_l0': W_hh, 'bias_ih_l0': b_ih, 'bias_hh_l0': b_hh}
    packed = pack_padded_sequence(X, torch.as_tensor(lengths).cpu(), batch_first=True, enforce_sorted=False)
    if state is None:
        hx = None
    else:
        hx = (state[0].unsqueeze(0), state[1].unsqueeze(0))
    out, (h_n, c_n) = torch.func.functional_call(lstm, params, (packed, hx))
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=T)
    return out, (h_n[0], c_n[0])
