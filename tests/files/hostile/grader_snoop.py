"""Hostile masks submission: looks for the grader's reference code and expected answers in its own
memory (sys.modules, gc.get_objects) and returns them; without them it has no answer.

See catalogue.yml for what the grader must report."""
import gc
import sys

import torch


def padding_mask(lengths, max_len=None):
    """The grader's own reference, if it can be found in this process."""
    if (lengths < 0).any():
        raise ValueError("negative length")
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths > T).any():
        raise ValueError("length above max_len")
    for name, mod in list(sys.modules.items()):
        ref = getattr(mod, "padding_mask_ref", None)
        if name.startswith("autograder") and callable(ref):
            return ref(lengths, T)
    for obj in gc.get_objects():
        if callable(obj) and getattr(obj, "__name__", "") == "padding_mask_ref":
            return obj(lengths, T)
    raise LookupError("no reference implementation found in memory")


def causal_mask(T, device=None):
    """hostile: see the module docstring"""
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and obj.dtype == torch.bool and tuple(obj.shape) == (T, T) \
                and bool(obj.tril().equal(obj)) and bool(obj.diagonal().all()):
            return obj.clone()
    raise LookupError("no expected answer found in memory")


def attention_mask(lengths, max_len=None, causal=False):
    """(B, 1, T, T): key j is real and, if causal, j <= i.  Calls neither function above, so a
    hostile causal_mask / padding_mask costs only its own tests."""
    T = int(lengths.max()) if max_len is None else int(max_len)
    keys = torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]  # (B, T)
    mask = keys[:, None, None, :].expand(-1, 1, T, T)  # (B, 1, T, T)
    if causal:
        mask = mask & torch.ones(T, T, dtype=torch.bool, device=lengths.device).tril()
    return mask
