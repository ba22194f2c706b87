"""Reference solution: masks / 参考答案：掩码.

Information boundary: a query at position i may look at key j only if j is a real token
(not padding) and, for a causal model, j <= i.  True = allowed (may attend).
"""
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


def causal_mask(T, device=None):
    """mask[i, j] = (j <= i): query i sees keys 0..i, never the future."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()  # (T, T)


def attention_mask(lengths, max_len=None, causal=False):
    """(B, 1, T, T): key j is real and, if causal, j <= i; broadcasts over heads."""
    keys = padding_mask(lengths, max_len)  # (B, T)  which keys are real
    T = keys.shape[1]
    mask = keys[:, None, None, :].expand(-1, 1, T, T)  # (B, 1, T, T)  mask on the key axis
    if causal:
        mask = mask & causal_mask(T, device=lengths.device)  # (B, 1, T, T)
    return mask
