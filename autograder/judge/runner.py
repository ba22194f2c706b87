"""Run an exercise's properties against a submission in a child process, with time limits.

One seam, two runners with the same call ``run(path, exercise, tests) -> dict``:

* ``InProcessRunner`` loads the submission and runs the properties in this process (fast; for
  the grader's own tests and the student's self-check — no protection at all).
* ``ForkRunner`` forks a child per exercise from a parent that has already imported torch, so a
  child costs milliseconds.  The child loads the submission, runs the tests one by one with a
  SIGALRM per test, and streams one JSON line per event through a pipe.  The parent enforces
  the per-test, per-exercise and load deadlines by killing the child's process group; after a
  crash or a time-out it starts a new child for the tests that are left, so one broken test
  never costs the others.

Results are plain dicts: {"tests": {name: outcome}, "load_errors": [...]} where an outcome is
{"status": "passed" | "failed" | "missing" | "error" | "timeout", "zh", "en", "details", ...}.
"""

import base64
import functools
import json
import os
import select
import signal
import sys
import time
from pathlib import Path

from ..errors import PropertyFailure, TestTimeout, WeakSandboxError

GRACE = 2.0  # seconds the parent waits beyond a child's own alarm
JUDGE_MEMORY_MB = 2048  # address space a judge may add to its grading process's (load/reader.bound_memory)
MAX_EVENT_BYTES = 16 << 20  # a judge's line of JSON, at most (its outcomes are capped far below that)
DIAGNOSIS_BUDGET = (
    5.0  # CPU seconds of the judge an exercise may spend naming catalogued mistakes (autograder/diagnose/)
)
DIAGNOSIS_WALL = 20.0  # ... and wall-clock seconds at most (a loaded machine: the same diagnosis, only later)


def _alarm(_signum, _frame):
    raise TestTimeout()


def run_one(prop, student, timeout, again=None):
    """Run one property with an alarm; return its outcome dict (never raises but TestTimeout).
    `again()`: the test starts over (see _harness.run_property), with its whole time limit."""
    import hypothesis.errors as herr

    start = time.perf_counter()
    try:
        out = _run_one(prop, student, timeout, herr, again)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    out["seconds"] = round(time.perf_counter() - start, 4)
    return out


def _run_one(prop, student, timeout, herr, again=None):
    from ..properties._harness import prepare, run_property

    prepare([prop])  # once per process (ForkRunner does it before forking)
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)

    def over():
        signal.setitimer(signal.ITIMER_REAL, timeout)
        if again is not None:
            again()

    try:
        run_property(prop, student, over)
        return {"status": "passed"}
    except PropertyFailure as f:
        return {
            "status": f.kind,
            "zh": f.zh,
            "en": f.en,
            "details": f.details,
            "hint_zh": f.hint_zh,
            "hint_en": f.hint_en,
            "counterexample": f.counterexample,
        }
    except TestTimeout:
        return _timeout(timeout)
    except (herr.Flaky, getattr(herr, "FlakyFailure", herr.Flaky)):
        return {
            "status": "failed",
            "zh": "同一个输入，你的代码有时通过有时失败（结果不确定）。是否用了随机数或全局状态？",
            "en": "Your code passed and failed on the same input (non-deterministic). "
            "Does it use random numbers or global state?",
            "details": [],
        }
    except Exception as e:  # noqa: BLE001 - never let a grader traceback reach the student
        return {
            "status": "error",
            "zh": "评分器无法检查你的输出（输出的类型或形状出乎意料）。",
            "en": "The grader could not check your output (unexpected type or shape).",
            "details": [("内部信息 internal", f"{type(e).__name__}: {str(e)[:300]}")],
        }
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _timeout(seconds):
    return {
        "status": "timeout",
        "zh": f"超时：这个测试在 {seconds:g} 秒内没有完成（死循环？或者对很小的输入也太慢）。",
        "en": f"Time-out: this test did not finish within {seconds:g} s (an endless loop? "
        f"or far too slow even on tiny inputs).",
        "details": [],
    }


