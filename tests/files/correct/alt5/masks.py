"""Correct, with torch.where and a float intermediate (cast back to bool)."""
import torch


def padding_mask(lengths, max_len=None):
    if (lengths < 0).sum() > 0:
        raise ValueError("lengths must be >= 0")
    T = int(lengths.max()) if max_len is None else max_len
    if (lengths > T).sum() > 0:
        raise ValueError("lengths must be <= max_len")
    t = torch.arange(T, device=lengths.device, dtype=torch.float32)
    return torch.where(t[None] < lengths[:, None].float(), 1.0, 0.0).bool()


def causal_mask(T, device=None):
    return torch.tril(torch.ones(T, T, device=device)).to(torch.bool)


def attention_mask(lengths, max_len=None, causal=False):
    m = padding_mask(lengths, max_len)[:, None, None, :].float()
    T = m.shape[-1]
    m = m * torch.ones(T, 1, device=lengths.device)
    if causal:
        m = m * causal_mask(T, lengths.device).float()
    return m > 0.5
