"""Correct, written differently: the reference solution, then functions written another way by a
reviewer who had only the contract (red-team, 2026-11-30); the later definitions replace the earlier.

Reference solution: sinusoidal positional encoding / 参考答案：正弦位置编码.

PE[t, 2i] = sin(t / base**(2i/d)),  PE[t, 2i+1] = cos(t / base**(2i/d)),  t = 0, 1, ...
"""
import torch


def sinusoidal_encoding(T, d, base=10000.0):
    """(T, d) float32 table, interleaved sin (even columns) / cos (odd columns)."""
    if d % 2 != 0:
        raise ValueError(f"d must be even, got d={d}")
    t = torch.arange(T, dtype=torch.float64)[:, None]  # (T, 1)
    two_i = torch.arange(0, d, 2, dtype=torch.float64)  # (d/2,)  = 2i
    angle = t / base ** (two_i / d)  # (T, d/2)
    pe = torch.empty(T, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)  # even columns
    pe[:, 1::2] = torch.cos(angle)  # odd columns
    return pe.float()  # (T, d)


def add_positional_encoding(X):
    """X + PE, broadcast over the batch; X's dtype and device, no scaling."""
    B, T, d = X.shape
    pe = sinusoidal_encoding(T, d).to(dtype=X.dtype, device=X.device)  # (T, d)
    return X + pe  # (B, T, d)


# ---- written differently (red-team variants, graded correct) ----
from torch import nn
import math
import torch
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
