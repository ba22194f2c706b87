"""Grade a whole class: ``python -m autograder grade-batch SUBMISSIONS --out DIR``.

Pipeline of one batch:

    discover()      the submissions: nbgrader's submitted/<student>/<assignment>/, or a flat folder
                    where each .py / .ipynb file or each sub-folder is one student's submission
    fingerprint()   a hash of the submission's bytes, course.yml, the options and the grader's own
                    code: a report that records the same fingerprint is kept (resume)
    LocalPool       N grading processes (each imports torch once and grades submission after
                    submission with a ForkRunner), fed one submission at a time through a pipe;
    or run_dask()   one Dask task per submission, each running ``python -m autograder grade`` in a
                    subprocess on the worker machine, on a copy of the submission's files
    Batch.record()  writes reports/<student>.json (the contract's JSON plus a "batch" entry),
                    reports/<student>.html (the student's page, report/html.py) and
                    gradescope/<student>/results.json, atomically; grades.csv and the
                    instructor's dashboard.html (report/dashboard.py) at the end

A submission that cannot be graded at all (corrupt notebook, nothing loadable, grader failure) is
a row whose status is "error: <reason>", never a silent 0.
"""
import csv
import hashlib
import io
import json
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from . import __version__
from .errors import ConfigError, GraderError, SubmissionNotFound

PACKAGE_DIR = Path(__file__).resolve().parent
SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints", ".git", ".venv", "node_modules"}  # as load/ does
CODE_SUFFIXES = (".py", ".ipynb")
PARALLEL_DEFAULT = "submissions"  # measured on 2 cores: see README "Grading a whole class"


# ---------------------------------------------------------------- discovery

@dataclass(frozen=True)
class Item:
    student: str
    path: Path


def _hidden(name):
    return name.startswith(".") or name in SKIP_DIRS


def discover(root, layout="auto", assignment=None, exclude=()):
    """(layout, [Item], [warning]) for the folder `root`; raises SubmissionNotFound when empty."""
    root = Path(root)
    if not root.exists():
        raise SubmissionNotFound(f"no such folder: {root}")
    if not root.is_dir():
        raise SubmissionNotFound(f"{root} is a file; grade-batch grades a folder of submissions "
                                 f"(grade one file with `python -m autograder grade`)")
    excluded = {Path(p).resolve() for p in exclude}
    _LINKS.clear()
    if layout == "auto":
        layout = "nbgrader" if (root / "submitted").is_dir() or root.name == "submitted" else "flat"
    if layout == "nbgrader":
        items, warnings = _discover_nbgrader(root, assignment, excluded)
    else:
        if assignment:
            raise GraderError("--assignment only applies to nbgrader's layout (submitted/<student>/<assignment>/)")
        items, warnings = _discover_flat(root, excluded)
    if _LINKS:
        warnings.append(f"{len(_LINKS)} symbolic link(s) not followed, not graded: "
                        + ", ".join(str(p.relative_to(root)) for p in _LINKS[:5]) + (" ..." if len(_LINKS) > 5 else ""))
    if not items:
        raise SubmissionNotFound(
            f"no submissions in {root}: expected .py / .ipynb files or sub-folders (one per student), "
            f"or nbgrader's submitted/<student>/<assignment>/")
    return layout, items, warnings


_LINKS = []  # symbolic links met by discover (never followed: a link to a classmate's folder or
             # to the reference solutions must not be graded as a student's own work)


def _entries(folder, excluded):
    out = []
    for p in sorted(folder.iterdir()):
        if _hidden(p.name) or p.resolve() in excluded:
            continue
        if p.is_symlink():
            _LINKS.append(p)
            continue
        out.append(p)
    return out


def _discover_nbgrader(root, assignment, excluded):
    sub = root / "submitted" if (root / "submitted").is_dir() else root
    students = [p for p in _entries(sub, excluded) if p.is_dir()]
    if not students:
        raise SubmissionNotFound(f"no student folders in {sub} (nbgrader layout: submitted/<student>/<assignment>/)")
    have = {s.name: {a.name for a in _entries(s, excluded) if a.is_dir()} for s in students}
    names = sorted(set().union(*have.values()))
    if not names:
        raise SubmissionNotFound(f"no assignment folders in {sub}/<student>/ (nbgrader layout: "
                                 f"submitted/<student>/<assignment>/)")
    if assignment is None:
        if len(names) > 1:
            raise GraderError(f"{sub} holds several assignments ({', '.join(names)}): "
                              f"choose one with --assignment NAME")
        assignment = names[0]
    elif assignment not in names:
        raise SubmissionNotFound(f"no student submitted {assignment!r} in {sub}; "
                                 f"assignments found: {', '.join(names)}")
    items = [Item(s.name, s / assignment) for s in students if assignment in have[s.name]]
    missing = [s.name for s in students if assignment not in have[s.name]]
    warnings = [f"{len(missing)} student(s) have no {assignment!r} folder (no row): {', '.join(missing)}"] if missing else []
    return items, warnings


