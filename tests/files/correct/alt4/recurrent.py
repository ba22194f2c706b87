"""einsum and torch.split; the sequence fills a preallocated output tensor."""
import torch


def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = state
    d_h = h.shape[-1]
    gates = torch.einsum("bi,gi->bg", x, W_ih) + torch.einsum("bh,gh->bg", h, W_hh) + (b_ih + b_hh)
    i, f, g, o = torch.split(gates, d_h, dim=-1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c_new), c_new


def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    d_h = h.shape[-1]
    Wx = W_ih.view(3, d_h, -1)
    Wh = W_hh.view(3, d_h, d_h)
    gx = torch.einsum("bi,kdi->kbd", x, Wx) + b_ih.view(3, 1, d_h)  # (3, B, d_h)
    gh = torch.einsum("bh,kdh->kbd", h, Wh) + b_hh.view(3, 1, d_h)
    r = torch.sigmoid(gx[0] + gh[0])
    z = torch.sigmoid(gx[1] + gh[1])
    n = torch.tanh(gx[2] + r * gh[2])
    return torch.lerp(n, h, z)


def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    B, T, _ = X.shape
    d_h = W_hh.shape[1]
    h, c = state if state is not None else (X.new_zeros(B, d_h), X.new_zeros(B, d_h))
    outputs = X.new_zeros(B, T, d_h)
    L = lengths.tolist()
    for t in range(T):
        h_t, c_t = lstm_cell(X[:, t], (h, c), W_ih, W_hh, b_ih, b_hh)
        valid = torch.tensor([t < l for l in L], device=X.device).unsqueeze(1)
        h = torch.where(valid, h_t, h)
        c = torch.where(valid, c_t, c)
        outputs[:, t] = torch.where(valid, h_t, 0.0)
    return outputs, (h, c)
