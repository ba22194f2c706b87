"""An explanation by part: which part of a function's computation differs, found by experiment.

When no catalogued mistake accounts for how a function deviates (engine.diagnose names nothing),
this module runs the student's function on its own small, seeded inputs (through the same guarded
Student interface as the probes: in the sandbox for a RemoteStudent) and compares what comes back
with *variants* of the reference: the reference computed with one part altered (a parameter block
of a recurrent cell zeroed, doubled, negated or swapped; the state of a sequence taken at another
step; one condition of a mask flipped; the losses summed over other tokens or divided by another
count...).  The student's code is never read.

A variant is *tested* on the outputs (of the calls) where it differs from the reference.  It is
claimed only when

* it is tested on at least two calls, and the student reproduces its values (within the grader's
  tolerance) on every output that tests it;
* no other variant reproduces the student as well: of variants whose tested outputs overlap, only
  one that tests all the others' outputs (and so explains more) is kept; two that explain the same
  outputs are ambiguous and say nothing; and
* no catalogued mistake of the function computes the same thing on these inputs (naming it is
  the catalogue's business, and the diagnosis did not name it).

For masks and the positional encoding the claim may also be a plain observation of where the
student's values differ (only the diagonal, only the odd columns...), said only when it holds on
every call.  What the student's values show beyond the claimed part is said too ("something else
differs as well").  Nothing is said when nothing qualifies: a wrong claim is worse than silence.

This package holds the engine; each exercise's experiments are its module
autograder/exercises/<exercise>/experiments.py, found by scanning autograder/exercises/ (the
folder's name is the exercise), with one small interface:

    FUNCTIONS                 the functions it explains by part
    setup(function, ref_ns)   (calls, variants) of a function, or None (base.Call, base.Variant)
    FITS                      optional: {function: fits(S, calls) -> [Variant]}, variants whose
                              constant is read off the student's outputs
    OUTPUTS                   optional: {function: the names of what a call returns}
    explain(student, function, ref_ns, catalogued, deadline)
                              optional: the claims found its own way (facts of what a random or
                              plain-data function returns), in place of the variants

form.py says how a result's form differs; base.py holds what they all use (calls, variants,
inputs, values, the student's outputs, claims).
"""

import functools

import torch

from ... import exercises
from ...report.messages import pair
from .base import (  # noqa: F401 - the tests read _close and _student_outputs here
    MIN_CALLS,
    _claim,
    _close,
    _conditions,
    _deviates,
    _student_outputs,
)


def _judge(S, R, calls, variants):
    """The variants claimed (see the module docstring): [(variant, tested cells, cells else)]."""
    deviating = {
        (i, k)
        for i, (s, r) in enumerate(zip(S, R))
        if s is not None
        for k in range(len(r))
        if not (k < len(s) and _close(s[k], r[k]))
    }
    deviating |= {(i, k) for i, s in enumerate(S) if s is None for k in range(len(R[i]))}
    if not deviating:
        return []
    claimed = []
    for v in variants:
        tested, ok = set(), True
        for i, r in enumerate(R):
            outs = v.outs(i, calls[i])
            if outs is None:
                continue
            for k in range(len(r)):
                if not _close(outs[k], r[k]):
                    tested.add((i, k))
                    s = S[i]
                    if s is None or k >= len(s) or not _close(s[k], outs[k]):
                        ok = False
                        break
            if not ok:
                break
        if ok and len({i for i, _ in tested}) >= MIN_CALLS:
            claimed.append((v, tested))
    if not claimed:
        return []
    # two variants computing the same on every call are one claim, said the first way (a mask
    # region that is all False in the reference: set to True or flipped, the same)
    distinct = []
    for v, tested in claimed:
        if not any(
            t == tested and all(_same_outs(v.outs(i, c), w.outs(i, c)) for i, c in enumerate(calls))
            for w, t in distinct
        ):
            distinct.append((v, tested))
    claimed = distinct
    # the claims that explain most: of two whose tested outputs overlap, one that holds the other's
    kept = []
    for v, tested in claimed:
        others = [t for w, t in claimed if w is not v and t & tested]
        if any(t > tested for t in others):
            continue  # another claim explains this and more
        if any(t == tested for t in others):
            return []  # two different parts explain exactly the same: ambiguous
        kept.append((v, tested))
    # two kept claims that overlap without one holding the other: ambiguous, say nothing
    for a in range(len(kept)):
        for b in range(a + 1, len(kept)):
            if kept[a][1] & kept[b][1]:
                return []
    explained = set().union(*(t for _, t in kept)) if kept else set()
    return [(v, t, bool(deviating - explained)) for v, t in kept]


def _same_outs(a, b):
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))


# ---------------------------------------------------------------- the explanation


@functools.cache
def experiments():
    """{exercise: its experiments module}, autograder/exercises/<exercise>/experiments.py, imported."""
    return exercises.import_each("experiments")


def functions():
    """{exercise: the functions it explains by part}."""
    return {ex: tuple(m.FUNCTIONS) for ex, m in experiments().items()}


def fits():
    """{function: fits(S, calls) -> [Variant]}: variants whose constant is read off the student's outputs."""
    return {f: fit for m in experiments().values() for f, fit in getattr(m, "FITS", {}).items()}


