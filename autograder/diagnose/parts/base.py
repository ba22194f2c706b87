"""What every experiment of the diagnosis by part is made of: its calls, the variants of the
reference, seeded inputs, outputs read as values and compared (values.close), where along an
axis the first output goes wrong, the student's outputs of the calls, the conditions under which
they are wrong, and a claim as the report shows it.  The engine (__init__.py) and each exercise's
experiments (autograder/exercises/<exercise>/experiments.py) import these; this module imports
neither."""

import torch

from ...report.messages import pair
from ..registry import CallFailed, Guarded
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


# ---------------------------------------------------------------- the student's outputs, claims


def _student_outputs(student, calls, deadline):
    """The student's outputs of each call ([output] or None: unreadable); None when out of time."""
    g = Guarded(student)
    got = []
    for c in calls:
        if deadline is not None and deadline():
            return None
        try:
            with torch.random.fork_rng():
                out = c.run(g)
        except Exception:  # noqa: BLE001 - what came back could not be read: compare nothing
            out = None
        got.append(out)
    return got


def _deviates(s, r):
    """Does a call's output `s` differ from the reference's `r` (None: not compared)?"""
    return r is not None and (s is None or len(s) != len(r) or not all(_close(a, b) for a, b in zip(s, r)))


def _claim(function, part, zh, en, shows, something_else):
    """A claim as the report shows it (see explain in __init__.py)."""
    d = {"function": function, "part": part, "zh": zh, "en": en, "probe": shows}
    if something_else:
        d["else_zh"], d["else_en"] = pair("part.also_else")
    return d


def _conditions(function, calls, S, R):
    """Where no variant reproduces the student: the condition under which the student's function
    is wrong, by experiment.  A call may be tagged with a `condition` (lengths unsorted, T past 64, a
    second call of one module, scores far below 0...); the condition is claimed when the student is
    right on every untagged call and wrong on at least MIN_CALLS of the calls it tags, and at least half.  A call tagged
    "again" repeats the call `again_of` on fresh inputs of the same values: differing from the
    student's own first answer, the function is random."""
    plain = [i for i, c in enumerate(calls) if not getattr(c, "condition", None)]
    for i, c in enumerate(calls):
        if getattr(c, "condition", None) == "again" and S[i] is not None and S[c.again_of] is not None:
            if _deviates(S[i], S[c.again_of]) and _deviates(S[c.again_of], R[c.again_of]):
                zh, en = pair("part.random", fn=function)
                return [_claim(function, "random", zh, en, c.shows, False)]
    if not plain or any(_deviates(S[i], R[i]) for i in plain):
        return []
    out = []
    for cond in dict.fromkeys(getattr(c, "condition", None) for c in calls):
        if cond in (None, "again"):
            continue
        tagged = [i for i, c in enumerate(calls) if getattr(c, "condition", None) == cond]
        wrong = [i for i in tagged if _deviates(S[i], R[i])]
        if len(wrong) >= MIN_CALLS and 2 * len(wrong) >= len(tagged):
            fields = {"fn": function, "n": len(wrong), "m": len(tagged)}
            tagged = wrong
            where = getattr(calls[tagged[0]], "where", None)
            if where is not None:
                fields.update(where([S[i] for i in tagged], [R[i] for i in tagged], [calls[i] for i in tagged]))
            if "skip" in fields:
                continue
            zh, en = pair(f"part.when_{cond}", **fields)
            out.append(_claim(function, f"when {cond}", zh, en, calls[tagged[0]].shows, False))
    return out
