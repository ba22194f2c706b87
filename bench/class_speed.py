"""Benchmark: a whole class graded with `grade-batch`, as a real class looks.

    .venv/bin/python bench/class_speed.py [--students 200] [--workers 2] [--seed 0] [--keep DIR]
                                          [--shared] [--compare K] [--kinds] [--dask [--pairs P]]

Generates N submissions of the first assignment (the five core exercises), each function drawn
the way a class writes them: most from the reference solution or one of the correct variants
written differently (tests/files/correct/alt*), one or two catalogued mistakes in most students
(autograder/exercises/*/mistakes.yml), a few submissions with an unloadable file (a syntax error) or an
endless loop.  Formats mix as in a class: a folder of one .py per exercise, one .py holding
everything, or a folder of notebooks (one cell per definition).  Every student writes every file
in their own way (bench/obfuscate.py: local names, docstrings and comments, layout, and a comment
of their own in every definition), so that no two students share a function byte for byte, as in
a real class: nothing graded for one student can be found again for another.
--shared grades the older class instead: the same recipes (the same seed draws the same ones)
without the rewriting, so that many students share functions byte for byte (every function comes
from a small pool).  The two classes must get the same scores (the same checksum).  Then it
grades them with `grade-batch --workers W` (a fresh output folder) and prints

  total        wall time of the command, CPU time of all its processes (cpuacct cgroup when this
               machine lets us make one)
  CPU split    the judges' and the workers' CPU (the reports' `timing`) and the rest
  wall split   worker start, tests and diagnosis
  start-up     from the start until the first submission is written (imports, warm-up)
  marginal     the time per submission after that: (last - first) / (N - 1), the figure that
               decides how long a class of 1,000 takes
  checksum     sha256 of every student's per-exercise scores and whether it was graded (the same
               class must give the same, and so must the same seed with and without --shared)
  self-check   how many of the reference's tests were run again because a student's test ended in
               an error the grading process had not seen yet (selfcheck.verify), and their time
  --compare K  grades K submissions alone with `grade` and checks the same scores in the two JSON
               reports (per exercise, total, graded or not; grades.csv leaves an ungraded row blank)
  --kinds      the CPU of each kind of process in the local run, sampled as --dask does (below)
  --dask       also grades the same class on a Dask LocalCluster of W single-thread workers
               (processes, as separate machines would be) with `grade-batch --dask-scheduler`, and
               prints, for both, the time per submission per core (wall x cores / N, and the
               marginal x cores) and whether the scores' checksums are equal, and, for both, the
               CPU of each kind of process (sampled with psutil every 0.25 s): the grading
               processes, their sandboxed children, the batch (`grade-batch`, the Dask client),
               the Dask workers, and this process (the LocalCluster's scheduler and nannies)
  --pairs P    with --dask: grade the class P times each way, local then Dask, and print each
               pair's ratio and their median (one pair's ratio moves by ~±10% on a 2-core machine
               with other work on it: where a loop lands near the end of the batch decides the tail)

Nothing here is a test; run it on a quiet machine.
"""

import argparse
import ast
import csv
import hashlib
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

EXERCISES = ["masks", "positional_encoding", "attention", "recurrent", "masked_loss"]
LOOP = "\n\ndef {name}(*args, **kwargs):  # never returns\n    while True:\n        pass\n"


def top_level_defs(source):
    """{name: source text} of the top-level functions and classes of a file."""
    tree = ast.parse(source)
    lines = source.splitlines()
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            start = node.lineno - 1 - len(node.decorator_list)
            out[node.name] = "\n".join(lines[start : node.end_lineno])
    return out


def ingredients():
    """Per exercise: the reference source, the correct variants of each function, the mistakes."""
    from autograder.catalogue import load_catalogue

    out = {}
    for ex in EXERCISES:
        ref = (ROOT / "solutions" / f"{ex}.py").read_text(encoding="utf-8")
        variants = {}
        for alt in sorted((ROOT / "tests" / "files" / "correct").glob(f"alt*/{ex}.py")):
            for name, text in top_level_defs(alt.read_text(encoding="utf-8")).items():
                variants.setdefault(name, []).append((alt.parent.name, text))
        mistakes = [e for _, e in load_catalogue(ex)]
        out[ex] = {"reference": ref, "functions": list(top_level_defs(ref)), "variants": variants, "mistakes": mistakes}
    return out


