"""Correct, written differently: log_softmax + gather on the selected rows."""
import torch
import torch.nn.functional as F


def masked_cross_entropy(logits, targets, mask):
    if not bool(mask.any()):
        raise ValueError("no valid token")
    logp = F.log_softmax(logits[mask], dim=-1)  # (N, V)
    nll = -logp.gather(1, targets[mask].unsqueeze(1)).squeeze(1)  # (N,)
    return nll.mean()
