"""The Dask path: ``grade-batch --dask-scheduler tcp://HOST:8786``, as fast per core as the local pool.

    client                                 each Dask worker (a GradingPlugin)
    ──────                                 ───────────────────────────────────
    course_bundle()   course.yml and the    once per course: the bundle written into a private
                      reference solutions   folder (0700) <root>/course-<digest>/, and a LocalPool
                      as bytes, one task    of `nthreads` warm grading processes (the same
                      that holds them       `python -m autograder.batch --grading-process` processes as the
                                            local mode: torch imported once)
    grade_task()      one task per          the submission's bytes written into a private folder
                      submission: its       (0700) <root>/submission-XXXX/ of its own, graded by
                      files as bytes        an idle warm process (LocalPool.grade), the folder
                                            removed; the same result dict as the local pool, plus
                                            the worker's host name, as JSON bytes

What a worker's judges' diagnoses observed of trusted code (diagnose/share.py) comes back with the
results; the client passes it on to every worker (_share_exports, one client.run for many
results), so that each worker's processes, a spare started late among them, start from what the
whole cluster learnt.  Nothing of one submission's grading stands for another's.

The worker needs no shared file system and no copy of the course: the reference solutions (which
the diagnosis compares with) travel with the course.yml.  The grading processes sandbox
every submission exactly as on one machine (sandbox/limits.py: a new root holding Python and the
submission only); the course folder is the one the processes load, so it is among the paths they
hide (runner.hidden_paths: the course folder, the working directory, the submission's parents),
and the submissions' folders are separate from it and from each other.  The plugin's teardown
(the worker closing, or the plugin removed) stops the processes and removes its folder; a worker
that dies takes its processes with it (PR_SET_PDEATHSIG, see pool.py).

A worker's pool starts one process more only when a task waits on a stalled test (the task then
secedes, and the worker's next task grades on it); while the plugins are there, the periodic work
of the workers and their nannies that grading does not need is stopped or slowed (QUIET), and the
scheduler's while a batch runs (quiet_scheduler).  The client checks
nothing itself: the grading processes check course.yml against the properties and a mismatch
comes back as {"fatal": reason}, which stops the batch as in the local mode.
"""

import hashlib
import json
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from ..errors import GraderError, SubmissionNotFound
from ..store import grader_version, one_line, submission_files
from .discover import Item
from .pool import LocalPool

try:
    from distributed import NannyPlugin, WorkerPlugin
except ImportError:  # dask is a dependency; without it only --dask-scheduler is unavailable
    NannyPlugin = WorkerPlugin = object

PLUGIN_NAME = "seqgrader-grading"
NANNY_PLUGIN_NAME = "seqgrader-quiet-nanny"
COURSE_FILE = "course.yml"


# ---------------------------------------------------------------- the course, as bytes


def course_bundle(course_file, course):
    """(digest, {relative name: bytes}): course.yml and the reference solutions (solutions/*.py of
    the course, or the built-in ones it falls back to), all a worker needs to load the course and
    diagnose with it exactly as here."""
    files = {COURSE_FILE: Path(course_file).read_bytes()}
    for p in sorted(Path(course.solutions_dir).glob("*.py")):
        if p.is_file():
            files[f"solutions/{p.name}"] = p.read_bytes()
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(f"{rel}\0{len(files[rel])}\0".encode())
        h.update(files[rel])
    return h.hexdigest(), files


def _safe_course_name(rel):
    parts = rel.split("/")
    if rel == COURSE_FILE:
        return True
    return (
        len(parts) == 2
        and parts[0] == "solutions"
        and parts[1].endswith(".py")
        and parts[1] not in (".py",)
        and not parts[1].startswith(".")
    )


def materialise_course(bundle, dest):
    """Write a course bundle into the new folder `dest` (mode 0700); returns its course.yml."""
    dest = Path(dest)
    dest.mkdir(mode=0o700)
    (dest / "solutions").mkdir(mode=0o700)
    for rel, data in bundle.items():
        if not _safe_course_name(rel):
            raise GraderError(f"unexpected file in the course sent by the client: {rel!r}")
        (dest / rel).write_bytes(data)
    return dest / COURSE_FILE


