# exercise: rope
# diagnosis: rope_rotates_backwards
import math

import torch


def rope_angles(T, d, offset=0, base=10000.0):
    if d % 2:
        raise ValueError("odd d")
    out = torch.empty(T, d // 2, dtype=torch.float64)
    for t in range(T):
        for i in range(d // 2):
            out[t, i] = (offset + t) / base ** (2 * i / d)
    return out.float()


def apply_rope(x, offset=0, base=10000.0):
    T, d = x.shape[-2:]
    a = rope_angles(T, d, offset, base).double()
    c, s = a.cos().to(x.dtype), a.sin().to(x.dtype)
    even, odd = x[..., ::2], x[..., 1::2]
    # rotation by -theta
    new_even = even * c + odd * s
    new_odd = odd * c - even * s
    return torch.stack((new_even, new_odd), -1).reshape(x.shape)
