"""nbgrader end to end, as the instructor and the students do it: the wheel installed in a fresh
virtualenv outside the checkout (conftest.installed), real nbgrader from PyPI, real Jupyter kernels.

`seqgrader init-course`, `seqgrader nbgrader-course`, then the commands it prints, run as printed:
`nbgrader generate_assignment`; nine submissions (correct; a catalogued bug; an endless loop;
corrupt JSON; a deleted test cell; correct code that emits warnings; a thief whose cells only look
for answers; a classmate with a marked notebook; a correct one submitted after the due date);
`nbgrader autograde`, `generate_feedback`, `export`; and, in a copy of the course taken before
autograde, the fast path: `grade-batch`, `nbgrader-gradebook`, `generate_feedback`, `export`.
The students' side runs in a virtualenv with only torch, numpy, matplotlib, pytest, nbformat,
nbgrader and ipykernel: `pytest` and `nbgrader validate` in the released folder.  The assignment
holds two exercises (masks, masked_loss) to keep CI short.  The course lives where a real one does
(under /srv or the home directory, see conftest.real_place), and its source notebooks and the
classmate's carry a marker that no output of the thief may show.
"""

import ast
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
import yaml

from autograder.catalogue import load_catalogue
from autograder.nbgrader_course.preprocessor import hidden_call

from .conftest import ROOT, real_place

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent  # this checkout's environment (the hand-graded course below)
ASSIGNMENT = "e2e"
EXERCISES = ["masks", "masked_loss"]
CLASSMATE = "quinn"  # a classmate whose notebook carries the marker
THIEF = "mallory"  # cells that only look for answers: the course's source/, classmates, the grader, memory
LATE = "grace"  # correct, submitted after the due date
DUE, ON_TIME, LATE_TIME = "2026-11-30 12:00:00 UTC", "2026-11-30 08:00:00 UTC", "2026-11-30 20:00:00 UTC"
STUDENTS = ["alice", "bob", "carol", "dave", "erin", "frank", CLASSMATE, THIEF, LATE]
HOSTILE = ROOT / "tests" / "files" / "hostile"


def run(cmd, cwd, timeout=900, bin_dir=BIN, ok=(0,)):
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("VIRTUAL_ENV", None)
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, shell=isinstance(cmd, str)
    )
    assert proc.returncode in ok, f"{cmd} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


def nbgrader(*args, cwd):
    return run([str(BIN / "nbgrader"), *args], cwd)


def autograder(*args, cwd=ROOT):
    return run([sys.executable, "-m", "autograder", *map(str, args)], cwd)


def set_cell(nb, grade_id, source):
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            cell.source = source
            return
    raise AssertionError(f"no cell {grade_id}")


def mistake(mid):
    return next(m for _, m in load_catalogue() if m["id"] == mid)["code"]


def printed_steps(text):
    """The commands `nbgrader-course` printed after "Next": (slow path, fast path), comments left out."""
    block = text.split("\nNext", 1)[1]
    slow, _, fast = block.partition("\nor, faster")

    def cmds(part):
        return [ln.strip() for ln in part.splitlines()[1:] if ln.startswith("  ") and not ln.strip().startswith("#")]

    return cmds(slow), cmds(fast)