def write_submission(folder, name, is_dir, files):
    """The submission `name` (a file, or a folder when `is_dir`) written into `folder` from
    {relative name: bytes}; never writes outside `folder`.  Returns its path."""
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        name = "submission"
    target = Path(folder) / name
    if is_dir:
        target.mkdir()
    for rel, data in files.items():
        dest = (target / rel) if is_dir else target
        if is_dir and not dest.resolve().is_relative_to(target.resolve()):
            continue  # never write outside the temp folder
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    return target


def result_bytes(res, old=None, new=None):
    """A task's result dict as what the task returns: UTF-8 JSON, with the string `old` replaced by
    `new` everywhere (the worker's temp path of the submission becomes the client's path, as a
    local report has it).  Bytes, not the dict: a worker measures the size of every result it
    holds (dask.sizeof walks a nested dict: ~40% of a worker's own CPU here) and pickles it; the
    client reads it back with json.loads."""
    text = json.dumps(res, ensure_ascii=False, default=str)
    if old:
        text = text.replace(json.dumps(old, ensure_ascii=False)[1:-1], json.dumps(new, ensure_ascii=False)[1:-1])
    return text.encode("utf-8")


# ---------------------------------------------------------------- the worker's side


class GradingPlugin(WorkerPlugin):
    """Warm grading processes on a Dask worker: one LocalPool per (course, options), `nthreads`
    processes each, kept between tasks; a private folder for the courses and the submissions."""

    idempotent = True  # a second batch (or client) registering it keeps the warm processes

    def __init__(self):
        self.root = None
        self.pools = {}
        self.nthreads = 1
        self.lock = None
        self.exports = {}  # pool key -> the diagnosis' exports the client passed on (_share_exports), for a pool made later too
        self.quiet = _Quiet("worker")

    def setup(self, worker=None):
        """Make the private folder (0700) for this worker's courses and submissions, take its thread
        count (the processes of each pool) and quiet its periodic work (QUIET); nothing starts yet."""
        self.lock = threading.Lock()
        self.pools = {}  # key -> (LocalPool, course folder)
        self.root = Path(tempfile.mkdtemp(prefix="seqgrader-dask-"))  # 0700
        try:
            self.nthreads = max(1, int(worker.state.nthreads))
        except AttributeError:
            self.nthreads = max(1, int(getattr(worker, "nthreads", 1) or 1))
        _on_loop(worker, self.quiet.apply, worker)

    def teardown(self, worker=None):
        """Stop every pool's processes, remove the private folder and put the worker's periodic work back."""
        with self.lock:
            pools, self.pools = list(self.pools.values()), {}
        for pool, _folder in pools:
            pool.close()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
        _on_loop(worker, self.quiet.restore)

    def _pool(self, course_digest, bundle, options, budget):
        key = pool_key(course_digest, options)
        with self.lock:
            if key in self.pools:
                return self.pools[key][0]
            for other, (pool, folder) in list(self.pools.items()):  # another course: its idle pool goes
                if pool.idle():
                    pool.close()
                    shutil.rmtree(folder, ignore_errors=True)
                    del self.pools[other]
            folder = self.root / f"course-{key[:16]}"
            course_file = materialise_course(bundle, folder)
            cwd = self.root / "processes"  # their working folder (hypothesis keeps its .hypothesis/ there)
            cwd.mkdir(mode=0o700, exist_ok=True)
            pool = LocalPool(self.nthreads, 1, course_file, options, budget, log_path=None, cwd=str(cwd))
            pool.spare = True  # one process more while one waits on a stalled test (_secede), started
            # then: a worker that meets no endless loop never pays for it (on two cores shared by
            # two workers, two spares started ahead cost ~8 s of CPU that the local pool's one does not)
            pool.keep_shared = True  # the client passes them on to the other workers (_share_exports)
            pool.absorb({"share": list(self.exports.get(key, ()))})
            self.pools[key] = (pool, folder)
        pool.warm_up()  # every process of this worker starts importing torch now
        return pool

    def grade(self, name, is_dir, files, course_digest, bundle, options, budget, display):
        """Grade one submission sent as bytes on the warm pool of its course and options, in a temp
        folder removed after; returns `result_bytes` with "host", the temp path made `display`."""
        pool = self._pool(course_digest, bundle, options, budget)
        tmp = tempfile.mkdtemp(prefix="submission-", dir=self.root)  # 0700, this task's only
        try:
            target = write_submission(tmp, name, is_dir, files)
            seceded = []  # while its process waits on a stalled test, this task leaves the thread pool
            res = pool.grade(Item(display, target), budget, on_stall=lambda: seceded or seceded.append(_secede()))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        res["host"] = socket.gethostname()
        if res.get("report") is not None:
            res["report"]["submission"] = display
        return result_bytes(res, str(target), display)


