"""Correct, written differently: each function as written by someone who had only the contract
(the source file is named above each one)."""
import torch
from torch import nn
import math
import torch.nn.functional as F


# sinusoidal_encoding: from p_polar.py: CORRECT [positional_encoding]: torch.polar complex exponential (float64), view_as_real -> (cos,sin) flipped to (sin,cos), reshape
def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2:
        raise ValueError("odd d")
    t = torch.arange(T, dtype=torch.float64)[:, None]
    freqs = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    ang = t * freqs
    z = torch.polar(torch.ones_like(ang), ang)  # cos + i sin
    ri = torch.view_as_real(z)  # (..., 2) = (cos, sin)
    return ri.flip(-1).reshape(T, d).float()


# add_positional_encoding: from p_polar.py: CORRECT [positional_encoding]: torch.polar complex exponential (float64), view_as_real -> (cos,sin) flipped to (sin,cos), reshape
def add_positional_encoding(X):
    B, T, d = X.shape
    return X + sinusoidal_encoding(T, d).to(dtype=X.dtype, device=X.device)[None]
