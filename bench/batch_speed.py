"""Benchmark: how to spread a batch over the cores (`grade-batch --parallel`).

    .venv/bin/python bench/batch_speed.py [--cores N] [--course FILE] [--rounds 1] [--only NAME] [--pool PxW]

Builds a class of 10 submissions from examples/submissions/ and solutions/ (two correct files,
two correct folders, two notebooks with mistakes, a file with two mistakes, carol's folder with an
endless loop, a corrupt notebook, a syntax error) and grades it with each strategy:

  submissions   N grading processes x ForkRunner(workers=1)   (grade-batch --parallel submissions)
  exercises     1 grading process   x ForkRunner(workers=N)   (grade-batch --parallel exercises)
  hybrid        N grading processes x ForkRunner(workers=N)   (not offered: for comparison)
  subprocess    N at a time, `python -m autograder grade` per submission (what a Dask task does)

and prints the wall time of the whole batch and per submission.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.batch import LocalPool, discover, grade_remote, submission_files  # noqa: E402
from autograder.config import DEFAULT_COURSE, load_course  # noqa: E402


def build_class(folder):
    ex = ROOT / "examples" / "submissions"
    shutil.copy(ex / "alice.py", folder / "alice.py")
    shutil.copy(ex / "alice.py", folder / "alice2.py")
    shutil.copy(ex / "bob.ipynb", folder / "bob.ipynb")
    shutil.copy(ex / "bob.ipynb", folder / "bob2.ipynb")
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
    ap.add_argument("--rounds", type=int, default=1,
                    help="run every strategy this many times, interleaved (A B A B ...); print the median")
    ap.add_argument("--only", action="append", help="strategy to run (repeatable)")
    ap.add_argument("--pool", action="append", default=[], metavar="PxW",
                    help="also run P grading processes x W exercises each (repeatable), e.g. 3x1")
    args = ap.parse_args()
    n = args.cores
    course = load_course(args.course)
    budget = sum(e.timeout + course.load_timeout + 5 for e in course.exercises.values()) + 60
    options = {"language": None, "max_examples": None, "exercises": list(course.exercises)}
    tmp = Path(tempfile.mkdtemp(prefix="batch-speed-"))
    (tmp / "class").mkdir()
    build_class(tmp / "class")
    _, items, _ = discover(tmp / "class")

    def pool(procs, per):
        return lambda: [res for _, res in LocalPool(procs, per, args.course, options, budget, tmp / "workers.log").run(items)]

    def subprocesses():
        text = Path(args.course).read_text()
        with ThreadPoolExecutor(n) as ex:
            return list(ex.map(lambda it: grade_remote(
                it.path.name, it.path.is_dir(), {r: p.read_bytes() for r, p in submission_files(it.path)},
                text, [], budget, str(it.path)), items))

    strategies = {
        "submissions": (f"{n} processes x 1 exercise", pool(n, 1)),
        "exercises": (f"1 process x {n} exercises", pool(1, n)),
        "hybrid": (f"{n} processes x {n} exercises", pool(n, n)),
        "subprocess": (f"{n} x `grade` subprocess", subprocesses),
    }
    for spec in args.pool:
        p_, w_ = (int(x) for x in spec.split("x"))
        strategies[spec] = (f"{p_} processes x {w_} exercises", pool(p_, w_))
    chosen = {k: v for k, v in strategies.items() if not args.only or k in args.only + args.pool}
    print(f"{len(items)} submissions, {n} cores, course {args.course}")
    times, scores = {k: [] for k in chosen}, {}
    for r in range(args.rounds):
        for name, (what, run) in chosen.items():
            load = os.getloadavg()[0]
            t = time.perf_counter()
            results = run()
            times[name].append(time.perf_counter() - t)
            scores[name] = sorted(r.get("report", {}).get("score", -1) for r in results)
            print(f"  round {r + 1} {name:<12} {times[name][-1]:7.1f} s  (load average before: {load:.1f})", flush=True)
    first = next(iter(scores.values()))
    for name, (what, _) in chosen.items():
        wall = statistics.median(times[name])
        same = "same scores" if scores[name] == first else f"SCORES DIFFER {scores[name]}"
        print(f"{name:<12} {what:<30} {wall:7.1f} s   {wall / len(items):6.2f} s/submission   "
              f"(median of {len(times[name])}; {same})", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
