"""Correct, written differently: each function as written by someone who had only the contract
(the source file is named above each one)."""
import torch
import torch.nn.functional as F
from torch import nn
import math


# masked_cross_entropy: from l_logsumexp.py: CORRECT [masked_loss]: logsumexp - target logit, computed only on boolean-indexed valid tokens
def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid tokens")
    x = logits[mask]
    y = targets[mask]
    lse = torch.logsumexp(x, dim=-1)
    picked = x.gather(1, y[:, None])[:, 0]
    return (lse - picked).mean()
