"""Correct, computed with numpy and converted back."""
import numpy as np
import torch


def padding_mask(lengths, max_len=None):
    L = lengths.detach().cpu().numpy()
    if (L < 0).any():
        raise ValueError("negative")
    T = int(L.max()) if max_len is None else int(max_len)
    if (L > T).any():
        raise ValueError("too long")
    m = np.arange(T)[None, :] < L[:, None]
    return torch.from_numpy(m).to(lengths.device)


def causal_mask(T, device=None):
    return torch.from_numpy(np.tril(np.ones((T, T), dtype=bool))).to(device or "cpu")


def attention_mask(lengths, max_len=None, causal=False):
    pm = padding_mask(lengths, max_len).cpu().numpy()
    T = pm.shape[1]
    m = np.broadcast_to(pm[:, None, None, :], (pm.shape[0], 1, T, T)).copy()
    if causal:
        m &= np.tril(np.ones((T, T), dtype=bool))
    return torch.from_numpy(m).to(lengths.device)
