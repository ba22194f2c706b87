"""Probes of the `masks` exercise: padding_mask, causal_mask, attention_mask."""
import torch

from ..registry import probe

EX = "masks"


@probe(EX, "padding_mask")
def padding_mask_values(s):
    return [s.call("padding_mask", torch.tensor([3, 0, 2])),
            s.call("padding_mask", torch.tensor([1, 4, 2]), 6),
            s.call("padding_mask", torch.tensor([2, 2]), max_len=2),
            s.call("padding_mask", torch.tensor([5]))]


@probe(EX, "padding_mask")
def padding_mask_rejects_bad_lengths(s):
    return [s.raises(ValueError, "padding_mask", torch.tensor([-1, 2])),
            s.raises(ValueError, "padding_mask", torch.tensor([5, 1]), 3),
            s.raises(ValueError, "padding_mask", torch.tensor([2, 1]), 2)]


@probe(EX, "causal_mask")
def causal_mask_values(s):
    return [s.call("causal_mask", 1), s.call("causal_mask", 4), s.call("causal_mask", 3, device="cpu")]


@probe(EX, "attention_mask")
def attention_mask_values(s):
    return [s.call("attention_mask", torch.tensor([3, 1, 2])),
            s.call("attention_mask", torch.tensor([3, 1, 2]), causal=True),
            s.call("attention_mask", torch.tensor([2, 4]), 5, causal=True),
            s.call("attention_mask", torch.tensor([1, 3]), 4)]
