"""Correct, written differently: an explicit 2x2 rotation matrix per pair, applied with einsum; numpy angles."""
import numpy as np
import torch


def rope_angles(T, d, offset=0, base=10000.0):
    if d % 2 == 1:
        raise ValueError(f"odd d={d}")
    i = np.arange(d // 2)
    theta = np.arange(offset, offset + T)[:, None] / np.power(base, 2 * i / d)[None, :]
    return torch.from_numpy(theta).to(torch.float32)


def apply_rope(x, offset=0, base=10000.0):
    *lead, T, d = x.shape
    th = rope_angles(T, d, offset, base).to(x.dtype)
    c, s = torch.cos(th), torch.sin(th)
    R = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)  # (T, d/2, 2, 2)
    pairs = x.reshape(*lead, T, d // 2, 2)
    out = torch.einsum("tpij,...tpj->...tpi", R, pairs)
    return out.reshape(x.shape)