@pytest.fixture(scope="module")
def course(installed):
    """The built course after generate_assignment, the nine submissions, autograde, feedback, export;
    and a copy taken before autograde that went through the fast path."""
    tmp = real_place("nbgrader-e2e")
    try:
        yield _build_course(tmp, installed)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _build_course(tmp, installed):
    vbin = installed["bin"]
    marker = f"SECRET{__import__('uuid').uuid4().hex[:12]}"

    def step(cmd, cwd, ok=(0,)):
        return run(cmd, cwd, bin_dir=vbin, ok=ok)

    step(["seqgrader", "init-course", "src"], tmp)
    course_file = tmp / "src" / "course.yml"
    data = yaml.safe_load(course_file.read_text(encoding="utf-8"))
    data["assignments"] = {ASSIGNMENT: EXERCISES}
    data.pop("service", None)  # the grading service's rules name the built-in course's assignments
    for ex in data["exercises"].values():  # the endless loop costs seconds, not minutes (6 tests x 5 s)
        ex["timeout"] = 90
        for t in ex["tests"].values():
            t["timeout"] = 5
    course_file.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    cdir = tmp / "course"
    built = step(["seqgrader", "nbgrader-course", "course", "--course", "src"], tmp)
    slow, fast = printed_steps(built.stderr)
    assert [c.split()[:2] for c in slow] == [
        ["nbgrader", "generate_assignment"],
        ["nbgrader", "autograde"],
        ["nbgrader", "generate_feedback"],
        ["nbgrader", "export"],
    ], slow
    assert [c.split()[:2] for c in fast] == [
        ["seqgrader", "grade-batch"],
        ["seqgrader", "nbgrader-gradebook"],
        ["nbgrader", "generate_feedback"],
        ["nbgrader", "export"],
    ], fast
    step(["nbgrader", "db", "assignment", "add", ASSIGNMENT, f"--duedate={DUE}"], cdir)
    with open(cdir / "nbgrader_config.py", "a", encoding="utf-8") as f:
        f.write('\nc.LateSubmissionPlugin.penalty_method = "zero"\n')
    step(slow[0], cdir)  # nbgrader generate_assignment e2e

    source = {ex: nbformat.read(str(cdir / "source" / ASSIGNMENT / f"{ex}.ipynb"), as_version=4) for ex in EXERCISES}
    release = {ex: nbformat.read(str(cdir / "release" / ASSIGNMENT / f"{ex}.ipynb"), as_version=4) for ex in EXERCISES}

    def submit(student, notebooks, when=ON_TIME):
        folder = cdir / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        for ex, nb in notebooks.items():
            if isinstance(nb, str):
                (folder / f"{ex}.ipynb").write_text(nb, encoding="utf-8")
            else:
                nbformat.write(nb, str(folder / f"{ex}.ipynb"))
        shutil.copy(cdir / "release" / ASSIGNMENT / "conftest.py", folder)  # students hand in the whole folder
        (folder / "timestamp.txt").write_text(when)

    def answered(ex, **replace):
        """The released notebook with the student's answers: the reference's, or `replace`'s code."""
        nb = nbformat.from_dict(json.loads(json.dumps(release[ex])))
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("solution"):
                name = meta["grade_id"]
                src = next(c.source for c in source[ex].cells if c.metadata.get("nbgrader", {}).get("grade_id") == name)
                cell.source = replace.get(name, src)
        return nb

    submit("alice", {ex: answered(ex) for ex in EXERCISES})
    submit(
        "bob",
        {
            "masks": answered("masks"),
            "masked_loss": answered("masked_loss", masked_cross_entropy=mistake("ml_per_sequence_mean")),
        },
    )
    loop = "def padding_mask(lengths, max_len=None):\n    while True:\n        pass\n"
    submit("carol", {"masks": answered("masks", padding_mask=loop), "masked_loss": answered("masked_loss")})
    submit(
        "dave",
        {
            "masks": '{"cells": [{"cell_type": "code", "source": "def padding_mask(',
            "masked_loss": answered("masked_loss"),
        },
    )
    erin = answered("masks")
    erin.cells = [c for c in erin.cells if not hidden_call(c.source) or "padding_mask" not in c.source]
    submit("erin", {"masks": erin, "masked_loss": answered("masked_loss")})
    noisy = answered("masked_loss")
    warn = (
        "import warnings\nwarnings.warn('frank was here', UserWarning)\n"
        "import numpy as np\nnp.array([1.0]) / 0  # a RuntimeWarning on stderr too\n"
    )
    sol = next(c for c in noisy.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "masked_cross_entropy")
    sol.source = (
        warn
        + sol.source
        + textwrap.dedent("""

        _quiet = masked_cross_entropy


        def masked_cross_entropy(logits, targets, mask):  # warns on every call
            warnings.warn("frank's loss was called", UserWarning)
            return _quiet(logits, targets, mask)
        """)
    )
    submit("frank", {"masks": answered("masks"), "masked_loss": noisy})
    submit(LATE, {ex: answered(ex) for ex in EXERCISES}, when=LATE_TIME)
    # the secrets: a marker in every solution cell of source/ and in the classmate's notebooks
    for ex in EXERCISES:
        path = cdir / "source" / ASSIGNMENT / f"{ex}.ipynb"
        nb = nbformat.read(str(path), as_version=4)
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("solution") and cell.cell_type == "code":
                cell.source = f"# {marker}-source\n" + cell.source.replace("\ndef ", f"\n# {marker}-source\ndef ")
        nbformat.write(nb, str(path))
    quinn = {}
    for ex in EXERCISES:
        nb = answered(ex)
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("solution") and cell.cell_type == "code":
                cell.source = f"# {marker}-classmate\n" + cell.source.replace("\ndef ", f"\n# {marker}-classmate\ndef ")
        quinn[ex] = nb
    submit(CLASSMATE, quinn)
    thief = {}
    for ex, snoop in (("masks", "snoop_course.py"), ("masked_loss", "snoop_memory.py")):
        nb = answered(ex)
        first = True
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("solution") and cell.cell_type == "code":
                cell.source = (HOSTILE / snoop).read_text(encoding="utf-8") if first else "pass"
                first = False
        thief[ex] = nb
    submit(THIEF, thief)
    fdir = tmp / "fast"  # the same course and class, for the fast path
    shutil.copytree(cdir, fdir, symlinks=True)
    bdir = tmp / "broken"  # ... and for an environment where the reference loses points
    shutil.copytree(cdir, bdir, symlinks=True)

    auto = step(slow[1], cdir, ok=(1,))  # nbgrader autograde e2e: exit 1, dave's corrupt notebook
    errored = re.findall(r"error processing assignment '\S+' for student '(\w+)'", auto.stderr)
    assert errored == ["dave"], (errored, auto.stderr[-3000:])
    for cmd in slow[2:]:  # nbgrader generate_feedback e2e; nbgrader export
        step(cmd, cdir)
    for cmd in fast:  # seqgrader grade-batch ...; seqgrader nbgrader-gradebook ...; generate_feedback; export
        step(cmd, fdir)
    return {
        "dir": cdir,
        "fast": fdir,
        "broken": bdir,
        "course_file": cdir / "course.yml",
        "installed": installed,
        "autograde_log": auto.stderr + auto.stdout,
        "source": source,
        "release": release,
        "marker": marker,
    }


