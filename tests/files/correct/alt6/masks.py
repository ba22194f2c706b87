"""Correct, with masked_fill on a fresh tensor and einsum-free outer products."""
import torch


def padding_mask(lengths, max_len=None):
    lengths = torch.as_tensor(lengths)
    if torch.any(lengths < 0):
        raise ValueError("negative length")
    T = max_len if max_len is not None else int(torch.max(lengths))
    if torch.any(lengths > T):
        raise ValueError("length > max_len")
    steps = torch.arange(1, T + 1, device=lengths.device).expand(lengths.shape[0], T)
    return steps <= lengths[:, None]


def causal_mask(T, device=None):
    future = torch.ones(T, T, dtype=torch.bool, device=device).triu(1)
    return torch.ones(T, T, dtype=torch.bool, device=device).masked_fill(future, False)


def attention_mask(lengths, max_len=None, causal=False):
    keys = padding_mask(lengths, max_len)
    T = keys.size(1)
    rows = torch.ones(keys.size(0), T, dtype=torch.bool, device=keys.device)
    m = (rows[:, :, None] & keys[:, None, :]).unsqueeze(1)
    return m & causal_mask(T, keys.device) if causal else m
