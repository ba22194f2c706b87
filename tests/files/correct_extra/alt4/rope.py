"""Correct, written differently (beginner style): a Python loop over positions and pairs, math.cos / math.sin."""
import math

import torch


def rope_angles(T, d, offset=0, base=10000.0):
    if d % 2 != 0:
        raise ValueError("d must be even")
    rows = []
    for t in range(T):
        rows.append([(offset + t) / math.pow(base, 2 * i / d) for i in range(d // 2)])
    return torch.tensor(rows, dtype=torch.float32).reshape(T, d // 2)


def apply_rope(x, offset=0, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    theta = rope_angles(T, d, offset, base).tolist()
    out = x.clone()
    for t in range(T):
        for i in range(d // 2):
            c, s = math.cos(theta[t][i]), math.sin(theta[t][i])
            a, b = x[..., t, 2 * i], x[..., t, 2 * i + 1]
            out[..., t, 2 * i] = a * c - b * s
            out[..., t, 2 * i + 1] = a * s + b * c
    return out
