"""Correct, written differently: the reference solution, then functions written another way by a
reviewer who had only the contract (red-team, 2026-11-30); the later definitions replace the earlier.

Reference solution: masked cross-entropy / 参考答案：带掩码的交叉熵.

loss = sum over valid tokens of -log softmax(logits)[target] / number of valid tokens.
Logits go straight to cross_entropy (log-softmax inside is stable); padding never enters.
"""
import torch
import torch.nn.functional as F


def masked_cross_entropy(logits, targets, mask):
    """logits (B, T, V), targets (B, T), mask (B, T) -> scalar, mean over valid tokens."""
    n_valid = mask.sum()
    if n_valid == 0:
        raise ValueError("mask has no valid token: the loss would be 0/0")
    V = logits.shape[-1]
    valid_logits = logits[mask]  # (N, V)  padding removed before anything is computed
    valid_targets = targets[mask]  # (N,)
    losses = F.cross_entropy(valid_logits.reshape(-1, V), valid_targets, reduction="none")  # (N,)
    return losses.sum() / n_valid


# ---- written differently (red-team variants, graded correct) ----
from torch import nn
import math
import torch
import torch.nn.functional as F


# masked_cross_entropy: from l_logsumexp.py: CORRECT [masked_loss]: logsumexp - target logit, computed only on boolean-indexed valid tokens
def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid tokens")
    x = logits[mask]
    y = targets[mask]
    lse = torch.logsumexp(x, dim=-1)
    picked = x.gather(1, y[:, None])[:, 0]
    return (lse - picked).mean()
