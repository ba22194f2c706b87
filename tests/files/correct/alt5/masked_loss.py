"""Correct, written differently: float64 inside, masked_select, cast back at the end."""
import torch


def masked_cross_entropy(logits, targets, mask):
    V = logits.shape[-1]
    count = mask.long().sum()
    if count.item() < 1:
        raise ValueError("no valid token")
    x = torch.masked_select(logits, mask[..., None]).view(-1, V).double()  # (N, V)
    y = torch.masked_select(targets, mask)  # (N,)
    logp = x.log_softmax(-1)
    nll = -logp[torch.arange(len(y)), y]
    return (nll.sum() / count).to(logits.dtype)
