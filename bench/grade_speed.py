"""Benchmark: how long `grade` takes on one submission, beyond importing torch, and where it goes.

    .venv/bin/python bench/grade_speed.py [--runs 3] [--workers N] [--no-phases] [--profile] [SUBMISSION]

1. The whole command (median of --runs): `python -c "import torch"` and `python -m autograder
   grade SUBMISSION`, wall time and CPU time.  CPU time is that of every process of the command
   (grading processes, judges, zygotes, sandboxed workers, watchdogs), measured with a cpuacct
   cgroup when this machine lets us make one (root, cgroup v1); otherwise only the processes the
   command waited for are counted (its judges: the workers' CPU is missing) and it says so.
   CPU time is the honest number on a busy machine: wall time depends on what else runs.
2. Phases (unless --no-phases): each exercise graded here, one after the other, exactly as a
   judge of grade-batch does (a Zygote, a sandboxed worker, the properties through RemoteStudent,
   on the examples its grading process drew once for every submission), with:
     start    forking the zygote, spawning the worker (limits applied) and running the submission
     tests    the properties through the sandbox: wall, the judge's CPU, the worker's CPU
     rpc      requests the judge sent, bytes of arrays both ways, time the judge was blocked
              receiving answers (the worker's compute + latency + parsing)
     bare     the same properties in this process with no sandbox (hypothesis, torch references
              and the student's code only): what the sandbox cannot make faster
3. --profile: a cProfile of the judge side of the phases, by category (hypothesis, torch, the
   properties, the sandbox's framing, waiting for the worker...).  cProfile slows pure-Python
   code much more than torch kernels: read the shares, not the seconds.

Default submission: solutions/.  The grader that runs is the one of the tree this script lives in.
"""

import argparse
import collections
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CPUACCT = Path("/sys/fs/cgroup/cpuacct")


class CpuMeter:
    """CPU seconds of a command and all its descendants (a cpuacct cgroup), or of the processes
    it waited for (rusage) when no cgroup can be made."""

    def __init__(self):
        self.path = None
        if CPUACCT.is_dir() and os.access(CPUACCT, os.W_OK):
            path = CPUACCT / f"seqgrader-bench-{os.getpid()}"
            try:
                path.mkdir(exist_ok=True)
                self.path = path
            except OSError:
                pass
        self.kind = (
            "all processes (cpuacct cgroup)"
            if self.path
            else "waited-for processes only (no cpuacct cgroup: the sandboxed workers are not counted)"
        )

    def run(self, cmd, **kw):
        """(wall seconds, CPU seconds) of `cmd`."""

        def enter():
            if self.path:
                (self.path / "cgroup.procs").write_text(str(os.getpid()))

        before = self._usage()
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, preexec_fn=enter, **kw)
        if proc.returncode:
            sys.exit(f"{cmd} failed ({proc.returncode}):\n{proc.stderr.decode(errors='replace')[-2000:]}")
        wall = time.perf_counter() - t
        if self.path:
            time.sleep(0.3)  # leftovers (watchdogs) finish after the command returns
            return wall, self._usage() - before
        ru2 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (ru2.ru_utime - ru.ru_utime) + (ru2.ru_stime - ru.ru_stime)

    def _usage(self):
        if not self.path:
            return 0.0
        return int((self.path / "cpuacct.usage").read_text()) / 1e9

    def close(self):
        if self.path:
            for _ in range(50):
                try:
                    self.path.rmdir()
                    return
                except OSError:
                    time.sleep(0.1)


def whole_command(args):
    meter = CpuMeter()
    py = sys.executable
    try:
        imp = [meter.run([py, "-c", "import torch"]) for _ in range(args.runs)]
        out = Path(tempfile.mkdtemp()) / "r.json"
        cmd = [py, "-m", "autograder", "grade", args.submission, "--json", str(out), "-q"]
        if args.workers:
            cmd += ["--workers", str(args.workers)]
        full = [meter.run(cmd) for _ in range(args.runs)]
    finally:
        meter.close()
    report = json.loads(out.read_text())
    med = lambda xs, i: statistics.median(x[i] for x in xs)  # noqa: E731
    n_tests = sum(len(e["tests"]) for e in report["exercises"])
    print(
        f"submission             {args.submission}  (score {report['score']:g}/{report['max_score']:g}, "
        f"{len(report['exercises'])} exercises, {n_tests} tests)"
    )
    print(f"CPU time counts        {meter.kind}")
    print(f"{'':22} {'wall':>8} {'CPU':>8}   (median of {args.runs}; load average {os.getloadavg()[0]:.1f})")
    print(f"import torch           {med(imp, 0):7.2f}s {med(imp, 1):7.2f}s")
    print(f"grade, whole command   {med(full, 0):7.2f}s {med(full, 1):7.2f}s")
    print(f"grade beyond torch     {med(full, 0) - med(imp, 0):7.2f}s {med(full, 1) - med(imp, 1):7.2f}s")
    print(f"grading inside         {report['seconds']:7.2f}s            (last run, from the report)")
    return report


