"""The grader checks itself: a score is written only where the reference solutions get full marks.

A grade means that the student's code works only if the grader works where it runs.  A grader
that works on a laptop may not on a GPU server (sandbox/devices.py), or with another build of
torch, or in a sandbox this machine restricts differently.  So, in the same interpreter, torch
build, devices, sandbox and course as the students:

1. ``ensure()``, before the first score (``grade``, every grading process of ``grade-batch``
   local or on Dask, nbgrader's autograde): the assignment's reference solutions are graded with
   the same runner.  A lost point stops everything -- GraderEnvironmentError (exit status 2), no
   score, no CSV row, no gradebook entry -- with the property, the exception and what to try.  A
   pass is remembered per environment (``environment()``: grader version, course digest, torch
   version and build, the GPUs and the variables that choose them, Python, kernel, sandbox
   settings) as a JSON file in the user's cache folder (SEQGRADER_CACHE_DIR, else
   $XDG_CACHE_HOME/seqgrader, else ~/.cache/seqgrader): plain data, never a pickle, and a file
   whose environment is not exactly this one's counts for nothing.
2. ``verify()``, while grading: a test that ended in an error (the code raised, or its process
   died) or in a failure that names an exception is run again on the reference, now, in this
   process, through the same sandbox.  If the reference does not pass it either, the error is the
   grader's, never the student's: GraderEnvironmentError again, for the whole run.  A test is
   checked once per process and kind of failure (its status, its message, the exception's type).

`seqgrader self-check` runs 1 without the cache and prints the environment.
"""

import fcntl
import hashlib
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from .errors import GraderEnvironmentError

# outcomes of a test whose submission could not even be loaded: the reference loads (1 checked it)
LOAD_FAILURES = (
    "Loading your submission",
    "The process ended while loading your submission",
    "Loading your other files",
    "The process ended while loading your other files",
)
SETTINGS = ("SEQGRADER_ALLOW_WEAK_SANDBOX", "SEQGRADER_AUTOGRAD_FORK")

_VERIFIED = set()  # (exercise, test, signature) whose reference passed in this process
VERIFY = {"runs": 0, "tests": 0, "seconds": 0.0}  # what verify() cost in this process (grade-batch logs it)


# ---------------------------------------------------------------- the environment


def course_digest(course, exercises):
    """sha256 of what defines the assignment: course.yml's settings and the reference solutions."""
    h = hashlib.sha256(course.model_dump_json().encode())
    for ex in sorted(exercises):
        path = course.reference(ex)
        h.update(f"\0{ex}\0".encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def environment(course, exercises, runner_kind="sandbox"):
    """Everything that decides whether the reference gets full marks here, as plain data."""
    from .sandbox import devices
    from .store import grader_version

    uname = os.uname()
    return {
        "grader": grader_version(),
        "course": course_digest(course, exercises),
        "exercises": sorted(exercises),
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "prefix": sys.prefix,
        "implementation": platform.python_implementation(),
        "kernel": f"{uname.sysname} {uname.release} {uname.machine}",
        "torch": devices.summary(),
        "runner": runner_kind,
        "root": os.geteuid() == 0,
        "settings": {k: os.environ[k] for k in SETTINGS if k in os.environ},
    }


def cache_dir():
    """Where passes are remembered: $SEQGRADER_CACHE_DIR/self-check, else seqgrader/self-check in
    the user's cache folder ($XDG_CACHE_HOME or ~/.cache)."""
    base = os.environ.get("SEQGRADER_CACHE_DIR")
    if not base:
        base = os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "seqgrader"
        )
    return Path(base) / "self-check"


def _key(env):
    return hashlib.sha256(json.dumps(env, sort_keys=True).encode()).hexdigest()[:32]