DISTINCT = ("rename", "comments", "format")  # what changes the bytes and never the behaviour


def signed(source, sid):
    """`source` with a comment of the student's own at the top of every top-level definition's body
    (a one-line function written the same way by two students is still two students' bytes)."""
    lines = source.splitlines()
    for node in sorted(ast.parse(source).body, key=lambda n: -n.lineno):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            first = node.body[0]
            indent = " " * first.col_offset
            lines.insert(first.lineno - 1, f"{indent}# written by student {sid:04d}")
    return "\n".join(lines) + "\n"


def student_files(rng, parts, sid, distinct=False):
    """{exercise: source} of one student, and what went into it."""
    n_wrong = rng.choices([0, 1, 2], weights=[35, 40, 25])[0]
    wrong = rng.sample(EXERCISES, n_wrong)
    loop = rng.random() < 0.02
    broken = rng.random() < 0.03
    files, recipe = {}, []
    for ex in EXERCISES:
        p = parts[ex]
        src = f"# submission of student {sid:04d}: {ex}\n" + p["reference"]
        for name in p["functions"]:  # some functions written another (correct) way
            if p["variants"].get(name) and rng.random() < 0.15:
                alt, text = rng.choice(p["variants"][name])
                src += f"\n\n# {name} written my own way\n{text}\n"
                recipe.append(f"{ex}.{name}={alt}")
        if ex in wrong:
            entry = rng.choice(p["mistakes"])
            src += f"\n\n# --- {entry['id']}\n{entry['code']}\n"
            recipe.append(f"{ex}:{entry['id']}")
        files[ex] = src
    if loop:
        ex = rng.choice(EXERCISES)
        name = rng.choice(parts[ex]["functions"])
        files[ex] += LOOP.format(name=name)
        recipe.append(f"{ex}.{name}=loop")
    if distinct:  # its own rng: the recipes stay those of the --shared class
        from obfuscate import obfuscate

        files = {
            ex: f"# submission of student {sid:04d}: {ex}\n"
            + signed(obfuscate(src, DISTINCT, random.Random(f"{sid}/{ex}")), sid)
            for ex, src in files.items()
        }
    if broken:
        ex = rng.choice(EXERCISES)
        files[ex] += "\n\ndef unfinished(:\n"
        recipe.append(f"{ex}=syntax error")
    return files, recipe


def shared_functions(klass):
    """How many top-level function texts appear, byte for byte, in the files of two students or more."""
    owners = {}
    for f in klass.rglob("*"):
        if f.suffix not in (".py", ".ipynb"):
            continue
        student = f.relative_to(klass).parts[0].split(".")[0]
        text = f.read_text(encoding="utf-8")
        if f.suffix == ".ipynb":
            text = "\n".join(c["source"] for c in json.loads(text)["cells"])
        try:
            defs = top_level_defs(text)
        except SyntaxError:
            continue
        for body in defs.values():
            owners.setdefault(body, set()).add(student)
    return sum(1 for who in owners.values() if len(who) > 1)


def notebook(source):
    cells = []
    try:
        tree = ast.parse(source)
        lines = source.splitlines()
        starts = [n.lineno - 1 - len(getattr(n, "decorator_list", [])) for n in tree.body] + [len(lines)]
        chunks = ["\n".join(lines[a:b]) for a, b in zip([0] + starts[1:-1], starts[1:])]
    except SyntaxError:  # a broken file stays one (broken) cell
        chunks = [source]
    for chunk in chunks:
        cells.append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": chunk})
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells})


