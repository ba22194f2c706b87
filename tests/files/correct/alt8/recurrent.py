"""Correct, written differently: each function as written by someone who had only the contract
(the source file is named above each one)."""
import torch
from torch import nn
import math
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
