# exercise: masks
# diagnosis: none
# Not catalogued: the causal mask lets each query see one step of the future.
import torch


def padding_mask(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError("bad lengths")
    return torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]


def causal_mask(T, device=None):
    return torch.ones(T, T, dtype=torch.bool, device=device).tril(1)


def attention_mask(lengths, max_len=None, causal=False):
    keys = padding_mask(lengths, max_len)
    T = keys.shape[1]
    m = keys[:, None, None, :].expand(-1, 1, T, T)
    return m & causal_mask(T) if causal else m
