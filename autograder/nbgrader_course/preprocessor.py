"""SandboxGrade: nbgrader autograde's grading step, in place of nbgrader's Execute.

nbgrader's Execute runs the student's notebook in a Jupyter kernel, test cells included, so
student code shares a process with the tests.  SandboxGrade runs nothing in a kernel: it grades
the sanitized notebook (its test cells already restored from the gradebook by OverwriteCells)
with seqgrader's sandboxed engine, then writes into each hidden-tests cell

  - a stdout stream with the feedback for that function (the same text as `grade`'s report),
  - an execute_result whose value is the points earned, a plain float capped at the cell's points,

which nbgrader's SaveAutoGrades reads as partial credit.  Visible-check cells (0 points) and the
student's cells get no output.  A notebook the engine cannot grade gets 0 in every hidden cell
and the reason as its output; the grader itself failing is reported the same way, never as a
silent 0.  Before anything is graded, the reference solutions must get full marks here
(selfcheck.py; nbgrader-course's pre-convert hook checks first, hooks.py); where they do not, or
where a student's error turns out to be the reference's too, SandboxGrade stops the whole
autograde (SystemExit 2) and takes back the submission nbgrader had just recorded if nothing of it
was graded before: no score, not even a zero.

With `reports_dir` set (what `nbgrader-gradebook` does), it grades nothing: it fills the cells from
grade-batch's report of that student (reports_dir/<student>.json), so nbgrader's own autograde
records the timestamps, late penalties and autograded/ notebooks of a class graded by grade-batch.
"""

import ast
import json
import os
import tempfile
import traceback
from pathlib import Path

import nbformat
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool, Unicode

from ..errors import GraderEnvironmentError
from . import HIDDEN_MARKER
from .cell import function_result


def hidden_call(source):
    """("exercise", "function") of a hidden-tests cell, or None.  The marker may follow the note
    nbgrader puts in front of a test cell it restored (OverwriteCells.add_missing_cells)."""
    if len(source) > 4096 or not any(line.startswith(HIDDEN_MARKER) for line in source.splitlines()):
        return None  # a hidden-tests cell is one call: a long cell is a student's, never parsed here
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "hidden_tests"
            and len(node.args) >= 2
            and all(isinstance(a, ast.Constant) for a in node.args[:2])
        ):
            return node.args[0].value, node.args[1].value
    return None


def grade_notebook(nb, exercise, course_file=None):
    """Grade one notebook object for `exercise`; returns the report dict."""
    from ..config import load_course
    from ..grading import grade
    from ..judge import ForkRunner
    from ..selfcheck import ensure

    course = load_course(course_file)
    runner = ForkRunner(course, many=True)  # an autograde grades the class in one process
    ensure(course, runner, [exercise])  # the reference gets full marks here, or nobody is graded
    with tempfile.TemporaryDirectory(prefix="seqgrader-nbgrader-") as tmp:
        path = os.path.join(tmp, f"{exercise}.ipynb")
        nbformat.write(nb, path)
        report = grade(path, course, runner, exercises=[exercise]).to_dict()
    return report


def _forget_empty_submission(resources):
    """nbgrader recorded this submission before converting it; if none of its grades has a score
    yet (no earlier autograde, no hand grading), it goes again, so that no export shows a 0."""
    info = resources.get("nbgrader") or {}
    try:
        from nbgrader.api import Gradebook

        from .hooks import assignment_course

        db = str(info["db_url"])
        if not db.startswith("sqlite:///"):
            return
        course_id = assignment_course(db[len("sqlite:///") :], info["assignment"])
        if course_id is None:
            return
        with Gradebook(db, course_id) as gb:
            sub = gb.find_submission(info["assignment"], info["student"])
            if all(g.auto_score is None and g.manual_score is None for nb in sub.notebooks for g in nb.grades):
                gb.remove_submission(info["assignment"], info["student"])
    except Exception:  # noqa: BLE001 - the run stops anyway
        pass


