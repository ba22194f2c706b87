"""Reference solution: sinusoidal positional encoding / 参考答案：正弦位置编码.

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
