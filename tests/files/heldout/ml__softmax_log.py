# exercise: masked_loss
# diagnosis: ml_softmax_then_log
import torch


def masked_cross_entropy(logits, targets, mask):
    if not bool(mask.any()):
        raise ValueError("no valid token")
    probs = torch.softmax(logits[mask], dim=-1)
    picked = probs.gather(-1, targets[mask].unsqueeze(-1)).squeeze(-1)
    return -(picked.log().sum() / mask.sum())