def gradebook_scores(cdir):
    """{student: {notebook: score}} and {student: {notebook: [cells needing manual grading]}}."""
    from nbgrader.api import Gradebook

    scores, flagged = {}, {}
    with Gradebook(f"sqlite:///{cdir / 'gradebook.db'}", "seqgrader") as gb:
        for sub in gb.assignment_submissions(ASSIGNMENT):
            for nb in sub.notebooks:
                scores.setdefault(sub.student.id, {})[nb.name] = nb.score
                flagged.setdefault(sub.student.id, {})[nb.name] = [g.name for g in nb.grades if g.needs_manual_grade]
    return scores, flagged


def exported(cdir):
    return {r["student_id"]: r for r in csv.DictReader(open(cdir / "grades.csv", newline="", encoding="utf-8"))}


def grade_scores(course, student):
    """`grade` (the installed one) on the same notebooks: {exercise: score}."""
    out = course["dir"].parent / f"grade-{student}.json"
    run(
        [
            "seqgrader",
            "grade",
            course["dir"] / "submitted" / student / ASSIGNMENT,
            "--course",
            course["course_file"],
            "--assignment",
            ASSIGNMENT,
            "--json",
            out,
            "-q",
        ],
        course["dir"].parent,
        bin_dir=course["installed"]["bin"],
    )
    report = json.loads(out.read_text(encoding="utf-8"))
    return {e["id"]: e["score"] for e in report["exercises"]}, report


def test_the_course_has_solutions_in_regions_and_no_hidden_code(course):
    cdir = course["dir"]
    prop_lines = {
        ln.strip()
        for ex in EXERCISES
        for ln in (ROOT / "autograder" / "exercises" / ex / "properties.py").read_text(encoding="utf-8").splitlines()
        if len(ln.strip()) > 25 and not ln.strip().startswith(("#", "import ", "from "))
    }
    for ex in EXERCISES:
        src = course["source"][ex]
        rel = course["release"][ex]
        sol = [c for c in src.cells if c.metadata.get("nbgrader", {}).get("solution")]
        assert sol and all("### BEGIN SOLUTION" in c.source for c in sol)
        hidden = [c for c in rel.cells if hidden_call(c.source)]
        assert hidden and all(c.metadata["nbgrader"]["locked"] and c.metadata["nbgrader"]["grade"] for c in hidden)
        assert sum(c.metadata["nbgrader"]["points"] for c in hidden) == pytest.approx(
            sum(
                t["points"]
                for t in yaml.safe_load(course["course_file"].read_text())["exercises"][ex]["tests"].values()
            )
        )
        visible = [c for c in rel.cells if c.source.startswith("# autograder: visible checks")]
        assert visible and all(c.metadata["nbgrader"]["points"] == 0 for c in visible)
        text = (cdir / "release" / ASSIGNMENT / f"{ex}.ipynb").read_text(encoding="utf-8")
        assert "BEGIN SOLUTION" not in text and "raise NotImplementedError" in text
        code = "\n".join(c.source for c in rel.cells)
        leaked = [ln for ln in prop_lines if ln in code]
        assert not leaked, f"hidden property code in the released {ex}.ipynb: {leaked[:3]}"
        assert not re.search(r"^\s*(import|from) autograder", code, re.M), "a released cell needs the grader"
        # the student text agrees on points: the visible checks score nothing, the hidden tests everything
        prose = "\n".join(c.source for c in rel.cells if c.cell_type == "markdown")
        assert "points in all" not in prose and "score no points themselves" in prose and "0 points" in prose
        assert "python -m autograder" not in text and "pip install" not in text
    released = {p.name for p in (cdir / "release" / ASSIGNMENT).iterdir()}
    assert released == {f"{ex}.ipynb" for ex in EXERCISES} | {"conftest.py", "submit.py", "submit.json"}, released
    assert json.loads((cdir / "release" / ASSIGNMENT / "submit.json").read_text()) == {"assignment": ASSIGNMENT}
    cfg = (cdir / "nbgrader_config.py").read_text(encoding="utf-8")
    assert "add_missing_cells = True" in cfg and "SandboxGrade" in cfg and "pre_convert_hook" in cfg