def cached(env):
    """The remembered pass of this exact environment, or None."""
    try:
        data = json.loads((cache_dir() / f"{_key(env)}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("environment") != env or data.get("passed") is not True:
        return None
    return data


def _remember(env, record):
    from .store import write_atomic

    try:
        write_atomic(cache_dir() / f"{_key(env)}.json", json.dumps({"environment": env, **record}, indent=1))
    except OSError:
        pass  # an unwritable cache: the next run checks again


class _Lock:
    """One process at a time checks an environment (the grading processes of a batch start
    together: one checks, the others read its result)."""

    def __init__(self, env):
        self.fd = None
        try:
            cache_dir().mkdir(parents=True, exist_ok=True)
            self.fd = os.open(cache_dir() / f"{_key(env)}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except OSError:
            self.close()

    def close(self):
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None


# ---------------------------------------------------------------- 1. before the first score


def ensure(course, runner, exercises, refresh=False, runner_kind=None):
    """Make sure the reference solutions of `exercises` get full marks with `runner` here; raises
    GraderEnvironmentError if not.  Returns what was found: {"cached": bool, "seconds", "score",
    "max_score", "environment"}."""
    from .plan import known_exercises

    known_exercises(course, exercises)  # an unknown one: the ConfigError that says so
    kind = runner_kind or ("in-process" if type(runner).__name__ == "InProcessRunner" else "sandbox")
    env = environment(course, exercises, kind)
    lock = _Lock(env)  # a process that checks this environment now: wait for its result
    try:
        hit = None if refresh else cached(env)
        if hit is not None:
            return _remembered(hit, env)
        plan = {ex: list(course.exercises[ex].tests) for ex in exercises}
        raw, seconds = run_reference(course, runner, plan)
        lost = lost_tests(course, plan, raw)
        if lost:
            raise GraderEnvironmentError(failure_message(lost, course, "before grading anyone"), lost=lost)
        record = {
            "passed": True,
            "score": _points(course, plan),
            "max_score": _points(course, plan),
            "seconds": round(seconds, 3),
            "checked_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "devices": devices_used(raw),
        }
        _remember(env, record)
        return {"cached": False, **record, "environment": env}
    finally:
        lock.close()


def _remembered(hit, env):
    return {
        "cached": True,
        **{k: hit.get(k) for k in ("seconds", "score", "max_score", "checked_at", "devices")},
        "environment": env,
    }


def devices_used(raw):
    """{device: [tests]} the device sentences ran on ("cuda:0", or "meta": the simulated device),
    and {"problems": [...]} why a device worker could not use the GPU (checks/elsewhere.py)."""
    out, problems = {}, []
    for ex, got in raw.items():
        for name, o in (got.get("tests") or {}).items():
            if isinstance(o.get("device"), str):
                out.setdefault(o["device"], []).append(f"{ex}/{name}")
            if o.get("device_problem") and o["device_problem"] not in problems:
                problems.append(str(o["device_problem"]))
    if problems:
        out["problems"] = problems
    return out


def _points(course, plan):
    return sum(course.exercises[ex].tests[t].points for ex, tests in plan.items() for t in tests)


def run_reference(course, runner, plan):
    """(the runner's raw outcomes of `plan` on the reference solutions, seconds): run exactly as a
    student's would be."""
    from .plan import run_plan

    start = time.monotonic()
    _registry, raw = run_plan(course.solutions_dir, course, runner, plan)
    return raw, time.monotonic() - start


def lost_tests(course, plan, raw):
    """[{test, status, message, exception}] of every test of `plan` the reference did not pass."""
    out = []
    for ex, tests in plan.items():
        got = raw.get(ex) or {}
        for name in tests:
            o = (got.get("tests") or {}).get(name) or {"status": "error", "en": "The test did not run.", "details": []}
            if o.get("status") != "passed":
                out.append(
                    {
                        "test": f"{ex}/{name}",
                        "status": o.get("status"),
                        "message": o.get("en", ""),
                        "exception": exception_of(o),
                    }
                )
        for e in got.get("load_errors") or []:
            out.append({"test": ex, "status": "error", "message": f"loading the reference: {e}", "exception": ""})
    return out


def exception_of(test):
    """The exception a test's details name ("RuntimeError: ..."), or ""."""
    details = test.details if hasattr(test, "details") else test.get("details", [])
    for label, text in details or []:
        if "exception" in str(label) or "internal" in str(label):
            return str(text)
    return ""


def advice(texts):
    """What to try, from the exceptions met."""
    joined = " ".join(texts)
    if "autograd's threading" in joined or "fork" in joined:
        return (
            "A process of the grader ran a backward pass before it forked (what a CUDA build of torch forbids "
            "on a machine with a GPU). Hide the GPU and grade again (CUDA_VISIBLE_DEVICES= seqgrader ...), and "
            "report it with the output of `seqgrader self-check --json -`."
        )
    if any(w in joined for w in ("CUDA", "cuda", "Accelerator", "NCCL", "cuDNN", "GPU")):
        return (
            "Something about the GPU fails here. Hide it and grade again (CUDA_VISIBLE_DEVICES= seqgrader ...), "
            "and report it with the output of `seqgrader self-check --json -`."
        )
    return (
        "Run `seqgrader self-check` to see it again; check that torch is a version seqgrader supports "
        "(pyproject.toml) and that the course's solutions/ match its course.yml; report it with the output of "
        "`seqgrader self-check --json -`."
    )


def failure_message(lost, course, when, student=None):
    """The error's text when the reference loses points here: the lost tests (eight at most), the
    student whose grading found it, and what to try (`advice`)."""
    lines = [
        f"the reference solutions ({course.solutions_dir}) do not get full marks in this environment, so no "
        f"score is written{' (' + when + ')' if when else ''}:"
    ]
    for item in lost[:8]:
        exc = f" -- {item['exception']}" if item.get("exception") else ""
        lines.append(f"  {item['test']}: {item['status']}: {item['message']}{exc}")
    if len(lost) > 8:
        lines.append(f"  ... and {len(lost) - 8} more")
    if student:
        lines.append(f"  (found while grading {student}: its error is the reference's too, so it is the grader's)")
    lines.append(advice([item.get("exception") or item.get("message") or "" for item in lost]))
    return "\n".join(lines)


# ---------------------------------------------------------------- 2. while grading


def _signature(outcome):
    """How a test failed, as far as the environment could be the cause: its status, its message
    and the exception's type (not the exception's own message, which names the student's shapes
    and values: one check per kind of failure and test, not one per student)."""
    kind = exception_of(outcome).split(":", 1)[0].strip()[:100]
    return json.dumps([outcome.get("status"), outcome.get("en", ""), kind], ensure_ascii=False)


def suspect(outcome):
    """An outcome the grader's environment may have caused: an error (the code raised, or its
    process died) other than a submission that could not be loaded, or a failure that names an
    exception (a backward pass that raised, say)."""
    status = outcome.get("status")
    if status == "error":
        return not str(outcome.get("en", "")).startswith(LOAD_FAILURES)
    return status == "failed" and bool(exception_of(outcome))


def to_verify(raw):
    """{exercise: [tests]} whose outcome in `raw` (the runner's results) is suspect() and was not
    checked yet."""
    plan = {}
    for ex, got in raw.items():
        for name, o in (got.get("tests") or {}).items():
            if not suspect(o):
                continue
            if (ex, name, _signature(o)) not in _VERIFIED:
                plan.setdefault(ex, []).append(name)
    return plan


def verify(course, runner, raw, student):
    """Every error in `raw` (not checked before) must be the student's: the reference passes that
    test here and now.  Raises GraderEnvironmentError otherwise."""
    plan = to_verify(raw)
    if not plan:
        return
    ref, seconds = run_reference(course, runner, plan)
    VERIFY["runs"] += 1
    VERIFY["tests"] += sum(len(t) for t in plan.values())
    VERIFY["seconds"] += seconds
    lost = []
    for item in lost_tests(course, plan, ref):
        ex, _, short = item["test"].partition("/")
        mine = (raw.get(ex) or {}).get("tests", {}).get(short)
        if mine is not None:
            item["student"] = exception_of(mine) or mine.get("en", "")
        lost.append(item)
    if lost:
        raise GraderEnvironmentError(failure_message(lost, course, "while grading", student=student), lost=lost)
    for ex, tests in plan.items():
        for name in tests:
            _VERIFIED.add((ex, name, _signature(raw[ex]["tests"][name])))
