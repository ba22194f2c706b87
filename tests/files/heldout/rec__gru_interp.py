# exercise: recurrent
# diagnosis: gru_update_gate_swapped
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
    xr, xz, xn = F.linear(x, W_ih, b_ih).chunk(3, -1)
    hr, hz, hn = F.linear(h, W_hh, b_hh).chunk(3, -1)
    r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
    cand = torch.tanh(xn + r * hn)
    return h + z * (cand - h)        # = z * n + (1 - z) * h
