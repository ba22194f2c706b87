"""float64 inside, cast back; the sequence is torch.nn.LSTM on a packed batch."""
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    dt = x.dtype
    x, h, c, W_ih, W_hh, b_ih, b_hh = (t.double() for t in (x, *state, W_ih, W_hh, b_ih, b_hh))
    gates = torch.addmm(b_ih, x, W_ih.t()) + torch.addmm(b_hh, h, W_hh.t())
    i, f, g, o = gates.chunk(4, 1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    h_new = torch.sigmoid(o) * torch.tanh(c_new)
    return h_new.to(dt), c_new.to(dt)


def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    dt = x.dtype
    x, h, W_ih, W_hh, b_ih, b_hh = (t.double() for t in (x, h, W_ih, W_hh, b_ih, b_hh))
    i_r, i_z, i_n = torch.addmm(b_ih, x, W_ih.t()).chunk(3, 1)
    h_r, h_z, h_n = torch.addmm(b_hh, h, W_hh.t()).chunk(3, 1)
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)
    return ((1 - z) * n + z * h).to(dt)


def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    B, T, d_in = X.shape
    d_h = W_hh.shape[1]
    lstm = torch.nn.LSTM(d_in, d_h, batch_first=True).to(X.dtype)
    weights = {"weight_ih_l0": W_ih, "weight_hh_l0": W_hh, "bias_ih_l0": b_ih, "bias_hh_l0": b_hh}
    packed = pack_padded_sequence(X, lengths.cpu(), batch_first=True, enforce_sorted=False)
    if state is None:
        hx = None
    else:
        hx = (state[0].unsqueeze(0), state[1].unsqueeze(0))  # (1, B, d_h)
    out, (h_n, c_n) = torch.func.functional_call(lstm, weights, (packed, hx))
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=T)
    return out, (h_n[0], c_n[0])
