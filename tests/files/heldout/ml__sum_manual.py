# exercise: masked_loss
# diagnosis: ml_sum_instead_of_mean
import torch


def masked_cross_entropy(logits, targets, mask):
    if int(mask.sum()) == 0:
        raise ValueError("no valid token")
    lp = torch.log_softmax(logits[mask], dim=-1)
    t = targets[mask]
    return -lp[torch.arange(t.numel()), t].sum()