def _load(path, timeout):
    from ..load import find_files, load_submission

    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        sub = load_submission(path)
    except TestTimeout:
        from ..load import Submission

        sub = Submission(load_errors=[f"loading did not finish within {timeout:g} s / 加载超时"])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    roots = [str(p) for p in find_files(path)]
    return sub, roots


class InProcessRunner:
    """Everything in this process: fast, unprotected."""

    def __init__(self, course):
        self.course = course

    def run(self, path, exercise, tests, progress=None):
        """Run `tests` of `exercise` on the submission at `path` in this process, the failures
        diagnosed; returns {"tests", "load_errors"[, "behaviour"]}.  `progress` is not called."""
        from ..sandbox.devices import hidden

        with hidden():  # the properties' tensors stay on the CPU, as everywhere (devices.py)
            return self._run(path, exercise, tests)

    def _run(self, path, exercise, tests):
        from ..properties import REGISTRY, Student, load_all
        from ..properties._harness import grading_profile

        load_all()
        grading_profile(self.course.max_examples)
        sub, roots = _load(path, self.course.load_timeout)
        student = Student(sub, roots, exercise)
        ex = self.course.exercises[exercise]
        results = {}
        for name in tests:
            results[name] = run_one(REGISTRY[f"{exercise}/{name}"], student, ex.tests[name].timeout)
        behaviour = {}
        _diagnose(student, exercise, results, DIAGNOSIS_BUDGET, behaviour=behaviour)
        out = {"tests": results, "load_errors": sub.load_errors}
        if behaviour:
            out["behaviour"] = behaviour
        return out


def _diagnose(student, exercise, outcomes, budget, wall=None, behaviour=None):
    """Name the catalogued mistakes behind the failed tests (adds outcome["diagnosis"] in place);
    returns {test: diagnosis}.  `behaviour`: a dict filled with the probe outputs' hash of each
    deviating function (diagnose/engine.py; the instructor's similarity report).  Never raises: a
    diagnosis must never cost a result."""
    try:
        if getattr(student, "fatal", None) or budget <= 0:
            return {}
        from ..diagnose import diagnose_outcomes
        from ..properties import REGISTRY

        def function_of(name):
            return REGISTRY[f"{exercise}/{name}"].function

        return diagnose_outcomes(student, exercise, outcomes, function_of, budget, wall, behaviour=behaviour)
    except BaseException:  # noqa: BLE001
        return {}


# ---------------------------------------------------------------- fork runner

_WARM = False


def _warm_up():
    """Pay once, in the parent, the first-call costs every child would pay again (lazy imports
    of hypothesis and torch internals, autograd and kernel set-up).  Once per process: a batch
    grading process grades many submissions."""
    global _WARM
    if _WARM:
        return
    _WARM = True
    import gc

    import torch
    from hypothesis import given
    from hypothesis import strategies as st

    from ..load import submission  # noqa: F401
    from ..properties._harness import grading_profile
    from ..properties.strategies import float_tensors

    grading_profile(3)

    @given(x=float_tensors((2, 3, 4)), n=st.integers(1, 3))
    def warm(x, n):  # forward only: this process forks the judges (see server.warm_forward)
        x = x.clone().requires_grad_(True)
        y = torch.softmax(x @ x.transpose(-2, -1) / n, dim=-1).masked_fill(torch.ones(3, 3, dtype=torch.bool).tril(), 0)
        torch.nn.functional.cross_entropy(x.reshape(-1, 4), torch.zeros(6, dtype=torch.long)) + y.sum()
        torch.tanh(torch.sigmoid(x)).double().float()
        torch.nn.functional.scaled_dot_product_attention(x, x, x)

    from ..sandbox.devices import unseen
    from ..sandbox.server import warm_forward

    with unseen():  # this process forks the judges: nothing here may start CUDA (devices.py)
        warm()
        warm_forward()
    from .. import diagnose  # noqa: F401  (a judge with a failure names it: the catalogue, yaml)
    from ..sandbox import limits, worker  # noqa: F401
    from . import remote  # noqa: F401  (every judge, zygote and worker imports them)

    gc.collect(1)  # the young generations: a full collection of torch's heap costs ~0.12 s and finds nothing
    gc.freeze()  # judges, zygotes and workers never traverse (nor copy on write) these objects


