"""nbgrader hooks named in the nbgrader_config.py that `nbgrader-course` writes.

flag_unreadable_notebooks (c.Autograde.pre_convert_hook): nbgrader cannot convert a notebook it
cannot read (corrupt JSON, not a notebook): it stops that student's autograde with "There was an
error processing assignment", keeps whatever the other notebooks scored, and its export shows the
sum as if it were the grade.  Before nbgrader converts a submission, this hook reads each of its
notebooks; for one that cannot be read it records the submission (with its timestamp) and flags the
notebook's hidden-tests cells *needs manual grade*, 0 points, with the reason as the comment of every
answer cell: formgrader lists it for a human, as `nbgrader-gradebook` does for the same notebook.
A later autograde of a readable resubmission clears the flag (nbgrader's SaveAutoGrades).
"""
import sys
from pathlib import Path


def notebook_problem(path):
    """Why the notebook at `path` cannot be graded (one line), or None when it reads."""
    from ..load.submission import _notebook_cells

    try:
        _notebook_cells(path)
    except ValueError as e:
        return f"{Path(path).name}: {e}"
    try:
        import nbformat

        nbformat.read(str(path), as_version=4)
    except Exception as e:  # noqa: BLE001 - whatever stops nbgrader's reader
        return f"{Path(path).name}: the notebook cannot be read ({type(e).__name__}: {str(e)[:200]})"
    return None


def flag_unreadable_notebooks(assignment=None, student=None, notebooks=(), **_):
    """nbgrader's pre-convert hook: see the module docstring.  `notebooks` are the submitted paths
    (submitted/<student>/<assignment>/<name>.ipynb); nbgrader's `assignment` and `student` are its
    command-line patterns, so the ids come from the paths.  nbgrader logs a failing hook only at
    INFO level, so a failure here is printed on stderr."""
    try:
        _flag(notebooks)
    except Exception as e:  # noqa: BLE001
        import traceback

        print(f"[seqgrader] ERROR: flagging unreadable notebooks failed: {type(e).__name__}: {e}\n"
              + traceback.format_exc(), file=sys.stderr)


def _flag(notebooks):
    problems = {}
    for nb in notebooks:
        reason = notebook_problem(nb)
        if reason is not None:
            problems[Path(nb)] = reason
    if not problems:
        return
    from .gradebook import flag_notebook, read_timestamp

    for path, reason in problems.items():
        student_id, assignment_id = path.parent.parent.name, path.parent.name
        root = path.parents[3]
        db = root / "gradebook.db"
        print(f"[seqgrader] {student_id}/{assignment_id}/{reason}: flagged for manual grading", file=sys.stderr)
        if not db.exists():
            print(f"[seqgrader] no gradebook at {db}: the flag could not be written", file=sys.stderr)
            continue
        import sqlite3
        from contextlib import closing

        from nbgrader.api import Gradebook, MissingEntry

        with closing(sqlite3.connect(str(db))) as con:  # the course owning the assignment (no stray course row)
            row = con.execute("SELECT course_id FROM assignment WHERE name = ?", (assignment_id,)).fetchone()
        if row is None:
            continue  # not an assignment of this gradebook: nbgrader stops on it too
        with Gradebook(f"sqlite:///{db.resolve()}", row[0]) as gb:
            try:
                gb.find_notebook(path.stem, assignment_id)
            except MissingEntry:
                continue  # not a notebook of the assignment: nbgrader skips it too
            gb.update_or_create_student(student_id)
            ts = read_timestamp(path.parent)
            if ts is not None:
                gb.update_or_create_submission(assignment_id, student_id, timestamp=ts)
            else:
                gb.update_or_create_submission(assignment_id, student_id)
            flag_notebook(gb, assignment_id, student_id, path.stem, reason)
            gb.db.commit()
