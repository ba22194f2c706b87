# exercise: masked_loss
# diagnosis: ml_no_error_on_empty_mask
import torch


def masked_cross_entropy(logits, targets, mask):
    logp = torch.log_softmax(logits[mask], dim=-1)
    nll = -logp.gather(1, targets[mask][:, None])[:, 0]
    return nll.sum() / mask.sum()
