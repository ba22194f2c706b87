"""Write grade-batch's reports into nbgrader's gradebook, through nbgrader's own API.

For each student and each notebook (= exercise) of the assignment:
  - the hidden-tests cell of each function (`hidden_<function>`) gets the points earned as its
    auto score; the visible-checks cells (0 points) get 0;
  - the student's answer cell of each function gets our feedback for that function as its
    automatic comment, so formgrader shows why points were lost;
  - a written answer (a markdown answer cell, course.yml `manual`) is left as it is (a hand grade, or
    nbgrader autograde's 0 for an answer left blank); one nobody has scored yet is flagged *needs
    manual grade*;
  - a submission that could not be graded (corrupt notebook, grader error) gets 0 everywhere,
    *needs manual grade* set on its hidden-tests cells (formgrader flags it) and the reason as a
    comment — never a silent 0.
Then formgrader and `nbgrader export` show the scores.
"""
from pathlib import Path

from ..errors import GraderError
from ..report.messages import say
from .cell import function_result


def _db_url(course_dir):
    db = Path(course_dir) / "gradebook.db"
    if not db.exists():
        raise GraderError(f"no nbgrader gradebook at {db}: run `nbgrader generate_assignment` in {course_dir} first")
    return f"sqlite:///{db.resolve()}"


def unreadable(report, notebook):
    """The reason notebook `notebook` (an exercise id) of this report could not be read, or None."""
    for e in report.get("errors") or []:
        if e.startswith(f"{notebook}.ipynb: the notebook"):
            return e
    return None


def write_reports(course_dir, assignment, reports, *, course_id="seqgrader"):
    """reports: {student id: report dict} as grade-batch writes them (reports/<student>.json, whose
    "batch" entry holds the status: "graded" or "error: ...").  Returns {student: total points}."""
    from nbgrader.api import Gradebook, MissingEntry

    totals = {}
    with Gradebook(_db_url(course_dir), course_id) as gb:
        try:
            nb_assignment = gb.find_assignment(assignment)
        except MissingEntry:
            raise GraderError(f"the gradebook has no assignment {assignment!r}: run "
                              f"`nbgrader generate_assignment {assignment}` first") from None
        notebooks = [nb.name for nb in nb_assignment.notebooks]
        for student, report in sorted(reports.items()):
            status = report.get("batch", {}).get("status", "graded")
            gb.update_or_create_student(student)
            gb.update_or_create_submission(assignment, student)
            total = 0.0
            for nb_name in notebooks:
                problem = status if status != "graded" else unreadable(report, nb_name)
                sub_nb = gb.find_submission_notebook(nb_name, assignment, student)
                for grade in sub_nb.grades:
                    cell = grade.name
                    if grade.cell.cell_type == "markdown":  # a written answer: graded by hand, never here
                        if grade.auto_score is None and grade.manual_score is None:  # nobody has looked at it
                            grade.needs_manual_grade = True
                        continue
                    if cell.startswith("hidden_") and problem is None:
                        score, _, _ = function_result(report, nb_name, cell[len("hidden_"):])
                        grade.auto_score = max(0.0, min(float(score), float(grade.max_score)))
                        grade.needs_manual_grade = False
                        total += grade.auto_score
                    else:
                        grade.auto_score = 0.0
                        grade.needs_manual_grade = problem is not None and cell.startswith("hidden_")
                graded = {t["function"] for e in report.get("exercises", []) if e["id"] == nb_name for t in e["tests"]}
                for comment in sub_nb.comments:
                    if problem is not None:
                        comment.auto_comment = say("nbgrader.comment_not_graded", report.get("language") or "both",
                                                   reason=problem)
                    elif comment.name in graded:
                        comment.auto_comment = function_result(report, nb_name, comment.name)[2]
            gb.db.commit()
            totals[student] = total
    return totals


def read_batch(grades_dir):
    """{student: report} from grade-batch's output folder (reports/<student>.json)."""
    import json

    folder = Path(grades_dir) / "reports"
    if not folder.is_dir():
        raise GraderError(f"no reports/ in {grades_dir}: run `python -m autograder grade-batch` first")
    out = {}
    for path in sorted(folder.glob("*.json")):
        report = json.loads(path.read_text(encoding="utf-8"))
        out[report.get("batch", {}).get("student", path.stem)] = report
    return out
