# exercise: recurrent
# diagnosis: gru_missing_b_hn
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
    d = h.size(1)
    gx = x @ W_ih.T + b_ih
    gh = h @ W_hh.T
    gh = gh + torch.cat([b_hh[:2 * d], torch.zeros_like(b_hh[2 * d:])])   # no bias inside the reset
    r = torch.sigmoid(gx[:, :d] + gh[:, :d])
    z = torch.sigmoid(gx[:, d:2 * d] + gh[:, d:2 * d])
    n = torch.tanh(gx[:, 2 * d:] + r * gh[:, 2 * d:])
    return (1 - z) * n + z * h
