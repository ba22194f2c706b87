"""Correct, written differently: a loop over the pairs, cos/sin repeated to full width and a rotate-every-two helper."""
import torch


def rope_angles(T, d, offset=0, base=10000.0):
    if d % 2 != 0:
        raise ValueError("d must be even")
    out = torch.zeros(T, d // 2)
    for i in range(d // 2):
        w = 1.0 / (base ** (2 * i / d))
        for t in range(T):
            out[t, i] = (offset + t) * w
    return out


def rotate_every_two(x):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rope(x, offset=0, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    theta = rope_angles(T, d, offset, base).repeat_interleave(2, dim=-1)  # (T, d)
    return x * theta.cos().to(x.dtype) + rotate_every_two(x) * theta.sin().to(x.dtype)
