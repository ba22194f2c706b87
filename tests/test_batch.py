"""`grade-batch`: discovery of both layouts, the CSV / JSON / Gradescope files, errors that are never
a silent 0, resume after a kill, and the Dask cluster mode.

The slow tests grade a class of six built from examples/submissions/ and solutions/ with a course
whose time limits are short (carol's endless loop costs seconds, not minutes)."""

import csv
import json
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from argparse import Namespace
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from autograder.batch import (
    Batch,
    LocalPool,
    classify,
    csv_row,
    discover,
    error_report,
    gradescope_results,
    resume_key,
    settings_digest,
)
from autograder.config import load_course
from autograder.errors import GraderError, SubmissionNotFound

from .conftest import ROOT

EX = ROOT / "examples" / "submissions"
STUDENTS = ["alice", "bob", "carol", "dave", "ghost", "sol", "syntax"]
EXERCISES = ["masks", "positional_encoding", "attention", "recurrent", "masked_loss"]


def cli(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "autograder", *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def make_flat(folder):
    """alice.py (correct), bob.ipynb (mistakes), carol/ (folder: endless loop, syntax error in one
    file), dave.ipynb (corrupt), ghost/ (a folder without code), sol/ (the solutions), syntax.py
    (nothing loadable), a stray file."""
    folder.mkdir(parents=True)
    shutil.copy(EX / "alice.py", folder)
    shutil.copy(EX / "bob.ipynb", folder)
    shutil.copytree(EX / "carol", folder / "carol")
    shutil.copy(EX / "dave.ipynb", folder)
    shutil.copytree(ROOT / "solutions", folder / "sol", ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "syntax.py").write_text("def causal_mask(T:\n    pass\n")
    (folder / "ghost").mkdir()
    (folder / "ghost" / "README.md").write_text("I will hand it in tomorrow")
    (folder / "notes.txt").write_text("not a submission")
    return folder


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def strip(report):
    """A report without its timing and the batch's own entry."""
    r = {k: v for k, v in report.items() if k not in ("seconds", "timing", "batch")}
    r["exercises"] = [
        {**e, "tests": [{k: v for k, v in t.items() if k != "seconds"} for t in e["tests"]]} for e in r["exercises"]
    ]
    return r


def load_report(out, student):
    return json.loads((out / "reports" / f"{student}.json").read_text(encoding="utf-8"))


def run_log(out):
    """{student: "graded" | "kept"} of the last run in batch.log."""
    lines = (out / "batch.log").read_text(encoding="utf-8").splitlines()
    last = max(i for i, ln in enumerate(lines) if " start: " in ln)
    seen = {}
    for ln in lines[last + 1 :]:
        parts = ln.split()
        if len(parts) > 2 and parts[1] in ("graded", "kept"):
            assert parts[2] not in seen, f"{parts[2]} appears twice in one run"
            seen[parts[2]] = parts[1]
    return seen


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    c = yaml.safe_load((ROOT / "course.yml").read_text())
    c["load_timeout"] = 8
    for ex in c["exercises"].values():
        ex["timeout"] = 40
        for t in ex["tests"].values():
            t["timeout"] = 4
    path = tmp_path_factory.mktemp("course") / "course.yml"
    path.write_text(yaml.safe_dump(c, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def flat_batch(tmp_path_factory, course):
    tmp = tmp_path_factory.mktemp("flat")
    root, out = make_flat(tmp / "class"), tmp / "grades"
    proc = cli("grade-batch", root, "--out", out, "--course", course)
    assert proc.returncode == 0, proc.stderr
    return root, out, proc


# ---------------------------------------------------------------- fast: command line, discovery


def test_help_explains_everything():
    out = cli("grade-batch", "--help")
    assert out.returncode == 0
    for word in (
        "--out",
        "--layout",
        "--assignment",
        "--workers",
        "--parallel",
        "--force",
        "--dask-scheduler",
        "--exercise",
        "-q",
        "grades.csv",
        "reports/",
        "gradescope/",
        "error: <reason>",
        "submitted/",
        "Resume",
        "resume key",
    ):
        assert word in out.stdout, word


def test_missing_or_empty_folder_is_a_clear_error(tmp_path):
    proc = cli("grade-batch", tmp_path / "nope", "--out", tmp_path / "g")
    assert proc.returncode == 2 and "no such folder" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.md").write_text("x")
    proc = cli("grade-batch", tmp_path / "empty", "--out", tmp_path / "g")
    assert proc.returncode == 2 and "no submissions in" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "submitted").mkdir()
    proc = cli("grade-batch", tmp_path / "submitted", "--out", tmp_path / "g")
    assert proc.returncode == 2 and "no student folders" in proc.stderr


def test_flat_discovery(tmp_path):
    root = make_flat(tmp_path / "class")
    (root / "alice.ipynb").write_text("{}")  # alice.py and alice.ipynb: both kept, under their full names
    (root / "__pycache__").mkdir()
    (root / ".ipynb_checkpoints").mkdir()
    (root / "grades").mkdir()  # the output folder inside the input: not a submission
    layout, items, warnings = discover(root, exclude=[root / "grades"])
    assert layout == "flat"
    assert [i.student for i in items] == ["alice.ipynb", "alice.py", "bob", "carol", "dave", "ghost", "sol", "syntax"]
    assert items[3].path == root / "carol"
    assert any("notes.txt" in w for w in warnings) and any("share a name" in w for w in warnings)


def test_nbgrader_discovery(tmp_path):
    sub = tmp_path / "course" / "submitted"
    for student, assignment in [("s1", "seq"), ("s2", "seq"), ("s2", "cnn"), ("s3", "cnn")]:
        (sub / student / assignment).mkdir(parents=True)
        (sub / student / assignment / "a.ipynb").write_text("{}")
    with pytest.raises(GraderError, match="several assignments.*--assignment"):
        discover(tmp_path / "course")
    for path in (tmp_path / "course", sub):  # the course root or the submitted folder
        layout, items, warnings = discover(path, assignment="seq")
        assert layout == "nbgrader"
        assert [(i.student, i.path) for i in items] == [("s1", sub / "s1" / "seq"), ("s2", sub / "s2" / "seq")]
        assert "s3" in warnings[0]
    with pytest.raises(SubmissionNotFound, match="no student submitted 'rnn'"):
        discover(sub, assignment="rnn")
    _, items, _ = discover(sub, layout="flat")  # the override: each student folder is a submission
    assert [i.student for i in items] == ["s1", "s2", "s3"]


def test_resume_key_follows_bytes_course_and_options(tmp_path):
    course = load_course()
    sub = tmp_path / "s"
    shutil.copytree(EX / "carol", sub)
    s1 = settings_digest(ROOT / "course.yml", course, EXERCISES)
    fp = resume_key(sub, s1)
    assert resume_key(sub, s1) == fp
    (sub / "__pycache__").mkdir()
    (sub / "__pycache__" / "x.pyc").write_bytes(b"junk")  # caches do not count
    assert resume_key(sub, s1) == fp
    (sub / "masks.py").write_text((sub / "masks.py").read_text() + "\n# resubmitted\n")
    assert resume_key(sub, s1) != fp
    assert settings_digest(ROOT / "course.yml", course, ["masks"]) != s1
    assert settings_digest(ROOT / "course.yml", load_course(language="en"), EXERCISES) != s1


def test_status_is_never_a_silent_zero():
    course = load_course()
    report = error_report(Namespace(path=Path("x.py")), course, EXERCISES, "boom")
    assert classify(report)[0].startswith("error: not graded: boom")
    assert [e["id"] for e in report["exercises"]] == EXERCISES and report["max_score"] == 100
    # the process died while loading: every test says so, no load error recorded
    died = {
        "score": 0,
        "max_score": 100,
        "errors": [],
        "exercises": [
            {
                "id": "masks",
                "tests": [
                    {
                        "status": "error",
                        "passed": False,
                        "message_en": "The process ended while loading your submission",
                    }
                ],
            }
        ],
    }
    assert classify(died) == ("error: The process ended while loading your submission", "")
    stubs = {
        "score": 0,
        "max_score": 100,
        "errors": [],
        "exercises": [{"id": "masks", "tests": [{"status": "missing", "passed": False}]}],
    }
    assert classify(stubs)[0] == "graded" and "no exercise function" in classify(stubs)[1]
    row = csv_row("x", {**report, "batch": {"status": "error: boom", "note": ""}}, EXERCISES)
    assert row["status"] == "error: boom" and row["total"] == "" and all(row[e] == "" for e in EXERCISES)
    gs = gradescope_results({**report, "batch": {"status": "error: boom"}})
    assert [t["status"] for t in gs["tests"]] == ["failed"] and "boom" in gs["output"]  # "not graded", in red
    assert gs["extra_data"]["graded"] is False and "boom" in gs["tests"][0]["output"]


FAKE_WORKER = textwrap.dedent("""
    import json, os, sys, time
    proto = os.fdopen(os.dup(1), "w")
    for line in sys.stdin:
        job = json.loads(line)
        name = os.path.basename(job["path"])
        if name.startswith("crash"):
            os._exit(3)
        if name.startswith("hang"):
            time.sleep(600)
        if name.startswith("stall"):  # as a grading process says it waits on an endless loop
            proto.write(json.dumps({"id": job["id"], "event": "stalled", "stalled": True}) + "\\n")
            proto.flush()
            time.sleep(3)
            proto.write(json.dumps({"id": job["id"], "event": "stalled", "stalled": False}) + "\\n")
        if name.startswith("slow"):
            time.sleep(0.5)
        if name.startswith("noise"):
            proto.write("garbage\\n" + json.dumps({"id": job["id"] + 1000, "report": {}}) + "\\n")
        proto.write(json.dumps({"id": job["id"], "report": {"name": name}}) + "\\n")
        proto.flush()
""")


def fake_pool(tmp_path, processes, budget=30, source=None, log=True):
    """A LocalPool whose grading processes are a stand-in script (FAKE_WORKER by default)."""
    script = tmp_path / ("fake_worker.py" if source is None else "sharing_worker.py")
    script.write_text(FAKE_WORKER if source is None else source)
    pool = LocalPool(
        processes, 1, ROOT / "course.yml", {}, budget=budget, log_path=tmp_path / "workers.log" if log else None
    )
    pool.cmd = [sys.executable, str(script)]
    pool.STARTUP = 0
    return pool


def test_a_dying_or_hanging_grader_costs_one_row(tmp_path):
    """The local pool with a stand-in grading process: a crash (twice: a process may also die
    starting up) and a hang are that submission's error; the other submissions are graded."""
    items = [
        Namespace(student=n, path=tmp_path / n) for n in ("a.py", "crash.py", "b.py", "hang.py", "noise.py", "c.py")
    ]
    pool = fake_pool(tmp_path, 2, budget=3)
    start = time.monotonic()
    results = {item.student: res for item, res in pool.run(items)}
    assert time.monotonic() - start < 30
    assert sorted(results) == sorted(i.student for i in items)
    assert results["crash.py"] == {"error": "the grading process died (exit status 3)", "retry": True}
    assert "did not finish within 3 s" in results["hang.py"]["error"]
    for ok in ("a.py", "b.py", "c.py", "noise.py"):
        assert results[ok]["report"] == {"name": ok}


def test_a_stalled_process_lets_one_more_grade_meanwhile(tmp_path):
    """A grading process that says it waits on a stalled test (an endless loop burns its core
    until the time limit) lets the pool grade on one more process meanwhile; otherwise never
    more than `processes` at once."""

    def run(names):
        pool = fake_pool(tmp_path, 1)
        return [(item.student, res) for item, res in pool.run([Namespace(student=n, path=tmp_path / n) for n in names])]

    done = run(["stall.py", "a.py", "b.py", "c.py"])
    order = [name for name, _ in done]
    pids = {name: res["pid"] for name, res in done}
    assert order[-1] == "stall.py", order  # the others were graded while it waited
    assert len(set(pids.values())) == 2 and pids["c.py"] != pids["stall.py"], pids  # on one process more
    assert all(res["report"] == {"name": name} for name, res in done)
    done = run(["a.py", "b.py", "c.py", "d.py"])  # nothing stalls: one process at a time
    assert len({res["pid"] for _, res in done}) == 1
    # in order: the thread that waits for a stall takes a submission only once it has a process
    assert [name for name, _ in done] == ["a.py", "b.py", "c.py", "d.py"]


def test_a_long_batch_starts_the_spare_process_before_any_stall(tmp_path):
    """From WARM_SPARE submissions on, run() starts the spare process once the first submission is
    graded (its start-up is paid before a stall, not during one); it stays idle while nothing
    stalls: every submission is graded on one process, in order."""
    pool = fake_pool(tmp_path, 1)
    pool.WARM_SPARE = 3
    started, start = [], pool._start

    def counted():
        w = start()
        started.append(w.proc.pid)
        return w

    pool._start = counted
    names = ["a.py"] + [f"slow{i}.py" for i in range(4)]
    done = list(pool.run([Namespace(student=n, path=tmp_path / n) for n in names]))
    assert [item.student for item, _ in done] == names
    assert len({res["pid"] for _, res in done}) == 1
    assert len(started) == 2, started  # the spare, started ahead and never needed


def test_the_pool_grades_one_submission_at_a_time_on_warm_processes(tmp_path):
    """LocalPool.grade, the API the Dask workers use: synchronous, on an idle process kept between
    calls (its pid and how many it graded before are in the result); a process that dies costs
    its submission only and the next call gets a new one; close() stops them all."""
    pool = fake_pool(tmp_path, 1, budget=3, log=False)
    first = pool.grade(Namespace(student="a", path=tmp_path / "a.py"))
    second = pool.grade(Namespace(student="b", path=tmp_path / "b.py"))
    assert first["report"] == {"name": "a.py"} and second["report"] == {"name": "b.py"}
    assert second["pid"] == first["pid"] and (first["warm"], second["warm"]) == (0, 1)  # no new start-up
    assert (
        pool.grade(Namespace(student="c", path=tmp_path / "crash.py"))["error"]
        == "the grading process died (exit status 3)"
    )
    third = pool.grade(Namespace(student="d", path=tmp_path / "d.py"))
    assert third["report"] == {"name": "d.py"} and third["pid"] != first["pid"] and third["warm"] == 0
    assert pool.idle()
    pool.close()
    assert not Path(f"/proc/{third['pid']}").exists()  # killed and reaped
    assert pool.grade(Namespace(student="e", path=tmp_path / "e.py"))["error"] == "the grading pool was stopped"


SHARING_WORKER = textwrap.dedent("""
    import json, os, sys
    proto = os.fdopen(os.dup(1), "w")
    for line in sys.stdin:
        job = json.loads(line)
        name = os.path.basename(job["path"])
        out = {"id": job["id"], "report": {"got": job.get("share", [])}}
        out["share"] = [f"{name}:{os.getpid()}", "same"]  # "same": an export two processes make
        if name.startswith("big"):
            out["share"] = ["x" * 60]
        proto.write(json.dumps(out) + "\\n")
        proto.flush()
""")


def test_a_grading_process_gets_the_others_diagnosis_exports_once(tmp_path):
    """The pool (stand-in grading processes) passes what one process's judges exported to every
    other process with its next submission: never back to its source, each once, one that is
    already held (the same bytes) not again, no more than MAX_EXPORT_BYTES, none in a result."""
    pool = fake_pool(tmp_path, 2, source=SHARING_WORKER)
    pool._outboxes["share"].limit = 200
    try:
        pool.warm_up()
        with pool._cond:
            p, q = sorted(pool._idle, key=lambda w: w.proc.pid)

        def grade(name, w):
            with pool._cond:
                pool._idle.remove(w)
                pool._busy.add(w)
            res = pool.grade(Namespace(student=name, path=tmp_path / name), process=w)
            assert "share" not in res, res
            return res["report"]["got"]

        P, Q = p.proc.pid, q.proc.pid
        assert grade("a.py", p) == []
        assert grade("b.py", q) == [f"a.py:{P}", "same"]
        assert grade("c.py", p) == [f"b.py:{Q}"]  # its own never; "same" was held already
        assert grade("d.py", p) == []
        assert grade("big.py", q) == [f"c.py:{P}", f"d.py:{P}"]
        assert grade("e.py", p) == ["x" * 60]  # within the 200 characters
        assert grade("big2.py", q) == [f"e.py:{P}"]
        assert grade("f.py", p) == []  # the same 60 characters: held already
        pool._outboxes["share"].limit = pool._outboxes["share"].total + 5
        assert grade("g.py", q) == [f"f.py:{P}"]
        assert grade("h.py", p) == []  # nothing more is kept
    finally:
        pool.close()
    pool = fake_pool(tmp_path, 1, source=SHARING_WORKER)
    pool.keep_shared = True  # a Dask worker's pool: the client passes them on (cluster._share_exports)
    try:
        res = pool.grade(Namespace(student="a", path=tmp_path / "a.py"))
        assert res["share"] == [f"a.py:{res['pid']}", "same"] and res["report"]["got"] == []
    finally:
        pool.close()


@pytest.mark.slow
def test_what_one_grading_process_diagnosed_warms_the_other(tmp_path):
    """Two warm grading processes of one pool (the real ones): what the judges of one observed of
    the reference and the catalogued mistakes while diagnosing (diagnose/share.py) reaches the
    other with its next submission, whose report is the one a cold process gives; no export ends
    in a result."""
    from .heldout_multi import CASES

    cases = [c for c in CASES if c.exercise == "masks" and c.kind == "pair"][:2]
    for name, case in zip("ab", cases):
        (tmp_path / name).mkdir()
        (tmp_path / name / "masks.py").write_text(case.source, encoding="utf-8")
    options = {"language": None, "max_examples": None, "exercises": ["masks"], "share": True}
    pool = LocalPool(2, 1, ROOT / "course.yml", options, budget=300, log_path=tmp_path / "workers.log")
    try:
        pool.warm_up()
        first = pool.grade(Namespace(student="a", path=tmp_path / "a"))
        assert "report" in first and "merged" not in first and "share" not in first, first.get("error")
        with pool._cond:  # the next submission goes to the process that did not grade a
            other = next(w for w in pool._idle if w.proc.pid != first["pid"])
            pool._idle.remove(other)
            pool._busy.add(other)
        second = pool.grade(Namespace(student="b", path=tmp_path / "b"), process=other)
        assert second["pid"] != first["pid"] and second["warm"] == 0 and "share" not in second
        assert second.get("merged", 0) > 0, second
    finally:
        pool.close()
    cold = LocalPool(1, 1, ROOT / "course.yml", options, budget=300, log_path=tmp_path / "workers.log")
    try:
        alone = cold.grade(Namespace(student="b", path=tmp_path / "b"))
    finally:
        cold.close()
    assert "merged" not in alone

    def view(report):
        return [
            (e["id"], e["score"], [(t["name"], t["passed"], t["feedback"]) for t in e["tests"]])
            for e in report["exercises"]
        ]

    assert view(second["report"]) == view(alone["report"])
    assert alone["report"]["score"] < alone["report"]["max_score"]  # its mistakes were diagnosed


def test_the_course_travels_as_bytes_and_stays_private(tmp_path):
    """The Dask path sends course.yml and the reference solutions (what the diagnosis
    read), written on the worker into a private folder that the grading processes hide from the
    submissions; a submission's files are written into its own folder, never outside it."""
    from autograder.batch.cluster import course_bundle, materialise_course, write_submission
    from autograder.judge.runner import hidden_paths

    src = tmp_path / "mycourse"
    shutil.copytree(ROOT / "solutions", src / "solutions", ignore=shutil.ignore_patterns("__pycache__"))
    (src / "solutions" / "masks.py").write_text((ROOT / "solutions" / "masks.py").read_text() + "\n# mine\n")
    shutil.copy(ROOT / "course.yml", src / "course.yml")
    course = load_course(src)
    digest, bundle = course_bundle(src / "course.yml", course)
    assert set(bundle) == {"course.yml"} | {f"solutions/{p.name}" for p in (ROOT / "solutions").glob("*.py")}
    assert bundle["solutions/masks.py"].endswith(b"# mine\n")
    assert course_bundle(src / "course.yml", course)[0] == digest
    assert course_bundle(ROOT / "course.yml", load_course())[0] != digest  # another reference, another course

    (tmp_path / "worker").mkdir(mode=0o700)  # the plugin's own folder (tempfile.mkdtemp)
    worker_course = materialise_course(bundle, tmp_path / "worker" / "course-1")
    there = load_course(worker_course)
    assert there.reference("masks").read_bytes() == bundle["solutions/masks.py"]
    assert there.solutions_dir == (tmp_path / "worker" / "course-1" / "solutions").resolve()
    assert (worker_course.parent.stat().st_mode & 0o777) == 0o700
    with pytest.raises(GraderError, match="unexpected file"):
        materialise_course({"../../evil.py": b"x"}, tmp_path / "worker" / "course-2")

    sub = tmp_path / "worker" / "submission-1"
    sub.mkdir(mode=0o700)
    target = write_submission(sub, "carol", True, {"masks.py": b"x = 1\n", "../../escape.py": b"y"})
    assert sorted(p.name for p in target.iterdir()) == ["masks.py"] and not (tmp_path / "escape.py").exists()
    hide = hidden_paths(target, there)
    assert str(worker_course.parent) in hide and str(sub) in hide  # the course and the folders around it


def test_a_grader_exception_is_an_error_row_not_a_crash(tmp_path):
    from autograder.batch import _grade_in_process

    class Broken:
        def run_many(self, *a, **k):
            raise RuntimeError("boom")

    course = load_course()
    res = _grade_in_process(str(ROOT / "solutions"), course, Broken(), ["masks"])
    assert res["error"] == "grader failed: RuntimeError: boom" and res["retry"] is True
    args = Namespace(course=None, language=None, max_examples=None, exercise=["masks"], out=tmp_path, assignment=None)
    batch = Batch(args)
    item = Namespace(student="x", path=ROOT / "solutions")

    class Log:
        def write(self, s):
            pass

        def flush(self):
            pass

    status, report = batch.record(item, "fp", res, Log())
    assert status == "error: grader failed: RuntimeError: boom"
    assert batch.rows["x"]["status"] == status and batch.rows["x"]["total"] == ""
    assert report["batch"]["retry"] is True  # a grader failure is tried again by the next run
    assert batch.kept_report(item, "fp") is None
    gs = json.loads((tmp_path / "gradescope" / "x" / "results.json").read_text())
    assert [t["status"] for t in gs["tests"]] == ["failed"] and "RuntimeError: boom" in gs["output"]


# ---------------------------------------------------------------- slow: whole batches


@pytest.mark.slow
def test_csv_has_one_row_per_student_and_explains_errors(flat_batch):
    root, out, proc = flat_batch
    rows = read_csv(out / "grades.csv")
    assert list(rows[0]) == ["student", *EXERCISES, "total", "max_score", "status", "note"]
    assert [r["student"] for r in rows] == STUDENTS
    by = {r["student"]: r for r in rows}
    assert by["alice"]["total"] == by["sol"]["total"] == "100" and by["alice"]["status"] == "graded"
    assert by["alice"]["masks"] == "20" and by["alice"]["attention"] == "30"
    assert by["bob"]["status"] == "graded" and 0 < float(by["bob"]["total"]) < 100
    assert sum(float(by["bob"][e]) for e in EXERCISES) == float(by["bob"]["total"])
    assert by["carol"]["status"] == "graded" and "SyntaxError" in by["carol"]["note"]  # graded, with a note
    assert by["dave"]["status"].startswith("error: dave.ipynb: the notebook is not valid JSON")
    assert by["syntax"]["status"].startswith("error: syntax.py: SyntaxError")
    assert by["ghost"]["status"] == f"error: no .py or .ipynb file in {root / 'ghost'}"
    for bad in ("dave", "ghost", "syntax"):  # never a silent 0
        assert by[bad]["total"] == "" and all(by[bad][e] == "" for e in EXERCISES)
    assert "notes.txt" in proc.stderr and "graded alice" in proc.stderr and "error  dave" in proc.stderr
    assert "7 submission(s): 4 graded, 3 error(s)" in proc.stdout and "per submission" in proc.stdout
    totals = [float(r["total"]) for r in rows if r["status"] == "graded"]
    assert f"mean score {sum(totals) / len(totals):.2f} / 100 over 4 graded" in proc.stdout
    assert not list(out.rglob("*.tmp"))


@pytest.mark.slow
def test_reports_equal_the_json_of_grade(flat_batch, course, tmp_path):
    root, out, _ = flat_batch
    procs = {
        s: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "autograder",
                "grade",
                str(root / name),
                "--json",
                str(tmp_path / f"{s}.json"),
                "-q",
                "--course",
                str(course),
            ],
            cwd=ROOT,
        )
        for s, name in [("bob", "bob.ipynb"), ("carol", "carol"), ("dave", "dave.ipynb")]
    }
    for s, p in procs.items():
        assert p.wait(timeout=600) == 0
        alone = json.loads((tmp_path / f"{s}.json").read_text(encoding="utf-8"))
        batch = load_report(out, s)
        assert strip(batch) == strip(alone), s
        assert batch["batch"]["student"] == s and len(batch["batch"]["resume_key"]) == 64


