"""Correct, written differently: complex exponential e^{i t w}, (cos, sin) flipped to (sin, cos)."""
import torch


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2 != 0:
        raise ValueError("d must be even")
    w = (1.0 / base) ** (torch.arange(d // 2, dtype=torch.float32) / (d / 2))  # (d/2,)
    angle = torch.arange(T, dtype=torch.float32)[:, None] * w  # (T, d/2)
    z = torch.polar(torch.ones_like(angle), angle)  # cos + i sin
    return torch.view_as_real(z).flip(-1).reshape(T, d).contiguous()


def add_positional_encoding(X):
    *_, T, d = X.shape
    return X.add(sinusoidal_encoding(T, d).to(device=X.device, dtype=X.dtype))
