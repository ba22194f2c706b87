"""Diagnosis: name the catalogued mistakes a failing function makes, and say what else differs.

    registry.py       the probes' registry, and the student a probe sees (a failed call is data)
    inputs.py         small seeded inputs for the probes
    probes/<ex>.py    each exercise's probes (as autograder/properties/ has each exercise's tests)
    engine.py         observations -> aspects -> the mistakes that account for them; the budget
    values.py         when two values are the same: one tolerance, one rule

The runner calls ``diagnose_outcomes`` (judge/runner.py); the tests also use ``diagnose``,
``observations``, ``signatures``, ``agree`` and ``describe``.  See engine.py for how a mistake is
matched.
"""

from .engine import (  # noqa: F401
    FAILED,
    _trusted,
    _trusted_student,
    agree,
    aspects,
    describe,
    diagnose,
    diagnose_outcomes,
    encode,
    forms,
    observations,
    observe,
    same,
    signatures,
    uses,
)
from .registry import PROBES, CallFailed, Guarded, probe  # noqa: F401
from .values import ATOL, RTOL, close, near  # noqa: F401
