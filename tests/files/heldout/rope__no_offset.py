# exercise: rope
# diagnosis: rope_ignores_offset
import math

import torch


def rope_angles(T, d, offset=0, base=10000.0):
    if d % 2 != 0:
        raise ValueError("d must be even")
    inv = torch.exp(-math.log(base) * torch.arange(0, d, 2, dtype=torch.float64) / d)
    pos = torch.arange(T, dtype=torch.float64)           # the offset is never used
    return torch.outer(pos, inv).to(torch.float32)


def apply_rope(x, offset=0, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    ang = rope_angles(T, d, offset, base).to(torch.float64)
    cos = ang.cos().repeat_interleave(2, -1).to(x.dtype)
    sin = ang.sin().repeat_interleave(2, -1).to(x.dtype)
    rot = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
    return x * cos + rot * sin
