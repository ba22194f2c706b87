"""Correct, written differently: torch.where with zeros instead of indexing (padded logits and
targets are replaced BEFORE any arithmetic, so NaN never reaches the loss or its gradient)."""
import torch
import torch.nn.functional as F


def masked_cross_entropy(logits, targets, mask):
    if not mask.any():
        raise ValueError("no valid token in mask")
    m = mask.unsqueeze(-1)  # (B, T, 1)
    safe_logits = torch.where(m, logits, torch.zeros_like(logits))  # (B, T, V)
    safe_targets = torch.where(mask, targets, torch.zeros_like(targets))  # (B, T)
    nll = -F.log_softmax(safe_logits, dim=-1).gather(-1, safe_targets.unsqueeze(-1)).squeeze(-1)  # (B, T)
    nll = torch.where(mask, nll, torch.zeros_like(nll))
    return nll.sum() / mask.sum()
