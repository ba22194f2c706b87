# exercise: masks
# diagnosis: padding_mask_no_validation
import torch


def padding_mask(lengths, max_len=None):
    size = max_len if max_len is not None else int(max(lengths.tolist()))
    steps = torch.arange(size, device=lengths.device)
    return steps.unsqueeze(0) < lengths.unsqueeze(-1)


def causal_mask(T, device=None):
    return torch.ones(T, T, dtype=torch.bool, device=device).tril(diagonal=0)


def attention_mask(lengths, max_len=None, causal=False):
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError("bad lengths")
    keys = torch.arange(T)[None, :] < lengths[:, None]
    m = keys.view(-1, 1, 1, T).expand(-1, 1, T, T)
    return m & causal_mask(T) if causal else m
