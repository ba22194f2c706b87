# exercise: masked_loss
# diagnosis: none
# Not catalogued: label smoothing 0.1.
import torch.nn.functional as F


def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    return F.cross_entropy(logits[mask], targets[mask], label_smoothing=0.1)
