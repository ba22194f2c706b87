# exercise: recurrent
# diagnosis: gru_reset_before_matmul
import torch
import torch.nn.functional as F


def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = state
    z = F.linear(x, W_ih, b_ih) + F.linear(h, W_hh, b_hh)
    i, f, g, o = torch.split(z, h.shape[-1], dim=-1)
    c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c2), c2


def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    B, T, _ = X.shape
    H = W_hh.shape[1]
    h, c = state if state is not None else (X.new_zeros(B, H), X.new_zeros(B, H))
    outs = []
    for t in range(T):
        nh, nc = lstm_cell(X[:, t], (h, c), W_ih, W_hh, b_ih, b_hh)
        keep = (lengths > t).unsqueeze(1)
        h, c = torch.where(keep, nh, h), torch.where(keep, nc, c)
        outs.append(nh * keep)
    return torch.stack(outs, 1), (h, c)


def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    d = h.shape[-1]
    W_hr, W_hz, W_hn = W_hh.split(d)
    b_hr, b_hz, b_hn = b_hh.split(d)
    x_r, x_z, x_n = F.linear(x, W_ih, b_ih).split(d, dim=-1)
    r = torch.sigmoid(x_r + F.linear(h, W_hr, b_hr))
    z = torch.sigmoid(x_z + F.linear(h, W_hz, b_hz))
    n = torch.tanh(x_n + F.linear(r * h, W_hn, b_hn))
    return (1 - z) * n + z * h
