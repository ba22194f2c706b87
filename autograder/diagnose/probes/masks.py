"""Probes of the `masks` exercise: padding_mask, causal_mask, attention_mask."""
import torch

from ..inputs import kind_of
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


@probe(EX, "causal_mask")
def causal_mask_elsewhere(s):
    """Built on `device`, on a device other than the CPU (properties/masks.elsewhere_device: "cuda" on
    a machine without CUDA, where building on it raises; "meta" otherwise): what came back, or that
    torch refused to build there."""
    from ...properties.masks import built_elsewhere

    what, out = built_elsewhere(s.student, 3)  # another exception: observe() reads it as an error
    if what == "refused":
        return ["refused"]
    if not isinstance(out, torch.Tensor):
        return [kind_of(out)]
    return [out.device.type, str(out.dtype), tuple(out.shape)]
