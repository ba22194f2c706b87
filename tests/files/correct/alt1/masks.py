"""Correct, written with explicit Python loops."""
import torch


def padding_mask(lengths, max_len=None):
    lens = [int(v) for v in lengths]
    if any(v < 0 for v in lens):
        raise ValueError("negative length")
    T = max(lens) if max_len is None else max_len
    if any(v > T for v in lens):
        raise ValueError("length above max_len")
    mask = torch.zeros(len(lens), T, dtype=torch.bool, device=lengths.device)
    for b, L in enumerate(lens):
        for t in range(L):
            mask[b, t] = True
    return mask


def causal_mask(T, device=None):
    mask = torch.zeros(T, T, dtype=torch.bool, device=device)
    for i in range(T):
        for j in range(i + 1):
            mask[i, j] = True
    return mask


def attention_mask(lengths, max_len=None, causal=False):
    pm = padding_mask(lengths, max_len)
    B, T = pm.shape
    out = torch.zeros(B, 1, T, T, dtype=torch.bool, device=lengths.device)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                out[b, 0, i, j] = bool(pm[b, j]) and (not causal or j <= i)
    return out
