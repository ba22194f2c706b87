"""Gates as a (4, d_h, d_in) stack and expit; the sequence runs unmasked and gathers at lengths - 1."""
import torch


def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = state
    d_h = h.shape[-1]
    Wx = W_ih.reshape(4, d_h, -1)  # (4, d_h, d_in)
    Wh = W_hh.reshape(4, d_h, d_h)
    b = (b_ih + b_hh).reshape(4, 1, d_h)
    pre = torch.matmul(x.unsqueeze(0), Wx.transpose(1, 2)) + torch.matmul(h.unsqueeze(0), Wh.transpose(1, 2)) + b
    i, f, o = torch.special.expit(pre[[0, 1, 3]])
    g = 2 * torch.special.expit(2 * pre[2]) - 1  # tanh
    c_new = f * c + i * g
    return o * torch.tanh(c_new), c_new


def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    return torch.gru_cell(x, h, W_ih, W_hh, b_ih, b_hh)


def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    B, T, _ = X.shape
    d_h = W_hh.shape[1]
    h, c = state if state is not None else (X.new_zeros(B, d_h), X.new_zeros(B, d_h))
    hs, cs = [], []
    for t in range(T):  # padding after a sequence cannot reach its earlier steps
        h, c = lstm_cell(X[:, t], (h, c), W_ih, W_hh, b_ih, b_hh)
        hs.append(h)
        cs.append(c)
    H = torch.stack(hs, dim=1)  # (B, T, d_h)
    C = torch.stack(cs, dim=1)
    idx = torch.arange(B)
    last = lengths - 1
    mask = torch.arange(T)[None, :, None] < lengths[:, None, None]  # (B, T, 1)
    return H * mask, (H[idx, last], C[idx, last])
