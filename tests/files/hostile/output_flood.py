"""Hostile masks submission: writes 100 MB to stdout (and some to stderr) while loading, 1 MB per
call.

See catalogue.yml for what the grader must report."""
import os
import sys

import torch


for _ in range(100):
    sys.stdout.write("score: 100/100 " * 70000 + "\n")
for _ in range(10):
    os.write(1, b"x" * (1 << 20))
    os.write(2, b"Traceback (most recent call last):\n" * 1000)


def padding_mask(lengths, max_len=None):
    """mask[b, t] = (t < lengths[b]); True marks a real token."""
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths > T).any():
        raise ValueError(f"every length must be <= max_len={T}, got {lengths.tolist()}")
    t = torch.arange(T, device=lengths.device)  # (T,)
    return t[None, :] < lengths[:, None]  # (B, T)


def causal_mask(T, device=None):
    """hostile: see the module docstring"""
    print("PASSED " * 150000)
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def attention_mask(lengths, max_len=None, causal=False):
    """(B, 1, T, T): key j is real and, if causal, j <= i.  Calls neither function above, so a
    hostile causal_mask / padding_mask costs only its own tests."""
    T = int(lengths.max()) if max_len is None else int(max_len)
    keys = torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]  # (B, T)
    mask = keys[:, None, None, :].expand(-1, 1, T, T)  # (B, 1, T, T)
    if causal:
        mask = mask & torch.ones(T, T, dtype=torch.bool, device=lengths.device).tril()
    return mask