@pytest.mark.slow
def test_gradescope_files_are_valid(flat_batch):
    _, out, _ = flat_batch
    for s in STUDENTS:
        gs = json.loads((out / "gradescope" / s / "results.json").read_text(encoding="utf-8"))
        report = load_report(out, s)
        assert {"score", "tests", "output", "visibility"} <= set(gs) and gs["visibility"] == "visible"
        assert isinstance(gs["score"], float) and isinstance(gs["output"], str)
        if report["batch"]["status"] == "graded":
            assert gs["score"] == report["score"]
            assert len(gs["tests"]) == sum(len(e["tests"]) for e in report["exercises"])
            assert abs(sum(t["score"] for t in gs["tests"]) - gs["score"]) < 1e-9
            for t in gs["tests"]:
                assert set(t) >= {"name", "score", "max_score", "output", "status"}
                assert t["status"] in ("passed", "failed") and (t["status"] == "passed") == (
                    t["score"] == t["max_score"]
                )
        else:  # not graded: said in the output and by one failed test, never a silent 0
            assert [t["status"] for t in gs["tests"]] == ["failed"] and gs["extra_data"]["graded"] is False
            assert report["batch"]["status"][len("error: ") :] in gs["output"]


@pytest.mark.slow
def test_resume_regrades_only_what_is_missing_or_broken(flat_batch, course, tmp_path):
    root, first, _ = flat_batch
    out = tmp_path / "grades"
    shutil.copytree(first, out)
    before = {s: (out / "reports" / f"{s}.json").stat().st_mtime_ns for s in STUDENTS}
    csv_before = (out / "grades.csv").read_text()
    (out / "reports" / "alice.json").unlink()
    text = (out / "reports" / "bob.json").read_text()
    (out / "reports" / "bob.json").write_text(text[: len(text) // 2])  # as if written without os.replace
    (out / "reports" / ".carol.json.k3j2.tmp").write_text(text[:100])  # a killed batch's temp file
    proc = cli("grade-batch", root, "--out", out, "--course", course)
    assert proc.returncode == 0, proc.stderr
    assert run_log(out) == {s: "graded" if s in ("alice", "bob") else "kept" for s in STUDENTS}
    assert "graded alice" in proc.stderr and "graded bob" in proc.stderr and "carol" not in proc.stderr
    assert "5 up to date, 2 to grade" in proc.stderr
    for s in STUDENTS:
        if s not in ("alice", "bob"):
            assert (out / "reports" / f"{s}.json").stat().st_mtime_ns == before[s]
    assert (out / "grades.csv").read_text() == csv_before  # totals unchanged: the grader is deterministic
    assert not list(out.rglob("*.tmp"))
    assert "7 submission(s): 4 graded, 3 error(s) (2 graded in this run, 5 kept up to date)" in proc.stdout


def _processes_mentioning(text):
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmd and "autograder.batch" in cmd:
                found.append(int(p.name))
    return found


@pytest.mark.slow
def test_killed_batch_resumes_and_grades_everyone_exactly_once(tmp_path, course):
    root = make_flat(tmp_path / "class")
    out = tmp_path / "grades"
    own_course = tmp_path / "kill-course.yml"  # its path marks this test's grading processes
    shutil.copy(course, own_course)
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "grade-batch",
        str(root),
        "--out",
        str(out),
        "--course",
        str(own_course),
        "--exercise",
        "masks",
        "--exercise",
        "masked_loss",
        "--workers",
        "1",
    ]
    batch = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not list((out / "reports").glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.05)
    batch.send_signal(signal.SIGKILL)
    batch.wait()
    finished = {p.stem for p in (out / "reports").glob("*.json")}
    assert 1 <= len(finished) < len(STUDENTS)
    assert not (out / "grades.csv").exists()
    for _ in range(100):  # the grading processes die with the batch
        if not _processes_mentioning(str(own_course)):
            break
        time.sleep(0.05)
    assert not _processes_mentioning(str(own_course))

    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    log = run_log(out)
    assert sorted(log) == STUDENTS
    assert {s for s, what in log.items() if what == "kept"} == finished
    rows = read_csv(out / "grades.csv")
    assert [r["student"] for r in rows] == STUDENTS  # one row each, no duplicates
    assert list(rows[0]) == ["student", "masks", "masked_loss", "total", "max_score", "status", "note"]
    assert sorted(p.stem for p in (out / "reports").glob("*.json")) == STUDENTS
    assert not list(out.rglob("*.tmp"))


@pytest.mark.slow
def test_nbgrader_layout_and_force(tmp_path, course):
    sub = tmp_path / "course" / "submitted"
    for student, assignment, src in [
        ("alice", "seq", EX / "alice.py"),
        ("bob", "seq", EX / "bob.ipynb"),
        ("dave", "seq", EX / "dave.ipynb"),
        ("erin", "cnn", EX / "alice.py"),
    ]:
        (sub / student / assignment).mkdir(parents=True)
        shutil.copy(src, sub / student / assignment / ("seq" + src.suffix))
        (sub / student / assignment / "timestamp.txt").write_text("2024-01-01 10:00:00")
    out = tmp_path / "grades"
    proc = cli("grade-batch", tmp_path / "course", "--out", out, "--course", course, "--exercise", "masks")
    assert proc.returncode == 2 and "--assignment" in proc.stderr
    proc = cli(
        "grade-batch",
        tmp_path / "course",
        "--assignment",
        "seq",
        "--out",
        out,
        "--course",
        course,
        "--exercise",
        "masks",
    )
    assert proc.returncode == 0, proc.stderr
    assert "erin" in proc.stderr  # no seq folder: said, no row
    rows = read_csv(out / "grades.csv")
    assert [r["student"] for r in rows] == ["alice", "bob", "dave"]
    assert list(rows[0]) == ["student", "masks", "total", "max_score", "status", "note"]
    assert rows[0]["masks"] == "20" and rows[0]["status"] == "graded"
    assert float(rows[1]["masks"]) < 20 and rows[2]["status"].startswith(
        "error: seq.ipynb: the notebook is not valid JSON"
    )
    assert load_report(out, "alice")["submission"] == str(sub / "alice" / "seq")
    first = (out / "grades.csv").read_text()

    # the submitted folder itself, --force: everyone regraded, same grades
    proc = cli(
        "grade-batch",
        sub,
        "--assignment",
        "seq",
        "--out",
        out,
        "--course",
        course,
        "--exercise",
        "masks",
        "--force",
        "-q",
    )
    assert proc.returncode == 0, proc.stderr
    assert run_log(out) == {"alice": "graded", "bob": "graded", "dave": "graded"}
    assert (out / "grades.csv").read_text() == first
    assert proc.stderr == "" or "graded" not in proc.stderr  # -q: no progress, no lines
    assert "3 submission(s): 2 graded, 1 error(s)" in proc.stdout


def mismatched_course(course, folder):
    """A copy of course.yml whose masks exercise names a test no property implements."""
    c = yaml.safe_load(course.read_text())
    tests = c["exercises"]["masks"]["tests"]
    tests["padding_mask/invented"] = tests.pop("padding_mask/marks_real_tokens")
    path = folder / "mismatched-course.yml"
    path.write_text(yaml.safe_dump(c, sort_keys=False))
    return path


def test_a_course_that_the_properties_do_not_match_stops_the_batch(course, tmp_path):
    root = tmp_path / "class"
    root.mkdir()
    (root / "alice.py").write_text((ROOT / "solutions" / "masks.py").read_text())
    (root / "bob.py").write_text((ROOT / "solutions" / "masks.py").read_text())
    proc = cli("grade-batch", root, "--out", tmp_path / "out", "--course", mismatched_course(course, tmp_path), "-q")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "error: course.yml lists tests that no property implements: ['masks/padding_mask/invented']" in proc.stderr
    assert "stopped: course.yml lists tests" in (tmp_path / "out" / "batch.log").read_text(encoding="utf-8")
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_a_dask_task_that_waits_on_a_stalled_test_lets_the_worker_take_the_next(tmp_path, monkeypatch):
    """On a Dask worker of one thread, a task whose grading process waits on a stalled test
    secedes from the worker's thread pool: the worker grades the next submissions meanwhile, on
    the pool's spare process (a stand-in grading process; an in-process LocalCluster)."""
    distributed = pytest.importorskip("distributed")
    from autograder.batch import cluster as C
    from autograder.config import load_course

    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER)

    class FakePool(LocalPool):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.cmd = [sys.executable, str(script)]
            self.STARTUP = 0

    monkeypatch.setattr(C, "LocalPool", FakePool)
    digest, bundle = C.course_bundle(ROOT / "course.yml", load_course(ROOT / "course.yml"))
    names = ["stall.py", "a.py", "b.py"]
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        first = json.loads(
            client.submit(
                C.grade_task, "warm.py", False, {"warm.py": b""}, digest, bundle, {}, 60, "warm.py", pure=False
            ).result()
        )  # the pool, warm
        futures = {
            client.submit(C.grade_task, n, False, {n: b""}, digest, bundle, {}, 60, n, pure=False): n for n in names
        }
        done = [(futures[f], json.loads(f.result())) for f in distributed.as_completed(futures)]
    order = [n for n, _ in done]
    pids = {n: res["pid"] for n, res in done}
    assert first["report"] == {"name": "warm.py", "submission": "warm.py"}
    assert all(res["report"] == {"name": n, "submission": n} for n, res in done), done
    assert order[-1] == "stall.py", order  # a.py and b.py were graded while it waited
    assert pids["a.py"] != pids["stall.py"] and pids["b.py"] != pids["stall.py"], pids


