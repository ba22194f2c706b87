"""Answers stay secret: a submission with no code of its own, looking for answers on disk, in the
course folder, through the grader's installation or in its own memory, scores 0 and gets nothing
it read into any output — through `grade`, `grade-batch` (local and Dask).  The real
`nbgrader autograde` path is checked in tests/test_nbgrader.py with the same hostile notebooks.

The layout is a real one, not /tmp (which every worker replaces anyway): under /srv (or the home
directory where /srv is not writable) an instructor's copy of the grader (package, solutions/,
course.yml) and an nbgrader course folder (source/, release/, submitted/, autograded/, feedback/,
gradebook.db) with two classmates.  Every secret file carries a marker; no output may hold one.
A control run with `--in-process` (no sandbox) shows that the same submissions do find the
secrets and score when nothing stops them, so the test can fail.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from . import where
from .conftest import ROOT, real_place

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")]

HOSTILE = ROOT / "tests" / "files" / "hostile"
ASSIGNMENT = "sequence-models"
EXERCISES = ["masks", "positional_encoding", "attention", "recurrent", "masked_loss"]
# mallory's folder: one hostile strategy per exercise (each file defines every function, delegating
# to what it stole; an exercise's worker runs the file named after the exercise first)
MALLORY = {
    "masks": "snoop_disk.py",
    "positional_encoding": "snoop_course.py",
    "attention": "snoop_install.py",
    "recurrent": "snoop_memory.py",
    "masked_loss": "snoop_course.py",
}


def _mark(text, marker, where):
    """`text` with a marker comment above each def/class (so a snippet around a def shows it)."""
    out = [f"# {marker}-{where}"]
    for line in text.splitlines():
        if line.startswith(("def ", "class ")):
            out.append(f"# {marker}-{where}")
        out.append(line)
    return "\n".join(out) + "\n"


def _notebook(code):
    return json.dumps(
        {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {},
            "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": code}],
        }
    )


@pytest.fixture(scope="module")
def layout():
    base = real_place("secrecy")
    marker = f"SECRET{uuid.uuid4().hex[:12]}"
    checkout = base / "instructor" / "seqgrader"  # the grader, as an instructor's clone holds it
    for name in ("autograder", "solutions", "exercises", "docs"):
        # symlinks kept: autograder/default_course/ links to the (marked) solutions/, exercises/, course.yml
        shutil.copytree(ROOT / name, checkout / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", checkout)
    (checkout / "course.yml").write_text(
        f"# {marker}-course\n" + (ROOT / "course.yml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    for f in (checkout / "solutions").glob("*.py"):
        f.write_text(_mark(f.read_text(encoding="utf-8"), marker, "solutions"), encoding="utf-8")
    properties = (checkout / "autograder" / "properties").glob("*.py")
    for f in [*properties, *(checkout / "autograder" / "exercises").glob("*/properties.py")]:
        f.write_text(f"# {marker}-properties\n" + f.read_text(encoding="utf-8"), encoding="utf-8")
    course = base / "courses" / "dl2026"  # an nbgrader course folder
    for ex in EXERCISES:
        sol = (ROOT / "solutions" / f"{ex}.py").read_text(encoding="utf-8")
        src = course / "source" / ASSIGNMENT / f"{ex}.ipynb"
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(_notebook(_mark(sol, marker, "source")), encoding="utf-8")
        for student, kind in (("alice", "submitted"), ("alice", "autograded"), ("bob", "submitted")):
            d = course / kind / student / ASSIGNMENT
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{ex}.py").write_text(_mark(sol, marker, f"classmate-{student}"), encoding="utf-8")
    (course / "release" / ASSIGNMENT).mkdir(parents=True)
    (course / "feedback" / "alice" / ASSIGNMENT).mkdir(parents=True)
    (course / "feedback" / "alice" / ASSIGNMENT / "masks.html").write_text(f"<p>{marker}-feedback</p>")
    shutil.copy(checkout / "course.yml", course / "course.yml")
    (course / "nbgrader_config.py").write_text(f"# {marker}-config\nc = get_config()\n")
    with sqlite3.connect(course / "gradebook.db") as db:
        db.execute("create table student (id text, score real)")
        db.executemany("insert into student values (?, ?)", [(f"{marker}-gradebook-alice", 100.0), ("bob", 42.0)])
    mallory = course / "submitted" / "mallory" / ASSIGNMENT
    mallory.mkdir(parents=True)
    for ex, snoop in MALLORY.items():
        shutil.copy(HOSTILE / snoop, mallory / f"{ex}.py")
    (mallory / "timestamp.txt").write_text("2026-12-01 08:00:00 UTC")
    where.share(base, writable=True)  # the instructor's (tests/where.py: a user's where the place has one)
    yield {"base": base, "marker": marker, "checkout": checkout, "course": course, "mallory": mallory}
    shutil.rmtree(base, ignore_errors=True)


def run(layout, *args, timeout=900):
    """`python -m autograder ARGS` of the instructor's copy, from the course folder (PWD = course),
    in the place SEQGRADER_TEST_WHERE names (tests/where.py)."""
    env = dict(
        os.environ, PYTHONPATH=str(layout["checkout"]), PWD=str(layout["course"]), OLDPWD=str(layout["checkout"])
    )
    return subprocess.run(
        where.command(args), cwd=layout["course"], env=env, capture_output=True, text=True, timeout=timeout
    )


def refused(proc, *outputs):
    """Where nothing confines a worker (tests/where.py's no-landlock): exit status 2, nothing written."""
    assert proc.returncode == 2 and "Refusing to grade" in proc.stderr, proc.stderr[-2000:]
    assert not any(Path(o).exists() for o in outputs)
    return True


def leaks(marker, *texts_or_dirs):
    """Where the marker shows: [(what, a line around it)]."""
    found = []
    for item in texts_or_dirs:
        if isinstance(item, Path) and item.is_dir():
            files = [p for p in item.rglob("*") if p.is_file()]
        elif isinstance(item, Path):
            files = [item]
        else:
            files = None
        if files is None:
            if marker in item:
                found.append(("text", item[max(0, item.index(marker) - 80) : item.index(marker) + 80]))
            continue
        for p in files:
            data = p.read_bytes().decode("utf-8", "replace")
            if marker in data:
                found.append((str(p), data[max(0, data.index(marker) - 80) : data.index(marker) + 80]))
    return found


def scores(report):
    return {e["id"]: e["score"] for e in report["exercises"]}


def test_without_the_sandbox_the_same_submission_steals(layout, tmp_path):
    """The control: in-process (no worker, no view), the hostile folder finds the secrets."""
    out = tmp_path / "inprocess.json"
    proc = run(layout, "grade", layout["mallory"], "--in-process", "--json", out, "-q", "--max-examples", "2")
    assert out.exists(), proc.stderr[-2000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["score"] > 0 or leaks(layout["marker"], out), "the control found nothing: the layout tests nothing"


def test_grade_gives_a_thief_nothing(layout, tmp_path):
    out, html, md = tmp_path / "mallory.json", tmp_path / "mallory.html", tmp_path / "mallory.md"
    where.share(tmp_path, writable=True)
    proc = run(layout, "grade", layout["mallory"], "--json", out, "--html", html, "--markdown", md)
    if where.REFUSES and refused(proc, out, html, md):
        return
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    assert scores(report) == dict.fromkeys(EXERCISES, 0.0), scores(report)
    assert "sees only Python and its own submission" in report["sandbox"], report["sandbox"]
    assert leaks(layout["marker"], proc.stdout, proc.stderr, tmp_path) == []
    # what it read and raised is in the feedback, capped: no line of it is long
    for ex in report["exercises"]:
        for t in ex["tests"]:
            assert all(len(line) < 700 for line in t["feedback"].splitlines()), t["feedback"]


def test_grade_batch_gives_a_thief_nothing_and_classmates_their_due(layout, tmp_path):
    out = tmp_path / "grades"
    where.share(tmp_path, writable=True)
    proc = run(layout, "grade-batch", layout["course"], "--out", out, "--workers", "2", "-q")
    if where.REFUSES and refused(proc, out / "grades.csv", out / "reports" / "mallory.json"):
        return
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["student"]: r for r in __import__("csv").DictReader(open(out / "grades.csv", encoding="utf-8"))}
    assert float(rows["mallory"]["total"]) == 0.0 and rows["mallory"]["status"] == "graded", rows["mallory"]
    assert float(rows["alice"]["total"]) == 100.0, rows["alice"]  # the secrets are real answers
    assert leaks(layout["marker"], proc.stdout, proc.stderr, out) == []
    gs = json.loads((out / "gradescope" / "mallory" / "results.json").read_text(encoding="utf-8"))
    assert gs["score"] == 0.0


def test_grade_batch_on_a_dask_cluster_gives_a_thief_nothing(layout, tmp_path):
    distributed = pytest.importorskip("distributed")
    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copytree(layout["mallory"], flat / "mallory")
    shutil.copy(HOSTILE / "snoop_install.py", flat / "trudy.py")
    out = tmp_path / "grades"
    with distributed.LocalCluster(
        n_workers=1,
        processes=True,
        threads_per_worker=2,
        dashboard_address=None,
        env={"PYTHONPATH": str(layout["checkout"])},
    ) as cluster:
        proc = run(layout, "grade-batch", flat, "--out", out, "--dask-scheduler", cluster.scheduler_address, "-q")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["student"]: r for r in __import__("csv").DictReader(open(out / "grades.csv", encoding="utf-8"))}
    assert {s: float(r["total"]) for s, r in rows.items()} == {"mallory": 0.0, "trudy": 0.0}, rows
    assert leaks(layout["marker"], proc.stdout, proc.stderr, out) == []