def write_class(folder, n, seed, distinct=False):
    rng = random.Random(seed)
    parts = ingredients()
    recipes = {}
    for i in range(n):
        sid = f"s{i:04d}"
        files, recipe = student_files(rng, parts, i, distinct)
        kind = rng.choices(["folder", "single", "notebooks"], weights=[50, 30, 20])[0]
        if kind == "single":
            (folder / f"{sid}.py").write_text("\n\n".join(files[ex] for ex in EXERCISES), encoding="utf-8")
        else:
            d = folder / sid
            d.mkdir()
            for ex, src in files.items():
                if kind == "folder":
                    (d / f"{ex}.py").write_text(src, encoding="utf-8")
                else:
                    (d / f"{ex}.ipynb").write_text(notebook(src), encoding="utf-8")
        recipes[sid] = {"format": kind, "recipe": recipe}
    return recipes


class ProcessCpu:
    """CPU seconds of this process and its descendants by kind, sampled every 0.25 s (a process
    that ends between two samples loses at most its last 0.25 s; the sampling itself is counted in
    "this process").  Kinds come from command lines, as `ps` shows them."""

    def __init__(self):
        import threading

        import psutil

        self.me = psutil.Process()
        self.seen = {}  # pid -> (kind, cpu seconds)
        self.stopped = threading.Event()
        self.base = self._cpu(self.me)
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    @staticmethod
    def _cpu(p):
        t = p.cpu_times()
        return t.user + t.system

    def _kind(self, p):
        if p.pid == self.me.pid:
            return "this process (scheduler, nannies)"
        cmd = " ".join(p.cmdline()).strip()  # a sandboxed process blanks its arguments
        if "autograder.batch" in cmd and "--grading-process" in cmd:
            return "grading processes (judges, zygotes)"
        if "grade-batch" in cmd:
            return "the batch / Dask client"
        if "multiprocessing" in cmd:
            return "Dask workers"
        return "sandboxed processes (student code)" if not cmd else "other"

    def _sample(self):
        while not self.stopped.wait(0.25):
            for p in [self.me] + self.me.children(recursive=True):
                try:
                    kind = self.seen[p.pid][0] if p.pid in self.seen else self._kind(p)
                    self.seen[p.pid] = (kind, self._cpu(p) - (self.base if p is self.me else 0.0))
                except Exception:  # noqa: BLE001 - gone between listing and reading
                    pass

    def stop(self):
        """{kind: CPU seconds}"""
        self.stopped.set()
        self.thread.join()
        out = {}
        for kind, cpu in self.seen.values():
            out[kind] = out.get(kind, 0.0) + cpu
        return out


def cpu_meter():
    from grade_speed import CpuMeter

    return CpuMeter()


def graded_times(log):
    """Timestamps (datetime) of the submissions written by the last run in batch.log."""
    lines = log.read_text(encoding="utf-8").splitlines()
    start = max(i for i, ln in enumerate(lines) if " start: " in ln)
    return [datetime.fromisoformat(ln.split()[0]) for ln in lines[start:] if " graded " in ln]


def start_and_marginal(log, t0):
    """(seconds from t0 until the first submission was written, seconds per submission after it)."""
    times = graded_times(log)
    first = (min(times) - t0).total_seconds() if times else float("nan")
    span = (max(times) - min(times)).total_seconds() if len(times) > 1 else float("nan")
    return first, span / (len(times) - 1) if len(times) > 1 else float("nan")


def report_timing(out):
    """({timing key: sum over the reports, the largest for a peak}, exercises graded) of a grade-batch output."""
    split, graded_ex = {}, 0
    for p in (out / "reports").glob("*.json"):
        rep = json.loads(p.read_text(encoding="utf-8"))
        for k, v in (rep.get("timing") or {}).items():
            split[k] = max(split.get(k, 0.0), v) if k.endswith("_peak_mib") else split.get(k, 0.0) + v
        graded_ex += len(rep.get("exercises", []))
    return split, graded_ex


