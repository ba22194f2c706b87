"""Correct, with index comparisons via meshgrid and repeat."""
import torch


def padding_mask(lengths, max_len=None):
    if bool((lengths < 0).any()):
        raise ValueError(f"negative length in {lengths}")
    T = int(lengths.max()) if max_len is None else int(max_len)
    if bool((lengths > T).any()):
        raise ValueError(f"a length exceeds max_len={T}")
    pos = torch.arange(T, device=lengths.device).repeat(len(lengths), 1)
    return pos < lengths.reshape(-1, 1)


def causal_mask(T, device=None):
    i, j = torch.meshgrid(torch.arange(T, device=device), torch.arange(T, device=device), indexing="ij")
    return j <= i


def attention_mask(lengths, max_len=None, causal=False):
    keys = padding_mask(lengths, max_len)
    B, T = keys.shape
    m = keys.reshape(B, 1, 1, T).repeat(1, 1, T, 1)
    if causal:
        m = torch.logical_and(m, causal_mask(T, device=lengths.device))
    return m
