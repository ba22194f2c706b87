# exercise: recurrent
# diagnosis: none
# Not catalogued: the forget gate uses tanh; the GRU output adds h twice; the sequence is right.
import torch


def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = state
    i, f, g, o = (x @ W_ih.T + b_ih + h @ W_hh.T + b_hh).chunk(4, -1)
    c2 = torch.tanh(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c2), c2


def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    xr, xz, xn = (x @ W_ih.T + b_ih).chunk(3, -1)
    hr, hz, hn = (h @ W_hh.T + b_hh).chunk(3, -1)
    r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
    n = torch.tanh(xn + r * hn)
    return (1 - z) * n + z * h + 0.5 * h


def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    B, T, _ = X.shape
    n = W_hh.shape[1]
    h, c = (X.new_zeros(B, n), X.new_zeros(B, n)) if state is None else state
    outs = []
    for t in range(T):
        h2, c2 = lstm_cell(X[:, t], (h, c), W_ih, W_hh, b_ih, b_hh)
        v = (t < lengths)[:, None]
        h, c = torch.where(v, h2, h), torch.where(v, c2, c)
        outs.append(torch.where(v, h2, torch.zeros_like(h2)))
    return torch.stack(outs, 1), (h, c)
