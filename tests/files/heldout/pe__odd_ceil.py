# exercise: positional_encoding
# diagnosis: pe_odd_d_not_rejected
import math

import torch


def sinusoidal_encoding(T, d, base=10000.0):
    pe = torch.zeros(T, d)
    for i in range(0, d, 2):
        w = 1.0 / base ** (i / d)
        for t in range(T):
            pe[t, i] = math.sin(t * w)
            if i + 1 < d:
                pe[t, i + 1] = math.cos(t * w)
    return pe


def add_positional_encoding(X):
    return X + sinusoidal_encoding(X.shape[1], X.shape[2]).to(dtype=X.dtype, device=X.device)