@functools.cache
def _read_catalogues():
    """Parse every catalogue once in this process (the judges forked from it inherit them): a
    diagnosis would otherwise parse its exercise's YAML again in every judge."""
    from ..catalogue import HERE
    from ..diagnose import engine

    for f in sorted(HERE.glob("*.yml")):
        try:
            engine._catalogue(f.stem)
        except Exception:  # noqa: BLE001 - the judge reads it itself
            pass


# exercises whose functions train a model: their workers (and the diagnosis' references) take
# optimiser steps, and torch's first optimiser step costs ~1.6 s of imports (torch._dynamo)
TRAINING = {"tiny_lm", "ablation"}
_OPTIM_WARM = False


def _warm_up_optimizers():
    global _OPTIM_WARM
    if _OPTIM_WARM:
        return
    _OPTIM_WARM = True
    import gc

    from ..sandbox.server import warm_optimizers

    warm_optimizers()  # no backward pass in a process that forks
    gc.collect()
    gc.freeze()


def _child(fd, path, reading, exercise, tests, course, prior=None, ex_deadline=None, share=False):
    """Body of a forked child: never returns.  `reading`: the submission as read (load.Reading,
    by the grading process, in a limited child).  `prior`: outcomes of this exercise's tests run by
    an earlier child (after a restart), so the diagnosis sees every failure.  `share`: the
    diagnosis starts from the trusted observations earlier judges sent, and sends its own
    (diagnose/share.py)."""
    try:
        from ..sandbox.forkcheck import role

        role("judge")
        os.setpgid(0, 0)
        devnull = os.open(os.devnull, os.O_RDWR)
        for std in (0, 1, 2):
            os.dup2(devnull, std)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)

        def emit(obj):  # ASCII JSON: a file name that is not UTF-8 travels too
            data = (json.dumps(obj, default=str) + "\n").encode()
            while data:
                data = data[os.write(fd, data) :]

        from ..errors import PropertyFailure
        from ..load.reader import bound_memory, peak_mib
        from ..properties import REGISTRY
        from ..properties._harness import grading_profile
        from ..sandbox.worker import die_with_parent
        from .remote import RemoteStudent, SandboxUnavailable, WeakSandbox, Zygote

        die_with_parent()  # a judge outlives neither its grading process nor the batch
        bound_memory(JUDGE_MEMORY_MB)  # whatever the worker sends, this judge stays within it
        grading_profile(course.max_examples)
        sources, read_errors, root, roots = reading.sources, reading.errors, reading.root, reading.files
        from ..sandbox.limits import weak_allowed

        options = {
            "remove_workdir": True,
            "submission": os.path.abspath(path),
            "hide": hidden_paths(path, course),
            "allow_weak": weak_allowed(),
        }
        cpu0, t0 = time.process_time(), time.monotonic()
        try:
            zygote = Zygote(sources, read_errors, root, roots, options, train=exercise in TRAINING)
            student = RemoteStudent(zygote, exercise, course.load_timeout, read_errors)
            student.start()
        except PropertyFailure:
            pass  # every test will report the load failure
        except SandboxUnavailable as e:
            emit({"event": "refused", "why": f"no sandbox for this submission: {e}"})
            return
        except WeakSandbox as e:
            emit(
                {
                    "event": "refused",
                    "why": "the sandbox here does not keep student code from: " + "; ".join(e.missing),
                    "missing": e.missing,
                }
            )
            return
        t_loaded = time.monotonic()
        emit({"event": "loaded", "load_errors": student.load_errors, "levels": student.levels})
        ex = course.exercises[exercise]
        outcomes = {k: dict(v) for k, v in (prior or {}).items()}
        for name in tests:
            emit({"event": "start", "test": name})
            prop, limit = REGISTRY[f"{exercise}/{name}"], ex.tests[name].timeout
            timed_out = _timed_out(exercise, outcomes)
            if len(timed_out.get(prop.function, ())) >= 2:  # it did not return twice: its other tests are not run
                outcome = _not_run_after_hangs(prop.function, timed_out[prop.function][:2])
                emit({"event": "result", "test": name, "outcome": outcome})
                outcomes[name] = outcome
                continue
            # {function: the test where it hung with its whole limit} (later time-outs had a short one)
            hung = {
                f: t[0]
                for f, t in ((f, [n for n in names if not outcomes[n].get("hung")]) for f, names in timed_out.items())
                if t
            }
            via = None
            if hung and prop.function not in hung:  # a function that calls one that hung
                via = next((f for f in sorted(hung) if f in reading.calls.get(prop.function, ())), None)
            hung = hung.get(via or prop.function)
            if hung:  # an endless loop costs one test's time limit, not one per test
                limit = min(limit, max(HUNG_LIMIT, HUNG_SHARE * limit))
            try:
                outcome = run_one(prop, student, limit, again=lambda name=name: emit({"event": "start", "test": name}))
            except TestTimeout:
                outcome = _timeout(limit)
            if hung and outcome.get("status") == "timeout":
                outcome = _timeout_after_hang(prop.function, hung, limit, via)
            if student.elsewhere:  # the device its device sentences ran on (elsewhere.py; self-check prints it)
                outcome["device"] = student.elsewhere
                if student.device_problem:
                    outcome["device_problem"] = student.device_problem
                student.elsewhere = student.device_problem = None
            if outcome["status"] == "timeout":
                student.abort()  # the worker may still be running the endless loop
            emit({"event": "result", "test": name, "outcome": outcome})
            outcomes[name] = outcome
        # every result is out: the diagnosis can only add to them (the parent gives it its own deadline)
        t_tests = time.monotonic()
        wall = DIAGNOSIS_WALL
        if ex_deadline is not None:
            wall = min(wall, ex_deadline - time.monotonic() - GRACE)
        if wall > 0.5 and any(o.get("status") in ("failed", "error", "timeout") for o in outcomes.values()):
            emit({"event": "diagnose", "seconds": wall})
            if share:
                from ..diagnose import share as shared

                shared.enable()
            behaviour = {}
            found = _diagnose(student, exercise, outcomes, DIAGNOSIS_BUDGET, wall, behaviour=behaviour)
            if found:
                emit({"event": "diagnosis", "tests": found})
            if behaviour:  # for the instructor's similarity report only: never enters a report
                emit({"event": "behaviour", "functions": behaviour})
            by_part = {n: o["explained_by_part"] for n, o in outcomes.items() if o.get("explained_by_part")}
            if by_part:
                emit({"event": "explained_by_part", "tests": by_part})
            hints = {
                n: {"hint_zh": o["hint_zh"], "hint_en": o["hint_en"]}
                for n, o in outcomes.items()
                if o.get("hint_elsewhere")
            }
            if hints:  # what the diagnosis found lies in another function: the tests' own hints are wrong there
                emit({"event": "hints", "tests": hints})
            if share:
                data = shared.export()
                if data:
                    emit({"event": "share", "data": base64.b64encode(data).decode("ascii")})
        t_diag = time.monotonic()
        student.abort()  # the last worker, reaped now: its CPU time is counted
        emit(
            {
                "event": "timing",
                "timing": {
                    "start": round(t_loaded - t0, 4),
                    "tests": round(t_tests - t_loaded, 4),
                    "diagnosis": round(t_diag - t_tests, 4),
                    "judge_cpu": round(time.process_time() - cpu0, 4),
                    "worker_cpu": round(getattr(zygote, "worker_cpu", 0.0), 4),
                    "judge_peak_mib": peak_mib(),
                },
            }
        )
    except BaseException:  # noqa: BLE001 - the parent notices the missing results
        pass
    finally:
        os._exit(0)


