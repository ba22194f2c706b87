# exercise: masked_loss
# diagnosis: ml_per_sequence_mean
import torch
import torch.nn.functional as F


def masked_cross_entropy(logits, targets, mask):
    if not mask.any():
        raise ValueError("empty mask")
    per_seq = []
    for b in range(logits.shape[0]):
        m = mask[b]
        if m.any():
            per_seq.append(F.cross_entropy(logits[b][m], targets[b][m]))   # mean over this sequence
    return torch.stack(per_seq).mean()
