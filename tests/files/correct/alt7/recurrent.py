"""Correct, written differently: each function as written by someone who had only the contract
(the source file is named above each one)."""
import torch
from torch import nn
import math
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