def _timed_out(exercise, outcomes):
    """{function: the tests in which it timed out, in order} among `outcomes` (this exercise's
    tests so far, those of an earlier judge included)."""
    from ..properties import REGISTRY

    out = {}
    for name, o in outcomes.items():
        if o.get("status") == "timeout":
            prop = REGISTRY.get(f"{exercise}/{name}")
            if prop is not None:
                out.setdefault(prop.function, []).append(name)
    return out


def _not_run_after_hangs(function, tests):
    """The outcome of a test not run because `function` timed out in two tests already (the
    second with the short limit): an endless loop, whatever it is given; running its other tests
    would cost the short limit and a new worker each, and decide nothing.  Decided by what timed
    out, never by how long this test would take, so the score does not depend on the machine."""
    a, b = tests
    return {
        "status": "timeout",
        "hung": a,
        "not_run": True,
        "zh": f"未运行：`{function}` 在测试 {a} 和 {b} 中都没有在时限内返回（死循环？），"
        f"所以它的其他测试没有运行。先修好这个循环。",
        "en": f"Not run: `{function}` did not return within the time limit in tests {a} and {b} (an "
        f"endless loop?), so its other tests are not run. Fix the loop first.",
        "details": [],
    }


STALL_AFTER = 1.0  # seconds a test (or a load) runs before the grading process says it is stalled (on_stall)
HUNG_LIMIT = 2.0  # seconds: the least a test gets after its function hung in another test
HUNG_SHARE = 0.25  # ... or this share of its own limit, if more


