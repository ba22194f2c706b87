"""Recurrent cells with F.linear and a hand-written sigmoid; the sequence masks with floats."""
import torch
import torch.nn.functional as F


def sigmoid(x):
    return 1 / (1 + torch.exp(-x))


def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = state
    gates = F.linear(x, W_ih, b_ih) + F.linear(h, W_hh, b_hh)
    d_h = h.shape[-1]
    i = sigmoid(gates[:, :d_h])
    f = sigmoid(gates[:, d_h:2 * d_h])
    g = torch.tanh(gates[:, 2 * d_h:3 * d_h])
    o = sigmoid(gates[:, 3 * d_h:])
    c_new = f * c + i * g
    return o * torch.tanh(c_new), c_new


def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    gi = F.linear(x, W_ih, b_ih)
    gh = F.linear(h, W_hh, b_hh)
    d_h = h.shape[-1]
    r = sigmoid(gi[:, :d_h] + gh[:, :d_h])
    z = sigmoid(gi[:, d_h:2 * d_h] + gh[:, d_h:2 * d_h])
    n = torch.tanh(gi[:, 2 * d_h:] + r * gh[:, 2 * d_h:])
    return n + z * (h - n)


def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    B, T, _ = X.shape
    d_h = W_hh.shape[1]
    if state is None:
        h = torch.zeros(B, d_h, dtype=X.dtype, device=X.device)
        c = torch.zeros(B, d_h, dtype=X.dtype, device=X.device)
    else:
        h, c = state
    mask = (torch.arange(T, device=X.device)[None, :] < lengths.to(X.device)[:, None]).to(X.dtype)  # (B, T)
    outputs = []
    for t in range(T):
        m = mask[:, t:t + 1]  # (B, 1): 1.0 at a real step, 0.0 at padding
        h_t, c_t = lstm_cell(X[:, t], (h, c), W_ih, W_hh, b_ih, b_hh)
        h = m * h_t + (1 - m) * h
        c = m * c_t + (1 - m) * c
        outputs.append(m * h_t)
    return torch.stack(outputs, dim=1), (h, c)
