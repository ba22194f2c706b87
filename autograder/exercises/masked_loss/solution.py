"""Reference solution: masked cross-entropy / 参考答案：带掩码的交叉熵.

loss = sum over valid tokens of -log softmax(logits)[target] / number of valid tokens.
Logits go straight to cross_entropy (log-softmax inside is stable); padding never enters.
"""
import torch  # noqa: F401 - the catalogued mistakes and probes appended to this file use it
import torch.nn.functional as F


def masked_cross_entropy(logits, targets, mask):
    """logits (B, T, V), targets (B, T), mask (B, T) -> scalar, mean over valid tokens."""
    n_valid = mask.sum()
    if n_valid == 0:
        raise ValueError("mask has no valid token: the loss would be 0/0")
    V = logits.shape[-1]
    valid_logits = logits[mask]  # (N, V)  padding removed before anything is computed
    valid_targets = targets[mask]  # (N,)
    losses = F.cross_entropy(valid_logits.reshape(-1, V), valid_targets, reduction="none")  # (N,)
    return losses.sum() / n_valid