def _timeout_after_hang(function, test, limit, via=None):
    """The outcome of a test that timed out after `function` (or `via`, a function it calls) had
    hung in `test`: it had a shorter limit (an endless loop would otherwise cost every test of the
    function, and of each function that calls it, its whole limit and a new worker; a call that
    returns at once still passes)."""
    who_zh, rest_zh = (
        (f"`{function}` 调用的 `{via}`", "调用它的函数的测试") if via else (f"`{function}`", "它的其他测试")
    )
    who_en, rest_en = (
        (f"`{via}`, which `{function}` calls,", "the tests of the functions that call it")
        if via
        else (f"`{function}`", "its other tests")
    )
    return {
        "status": "timeout",
        "hung": test,
        "zh": f"超时：{who_zh} 在测试 {test} 中没有在时限内返回（死循环？），"
        f"所以{rest_zh}只有 {limit:g} 秒，这个测试也没有完成。",
        "en": f"Time-out: {who_en} did not return within the time limit in test {test} (an endless "
        f"loop?), so {rest_en} get {limit:g} s, and this one did not finish either.",
        "details": [],
    }


def hidden_paths(path, course=None):
    """Paths a worker must not see even where they fall inside its view (view._new_root hides
    them; usually none of them is inside it): the course folder, the current directory, the
    folders around the submission (a flat class folder, an nbgrader course root)."""
    out = []
    if course is not None and getattr(course, "source", None):
        out.append(os.path.dirname(course.source))
    try:
        out.append(os.getcwd())
    except OSError:
        pass
    p = Path(os.path.abspath(path))
    for parent in list(p.parents)[:4]:
        if str(parent) != "/":
            out.append(str(parent))
    return list(dict.fromkeys(out))


# what a judge reports of its time: seconds of wall time starting the worker (zygote, limits, the
# submission's top-level code), in the tests, in the diagnosis; CPU seconds of the judge and of
# its workers (summed over restarts); and the most memory the judge held (MiB: the largest of them)
TIMING = ("start", "tests", "diagnosis", "judge_cpu", "worker_cpu", "judge_peak_mib")
PEAKS = ("judge_peak_mib",)  # the largest over judges, not a sum


class _Job:
    def __init__(self, exercise, tests, cfg, now):
        self.exercise = exercise
        self.left = list(tests)
        self.cfg = cfg
        self.results = {}
        self.load_errors = None
        self.pid = self.fd = None
        self.buf = b""
        self.current = None
        self.test_deadline = None
        self.ex_deadline = now + cfg.timeout
        self.loaded = False
        self.refused = None  # why the judge would not let student code run here (WeakSandboxError)
        self.levels = {}
        self.timing = {}  # TIMING keys, summed over the judges of this exercise
        self.starts = 0  # judges started (1 unless one crashed or ran out of time)
        self.behaviour = {}  # function -> {"outputs": hash, "named": bool} (similarity/behaviour.py)
        self.waiting_since = now  # when the current test (or the load) started: see ForkRunner.on_stall


