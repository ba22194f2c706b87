"""Benchmark: how to spread a batch over the cores (`grade-batch --parallel`).

    .venv/bin/python bench/batch_speed.py [--cores N] [--course FILE] [--rounds 1] [--only NAME] [--pool PxW]
                                          [--no-loop] [--copies K]

Builds a class of 10 submissions from examples/submissions/ and solutions/ (two correct files,
two correct folders, two notebooks with mistakes, a file with two mistakes, carol's folder with an
endless loop, a corrupt notebook, a syntax error) and grades it with each strategy:

  submissions   N grading processes x ForkRunner(workers=1)   (grade-batch --parallel submissions)
  exercises     1 grading process   x ForkRunner(workers=N)   (grade-batch --parallel exercises)
  hybrid        N grading processes x ForkRunner(workers=N)   (not offered: for comparison)

(No mode runs a `python -m autograder grade` subprocess per submission: the Dask path grades in
the worker's own pool of grading processes, and bench/class_speed.py --dask measures it.)

and prints the wall time of the whole batch and per submission, and the CPU time of every
process of the batch (grading processes, judges, zygotes, sandboxed workers: a cpuacct cgroup
this script joins when the machine lets it; otherwise only the processes waited for), which is the
honest number on a machine where other work runs.  Per strategy it also prints where the time
went, from the reports: seconds inside the properties (sum of the tests' own times), seconds of
tests that timed out (carol's endless loop), and the rest (start-up, loading, reports).
--no-loop leaves carol out (the class then measures grading, not a time-out); --copies K grades
K copies of the class (a larger batch amortises the start of the grading processes).
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.batch import LocalPool, discover  # noqa: E402
from autograder.config import DEFAULT_COURSE, load_course  # noqa: E402

CPUACCT = Path("/sys/fs/cgroup/cpuacct")


class CpuMeter:
    """CPU seconds of this process and everything it starts from now on: a cpuacct cgroup this
    process joins (children inherit it; sandboxed workers join only v2 / pids cgroups), or
    rusage of the children waited for when no cgroup can be made."""

    def __init__(self):
        self.path = None
        if CPUACCT.is_dir() and os.access(CPUACCT, os.W_OK):
            path = CPUACCT / f"seqgrader-batch-bench-{os.getpid()}"
            try:
                path.mkdir(exist_ok=True)
                (path / "cgroup.procs").write_text(str(os.getpid()))
                self.path = path
            except OSError:
                pass
        self.kind = (
            "every process of the batch (cpuacct cgroup)"
            if self.path
            else "processes waited for only (no cpuacct cgroup: sandboxed workers are missing)"
        )

    def usage(self):
        if self.path:
            return int((self.path / "cpuacct.usage").read_text()) / 1e9
        import resource

        ru, me = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
        return ru.ru_utime + ru.ru_stime + me.ru_utime + me.ru_stime

    def close(self):
        if self.path:
            try:
                (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
            except OSError:
                pass
            for _ in range(50):
                try:
                    self.path.rmdir()
                    return
                except OSError:
                    time.sleep(0.2)


def breakdown(results):
    """(seconds in the properties, seconds of timed-out tests, seconds of reports in all) summed
    over the reports of a batch."""
    props = timeouts = total = 0.0
    for r in results:
        rep = r.get("report") or {}
        total += rep.get("seconds") or 0.0
        for e in rep.get("exercises", []):
            for t in e.get("tests", []):
                if t.get("status") == "timeout":
                    timeouts += t.get("seconds") or 0.0
                else:
                    props += t.get("seconds") or 0.0
    return props, timeouts, total


def build_class(folder, loop=True):
    ex = ROOT / "examples" / "submissions"
    shutil.copy(ex / "alice.py", folder / "alice.py")
    shutil.copy(ex / "alice.py", folder / "alice2.py")
    shutil.copy(ex / "bob.ipynb", folder / "bob.ipynb")
    shutil.copy(ex / "bob.ipynb", folder / "bob2.ipynb")
    if loop:
        shutil.copytree(ex / "carol", folder / "carol")
    shutil.copy(ex / "dave.ipynb", folder / "dave.ipynb")
    shutil.copytree(ROOT / "solutions", folder / "sol")
    shutil.copytree(ROOT / "solutions", folder / "sol2")
    (folder / "syntax.py").write_text("def causal_mask(T:\n    pass\n")
    src = (ex / "alice.py").read_text()
    (folder / "erin.py").write_text(src.replace("/ math.sqrt(", "/ (").replace("dim=-1", "dim=-2", 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, default=os.cpu_count())
    ap.add_argument("--course", default=str(DEFAULT_COURSE))
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run every strategy this many times, interleaved (A B A B ...); print the median",
    )
    ap.add_argument("--only", action="append", help="strategy to run (repeatable)")
    ap.add_argument(
        "--pool",
        action="append",
        default=[],
        metavar="PxW",
        help="also run P grading processes x W exercises each (repeatable), e.g. 3x1",
    )
    ap.add_argument("--no-loop", action="store_true", help="leave carol's endless loop out of the class")
    ap.add_argument("--copies", type=int, default=1, help="grade this many copies of the class")
    args = ap.parse_args()
    n = args.cores
    course = load_course(args.course)
    budget = sum(e.timeout + course.load_timeout + 5 for e in course.exercises.values()) + 60
    options = {"language": None, "max_examples": None, "exercises": list(course.exercises)}
    tmp = Path(tempfile.mkdtemp(prefix="batch-speed-"))
    (tmp / "class").mkdir()
    for k in range(args.copies):
        build_class(tmp / "class" / f"copy{k}" if args.copies > 1 else tmp / "class", loop=not args.no_loop)
    if args.copies > 1:
        for k in range(args.copies):  # a flat class: copy0-alice.py, ...
            for p in sorted((tmp / "class" / f"copy{k}").iterdir()):
                p.rename(tmp / "class" / f"copy{k}-{p.name}")
            (tmp / "class" / f"copy{k}").rmdir()
    _, items, _ = discover(tmp / "class")

    def pool(procs, per):
        return lambda: [
            res for _, res in LocalPool(procs, per, args.course, options, budget, tmp / "workers.log").run(items)
        ]

    strategies = {
        "submissions": (f"{n} processes x 1 exercise", pool(n, 1)),
        "exercises": (f"1 process x {n} exercises", pool(1, n)),
        "hybrid": (f"{n} processes x {n} exercises", pool(n, n)),
    }
    for spec in args.pool:
        p_, w_ = (int(x) for x in spec.split("x"))
        strategies[spec] = (f"{p_} processes x {w_} exercises", pool(p_, w_))
    chosen = {k: v for k, v in strategies.items() if not args.only or k in args.only + args.pool}
    meter = CpuMeter()
    print(f"{len(items)} submissions, {n} cores, course {args.course}")
    print(f"CPU time counts {meter.kind}")
    times, cpus, parts, scores = {k: [] for k in chosen}, {k: [] for k in chosen}, {k: [] for k in chosen}, {}
    try:
        for r in range(args.rounds):
            for name, (_what, run) in chosen.items():
                load = os.getloadavg()[0]
                t, c = time.perf_counter(), meter.usage()
                results = run()
                if meter.path:
                    time.sleep(0.3)  # watchdogs finish after their worker
                times[name].append(time.perf_counter() - t)
                cpus[name].append(meter.usage() - c)
                parts[name].append(breakdown(results))
                scores[name] = sorted(r.get("report", {}).get("score", -1) for r in results)
                print(
                    f"  round {r + 1} {name:<12} {times[name][-1]:7.1f} s wall {cpus[name][-1]:7.1f} s CPU  "
                    f"(load average before: {load:.1f})",
                    flush=True,
                )
    finally:
        meter.close()
    first = next(iter(scores.values()))
    print(
        f"{'strategy':<12} {'':<30} {'wall':>8} {'per sub':>8} {'CPU':>8} {'per sub':>8} | "
        f"{'in props':>8} {'time-outs':>9} {'reports':>8}  (seconds summed over the reports)"
    )
    for name, (what, _) in chosen.items():
        wall, cpu = statistics.median(times[name]), statistics.median(cpus[name])
        props, touts, total = (statistics.median(p[i] for p in parts[name]) for i in range(3))
        same = "same scores" if scores[name] == first else f"SCORES DIFFER {scores[name]}"
        print(
            f"{name:<12} {what:<30} {wall:7.1f}s {wall / len(items):7.2f}s {cpu:7.1f}s {cpu / len(items):7.2f}s | "
            f"{props:7.1f}s {touts:8.1f}s {total:7.1f}s  (median of {len(times[name])}; {same})",
            flush=True,
        )
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
