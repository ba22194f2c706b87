"""Correct, written differently: pow in float32, torch.stack then flatten to interleave."""
import torch


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2 != 0:
        raise ValueError("the sin/cos pairs need an even d")
    two_i = torch.arange(0, d, 2).float()
    denom = torch.pow(torch.tensor(float(base)), two_i / d)  # (d/2,) float32
    angle = torch.arange(T).float()[:, None] / denom[None, :]  # (T, d/2)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(start_dim=1)  # (T, d)


def add_positional_encoding(X):
    B, T, d = X.shape
    pe = sinusoidal_encoding(T, d).to(dtype=X.dtype, device=X.device)
    return X + pe.unsqueeze(0).expand(B, T, d)