def test_autograde_and_the_fast_path_give_grade_s_scores(course):
    scores, flagged = gradebook_scores(course["dir"])
    assert set(scores) == set(STUDENTS), scores  # dave (nbgrader could not read his notebook) too
    assert "SandboxGrade: masks" in course["autograde_log"], "our preprocessor did not run: is the config loaded?"
    assert scores["alice"] == {"masks": 20.0, "masked_loss": 15.0}
    assert scores["bob"]["masks"] == 20.0 and scores["bob"]["masked_loss"] < 15.0
    assert scores["carol"]["masks"] < 20.0 and scores["carol"]["masked_loss"] == 15.0
    expected, _ = grade_scores(course, "bob")  # `grade` itself, on one notebook with partial credit
    assert scores["bob"] == pytest.approx(expected), (scores["bob"], expected)
    # grade-batch's reports (grade's JSON) and the fast path's gradebook: the same scores for everyone
    fast, fast_flagged = gradebook_scores(course["fast"])
    assert fast == scores, (fast, scores)
    for student in STUDENTS:
        report = json.loads((course["fast"] / "grades" / "reports" / f"{student}.json").read_text(encoding="utf-8"))
        if student != "dave":
            assert {e["id"]: e["score"] for e in report["exercises"]} == pytest.approx(scores[student]), student
    assert flagged["dave"]["masks"] and fast_flagged["dave"]["masks"] == flagged["dave"]["masks"]


def test_a_thief_gets_nothing_and_sees_nothing(course):
    """mallory's cells only look for answers (tests/files/hostile/snoop_course.py: the course folder
    from $PWD up, classmates, gradebook.db; snoop_memory.py: its own memory): 0 points, and none
    of the course's secrets (source/ solutions, quinn's notebook) in anything she gets back."""
    scores, _ = gradebook_scores(course["dir"])
    assert scores[THIEF] == {"masks": 0.0, "masked_loss": 0.0}, scores[THIEF]
    assert scores[CLASSMATE] == {"masks": 20.0, "masked_loss": 15.0}  # the marked notebooks are real answers
    marker = course["marker"]
    for cdir in (course["dir"], course["fast"]):
        mine = [
            *(cdir / "autograded" / THIEF).rglob("*"),
            *(cdir / "feedback" / THIEF).rglob("*"),
            *(cdir / "grades").rglob(f"{THIEF}*"),
        ]
        assert any(p.suffix == ".html" for p in mine), "no feedback was generated for the thief"
        leaked = [p for p in mine if p.is_file() and marker in p.read_text(encoding="utf-8", errors="replace")]
        assert leaked == [], leaked
        assert marker not in (cdir / "grades.csv").read_text(encoding="utf-8")
        # what the thief's cells raised reached its feedback (capped), so the channel was really tried
        html = (cdir / "feedback" / THIEF / ASSIGNMENT / "masks.html").read_text(encoding="utf-8")
        assert "LookupError" in html


def test_a_warning_costs_nothing(course):
    scores, _ = gradebook_scores(course["dir"])
    assert scores["frank"] == {"masks": 20.0, "masked_loss": 15.0}


def test_a_deleted_test_cell_comes_back(course):
    for cdir in (course["dir"], course["fast"]):
        nb = nbformat.read(str(cdir / "autograded" / "erin" / ASSIGNMENT / "masks.ipynb"), as_version=4)
        calls = [hidden_call(c.source) for c in nb.cells if hidden_call(c.source)]
        assert ("masks", "padding_mask") in calls
    scores, _ = gradebook_scores(course["dir"])
    assert scores["erin"]["masks"] == 20.0


