# exercise: masks
# diagnosis: padding_mask_inverted
# True marks padding here (the opposite of the contract), via expand and a comparison.
import torch


def padding_mask(lengths, max_len=None):
    if torch.any(lengths < 0):
        raise ValueError("negative length")
    T = lengths.max().item() if max_len is None else max_len
    if torch.any(lengths > T):
        raise ValueError("too long")
    pos = torch.arange(T, device=lengths.device).expand(lengths.numel(), T)
    return ~(pos < lengths.unsqueeze(1))


def causal_mask(T, device=None):
    i = torch.arange(T, device=device)
    return i[None, :] <= i[:, None]


def attention_mask(lengths, max_len=None, causal=False):
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError("bad lengths")
    pos = torch.arange(T, device=lengths.device)
    keys = pos[None, :] < lengths[:, None]
    m = keys[:, None, None, :] & torch.ones(1, 1, T, 1, dtype=torch.bool, device=lengths.device)
    if causal:
        m = m & (pos[None, :] <= pos[:, None])
    return m
