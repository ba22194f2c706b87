"""Benchmark: `grade-batch` against `nbgrader autograde` on the same notebooks.

    .venv/bin/python bench/nbgrader_vs_batch.py [--students 18] [--assignment sequence-models] [--keep DIR]
                                                [--batch-only]

Builds the nbgrader course (`nbgrader-course`) and a second, *stock* nbgrader course from the
same notebooks — nbgrader as a course would use it without seqgrader: the exercises' visible
checks are the graded test cells, run in a Jupyter kernel by nbgrader's Execute. It writes the
same N submissions into both (the reference answers, and catalogued mistakes in turn), then times

  stock      `nbgrader autograde`, stock configuration (a kernel per notebook; visible checks only)
  sandbox    `nbgrader autograde` with seqgrader's SandboxGrade (hidden properties, no kernel)
  batch      `python -m autograder grade-batch submitted/` (hidden properties, all cores)

in two waves — a third of the class, then the rest: the same notebooks again under other student
ids (nbgrader skips students it has autograded, grade-batch keeps reports that are up to date) —
so that each tool's start-up (imports, kernels, the grading processes) and its time per submission
come apart:  T_wave = start-up + n x per submission.  It prints both, the ratio of the times per submission, and the whole class's.  It checks that `grade-batch`
and SandboxGrade's autograde give the same scores.  Every command is run exactly as an instructor
would (subprocesses, from the course folder).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent


def run(cmd, cwd, check=True):
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t
    if check and proc.returncode != 0:
        sys.exit(f"{cmd} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return took, proc


def stock_course(src_dir, out, assignment):
    """The same source notebooks without the hidden-tests cells; visible checks keep the points."""
    from autograder.nbgrader_course import HIDDEN_MARKER, VISIBLE_MARKER

    folder = out / "source" / assignment
    folder.mkdir(parents=True)
    for path in sorted((src_dir / "source" / assignment).glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        cells, points = [], {}
        for cell in nb.cells:
            if HIDDEN_MARKER in cell.source:
                points[cell.source] = cell.metadata["nbgrader"]["points"]
                cells[-1].metadata["nbgrader"]["points"] = cell.metadata["nbgrader"]["points"]
                continue
            if cell.source.startswith(VISIBLE_MARKER):
                cell.source = cell.source.split("\n", 1)[1]
            cells.append(cell)
        nb.cells = cells
        nbformat.write(nb, str(folder / path.name))
    (out / "nbgrader_config.py").write_text(
        "c = get_config()\nc.CourseDirectory.course_id = 'stock'\nc.Autograde.create_student = True\n"
        "c.Execute.timeout = 120\n",
        encoding="utf-8",
    )


def submissions(course_dir, answers_dir, assignment, n):
    """N students' notebooks, made from course_dir's release (its cells and checksums) with the
    answers of answers_dir's source: the reference for the first, then one catalogued mistake each
    (the same students for both courses)."""
    from autograder.catalogue import load_catalogue

    release = {
        p.stem: nbformat.read(str(p), as_version=4)
        for p in sorted((course_dir / "release" / assignment).glob("*.ipynb"))
    }
    source = {
        p.stem: nbformat.read(str(p), as_version=4)
        for p in sorted((answers_dir / "source" / assignment).glob("*.ipynb"))
    }
    mistakes = [
        (ex, m)
        for ex, m in load_catalogue()  # self-contained ones (not subclassing the reference)
        if ex in release and f"({m['function']})" not in m["code"]
    ]
    out = {}
    for i in range(n):
        answers = {}
        wrong = mistakes[(i * 7) % len(mistakes)] if i else None
        for ex, nb in release.items():
            nb = nbformat.from_dict(json.loads(json.dumps(nb)))
            for cell in nb.cells:
                meta = cell.metadata.get("nbgrader", {})
                if meta.get("solution"):
                    name = meta["grade_id"]
                    cell.source = next(
                        c.source for c in source[ex].cells if c.metadata.get("nbgrader", {}).get("grade_id") == name
                    )
                    if wrong and wrong[0] == ex and wrong[1]["function"] == name.split(".")[0]:
                        cell.source = wrong[1]["code"]
            answers[ex] = nb
        out[f"s{i:03d}"] = answers
    return out


def place(course_dir, assignment, subs):
    for student, answers in subs.items():
        folder = course_dir / "submitted" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        for ex, nb in answers.items():
            nbformat.write(nb, str(folder / f"{ex}.ipynb"))


def gradebook(course_dir, course_id, assignment):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", course_id) as gb:
        return {s.student.id: {nb.name: nb.score for nb in s.notebooks} for s in gb.assignment_submissions(assignment)}


def timed_batch(py, course_dir, assignment, grades):
    """Wall seconds of grade-batch over course_dir/submitted, writing to `grades` (what is there
    and up to date is kept: the second wave grades only the new students)."""
    took, _ = run(
        [
            py,
            "-m",
            "autograder",
            "grade-batch",
            str(course_dir / "submitted"),
            "--assignment",
            assignment,
            "--out",
            str(grades),
            "-q",
        ],
        ROOT,
    )
    return took


def autograde(course_dir, assignment):
    """Wall seconds of `nbgrader autograde` (students already autograded are skipped)."""
    took, proc = run([str(BIN / "nbgrader"), "autograde", assignment], course_dir, check=False)
    if "error processing assignment" in proc.stderr:
        sys.exit(f"autograde failed in {course_dir}:\n" + proc.stderr[-3000:])
    return took


def split(t1, n1, t2, n2):
    """Two runs that each pay the start-up once: (start-up, seconds per submission)."""
    per = (t2 - t1) / (n2 - n1)
    return t1 - n1 * per, per


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--students",
        type=int,
        default=18,
        help="class size (default 18): a first wave of a third of them, then the rest; with "
        "waves that are multiples of the number of cores each grading process gets as many",
    )
    ap.add_argument("--assignment", default="sequence-models")
    ap.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (default: a temp folder, removed)")
    ap.add_argument(
        "--batch-only", action="store_true", help="time grade-batch alone (no nbgrader autograde, no score comparison)"
    )
    args = ap.parse_args()
    if args.students < 3:
        ap.error("--students must be at least 3 (two waves of different sizes)")
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="seqgrader-bench-"))
    ours, stock = tmp / "course", tmp / "stock"
    for d in (ours, stock, tmp / "grades"):
        if d.exists():
            shutil.rmtree(d)
    py = sys.executable
    run([py, "-m", "autograder", "nbgrader-course", str(ours), "--assignment", args.assignment], ROOT)
    stock_course(ours, stock, args.assignment)
    run([str(BIN / "nbgrader"), "generate_assignment", args.assignment], ours)
    run([str(BIN / "nbgrader"), "generate_assignment", args.assignment], stock)
    # wave 1: a third of the class, distinct students (the reference, then one catalogued mistake
    # each); wave 2: two more students with the same notebooks as each of wave 1's, so that the two
    # waves hold the same work and their difference is the time per submission, nothing else
    n1 = args.students // 3
    first = submissions(ours, ours, args.assignment, n1)
    first_stock = submissions(stock, ours, args.assignment, n1)
    subs, stock_subs = dict(first), dict(first_stock)
    waves = [list(first), []]
    for copy in ("b", "c")[: max(1, (args.students - n1 + n1 - 1) // n1)]:
        for s in first:
            if len(waves[1]) < args.students - n1:
                subs[s + copy], stock_subs[s + copy] = first[s], first_stock[s]
                waves[1].append(s + copy)
    names = waves[0] + waves[1]
    print(
        f"{len(names)} submissions x {len(subs[names[0]])} notebooks, {os.cpu_count()} cores; "
        f"two waves of {len(waves[0])} and {len(waves[1])} (the second: the first's notebooks again, "
        f"under other student ids); each run pays its start-up once",
        flush=True,
    )

    tools = [("batch", "grade-batch (hidden properties, all cores)")]
    if not args.batch_only:
        tools = [
            ("stock", "nbgrader autograde (kernel, visible checks)"),
            ("sandbox", "nbgrader autograde + SandboxGrade (hidden)"),
        ] + tools
    times = {t: [] for t, _ in tools}
    for wave in waves:
        place(ours, args.assignment, {s: subs[s] for s in wave})
        place(stock, args.assignment, {s: stock_subs[s] for s in wave})
        for tool, _ in tools:
            if tool == "stock":
                times[tool].append(autograde(stock, args.assignment))
            elif tool == "sandbox":
                times[tool].append(autograde(ours, args.assignment))
            else:
                times[tool].append(timed_batch(py, ours, args.assignment, tmp / "grades"))
    per, start_of = {}, {}
    print(f"{'':8} {'':46} {'wave 1':>8} {'wave 2':>8} {'start-up':>9} {'per submission':>15} {'total / N':>10}")
    for tool, label in tools:
        (t1, t2), k1, k2 = times[tool], len(waves[0]), len(waves[1])
        start, per[tool] = split(t1, k1, t2, k2)
        start_of[tool] = start
        print(
            f"{tool:8} {label:46} {t1:7.1f}s {t2:7.1f}s {start:8.1f}s {per[tool]:14.2f}s "
            f"{(t1 + t2 - start) / (k1 + k2):9.2f}s",
            flush=True,
        )
    if args.batch_only:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        return 0
    N = len(names)
    whole = {t: start_of[t] + N * per[t] for t in per}  # the class in one run: one start-up
    print(
        f"ratio per submission: stock / batch = {per['stock'] / per['batch']:.1f}x, "
        f"sandbox-autograde / batch = {per['sandbox'] / per['batch']:.1f}x;  the class of {N} in one run "
        f"(start-up included): stock {whole['stock']:.0f} s / batch {whole['batch']:.0f} s = "
        f"{whole['stock'] / whole['batch']:.1f}x"
    )

    nb_scores = gradebook(ours, "seqgrader", args.assignment)
    same = True
    reports = sorted((tmp / "grades" / "reports").glob("*.json"))
    for path in reports:
        report = json.loads(path.read_text(encoding="utf-8"))
        student = report["batch"]["student"]
        batch_scores = {e["id"]: e["score"] for e in report["exercises"]}
        if any(abs(nb_scores.get(student, {}).get(ex, -1) - s) > 1e-6 for ex, s in batch_scores.items()):
            same = False
            print(f"  differs: {student}: autograde {nb_scores.get(student)} batch {batch_scores}")
    same = same and len(reports) == len(names) == len(nb_scores)
    print(
        f"scores: grade-batch == SandboxGrade autograde for all {len(names)} students"
        if same
        else "scores DIFFER (see above)"
    )
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