class QuietNanny(NannyPlugin):
    """The nanny of a grading worker (the process that watches it, on the same machine) does its
    periodic work less often (QUIET["nanny"]), until the plugin goes."""

    idempotent = True

    def __init__(self):
        self.quiet = _Quiet("nanny")

    def setup(self, nanny=None):
        """Slow the nanny's periodic work (QUIET["nanny"])."""
        _on_loop(nanny, self.quiet.apply, nanny)

    def teardown(self, nanny=None):
        """Put the nanny's periodic work back as it was."""
        _on_loop(nanny, self.quiet.restore)


# A Dask server's periodic work that grading does not need (name: None to stop it, or the slowest
# interval in ms), on the workers, their nannies and (while a batch runs) the scheduler:
#   profile, profile-cycle  a worker's statistical profiler samples the stacks of its threads every
#                  10 ms (the grading runs in other processes: the task's thread only waits on a pipe)
#   tick           every 20 ms, only to measure how responsive the event loop is (it still warns
#                  when the loop stalls for seconds)
#   monitor        every 500 ms, the process's and host's CPU, memory, disk and network for the
#                  dashboard's plots (the heartbeats measure memory themselves)
#   memory_monitor every 100 ms, a worker's memory against its limit (spill, pause) and a nanny's
#                  watch of it (restart above 95%): once a second is soon enough for a worker
#                  that holds a few results (a submission's memory is its grading processes')
# An idle 2-worker LocalCluster on this 2-core machine, CPU in 30 s: the workers 5.1 s with all of
# them, 2.2 s without the profiler, 0.9 s without the tick too, 0.4 s with the monitors slowed; the
# scheduler's process (a LocalCluster keeps the nannies there) 1.7 s, 1.1 s with the scheduler's
# tick slowed, 0.5 s with the monitors too.  The plugins' teardown (and the batch's end, for the
# scheduler) puts them back.
QUIET = {
    "worker": {"profile": None, "profile-cycle": None, "tick": 1000, "monitor": 5000, "memory_monitor": 1000},
    "nanny": {"tick": 1000, "monitor": 5000, "memory_monitor": 1000},
    "scheduler": {"tick": 1000, "monitor": 5000},
}


class _Quiet:
    """The QUIET[kind] periodic callbacks of one Dask server, stopped or slowed, and put back."""

    def __init__(self, kind):
        self.kind = kind
        self.saved = []  # (periodic callback, its interval, running) as they were

    def apply(self, server):
        callbacks = getattr(server, "periodic_callbacks", None) or {}
        for name, interval in QUIET[self.kind].items():
            pc = callbacks.get(name)
            if pc is None or any(pc is saved[0] for saved in self.saved):
                continue
            self.saved.append((pc, pc.callback_time, pc.is_running()))
            if interval is None:
                pc.stop()
            else:
                pc.callback_time = max(pc.callback_time, interval)

    def restore(self):
        saved, self.saved = self.saved, []
        for pc, interval, running in saved:
            pc.callback_time = interval
            if running and not pc.is_running():
                pc.start()


def _on_loop(worker, fn, *args):
    """fn(*args) in the worker's event loop (its periodic callbacks belong to it), from any thread."""
    loop = getattr(worker, "loop", None)
    if loop is None:
        return
    try:
        loop.add_callback(fn, *args)
    except Exception:  # noqa: BLE001 - an optimisation: a closing worker keeps its callbacks
        pass


