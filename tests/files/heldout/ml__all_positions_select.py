# exercise: masked_loss
# diagnosis: ml_mean_over_all_positions
import torch
import torch.nn.functional as F


def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("empty mask")
    total = F.cross_entropy(logits[mask], targets[mask], reduction="sum")
    return total / mask.numel()
