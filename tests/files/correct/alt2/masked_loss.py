"""Correct, written differently: F.cross_entropy(ignore_index) after replacing padded targets
and padded logits (a NaN logit would otherwise reach the gradient through log_softmax)."""
import torch
import torch.nn.functional as F

IGNORE = -100


def masked_cross_entropy(logits, targets, mask):
    if mask.sum().item() == 0:
        raise ValueError("empty mask")
    B, T, V = logits.shape
    safe_logits = logits.masked_fill(~mask.unsqueeze(-1), 0.0)
    safe_targets = targets.masked_fill(~mask, IGNORE)
    return F.cross_entropy(safe_logits.reshape(B * T, V), safe_targets.reshape(B * T), ignore_index=IGNORE)
