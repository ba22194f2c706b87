"""The grading processes: warm `python -m autograder.batch --grading-process CONFIG` processes, one
submission at a time each.

    grading_process_main()   a grading process: imports torch once (and starts its sandbox server beside
                    that import), then grades submission after submission with a ForkRunner
                    (each from scratch), one JSON line in (a path), one JSON line out
                    (the result dict)
    LocalPool       N such processes and the rules around them.  ``grade(item)`` grades one
                    submission, synchronously, on an idle process (several threads may call it at
                    once); ``run(items)`` grades a whole list with N threads and yields the results
                    as they finish.  grade-batch's local mode uses ``run``; a Dask worker keeps one
                    LocalPool per course and calls ``grade`` from its tasks (cluster.py).

A result dict: {"report": the contract's JSON} or {"error": reason, "retry": bool} (or {"fatal":
reason} when course.yml and the properties disagree), with "seconds" and "grader"; a report also
carries "pid" (the grading process) and "warm" (how many submissions that process had graded
before this one: 0 means this one paid the start-up).

What a process learns that the others can use goes to them with their next submission: the
exports of its judges' diagnoses (diagnose/share.py: what the probes observed of the reference and
the catalogued mistakes), computed on the judge's side from trusted code only; never a report.
Nothing of one submission's grading stands for another's: every submission is graded from scratch.

A submission is sent to a process only when it is idle, so a process that dies (or that the
watchdog kills after the budget) costs exactly the submission it was grading, and a new process
takes its place.  A process that waits on a stalled test (every exercise it runs has waited
runner.STALL_AFTER seconds for one test: an endless loop, most likely, burning its core until the
time limit) says so ({"event": "stalled"}); meanwhile `run` grades on one process more, started
after the first submission of a batch of WARM_SPARE or more (else the first time it is needed)
and idle otherwise.  The time limits and the workers' priority never change: a worker cannot tell
a batch from `grade`.

Processes are started from one long-lived thread of the pool, so that PR_SET_PDEATHSIG (which
fires when the *thread* that started a process ends) kills them only when the pool's owner dies:
the batch, or the Dask worker.
"""

import functools
import json
import os
import queue
import re
import selectors
import signal
import subprocess
import sys
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor

from ..errors import ConfigError, GraderEnvironmentError, GraderError
from ..store import PACKAGE_DIR, grader_version


