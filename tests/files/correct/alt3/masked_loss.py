"""Correct, written differently: logsumexp by hand, max subtracted."""
import torch


def masked_cross_entropy(logits, targets, mask):
    n = int(mask.sum())
    if n == 0:
        raise ValueError("mask has no True entry")
    x = logits[mask]  # (N, V)
    m = x.max(dim=-1, keepdim=True).values  # (N, 1)
    lse = m.squeeze(-1) + torch.log(torch.exp(x - m).sum(dim=-1))  # (N,)
    picked = x[torch.arange(n), targets[mask]]  # (N,)
    return (lse - picked).sum() / n
