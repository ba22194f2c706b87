# exercise: positional_encoding
# diagnosis: pe_concatenated_layout
import math

import torch


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2 != 0:
        raise ValueError("odd d")
    pos = torch.arange(T, dtype=torch.float64).unsqueeze(1)
    inv_freq = torch.exp(-math.log(base) * torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = pos * inv_freq
    return torch.hstack((ang.sin(), ang.cos())).to(torch.float32)


def add_positional_encoding(X):
    B, T, d = X.shape
    return X + sinusoidal_encoding(T, d).to(dtype=X.dtype, device=X.device).unsqueeze(0)
