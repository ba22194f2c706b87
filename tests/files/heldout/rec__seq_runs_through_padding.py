# exercise: recurrent
# diagnosis: seq_state_updated_on_padding
import torch
import torch.nn.functional as F


def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = state
    z = F.linear(x, W_ih, b_ih) + F.linear(h, W_hh, b_hh)
    i, f, g, o = torch.split(z, h.shape[-1], dim=-1)
    c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c2), c2


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
    n = W_hh.shape[-1]
    h, c = (X.new_zeros(B, n), X.new_zeros(B, n)) if state is None else state
    mask = (torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)).to(X.dtype)   # (B, T)
    outs = []
    for t in range(T):
        h, c = lstm_cell(X[:, t], (h, c), W_ih, W_hh, b_ih, b_hh)
        outs.append(h * mask[:, t, None])
    return torch.stack(outs, 1), (h, c)
