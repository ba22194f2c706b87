"""The instructor's dashboard: built by grade-batch at the end of a run (and by `python -m autograder
dashboard`), checked in headless Chromium on a real batch: score distributions, pass rates, the most
frequent diagnosed mistakes, the submissions that errored.  Fails (does not skip) without chromium."""

import json
import shutil
import subprocess
import sys

import pytest

from autograder.report.dashboard import collect

from .conftest import ROOT
from .test_batch import EX, read_csv
from .test_reports import DIAGNOSIS, render_in_chromium

pytestmark = pytest.mark.slow

OTHER = {
    "id": "mask_inverted",
    "title_zh": "掩码用反了",
    "title_en": "the mask is inverted (True = blocked)",
    "explanation_zh": "True 表示可以看。",
    "explanation_en": "True means may attend.",
    "hint_zh": "用 ~mask。",
    "hint_en": "Use ~mask.",
}


def cli(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "autograder", *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """A real grade-batch over alice.py (correct), bob.ipynb (mistakes), dave.ipynb (corrupt) and
    syntax.py (nothing loadable), with a short course (see test_batch.py)."""
    import yaml

    tmp = tmp_path_factory.mktemp("dash")
    c = yaml.safe_load((ROOT / "course.yml").read_text())
    c["load_timeout"] = 8
    for ex in c["exercises"].values():
        ex["timeout"] = 40
        for t in ex["tests"].values():
            t["timeout"] = 4
    course = tmp / "course.yml"
    course.write_text(yaml.safe_dump(c, sort_keys=False))
    root = tmp / "class"
    root.mkdir()
    for name in ("alice.py", "bob.ipynb", "dave.ipynb"):
        shutil.copy(EX / name, root)
    (root / "syntax.py").write_text("def causal_mask(T:\n    pass\n")
    out = tmp / "grades"
    proc = cli("grade-batch", root, "--out", out, "--course", course)
    assert proc.returncode == 0, proc.stderr
    return out, proc


def test_grade_batch_writes_a_page_per_student_and_the_dashboard(batch):
    out, proc = batch
    assert (out / "dashboard.html").is_file() and "dashboard.html" in proc.stdout
    for student in ("alice", "bob", "dave", "syntax"):
        page = (out / "reports" / f"{student}.html").read_text(encoding="utf-8")
        assert page.startswith("<!DOCTYPE html>") and student in page
    rows = {r["student"]: r for r in read_csv(out / "grades.csv")}
    bob = json.loads((out / "reports" / "bob.json").read_text(encoding="utf-8"))
    assert f"{bob['score']:g} / {bob['max_score']:g}" in (out / "reports" / "bob.html").read_text(encoding="utf-8")
    assert rows["dave"]["status"].startswith("error:")
    dave = (out / "reports" / "dave.html").read_text(encoding="utf-8")  # the student sees "not graded" and why
    assert "Not graded" in dave and "not valid JSON" in dave and "0 / 100" not in dave


@pytest.fixture(scope="module")
def diagnosed(batch, tmp_path_factory):
    """A copy of the batch where bob, and a second student bob2 (bob's report again), have named
    mistakes: DIAGNOSIS twice (bob on two tests: still one student) and OTHER once."""
    out, _ = batch
    copy = tmp_path_factory.mktemp("diag") / "grades"
    shutil.copytree(out, copy)
    bob = json.loads((copy / "reports" / "bob.json").read_text(encoding="utf-8"))
    fails = [t for ex in bob["exercises"] for t in ex["tests"] if not t["passed"]]
    for t in fails:
        t["diagnosis"] = []
    fails[0]["diagnosis"] = [DIAGNOSIS]
    fails[1]["diagnosis"] = [DIAGNOSIS]
    (copy / "reports" / "bob.json").write_text(json.dumps(bob, ensure_ascii=False), encoding="utf-8")
    fails[1]["diagnosis"] = [OTHER]
    bob["batch"]["student"] = "bob2"
    (copy / "reports" / "bob2.json").write_text(json.dumps(bob, ensure_ascii=False), encoding="utf-8")
    proc = cli("dashboard", copy, "--out", copy / "dash.html")
    assert proc.returncode == 0 and (copy / "dash.html").is_file(), proc.stderr
    return copy, fails


def test_collect_counts_mistakes_per_student_pass_rates_and_errors(diagnosed):
    folder, fails = diagnosed
    d = collect(folder)
    assert sorted(e["student"] for e in d["errored"]) == ["dave", "syntax"]
    assert sorted(d["graded"]) == ["alice", "bob", "bob2"]
    assert [(m["id"], m["count"]) for m in d["mistakes"]] == [("softmax_over_queries", 2), ("mask_inverted", 1)]
    assert d["mistakes"][0]["students"] == ["bob", "bob2"]
    rates = {name: (p, n) for name, _, p, n in d["pass_rates"]}
    assert rates[fails[0]["name"]] == (1, 3)  # alice passes it, bob and bob2 do not
    assert d["pass_rates"][0][1] <= d["pass_rates"][-1][1]  # worst first
    assert set(d["exercise_scores"]) == {"masks", "positional_encoding", "attention", "recurrent", "masked_loss"}
    assert len(d["totals"]) == 3


def test_dashboard_in_chromium_shows_distributions_mistakes_and_errored_submissions(diagnosed, tmp_path):
    folder, fails = diagnosed
    seen = render_in_chromium(folder / "dash.html", tmp_path, "dashboard", size=(1200, 2200))
    text = seen["text"]
    errored = text[text.index("Submissions that could not be graded") : text.index("Score distribution per exercise")]
    assert "dave" in errored and "syntax" in errored and "not valid JSON" in errored and "alice" not in errored
    assert "SyntaxError" in errored
    mistakes = text[text.index("Most frequent diagnosed mistakes") : text.index("Pass rate per property")]
    assert DIAGNOSIS["title_en"] in mistakes and OTHER["title_en"] in mistakes
    assert mistakes.index(DIAGNOSIS["title_en"]) < mistakes.index(OTHER["title_en"])  # the most frequent first
    assert "bob, bob2" in mistakes
    rates = text[text.index("Pass rate per property") :]
    assert (
        f"{fails[0]['name']}\t1/3 (33%)" in rates
        or f"{fails[0]['name']} 1/3 (33%)" in rates
        or ("1/3 (33%)" in rates and fails[0]["name"] in rates)
    )
    for ex in ("masks", "positional_encoding", "attention", "recurrent", "masked_loss"):
        assert ex in text
    hist = [i for i in seen["images"] if i["cls"] == "hist"]
    assert len(hist) == 1 and hist[0]["complete"] and hist[0]["w"] > 400 and hist[0]["shown_h"] > 200, seen["images"]
    assert seen["width"] <= 1200


def test_dashboard_command_needs_a_batch_folder(tmp_path):
    proc = cli("dashboard", tmp_path)
    assert proc.returncode == 2 and "grade-batch" in proc.stderr and "Traceback" not in proc.stderr


def _report(student, tests):
    """A minimal graded report: tests as (exercise, name, points, score, diagnosis ids)."""
    exercises = {}
    for ex, name, points, score, ids in tests:
        e = exercises.setdefault(ex, {"id": ex, "score": 0.0, "max_score": 0.0, "tests": []})
        e["score"] += score
        e["max_score"] += points
        e["tests"].append(
            {
                "name": f"{ex}/{name}",
                "score": score,
                "max_score": points,
                "passed": score == points,
                "diagnosis": [{"id": i, "title_zh": f"错误 {i}", "title_en": f"mistake {i}"} for i in ids],
            }
        )
    total = sum(e["score"] for e in exercises.values())
    return {
        "score": total,
        "max_score": sum(e["max_score"] for e in exercises.values()),
        "exercises": list(exercises.values()),
        "batch": {"student": student, "status": "graded"},
    }


def test_points_lost_per_exercise_and_test_with_the_share_not_diagnosed(tmp_path):
    """The exercise where the class lost most comes first even when the diagnosis named
    nothing there; each test shows its points lost, how many failures were not named, and the
    mistakes that were."""
    from autograder.report.dashboard import render_dashboard

    (tmp_path / "reports").mkdir()
    reports = {
        "ann": _report(
            "ann",
            [
                ("masked_loss", "value", 4, 0, []),
                ("masked_loss", "padding", 3, 0, []),
                ("masks", "causal", 2, 0, ["causal_mask_excludes_diagonal"]),
            ],
        ),
        "ben": _report(
            "ben",
            [
                ("masked_loss", "value", 4, 0, ["ml_per_sequence_mean"]),
                ("masked_loss", "padding", 3, 3, []),
                ("masks", "causal", 2, 2, []),
            ],
        ),
        "cat": _report(
            "cat",
            [
                ("masked_loss", "value", 4, 4, []),
                ("masked_loss", "padding", 3, 3, []),
                ("masks", "causal", 2, 0, ["causal_mask_excludes_diagonal"]),
            ],
        ),
    }
    for name, r in reports.items():
        (tmp_path / "reports" / f"{name}.json").write_text(json.dumps(r), encoding="utf-8")
    lost = collect(tmp_path)["lost"]
    assert [e["exercise"] for e in lost] == ["masked_loss", "masks"]  # 11 points lost, then 4
    loss = lost[0]
    assert (loss["points_lost"], loss["points_max"], loss["failures"], loss["unnamed"]) == (11, 21, 3, 2)
    assert abs(loss["unnamed_share"] - 2 / 3) < 1e-9
    assert [t["name"] for t in loss["tests"]] == ["masked_loss/value", "masked_loss/padding"]
    value = loss["tests"][0]
    assert (value["points_lost"], value["failures"], value["unnamed"]) == (8, 2, 1)
    assert [(m["id"], m["count"]) for m in value["mistakes"]] == [("ml_per_sequence_mean", 1)]
    assert loss["tests"][1]["unnamed_share"] == 1.0 and loss["tests"][1]["mistakes"] == []
    masks = lost[1]
    assert (masks["points_lost"], masks["unnamed"], masks["unnamed_share"]) == (4, 0, 0.0)
    page = render_dashboard(tmp_path, "both")
    section = page[page.index('id="points-lost"') : page.index('id="mistakes"')]
    assert section.index('data-exercise="masked_loss"') < section.index('data-exercise="masks"')
    assert "Where points were lost" in section and "在哪里丢了分" in section
    assert "67%" in section and "100%" in section and "mistake ml_per_sequence_mean (1)" in section
