# exercise: masked_loss
# diagnosis: ml_log_softmax_wrong_axis
import torch


def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    logp = torch.log_softmax(logits, 1)     # over the time axis
    sel = logp[mask]
    t = targets[mask]
    return -sel[torch.arange(len(t)), t].mean()
