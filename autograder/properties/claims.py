"""What a hint claims about its counterexample, checked (tests/test_catalogue.py, tests/test_diagnosis.py).

A hint must never blame a cause that its own counterexample does not show: "exp(1e4) overflows"
under a counterexample whose logits are all 0 sends the student after the wrong bug.  Each rule
below reads a hint (English text) for a claim and the structured counterexample
(TestResult.counterexample, properties/_harness.counterexample) for what it shows.

    violations(hint_en, counterexample) -> [str]    the claims the counterexample does not back
"""
import math
import re

LARGE = 50.0  # "large values": at least one input entry this large (exp overflows from ~89 in float32)


def _numbers(value):
    """Every number of a counterexample value (nested lists, {"values": ...} tensors, scalars)."""
    if isinstance(value, dict):
        yield from _numbers(value.get("values"))
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, bool):
        return
    elif isinstance(value, (int, float)):
        yield float(value)
    elif value in ("inf", "-inf"):
        yield float(value)


def _masks(value):
    """Rows (along the last axis) of the bool tensors among the inputs."""
    if isinstance(value, dict) and value.get("dtype") == "bool" and value.get("values") is not None:
        stack = [value["values"]]
        while stack:
            v = stack.pop()
            if isinstance(v, list) and v and not isinstance(v[0], list):
                yield v
            elif isinstance(v, list):
                stack.extend(v)


def _nonfinite(value):
    if isinstance(value, (list, tuple)):
        return any(_nonfinite(v) for v in value)
    return value in ("nan", "inf", "-inf")


def _large_inputs(cx):
    """Large values: an input this large, or a result that overflowed (NaN or inf) from finite
    inputs (scores are products of inputs: Q and K of 20 already give exp(283))."""
    inputs = [x for v in (cx.get("inputs") or {}).values() for x in _numbers(v)]
    if any(math.isfinite(x) and abs(x) >= LARGE for x in inputs):
        return True
    return all(math.isfinite(x) for x in inputs) and _nonfinite(cx.get("got"))


def _fully_masked_row(cx):
    return any(not any(row) for v in (cx.get("inputs") or {}).values() for row in _masks(v))


RULES = [
    # (what the hint claims, how the hint says it, what the counterexample must show)
    ("overflow of large values", re.compile(r"exp\(1e4\)|1e4|overflow|large logits|large values", re.I), _large_inputs),
    ("a fully masked query row", re.compile(r"fully masked row|exp\(-inf\) / 0", re.I), _fully_masked_row),
]


def violations(hint_en, counterexample):
    """The claims of the hint that the counterexample does not show (empty: the hint is fair).
    A counterexample without inputs (a crash before any call) backs nothing and is not judged."""
    cx = counterexample or {}
    if not cx.get("inputs"):
        return []
    return [claim for claim, says, shows in RULES if says.search(hint_en or "") and not shows(cx)]
