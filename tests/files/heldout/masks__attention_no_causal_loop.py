# exercise: masks
# diagnosis: attention_mask_ignores_causal
import torch


def padding_mask(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError("bad lengths")
    return (torch.stack([torch.arange(T, device=lengths.device) < int(n) for n in lengths]) if len(lengths)
            else torch.zeros(0, T, dtype=torch.bool, device=lengths.device))


def causal_mask(T, device=None):
    return torch.tril(torch.ones(T, T, device=device)).bool()


def attention_mask(lengths, max_len=None, causal=False):
    keys = padding_mask(lengths, max_len)
    B, T = keys.shape
    out = torch.zeros(B, 1, T, T, dtype=torch.bool)
    for b in range(B):
        for i in range(T):
            out[b, 0, i] = keys[b]
    return out