def test_an_endless_loop_costs_only_its_function(course):
    nb = nbformat.read(str(course["dir"] / "autograded" / "carol" / ASSIGNMENT / "masks.ipynb"), as_version=4)
    cell = next(c for c in nb.cells if hidden_call(c.source) == ("masks", "padding_mask"))
    text = "".join(o.get("text", "") for o in cell.outputs)
    assert "Time-out" in text or "超时" in text, text
    assert cell.outputs[-1]["data"]["text/plain"] == "0.0"


def test_feedback_html_has_our_diagnostics_and_no_hidden_code(course):
    prop_src = (ROOT / "autograder" / "exercises" / "masked_loss" / "properties.py").read_text(encoding="utf-8")
    ref = (ROOT / "solutions" / "masked_loss.py").read_text(encoding="utf-8")
    body = [ln.strip() for ln in ref.splitlines() if "F.cross_entropy" in ln]
    for cdir in (course["dir"], course["fast"]):  # generate_feedback after autograde, and after the fast path
        html = (cdir / "feedback" / "bob" / ASSIGNMENT / "masked_loss.html").read_text(encoding="utf-8")
        assert "masked_cross_entropy/padding_does_not_change_loss" in html
        assert "提示" in html or "hint" in html.lower()
        for node in ast.walk(ast.parse(prop_src)):
            if isinstance(node, ast.FunctionDef) and node.name != "check":
                assert f"def {node.name}(" not in html, f"property code {node.name} in the feedback"
        assert "@given" not in html and "hypothesis" not in html
        assert body and not any(b in html for b in body), "the reference answer is in bob's feedback"
        graded = {p.parent.parent.name for p in (cdir / "feedback").glob(f"*/{ASSIGNMENT}/masks.html")}
        assert graded == set(STUDENTS) - {"dave"}, (cdir, graded)


def test_late_submissions_keep_their_timestamp_and_take_the_penalty(course):
    """grace's timestamp.txt is after the due date: both paths record it, and the course's late
    penalty ("zero") applies in the export; on-time students keep their scores."""
    from nbgrader.api import Gradebook

    for cdir in (course["dir"], course["fast"]):
        with Gradebook(f"sqlite:///{cdir / 'gradebook.db'}", "seqgrader") as gb:
            late = gb.find_submission(ASSIGNMENT, LATE)
            assert late.timestamp is not None and late.total_seconds_late == 8 * 3600, (cdir, late.timestamp)
            assert gb.find_submission(ASSIGNMENT, "alice").total_seconds_late == 0
        rows = exported(cdir)
        assert float(rows[LATE]["raw_score"]) == 35.0 and float(rows[LATE]["score"]) == 0.0, rows[LATE]
        assert float(rows[LATE]["late_submission_penalty"]) == 35.0
        assert rows[LATE]["timestamp"].startswith("2026-11-30 20:00:00"), rows[LATE]
        assert float(rows["alice"]["score"]) == 35.0 and rows["alice"]["timestamp"].startswith("2026-11-30 08:00:00")


def test_a_corrupt_notebook_is_flagged_for_a_grader_in_both_paths(course):
    """dave's masks.ipynb is truncated JSON: plain `nbgrader autograde` (its pre-convert hook) and the
    fast path both flag the notebook's hidden-tests cells for manual grading, with the reason."""
    from nbgrader.api import Gradebook

    assert "dave/e2e/masks.ipynb: the notebook is not valid JSON" in course["autograde_log"]
    for cdir in (course["dir"], course["fast"]):
        scores, flagged = gradebook_scores(cdir)
        assert scores["dave"] == {"masks": 0.0, "masked_loss": 15.0}, (cdir, scores["dave"])
        assert sorted(flagged["dave"]["masks"]) == [
            "hidden_attention_mask",
            "hidden_causal_mask",
            "hidden_padding_mask",
        ]
        assert not any(flagged[s][nb] for s in STUDENTS if s != "dave" for nb in EXERCISES), flagged
        with Gradebook(f"sqlite:///{cdir / 'gradebook.db'}", "seqgrader") as gb:
            sub = gb.find_submission(ASSIGNMENT, "dave")
            assert sub.needs_manual_grade and sub.timestamp is not None
            comments = [c.auto_comment for c in gb.find_submission_notebook("masks", ASSIGNMENT, "dave").comments]
        assert comments and all("not valid JSON" in (c or "") for c in comments), comments
    rows = {r["student"]: r for r in csv.DictReader(open(course["fast"] / "grades" / "grades.csv", encoding="utf-8"))}
    assert "not valid JSON" in rows["dave"]["note"] + rows["dave"]["status"], rows["dave"]
    assert float(rows[THIEF]["total"]) == 0.0