def _discover_flat(root, excluded):
    found, ignored = [], []
    for p in _entries(root, excluded):
        if p.is_dir() or (p.is_file() and p.suffix in CODE_SUFFIXES):
            found.append(p)
        else:
            ignored.append(p.name)
    stems = [p.stem if p.is_file() else p.name for p in found]
    items, warnings = [], []
    for p, stem in zip(found, stems):
        # alice.py next to alice/ or alice.ipynb: keep both, named by their full names
        items.append(Item(p.name if stems.count(stem) > 1 else stem, p))
    clashes = sorted({s for s in stems if stems.count(s) > 1})
    if clashes:
        warnings.append(f"several submissions share a name ({', '.join(clashes)}): their ids keep the suffix")
    if ignored:
        warnings.append(f"ignored {len(ignored)} file(s) that are not .py / .ipynb: {', '.join(ignored[:5])}"
                        + (" ..." if len(ignored) > 5 else ""))
    return items, warnings


# ---------------------------------------------------------------- fingerprints

_GRADER_VERSION = None


def grader_version():
    """__version__ plus a hash of the package's code and data: any change to the grader counts."""
    global _GRADER_VERSION
    if _GRADER_VERSION is None:
        h = hashlib.sha256()
        for p in sorted(PACKAGE_DIR.rglob("*")):
            rel = p.relative_to(PACKAGE_DIR)
            if p.is_file() and p.suffix in (".py", ".yml", ".yaml") and not any(_hidden(x) for x in rel.parts):
                h.update(f"{rel.as_posix()}\0".encode())
                h.update(p.read_bytes())
        _GRADER_VERSION = f"{__version__}+{h.hexdigest()[:12]}"
    return _GRADER_VERSION


def submission_files(path):
    """[(relative name, Path)] of every regular file of a submission (hidden/cache folders left out)."""
    path = Path(path)
    if path.is_file() and not path.is_symlink():
        return [(path.name, path)]
    if not path.is_dir() or path.is_symlink():
        return []
    from .load.submission import _walk

    out = []
    for p in sorted(_walk(path)):  # symbolic links are never followed (load.find_files)
        rel = p.relative_to(path)
        if not any(_hidden(x) for x in rel.parts):
            out.append((rel.as_posix(), p))
    return out


def settings_digest(course_file, course, exercises):
    """What, besides the submission, decides a report: course.yml's bytes, the effective course
    (after --language / --max-examples), the exercises graded, and the grader's version."""
    payload = {"grader": grader_version(),
               "course_file": hashlib.sha256(Path(course_file).read_bytes()).hexdigest(),
               "course": course.model_dump(mode="json"), "exercises": list(exercises)}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def fingerprint(path, settings):
    h = hashlib.sha256(settings.encode())
    h.update(b"file\0" if Path(path).is_file() else b"dir\0")
    for rel, p in submission_files(path):
        data = p.read_bytes()
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


# ---------------------------------------------------------------- files

_UMASK = os.umask(0o022)
os.umask(_UMASK)


