"""GPU check: a machine with a GPU grades exactly as one without.

    .venv/bin/python bench/gpu_check.py [--out DIR] [--workers N] [--baseline FILE]
                                        [--write-baseline FILE] [--cases SUBSTRING ...]

Grades the reference solutions, every correct variant (tests/files/correct*/alt*) and every
catalogued mistake (autograder/exercises/*/mistakes.yml), each with its whole assignment, through
`grade-batch`, twice on a machine with CUDA: with the GPU visible, and with it hidden
(CUDA_VISIBLE_DEVICES=).  For every case it keeps the score, each test's status and English
message, and the catalogued mistakes the diagnosis named, and compares

  visible with hidden      they must be equal;
  each with --baseline     the same summary written on a machine without a GPU
                           (--write-baseline FILE there), which must be equal too;
  each with what is known  the reference and the correct variants get full marks, each mistake
                           loses points on one of the tests its entry expects.

It also runs `seqgrader self-check` in both, which says where the device sentences ran (cuda:0
with the GPU visible, the simulated device with it hidden).  Exit status 0 when everything
agrees, 1 otherwise (the differences are printed).  Without a GPU (a CPU build of torch, no
driver, or the GPU hidden) it grades once, to write --write-baseline or to compare this machine
with --baseline's, and otherwise says it was skipped.

--cases SUBSTRING keeps the cases whose name holds one of them (a quick look: reference, alt1,
padding_mask...).  Nothing here is a test: docs/benchmarks.md, "The same grades with a GPU".
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build_cases(base, wanted=()):
    """[(case name, assignment, submission folder)]: the reference (every assignment), the correct
    variants (the assignments whose exercises they hold), each catalogued mistake (its exercise's)."""
    from autograder.catalogue import build_submission, load_catalogue
    from autograder.config import load_course

    course = load_course()
    solutions = course.solutions_dir
    assignment_of = {ex: name for name in course.assignment_names() for ex in course.assignment(name)}
    out = []

    def full(dest, files=()):
        """The reference's files, with `files` (a variant's) put over them."""
        dest.mkdir(parents=True, exist_ok=True)
        for f in Path(solutions).glob("*.py"):
            shutil.copy(f, dest / f.name)
        for f in files:
            shutil.copy(f, dest / f.name)
        return dest

    for name in course.assignment_names():
        out.append(("reference", name, full(base / "reference")))
    for kind in ("correct", "correct_extra"):
        for folder in sorted((ROOT / "tests" / "files" / kind).glob("alt*")):
            files = sorted(folder.glob("*.py"))
            case = f"{kind}-{folder.name}"
            sub = full(base / case, files)
            for name in course.assignment_names():
                if any(f.stem in course.assignment(name) for f in files):
                    out.append((case, name, sub))
    for exercise, entry in load_catalogue():
        case = f"mistake-{entry['id']}"
        out.append((case, assignment_of[exercise], build_submission(exercise, entry, base / case, solutions)))
    if wanted:
        out = [c for c in out if any(w in c[0] for w in wanted)]
    return out


def summary(report):
    """What must not change between machines: score, each test's status and message, the diagnosis."""
    tests = {
        t["name"]: {
            "status": t["status"],
            "message": t.get("message_en", ""),
            "diagnosis": sorted(d.get("id") or "" for d in t.get("diagnosis") or []),
        }
        for e in report["exercises"]
        for t in e["tests"]
    }
    return {
        "score": report["score"],
        "max_score": report["max_score"],
        "graded": report.get("graded", True),
        "tests": tests,
    }


def grade_all(cases, out, env, workers):
    """{"<case> @ <assignment>": summary} of every case, graded by grade-batch under `env`."""
    from autograder.config import load_course

    course = load_course()
    by_assignment = {}
    for case, assignment, folder in cases:
        by_assignment.setdefault(assignment, []).append((case, folder))
    results, seconds = {}, 0.0
    for assignment, items in by_assignment.items():
        flat = out / "classes" / assignment
        shutil.rmtree(flat, ignore_errors=True)
        flat.mkdir(parents=True)
        for case, folder in items:
            shutil.copytree(folder, flat / case)
        grades = out / "grades" / assignment
        shutil.rmtree(grades, ignore_errors=True)
        exercises = [a for ex in course.assignment(assignment) for a in ("--exercise", ex)]
        t0 = time.monotonic()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "autograder",
                "grade-batch",
                str(flat),
                "--layout",
                "flat",
                *exercises,
                "--out",
                str(grades),
                "--workers",
                str(workers),
                "-q",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        seconds += time.monotonic() - t0
        if proc.returncode != 0:
            raise SystemExit(f"grade-batch failed for {assignment} ({proc.returncode}):\n{proc.stderr[-4000:]}")
        for case, _folder in items:
            report = json.loads((grades / "reports" / f"{case}.json").read_text(encoding="utf-8"))
            results[f"{case} @ {assignment}"] = summary(report)
    return results, seconds


def self_check(env):
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "self-check", "--json", "-"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        return {"passed": False, "message": proc.stderr[-2000:]}
    return {k: data.get(k) for k in ("passed", "score", "max_score", "seconds", "devices", "message")}


def differences(a, b, label):
    """Lines saying where two runs' summaries differ."""
    out = []
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            out.append(f"{label}: {key} graded in one run only")
            continue
        x, y = a[key], b[key]
        if (x["score"], x["graded"]) != (y["score"], y["graded"]):
            out.append(f"{label}: {key}: score {x['score']} / {y['score']}")
        for name in sorted(set(x["tests"]) | set(y["tests"])):
            tx, ty = x["tests"].get(name), y["tests"].get(name)
            if tx != ty:
                out.append(f"{label}: {key}: {name}: {tx} / {ty}")
    return out


def expectations(results):
    """Lines saying where a run breaks what is known: the reference and the correct variants get
    full marks, each catalogued mistake loses points on a test its entry expects."""
    from autograder.catalogue import load_catalogue

    expect = {f"mistake-{e['id']}": (ex, set(e["expect_failing"])) for ex, e in load_catalogue()}
    out = []
    for key, s in results.items():
        case = key.split(" @ ")[0]
        failed = {n for n, t in s["tests"].items() if t["status"] != "passed"}
        if case in expect:
            ex, want = expect[case]
            if not any(n.split("/", 1)[1] in want for n in failed if n.startswith(ex + "/")):
                out.append(f"{key}: not caught (failed: {sorted(failed)}; expected one of {sorted(want)})")
        elif failed:
            out.append(f"{key}: lost points on {sorted(failed)}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="work folder (default: a new one under /tmp, removed at the end)")
    ap.add_argument(
        "--workers", type=int, default=os.cpu_count() or 2, help="grade-batch --workers (default: all cores)"
    )
    ap.add_argument("--baseline", help="a summary written by --write-baseline on a machine without a GPU")
    ap.add_argument("--write-baseline", metavar="FILE", help="write this machine's summary (GPU hidden) to FILE")
    ap.add_argument("--cases", nargs="*", default=[], metavar="SUBSTRING", help="only the cases whose name holds one")
    args = ap.parse_args()

    import torch

    from autograder.sandbox import devices

    gpus = devices.visible()
    print(
        f"torch {torch.__version__} (CUDA build: {torch.version.cuda or 'no'}); GPUs: {', '.join(gpus) or 'none'}; "
        f"CUDA_VISIBLE_DEVICES={devices.original()!r}; {args.workers} workers",
        flush=True,
    )
    if not gpus and not args.write_baseline and not args.baseline:
        print(
            "skipped: no GPU here (nothing to compare); --write-baseline FILE writes this machine's summary, "
            "--baseline FILE compares this machine with another"
        )
        return 0
    out = Path(args.out) if args.out else Path(f"/tmp/seqgrader-gpu-check-{os.getpid()}")
    out.mkdir(parents=True, exist_ok=True)
    try:
        cases = build_cases(out / "cases", args.cases)
        print(f"{len(cases)} cases ({len({c[0] for c in cases})} submissions)", flush=True)
        base_env = {k: v for k, v in os.environ.items() if k != devices.ORIGINAL}
        envs = {"hidden": dict(base_env, CUDA_VISIBLE_DEVICES="")}
        if gpus:
            envs = {"visible": base_env, **envs}
        runs, problems = {}, []
        for label, env in envs.items():
            runs[label], seconds = grade_all(cases, out / label, env, args.workers)
            check = self_check(env)
            used = {k: len(v) for k, v in (check.get("devices") or {}).items() if k != "problems"}
            print(
                f"{label:8} graded in {seconds:.1f} s; self-check {'passed' if check.get('passed') else 'FAILED'}"
                f" ({check.get('score')}/{check.get('max_score')}, {check.get('seconds')} s); device sentences ran on "
                f"{used or 'nothing'}"
                + (
                    f"; problems: {check['devices']['problems']}"
                    if (check.get("devices") or {}).get("problems")
                    else ""
                ),
                flush=True,
            )
            if not check.get("passed"):
                problems.append(f"{label}: self-check failed: {check.get('message')}")
            problems += [f"{label}: {p}" for p in expectations(runs[label])]
        if "visible" in runs:
            problems += differences(runs["visible"], runs["hidden"], "visible/hidden")
        if args.baseline:
            baseline = json.loads(Path(args.baseline).read_text(encoding="utf-8"))
            wanted = {k: v for k, v in baseline.items() if k in runs["hidden"]} if args.cases else baseline
            for label, res in runs.items():
                problems += differences(res, wanted, f"{label}/baseline")
        if args.write_baseline:
            Path(args.write_baseline).write_text(json.dumps(runs["hidden"], indent=1, sort_keys=True), encoding="utf-8")
            print(f"summary of {len(runs['hidden'])} cases written to {args.write_baseline}")
        for p in problems[:200]:
            print(p)
        n = len(runs["hidden"])
        print(
            f"{n} cases x {len(runs)} run(s){' + baseline' if args.baseline else ''}: "
            + ("all the same, every expectation met" if not problems else f"{len(problems)} problem(s)")
        )
        return 1 if problems else 0
    finally:
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