def test_where_the_reference_loses_points_autograde_records_nothing(course, tmp_path):
    """Autograd broken in every process the grader forks (what a CUDA build does to a grader that
    runs a backward pass before forking): the pre-convert hook's self-check stops nbgrader's
    autograde (exit status 2) with the reason, before nbgrader records anything: no submission, no
    grade, not even a zero, in the gradebook or the export."""
    cdir = course["broken"]
    env = dict(
        os.environ,
        PATH=f"{course['installed']['bin']}{os.pathsep}{os.environ.get('PATH', '')}",
        SEQGRADER_AUTOGRAD_FORK="broken",
        SEQGRADER_CACHE_DIR=str(tmp_path / "cache"),
    )
    env.pop("VIRTUAL_ENV", None)
    proc = subprocess.run(
        ["nbgrader", "autograde", ASSIGNMENT], cwd=cdir, env=env, capture_output=True, text=True, timeout=900
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 2, log[-3000:]
    assert "nobody is graded" in log and "do not get full marks in this environment" in log, log[-3000:]
    assert "autograd's threading" in log and "masked_loss/" in log, log[-3000:]
    scores, _flagged = gradebook_scores(cdir)
    assert scores == {}, scores
    assert not (cdir / "autograded").exists() or not any((cdir / "autograded").rglob("*.ipynb"))
    run([str(BIN / "nbgrader"), "export"], cdir)
    assert not [
        r
        for r in csv.DictReader(open(cdir / "grades.csv", newline="", encoding="utf-8"))
        if r["student_id"] in STUDENTS and r.get("timestamp")
    ], "a student has a grade"


def _lines(proc):
    return proc.stdout.strip().splitlines()


def test_students_run_pytest_and_validate_with_no_grader(course, tmp_path):
    """As a student, in a virtualenv with only torch, numpy, matplotlib, pytest, nbformat, nbgrader and
    ipykernel: `pytest` in the released folder says, one line per function, passed / not implemented
    yet / failed with the check's message and the student's line; `nbgrader validate` passes a correct
    notebook and names the unfinished functions of a stub; a hidden-tests cell says when it runs."""
    sbin = course["installed"]["student"]
    probe = run(
        [
            str(sbin / "python"),
            "-c",
            "import importlib.util as u; print([m for m in ('autograder', "
            "'hypothesis', 'torch', 'nbgrader') if u.find_spec(m)])",
        ],
        tmp_path,
        bin_dir=sbin,
    )
    assert probe.stdout.strip() == "['torch', 'nbgrader']", probe.stdout
    pytest_cmd = [str(sbin / "python"), "-m", "pytest", "-p", "no:cacheprovider"]
    # the release as handed out: every function not implemented yet
    stub = tmp_path / "release"
    shutil.copytree(course["dir"] / "release" / ASSIGNMENT, stub)
    proc = run(pytest_cmd, stub, bin_dir=sbin, ok=(1,))
    lines = _lines(proc)
    functions = ["padding_mask", "causal_mask", "attention_mask", "masked_cross_entropy"]
    for fn in functions:
        (line,) = [ln for ln in lines if f"::{fn} " in ln]
        assert "NOT IMPLEMENTED YET / 还没有实现" in line, line
    assert len(lines) < 20 and "4 not implemented" in lines[-1] and "warning" not in proc.stdout, proc.stdout
    assert '"cell_type"' not in proc.stdout and "???" not in proc.stdout
    # a student's work: masks right but for a wrong causal_mask, the loss crashing in the student's code
    work = tmp_path / "work"
    shutil.copytree(course["dir"] / "submitted" / "alice" / ASSIGNMENT, work)
    nb = nbformat.read(str(work / "masks.ipynb"), as_version=4)
    set_cell(
        nb, "causal_mask", "def causal_mask(T, device=None):\n    return torch.ones(T, T, dtype=torch.bool).triu()\n"
    )
    nbformat.write(nb, str(work / "masks.ipynb"))
    nb = nbformat.read(str(work / "masked_loss.ipynb"), as_version=4)
    set_cell(
        nb,
        "masked_cross_entropy",
        "def masked_cross_entropy(logits, targets, mask):\n"
        "    flat = logits.reshape(-1)\n    return flat.view(7, 11, 13).mean()\n",
    )
    nbformat.write(nb, str(work / "masked_loss.ipynb"))
    lines = _lines(run(pytest_cmd, work, bin_dir=sbin, ok=(1,)))
    line = next(ln for ln in lines if "::padding_mask " in ln)
    assert "PASSED" in line, line
    line = next(ln for ln in lines if "::causal_mask " in ln)
    assert "FAILED: T=3 的掩码不对 / wrong mask for T=3" in line and "assert m.tolist() ==" in line, line
    line = next(ln for ln in lines if "::masked_cross_entropy " in ln)
    assert "FAILED: RuntimeError" in line and "masked_cross_entropy, line 3: return flat.view(7, 11, 13).mean()" in line
    line = next(ln for ln in lines if "::attention_mask " in ln)  # it calls the wrong causal_mask
    assert "FAILED: " in line and "causal" in line, line
    assert "3 failed, 1 passed" in lines[-1] and len(lines) < 20, lines
    # nbgrader validate: a correct notebook passes (its hidden-tests cells only print); a stub fails
    # on the visible checks of each unfinished function
    out = run(
        [str(sbin / "nbgrader"), "validate", "masks.ipynb"],
        course["dir"] / "submitted" / "alice" / ASSIGNMENT,
        bin_dir=sbin,
    )
    assert "Success! Your notebook passes all the tests." in out.stdout, out.stdout[-3000:]
    out = run([str(sbin / "nbgrader"), "validate", "masked_loss.ipynb"], stub, bin_dir=sbin)
    assert "VALIDATION FAILED ON 1 CELL(S)" in out.stdout, out.stdout[-3000:]
    assert "# autograder: visible checks: masked_cross_entropy" in out.stdout
    assert "NotImplementedError: 还没有实现 / not implemented yet" in out.stdout
    assert "# autograder: hidden tests" not in out.stdout.split("VALIDATION FAILED", 1)[1], "a hidden-tests cell failed"
    # the hidden-tests cell run by the student: both languages, Chinese first, no error, no score; run
    # by a misconfigured `nbgrader autograde` (a kernel, not SandboxGrade) it fails instead of scoring
    (cell,) = [c for c in course["release"]["masked_loss"].cells if hidden_call(c.source)]
    said = run([str(sbin / "python"), "-c", cell.source], tmp_path, bin_dir=sbin)
    assert said.stderr == "" and said.stdout.index("隐藏测试") < said.stdout.index("hidden tests"), said
    assert "run when your work is graded" in said.stdout and "15 points" in said.stdout, said.stdout
    env = dict(os.environ, NBGRADER_EXECUTION="autograde")
    misrun = subprocess.run([str(sbin / "python"), "-c", cell.source], env=env, capture_output=True, text=True)
    assert misrun.returncode == 1 and "SandboxGrade" in misrun.stderr, misrun


# ---------------------------------------------------------------- a hand-graded answer (sequence-models-4)

MANUAL = "sequence-models-4"  # the ablation: 90 points of hidden tests, a written analysis graded by hand
ANALYSIS = "ablation_analysis"


@pytest.fixture(scope="module")
def manual_course(tmp_path_factory):
    """The real course.yml built with --assignment sequence-models-4; alice submits the reference with one
    catalogued run_ablation mistake and a written analysis; nbgrader autograde, then `grade` on the same
    notebook.  (One student: an nbgrader autograde of the ablation costs ~15 s.)"""
    tmp = tmp_path_factory.mktemp("nbgrader-manual")
    cdir = tmp / "course"
    autograder("nbgrader-course", cdir, "--assignment", MANUAL)
    nbgrader("generate_assignment", MANUAL, cwd=cdir)
    source = nbformat.read(str(cdir / "source" / MANUAL / "ablation.ipynb"), as_version=4)
    release = nbformat.read(str(cdir / "release" / MANUAL / "ablation.ipynb"), as_version=4)
    answers = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"
    }
    answers["run_ablation"] = mistake("ablation_seed_offset_per_arm")  # partial credit
    nb = nbformat.from_dict(json.loads(json.dumps(release)))
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            cell.source = (
                answers[meta["grade_id"]]
                if cell.cell_type == "code"
                else "Only the flag changed; same data, init and seeds. With PE 0.97, without 0.50 (chance)."
            )
    folder = cdir / "submitted" / "alice" / MANUAL
    folder.mkdir(parents=True)
    nbformat.write(nb, str(folder / "ablation.ipynb"))
    (folder / "timestamp.txt").write_text("2026-11-30 08:00:00 UTC")
    nbgrader("autograde", MANUAL, cwd=cdir)
    out = tmp / "grade-alice.json"
    autograder("grade", folder, "--assignment", MANUAL, "--json", out, "-q")
    return {"dir": cdir, "source": source, "release": release, "report": json.loads(out.read_text(encoding="utf-8"))}


