"""Replay: a batch pays hypothesis' engine once per grading process, not once per submission.

Grading is derandomized, so for a submission that passes a property hypothesis always runs the
same inputs in the same order: the pinned @examples, then the generated ones (their draws depend
on the seed and on earlier draws, never on what the code under test returned, unless it fails).
`record` runs every property once against the reference solutions, in a forked child (so no
reference output ever sits in the memory that later workers are forked from), and keeps the
inputs the test body received.  `replay` calls the test body on those inputs again, for a
student: if every one returns normally the property passed, exactly as hypothesis would have
said; at the first exception of any kind the result is thrown away and hypothesis runs the
property from scratch, so a failure, its shrunk counterexample and its message are the ones
hypothesis would give anyway.  Only a time-out goes through at once (the test's alarm).

Properties that draw inside the test body (`st.data()`) are not recorded.  Measured in
bench/grade_speed.py: hypothesis' own work is about 40% of the judge's CPU time per submission.
"""
import copy
import dataclasses
import functools
import os
import pickle
import select
import signal
import struct
import sys
import time
from pathlib import Path

REFERENCE = (Path(__file__).resolve().parents[1] / "default_course" / "solutions").resolve()  # built-in
RECORDED = {}  # property full name -> [kwargs of each run of the test body, in order]
TRIED = set()  # property full names recorded or given up on (draws in its body, the reference failed)
MAX_BYTES = 256 << 20
RECORD_SECONDS = 120  # a recording that takes longer is abandoned (grading goes on without replay)


def record(props, max_examples, reference=REFERENCE):
    """Record the inputs of every property in `props` against the reference, in a child process.
    Returns how many properties were recorded; never raises (replay is an optimisation)."""
    import torch

    props = [p for p in props if p.full_name not in TRIED and hasattr(p.run, "hypothesis")]
    if not props or not reference.is_dir():
        return 0
    torch.set_num_threads(1)  # before forking: an OpenMP pool does not survive fork (the child hangs)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # trusted: the reference solutions and the properties only
        try:
            from .forkcheck import role
            role("recorder")
            os.close(r)
            data = pickle.dumps(_record_here(props, max_examples, reference), protocol=pickle.HIGHEST_PROTOCOL)
            data = struct.pack("<Q", len(data)) + data
            while data:
                data = data[os.write(w, data):]
        finally:
            os._exit(0)
    os.close(w)
    try:
        body = _read_all(r, time.monotonic() + RECORD_SECONDS)
        n = struct.unpack("<Q", body[:8])[0] if len(body) >= 8 else -1
        complete = len(body) == n + 8 and n > 0
        got = pickle.loads(body[8:]) if complete else {}  # from our own child: trusted
    except Exception:  # noqa: BLE001
        got, complete = {}, False
    finally:
        os.close(r)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    RECORDED.update(got)
    if complete:  # once per process: a property that cannot be recorded is not tried for every submission
        TRIED.update(p.full_name for p in props)
    return len(got)


def _read_all(fd, deadline):
    chunks, size = [], 0
    while size <= MAX_BYTES + 8:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return b""  # too slow: no replay
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _record_here(props, max_examples, reference):
    import functools

    from ..load import load_submission
    from ..properties._harness import Student, grading_profile, prepare

    sys.stdout = sys.stderr = open(os.devnull, "w")
    grading_profile(max_examples)
    prepare(props)
    sub = load_submission(reference)
    roots = [str(reference)]
    out = {}
    for p in props:
        if "data" in getattr(p.run.hypothesis, "_given_kwargs", {}):
            continue  # draws inside the body: its inputs are not all known up front
        inner = p.run.hypothesis.inner_test
        runs = []

        @functools.wraps(inner)
        def recording(*args, _inner=inner, _runs=runs, **kwargs):
            _runs.append(copy.deepcopy({k: v for k, v in kwargs.items() if k != "student"}))
            return _inner(*args, **kwargs)

        p.run.hypothesis.inner_test = recording
        try:
            p.run(Student(sub, roots, p.exercise))
            pickle.dumps(runs)  # every input must survive the trip to the parent
            out[p.full_name] = runs
        except Exception:  # noqa: BLE001 - the reference must pass; if not, no replay for it
            pass
        finally:
            p.run.hypothesis.inner_test = inner
    return out


def fresh(value, memo=None):
    """A copy of recorded inputs, as copy.deepcopy makes it (the same object twice stays one
    object), but a tensor is copied with clone(): deepcopy of a tensor costs ten times more, and a
    replay copies every input of every example."""
    import torch

    memo = {} if memo is None else memo
    key = id(value)
    if key in memo:
        return memo[key]
    if type(value) is torch.Tensor and value.is_leaf and not value.is_meta:
        out = value.detach().clone(memory_format=torch.preserve_format)
        if value.requires_grad:
            out.requires_grad_(True)
        if value.__dict__:  # its attributes too (elsewhere.MARK: "put it on the other device")
            out.__dict__.update(copy.deepcopy(value.__dict__, memo))
    elif type(value) in (list, tuple):
        out = type(value)(fresh(v, memo) for v in value)
    elif type(value) is dict:
        out = {k: fresh(v, memo) for k, v in value.items()}
    elif value is None or type(value) in (bool, int, float, str, bytes, complex, torch.dtype, torch.device):
        return value
    elif _plain_object(type(value)):  # a property's case (SeqCase, MHACase, ...): its attributes copied
        out = copy.copy(value)
        memo[key] = out
        for name, v in vars(value).items():
            object.__setattr__(out, name, fresh(v, memo))
        return out
    else:
        out = copy.deepcopy(value, memo)
    memo[key] = out
    return out


@functools.cache
def _plain_object(kind):
    """A class whose instances keep their state in __dict__ and copy the default way, so that
    copying one attribute by attribute is what deepcopy does, minus deepcopy's cost per tensor:
    a dataclass, or a plain class of the properties' own (SeqCase, CellCase, Case ...)."""
    own = dataclasses.is_dataclass(kind) or (kind.__module__ or "").startswith("autograder.properties")
    return (own and type(kind) is type and "__slots__" not in kind.__dict__
            and getattr(kind, "__deepcopy__", None) is None and getattr(kind, "__copy__", None) is None
            and kind.__reduce_ex__ is object.__reduce_ex__ and kind.__reduce__ is object.__reduce__
            and getattr(kind, "__getstate__", object.__getstate__) is object.__getstate__
            and getattr(kind, "__setstate__", None) is None)


def replay(prop, student):
    """True if the student passes every recorded input of `prop` (then hypothesis would say
    "passed" too); False if there is no recording or anything at all went differently."""
    from hypothesis.internal.entropy import deterministic_PRNG

    from ..errors import TestTimeout

    runs = RECORDED.get(prop.full_name)
    if not runs:
        return False
    inner = prop.run.hypothesis.inner_test
    try:
        for kwargs in runs:
            kwargs = fresh(kwargs)  # a property may change what it drew (requires_grad_)
            with deterministic_PRNG():  # as hypothesis runs each example
                inner(student, **kwargs)
    except (TestTimeout, KeyboardInterrupt):
        raise
    except BaseException:  # noqa: BLE001 - hypothesis decides, from scratch
        return False
    return True
