"""Diagnosis: name the catalogued mistakes a failing function makes, and say what else differs.

    registry.py       the probes' registry, and the student a probe sees (a failed call is data)
    inputs.py         small seeded inputs for the probes
    parts/            the explanation by part: its engine, and what the exercises' experiments share
    engine.py         observations -> aspects -> the mistakes that account for them; the budget
    values.py         when two values are the same: one tolerance, one rule

Each exercise's probes are its autograder/exercises/<exercise>/probes.py (registry.load_probes
imports them all).  The runner calls ``diagnose_outcomes`` (judge/runner.py); the tests also use ``diagnose``,
``observations``, ``signatures``, ``agree`` and ``describe``.  See engine.py for how a mistake is
matched.
"""

from .registry import CallFailed, Guarded, probe  # noqa: F401
from .values import ATOL, RTOL, close, near  # noqa: F401

# engine.py's names, imported on first use: engine registers every exercise's probes
# (autograder/exercises/<exercise>/probes.py), which import registry.py and inputs.py from this
# package, so that importing an exercise's probes first never meets a half-imported engine
_ENGINE = (
    "FAILED",
    "PROBES",
    "_trusted",
    "_trusted_student",
    "agree",
    "aspects",
    "describe",
    "diagnose",
    "diagnose_outcomes",
    "encode",
    "forms",
    "observations",
    "observe",
    "same",
    "signatures",
    "uses",
)


def __getattr__(name):
    """engine.py's names (see _ENGINE), the engine imported on first use."""
    if name in _ENGINE:
        from . import engine

        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