def test_where_nothing_confines_the_worker_nobody_is_graded(tmp_path):
    """A container that refuses namespaces and Landlock too (tests/container.py --no-landlock):
    `grade` and `grade-batch` refuse to grade (exit status 2, no report, no row) and name the
    option that accepts it; with --allow-weak-sandbox every report says so in its first key and
    line, and grade-batch's summary names the students."""
    flat = tmp_path / "class"
    flat.mkdir()
    shutil.copy(ROOT / "solutions" / "masks.py", flat / "alice.py")
    jail = [
        sys.executable,
        str(ROOT / "tests" / "container.py"),
        "--no-landlock",
        "--",
        sys.executable,
        "-m",
        "autograder",
    ]
    out = tmp_path / "grades"
    proc = subprocess.run(
        [*jail, "grade-batch", flat, "--out", out, "--exercise", "masks", "--workers", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Refusing to grade" in proc.stdout + proc.stderr and "--allow-weak-sandbox" in proc.stdout + proc.stderr
    assert not (out / "reports" / "alice.json").exists()
    one = subprocess.run(
        [*jail, "grade", flat / "alice.py", "--exercise", "masks", "-q", "--json", tmp_path / "r.json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert one.returncode == 2 and "Refusing to grade" in one.stderr and not (tmp_path / "r.json").exists(), one.stderr
    weak = subprocess.run(
        [
            *jail,
            "grade",
            flat / "alice.py",
            "--exercise",
            "masks",
            "--json",
            tmp_path / "w.json",
            "--allow-weak-sandbox",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert weak.returncode == 0, weak.stderr[-2000:]
    report = json.loads((tmp_path / "w.json").read_text(encoding="utf-8"))
    assert next(iter(report)) == "sandbox_warning" and "a view of the filesystem" in report["sandbox_warning"]
    assert weak.stdout.startswith("WARNING: graded with a weak sandbox"), weak.stdout[:300]
    batch = subprocess.run(
        [*jail, "grade-batch", flat, "--out", out, "--exercise", "masks", "--workers", "1", "--allow-weak-sandbox"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert batch.returncode == 0, batch.stderr[-2000:]
    assert "WARNING: 1 submission(s) were graded with a weak sandbox" in batch.stdout, batch.stdout[-2000:]
    ok = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", flat / "alice.py", "--exercise", "masks", "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ok.returncode == 0 and "WARNING" not in ok.stderr, ok.stderr[-2000:]
