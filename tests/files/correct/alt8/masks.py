"""Correct, written differently: the reference solution, then functions written another way by a
reviewer who had only the contract (red-team, 2026-11-30); the later definitions replace the earlier.

Reference solution: masks / 参考答案：掩码.

Information boundary: a query at position i may look at key j only if j is a real token
(not padding) and, for a causal model, j <= i.  True = allowed (may attend).
"""
import torch


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
    """mask[i, j] = (j <= i): query i sees keys 0..i, never the future."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()  # (T, T)


def attention_mask(lengths, max_len=None, causal=False):
    """(B, 1, T, T): key j is real and, if causal, j <= i; broadcasts over heads."""
    keys = padding_mask(lengths, max_len)  # (B, T)  which keys are real
    T = keys.shape[1]
    mask = keys[:, None, None, :].expand(-1, 1, T, T)  # (B, 1, T, T)  mask on the key axis
    if causal:
        mask = mask & causal_mask(T, device=lengths.device)  # (B, 1, T, T)
    return mask


# ---- written differently (red-team variants, graded correct) ----
from torch import nn
import math
import torch
import torch.nn.functional as F


# padding_mask: from m_loops.py: CORRECT [masks]: padding_mask/causal_mask/attention_mask built with python loops
def padding_mask(lengths, max_len=None):
    ls = [int(x) for x in lengths.tolist()]
    for l in ls:
        if l < 0:
            raise ValueError("negative length")
    T = max(ls) if max_len is None else int(max_len)
    if max_len is None and len(ls) == 0:
        T = 0
    for l in ls:
        if l > T:
            raise ValueError("length above max_len")
    rows = [[t < l for t in range(T)] for l in ls]
    return torch.tensor(rows, dtype=torch.bool, device=lengths.device).reshape(len(ls), T)


# causal_mask: from m_loops.py: CORRECT [masks]: padding_mask/causal_mask/attention_mask built with python loops
def causal_mask(T, device=None):
    m = torch.zeros(T, T, dtype=torch.bool, device=device)
    for i in range(T):
        for j in range(i + 1):
            m[i, j] = True
    return m


# attention_mask: from m_loops.py: CORRECT [masks]: padding_mask/causal_mask/attention_mask built with python loops
def attention_mask(lengths, max_len=None, causal=False):
    pm = padding_mask(lengths, max_len)
    B, T = pm.shape
    out = torch.zeros(B, 1, T, T, dtype=torch.bool, device=lengths.device)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                ok = bool(pm[b, j])
                if causal and j > i:
                    ok = False
                out[b, 0, i, j] = ok
    return out
