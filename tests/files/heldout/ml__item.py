# exercise: masked_loss
# diagnosis: ml_returns_python_float
import torch
import torch.nn.functional as F


def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    loss = F.cross_entropy(logits[mask], targets[mask])
    return float(loss)
