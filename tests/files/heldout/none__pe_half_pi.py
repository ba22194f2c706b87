# exercise: positional_encoding
# diagnosis: none
# Not catalogued: the cosine columns are sin(angle + pi) (sign flipped), the base is right.
import math

import torch


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2 != 0:
        raise ValueError("d must be even")
    t = torch.arange(T, dtype=torch.float64)[:, None]
    ang = t / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.empty(T, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(ang)
    pe[:, 1::2] = torch.sin(ang + math.pi)
    return pe.float()


def add_positional_encoding(X):
    return X + sinusoidal_encoding(X.shape[1], X.shape[2]).to(dtype=X.dtype, device=X.device)
