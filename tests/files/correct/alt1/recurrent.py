"""Recurrent cells, written with one weight slice per gate; the sequence loops per sequence."""
import torch


def _rows(W, k, d_h):
    """Row block k (d_h rows) of a stacked weight or bias."""
    return W[k * d_h:(k + 1) * d_h]


def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    """One LSTM step with a separate affine map per gate (i, f, g, o)."""
    h, c = state
    d_h = h.shape[-1]

    def affine(k):
        return x @ _rows(W_ih, k, d_h).T + _rows(b_ih, k, d_h) + h @ _rows(W_hh, k, d_h).T + _rows(b_hh, k, d_h)

    i = torch.sigmoid(affine(0))
    f = torch.sigmoid(affine(1))
    g = torch.tanh(affine(2))
    o = torch.sigmoid(affine(3))
    c_new = f * c + i * g
    h_new = o * torch.tanh(c_new)
    return h_new, c_new


def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    """One GRU step with a separate affine map per gate (r, z, n)."""
    d_h = h.shape[-1]
    r = torch.sigmoid(x @ _rows(W_ih, 0, d_h).T + _rows(b_ih, 0, d_h) + h @ _rows(W_hh, 0, d_h).T + _rows(b_hh, 0, d_h))
    z = torch.sigmoid(x @ _rows(W_ih, 1, d_h).T + _rows(b_ih, 1, d_h) + h @ _rows(W_hh, 1, d_h).T + _rows(b_hh, 1, d_h))
    n = torch.tanh(x @ _rows(W_ih, 2, d_h).T + _rows(b_ih, 2, d_h)
                   + r * (h @ _rows(W_hh, 2, d_h).T + _rows(b_hh, 2, d_h)))
    return (1 - z) * n + z * h


def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    """Each sequence on its own, up to its own length; the rest of its outputs stay 0."""
    B, T, _ = X.shape
    d_h = W_hh.shape[1]
    outs, hs, cs = [], [], []
    for b in range(B):
        if state is None:
            h = X.new_zeros(1, d_h)
            c = X.new_zeros(1, d_h)
        else:
            h, c = state[0][b:b + 1], state[1][b:b + 1]
        steps = []
        for t in range(int(lengths[b])):
            h, c = lstm_cell(X[b:b + 1, t], (h, c), W_ih, W_hh, b_ih, b_hh)
            steps.append(h)
        steps += [X.new_zeros(1, d_h)] * (T - len(steps))
        outs.append(torch.stack(steps, dim=1))
        hs.append(h)
        cs.append(c)
    return torch.cat(outs, dim=0), (torch.cat(hs, dim=0), torch.cat(cs, dim=0))
