# exercise: recurrent
# diagnosis: lstm_h_without_tanh
import torch
import torch.nn.functional as F


def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    gi = x @ W_ih.T + b_ih
    gh = h @ W_hh.T + b_hh
    n_h = h.shape[-1]
    r = torch.sigmoid(gi[:, :n_h] + gh[:, :n_h])
    z = torch.sigmoid(gi[:, n_h:2 * n_h] + gh[:, n_h:2 * n_h])
    n = torch.tanh(gi[:, 2 * n_h:] + r * gh[:, 2 * n_h:])
    return (1 - z) * n + z * h


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


def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h_prev, c_prev = state
    a = F.linear(x, W_ih, b_ih) + F.linear(h_prev, W_hh, b_hh)
    ai, af, ag, ao = torch.split(a, h_prev.shape[-1], dim=1)
    c = torch.sigmoid(af) * c_prev + torch.sigmoid(ai) * torch.tanh(ag)
    h = torch.sigmoid(ao) * c
    return h, c
