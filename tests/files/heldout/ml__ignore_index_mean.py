# exercise: masked_loss
# diagnosis: ml_padded_logits_through_log_softmax
import torch
import torch.nn.functional as F


def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    t = torch.where(mask, targets, torch.full_like(targets, -1))
    nll = F.nll_loss(F.log_softmax(logits, -1).flatten(0, 1), t.flatten(), ignore_index=-1, reduction="sum")
    return nll / mask.sum()
