"""Hostile masks submission: causal_mask is wrong on its fifteenth call only (one of the test of the
past and present keys) and right on every other -- so a test run again in the same worker after a
failure (a second chance) would see it pass where grading it alone sees it fail.

See catalogue.yml for what the grader must report."""
import torch


def padding_mask(lengths, max_len=None):
    """mask[b, t] = (t < lengths[b]); True marks a real token."""
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths > T).any():
        raise ValueError(f"every length must be <= max_len={T}, got {lengths.tolist()}")
    t = torch.arange(T, device=lengths.device)  # (T,)
    return t[None, :] < lengths[:, None]  # (B, T)


_CALLS = [0]


def causal_mask(T, device=None):
    """hostile: see the module docstring"""
    _CALLS[0] += 1
    mask = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    return ~mask if _CALLS[0] == 15 else mask  # wrong on its fifteenth call only


def attention_mask(lengths, max_len=None, causal=False):
    """(B, 1, T, T): key j is real and, if causal, j <= i.  Calls neither function above, so a
    hostile causal_mask / padding_mask costs only its own tests."""
    T = int(lengths.max()) if max_len is None else int(max_len)
    keys = torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]  # (B, T)
    mask = keys[:, None, None, :].expand(-1, 1, T, T)  # (B, 1, T, T)
    if causal:
        mask = mask & torch.ones(T, T, dtype=torch.bool, device=lengths.device).tril()
    return mask
