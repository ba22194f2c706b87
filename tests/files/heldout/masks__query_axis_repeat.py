# exercise: masks
# diagnosis: attention_mask_padding_on_query_axis
import torch


def padding_mask(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError("bad lengths")
    return torch.arange(T, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def causal_mask(T, device=None):
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def attention_mask(lengths, max_len=None, causal=False):
    valid = padding_mask(lengths, max_len)          # (B, T)
    T = valid.shape[-1]
    m = valid.unsqueeze(-1).repeat(1, 1, T).unsqueeze(1)   # (B, 1, T, T): rows = queries
    if causal:
        m = m * causal_mask(T)
    return m.bool()