def _quiet_scheduler(on, dask_scheduler=None):
    """Run on the scheduler by a client (quiet_scheduler): QUIET["scheduler"] while at least one
    batch runs (a count kept on the scheduler, for batches side by side), put back when the last
    ends.  Returns how many batches run now."""
    state = getattr(dask_scheduler, "_seqgrader_quiet", None)
    if state is None:
        state = dask_scheduler._seqgrader_quiet = {"batches": 0, "quiet": _Quiet("scheduler")}
    state["batches"] = max(0, state["batches"] + (1 if on else -1))
    if state["batches"]:
        state["quiet"].apply(dask_scheduler)
    else:
        state["quiet"].restore()
    return state["batches"]


def quiet_scheduler(client, on):
    """The scheduler's QUIET work slowed (on) for a batch, or put back (a scheduler that cannot
    import the grader keeps it: an optimisation, never fatal).  A client that dies in between
    leaves it slowed: its dashboard's plots of the scheduler's own load are coarser."""
    try:
        client.run_on_scheduler(_quiet_scheduler, on)
    except Exception:  # noqa: BLE001
        pass


def _secede():
    """distributed.secede() from a Dask task's thread, so that the worker starts its next task
    meanwhile, on the pool's spare process (pool.py); False anywhere else.  A seceded task ends
    without rejoining."""
    try:
        from distributed import secede
        from distributed.worker import thread_state

        if getattr(thread_state, "key", None) is None:
            return False
        secede()
        return True
    except Exception:  # noqa: BLE001 - not in a task: nothing to leave
        return False


_ATTACH = threading.Lock()


def _plugin(worker):
    """This worker's GradingPlugin (registered by the client; attached here if it is missing)."""
    plugin = worker.plugins.get(PLUGIN_NAME)
    if plugin is None:
        with _ATTACH:
            plugin = worker.plugins.get(PLUGIN_NAME)
            if plugin is None:
                plugin = GradingPlugin()
                plugin.setup(worker)
                worker.plugins[PLUGIN_NAME] = plugin  # torn down with the worker
    return plugin


def grade_task(name, is_dir, files, course_digest, bundle, options, budget, display):
    """A Dask task: grade one submission on this worker's warm grading processes.  `files` maps
    relative names to bytes (a file, or a folder when `is_dir`); `bundle` is the course
    (course_bundle).  Returns the result dict of the local pool, plus "host", as UTF-8 JSON
    (result_bytes)."""
    from distributed import get_worker

    start = time.monotonic()
    try:
        return _plugin(get_worker()).grade(name, is_dir, files, course_digest, bundle, options, budget, display)
    except GraderError as e:  # the grading processes cannot start on this worker
        return result_bytes(
            {
                "error": f"on {socket.gethostname()}: {e}",
                "retry": True,
                "grader": grader_version(),
                "seconds": round(time.monotonic() - start, 3),
                "host": socket.gethostname(),
            }
        )


def _bundle_value(bundle):
    return bundle


SHARE_BATCH, SHARE_SECONDS = 64, 1.0  # exports go to the workers when this many wait, or this often


def _share(client, exports, key):
    """What the workers' diagnoses observed, for all of them (an optimisation: never fatal)."""
    try:
        client.run(_share_exports, exports, key)
    except Exception:  # noqa: BLE001 - a worker gone: the others still grade
        pass


def pool_key(course_digest, options):
    """The grading processes of one course and options (a worker keeps a pool per key)."""
    return hashlib.sha256(f"{course_digest}\0{json.dumps(options, sort_keys=True)}".encode()).hexdigest()


def _share_exports(exports, key, dask_worker=None):
    """Run on every worker by the client (client.run): the exports of the judges' diagnoses
    (diagnose/share.py) for the course and options `key`, for this worker's processes of that key
    to take with their next submission (a pool made later takes them as it starts)."""
    plugin = _plugin(dask_worker) if dask_worker is not None else None
    if plugin is None or not isinstance(exports, list):
        return 0
    exports = [d for d in exports if isinstance(d, str)]
    with plugin.lock:
        held = plugin.exports.setdefault(key, [])
        room = LocalPool.MAX_EXPORT_BYTES - sum(map(len, held))
        for data in exports:
            if len(data) <= room:
                held.append(data)
                room -= len(data)
        pool = plugin.pools.get(key, (None, None))[0]
    if pool is not None:
        pool.absorb({"share": exports})
    return len(exports)


