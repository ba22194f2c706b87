# exercise: recurrent
# diagnosis: seq_ignores_initial_state
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
    hidden = W_hh.shape[1]
    h = torch.zeros(B, hidden, dtype=X.dtype)
    c = torch.zeros_like(h)
    outputs = torch.zeros(B, T, hidden, dtype=X.dtype)
    for t in range(T):
        h_new, c_new = lstm_cell(X[:, t], (h, c), W_ih, W_hh, b_ih, b_hh)
        on = (t < lengths).unsqueeze(1)
        h, c = torch.where(on, h_new, h), torch.where(on, c_new, c)
        outputs = outputs + torch.zeros_like(outputs).index_put((torch.arange(B), torch.full((B,), t)), h_new * on)
    return outputs, (h, c)
