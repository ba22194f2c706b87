"""Correct, with ~triu(1) and broadcasting instead of expand."""
import torch


def padding_mask(lengths, max_len=None):
    if lengths.min() < 0:
        raise ValueError("lengths must be non-negative")
    T = lengths.max().item() if max_len is None else max_len
    if lengths.max() > T:
        raise ValueError("length exceeds max_len")
    return torch.arange(T, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def causal_mask(T, device=None):
    return ~torch.triu(torch.ones(T, T, dtype=torch.bool, device=device), diagonal=1)


def attention_mask(lengths, max_len=None, causal=False):
    key_ok = padding_mask(lengths, max_len).unsqueeze(1).unsqueeze(2)  # (B,1,1,T)
    T = key_ok.shape[-1]
    full = key_ok & torch.ones(1, 1, T, 1, dtype=torch.bool, device=lengths.device)
    if causal:
        full = full & causal_mask(T, lengths.device).view(1, 1, T, T)
    return full