def manual_gradebook(cdir, student="alice"):
    """(notebook score, max score, {grade name: (auto, manual, max, needs manual grade)}) of the ablation."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{cdir / 'gradebook.db'}", "seqgrader") as gb:
        nb = gb.find_submission_notebook("ablation", MANUAL, student)
        return (
            nb.score,
            nb.max_score,
            {g.name: (g.auto_score, g.manual_score, g.max_score, g.needs_manual_grade) for g in nb.grades},
        )


def test_the_written_analysis_is_a_manually_graded_answer_cell(manual_course):
    for nb, kind in ((manual_course["source"], "source"), (manual_course["release"], "release")):
        (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == ANALYSIS]
        meta = cell.metadata["nbgrader"]
        assert cell.cell_type == "markdown" and meta["grade"] and meta["solution"] and not meta["locked"], kind
        assert meta["points"] == 10, kind
    source_cell, release_cell = (
        next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == ANALYSIS)
        for nb in (manual_course["source"], manual_course["release"])
    )
    assert "### BEGIN SOLUTION" in source_cell.source and "One seed is not enough" in source_cell.source
    assert "BEGIN SOLUTION" not in release_cell.source and "Write your answer here" in release_cell.source
    hidden = [c.metadata["nbgrader"]["points"] for c in manual_course["release"].cells if hidden_call(c.source)]
    assert sum(hidden) == 90 and len(hidden) == 3


def test_autograde_flags_the_analysis_and_scores_the_rest_like_grade(manual_course):
    score, max_score, grades = manual_gradebook(manual_course["dir"])
    assert grades[ANALYSIS] == (None, None, 10.0, True)  # a grader must read it
    report = manual_course["report"]
    assert report["max_score"] == 90 and max_score == 100
    assert 0 < report["score"] < 90, "the catalogued mistake should cost some points, not all"
    hidden = sum(v[0] for k, v in grades.items() if k.startswith("hidden_"))
    assert hidden == pytest.approx(report["score"]) and score == pytest.approx(report["score"])


def test_a_hand_grade_counts_and_nbgrader_gradebook_keeps_it(manual_course, tmp_path):
    from nbgrader.api import Gradebook

    cdir, auto = manual_course["dir"], manual_course["report"]["score"]
    with Gradebook(f"sqlite:///{cdir / 'gradebook.db'}", "seqgrader") as gb:  # what formgrader's grade API does
        grade = gb.find_grade(ANALYSIS, "ablation", MANUAL, "alice")
        grade.manual_score, grade.needs_manual_grade = 8.0, False
        gb.db.commit()
    assert manual_gradebook(cdir)[0] == pytest.approx(auto + 8)
    # grade-batch's reports written into the gradebook again (`nbgrader-gradebook`): the hand grade stays
    reports = tmp_path / "grades" / "reports"
    reports.mkdir(parents=True)
    report = {**manual_course["report"], "batch": {"status": "graded", "student": "alice"}}
    (reports / "alice.json").write_text(json.dumps(report), encoding="utf-8")
    autograder("nbgrader-gradebook", tmp_path / "grades", "--course-dir", cdir, "--assignment", MANUAL)
    score, _, grades = manual_gradebook(cdir)
    assert score == pytest.approx(auto + 8) and grades[ANALYSIS][1:] == (8.0, 10.0, False)
    nbgrader("export", cwd=cdir)
    rows = {
        r["student_id"]: r
        for r in csv.DictReader(open(cdir / "grades.csv", newline="", encoding="utf-8"))
        if r["assignment"] == MANUAL
    }
    assert float(rows["alice"]["score"]) == pytest.approx(auto + 8) and float(rows["alice"]["max_score"]) == 100.0


@pytest.mark.filterwarnings("ignore:Object of type <Submitted")  # nbgrader's own, creating a submission
def test_gradebook_flags_an_analysis_nobody_scored(manual_course):
    """The fast path (grade-batch + nbgrader-gradebook, no nbgrader autograde) for a new student, zoe: her
    written answer's grade exists but nobody scored it, so it is flagged for a grader, not a silent 0."""
    from nbgrader.api import Gradebook

    from autograder.nbgrader_course.gradebook import write_reports

    cdir = manual_course["dir"]
    report = {
        "score": 0.0,
        "max_score": 90.0,
        "errors": [],
        "batch": {"status": "graded"},
        "exercises": [{"id": "ablation", "score": 0.0, "max_score": 90.0, "tests": []}],
    }
    write_reports(cdir, MANUAL, {"zoe": report})
    with Gradebook(f"sqlite:///{cdir / 'gradebook.db'}", "seqgrader") as gb:
        nb = gb.find_submission_notebook("ablation", MANUAL, "zoe")
        grade = next(g for g in nb.grades if g.name == ANALYSIS)
        assert grade.needs_manual_grade and grade.manual_score is None and grade.auto_score is None
        assert nb.needs_manual_grade