def _merge_export(data):
    """A judge's export (diagnose/share.py, base64) into this process's diagnosis cache: how many
    observations were new (0 for anything that is not one; never raises)."""
    if not isinstance(data, str):
        return 0
    from ..diagnose import share as shared

    try:
        return shared.merge(base64.b64decode(data, validate=True))
    except ValueError:
        return 0


class ForkRunner:
    """A child process per exercise (and per restart), up to `workers` at once.

    Every submission is graded from scratch: the same tests, from the same state, whatever this
    process graded before.  `many` (a process that grades many submissions): what every judge
    would pay again is paid once here, before forking: the properties' seeds, their examples
    (_harness.prepare, _harness.record) and, with `share`, the catalogues.  (One `grade`: each
    judge prepares its own properties, side by side, and hypothesis draws their examples.)"""

    def __init__(self, course, workers=None, share=False, many=False):
        self.course = course
        # on_stall(True) when every running exercise has waited STALL_AFTER seconds for one test
        # or its load (an endless loop, most likely: the worker burns a core until the time
        # limit), on_stall(False) when one moves again; grade-batch lets another grading process
        # work meanwhile (pool.py)
        self.on_stall = None
        self.workers = workers or os.cpu_count() or 1
        self.many = many
        self.share = share  # the diagnosis' trusted observations passed from judge to judge (diagnose/share.py)
        self.exports = []  # the judges' exports that were new here (base64): for the batch's other processes

    def run_many(self, path, plan, progress=None):
        """plan: {exercise: [test names]} -> {exercise: {"tests", "load_errors"}}."""
        import torch

        from ..load import read_submission
        from ..properties import load_all
        from ..properties._harness import grading_profile, prepare, record
        from ..sandbox import server

        registry = load_all()
        # read once, in a limited child: the judges forked below inherit it (load/reader.py)
        reading = read_submission(path, {p.function for p in registry.values()})
        torch.set_num_threads(1)  # before forking: OpenMP pools do not survive fork
        _warm_up()  # while the sandbox server warms up in its own process
        if self.many:  # once, before forking: every judge inherits the seeds and the recorded examples
            props = [registry[f"{ex}/{name}"] for ex, tests in plan.items() for name in tests]
            grading_profile(self.course.max_examples)  # the judges' settings: the examples recorded here are theirs
            prepare(props)
            record(props)
        server.connect()  # ready before any judge forks (each judge asks it for its zygote)
        if TRAINING & set(plan):
            _warm_up_optimizers()
        if self.share:
            _read_catalogues()
        out = {}
        now = time.monotonic()
        pending = [_Job(ex, tests, self.course.exercises[ex], now) for ex, tests in plan.items()]
        running = {}
        stalled = False
        while pending or running:
            while pending and len(running) < self.workers:
                job = pending.pop(0)
                job.ex_deadline = time.monotonic() + job.cfg.timeout
                self._start(path, reading, job)
                running[job.fd] = job
            now = time.monotonic()
            deadline = min(self._deadline(j) for j in running.values())
            if self.on_stall is not None:
                waiting = [j.waiting_since for j in running.values() if j.current is not None or not j.loaded]
                now_stalled = len(waiting) == len(running) and all(now - t >= STALL_AFTER for t in waiting)
                if now_stalled != stalled:
                    stalled = now_stalled
                    self.on_stall(stalled)
                if not stalled and len(waiting) == len(running):
                    deadline = min(deadline, max(waiting) + STALL_AFTER)
            ready, _, _ = select.select(list(running), [], [], max(0.0, deadline - now))
            for fd in ready:
                job = running[fd]
                chunk = os.read(fd, 65536)
                if chunk and len(job.buf) + len(chunk) <= MAX_EVENT_BYTES:
                    job.buf += chunk
                    self._parse(job, progress)
                    if job.refused:  # no sandbox worth the name here: nobody is graded
                        for other in running.values():
                            self._kill(other)
                            os.close(other.fd)
                        raise WeakSandboxError(job.refused)
                    continue
                del running[fd]
                if chunk:  # a judge that says this much is broken: it is stopped, as a crash
                    self._kill(job)
                    reason = "a judge's output over its limit"
                else:
                    reason = self._exit_reason(job)
                self._finish(job, reason=reason)
                if self._restart(path, reading, job):
                    running[job.fd] = job
                else:
                    out[job.exercise] = self._result(job)
            now = time.monotonic()
            for fd, job in list(running.items()):
                if now >= self._deadline(job):
                    del running[fd]
                    self._kill(job)
                    self._finish(job, reason="timeout")
                    if self._restart(path, reading, job):
                        running[job.fd] = job
                    else:
                        out[job.exercise] = self._result(job)
        if stalled:
            self.on_stall(False)
        return out

    def take_exports(self):
        """The judges' exports (diagnose/share.py, base64) that added something since the last
        call: grade-batch passes them to its other grading processes (merge_exports)."""
        out, self.exports = self.exports, []
        return out

    def merge_exports(self, exports):
        """Another grading process's take_exports(): into this process's diagnosis cache, for the
        judges forked from now on; how many observations were new (not shared: none)."""
        if not self.share or not isinstance(exports, list):
            return 0
        return sum(_merge_export(data) for data in exports)

    # -- helpers
    def _start(self, path, reading, job):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            _child(
                w,
                path,
                reading,
                job.exercise,
                job.left,
                self.course,
                prior=job.results,
                ex_deadline=job.ex_deadline,
                share=self.share,
            )
        os.close(w)
        job.pid, job.fd, job.buf, job.current = pid, r, b"", None
        job.loaded = False
        job.starts += 1
        job.done_at_start = len(job.results)
        job.waiting_since = time.monotonic()
        job.test_deadline = time.monotonic() + self.course.load_timeout + GRACE

    def _deadline(self, job):
        return min(job.test_deadline, job.ex_deadline)

    def _parse(self, job, progress):
        *lines, job.buf = job.buf.split(b"\n")
        for line in lines:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            kind = ev.get("event")
            if kind == "refused":
                job.refused = str(ev.get("why") or "the sandbox refused to run the submission")
            elif kind == "loaded":
                job.loaded = True
                if job.load_errors is None:
                    job.load_errors = list(ev.get("load_errors", []))
                    job.levels = ev.get("levels") if isinstance(ev.get("levels"), dict) else {}
            elif kind == "start" and ev.get("test") in job.left:
                job.current = ev["test"]
                job.waiting_since = time.monotonic()
                job.test_deadline = time.monotonic() + job.cfg.tests[job.current].timeout + GRACE
            elif kind == "result" and ev.get("test") == job.current:
                job.results[job.current] = ev["outcome"]
                job.left.remove(job.current)
                job.current = None
                if progress:
                    progress(job.exercise, ev["test"], ev["outcome"]["status"])
            elif kind == "diagnose" and not job.left:
                # after the last result: a kill now costs nothing but the diagnosis
                seconds = min(float(ev.get("seconds") or 0.0), DIAGNOSIS_WALL)
                job.test_deadline = time.monotonic() + max(0.0, seconds) + GRACE
            elif kind == "share" and self.share and _merge_export(ev.get("data")):
                self.exports.append(ev["data"])
            elif kind == "timing" and isinstance(ev.get("timing"), dict):
                for k, v in ev["timing"].items():
                    if isinstance(v, (int, float)) and k in TIMING:
                        job.timing[k] = (
                            max(job.timing.get(k, 0.0), float(v)) if k in PEAKS else job.timing.get(k, 0.0) + float(v)
                        )
            elif kind == "diagnosis" and isinstance(ev.get("tests"), dict):
                for name, found in ev["tests"].items():
                    if name in job.results and isinstance(found, list):
                        job.results[name]["diagnosis"] = found
            elif kind == "behaviour" and isinstance(ev.get("functions"), dict):
                job.behaviour = {
                    str(f): {"outputs": str(r.get("outputs")), "named": r.get("named") is True}
                    for f, r in ev["functions"].items()
                    if isinstance(r, dict)
                }
            elif kind == "hints" and isinstance(ev.get("tests"), dict):
                for name, hint in ev["tests"].items():
                    if name in job.results and isinstance(hint, dict):
                        job.results[name]["hint_zh"] = str(hint.get("hint_zh", ""))
                        job.results[name]["hint_en"] = str(hint.get("hint_en", ""))
            elif kind == "explained_by_part" and isinstance(ev.get("tests"), dict):
                for name, found in ev["tests"].items():
                    if name in job.results and isinstance(found, list):
                        job.results[name]["explained_by_part"] = found

    def _exit_reason(self, job):
        _, status = os.waitpid(job.pid, 0)
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = str(sig)
            return f"signal {name}"
        return f"exit status {os.WEXITSTATUS(status)}"

    def _kill(self, job):
        for target in (lambda: os.killpg(job.pid, signal.SIGKILL), lambda: os.kill(job.pid, signal.SIGKILL)):
            try:
                target()
            except (ProcessLookupError, PermissionError):
                pass
        try:
            os.waitpid(job.pid, 0)
        except ChildProcessError:
            pass

    def _finish(self, job, reason):
        """The child is gone: record what it was doing when it went."""
        os.close(job.fd)
        try:
            os.killpg(job.pid, signal.SIGKILL)  # daemons the student's code left behind
        except (ProcessLookupError, PermissionError):
            pass
        if not job.left:
            return
        if not job.loaded:
            if reason == "timeout":
                zh = f"加载你的提交（运行顶层代码）在 {self.course.load_timeout:g} 秒内没有完成。"
                en = f"Loading your submission (running its top-level code) did not finish within {self.course.load_timeout:g} s."
            else:
                zh = f"加载你的提交时进程意外结束（{reason}）：顶层代码里是否调用了 exit / os._exit？"
                en = f"The process ended while loading your submission ({reason}): does top-level code call exit / os._exit?"
            for name in job.left:
                job.results[name] = {"status": "error", "zh": zh, "en": en, "details": []}
            job.left = []
            return
        if job.current is not None:
            name = job.current
            if reason == "timeout" and time.monotonic() < job.ex_deadline:
                job.results[name] = _timeout(job.cfg.tests[name].timeout)
            elif reason == "timeout":
                job.results[name] = {
                    "status": "timeout",
                    "zh": f"整个练习的时间限制（{job.cfg.timeout:g} 秒）用完了。",
                    "en": f"The time limit of the whole exercise ({job.cfg.timeout:g} s) ran out.",
                    "details": [],
                }
            else:
                job.results[name] = {
                    "status": "error",
                    "zh": f"运行这个测试时进程崩溃了（{reason}）。",
                    "en": f"The process crashed while running this test ({reason}).",
                    "details": [],
                }
            job.left.remove(name)
            job.current = None
        elif len(job.results) == job.done_at_start:
            # died between tests without finishing any: do not start it again and again
            for name in job.left:
                job.results[name] = {
                    "status": "error",
                    "zh": f"评分进程在测试之间意外结束（{reason}）。",
                    "en": f"The grading process ended between tests ({reason}).",
                    "details": [],
                }
            job.left = []

    def _restart(self, path, reading, job):
        if not job.left:
            return False
        if time.monotonic() >= job.ex_deadline:
            for name in job.left:
                job.results[name] = {
                    "status": "timeout",
                    "zh": f"没有运行：整个练习的时间限制（{job.cfg.timeout:g} 秒）已用完。",
                    "en": f"Not run: the time limit of the whole exercise ({job.cfg.timeout:g} s) ran out.",
                    "details": [],
                }
            job.left = []
            return False
        self._start(path, reading, job)
        return True

    def _result(self, job):
        out = {
            "tests": job.results,
            "load_errors": job.load_errors or [],
            "levels": job.levels,
            "timing": {k: round(v, 4) for k, v in job.timing.items()},
        }
        if job.behaviour:
            out["behaviour"] = job.behaviour
        return out