# ---------------------------------------------------------------- the client's side


def connect(address):
    """A client of the scheduler at `address`; GraderError if there is none."""
    try:
        from distributed import Client
    except ImportError:
        raise GraderError(
            "--dask-scheduler needs dask's distributed package: pip install 'dask[distributed]'"
        ) from None
    try:
        return Client(address, timeout=30)
    except (OSError, TimeoutError) as e:
        raise GraderError(f"cannot reach the Dask scheduler at {address}: {e}") from None


def run_dask(address, items, course_file, course, options, timeout, client=None):
    """A generator of (item, result dict) as the cluster's tasks finish.  It connects to the
    scheduler (GraderError if it cannot) and closes its client at the end, unless it is given one:
    a process that grades from several threads (the service) shares one client, which is
    thread-safe, rather than one per call (several clients of one process share its I/O loop, and
    one's close could leave another's finished task unannounced)."""
    own = client is None
    client = connect(address) if own else client
    return _dask_results(client, address, items, course_file, course, options, timeout, own)


def register_plugins(client):
    """The grading plugin on every worker (now and later); the nannies' quiet one if they take it."""
    client.register_plugin(GradingPlugin(), name=PLUGIN_NAME)
    try:
        client.register_plugin(QuietNanny(), name=NANNY_PLUGIN_NAME)
    except Exception:  # noqa: BLE001 - an optimisation: a nanny that cannot load the grader keeps its tick
        pass


def _dask_results(client, address, items, course_file, course, options, timeout, own=True):
    from distributed import as_completed

    from ..load import find_files

    futures, course_future = {}, None
    quieted = False
    exports, last_share = [], 0.0  # exports not passed on to the workers yet
    try:
        if not client.scheduler_info().get("workers"):
            print(
                f"warning: no Dask worker is connected to {address} yet; the tasks wait for one "
                f"(start one with: dask worker {address})",
                file=sys.stderr,
            )
        register_plugins(client)
        quiet_scheduler(client, True)
        quieted = True
        digest, bundle = course_bundle(course_file, course)
        # the course travels once per worker: a task's dependency, not a copy in every task
        course_future = client.submit(
            _bundle_value, bundle, key=f"seqgrader-course-{digest[:16]}-{uuid.uuid4().hex[:8]}", pure=False
        )
        for item in items:
            try:
                find_files(item.path)  # no code at all: said here, as `grade` would say it
            except SubmissionNotFound as e:
                yield item, {"error": str(e), "retry": False}
                continue
            files = {rel: p.read_bytes() for rel, p in submission_files(item.path)}
            key = f"grade-{item.student}-{uuid.uuid4().hex[:8]}"
            fut = client.submit(
                grade_task,
                item.path.name,
                item.path.is_dir(),
                files,
                digest,
                course_future,
                options,
                timeout,
                str(item.path),
                key=key,
                pure=False,
                retries=1,
            )
            futures[fut] = item
        for fut in as_completed(futures):
            item = futures[fut]
            try:
                res = fut.result()
                res = json.loads(res) if isinstance(res, (bytes, str)) else res  # result_bytes
                if not isinstance(res, dict):
                    raise TypeError(f"a result of type {type(res).__name__}")
            except Exception as e:  # noqa: BLE001 - a lost worker, a task error: this row only
                res = {"error": f"the Dask task failed: {type(e).__name__}: {one_line(e, 200)}", "retry": True}
            fut.release()
            shared = res.pop("share", None)
            if isinstance(shared, list):
                exports += shared
            if exports and (len(exports) >= SHARE_BATCH or time.monotonic() >= last_share + SHARE_SECONDS):
                _share(client, exports, pool_key(digest, options))  # one round trip for many results
                exports, last_share = [], time.monotonic()
            yield item, res
        if exports:  # for the workers' next batch of this course (their processes stay warm)
            _share(client, exports, pool_key(digest, options))
    finally:
        if quieted and client.status == "running":
            quiet_scheduler(client, False)
        if own:
            client.close()
        else:  # a shared client: what this call submitted goes, the client stays
            for fut in [*futures, course_future]:
                if fut is not None:
                    fut.release()