def test_the_plugins_quiet_the_workers_and_nannies_own_periodic_work_and_put_it_back():
    """A worker holding the grading plugin stops its statistical profiler (its threads only wait on
    the grading processes' pipes), ticks its event loop once a second, not every 20 ms, and runs its
    monitors less often; its nanny too; the scheduler while batches run; removing the plugins (the
    last batch ending) puts it all back (a real LocalCluster)."""
    distributed = pytest.importorskip("distributed")
    from autograder.batch import cluster as C

    def state(dask_worker=None, dask_nanny=None, dask_scheduler=None):
        pcs = (dask_worker or dask_nanny or dask_scheduler).periodic_callbacks
        return {n: (pcs[n].is_running(), pcs[n].callback_time) for n in pcs if not n.startswith("amm-")}

    def both(client):
        return next(iter(client.run(state).values())), next(iter(client.run(state, nanny=True).values()))

    def wait_for(client, done):
        for _ in range(100):  # setup and teardown ask the server's event loop to do it
            now = both(client)
            if done(now):
                return now
            time.sleep(0.05)
        return now

    def quieted(before, kind):  # what QUIET[kind] makes of a server's callbacks
        out = dict(before)
        for name, interval in C.QUIET[kind].items():
            running, was = before[name]
            out[name] = (False, was) if interval is None else (running, max(was, interval))
        return out

    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        worker, nanny = before = both(client)
        assert worker["profile"][0] and worker["tick"] == (True, 20) and nanny["tick"] == (True, 20), before
        assert worker["monitor"] == (True, 500) and nanny["memory_monitor"] == (True, 100), before
        assert "profile" not in nanny
        C.register_plugins(client)
        quiet = wait_for(client, lambda now: not now[0]["profile"][0] and now[1]["tick"][1] == 1000)
        assert quiet == (quieted(worker, "worker"), quieted(nanny, "nanny")), quiet
        assert quiet[0]["profile"] == (False, 10) and quiet[0]["memory_monitor"] == (True, 1000)
        assert quiet[1]["monitor"] == (True, 5000) and quiet[0]["heartbeat"] == worker["heartbeat"]
        C.register_plugins(client)  # again (a second batch): the same
        assert both(client) == quiet
        client.unregister_worker_plugin(C.PLUGIN_NAME)
        client.unregister_worker_plugin(C.NANNY_PLUGIN_NAME, nanny=True)
        after = wait_for(client, lambda now: now[0]["profile"][0] and now[1]["tick"][1] == 20)
        assert after == before, (before, after)

        # the scheduler: while at least one batch runs
        scheduler = client.run_on_scheduler(state)
        assert scheduler["tick"] == (True, 20) and scheduler["monitor"] == (True, 500), scheduler
        C.quiet_scheduler(client, True)
        C.quiet_scheduler(client, True)  # a second batch beside the first
        quiet = client.run_on_scheduler(state)
        assert quiet == quieted(scheduler, "scheduler")
        assert quiet["tick"] == (True, 1000) and quiet["monitor"] == (True, 5000), quiet
        assert quiet["stealing"] == scheduler["stealing"]
        C.quiet_scheduler(client, False)  # the first ends: the second still runs
        assert client.run_on_scheduler(state) == quieted(scheduler, "scheduler")
        C.quiet_scheduler(client, False)
        assert client.run_on_scheduler(state) == scheduler
        C.quiet_scheduler(client, False)  # one end too many changes nothing
        assert client.run_on_scheduler(state) == scheduler


