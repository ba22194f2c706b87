# exercise: masks
# diagnosis: causal_mask_upper_triangle
import torch


def padding_mask(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError("bad lengths")
    return torch.arange(T, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def causal_mask(T, device=None):
    r = torch.arange(T, device=device)
    return r.view(1, T) >= r.view(T, 1)   # j >= i: the future


def attention_mask(lengths, max_len=None, causal=False):
    keys = padding_mask(lengths, max_len)
    T = keys.size(1)
    m = keys[:, None, None, :].expand(keys.size(0), 1, T, T)
    if causal:
        m = m & causal_mask(T)
    return m
