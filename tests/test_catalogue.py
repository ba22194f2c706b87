"""Tests of the tests: every catalogued mistake is caught, in its own exercise only, on a test
that names the function it broke; every correct implementation written differently gets full marks."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.catalogue import build_submission, load_catalogue
from autograder.config import load_course
from autograder.properties.claims import violations

from .conftest import ROOT

CATALOGUE = load_catalogue()
CORRECT = sorted(p for p in (ROOT / "tests" / "files" / "correct").iterdir() if p.is_dir())


def test_catalogue_is_large_and_unique():
    ids = [e["id"] for _, e in CATALOGUE]
    assert len(ids) >= 40, f"only {len(ids)} catalogued mistakes"
    assert len(set(ids)) == len(ids), "catalogue ids must be unique"
    for ex, e in CATALOGUE:
        for key in ("function", "title", "explanation", "hint", "code", "expect_failing"):
            assert e.get(key), f"{ex}/{e['id']} lacks {key}"
        for lang in ("zh", "en"):
            assert e["title"].get(lang) and e["hint"].get(lang) and e["explanation"].get(lang), (ex, e["id"], lang)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """{entry id: report}: every catalogued mistake graded with its whole assignment (so that it
    costs points in its own exercise only) by `grade-batch` -- 2 grading processes, each
    submission graded from scratch."""
    course = load_course()
    base = tmp_path_factory.mktemp("catalogue")
    by_assignment = {}
    for exercise, entry in CATALOGUE:
        name = next(a for a, ids in course.assignments.items() if exercise in ids)
        build_submission(exercise, entry, base / name / entry["id"])
        by_assignment.setdefault(name, []).append(entry["id"])
    reports = {}
    for name, ids in by_assignment.items():
        out = base / f"{name}-grades"
        exercises = [a for ex in course.assignments[name] for a in ("--exercise", ex)]
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "autograder",
                "grade-batch",
                str(base / name),
                "--layout",
                "flat",
                *exercises,
                "--out",
                str(out),
                "--workers",
                "2",
                "-q",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        for i in ids:
            reports[i] = json.loads((out / "reports" / f"{i}.json").read_text(encoding="utf-8"))
    return reports


@pytest.mark.slow
@pytest.mark.parametrize("exercise,entry", CATALOGUE, ids=[f"{ex}:{e['id']}" for ex, e in CATALOGUE])
def test_mistake_is_caught_in_its_own_exercise(exercise, entry, graded):
    report = graded[entry["id"]]
    assert report["graded"] and not report["errors"], (report["errors"], report.get("not_graded_reason"))
    by_id = {e["id"]: e for e in report["exercises"]}
    for ex_id, ex in by_id.items():
        if ex_id != exercise:
            assert ex["score"] == ex["max_score"], f"{entry['id']} also cost points in {ex_id}"
    ex = by_id[exercise]
    assert ex["score"] < ex["max_score"], f"{entry['id']} was not caught"
    failed = {t["name"].split("/", 1)[1]: t for t in ex["tests"] if not t["passed"]}
    expected = set(entry["expect_failing"])
    assert failed.keys() & expected, (
        f"{entry['id']}: expected one of {sorted(expected)} to fail, failed: {sorted(failed)}"
    )
    assert any(t["function"] == entry["function"] for t in failed.values()), (
        f"{entry['id']}: no failed test names {entry['function']}"
    )
    for t in failed.values():
        assert "Traceback" not in t["feedback"]
        # a hint never blames a cause that its own counterexample does not show (properties/claims.py)
        assert not violations(t["hint_en"], t["counterexample"]), (t["name"], t["hint_en"], t["counterexample"])
        # the inputs of a counterexample carry the reference's parameter names, never a position
        unnamed = [k for k in (t["counterexample"].get("inputs") or {}) if re.fullmatch(r"arg\d+(\[\d+\])?", k)]
        assert not unnamed, (t["name"], unnamed)


@pytest.fixture(scope="module")
def correct_reports(tmp_path_factory):
    """{folder name: report} of the correct implementations, graded by `grade-batch` at four times
    course.yml's examples: a correct variant must never be rejected, however long hypothesis searches."""
    out = tmp_path_factory.mktemp("correct") / "grades"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade-batch",
            str(ROOT / "tests" / "files" / "correct"),
            "--layout",
            "flat",
            "--out",
            str(out),
            "--workers",
            "2",
            "--max-examples",
            "20",
            "-q",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in (out / "reports").glob("*.json")}


@pytest.mark.slow
@pytest.mark.parametrize("folder", CORRECT, ids=[p.name for p in CORRECT])
def test_correct_implementation_gets_full_marks(folder, correct_reports):
    report = correct_reports[folder.name]
    assert report["graded"] and not report["errors"], report["errors"]
    lost = {t["name"]: t["feedback"] for e in report["exercises"] for t in e["tests"] if not t["passed"]}
    assert not lost, f"{folder.name} lost points:\n" + "\n\n".join(f"{k}\n{v}" for k, v in lost.items())
    assert report["score"] == report["max_score"] == 100


def test_there_are_six_correct_implementations():
    assert len(CORRECT) >= 6
    for folder in CORRECT:
        names = {p.stem for p in Path(folder).glob("*.py")}
        assert names >= {"masks", "positional_encoding", "attention", "recurrent", "masked_loss"}, folder
