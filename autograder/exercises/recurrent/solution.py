"""Reference solution: LSTM and GRU cells, an LSTM over padded sequences / 参考答案：循环单元.

Weights are laid out as torch.nn.LSTMCell (gates i, f, g, o) and torch.nn.GRUCell (r, z, n).
Row convention: x (B, d_in) @ W_ih.T.
"""
import torch


def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    """One LSTM step: (h, c) -> (h_new, c_new)."""
    h, c = state  # (B, d_h) each
    gates = x @ W_ih.T + b_ih + h @ W_hh.T + b_hh  # (B, 4 d_h)
    i, f, g, o = gates.chunk(4, dim=-1)  # (B, d_h) each
    i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
    c_new = f * c + i * g  # (B, d_h)
    h_new = o * torch.tanh(c_new)  # (B, d_h)
    return h_new, c_new


def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    """One GRU step: h -> h_new."""
    x_r, x_z, x_n = (x @ W_ih.T + b_ih).chunk(3, dim=-1)  # (B, d_h) each
    h_r, h_z, h_n = (h @ W_hh.T + b_hh).chunk(3, dim=-1)  # (B, d_h) each
    r = torch.sigmoid(x_r + h_r)
    z = torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)  # r gates W_hn h + b_hn
    return (1 - z) * n + z * h  # (B, d_h)


def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    """Run lstm_cell over (B, T, d_in); padded steps keep the state and output 0."""
    B, T, _ = X.shape
    d_h = W_hh.shape[1]
    if state is None:
        h = X.new_zeros(B, d_h)  # (B, d_h)
        c = X.new_zeros(B, d_h)
    else:
        h, c = state
    outputs = []
    for t in range(T):
        h_t, c_t = lstm_cell(X[:, t], (h, c), W_ih, W_hh, b_ih, b_hh)  # (B, d_h)
        valid = (t < lengths).to(X.device)[:, None]  # (B, 1)  is step t real?
        h = torch.where(valid, h_t, h)  # padded step: keep the state
        c = torch.where(valid, c_t, c)
        outputs.append(torch.where(valid, h_t, torch.zeros_like(h_t)))  # padded step: output 0
    return torch.stack(outputs, dim=1), (h, c)  # (B, T, d_h), ((B, d_h), (B, d_h))
