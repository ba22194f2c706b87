# exercise: masks
# diagnosis: causal_mask_excludes_diagonal
# Loops instead of tril; the diagonal is left out (j < i).
import torch


def padding_mask(lengths, max_len=None):
    n = int(lengths.max()) if max_len is None else int(max_len)
    for l in lengths.tolist():
        if l < 0 or l > n:
            raise ValueError("bad length")
    rows = [[t < l for t in range(n)] for l in lengths.tolist()]
    return torch.tensor(rows, dtype=torch.bool, device=lengths.device).reshape(len(rows), n)


def causal_mask(T, device=None):
    m = torch.zeros(T, T, dtype=torch.bool, device=device)
    for i in range(T):
        for j in range(i):
            m[i, j] = True
    return m


def attention_mask(lengths, max_len=None, causal=False):
    keys = padding_mask(lengths, max_len)
    T = keys.shape[1]
    m = keys.unsqueeze(1).unsqueeze(1).repeat(1, 1, T, 1)
    if causal:
        m = torch.logical_and(m, causal_mask(T, lengths.device))
    return m
