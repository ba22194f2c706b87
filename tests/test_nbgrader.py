"""nbgrader end to end, with the real nbgrader from PyPI and real Jupyter kernels.

Build the course (`nbgrader-course`), `nbgrader generate_assignment`, place eight submissions
(correct; a catalogued bug; an endless loop; corrupt JSON; a deleted test cell; correct code that
emits warnings; a thief whose cells only look for answers; a classmate with a marked notebook),
`nbgrader autograde`, `generate_feedback`, `export`; then the same class through `grade-batch` +
`nbgrader-gradebook`.  The assignment holds two exercises (masks, masked_loss) to keep CI short;
every step is the one an instructor runs.  The course lives where a real one does (under /srv or
the home directory, see conftest.real_place), and its source notebooks and the classmate's carry a
marker that no output of the thief may show.
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
from autograder.nbgrader_course.build import with_solution
from autograder.nbgrader_course.preprocessor import hidden_call

from .conftest import ROOT, real_place

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
ASSIGNMENT = "e2e"
EXERCISES = ["masks", "masked_loss"]
CLASSMATE = "quinn"  # a classmate whose notebook carries the marker
THIEF = "mallory"  # cells that only look for answers: the course's source/, classmates, the grader, memory
STUDENTS = ["alice", "bob", "carol", "dave", "erin", "frank", CLASSMATE, THIEF]
HOSTILE = ROOT / "tests" / "files" / "hostile"


def run(cmd, cwd, timeout=900):
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
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


@pytest.fixture(scope="module")
def course():
    """The built course after generate_assignment, the eight submissions, autograde, feedback, export."""
    tmp = real_place("nbgrader-e2e")
    try:
        yield _build_course(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _build_course(tmp):
    marker = f"SECRET{__import__('uuid').uuid4().hex[:12]}"
    data = yaml.safe_load((ROOT / "course.yml").read_text(encoding="utf-8"))
    data["assignments"] = {ASSIGNMENT: EXERCISES}
    for ex in data["exercises"].values():  # the endless loop costs seconds, not minutes
        ex["timeout"] = 40
        for t in ex["tests"].values():
            t["timeout"] = 5
    course_file = tmp / "course.yml"
    course_file.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    cdir = tmp / "course"
    autograder("nbgrader-course", cdir, "--course", course_file)
    nbgrader("generate_assignment", ASSIGNMENT, cwd=cdir)

    source = {ex: nbformat.read(str(cdir / "source" / ASSIGNMENT / f"{ex}.ipynb"), as_version=4) for ex in EXERCISES}
    release = {ex: nbformat.read(str(cdir / "release" / ASSIGNMENT / f"{ex}.ipynb"), as_version=4) for ex in EXERCISES}

    def submit(student, notebooks):
        folder = cdir / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        for ex, nb in notebooks.items():
            if isinstance(nb, str):
                (folder / f"{ex}.ipynb").write_text(nb, encoding="utf-8")
            else:
                nbformat.write(nb, str(folder / f"{ex}.ipynb"))
        (folder / "timestamp.txt").write_text("2026-11-30 08:00:00 UTC")

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
    submit("bob", {"masks": answered("masks"),
                   "masked_loss": answered("masked_loss", masked_cross_entropy=mistake("ml_per_sequence_mean"))})
    loop = "def padding_mask(lengths, max_len=None):\n    while True:\n        pass\n"
    submit("carol", {"masks": answered("masks", padding_mask=loop), "masked_loss": answered("masked_loss")})
    submit("dave", {"masks": '{"cells": [{"cell_type": "code", "source": "def padding_mask(', "masked_loss": answered("masked_loss")})
    erin = answered("masks")
    erin.cells = [c for c in erin.cells if not hidden_call(c.source) or "padding_mask" not in c.source]
    submit("erin", {"masks": erin, "masked_loss": answered("masked_loss")})
    noisy = answered("masked_loss")
    warn = ("import warnings\nwarnings.warn('frank was here', UserWarning)\n"
            "import numpy as np\nnp.array([1.0]) / 0  # a RuntimeWarning on stderr too\n")
    sol = next(c for c in noisy.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "masked_cross_entropy")
    sol.source = warn + sol.source + textwrap.dedent("""

        _quiet = masked_cross_entropy


        def masked_cross_entropy(logits, targets, mask):  # warns on every call
            warnings.warn("frank's loss was called", UserWarning)
            return _quiet(logits, targets, mask)
        """)
    submit("frank", {"masks": answered("masks"), "masked_loss": noisy})
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

    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    auto = subprocess.run([str(BIN / "nbgrader"), "autograde", ASSIGNMENT], cwd=cdir, env=env, capture_output=True,
                          text=True, timeout=1800)
    errored = re.findall(r"error processing assignment '\S+' for student '(\w+)'", auto.stderr)
    assert errored == ["dave"] and auto.returncode == 1, (errored, auto.returncode, auto.stderr[-3000:])
    nbgrader("generate_feedback", ASSIGNMENT, cwd=cdir)
    nbgrader("export", cwd=cdir)
    return {"dir": cdir, "course_file": course_file, "autograde_log": auto.stderr + auto.stdout,
            "source": source, "release": release, "marker": marker}


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


def grade_scores(course, student):
    """`grade` on the same notebooks: {exercise: score}."""
    out = course["dir"].parent / f"grade-{student}.json"
    autograder("grade", course["dir"] / "submitted" / student / ASSIGNMENT, "--course", course["course_file"],
               "--assignment", ASSIGNMENT, "--json", out, "-q")
    report = json.loads(out.read_text(encoding="utf-8"))
    return {e["id"]: e["score"] for e in report["exercises"]}, report


def test_the_course_has_solutions_in_regions_and_no_hidden_code(course):
    cdir = course["dir"]
    prop_lines = {ln.strip() for ex in EXERCISES
                  for ln in (ROOT / "autograder" / "properties" / f"{ex}.py").read_text(encoding="utf-8").splitlines()
                  if len(ln.strip()) > 25 and not ln.strip().startswith(("#", "import ", "from "))}
    for ex in EXERCISES:
        src = course["source"][ex]
        rel = course["release"][ex]
        sol = [c for c in src.cells if c.metadata.get("nbgrader", {}).get("solution")]
        assert sol and all("### BEGIN SOLUTION" in c.source for c in sol)
        hidden = [c for c in rel.cells if hidden_call(c.source)]
        assert hidden and all(c.metadata["nbgrader"]["locked"] and c.metadata["nbgrader"]["grade"] for c in hidden)
        assert sum(c.metadata["nbgrader"]["points"] for c in hidden) == pytest.approx(
            sum(t["points"] for t in yaml.safe_load(course["course_file"].read_text())["exercises"][ex]["tests"].values()))
        text = (cdir / "release" / ASSIGNMENT / f"{ex}.ipynb").read_text(encoding="utf-8")
        assert "BEGIN SOLUTION" not in text and "raise NotImplementedError" in text
        code = "\n".join(c.source for c in rel.cells)
        leaked = [ln for ln in prop_lines if ln in code]
        assert not leaked, f"hidden property code in the released {ex}.ipynb: {leaked[:3]}"
    cfg = (cdir / "nbgrader_config.py").read_text(encoding="utf-8")
    assert "add_missing_cells = True" in cfg and "SandboxGrade" in cfg


def test_autograde_scores_equal_grade_and_the_gradebook_has_everyone(course):
    scores, flagged = gradebook_scores(course["dir"])
    assert set(scores) == set(STUDENTS), scores  # dave (nbgrader could not read his notebook) too
    assert "SandboxGrade: masks" in course["autograde_log"], "our preprocessor did not run: is the config loaded?"
    for student in ["alice", "bob", "carol", "erin", "frank", THIEF]:
        expected, _ = grade_scores(course, student)
        assert scores[student] == pytest.approx(expected), (student, scores[student], expected)
    assert scores["alice"] == {"masks": 20.0, "masked_loss": 15.0}
    assert scores["bob"]["masks"] == 20.0 and scores["bob"]["masked_loss"] < 15.0
    assert scores["carol"]["masks"] < 20.0 and scores["carol"]["masked_loss"] == 15.0


def test_a_thief_gets_nothing_and_sees_nothing(course):
    """mallory's cells only look for answers (tests/files/hostile/snoop_course.py: the course folder
    from $PWD up, classmates, gradebook.db; snoop_memory.py: its own memory): 0 points, and none
    of the course's secrets (source/ solutions, quinn's notebook) in anything she gets back."""
    scores, _ = gradebook_scores(course["dir"])
    assert scores[THIEF] == {"masks": 0.0, "masked_loss": 0.0}, scores[THIEF]
    assert scores[CLASSMATE] == {"masks": 20.0, "masked_loss": 15.0}  # the marked notebooks are real answers
    marker = course["marker"]
    mine = [*(course["dir"] / "autograded" / THIEF).rglob("*"), *(course["dir"] / "feedback" / THIEF).rglob("*")]
    assert any(p.suffix == ".html" for p in mine), "no feedback was generated for the thief"
    leaked = [p for p in mine if p.is_file() and marker in p.read_text(encoding="utf-8", errors="replace")]
    assert leaked == [], leaked
    assert marker not in (course["dir"] / "grades.csv").read_text(encoding="utf-8")
    # what the thief's cells raised reached its feedback (capped), so the channel was really tried
    html = (course["dir"] / "feedback" / THIEF / ASSIGNMENT / "masks.html").read_text(encoding="utf-8")
    assert "LookupError" in html


def test_a_warning_costs_nothing(course):
    scores, _ = gradebook_scores(course["dir"])
    assert scores["frank"] == {"masks": 20.0, "masked_loss": 15.0}


def test_a_deleted_test_cell_comes_back(course):
    nb = nbformat.read(str(course["dir"] / "autograded" / "erin" / ASSIGNMENT / "masks.ipynb"), as_version=4)
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
    html = (course["dir"] / "feedback" / "bob" / ASSIGNMENT / "masked_loss.html").read_text(encoding="utf-8")
    assert "masked_cross_entropy/padding_does_not_change_loss" in html
    assert "提示" in html or "hint" in html.lower()
    prop_src = (ROOT / "autograder" / "properties" / "masked_loss.py").read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(prop_src)):
        if isinstance(node, ast.FunctionDef) and node.name != "check":
            assert f"def {node.name}(" not in html, f"property code {node.name} in the feedback"
    assert "@given" not in html and "hypothesis" not in html
    ref = (ROOT / "solutions" / "masked_loss.py").read_text(encoding="utf-8")
    body = [ln.strip() for ln in ref.splitlines() if "F.cross_entropy" in ln]
    assert body and not any(re.escape(b) and b in html for b in body), "the reference answer is in bob's feedback"


def test_export_csv_and_the_corrupt_notebook_is_an_error_not_a_silent_zero(course, tmp_path):
    rows = list(csv.DictReader(open(course["dir"] / "grades.csv", newline="", encoding="utf-8")))
    by = {r["student_id"]: r for r in rows}
    assert set(by) >= set(STUDENTS)
    assert float(by["alice"]["score"]) == 35.0
    # grade-batch reads the submitted/ tree itself; nbgrader-gradebook writes its results into
    # the gradebook with nbgrader's API: the same scores, and dave's corrupt notebook flagged
    out = tmp_path / "grades"
    autograder("grade-batch", course["dir"] / "submitted", "--assignment", ASSIGNMENT, "--course",
               course["course_file"], "--out", out, "-q")
    batch_rows = {r["student"]: r for r in csv.DictReader(open(out / "grades.csv", newline="", encoding="utf-8"))}
    assert float(batch_rows[THIEF]["total"]) == 0.0, batch_rows[THIEF]
    thief_files = [p for p in out.rglob("*") if p.is_file() and (THIEF in p.name or THIEF in p.parts)]
    assert thief_files and not [p for p in thief_files if course["marker"] in p.read_text(encoding="utf-8")]
    assert "not valid JSON" in batch_rows["dave"]["note"] + batch_rows["dave"]["status"], batch_rows["dave"]
    before, _ = gradebook_scores(course["dir"])
    autograder("nbgrader-gradebook", out, "--course-dir", course["dir"], "--assignment", ASSIGNMENT)
    after, flagged = gradebook_scores(course["dir"])
    for student in ["alice", "bob", "carol", "erin", "frank", CLASSMATE, THIEF]:
        assert after[student] == pytest.approx(before[student]), student
    assert after["dave"]["masks"] == 0.0 and after["dave"]["masked_loss"] == 15.0
    assert flagged["dave"]["masks"], "the corrupt notebook is not flagged for manual grading"
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course['dir'] / 'gradebook.db'}", "seqgrader") as gb:
        comments = [c.auto_comment for c in gb.find_submission_notebook("masks", ASSIGNMENT, "dave").comments]
    assert any("not valid JSON" in (c or "") for c in comments), comments


def test_students_validate_and_pytest_their_release(course, tmp_path):
    work = tmp_path / "student"
    shutil.copytree(course["dir"] / "submitted" / "alice" / ASSIGNMENT, work)
    shutil.copy(course["dir"] / "release" / ASSIGNMENT / "test_visible_checks.py", work)
    env_course = {"SEQGRADER_COURSE": str(course["course_file"])}
    os.environ.update(env_course)
    try:
        out = run([str(BIN / "nbgrader"), "validate", str(work / "masked_loss.ipynb")], work)
    finally:
        os.environ.pop("SEQGRADER_COURSE")
    assert "Success" in out.stdout, out.stdout
    res = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_visible_checks.py"], work)
    summary = res.stdout.strip().splitlines()[-1]
    assert re.search(r"\b\d+ passed", summary) and "failed" not in summary, res.stdout
    # the released stubs fail the visible checks, with NotImplementedError
    stub = tmp_path / "release"
    shutil.copytree(course["dir"] / "release" / ASSIGNMENT, stub)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_visible_checks.py"],
                          cwd=stub, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and "NotImplementedError" in proc.stdout, proc.stdout[-2000:]


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
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source.cells
               if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"}
    answers["run_ablation"] = mistake("ablation_seed_offset_per_arm")  # partial credit
    nb = nbformat.from_dict(json.loads(json.dumps(release)))
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            cell.source = answers[meta["grade_id"]] if cell.cell_type == "code" else \
                "Only the flag changed; same data, init and seeds. With PE 0.97, without 0.50 (chance)."
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
        return nb.score, nb.max_score, {g.name: (g.auto_score, g.manual_score, g.max_score, g.needs_manual_grade)
                                        for g in nb.grades}


def test_the_written_analysis_is_a_manually_graded_answer_cell(manual_course):
    for nb, kind in ((manual_course["source"], "source"), (manual_course["release"], "release")):
        (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == ANALYSIS]
        meta = cell.metadata["nbgrader"]
        assert cell.cell_type == "markdown" and meta["grade"] and meta["solution"] and not meta["locked"], kind
        assert meta["points"] == 10, kind
    source_cell, release_cell = (next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == ANALYSIS)
                                 for nb in (manual_course["source"], manual_course["release"]))
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
    rows = {r["student_id"]: r for r in csv.DictReader(open(cdir / "grades.csv", newline="", encoding="utf-8"))
            if r["assignment"] == MANUAL}
    assert float(rows["alice"]["score"]) == pytest.approx(auto + 8) and float(rows["alice"]["max_score"]) == 100.0


@pytest.mark.filterwarnings("ignore:Object of type <Submitted")  # nbgrader's own, creating a submission
def test_gradebook_flags_an_analysis_nobody_scored(manual_course):
    """The fast path (grade-batch + nbgrader-gradebook, no nbgrader autograde) for a new student, zoe: her
    written answer's grade exists but nobody scored it, so it is flagged for a grader, not a silent 0."""
    from nbgrader.api import Gradebook

    from autograder.nbgrader_course.gradebook import write_reports

    cdir = manual_course["dir"]
    report = {"score": 0.0, "max_score": 90.0, "errors": [], "batch": {"status": "graded"},
              "exercises": [{"id": "ablation", "score": 0.0, "max_score": 90.0, "tests": []}]}
    write_reports(cdir, MANUAL, {"zoe": report})
    with Gradebook(f"sqlite:///{cdir / 'gradebook.db'}", "seqgrader") as gb:
        nb = gb.find_submission_notebook("ablation", MANUAL, "zoe")
        grade = next(g for g in nb.grades if g.name == ANALYSIS)
        assert grade.needs_manual_grade and grade.manual_score is None and grade.auto_score is None
        assert nb.needs_manual_grade
