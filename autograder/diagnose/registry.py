"""The probes' registry and what a probe sees of the student.

A probe is ``probe_fn(student) -> anything engine.encode() reads``, registered for one function of
one exercise with ``@probe(exercise, function)``.  It talks to the student only through the
``Student`` interface (``call`` / ``new`` / ``invoke`` / ``raises``), wrapped in a ``Guarded``
student: a call that crashes, or modifies its input in place, gives a ``CallFailed`` in place of
its result, so that one failing call is one observation (a probe that calls a function five times
still sees the four other results).  A missing function still raises: a function that is not
there is never diagnosed.
"""

from ..errors import MissingFunction, PropertyFailure, TestTimeout

PROBES = {}  # exercise -> {function: [probe(student) -> value]}


def load_probes():
    """Import every exercise's probes module, autograder/exercises/<exercise>/probes.py (idempotent:
    each registers its probes in PROBES once); {exercise: its probes module}."""
    from .. import exercises

    return exercises.import_each("probes")


def probe(exercise, function, isolates=False, on_device=False):
    """Register a probe of `function` (an exercise function, or a class like MultiHeadAttention).
    `isolates`: its inputs make a part of the function irrelevant (a saturated gate, alike gate
    blocks), so that a mistake elsewhere is seen alone.  `on_device`: it gives the function an
    argument on another device (checks/elsewhere.py), which only the function's own exercise
    asks for (tiny_lm does not register it again for the parts pasted into it)."""

    def register(fn):
        fn.isolates = isolates or getattr(fn, "isolates", False)  # (tiny_lm registers the parts' probes again)
        fn.on_device = on_device or getattr(fn, "on_device", False)
        PROBES.setdefault(exercise, {}).setdefault(function, []).append(fn)
        return fn

    return register


class CallFailed:
    """What a guarded call gives when the student's code raised ("error") or changed an input in
    place ("inplace"); `written`: then the argument it wrote into (its position, as
    _harness.argument_position says it), when known."""

    __slots__ = ("kind", "failure", "written")

    def __init__(self, kind, failure=None):
        self.kind, self.failure = kind, failure  # failure: the PropertyFailure (its details), if any
        self.written = getattr(failure, "written", None) if kind == "inplace" else None

    def __repr__(self):
        return f"CallFailed({self.kind})"


def failure_kind(f):
    """'missing', 'inplace' or 'error' for a PropertyFailure raised by a Student call."""
    if isinstance(f, MissingFunction) or getattr(f, "kind", "") == "missing":
        return "missing"
    return "inplace" if "in place" in (getattr(f, "en", "") or "") else "error"


class Guarded:
    """A Student whose failing calls give CallFailed instead of raising (see the module docstring).
    `calls` lists the text of every call made, in order (for the report's "something else differs");
    `log` every call as (method, name, args, kwargs, result), for the explanation by part's
    comparison of forms (dtype, shape, in-place writes, ValueError: diagnose/parts/form.py)."""

    def __init__(self, student):
        self.student = student
        self.calls = []
        self.log = []

    def _run(self, method, label, *args, **kwargs):
        try:
            out = method(label, *args, **kwargs)
        except TestTimeout:
            raise
        except PropertyFailure as f:
            kind = failure_kind(f)
            if kind == "missing":
                raise
            out = CallFailed(kind, f)
        self.calls.append(str(getattr(self.student, "last_call", "") or label))
        self.log.append(("call", str(label), args, kwargs, out))
        return out

    def call(self, name, *args, **kwargs):
        """The student's `name(*args, **kwargs)`, or a CallFailed when it raises or writes into an
        input (a missing function still raises)."""
        return self._run(self.student.call, name, *args, **kwargs)

    def new(self, name, *args, **kwargs):
        """An instance of the student's class `name`, or a CallFailed as `call` gives."""
        return self._run(self.student.new, name, *args, **kwargs)

    def invoke(self, label, fn, *args, **kwargs):
        """`fn`, an object the student's code returned, called as `label`; a CallFailed `fn` comes
        back as it is, a failing call gives one."""
        if isinstance(fn, CallFailed):
            return fn
        return self._run(lambda lab, *a, **k: self.student.invoke(lab, fn, *a, **k), label, *args, **kwargs)

    def raises(self, exc_type, name, *args, **kwargs):
        """True / False as Student.raises; a crash it cannot read (NotImplementedError) is a CallFailed."""
        try:
            out = self.student.raises(exc_type, name, *args, **kwargs)
        except TestTimeout:
            raise
        except PropertyFailure as f:
            if failure_kind(f) == "missing":
                raise
            out = CallFailed("error", f)
        self.calls.append("raises " + str(getattr(self.student, "last_call", "") or name))
        self.log.append(("raises", str(name), args, kwargs, out))
        return out

    def __getattr__(self, name):  # abort, exercise, last_call ...
        return getattr(self.student, name)


__all__ = ["PROBES", "probe", "CallFailed", "Guarded", "failure_kind", "MissingFunction"]
