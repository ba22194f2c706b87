"""One matrix for [x, h]; the sequence shrinks the batch like a packed sequence does."""
import torch


def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = state
    xh = torch.cat([x, h], dim=1)  # (B, d_in + d_h)
    W = torch.cat([W_ih, W_hh], dim=1)  # (4 d_h, d_in + d_h)
    gates = xh @ W.T + (b_ih + b_hh)
    i, f, g, o = gates.chunk(4, dim=1)
    i, f, o = torch.sigmoid(torch.stack([i, f, o])).unbind(0)
    c_new = torch.addcmul(f * c, i, torch.tanh(g))
    h_new = o * c_new.tanh()
    return h_new, c_new


def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    d_h = h.shape[1]
    rz = torch.sigmoid(x @ W_ih[:2 * d_h].T + h @ W_hh[:2 * d_h].T + b_ih[:2 * d_h] + b_hh[:2 * d_h])
    r, z = rz[:, :d_h], rz[:, d_h:]
    hn = h @ W_hh[2 * d_h:].T + b_hh[2 * d_h:]
    n = torch.tanh(x @ W_ih[2 * d_h:].T + b_ih[2 * d_h:] + r * hn)
    return z * h + (1 - z) * n


def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    B, T, _ = X.shape
    d_h = W_hh.shape[1]
    order = torch.argsort(lengths, descending=True, stable=True)  # longest first
    back = torch.argsort(order)
    Xs, Ls = X[order], lengths[order]
    if state is None:
        h = X.new_zeros(B, d_h)
        c = X.new_zeros(B, d_h)
    else:
        h, c = state[0][order], state[1][order]
    rows = []
    for t in range(T):
        n = int((Ls > t).sum())  # sequences still running at step t are the first n
        if n == 0:
            rows.append(X.new_zeros(B, d_h))
            continue
        h_t, c_t = lstm_cell(Xs[:n, t], (h[:n], c[:n]), W_ih, W_hh, b_ih, b_hh)
        h = torch.cat([h_t, h[n:]], dim=0)
        c = torch.cat([c_t, c[n:]], dim=0)
        rows.append(torch.cat([h_t, X.new_zeros(B - n, d_h)], dim=0))
    outputs = torch.stack(rows, dim=1)
    return outputs[back], (h[back], c[back])
