"""Probes of the `masks` exercise: padding_mask, causal_mask, attention_mask."""

import torch

from ...checks.elsewhere import ELSEWHERE, device_of, put_elsewhere
from ...diagnose.inputs import kind_of
from ...diagnose.registry import probe

EX = "masks"


@probe(EX, "padding_mask")
def padding_mask_values(s):
    """padding_mask on a few lengths, with and without max_len."""
    return [
        s.call("padding_mask", torch.tensor([3, 0, 2])),
        s.call("padding_mask", torch.tensor([1, 4, 2]), 6),
        s.call("padding_mask", torch.tensor([2, 2]), max_len=2),
        s.call("padding_mask", torch.tensor([5])),
    ]


@probe(EX, "padding_mask")
def padding_mask_rejects_bad_lengths(s):
    """padding_mask on a negative length, or a length past max_len: ValueError?"""
    return [
        s.raises(ValueError, "padding_mask", torch.tensor([-1, 2])),
        s.raises(ValueError, "padding_mask", torch.tensor([5, 1]), 3),
        s.raises(ValueError, "padding_mask", torch.tensor([2, 1]), 2),
    ]


@probe(EX, "causal_mask")
def causal_mask_values(s):
    """causal_mask of a few sizes."""
    return [s.call("causal_mask", 1), s.call("causal_mask", 4), s.call("causal_mask", 3, device="cpu")]


@probe(EX, "attention_mask")
def attention_mask_values(s):
    """attention_mask on a few lengths, causal or not, with and without max_len."""
    return [
        s.call("attention_mask", torch.tensor([3, 1, 2])),
        s.call("attention_mask", torch.tensor([3, 1, 2]), causal=True),
        s.call("attention_mask", torch.tensor([2, 4]), 5, causal=True),
        s.call("attention_mask", torch.tensor([1, 3]), 4),
    ]


@probe(EX, "causal_mask", on_device=True)
def causal_mask_elsewhere(s):
    """Built on `device`, a device other than the CPU (checks/elsewhere.py: the GPU where there is
    one, else a simulated device): where the mask came back, and the mask."""
    out = s.call("causal_mask", 3, device=ELSEWHERE)
    return [where(s, out), out]


@probe(EX, "padding_mask", on_device=True)
def padding_mask_elsewhere(s):
    """lengths on a device other than the CPU: where the mask came back, and the mask."""
    out = s.call("padding_mask", put_elsewhere(torch.tensor([3, 1, 2])))
    return [where(s, out), out]


def where(s, out):
    """ "device" if `out` is on the device the call asked for, "cpu" if on the CPU (the same
    observation on a GPU and on the simulated device); what it is otherwise."""
    if not isinstance(out, torch.Tensor):
        return kind_of(out)
    device = device_of(out)
    if device == "cpu":
        return "cpu"
    return "device" if device == getattr(s.student, "elsewhere", None) else "another device"


@probe(EX, "attention_mask")
def attention_mask_zero_length(s):
    """A sequence of length 0 among others: its rows have no allowed key."""
    return [
        s.call("attention_mask", torch.tensor([2, 0, 3])),
        s.call("attention_mask", torch.tensor([0, 2]), 3, causal=True),
    ]


@probe(EX, "causal_mask")
def causal_mask_long(s):
    """Past 64 and 128 positions: what a fixed block of positions gets wrong."""
    return [s.call("causal_mask", 150)]


@probe(EX, "padding_mask")
def padding_mask_long_and_wide(s):
    """Past 64 and 128 positions, and a batch of 40 sequences."""
    lengths = torch.randint(1, 7, (40,), generator=torch.Generator().manual_seed(1))
    return [s.call("padding_mask", torch.tensor([150, 3, 97])), s.call("padding_mask", lengths, 6)]


@probe(EX, "attention_mask")
def attention_mask_long_and_wide(s):
    """attention_mask past 100 positions, and of a batch of 40 sequences."""
    lengths = torch.randint(1, 5, (40,), generator=torch.Generator().manual_seed(3))
    return [s.call("attention_mask", torch.tensor([130, 70]), causal=True), s.call("attention_mask", lengths, 4)]
