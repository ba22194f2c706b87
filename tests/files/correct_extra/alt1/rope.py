"""Correct, written differently: complex numbers (Llama's freqs_cis, on interleaved pairs), all in float32."""
import math

import torch


def rope_angles(T, d, offset=0, base=10000.0):
    if d % 2:
        raise ValueError("d must be even")
    inv_freq = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(base) / d))  # (d/2,)
    pos = torch.arange(T, dtype=torch.float32) + offset  # (T,)
    return torch.outer(pos, inv_freq)  # (T, d/2)


def apply_rope(x, offset=0, base=10000.0):
    T, d = x.shape[-2:]
    theta = rope_angles(T, d, offset, base)
    ctype = torch.complex128 if x.dtype == torch.float64 else torch.complex64
    rot = torch.polar(torch.ones_like(theta), theta).to(ctype)  # (T, d/2)  e^{i theta}
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())  # (..., T, d/2)
    return torch.view_as_real(z * rot).reshape(x.shape).to(x.dtype)