def write_atomic(path, text):
    """Write `text` to `path` through a temp file in the same folder and os.replace: a killed
    batch leaves either the old file or the new one, never half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes it 0600; the result is an ordinary file
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def remove_stale_temp_files(out):
    """Temp files a killed batch left behind (never mistaken for reports: they start with a dot)."""
    n = 0
    for p in Path(out).rglob(".*.tmp"):
        try:
            p.unlink()
            n += 1
        except OSError:
            pass
    return n


def one_line(text, limit=300):
    text = re.sub(r"\s+", " ", str(text)).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def classify(report):
    """(status, note) of a report: "error: ..." when nothing of the submission could be graded
    (report/model.not_graded_reason, the one rule every report follows)."""
    from .report.model import Status, not_graded_reason

    reason = not_graded_reason({k: v for k, v in report.items() if k != "batch"})
    if reason is not None:
        return "error: " + one_line(reason), ""
    errors = report.get("errors", [])
    if errors:
        return "graded", one_line("; ".join(errors), 500)
    statuses = [Status.of(t) for ex in report.get("exercises", []) for t in ex.get("tests", [])]
    if statuses and all(s == Status.MISSING for s in statuses):
        return "graded", "no exercise function found (or all are stubs)"
    return "graded", ""


def error_report(item, course, exercises, reason):
    """A report in the contract's shape for a submission the grader could not grade: every
    exercise, every test at 0 with status "error", and the reason in `errors`."""
    exs = []
    for ex in exercises:
        cfg = course.exercises[ex]
        tests = [{"name": f"{ex}/{name}", "function": name.split("/", 1)[0], "score": 0.0,
                  "max_score": t.points, "passed": False, "status": "error",
                  "feedback": f"not graded: {reason}", "seconds": 0.0} for name, t in cfg.tests.items()]
        exs.append({"id": ex, "score": 0.0, "max_score": cfg.max_score, "tests": tests, "load_errors": []})
    return {"submission": str(item.path), "score": 0.0, "max_score": sum(e["max_score"] for e in exs),
            "exercises": exs, "errors": [f"not graded: {reason}"], "seconds": 0.0}


def gradescope_results(report, language="both"):
    """Gradescope's autograder results.json for one report, in the course's language.

    A submission that was not graded is never a silent 0: `output` says so, why and what to do,
    and one test, "not graded", carries the only status the format has ("failed"), so that the
    student sees it in red; the format needs a score, which stays 0 (extra_data: graded false)."""
    from .report.feedback import feedback_text
    from .report.messages import say
    from .report.model import advice_key, not_graded_reason
    from .report.text import render_text

    reason = not_graded_reason(report)
    if reason is not None:
        text = render_text(report, language)
        return {"score": 0.0, "output": text, "visibility": "visible", "stdout_visibility": "hidden",
                "tests": [{"name": say("gradescope.not_graded_test", language), "score": 0.0, "max_score": 0.0,
                           "status": "failed", "visibility": "visible",
                           "output": say("test.not_graded", language, reason=reason)
                           + ("\n" + say(advice_key(reason), language, sep="\n")
                              if advice_key(reason) != "why.other" else "")}],
                "extra_data": {"graded": False, "status": (report.get("batch") or {}).get("status", "error: " + reason),
                               "not_graded_reason": reason}}
    status = (report.get("batch") or {}).get("status", "graded")
    out = render_text(report, language).split("\n\n==", 1)[0].rstrip() + "\n"  # the score and what to fix
    same = report.get("language", "both") == language  # else the feedback is written again in `language`
    tests = [{"name": t["name"], "score": t["score"], "max_score": t["max_score"],
              "output": t.get("feedback", "") if same else feedback_text(t, language),
              "status": "passed" if t.get("passed") else "failed", "visibility": "visible"}
             for ex in report["exercises"] for t in ex["tests"]]
    return {"score": report["score"], "execution_time": report.get("seconds", 0.0), "output": out,
            "visibility": "visible", "stdout_visibility": "hidden", "tests": tests,
            "extra_data": {"graded": True, "status": status, "max_score": report["max_score"]}}


def csv_row(student, report, exercises):
    meta = report.get("batch", {})
    status = meta.get("status", "graded")
    row = {"student": student}
    by_id = {e["id"]: e for e in report.get("exercises", [])}
    graded = status == "graded"
    for ex in exercises:
        row[ex] = f"{by_id[ex]['score']:g}" if graded and ex in by_id else ""
    row["total"] = f"{report['score']:g}" if graded else ""
    row["max_score"] = f"{report['max_score']:g}"
    row["status"] = status
    row["note"] = meta.get("note", "")
    return row


def write_csv(path, rows, exercises):
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["student", *exercises, "total", "max_score", "status", "note"],
                       lineterminator="\n")
    w.writeheader()
    for student in sorted(rows):
        w.writerow(rows[student])
    write_atomic(path, buf.getvalue())


# ---------------------------------------------------------------- local pool

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
    from .grading import grade

    start = time.monotonic()
    try:
        out = {"report": grade(path, course, runner, exercises=exercises).to_dict()}
    except ConfigError as e:
        out = {"fatal": str(e)}
    except GraderError as e:
        out = {"error": str(e), "retry": False}
    except Exception as e:  # noqa: BLE001 - a grader bug costs this submission only
        out = {"error": f"grader failed: {type(e).__name__}: {e}", "retry": True}
    out["seconds"] = round(time.monotonic() - start, 3)
    out["grader"] = grader_version()
    return out


def worker_main(config_json):
    """A grading process of the local pool: one JSON line in (a submission), one JSON line out."""
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything else printed goes to the log, not into the protocol
    _die_with_parent()
    from .sandbox import server
    server.prestart()  # before this process holds anything of a student's: see server.py
    cfg = json.loads(config_json)
    from .config import load_course
    from .sandbox import ForkRunner

    course = load_course(cfg["course"], language=cfg["language"], max_examples=cfg["max_examples"])
    runner = ForkRunner(course, workers=cfg["runner_workers"], replay=True,  # many submissions
                        reuse=cfg.get("reuse", True))
    for line in sys.stdin:
        job = json.loads(line)
        hits = runner.reuse.hits if runner.reuse else 0
        out = _grade_in_process(job["path"], course, runner, cfg["exercises"])
        out["id"] = job["id"]
        out["reused"] = (runner.reuse.hits if runner.reuse else 0) - hits  # exercises not graded again
        proto.write(json.dumps(out, ensure_ascii=False, default=str) + "\n")
        proto.flush()


class _Worker:
    def __init__(self, cmd, env, log):
        # its own session: Ctrl-C reaches the batch only, which then stops its grading processes
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
                                     start_new_session=True)
        self.fd = self.proc.stdout.fileno()
        os.set_blocking(self.fd, False)
        self.buf = b""
        self.job = None  # (id, item, deadline)
        self.answered = 0

    def send(self, job_id, item, deadline):
        self.job = (job_id, item, deadline)
        try:
            self.proc.stdin.write((json.dumps({"id": job_id, "path": str(item.path)}) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died: its EOF says so

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

    def exit_reason(self):
        rc = self.proc.wait()
        if rc < 0:
            try:
                return f"signal {signal.Signals(-rc).name}"
            except ValueError:
                return f"signal {-rc}"
        return f"exit status {rc}"


class LocalPool:
    """`processes` grading processes; each runs ForkRunner(workers=runner_workers).

    A submission is sent to a process only when it is idle, so a process that dies (or that the
    watchdog kills after `budget` seconds) costs exactly the submission it was grading, and a new
    process takes its place.  A process that dies on its very first submission may have died
    starting up: that submission is tried once more before it is charged."""

    STARTUP = 60.0  # extra seconds for a process's first submission (imports torch)

    def __init__(self, processes, runner_workers, course_file, options, budget, log_path):
        self.processes = processes
        self.budget = budget
        config = json.dumps({"course": str(course_file), "runner_workers": runner_workers, **options})
        self.cmd = [sys.executable, "-m", "autograder.batch", "--worker", config]
        self.env = _child_env()
        self.log_path = log_path

    def run(self, items):
        """Yields (item, result dict) as submissions finish."""
        queue = list(items)
        workers, sel = [], selectors.DefaultSelector()
        log = open(self.log_path, "ab")
        attempts, deaths, answers, job_id = {}, 0, 0, 0
        try:
            while queue or workers:
                while len(workers) < min(self.processes, len(queue) + sum(1 for w in workers if w.job)):
                    w = _Worker(self.cmd, self.env, log)
                    workers.append(w)
                    sel.register(w.fd, selectors.EVENT_READ, w)
                for w in workers:
                    if w.job is None and queue:
                        job_id += 1
                        w.send(job_id, queue.pop(0),
                               time.monotonic() + self.budget + (0 if w.answered else self.STARTUP))
                if not any(w.job for w in workers):
                    break
                timeout = max(0.0, min(w.job[2] for w in workers if w.job) - time.monotonic())
                finished = []
                for key, _ in sel.select(timeout):
                    w = key.data
                    try:
                        chunk = os.read(w.fd, 1 << 20)
                    except BlockingIOError:
                        continue
                    if chunk:
                        w.buf += chunk
                        *lines, w.buf = w.buf.split(b"\n")
                        for line in lines:
                            res = self._parse(line, w)
                            if res is not None:
                                finished.append((w.job[1], res))
                                w.job = None
                                w.answered += 1
                                answers += 1
                        continue
                    # EOF: the process died (a crash, or student code that killed its parent)
                    sel.unregister(w.fd)
                    workers.remove(w)
                    reason = w.exit_reason()
                    w.kill()
                    deaths += 1
                    if not answers and deaths > 2:
                        raise GraderError(f"the grading processes cannot start ({reason}); see {self.log_path}")
                    if w.job:
                        item = w.job[1]
                        attempts[item.student] = attempts.get(item.student, 0) + 1
                        if not w.answered and attempts[item.student] < 2:
                            queue.insert(0, item)
                        else:
                            finished.append((item, {"error": f"the grading process died ({reason})", "retry": True}))
                now = time.monotonic()
                for w in list(workers):
                    if w.job and now >= w.job[2]:
                        sel.unregister(w.fd)
                        workers.remove(w)
                        w.kill()
                        finished.append((w.job[1], {"error": f"grading did not finish within {self.budget:g} s "
                                                             f"(the grading process was killed)", "retry": True}))
                yield from finished
        finally:
            for w in workers:
                w.kill()
            sel.close()
            log.close()

    @staticmethod
    def _parse(line, w):
        try:
            res = json.loads(line)
        except ValueError:
            return None
        if not isinstance(res, dict) or w.job is None or res.get("id") != w.job[0]:
            return None
        return res


def _child_env():
    env = dict(os.environ)
    root = str(PACKAGE_DIR.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


# ---------------------------------------------------------------- dask

def grade_remote(name, is_dir, files, course_text, options, timeout, display):
    """A Dask task: grade one submission in a subprocess on this (worker) machine.

    `files` maps relative names to bytes; they are written into a fresh temp folder as `name`
    (a file, or a folder when `is_dir`), so the worker needs no shared file system.  Returns the
    same result dict as a local grading process."""
    start = time.monotonic()
    runner_workers = 1
    try:
        from distributed import get_worker

        w = get_worker()
        nthreads = getattr(w, "nthreads", None) or w.state.nthreads
        runner_workers = max(1, (os.cpu_count() or 1) // max(1, nthreads))
    except Exception:  # noqa: BLE001 - not in a worker (tests call it directly)
        pass
    with tempfile.TemporaryDirectory(prefix="grade-batch-") as tmp:
        base = Path(tmp) / "submission"
        target = base / name
        for rel, data in files.items():
            dest = (target / rel) if is_dir else target
            if is_dir and not dest.resolve().is_relative_to(target.resolve()):
                continue  # never write outside the temp folder
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        if is_dir:
            target.mkdir(parents=True, exist_ok=True)
        course_file = Path(tmp) / "course.yml"
        course_file.write_text(course_text, encoding="utf-8")
        out = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "autograder", "grade", str(target), "--json", str(out), "-q",
               "--course", str(course_file), "--workers", str(runner_workers), *options]
        result = {"grader": grader_version(), "host": socket.gethostname()}
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp, env=_child_env())
        except subprocess.TimeoutExpired:
            result.update(error=f"grading did not finish within {timeout:g} s", retry=True)
        else:
            stderr = proc.stderr.replace(str(target), display).strip()
            if proc.returncode == 0 and out.exists():
                report = json.loads(out.read_text(encoding="utf-8"))
                report["submission"] = display
                result["report"] = report
            elif proc.returncode == 2:  # the grader's one-line message: this worker's course or grader
                msg = stderr.splitlines()[-1] if stderr else "exit status 2"  # (the client checked the files)
                result.update(error=f"on {result['host']}: {msg.removeprefix('error: ')}", retry=True)
            else:
                tail = one_line(stderr[-400:]) if stderr else ""
                result.update(error=f"grader failed (exit status {proc.returncode}) {tail}".strip(), retry=True)
    result["seconds"] = round(time.monotonic() - start, 3)
    return result


def run_dask(address, items, course_file, options, timeout):
    """Connects to the scheduler (raises GraderError if it cannot), then returns a generator of
    (item, result dict) as the cluster's tasks finish."""
    try:
        from distributed import Client
    except ImportError:
        raise GraderError("--dask-scheduler needs dask's distributed package: pip install 'dask[distributed]'") from None
    try:
        client = Client(address, timeout=30)
    except (OSError, TimeoutError) as e:
        raise GraderError(f"cannot reach the Dask scheduler at {address}: {e}") from None
    return _dask_results(client, address, items, course_file, options, timeout)


