"""Tests of the tests: every catalogued mistake is caught, in its own exercise only, on a test
that names the function it broke; every correct implementation written differently gets full marks."""
from pathlib import Path

import pytest

from autograder.catalogue import build_submission, load_catalogue
from autograder.config import load_course
from autograder.properties.claims import violations
from autograder.grading import grade
from autograder.sandbox import ForkRunner

from .conftest import ROOT

CATALOGUE = load_catalogue()
# every ISOLATION-th mistake is graded with its whole assignment, to check that it costs points in
# its own exercise only; the others with their own exercise alone (the other files are the
# reference solutions, graded in full by test_correct_implementation_gets_full_marks): CI time
ISOLATION = 6
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


@pytest.mark.slow
@pytest.mark.parametrize("exercise,entry", CATALOGUE, ids=[f"{ex}:{e['id']}" for ex, e in CATALOGUE])
def test_mistake_is_caught_in_its_own_exercise(exercise, entry, tmp_path):
    # graded in this process with the real sandboxed runner (the command line itself is tested in
    # test_cli.py); this saves importing torch a hundred times
    sub = build_submission(exercise, entry, tmp_path / "sub")
    course = load_course()
    # the exercises of the assignment that holds this one (sequence-models: the five core exercises)
    assignment = next(ids for ids in course.assignments.values() if exercise in ids)
    whole = [e for _, e in CATALOGUE].index(entry) % ISOLATION == 0
    report = grade(sub, course, ForkRunner(course, replay=True), exercises=assignment if whole else [exercise]).to_dict()
    by_id = {e["id"]: e for e in report["exercises"]}
    for ex_id, ex in by_id.items():
        if ex_id != exercise:
            assert ex["score"] == ex["max_score"], f"{entry['id']} also cost points in {ex_id}"
    ex = by_id[exercise]
    assert ex["score"] < ex["max_score"], f"{entry['id']} was not caught"
    failed = {t["name"].split("/", 1)[1]: t for t in ex["tests"] if not t["passed"]}
    expected = set(entry["expect_failing"])
    assert failed.keys() & expected, f"{entry['id']}: expected one of {sorted(expected)} to fail, failed: {sorted(failed)}"
    assert any(t["function"] == entry["function"] for t in failed.values()), \
        f"{entry['id']}: no failed test names {entry['function']}"
    for t in failed.values():
        assert "Traceback" not in t["feedback"]
        # a hint never blames a cause that its own counterexample does not show (properties/claims.py)
        assert not violations(t["hint_en"], t["counterexample"]), (t["name"], t["hint_en"], t["counterexample"])


@pytest.mark.slow
@pytest.mark.parametrize("folder", CORRECT, ids=[p.name for p in CORRECT])
def test_correct_implementation_gets_full_marks(folder, grade_cli):
    # four times course.yml's examples: a correct variant must never be rejected, however long
    # hypothesis searches
    proc, report = grade_cli(folder, "--max-examples", "20")
    assert proc.returncode == 0, proc.stderr
    lost = {t["name"]: t["feedback"] for e in report["exercises"] for t in e["tests"] if not t["passed"]}
    assert not lost, f"{folder.name} lost points:\n" + "\n\n".join(f"{k}\n{v}" for k, v in lost.items())
    assert report["score"] == report["max_score"] == 100


def test_there_are_six_correct_implementations():
    assert len(CORRECT) >= 6
    for folder in CORRECT:
        names = {p.stem for p in Path(folder).glob("*.py")}
        assert names >= {"masks", "positional_encoding", "attention", "recurrent", "masked_loss"}, folder