def fill_cells(nb, report, *, error=None):
    """Write each hidden-tests cell's output from `report` (or the `error` text, 0 points)."""
    for cell in nb.cells:
        graded = cell.metadata.get("nbgrader", {}).get("grade")  # restored from the gradebook, not the student's
        call = hidden_call(cell.source) if cell.cell_type == "code" and graded else None
        if call is None:
            continue
        exercise, function = call
        points = float(cell.metadata.get("nbgrader", {}).get("points", 0.0))
        if error is not None:
            score, text = 0.0, error
        else:
            score, _total, text = function_result(report, exercise, function)
        score = max(0.0, min(float(score), points))
        cell.outputs = [
            nbformat.v4.new_output("stream", name="stdout", text=text + "\n"),
            nbformat.v4.new_output("execute_result", data={"text/plain": repr(score)}, execution_count=1),
        ]
        cell.execution_count = 1
    return nb


class SandboxGrade(Preprocessor):
    """Grade the notebook with seqgrader's sandbox; see the module docstring."""

    enabled = Bool(True).tag(config=True)  # nbconvert preprocessors are off by default
    course_file = Unicode("", help="course.yml for the hidden properties (default: seqgrader's own)").tag(config=True)
    reports_dir = Unicode(
        "",
        help="grade-batch's reports/ folder: take each student's results from "
        "<student>.json there instead of grading (nbgrader-gradebook sets it)",
    ).tag(config=True)

    def _batch_report(self, resources):
        student = (resources.get("nbgrader") or {}).get("student")
        path = Path(self.reports_dir) / f"{student}.json"
        if not path.is_file():
            raise RuntimeError(
                f"no grade-batch report for student {student!r} ({path}): run grade-batch on "
                f"submitted/ again, then nbgrader-gradebook"
            )
        return json.loads(path.read_text(encoding="utf-8"))

    def preprocess(self, nb, resources):
        """Fill each hidden-tests cell's output with its function's result (the other cells' outputs
        cleared): graded in the sandbox, once per exercise, or read from grade-batch's report when
        `reports_dir` is set."""
        calls = [hidden_call(c.source) for c in nb.cells if c.cell_type == "code"]
        exercises = sorted({c[0] for c in calls if c})
        if not exercises:
            self.log.warning("SandboxGrade: no hidden-tests cell in this notebook; nothing graded")
            return nb, resources
        for c in nb.cells:  # nothing of the student's runs here: no outputs, no stale ones
            if c.cell_type == "code":
                c.outputs, c.execution_count = [], None
        reports = {}
        if self.reports_dir:
            report = self._batch_report(resources)
            status = report.get("batch", {}).get("status", "graded")
            for exercise in exercises:
                sub = nbformat.v4.new_notebook(
                    cells=[c for c in nb.cells if (hidden_call(c.source) or ("",))[0] == exercise]
                )
                if status != "graded":
                    fill_cells(sub, None, error=f"未评分 / not graded: {status}")
                else:
                    fill_cells(sub, report)
            return nb, resources
        for exercise in exercises:
            try:
                reports[exercise] = grade_notebook(nb, exercise, self.course_file or None)
                self.log.info(
                    "SandboxGrade: %s: %s / %s", exercise, reports[exercise]["score"], reports[exercise]["max_score"]
                )
            except GraderEnvironmentError as e:
                # the reference loses points here: nobody is graded, not even with a 0
                self.log.error("SandboxGrade: nobody is graded: %s", e)
                _forget_empty_submission(resources)
                raise SystemExit(2) from None
            except Exception as e:  # noqa: BLE001 - the grader failing must show, not crash autograde
                self.log.error("SandboxGrade: grading %s failed: %s\n%s", exercise, e, traceback.format_exc())
                reports[exercise] = None
        for exercise, report in reports.items():
            sub = nbformat.v4.new_notebook(
                cells=[c for c in nb.cells if (hidden_call(c.source) or ("",))[0] == exercise]
            )
            if report is None:
                fill_cells(
                    sub,
                    None,
                    error="评分器出错（不是你的代码的问题），请联系助教。/ The grader failed "
                    "(not your code's fault); the teaching staff will regrade.",
                )
            else:
                fill_cells(sub, report)
        return nb, resources
