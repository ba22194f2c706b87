"""Correct, written differently: pure Python loops with math.sin / math.cos."""
import math

import torch


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2 == 1:
        raise ValueError(f"odd d={d}")
    rows = []
    for t in range(T):
        row = []
        for i in range(d // 2):
            angle = t / base ** (2 * i / d)
            row.append(math.sin(angle))
            row.append(math.cos(angle))
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float32).reshape(T, d)


def add_positional_encoding(X):
    out = X.clone()
    pe = sinusoidal_encoding(X.shape[1], X.shape[2])
    for b in range(X.shape[0]):
        out[b] = out[b] + pe.to(dtype=X.dtype, device=X.device)
    return out
