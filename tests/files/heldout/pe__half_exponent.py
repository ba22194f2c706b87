# exercise: positional_encoding
# diagnosis: pe_exponent_i_over_d
import math

import torch


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2 != 0:
        raise ValueError("d must be even")
    pe = torch.zeros(T, d, dtype=torch.float64)
    position = torch.arange(T, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(d // 2, dtype=torch.float64) * (-math.log(base) / d))  # base**(-i/d)
    pe[:, ::2] = torch.sin(position * div)
    pe[:, 1::2] = torch.cos(position * div)
    return pe.to(torch.float32)


def add_positional_encoding(X):
    return X + sinusoidal_encoding(X.shape[1], X.shape[2]).to(dtype=X.dtype, device=X.device)