def _dask_results(client, address, items, course_file, options, timeout):
    import uuid

    from distributed import as_completed

    from .load import find_files

    course_text = Path(course_file).read_text(encoding="utf-8")
    futures = {}
    try:
        if not client.scheduler_info().get("workers"):
            print(f"warning: no Dask worker is connected to {address} yet; the tasks wait for one "
                  f"(start one with: dask worker {address})", file=sys.stderr)
        for item in items:
            try:
                find_files(item.path)  # no code at all: said here, as `grade` would say it
            except SubmissionNotFound as e:
                yield item, {"error": str(e), "retry": False}
                continue
            files = {rel: p.read_bytes() for rel, p in submission_files(item.path)}
            key = f"grade-{item.student}-{uuid.uuid4().hex[:8]}"
            fut = client.submit(grade_remote, item.path.name, item.path.is_dir(), files, course_text, options,
                                timeout, str(item.path), key=key, pure=False, retries=1)
            futures[fut] = item
        for fut in as_completed(futures):
            item = futures[fut]
            try:
                res = fut.result()
            except Exception as e:  # noqa: BLE001 - a lost worker, a task error: this row only
                res = {"error": f"the Dask task failed: {type(e).__name__}: {one_line(e, 200)}", "retry": True}
            fut.release()
            yield item, res
    finally:
        client.close()


