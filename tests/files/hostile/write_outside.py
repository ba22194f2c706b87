"""Hostile masks submission: writes outside its directory while loading: a new file in the grader's
checkout (found from autograder.__file__), course.yml opened for writing, /tmp/pwned, /var/tmp,
/dev/shm and the submission's own folder.

See catalogue.yml for what the grader must report."""
import os
import sys

import torch


_repo = os.path.dirname(os.path.dirname(os.path.abspath(sys.modules["autograder"].__file__)))
_mine = os.path.dirname(os.path.abspath(__file__))

open(os.path.join(_repo, "PWNED-by-hostile-submission"), "w").write("pwned\n")
os.close(os.open(os.path.join(_repo, "course.yml"), os.O_WRONLY | os.O_APPEND))  # (writes nothing)
open("/tmp/pwned", "w").write("pwned\n")
open("/var/tmp/pwned-by-hostile-submission", "w").write("pwned\n")
open("/dev/shm/pwned-by-hostile-submission", "w").write("pwned\n")
open(os.path.join(_mine, "PWNED-by-hostile-submission"), "w").write("pwned\n")


def padding_mask(lengths, max_len=None):
    """mask[b, t] = (t < lengths[b]); True marks a real token."""
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths > T).any():
        raise ValueError(f"every length must be <= max_len={T}, got {lengths.tolist()}")
    t = torch.arange(T, device=lengths.device)  # (T,)
    return t[None, :] < lengths[:, None]  # (B, T)


def causal_mask(T, device=None):
    """mask[i, j] = (j <= i): query i sees keys 0..i, never the future."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()  # (T, T)


def attention_mask(lengths, max_len=None, causal=False):
    """(B, 1, T, T): key j is real and, if causal, j <= i.  Calls neither function above, so a
    hostile causal_mask / padding_mask costs only its own tests."""
    T = int(lengths.max()) if max_len is None else int(max_len)
    keys = torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]  # (B, T)
    mask = keys[:, None, None, :].expand(-1, 1, T, T)  # (B, 1, T, T)
    if causal:
        mask = mask & torch.ones(T, T, dtype=torch.bool, device=lengths.device).tril()
    return mask