def outcome(out, t0):
    """What both modes report of a grade-batch output folder (the run started at `t0`): start-up,
    marginal, the scores' checksum and rows, the grading processes that graded a submission, and
    the reports' timing summed (split), exercises graded."""
    lines = (out / "batch.log").read_text(encoding="utf-8").splitlines()
    start = max(i for i, ln in enumerate(lines) if " start: " in ln)
    procs = {m.group(1) for ln in lines[start:] if (m := re.search(r" process=(\S+)#\d+", ln))}
    checks = [m for ln in lines[start:] if (m := re.search(r" checked=(\d+)@([\d.]+)s", ln))]
    first, marginal = start_and_marginal(out / "batch.log", t0)
    digest, rows = checksum(out / "grades.csv")
    split, graded = report_timing(out)
    return {
        "first": first,
        "marginal": marginal,
        "checksum": digest,
        "rows": rows,
        "processes": len(procs),
        "split": split,
        "graded": graded,
        "checked": (len(checks), sum(int(m.group(1)) for m in checks), sum(float(m.group(2)) for m in checks)),
    }


def ratios(local, remote):
    """(overall, marginal): Dask's time over the local pool's."""
    return remote["wall"] / local["wall"], remote["marginal"] / local["marginal"]


def grade_locally(klass, out, args):
    """`grade-batch --workers W` on the class (a fresh output folder): its times, CPU and scores."""
    if out.exists():
        shutil.rmtree(out)
    meter = cpu_meter()
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "grade-batch",
        str(klass),
        "--out",
        str(out),
        "--workers",
        str(args.workers),
        "-q",
    ]
    sampler = ProcessCpu() if args.dask or args.kinds else None
    t0 = datetime.now()
    wall, cpu = meter.run(cmd)
    meter.close()
    kinds = sampler.stop() if sampler else None
    return {
        "wall": wall,
        "cpu": cpu,
        "meter": meter.kind,
        "complete": meter.path is not None,
        "kinds": kinds,
        **outcome(out, t0),
    }