@pytest.mark.slow
def test_dask_cluster_gives_the_same_files(flat_batch, course, tmp_path):
    distributed = pytest.importorskip("distributed")
    root, local, _ = flat_batch
    small = tmp_path / "class"
    small.mkdir()
    for name in ("alice.py", "bob.ipynb", "dave.ipynb"):
        shutil.copy(root / name, small)
    shutil.copytree(root / "sol", small / "sol")  # a folder travels to the worker too
    shutil.copytree(root / "ghost", small / "ghost")
    out = tmp_path / "grades"

    def tick(dask_scheduler=None):
        return dask_scheduler.periodic_callbacks["tick"].callback_time

    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        with ThreadPoolExecutor(1) as ex, distributed.Client(cluster.scheduler_address) as watcher:
            batch = ex.submit(
                cli,
                "grade-batch",
                small,
                "--out",
                out,
                "--course",
                course,
                "--dask-scheduler",
                cluster.scheduler_address,
            )
            ticks = set()  # the scheduler's tick interval while the batch runs (cluster.quiet_scheduler)
            while not batch.done():
                ticks.add(watcher.run_on_scheduler(tick))
                time.sleep(0.1)
            proc = batch.result()
            assert 1000 in ticks and watcher.run_on_scheduler(tick) == 20, ticks  # put back at the end
        assert proc.returncode == 0, proc.stderr
        assert "Dask cluster" in proc.stderr
        for s in ("alice", "bob", "dave", "sol"):
            remote, here = load_report(out, s), load_report(local, s)
            assert remote["submission"] == str(small / Path(here["submission"]).name)
            remote["submission"] = here["submission"]
            assert strip(remote) == strip(here), s
            assert remote["batch"]["status"] == here["batch"]["status"]
            assert remote["batch"]["resume_key"] == here["batch"]["resume_key"]  # bytes, not paths
        rows = read_csv(out / "grades.csv")
        assert [r["student"] for r in rows] == ["alice", "bob", "dave", "ghost", "sol"]
        assert rows[2]["status"].startswith("error: dave.ipynb")
        assert rows[3]["status"] == f"error: no .py or .ipynb file in {small / 'ghost'}"
        # warm processes: one grading process per worker thread, kept between tasks, so a process
        # graded several submissions (paying the import of torch once)
        processes = {}
        for line in (out / "batch.log").read_text(encoding="utf-8").splitlines():
            if " graded " in line and " process=" in line:
                host_pid, warm = line.split(" process=")[1].split()[0].rsplit("#", 1)
                processes.setdefault(host_pid, []).append(int(warm))
        assert sum(map(len, processes.values())) == 4 and 1 <= len(processes) <= 2, processes
        assert max(len(w) for w in processes.values()) >= 2 and any(max(w) >= 1 for w in processes.values())
        for warm in processes.values():
            assert sorted(warm) == list(range(len(warm)))  # the same process each time, never restarted

        def plugin_state(dask_worker):
            import os
            import stat

            plugin = dask_worker.plugins["seqgrader-grading"]
            return {
                "root": str(plugin.root),
                "mode": stat.S_IMODE(os.stat(plugin.root).st_mode),
                "entries": {
                    p: stat.S_IMODE(os.stat(os.path.join(plugin.root, p)).st_mode) for p in os.listdir(plugin.root)
                },
                "pids": [w.proc.pid for pool, _ in plugin.pools.values() for w in pool._all],
                "exports": {k: sorted(v) for k, v in plugin.exports.items()},
            }

        with distributed.Client(cluster.scheduler_address) as client:
            states = client.run(plugin_state)
        assert len(states) == 2
        # what one worker's judges' diagnoses observed reaches the other's (through the client):
        # both hold the exports (bob's mistakes were diagnosed)
        first, second = (st["exports"] for st in states.values())
        assert first == second and len(first) == 1 and next(iter(first.values())), [len(v) for v in first.values()]
        for st in states.values():  # a private folder; the course in it, no submission left behind
            assert st["mode"] == 0o700 and st["entries"] and all(m == 0o700 for m in st["entries"].values()), st
            assert set(st["entries"]) - {"processes"} and all(
                e.startswith("course-") for e in st["entries"] if e != "processes"
            ), st
        pids = [pid for st in states.values() for pid in st["pids"]]
        assert {int(h.rsplit(":", 1)[1]) for h in processes} <= set(pids)  # still alive, still warm
        # resume works the same: nothing to do
        again = cli(
            "grade-batch", small, "--out", out, "--course", course, "--dask-scheduler", cluster.scheduler_address
        )
        assert again.returncode == 0 and run_log(out) == dict.fromkeys(["alice", "bob", "dave", "ghost", "sol"], "kept")
        # a course.yml that the properties do not match: the workers' processes say so (the client
        # imports no torch to check it), and the batch stops with the reason, as locally
        stopped = cli(
            "grade-batch",
            small,
            "--out",
            tmp_path / "bad",
            "--course",
            mismatched_course(course, tmp_path),
            "--dask-scheduler",
            cluster.scheduler_address,
            "-q",
        )
        assert stopped.returncode == 2, (stopped.stdout, stopped.stderr)
        assert (
            "error: course.yml lists tests that no property implements: ['masks/padding_mask/invented']"
            in stopped.stderr
        )
        assert "stopped: course.yml lists tests" in (tmp_path / "bad" / "batch.log").read_text(encoding="utf-8")
    # the cluster closed: the plugin's teardown stopped the processes and removed its folders
    for _ in range(100):
        if not any(Path(f"/proc/{pid}").exists() for pid in pids):
            break
        time.sleep(0.1)
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids)
    assert not any(Path(st["root"]).exists() for st in states.values())
    local_rows = {r["student"]: r for r in read_csv(local / "grades.csv")}
    for r in rows:
        if r["student"] != "ghost":  # its status names its own folder
            assert r == local_rows[r["student"]]
