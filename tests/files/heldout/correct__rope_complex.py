# exercise: rope
# diagnosis: correct
# A correct RoPE written with complex numbers: pair (2i, 2i+1) is the complex number x_2i + i x_2i+1.
import torch


def rope_angles(T, d, offset=0, base=10000.0):
    if d % 2 != 0:
        raise ValueError("d must be even")
    pos = torch.arange(offset, offset + T, dtype=torch.float64)
    freq = 1.0 / base ** (torch.arange(d // 2, dtype=torch.float64) * 2 / d)
    return (pos[:, None] * freq[None, :]).float()


def apply_rope(x, offset=0, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    ang = rope_angles(T, d, offset, base).double()
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    rot = torch.polar(torch.ones_like(ang), ang)
    return torch.view_as_real(z * rot).reshape(x.shape).to(x.dtype)
