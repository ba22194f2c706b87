# exercise: positional_encoding
# diagnosis: add_pe_casts_to_float32
import torch


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2 != 0:
        raise ValueError("d must be even")
    t = torch.arange(T, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d, 2, dtype=torch.float64)
    angle = t / base ** (two_i / d)
    pe = torch.stack([angle.sin(), angle.cos()], -1).flatten(1)
    return pe.float()


def add_positional_encoding(X):
    out = X + sinusoidal_encoding(X.shape[1], X.shape[2]).to(dtype=X.dtype, device=X.device)
    return out.to(torch.float32)
