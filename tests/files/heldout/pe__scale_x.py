# exercise: positional_encoding
# diagnosis: add_pe_scales_x_by_sqrt_d
import torch


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2 != 0:
        raise ValueError("d must be even")
    t = torch.arange(T, dtype=torch.float64).reshape(T, 1)
    k = torch.arange(d // 2, dtype=torch.float64).reshape(1, -1)
    ang = t * base ** (-2 * k / d)
    out = torch.stack((torch.sin(ang), torch.cos(ang)), dim=-1).reshape(T, d)
    return out.float()


def add_positional_encoding(X):
    d = X.shape[-1]
    pe = sinusoidal_encoding(X.shape[-2], d).type_as(X)
    return X * d ** 0.5 + pe   # as in "Attention is all you need"'s embedding layer
