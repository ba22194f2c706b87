"""Correct, written differently: each function as written by someone who had only the contract
(the source file is named above each one)."""
import torch
from torch import nn
import math
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
