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
    comment — never a silent 0;
  - the submission's timestamp (nbgrader's submitted/<student>/<assignment>/timestamp.txt) is
    recorded, so nbgrader's late penalties and the export's timestamp column work.
Then formgrader and `nbgrader export` show the scores.

`nbgrader-gradebook` first runs nbgrader's own `autograde` with SandboxGrade reading these reports
instead of grading (preprocessor.py): nbgrader records the timestamps, restores deleted test cells,
assigns late penalties and writes autograded/, so `nbgrader generate_feedback` works as after a
plain `nbgrader autograde`; then `write_reports` adds the comments and the flags.
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


def read_timestamp(folder):
    """The submission time in `folder`/timestamp.txt (nbgrader's format), or None."""
    from nbgrader.utils import parse_utc

    path = Path(folder) / "timestamp.txt"
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not text:
        return None
    try:
        return parse_utc(text)
    except ValueError:
        raise GraderError(f"{path}: not a timestamp nbgrader can read: {text[:80]!r}") from None


def flag_notebook(gb, assignment, student, notebook, reason, language="both"):
    """Notebook `notebook` of this submission could not be graded: 0 points, its hidden-tests cells
    *needs manual grade*, `reason` as every comment; a written answer keeps its hand grade."""
    sub_nb = gb.find_submission_notebook(notebook, assignment, student)
    for grade in sub_nb.grades:
        if grade.cell.cell_type == "markdown":
            if grade.auto_score is None and grade.manual_score is None:
                grade.needs_manual_grade = True
            continue
        grade.auto_score = 0.0
        grade.needs_manual_grade = grade.name.startswith("hidden_")
    for comment in sub_nb.comments:
        comment.auto_comment = say("nbgrader.comment_not_graded", language, reason=reason)


def write_reports(course_dir, assignment, reports, *, course_id="seqgrader"):
    """reports: {student id: report dict} as grade-batch writes them (reports/<student>.json, whose
    "batch" entry holds the status: "graded" or "error: ...").  Returns {student: total points}."""
    from nbgrader.api import Gradebook, MissingEntry

    totals = {}
    with Gradebook(_db_url(course_dir), course_id) as gb:
        try:
            nb_assignment = gb.find_assignment(assignment)
        except MissingEntry:
            raise GraderError(
                f"the gradebook has no assignment {assignment!r}: run `nbgrader generate_assignment {assignment}` first"
            ) from None
        notebooks = [nb.name for nb in nb_assignment.notebooks]
        for student, report in sorted(reports.items()):
            status = report.get("batch", {}).get("status", "graded")
            gb.update_or_create_student(student)
            ts = read_timestamp(Path(course_dir) / "submitted" / student / assignment)
            if ts is not None:
                gb.update_or_create_submission(assignment, student, timestamp=ts)
            else:
                gb.update_or_create_submission(assignment, student)
            total = 0.0
            for nb_name in notebooks:
                problem = status if status != "graded" else unreadable(report, nb_name)
                if problem is not None:
                    flag_notebook(gb, assignment, student, nb_name, problem, report.get("language") or "both")
                    continue
                sub_nb = gb.find_submission_notebook(nb_name, assignment, student)
                for grade in sub_nb.grades:
                    cell = grade.name
                    if grade.cell.cell_type == "markdown":  # a written answer: graded by hand, never here
                        if grade.auto_score is None and grade.manual_score is None:  # nobody has looked at it
                            grade.needs_manual_grade = True
                        continue
                    if cell.startswith("hidden_"):
                        score, _, _ = function_result(report, nb_name, cell[len("hidden_") :])
                        grade.auto_score = max(0.0, min(float(score), float(grade.max_score)))
                        grade.needs_manual_grade = False
                        total += grade.auto_score
                    else:
                        grade.auto_score = 0.0
                        grade.needs_manual_grade = False
                graded = {t["function"] for e in report.get("exercises", []) if e["id"] == nb_name for t in e["tests"]}
                for comment in sub_nb.comments:
                    if comment.name in graded:
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