def __getattr__(name):
    """FUNCTIONS and FITS: functions() and fits(), the experiments imported on first use."""
    if name == "FUNCTIONS":
        return functions()
    if name == "FITS":
        return fits()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _setup(exercise, function, ref_ns):
    """(calls, variants) of a function with variants, or None."""
    module = experiments().get(exercise)
    return None if module is None else module.setup(function, ref_ns)


def explain(student, exercise, function, ref_ns, catalogued=(), deadline=None):
    """[claim] for one failing function nothing catalogued accounts for: each claim a dict
    {"function", "part" (the variant's id), "zh", "en" (what differs, in the report's words),
    "probe" (a call that shows it), and "else_zh" / "else_en" when something else differs too}.
    `catalogued`: Students of the function's catalogued mistakes (trusted, in process): a variant
    one of them reproduces is theirs, never claimed here.  `deadline()`: True when out of time."""
    module = experiments().get(exercise)
    if module is None or function not in module.FUNCTIONS:
        return []
    if hasattr(module, "explain"):  # its own way: facts of what the function returns, not variants
        return module.explain(student, function, ref_ns, catalogued, deadline)
    setup = module.setup(function, ref_ns)
    if setup is None:
        return []
    calls, variants = setup
    S = _student_outputs(student, calls, deadline)
    if S is None:
        return []
    fit = getattr(module, "FITS", {}).get(function)
    if fit is not None:
        variants = variants + fit(S, calls)
    R = [c.ref() for c in calls]
    found = _judge(S, R, calls, variants)
    if not found:
        names = getattr(module, "OUTPUTS", {}).get(function)
        return (
            _conditions(function, calls, S, R)
            or _which_outputs(function, names, S, R, calls)
            or _near(function, S, R, calls)
        )
    out = []
    for v, tested, else_ in found:
        if deadline is not None and deadline():
            return []
        if _catalogued(v, tested, calls, catalogued, deadline):
            return []  # a catalogued mistake computes this: the diagnosis' business, not ours
        fields = dict(v.fields)
        zh, en = pair(v.key, **fields)
        first = min(i for i, _ in tested)
        claim = _claim(function, v.id, zh, en, calls[first].shows, else_)
        if "hint_en" in fields and not else_:  # the part at fault is another function: the test's hint is not
            claim["in"] = fields["function"]
            claim["hint_zh"], claim["hint_en"] = fields["hint_zh"], fields["hint_en"]
        out.append(claim)
    return out


def _which_outputs(function, names, S, R, calls):
    """Where no variant nor condition fits: which of the function's outputs (named `names`, the
    experiments' OUTPUTS) differ, when it is the same proper part of them on every call that
    deviates (at least MIN_CALLS), and the rest is right on every call."""
    if names is None:
        return []
    seen, first = set(), None
    for i, (s, r) in enumerate(zip(S, R)):
        if r is None:
            continue
        if s is None or len(s) != len(r) or len(r) != len(names):
            return []
        wrong = frozenset(k for k in range(len(r)) if r[k] is not None and not _close(s[k], r[k]))
        if wrong:
            seen.add(wrong)
            first = i if first is None else first
    if len(seen) != 1:
        return []
    wrong = next(iter(seen))
    if len(wrong) == len(names) or sum(1 for s, r in zip(S, R) if r is not None and _deviates(s, r)) < MIN_CALLS:
        return []
    bad = ", ".join(names[k] for k in sorted(wrong))
    good = ", ".join(names[k] for k in range(len(names)) if k not in wrong)
    zh, en = pair("part.which_outputs", fn=function, bad=bad, good=good)
    return [_claim(function, "outputs " + bad, zh, en, calls[first].shows, False)]


NEAR = 1e-2  # a relative difference at most this large, everywhere: "close, but not within the tolerance"


def _near(function, S, R, calls):
    """Where nothing else fits: the student's values are close to the reference's everywhere (within
    NEAR, relative) but outside the tolerance on at least MIN_CALLS calls: how far, at most, said as a
    number next to the rounding of float16 and bfloat16."""
    worst, first, wrong = 0.0, None, 0
    for i, (s, r) in enumerate(zip(S, R)):
        if r is None:
            continue
        if s is None or len(s) != len(r):
            return []
        for a, b in zip(s, r):
            if b is None or not isinstance(b, torch.Tensor):
                continue
            if (
                not isinstance(a, torch.Tensor)
                or a.shape != b.shape
                or not bool(torch.isfinite(a).all())
                or not bool(torch.isfinite(b).all())
            ):
                return []
            rel = float(((a - b).abs() / b.abs().clamp_min(1.0)).max()) if a.numel() else 0.0
            if rel > NEAR:
                return []
            worst = max(worst, rel)
        if _deviates(s, r):
            wrong += 1
            first = i if first is None else first
    if wrong < MIN_CALLS:
        return []
    zh, en = pair("part.near", fn=function, x=f"{worst:.1e}")
    return [_claim(function, "near", zh, en, calls[first].shows, False)]


def _catalogued(v, tested, calls, catalogued, deadline):
    """Does a catalogued mistake give the variant's values on every call that tests it?"""
    for mistake in catalogued:
        if deadline is not None and deadline():
            return True
        got = _student_outputs(mistake, calls, None)
        if got is None:
            continue
        if all(got[i] is not None and k < len(got[i]) and _close(got[i][k], v.outs(i, calls[i])[k]) for i, k in tested):
            return True
    return False


__all__ = ["FUNCTIONS", "FITS", "experiments", "explain", "fits", "functions"]
