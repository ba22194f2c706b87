# exercise: positional_encoding
# diagnosis: pe_sin_cos_swapped
import math

import torch


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2:
        raise ValueError("d must be even")
    pe = torch.zeros(T, d)
    for t in range(T):
        for i in range(d // 2):
            angle = t / (base ** (2 * i / d))
            pe[t, 2 * i] = math.cos(angle)
            pe[t, 2 * i + 1] = math.sin(angle)
    return pe


def add_positional_encoding(X):
    return X + sinusoidal_encoding(X.shape[1], X.shape[2]).to(X)