# ---------------------------------------------------------------- the batch

class Batch:
    def __init__(self, args):
        from .config import find_course, load_course

        self.args = args
        self.course_file = find_course(args.course)
        self.course = load_course(self.course_file, language=args.language, max_examples=args.max_examples)
        known = args.assignment if args.assignment in self.course.assignments else None
        self.exercises = list(args.exercise or self.course.assignment(known))
        for ex in self.exercises:
            if ex not in self.course.exercises:
                raise ConfigError(f"unknown exercise {ex!r}; course.yml has {list(self.course.exercises)}")
            self.course.reference(ex)  # missing: one clear error now, not an error row per student
        self.options = {"language": args.language, "max_examples": args.max_examples, "exercises": self.exercises,
                        "reuse": not getattr(args, "no_reuse", False)}
        self.settings = settings_digest(self.course_file, self.course, self.exercises)
        self.out = Path(args.out)
        self.reports = self.out / "reports"
        self.gradescope = self.out / "gradescope"
        self.rows = {}
        self.counts = {"graded": 0, "error": 0, "kept": 0}
        self.scores = []
        self.unconfined = []  # students whose workers had no allow-list view (see note_sandbox)

    # budget of one submission: every exercise at its time limit, plus a load each
    def budget(self):
        c = self.course
        return sum(c.exercises[ex].timeout + c.load_timeout + 5 for ex in self.exercises) + 60

    def report_path(self, student):
        return self.reports / f"{student}.json"

    def html_path(self, student):
        return self.reports / f"{student}.html"

    def write_html(self, student, report, log):
        """The student's own page (report/html.py) beside the JSON; a failure here costs no grade."""
        from .report.html import render_html
        try:
            write_atomic(self.html_path(student), render_html(report, self.course.language))
        except Exception as e:  # noqa: BLE001 - the JSON and the CSV are what count
            log.write(f"{_now()} could not write the HTML report of {student}: {type(e).__name__}: {e}\n")

    def kept_report(self, item, fp):
        """The stored report of `item` if it is complete and still up to date, else None."""
        p = self.report_path(item.student)
        try:
            report = json.loads(p.read_text(encoding="utf-8"))
            meta = report["batch"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if meta.get("fingerprint") != fp or meta.get("retry"):
            return None
        return report

    def note_sandbox(self, student, report):
        """Remember a submission whose workers could read more than their allow-list view (the
        machine refused the new root): the summary warns about it."""
        line = str(report.get("sandbox") or "")
        if report["batch"].get("status") == "graded" and "WARNING" in line:
            self.unconfined.append(student)

    def keep(self, item, report, log):
        """An up-to-date report: its row, and its Gradescope file if that was lost."""
        self.counts["kept"] += 1
        self.note_sandbox(item.student, report)
        self.rows[item.student] = csv_row(item.student, report, self.exercises)
        if report["batch"].get("status") == "graded":
            self.scores.append(report["score"])
        gs = self.gradescope / item.student / "results.json"
        if not gs.exists():
            write_atomic(gs, json.dumps(gradescope_results(report, self.course.language), ensure_ascii=False, indent=1))
        if not self.html_path(item.student).exists():
            self.write_html(item.student, report, log)
        log.write(f"{_now()} kept {item.student} (report up to date)\n")

    def record(self, item, fp, res, log):
        """Write the files of one finished submission; return (status, report)."""
        if res.get("report") is not None:
            report = res["report"]
            status, note = classify(report)
        else:
            reason = one_line(res.get("error") or "unknown failure")
            report = error_report(item, self.course, self.exercises, reason)
            status, note = f"error: {reason}", ""
        report["batch"] = {"student": str(item.student), "fingerprint": fp, "status": status, "note": note,
                           "retry": bool(res.get("retry")) and status != "graded",
                           "grader": res.get("grader", grader_version()),
                           "graded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                           "grading_seconds": res.get("seconds", 0.0)}
        if res.get("host"):
            report["batch"]["host"] = res["host"]
        write_atomic(self.gradescope / item.student / "results.json",
                     json.dumps(gradescope_results(report, self.course.language), ensure_ascii=False, indent=1))
        self.write_html(item.student, report, log)
        write_atomic(self.report_path(item.student), json.dumps(report, ensure_ascii=False, indent=1))  # last: the commit
        self.rows[item.student] = csv_row(item.student, report, self.exercises)
        if status == "graded":
            self.counts["graded"] += 1
            self.scores.append(report["score"])
        else:
            self.counts["error"] += 1
        self.note_sandbox(item.student, report)
        log.write(f"{_now()} graded {item.student} fingerprint={fp[:16]} score={report['score']:g} status={status}"
                  + (f" reused={res['reused']}" if res.get("reused") else "") + "\n")
        log.flush()
        return status, report


def _now():
    return datetime.now().isoformat(timespec="seconds")


def _lock(out):
    import fcntl

    f = open(out / ".grade-batch.lock", "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        raise GraderError(f"another grade-batch is writing to {out}; wait for it or use another --out") from None
    return f


def _plan_parallel(args, n_todo):
    """(grading processes, exercises in parallel per process)."""
    cores = args.workers or os.cpu_count() or 1
    if args.parallel == "exercises":
        return 1, cores
    return max(1, min(cores, n_todo)), 1


def run_batch(args):
    from rich.console import Console
    from rich.markup import escape

    console = Console(stderr=True, quiet=args.quiet, highlight=False, soft_wrap=True)
    signal.signal(signal.SIGTERM, _interrupt)  # kill -TERM: stop the graders, keep what is written
    batch = Batch(args)
    layout, items, warnings = discover(args.submissions, args.layout, args.assignment, exclude=[args.out])
    for w in warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    batch.out.mkdir(parents=True, exist_ok=True)
    lock = _lock(batch.out)
    log = open(batch.out / "batch.log", "a", encoding="utf-8")
    try:
        return _run(args, batch, layout, items, console, log)
    except KeyboardInterrupt:
        log.write(f"{_now()} interrupted\n")
        print("interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    finally:
        log.close()
        lock.close()


def _run(args, batch, layout, items, console, log):
    from rich.markup import escape
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    stale = remove_stale_temp_files(batch.out)
    log.write(f"{_now()} start: {len(items)} submission(s) in {args.submissions} ({layout} layout), "
              f"grader {grader_version()}{', --force' if args.force else ''}\n")
    if stale:
        log.write(f"{_now()} removed {stale} temp file(s) left by an interrupted batch\n")

    # 1. what is up to date stays
    todo, fps = [], {}
    for item in items:
        fps[item.student] = fp = fingerprint(item.path, batch.settings)
        kept = None if args.force else batch.kept_report(item, fp)
        if kept is None:
            todo.append(item)
        else:
            batch.keep(item, kept, log)
    log.flush()

    procs, per = _plan_parallel(args, len(todo))
    where = (f"the Dask cluster at {args.dask_scheduler}" if args.dask_scheduler
             else f"{procs} process(es) x {per} exercise(s) at a time")
    console.print(f"{len(items)} submission(s) ({layout} layout): {batch.counts['kept']} up to date, "
                  f"{len(todo)} to grade on {where}")

    # 2. grade the rest, writing each one's files as soon as it is done
    start, done, skew_warned = time.monotonic(), 0, False
    if todo:
        if args.dask_scheduler:
            if not args.skip_check:
                _check_course_locally(batch)
            results = run_dask(args.dask_scheduler, todo, batch.course_file, _grade_flags(args), batch.budget())
        else:
            pool = LocalPool(procs, per, batch.course_file, batch.options, batch.budget(), batch.out / "workers.log")
            results = pool.run(todo)
        progress = Progress(TextColumn("[bold]grading[/]"), BarColumn(), MofNCompleteColumn(), TextColumn("elapsed"),
                            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                            console=console, disable=args.quiet)
        try:
            with progress:
                task = progress.add_task("grading", total=len(todo))
                for item, res in results:
                    if res.get("fatal"):  # course.yml and the properties disagree: no point going on
                        log.write(f"{_now()} stopped: {res['fatal']}\n")
                        raise ConfigError(res["fatal"])
                    if res.get("grader") not in (None, grader_version()) and not skew_warned:
                        skew_warned = True
                        progress.console.print(f"[yellow]warning:[/] {escape(res.get('host', 'a worker'))} runs grader "
                                               f"{escape(res['grader'])}, this machine {grader_version()}: "
                                               f"update it (the reports record which version graded them)")
                    status, report = batch.record(item, fps[item.student], res, log)
                    done += 1
                    progress.advance(task)
                    if status == "graded":
                        progress.console.print(f"[green]graded[/] {escape(item.student)}  {report['score']:g}/"
                                               f"{report['max_score']:g}  ({res.get('seconds', 0):.1f} s)")
                    else:
                        progress.console.print(f"[red]error[/]  {escape(item.student)}  {escape(status)}")
        except KeyboardInterrupt:
            log.write(f"{_now()} interrupted after {done} of {len(todo)}\n")
            print(f"interrupted: {done} of {len(todo)} graded in this run, their files are written; "
                  f"run the same command again to grade the rest", file=sys.stderr)
            return 130
        finally:
            results.close()  # stops the grading processes
    elapsed = time.monotonic() - start

    # 3. the table, the instructor's dashboard and the summary
    write_csv(batch.out / "grades.csv", batch.rows, batch.exercises)
    try:
        from .report.dashboard import write_dashboard
        write_dashboard(batch.out, language=batch.course.language)
    except Exception as e:  # noqa: BLE001 - the grades are written; a dashboard can be made again
        log.write(f"{_now()} could not write dashboard.html: {type(e).__name__}: {e}\n")
    n_err = sum(1 for r in batch.rows.values() if r["status"] != "graded")
    summary = [f"{len(items)} submission(s): {len(items) - n_err} graded, {n_err} error(s) "
               f"({done} graded in this run, {batch.counts['kept']} kept up to date)"]
    if batch.scores:
        summary.append(f"mean score {sum(batch.scores) / len(batch.scores):.2f} / {_max(batch):g} "
                       f"over {len(batch.scores)} graded submission(s)")
    if done:
        summary.append(f"time {elapsed:.1f} s, {elapsed / done:.2f} s per submission")
    summary.append(f"results in {batch.out}{os.sep} (grades.csv, dashboard.html, reports/, gradescope/)")
    if batch.unconfined:
        warning = (f"WARNING: {len(batch.unconfined)} submission(s) were graded by workers that could read the whole "
                   f"filesystem, not only Python and their own files (this machine refused the new root; see the "
                   f"report's sandbox line): {', '.join(sorted(batch.unconfined)[:10])}"
                   + (" ..." if len(batch.unconfined) > 10 else ""))
        summary.append(warning)
        console.print(f"[bold red]{escape(warning)}[/]")
    log.write(f"{_now()} done: {'; '.join(summary)}\n")
    print("\n".join(summary))
    return 0


def _grade_flags(args):
    """The options of `grade` that a Dask task passes on (the course file is sent along)."""
    flags = []
    if args.language:
        flags += ["--language", args.language]
    if args.max_examples:
        flags += ["--max-examples", str(args.max_examples)]
    for ex in args.exercise or []:
        flags += ["--exercise", ex]
    return flags


def _interrupt(_signum, _frame):
    raise KeyboardInterrupt


def _max(batch):
    return sum(batch.course.exercises[ex].max_score for ex in batch.exercises)


def _check_course_locally(batch):
    """course.yml must match the registered properties: fail once, here, not once per task."""
    from .grading import check_course
    from .properties._harness import grading_profile

    grading_profile(batch.course.max_examples)
    check_course(batch.course, batch.exercises)


# ---------------------------------------------------------------- command line

HELP = """\
Grade every submission of a folder and write, in --out DIR:

  reports/<student>.json               the contract's JSON report of `grade` (plus a "batch" entry:
                                       fingerprint, status, note, grader version, time)
  reports/<student>.html               the student's own report: one self-contained HTML page
  gradescope/<student>/results.json    the same in Gradescope's autograder format
  dashboard.html                       the instructor's view: score distributions, pass rate per
                                       property, frequent mistakes, errored submissions
                                       (`python -m autograder dashboard DIR` makes it again)
  grades.csv                           one row per student: one column per exercise, total,
                                       max_score, status ("graded" or "error: <reason>"), note
  batch.log                            what each run did (graded / kept), appended

SUBMISSIONS is either nbgrader's layout -- the course root (holding submitted/) or the submitted/
folder itself, with submitted/<student>/<assignment>/ as one submission (--assignment picks one
when there are several) -- or a flat folder where each .py / .ipynb file or each sub-folder is one
submission, named by the file's stem or the folder's name. The layout is detected (a submitted/
folder means nbgrader); --layout overrides it.

A submission that could not be graded at all (a corrupt notebook, nothing loadable, a grader
failure, a crash of the grading process) gets status "error: <reason>" and empty scores, never a
silent 0; a submission with load problems that was still graded is "graded" with the problems in
the note column.

Resume: every file is written atomically, and each report records a fingerprint of the
submission's bytes, course.yml, the options and the grader's code. Running the same command again
(after a kill, or after a few students resubmitted) grades only what is missing or changed;
--force regrades everything. Two batches cannot write to the same DIR at once.

Parallelism (local): --workers N cores (default: all). --parallel submissions (default) runs N
grading processes, each importing torch once and grading one submission after another; --parallel
exercises runs one process that grades the exercises of a submission N at a time.

Cluster: --dask-scheduler tcp://HOST:8786 sends each submission as a task to a Dask cluster, where
it is graded by `python -m autograder grade` in a subprocess (sandboxed as on one machine); the
results are written here exactly as in the local mode. See README, "Grading a whole class".

Exit status: 0 when the batch finished (whatever the scores and errors), 2 when it could not
start (no such folder, no submissions, bad course.yml, scheduler unreachable), 130 when
interrupted (run again to resume)."""


def add_parser(sub):
    import argparse

    b = sub.add_parser("grade-batch", help="grade a folder of submissions (nbgrader or flat); CSV, JSON, Gradescope",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("submissions", metavar="SUBMISSIONS",
                   help="course root or submitted/ folder (nbgrader), or a folder of .py/.ipynb files and folders")
    b.add_argument("--out", metavar="DIR", default="grades", help="output folder (default: ./grades)")
    b.add_argument("--layout", choices=["auto", "nbgrader", "flat"], default="auto",
                   help="how SUBMISSIONS is organised (default: auto-detect)")
    b.add_argument("--assignment", metavar="NAME", help="nbgrader: the assignment to grade (needed if several)")
    b.add_argument("--workers", type=int, metavar="N", help="cores to use locally (default: number of cores)")
    b.add_argument("--parallel", choices=["submissions", "exercises"], default=PARALLEL_DEFAULT,
                   help="grade N submissions at a time, one exercise at a time each (default), "
                        "or one submission at a time with N exercises in parallel")
    b.add_argument("--force", action="store_true", help="regrade every submission, even those with an up-to-date report")
    b.add_argument("--no-reuse", action="store_true",
                   help="grade every exercise of every submission, even when its code is the same as one already "
                        "graded with every test passed (see autograder/sandbox/reuse.py; the scores are the same)")
    b.add_argument("--dask-scheduler", metavar="ADDRESS",
                   help="grade on a Dask cluster (e.g. tcp://HOST:8786) instead of locally")
    b.add_argument("--skip-check", action="store_true", help=argparse.SUPPRESS)
    b.add_argument("--course", metavar="DIR", help="course folder or its course.yml (default: the nearest course.yml "
                                                    "in the current folder or above it, else the built-in course)")
    b.add_argument("--exercise", action="append", metavar="ID", help="grade only this exercise (repeatable)")
    b.add_argument("--language", choices=["zh", "en", "both"], help="feedback language (overrides course.yml)")
    b.add_argument("--max-examples", type=int, help="hypothesis examples per property (overrides course.yml)")
    b.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar and no line per submission on stderr (the summary is still printed)")
    b.set_defaults(func=run_batch)
    return b


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2])
    else:
        sys.exit("usage: python -m autograder grade-batch --help")
