"""Reference solution: rotary position embedding (RoPE), interleaved pairs / 参考答案：旋转位置编码.

Pair i of a vector is columns (2i, 2i+1); at position p it is turned by the angle p * w_i,
w_i = base**(-2i/d):
    out[2i]   = x[2i] cos(p w_i) - x[2i+1] sin(p w_i)
    out[2i+1] = x[2i] sin(p w_i) + x[2i+1] cos(p w_i)
Row t of x sits at position p = offset + t (offset > 0: the new tokens after a KV cache).
"""
import torch


def rope_angles(T, d, offset=0, base=10000.0):
    """(T, d/2) float32 angles theta[t, i] = (offset + t) * base**(-2i/d)."""
    if d % 2 != 0:
        raise ValueError(f"d must be even, got d={d}")
    p = torch.arange(offset, offset + T, dtype=torch.float64)[:, None]  # (T, 1)  positions
    w = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)  w_i
    return (p * w).float()  # (T, d/2)


def apply_rope(x, offset=0, base=10000.0):
    """Rotate each column pair (2i, 2i+1) of row t by (offset + t) * base**(-2i/d)."""
    T, d = x.shape[-2], x.shape[-1]  # x: (..., T, d)
    angle = rope_angles(T, d, offset, base).to(device=x.device, dtype=torch.float64)  # (T, d/2)
    cos = angle.cos().to(x.dtype)  # (T, d/2)
    sin = angle.sin().to(x.dtype)  # (T, d/2)
    x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., T, d/2)  first and second of each pair
    out1 = x1 * cos - x2 * sin  # (..., T, d/2)
    out2 = x1 * sin + x2 * cos  # (..., T, d/2)
    return torch.stack([out1, out2], dim=-1).flatten(-2)  # (..., T, d)  pairs interleaved again
