"""Correct, written differently: float64 inside, outer product, cast at the end."""
import torch


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2:
        raise ValueError("d must be even")
    t = torch.arange(T, dtype=torch.double)
    freq = 1.0 / (base ** (torch.arange(d // 2, dtype=torch.double) * 2 / d))
    angle = torch.outer(t, freq)  # (T, d/2)
    pe = torch.cat([angle.sin().unsqueeze(-1), angle.cos().unsqueeze(-1)], dim=-1).view(T, d)
    return pe.to(torch.float32)


def add_positional_encoding(X):
    return torch.add(X, sinusoidal_encoding(X.size(1), X.size(-1))[None].to(X.dtype).to(X.device))