def _proc_cpu(pid):
    """CPU seconds of a live process, from /proc (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def phases(args, profile=None):
    sys.path.insert(0, str(ROOT))
    import torch

    from autograder.config import load_course
    from autograder.judge import runner as R
    from autograder.judge.remote import RemoteStudent, Zygote
    from autograder.load import find_files, read_sources
    from autograder.properties import REGISTRY, Student, load_all
    from autograder.properties._harness import grading_profile
    from autograder.sandbox import protocol as P

    course = load_course(None)
    path = args.submission
    t = time.perf_counter()
    grading_profile(course.max_examples)  # before the properties are imported: @given keeps it
    load_all()
    torch.set_num_threads(1)
    R._warm_up()
    grading_profile(course.max_examples)  # as run_many: the examples are recorded under the judges' settings
    from autograder.properties._harness import prepare, record

    props = [REGISTRY[f"{ex}/{n}"] for ex in course.assignment(None) for n in course.exercises[ex].tests]
    prepare(props)
    record(props)  # as a grading process of grade-batch does, once for all its submissions
    warm = time.perf_counter() - t
    exercises = course.assignment(None)
    sources, read_errors, root = read_sources(path)
    roots = [str(p) for p in find_files(path)]
    options = {"remove_workdir": True, "submission": os.path.abspath(path), "hide": R.hidden_paths(path, course)}
    from autograder.sandbox import server

    t = time.perf_counter()
    server.connect()  # this process's sandbox server, started once
    started = time.perf_counter() - t
    print(
        f"\nphases (one exercise after the other in this process; parent's imports + warm-up {warm:.2f}s; "
        f"sandbox server {started:.2f}s)"
    )
    print(
        f"{'exercise':22} {'tests':>5} {'start':>7} | {'tests':>7} {'judge':>7} {'worker':>7} | "
        f"{'frames':>6} {'KiB':>7} {'waited':>7} {'ms/rpc':>6} | {'bare':>7} {'bare':>7}"
    )
    print(
        f"{'':22} {'':>5} {'wall':>7} | {'wall':>7} {'CPU':>7} {'CPU':>7} | "
        f"{'sent':>6} {'moved':>7} {'':>7} {'':>6} | {'wall':>7} {'CPU':>7}"
    )
    tot = collections.Counter()
    for ex in exercises:
        names = list(course.exercises[ex].tests)
        grading_profile(course.max_examples)
        stats = _count_frames(P)
        t0 = time.perf_counter()
        zygote = Zygote(sources, read_errors, root, roots, options)
        student = RemoteStudent(zygote, ex, course.load_timeout, read_errors)
        try:
            student.start()
        except Exception:  # noqa: BLE001 - every test will report it
            pass
        t1 = time.perf_counter()
        c1 = time.process_time()
        if profile:
            profile.enable()
        outcomes = [R.run_one(REGISTRY[f"{ex}/{n}"], student, course.exercises[ex].tests[n].timeout) for n in names]
        if profile:
            profile.disable()
        t2, c2 = time.perf_counter(), time.process_time()
        worker_cpu = _proc_cpu(student.pid) if student.pid else 0.0
        _count_frames(P, stop=True)
        student.abort()
        zygote.close()
        # the same properties with no sandbox at all
        sub, _ = R._load(path, course.load_timeout)
        bare = Student(sub, roots, ex)
        t3, c3 = time.perf_counter(), time.process_time()
        bare_out = [R.run_one(REGISTRY[f"{ex}/{n}"], bare, course.exercises[ex].tests[n].timeout) for n in names]
        t4, c4 = time.perf_counter(), time.process_time()
        same = [o["status"] for o in outcomes] == [o["status"] for o in bare_out]
        row = dict(
            n=len(names),
            start=t1 - t0,
            wall=t2 - t1,
            judge=c2 - c1,
            worker=worker_cpu,
            frames=stats["frames"],
            kib=stats["bytes"] / 1024,
            waited=stats["waited"],
            bare_wall=t4 - t3,
            bare_cpu=c4 - c3,
        )
        tot.update(row)
        print(_row(ex + ("" if same else " (!)"), row))
    print(_row("total", tot))
    print(
        "start: zygote + worker + limits + the submission's top-level code; judge/worker CPU: "
        "the properties through the sandbox;\nwaited: the judge blocked for answers (worker "
        "compute + latency); bare: no sandbox at all; (!): outcomes differ from bare"
    )
    return tot


def _count_frames(P, stop=False):
    """Count the judge's frames by wrapping the protocol's send / recv (Channel's methods, or the
    module's functions in a grader without Channel); returns the counter: frames sent, bytes of
    arrays both ways, seconds blocked in recv."""
    owner = getattr(P, "Channel", P)
    if stop:
        owner.send, owner.recv = P._bench_orig
        return None
    stats = collections.Counter()
    send, recv = P._bench_orig = (owner.send, owner.recv)

    def counting_send(sock, header, arrays=()):
        stats["frames"] += 1
        stats["bytes"] += sum(getattr(a, "nbytes", None) or len(a) for a in arrays)
        return send(sock, header, arrays)

    def counting_recv(sock, *a, **k):
        t = time.perf_counter()
        header, arrays = recv(sock, *a, **k)
        stats["waited"] += time.perf_counter() - t
        stats["bytes"] += sum(getattr(x, "nbytes", 0) for x in arrays)
        return header, arrays

    owner.send, owner.recv = counting_send, counting_recv
    return stats


def _row(name, r):
    frames = r["frames"]
    ms = 1000 * r["waited"] / frames if frames else 0.0
    return (
        f"{name:22} {r['n']:5d} {r['start']:6.3f}s | {r['wall']:6.3f}s {r['judge']:6.3f}s {r['worker']:6.2f}s | "
        f"{r['frames']:6d} {r['kib']:7.0f} {r['waited']:6.3f}s {ms:6.2f} | {r['bare_wall']:6.3f}s {r['bare_cpu']:6.3f}s"
    )


CATEGORIES = [  # (category, test on the profile entry's file / function name), first match wins
    ("waiting for the worker", lambda f, fn: f == "~" and ("recv" in fn or "sendall" in fn or "select" in fn)),
    ("sandbox framing (protocol, remote)", lambda f, fn: "autograder/sandbox" in f),
    ("hypothesis", lambda f, fn: "/hypothesis/" in f),
    ("properties + harness", lambda f, fn: "autograder/properties" in f or f.endswith("/properties.py")),
    (
        "torch (Python and kernels)",
        lambda f, fn: "/torch/" in f or "torch." in fn or "TensorBase" in fn or "torch._C" in fn,
    ),
    ("numpy", lambda f, fn: "/numpy/" in f or "numpy" in fn),
    ("student code", lambda f, fn: "solutions/" in f or "submissions/" in f),
]


def print_profile(profile):
    import pstats

    st = pstats.Stats(profile)
    by = collections.Counter()
    for (f, _line, fn), (_cc, _nc, tt, _ct, _callers) in st.stats.items():
        cat = next((c for c, test in CATEGORIES if test(f, fn)), "other (stdlib, ...)")
        by[cat] += tt
    total = sum(by.values())
    print(f"\njudge-side profile of the phases' sandboxed tests ({total:.2f}s under cProfile)")
    for cat, s in by.most_common():
        print(f"  {cat:36} {s:7.2f}s {100 * s / total:5.1f}%")
    print("  top functions by own time:")
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:12]
    for (f, line, fn), (_cc, nc, tt, _ct, _callers) in rows:
        where = f"{Path(f).name}:{line}({fn})" if f != "~" else fn
        print(f"    {tt:6.2f}s {nc:8d}  {where[:90]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("submission", nargs="?", default=str(ROOT / "solutions"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--no-command", action="store_true", help="skip the whole-command timing")
    ap.add_argument("--no-phases", action="store_true", help="skip the per-phase breakdown")
    ap.add_argument("--profile", action="store_true", help="cProfile the judge side of the phases")
    args = ap.parse_args()
    args.submission = str(Path(args.submission).resolve())
    if not args.no_command:
        whole_command(args)
    if not args.no_phases:
        import cProfile

        profile = cProfile.Profile() if args.profile else None
        phases(args, profile)
        if profile:
            print_profile(profile)


if __name__ == "__main__":
    main()
