"""The command line end to end: the contract's JSON, exit codes, the text report, determinism."""

import json
import subprocess
import sys

import pytest

from autograder import EXERCISES

from .conftest import ROOT


def test_help_lists_the_grade_command():
    out = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0
    assert "SUBMISSION" in out.stdout.upper() and "--json" in out.stdout


def test_reference_solutions_get_100_with_the_contract_report(grade_cli):
    proc, report = grade_cli(ROOT / "solutions")
    assert proc.returncode == 0, proc.stderr
    assert report["score"] == report["max_score"] == 100.0
    assert [e["id"] for e in report["exercises"]] == list(EXERCISES)
    assert report["errors"] == []
    for ex in report["exercises"]:
        assert ex["score"] == ex["max_score"]
        for t in ex["tests"]:
            assert t["name"].startswith(ex["id"] + "/" + t["function"] + "/")
            assert set(t) >= {"name", "function", "score", "max_score", "passed", "feedback"}
            assert t["passed"] is True and t["score"] == t["max_score"] > 0
    assert "100 / 100" in proc.stdout


def test_missing_path_is_a_clear_error_with_exit_2(grade_cli, tmp_path):
    proc, report = grade_cli(tmp_path / "nope.py")
    assert proc.returncode == 2 and report is None
    assert "submission not found" in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_exercise_is_a_clear_error(grade_cli):
    proc, _ = grade_cli(ROOT / "solutions", "--exercise", "transformers")
    assert proc.returncode == 2 and "unknown exercise" in proc.stderr


@pytest.mark.slow
def test_regrading_gives_identical_scores_and_feedback(grade_cli):
    sub = ROOT / "examples" / "submissions" / "bob.ipynb"
    _, first = grade_cli(sub)
    _, second = grade_cli(sub)

    def strip(report):  # timings differ from run to run; nothing else may
        for ex in report["exercises"]:
            for t in ex["tests"]:
                t.pop("seconds")
        report.pop("seconds")
        report.pop("timing")
        return json.dumps(report, sort_keys=True)

    assert strip(first) == strip(second)
    assert first["score"] < 100
