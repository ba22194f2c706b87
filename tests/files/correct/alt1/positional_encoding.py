"""Correct, written differently: exp(-log(base) * 2i/d) frequencies, all in float32."""
import math

import torch


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2:
        raise ValueError("d must be even")
    pos = torch.arange(T, dtype=torch.float32).unsqueeze(1)  # (T, 1)
    inv_freq = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(base) / d))  # (d/2,)
    pe = torch.zeros(T, d)
    pe[:, 0::2] = torch.sin(pos * inv_freq)
    pe[:, 1::2] = torch.cos(pos * inv_freq)
    return pe


def add_positional_encoding(X):
    _, T, d = X.shape
    return X + sinusoidal_encoding(T, d).to(X)
