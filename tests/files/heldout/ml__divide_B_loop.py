# exercise: masked_loss
# diagnosis: ml_divide_by_batch_size
import torch
import torch.nn.functional as F


def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    B = logits.size(0)
    total = 0.0
    for b in range(B):
        total = total + F.cross_entropy(logits[b, mask[b]], targets[b, mask[b]], reduction="sum")
    return total / B