def checksum(grades_csv):
    rows = sorted(csv.DictReader(open(grades_csv, encoding="utf-8")), key=lambda r: r["student"])
    text = "\n".join(
        ",".join([*(r[k] for k in ["student", *EXERCISES, "total"]), r["status"].split(":")[0]]) for r in rows
    )  # graded or not (the reason names a line, which the rewriting moves)
    return hashlib.sha256(text.encode()).hexdigest()[:16], rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", metavar="DIR", help="generate the class (and the grades) here and keep them")
    ap.add_argument(
        "--shared",
        action="store_true",
        help="the older class: the same recipes without each student's rewriting, so that many "
        "students share functions byte for byte",
    )
    ap.add_argument(
        "--compare",
        type=int,
        default=0,
        metavar="K",
        help="also grade K random submissions alone with `grade` and compare the scores",
    )
    ap.add_argument(
        "--kinds",
        action="store_true",
        help="also print the CPU of each kind of process in the local run (sampled with psutil; --dask always does)",
    )
    ap.add_argument(
        "--dask",
        action="store_true",
        help="also grade the class on a Dask LocalCluster with --workers single-thread workers and "
        "compare the time per submission per core",
    )
    ap.add_argument(
        "--pairs",
        type=int,
        default=1,
        metavar="P",
        help="with --dask: grade the class P times each way and print the ratios' median",
    )
    args = ap.parse_args()
    if args.pairs < 1 or (args.pairs > 1 and not args.dask):
        ap.error("--pairs P needs P >= 1, and --dask when P > 1")

    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="class-speed-"))
    klass, out = base / "class", base / "grades"
    if klass.exists():
        shutil.rmtree(klass)
    klass.mkdir(parents=True)
    recipes = write_class(klass, args.students, args.seed, distinct=not args.shared)
    digests = {hashlib.sha256(p.read_bytes()).hexdigest() for p in klass.rglob("*") if p.is_file()}
    kinds = {k: sum(1 for r in recipes.values() if r["format"] == k) for k in ("folder", "single", "notebooks")}
    wrong = sum(1 for r in recipes.values() for x in r["recipe"] if ":" in x)
    print(
        f"class: {args.students} submissions ({'shared' if args.shared else 'distinct'}) in {klass} ({kinds}); {wrong} catalogued mistakes, "
        f"{sum(1 for r in recipes.values() for x in r['recipe'] if x.endswith('=loop'))} endless loops, "
        f"{sum(1 for r in recipes.values() for x in r['recipe'] if x.endswith('syntax error'))} syntax errors; "
        f"{len(digests)} distinct files; {shared_functions(klass)} functions shared byte for byte by two "
        f"students or more"
    )
    (base / "recipes.json").write_text(json.dumps(recipes, indent=1), encoding="utf-8")

    local = grade_locally(klass, out, args)
    wall, cpu, first, marginal, digest, rows = (
        local[k] for k in ("wall", "cpu", "first", "marginal", "checksum", "rows")
    )
    print(
        f"total        {wall:.1f} s wall, {cpu:.1f} s CPU ({local['meter']}); {wall / args.students:.2f} s per submission"
    )
    print(f"start-up     {first:.1f} s until the first submission was written")
    print(
        f"marginal     {marginal:.2f} s per submission after that (--workers {args.workers}); "
        f"a class of 1,000: {(first + marginal * 999) / 60:.1f} min"
    )
    errors = sum(1 for r in rows if r["status"] != "graded")
    split, graded_ex = local["split"], local["graded"]
    judge, worker = split.get("judge_cpu", 0.0), split.get("worker_cpu", 0.0)
    rest = cpu - judge - worker
    if local["complete"] and rest >= 0:
        print(
            f"CPU split    judges {judge:.1f} s, workers {worker:.1f} s, the rest {rest:.1f} s "
            f"(grading processes' start-up, sandbox servers and zygotes, the batch process: discovery, "
            f"reports, dashboard); per submission {judge / args.students:.2f} + {worker / args.students:.2f} + "
            f"{rest / args.students:.2f} s"
        )
    else:  # the total misses the sandboxed workers (reaped by their zygotes): the rest would be wrong
        print(
            f"CPU split    judges {judge:.1f} s, workers {worker:.1f} s, the rest not measured (no cpuacct "
            f"cgroup here, so the total counts only the processes waited for); per submission "
            f"{judge / args.students:.2f} + {worker / args.students:.2f} s"
        )
    print(
        f"wall split   worker start {split.get('start', 0):.1f} s, tests {split.get('tests', 0):.1f} s, "
        f"diagnosis {split.get('diagnosis', 0):.1f} s (summed over {graded_ex} exercises); the largest judge "
        f"held {split.get('judge_peak_mib', 0):.0f} MiB"
    )
    print(f"checksum     {digest}  ({len(rows)} rows, {errors} not graded)")
    subs, tests, secs = local["checked"]
    print(
        f"self-check   {tests} tests of the reference run again for {subs} submissions whose errors were new to "
        f"their grading process ({secs:.1f} s of wall in all); the check before the first score: see batch.log"
    )
    if args.kinds:
        n = args.students
        print(
            "CPU by kind  "
            + "; ".join(
                f"{k} {v:.1f} s ({v / n:.2f} per submission)"
                for k, v in sorted(local["kinds"].items(), key=lambda kv: -kv[1])
            )
            + f"; the sandboxed workers' own CPU, from the judges: {worker:.1f} s ({worker / n:.2f} per submission)"
        )
    if args.compare:
        rng = random.Random(args.seed + 1)
        sample = rng.sample(sorted(recipes), min(args.compare, len(recipes)))

        def scores(report_file):  # what a score means: per exercise, the total, and whether it was graded
            rep = json.loads(report_file.read_text(encoding="utf-8"))
            return {
                **{e["id"]: e["score"] for e in rep["exercises"]},
                "total": rep["score"],
                "graded": rep.get("graded", True),
            }

        same = 0
        for sid in sample:  # the JSON reports, not grades.csv: its cells are blank where nothing was graded
            path = klass / sid if (klass / sid).exists() else klass / f"{sid}.py"
            rep = base / f"alone-{sid}.json"
            subprocess.run(
                [sys.executable, "-m", "autograder", "grade", str(path), "--json", str(rep), "-q"],
                cwd=ROOT,
                check=False,
            )
            alone, batch = scores(rep), scores(out / "reports" / f"{sid}.json")
            ok = alone == batch
            same += ok
            if not ok:
                print(f"  DIFFERENT {sid}: grade {alone} vs grade-batch {batch}")
        print(f"compare      {same} / {len(sample)} submissions: the same scores alone and in the batch")
    if args.dask:
        remote = grade_on_dask(klass, base / "grades-dask", args)
        print(
            f"\nper core     (--workers {args.workers} local processes vs a LocalCluster of {args.workers} "
            f"single-thread workers; s per submission per core)"
        )
        for name, r in (("local", local), ("dask", remote)):
            print(
                f"  {name:6s} {r['wall']:.1f} s wall, {r['first']:.1f} s until the first; "
                f"{r['wall'] * args.workers / args.students:.2f} s per submission per core overall, "
                f"{r['marginal'] * args.workers:.2f} marginal; checksum {r['checksum']}; "
                f"{r['processes']} grading processes"
            )
        print(
            "  ratio  dask / local: {:.2f} overall, {:.2f} marginal; checksums ".format(*ratios(local, remote))
            + ("EQUAL" if remote["checksum"] == local["checksum"] else "DIFFERENT")
        )
        print("  CPU by kind of process (s)       local     dask")
        for kind in sorted(set(local["kinds"]) | set(remote["kinds"]), key=lambda k: -remote["kinds"].get(k, 0)):
            print(f"    {kind:36s} {local['kinds'].get(kind, 0):6.1f}   {remote['kinds'].get(kind, 0):6.1f}")
        print(f"    {'total':36s} {sum(local['kinds'].values()):6.1f}   {sum(remote['kinds'].values()):6.1f}")
        pairs = [(local, remote)]
        for i in range(2, args.pairs + 1):
            pairs.append((grade_locally(klass, out, args), grade_on_dask(klass, base / "grades-dask", args)))
            a, b = pairs[-1]
            print(
                f"  pair {i}: local {a['wall']:.1f} s, Dask {b['wall']:.1f} s wall; ratio "
                + "{:.2f} overall, {:.2f} marginal".format(*ratios(a, b))
                + f"; CPU {sum(a['kinds'].values()):.1f} / "
                f"{sum(b['kinds'].values()):.1f} s; grading processes {a['processes']} / {b['processes']}; checksums "
                + ("EQUAL" if a["checksum"] == b["checksum"] == local["checksum"] else "DIFFERENT")
            )
        if len(pairs) > 1:
            over, marg = (sorted(r) for r in zip(*(ratios(a, b) for a, b in pairs)))
            print(
                f"  {len(pairs)} pairs, dask / local: marginal median {statistics.median(marg):.2f} "
                f"(mean {statistics.mean(marg):.2f}, {marg[0]:.2f}-{marg[-1]:.2f}), overall median "
                f"{statistics.median(over):.2f} (mean {statistics.mean(over):.2f}, {over[0]:.2f}-{over[-1]:.2f})"
            )
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)


def grade_on_dask(klass, out, args):
    """The same class graded on a LocalCluster of --workers single-thread worker processes (its
    start-up not counted: a cluster is up before a batch); wall times as in the local run."""
    from distributed import LocalCluster

    if out.exists():
        shutil.rmtree(out)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        cmd = [
            sys.executable,
            "-m",
            "autograder",
            "grade-batch",
            str(klass),
            "--out",
            str(out),
            "--dask-scheduler",
            cluster.scheduler_address,
            "-q",
        ]
        sampler = ProcessCpu()  # the cluster's start-up not counted (above)
        t0 = datetime.now()
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - start
        kinds = sampler.stop()
    if proc.returncode:
        sys.exit(f"{cmd} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return {"wall": wall, "kinds": kinds, **outcome(out, t0)}


if __name__ == "__main__":
    main()