def _die_with_parent():
    """Linux: get SIGKILL when the batch process dies, so a killed batch leaves no grader behind."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort (not Linux)
        pass


def _grade_in_process(path, course, runner, exercises):
    """The result dict of one submission, graded in this process (never raises)."""
    from ..grading import grade

    start = time.monotonic()
    behaviour = {}
    try:
        out = {"report": grade(path, course, runner, exercises=exercises, behaviour=behaviour).to_dict()}
        if behaviour:  # the instructor's (similarity/behaviour.py): beside the report, never in it
            out["behaviour"] = behaviour
    except (ConfigError, GraderEnvironmentError) as e:  # nobody can be graded: the batch stops
        out = {"fatal": str(e)}
    except GraderError as e:
        out = {"error": str(e), "retry": False}
    except Exception as e:  # noqa: BLE001 - a grader bug costs this submission only
        out = {"error": f"grader failed: {type(e).__name__}: {e}", "retry": True}
    out["seconds"] = round(time.monotonic() - start, 3)
    out["grader"] = grader_version()
    return out


def grading_process_main(config_json):
    """A grading process of the pool: one JSON line in (a submission), one JSON line out."""
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything else printed goes to the log, not into the protocol
    _die_with_parent()
    from ..sandbox import server

    server.prestart()  # before this process holds anything of a student's: see server.py
    cfg = json.loads(config_json)
    from ..config import load_course
    from ..judge import ForkRunner

    course = load_course(cfg["course"], language=cfg["language"], max_examples=cfg["max_examples"])
    runner = ForkRunner(course, workers=cfg["runner_workers"], share=cfg.get("share", True), many=True)
    fatal = None
    try:  # before the first score: the reference solutions get full marks here (selfcheck.py)
        from ..selfcheck import ensure

        ensure(course, runner, cfg["exercises"])
    except (ConfigError, GraderEnvironmentError) as e:
        fatal = str(e)

    def stalled(flag, job_id=None):  # waiting on an endless loop (most likely): the pool may use the core
        try:
            proto.write(json.dumps({"id": job_id, "event": "stalled", "stalled": bool(flag)}) + "\n")
            proto.flush()
        except (OSError, ValueError):
            pass  # the batch is gone: this process goes with it

    for line in sys.stdin:
        job = json.loads(line)
        if fatal is not None:  # nobody is graded here: every submission says why
            proto.write(json.dumps({"id": job["id"], "fatal": fatal, "grader": grader_version()}) + "\n")
            proto.flush()
            continue
        runner.on_stall = functools.partial(stalled, job_id=job["id"])
        # what the other processes' judges' diagnoses observed of trusted code (a warm start, same reports)
        merged = runner.merge_exports(job["share"]) if job.get("share") else 0
        from ..selfcheck import VERIFY

        checks = dict(VERIFY)
        out = _grade_in_process(job["path"], course, runner, cfg["exercises"])
        out["id"] = job["id"]
        if VERIFY["runs"] > checks["runs"]:  # errors checked on the reference (selfcheck.verify)
            out["checked"] = {
                "tests": VERIFY["tests"] - checks["tests"],
                "seconds": round(VERIFY["seconds"] - checks["seconds"], 3),
            }
        if merged:
            out["merged"] = merged  # trusted observations taken from the others before it
        exports = runner.take_exports()
        if exports:
            out["share"] = exports  # for the other processes (LocalPool.grade), never in a report
        proto.write(json.dumps(out, default=str) + "\n")  # ASCII: whatever a report holds
        proto.flush()


class _Worker:
    def __init__(self, cmd, env, log, cwd=None, on_stall=None):
        # its own session: Ctrl-C reaches the batch only, which then stops its grading processes
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, cwd=cwd, start_new_session=True
        )
        self.fd = self.proc.stdout.fileno()
        os.set_blocking(self.fd, False)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.fd, selectors.EVENT_READ)
        self.buf = b""
        self.job = None  # (id, item, deadline)
        self.answered = 0
        self.stalled = False  # its submission waits on a test that runs and runs (LocalPool._capacity)
        self.on_stall = on_stall

    def send(self, job_id, item, deadline, given=None):
        """The submission `item`, with what the pool's other processes made for it ({"share":
        exports}: LocalPool._outboxes)."""
        self.job = (job_id, item, deadline)
        job = {"id": job_id, "path": str(item.path)}
        job.update((name, items) for name, items in (given or {}).items() if items)
        try:
            self.proc.stdin.write((json.dumps(job) + "\n").encode())  # ASCII: any file name
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass  # it died (or was stopped): its EOF says so

    def answer(self, on_stall=None):
        """The result dict of the current job; None when the process died (EOF) or the deadline
        passed (then self.job[2] <= now).  `on_stall()`: called in this thread each time the
        process says it waits on a stalled test."""
        while True:
            timeout = self.job[2] - time.monotonic()
            if timeout <= 0:
                return None
            try:
                if not self.sel.select(timeout):
                    continue
                chunk = os.read(self.fd, 1 << 20)
            except BlockingIOError:
                continue
            except (OSError, ValueError, KeyError):  # closed by kill() from another thread
                return None
            if not chunk:
                return None  # EOF: the process died (a crash, or student code that killed its parent)
            self.buf += chunk
            *lines, self.buf = self.buf.split(b"\n")
            for line in lines:
                res = self._parse(line)
                if res is not None and res.get("event") == "stalled":
                    self.stalled = res.get("stalled") is True
                    if self.on_stall is not None:
                        self.on_stall()
                    if self.stalled and on_stall is not None:
                        on_stall()
                elif res is not None:
                    return res

    def _parse(self, line):
        try:
            res = json.loads(line)
        except ValueError:
            return None
        if not isinstance(res, dict) or self.job is None or res.get("id") != self.job[0]:
            return None
        return res

    def kill(self):
        try:
            self.proc.kill()
        except ProcessLookupError:
            pass
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        try:
            self.sel.close()
        except (OSError, ValueError, KeyError):
            pass

    def exit_reason(self):
        rc = self.proc.wait()
        if rc < 0:
            try:
                return f"signal {signal.Signals(-rc).name}"
            except ValueError:
                return f"signal {-rc}"
        return f"exit status {rc}"


class _Closed(Exception):
    pass


class _Outbox:
    """One kind of thing the pool's processes make for each other: each item goes once to every
    process but its source, with that process's next submission.  An item whose key is held
    already is dropped, and at most `limit` are kept, each item counting `size(item)`.  The pool's
    lock guards it."""

    def __init__(self, key, limit, size=lambda item: 1):
        self.key, self.limit, self.size = key, limit, size
        self.items, self.keys, self.total = [], set(), 0  # items: (source process or None, item)
        self.sent = weakref.WeakKeyDictionary()  # process -> how many of `items` it has been given

    def add(self, items, source=None):
        for item in items if isinstance(items, list) else ():
            try:
                key, size = self.key(item), self.size(item)
            except (TypeError, ValueError, IndexError, KeyError):
                continue  # not what a grading process makes
            if key not in self.keys and self.total + size <= self.limit:
                self.keys.add(key)
                self.total += size
                self.items.append((source, item))

    def for_process(self, w):
        """The items `w` has not been given yet, but its own."""
        start, self.sent[w] = self.sent.get(w, 0), len(self.items)
        return [item for src, item in self.items[start:] if src is not w]


def _text(item):
    if not isinstance(item, str):
        raise TypeError("not a string")
    return item


class LocalPool:
    """Up to `processes` grading processes; each runs ForkRunner(workers=runner_workers).

    What a process learns that the others can use goes to them with their next submission: the
    exports of its judges' diagnoses (diagnose/share.py: what the probes observed of the reference
    and the catalogued mistakes), computed on the judge's side from trusted code; never a report.

    A submission is sent to a process only when it is idle, so a process that dies (or that the
    watchdog kills after `budget` seconds) costs exactly the submission it was grading, and a new
    process takes its place.  A process that dies on its very first submission may have died
    starting up: that submission is tried once more before it is charged.  Processes live until
    ``close()`` (``run`` closes the pool when it ends); `log_path` None: their stderr is ours."""

    STARTUP = 60.0  # extra seconds for a process's first submission (imports torch)
    MAX_EXPORT_BYTES = 64 << 20  # the diagnosis' exports passed between them, at most (base64)
    WARM_SPARE = 20  # submissions from which run() starts the spare process ahead of the first stall

    def __init__(self, processes, runner_workers, course_file, options, budget, log_path, cwd=None):
        self.processes = processes
        self.budget = budget
        config = json.dumps({"course": str(course_file), "runner_workers": runner_workers, **options})
        self.cmd = [sys.executable, "-m", "autograder.batch", "--grading-process", config]
        self.env = _child_env()
        self.log_path = log_path
        self.cwd = cwd
        self._cond = threading.Condition()
        self._idle, self._all = [], set()
        self._busy = set()  # processes grading a submission now
        self.spare = False  # run() sets it: one more process while one waits on a stalled test
        self._starting = 0  # processes being started for a submission that waits for them
        self._warming = 0  # ... and by warm_up, for none: they take no part in the capacity
        self._spare_warmed = False  # warm_spare() was called
        self._closed = False
        self._log = None
        self._spawner = None  # the one thread that starts processes (see the module's docstring)
        self._job_id = 0
        self.answers = self.deaths = 0
        # what a process made for the others, by the name it has in results and jobs: its judges'
        # diagnosis exports (diagnose/share.py: what the probes observed of the reference and the
        # catalogued mistakes); `keep_shared`: also left in the results (a Dask worker's client
        # passes them on to the other workers)
        self._outboxes = {"share": _Outbox(_text, self.MAX_EXPORT_BYTES, size=len)}
        self.keep_shared = False

    # ---- processes

    def _start(self):
        """A new process, started by the spawner thread; registered, or _Closed."""
        with self._cond:
            if self._closed:
                raise _Closed
            if self._log is None and self.log_path is not None:
                self._log = open(self.log_path, "ab")
            if self._spawner is None:
                self._spawner = ThreadPoolExecutor(1, thread_name_prefix="grading-processes")
            spawner, log = self._spawner, self._log
        w = spawner.submit(_Worker, self.cmd, self.env, log, self.cwd, self._stall_changed).result()
        with self._cond:
            if self._closed:
                w.kill()
                raise _Closed
            self._all.add(w)
        return w

    def _capacity(self):
        """How many submissions may be graded at once: `processes`, and one more while a process
        waits on a stalled test (an endless loop burns its core until the time limit: another
        submission takes the CPU it leaves).  Called with the lock held."""
        return self.processes + (1 if self.spare and any(w.stalled for w in self._busy) else 0)

    def _stall_changed(self):
        with self._cond:
            self._cond.notify_all()

    def _checkout(self):
        """An idle process, or a new one when fewer than `_capacity()` are alive; waits otherwise."""
        with self._cond:
            while True:
                if self._closed:
                    raise _Closed
                if len(self._busy) + self._starting < self._capacity():
                    if self._idle:  # the one that graded most: never one still starting up (the
                        w = max(self._idle, key=lambda p: p.answered)  # spare) while another waits
                        self._idle.remove(w)
                        self._busy.add(w)
                        return w
                    if len(self._all) + self._starting + self._warming < self._capacity():
                        self._starting += 1
                        break
                self._cond.wait()
        w = None
        try:
            w = self._start()
            return w
        finally:
            with self._cond:
                self._starting -= 1
                if w is not None:
                    self._busy.add(w)
                self._cond.notify_all()

    def _checkin(self, w, alive):
        with self._cond:
            self._busy.discard(w)
            w.stalled = False
            keep = alive and not self._closed
            if keep:
                self._idle.append(w)
            else:
                self._all.discard(w)
            self._cond.notify_all()
        if not keep:
            w.kill()

    def warm_up(self, n=None):
        """Start up to `n` (default: `processes`) processes now, idle: their start-up (torch) runs
        while nothing waits for them (Popen returns at once).  With `spare` set, one more may be
        started: the one that grades while a process waits on a stalled test."""
        want = min(n or self.processes, self.processes + (1 if self.spare else 0))
        while True:
            with self._cond:
                if self._closed or len(self._all) + self._starting + self._warming >= want:
                    return
                self._warming += 1
            try:
                w = self._start()
            except _Closed:
                return
            finally:
                with self._cond:
                    self._warming -= 1
                    self._cond.notify_all()
            self._checkin(w, True)

    def warm_spare(self):
        """Start the spare process now, in the background and once (`spare` on): its start-up (~3 s
        of CPU) is paid before the first stall, not during it."""
        with self._cond:
            if self._spare_warmed or not self.spare:
                return
            self._spare_warmed = True
        threading.Thread(target=self.warm_up, args=(self.processes + 1,), name="spare", daemon=True).start()

    def size(self):
        """How many processes are alive or starting."""
        with self._cond:
            return len(self._all) + self._starting + self._warming

    def has_idle(self):
        """True when a process is idle now."""
        with self._cond:
            return bool(self._idle)

    def retire_idle(self):
        """Stop one idle process (the one that graded least), for another pool's sake; False when
        none is idle."""
        with self._cond:
            if not self._idle:
                return False
            w = min(self._idle, key=lambda p: p.answered)
            self._idle.remove(w)
            self._all.discard(w)
            self._cond.notify_all()
        w.kill()
        return True

    def idle(self):
        """True when no submission is being graded (nor a process being started)."""
        with self._cond:
            return not self._starting and not self._warming and len(self._idle) == len(self._all)

    # ---- one submission

    def grade(self, item, budget=None, process=None, on_stall=None):
        """The result dict of one submission (item.path), graded on an idle process (`process`,
        when the caller has checked one out already); blocks until it is done.  `on_stall()` is
        called in the caller's thread whenever the process waits on a stalled test.  Raises
        GraderError when no process can start at all."""
        budget = self.budget if budget is None else budget
        tries = 0
        while True:
            tries += 1
            try:
                w, process = process or self._checkout(), None
            except _Closed:
                return {"error": "the grading pool was stopped", "retry": True}
            with self._cond:
                self._job_id += 1
                job_id = self._job_id
            first = not w.answered
            with self._cond:
                given = {name: box.for_process(w) for name, box in self._outboxes.items()}
            w.send(job_id, item, time.monotonic() + budget + (self.STARTUP if first else 0), given)
            res = w.answer(on_stall)
            if res is not None:
                self.absorb(
                    {name: res.get(name) if self.keep_shared else res.pop(name, None) for name in self._outboxes},
                    source=w,
                )
                res["pid"], res["warm"] = w.proc.pid, w.answered
                w.answered += 1
                w.job = None
                with self._cond:
                    self.answers += 1
                self._checkin(w, True)
                return res
            if w.proc.poll() is None and time.monotonic() >= w.job[2]:
                self._checkin(w, False)
                return {
                    "error": f"grading did not finish within {budget:g} s (the grading process was killed)",
                    "retry": True,
                }
            reason = w.exit_reason()
            self._checkin(w, False)
            with self._cond:
                self.deaths += 1
                closed, cannot_start = self._closed, not self.answers and self.deaths > 2
            if closed:
                return {"error": "the grading pool was stopped", "retry": True}
            if cannot_start:
                where = f"; see {self.log_path}" if self.log_path else ""
                raise GraderError(f"the grading processes cannot start ({reason}){where}")
            if first and tries < 2:
                continue  # it may have died starting up: once more, on a new process
            return {"error": f"the grading process died ({reason})", "retry": True}

    def absorb(self, given, source=None):
        """What a process (`source`, or None: from elsewhere) made for the others, {"share":
        diagnosis exports (ForkRunner.take_exports)}: each passed to every process but `source`
        with its next submission (_Outbox)."""
        with self._cond:
            for name, box in self._outboxes.items():
                box.add(given.get(name), source)

    # ---- a whole list

    def run(self, items):
        """Yields (item, result dict) as submissions finish, in the order they finish; `processes`
        threads call grade(), and one more that grades only while a process waits on a stalled
        test (`_capacity`); the processes are stopped when it ends (or is closed early)."""
        todo, done = queue.SimpleQueue(), queue.SimpleQueue()
        items = list(items)
        for item in items:
            todo.put(item)

        def work():  # a process first, then a submission: none waits for a process held by another
            while not self._closed:
                try:
                    w = self._checkout()
                except _Closed:
                    return
                except BaseException as e:  # noqa: BLE001 - raised in the caller's thread
                    done.put((None, None, e))
                    return
                try:
                    item = todo.get_nowait()
                except queue.Empty:
                    self._checkin(w, True)
                    return
                try:
                    done.put((item, self.grade(item, process=w), None))
                except BaseException as e:  # noqa: BLE001 - raised in the caller's thread
                    done.put((item, None, e))
                    return

        # daemon threads: a batch stopped by Ctrl-C never waits for them (close() ends their work);
        # one more than the processes: it grades only while a process waits on a stalled test
        self.spare = len(items) > self.processes
        for _ in range(max(1, min(self.processes + self.spare, len(items)))):
            threading.Thread(target=work, name="grade", daemon=True).start()
        try:
            for i, _ in enumerate(items):
                while True:
                    try:
                        item, res, exc = done.get(timeout=0.5)
                        break
                    except queue.Empty:
                        continue
                if exc is not None:
                    raise exc
                if i == 0 and len(items) >= self.WARM_SPARE:
                    self.warm_spare()
                yield item, res
        finally:
            self.close()

    def close(self):
        """Stop every process: the idle ones at once; a busy one is killed and its thread, woken by
        the end of its pipe, cleans up (its submission gets "the grading pool was stopped")."""
        with self._cond:
            self._closed = True
            idle = set(self._idle)
            workers, self._all, self._idle = list(self._all), set(), []
            spawner, self._spawner = self._spawner, None
            log, self._log = self._log, None
            self._cond.notify_all()
        for w in workers:
            if w in idle:
                w.kill()
            else:
                try:
                    w.proc.kill()
                except ProcessLookupError:
                    pass
        if spawner is not None:
            spawner.shutdown(wait=False)
        if log is not None:
            log.close()


# what a grading process never needs of its owner's environment: the service's database URL
# (SEQGRADER_DB, with its password), JupyterHub's API token and the like; a grading process holds
# student code's judge and the sandbox server's parent, so it holds no secret of the service
_SECRET_NAMES = re.compile(
    r"TOKEN|SECRET|PASSW|CREDENTIAL|PRIVATE|(^|_)KEY($|_)|^JUPYTERHUB_|^SEQGRADER_DB$", re.IGNORECASE
)
_PASSWORD_IN_URL = re.compile(r"://[^/@\s]*:[^/@\s]*@")


def _child_env():
    """The grading processes' environment: this one's, less its secrets, with this checkout importable."""
    env = {k: v for k, v in os.environ.items() if not _SECRET_NAMES.search(k) and not _PASSWORD_IN_URL.search(v)}
    root = str(PACKAGE_DIR.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env
