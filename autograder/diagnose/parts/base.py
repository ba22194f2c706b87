"""What every experiment of the diagnosis by part is made of: its calls, the variants of the
reference, seeded inputs, outputs read as values and compared (values.close), and where along an
axis the first output goes wrong.  The engine (__init__.py) and each exercise's experiments import
these; this module imports neither."""

import torch

from ..registry import CallFailed
from ..values import close, near

MIN_CALLS = 2  # a variant is tested on at least this many calls before it is claimed
INPLACE = ("inplace",)  # the expected "output" of a variant that writes into its inputs
CRASHED = ("crashed",)  # the expected "output" of a variant that cannot compute it (the student's crash)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _rnd(shape, seed, scale=1.0, dtype=torch.float32):
    x = torch.randint(-100, 101, tuple(shape), generator=_gen(seed)).double() * (scale / 100)
    return x.to(dtype)


# ---------------------------------------------------------------- comparing outputs


def _value(x):
    """An output as a float64 tensor (a Python number too), INPLACE, or None (a crash, an odd result)."""
    if isinstance(x, CallFailed):
        return INPLACE if x.kind == "inplace" else None
    if isinstance(x, bool):
        return torch.tensor(float(x), dtype=torch.float64)
    if isinstance(x, (int, float)):
        return torch.tensor(float(x), dtype=torch.float64)
    if isinstance(x, torch.Tensor) and not x.is_meta:
        return x.detach().to("cpu").to(torch.float64)
    return None


def _close(a, b):
    """Two outputs (see _value) equal within the grader's tolerance (a 0-dim and a 1-number tensor alike)."""
    if a is CRASHED or b is CRASHED:
        return a in (None, CRASHED) and b in (None, CRASHED)
    if a is None or b is None:
        return False
    if a is INPLACE or b is INPLACE:
        return a is b
    return close(a, b)


class Call:
    """One experiment: a call of the student's function (`run(guarded) -> [outputs]`), what the
    reference gives there (`ref() -> [outputs]`), and its brief description for the report."""

    def __init__(self, shows, run, ref):
        self.shows, self.run, self.ref = shows, run, ref


class Variant:
    """The reference with one part altered: `outs(i, call) -> [outputs]` (None: the same as the
    reference's), and what it means, as a message key and its fields."""

    def __init__(self, vid, key, outs, **fields):
        self.id, self.key, self.outs, self.fields = vid, key, outs, fields


def first_wrong(axis):
    """where(S, R, calls) -> {"t"}: the first index along `axis` (steps, positions) at which the
    first output differs, the same on every call it is given and not 0 ("skip" otherwise: then the
    positions say nothing simple)."""

    def where(S, R, calls):
        firsts = set()
        for s, r in zip(S, R):
            if (
                s is None
                or not isinstance(s[0], torch.Tensor)
                or not isinstance(r[0], torch.Tensor)
                or s[0].shape != r[0].shape
            ):
                return {"skip": True}
            bad = ~near(s[0], r[0])
            a = axis % bad.dim()
            steps = bad.any(tuple(k for k in range(bad.dim()) if k != a)).nonzero() if bad.dim() > 1 else bad.nonzero()
            if len(steps) == 0:
                return {"skip": True}
            firsts.add(int(steps[0]))
        return {"t": firsts.pop()} if len(firsts) == 1 and min(firsts) > 0 else {"skip": True}

    return where
