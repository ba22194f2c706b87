"""Correct, written differently: each function as written by someone who had only the contract
(the source file is named above each one)."""
import torch
import torch.nn.functional as F
from torch import nn
import math


# masked_cross_entropy: from l_loop.py: CORRECT [masked_loss]: python loop over positions, accumulates per-token CE of valid tokens
def masked_cross_entropy(logits, targets, mask):
    B, T, V = logits.shape
    total = None
    count = 0
    for b in range(B):
        for t in range(T):
            if bool(mask[b, t]):
                l = F.cross_entropy(logits[b, t][None], targets[b, t][None])
                total = l if total is None else total + l
                count += 1
    if count == 0:
        raise ValueError("no valid token")
    return total / count
