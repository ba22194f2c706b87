# exercise: positional_encoding
# diagnosis: pe_base_ignored
import math

import torch

BASE = 10000


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2 != 0:
        raise ValueError("d must be even")
    out = torch.empty(T, d)
    for i in range(d // 2):
        freq = math.exp(-2 * i / d * math.log(BASE))
        col = torch.arange(T, dtype=torch.float64) * freq
        out[:, 2 * i] = torch.sin(col).float()
        out[:, 2 * i + 1] = torch.cos(col).float()
    return out


def add_positional_encoding(X):
    return X + sinusoidal_encoding(X.shape[1], X.shape[2]).to(dtype=X.dtype, device=X.device)
