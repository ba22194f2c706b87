"""nbgrader hooks named in the nbgrader_config.py that `nbgrader-course` writes.

flag_unreadable_notebooks (c.Autograde.pre_convert_hook) first makes sure the grader works here:
the reference solutions of the assignment get full marks in this environment (selfcheck.ensure,
remembered per environment).  Where they do not, it prints why and stops nbgrader's autograde
(SystemExit 2: nbgrader would only log an exception of a hook), before nbgrader records anything
of the submission: no student gets a score, not even a zero.

Then, nbgrader cannot convert a notebook it
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
    """Why the notebook at `path` cannot be graded (one line), or None when it reads; read in a
    child process of bounded memory (load/reader.run_limited), as every submission is."""
    from ..load.reader import run_limited

    got = run_limited(_notebook_problem, str(path))
    if got is None or (isinstance(got, str) and got.startswith(Path(path).name + ": ")):
        return got
    return f"{Path(path).name}: the notebook cannot be read ({got})"


def _notebook_problem(path):
    """(In the limited child.)  What notebook_problem says."""
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
    refuse_if_the_grader_fails(notebooks)
    try:
        _flag(notebooks)
    except Exception as e:  # noqa: BLE001
        import traceback

        print(
            f"[seqgrader] ERROR: flagging unreadable notebooks failed: {type(e).__name__}: {e}\n"
            + traceback.format_exc(),
            file=sys.stderr,
        )


def refuse_if_the_grader_fails(notebooks):
    """Stop the whole autograde (SystemExit 2) when the reference solutions of the submission's
    assignment lose points here (selfcheck.py); a problem of the check itself is printed and
    left to the grading of each notebook, which checks again."""
    from ..errors import GraderEnvironmentError

    paths = [Path(nb) for nb in notebooks]
    if not paths:
        return
    try:
        from ..config import load_course
        from ..judge import ForkRunner
        from ..selfcheck import ensure

        root = paths[0].parents[3]  # submitted/<student>/<assignment>/<notebook>.ipynb
        course = load_course(root / "course.yml" if (root / "course.yml").is_file() else None)
        assignment = paths[0].parent.name
        exercises = (
            course.assignment(assignment)
            if assignment in course.assignments
            else [p.stem for p in paths if p.stem in course.exercises]
        )
        if exercises:
            ensure(course, ForkRunner(course), exercises)
    except GraderEnvironmentError as e:
        print(f"[seqgrader] ERROR: nobody is graded: {e}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    except Exception as e:  # noqa: BLE001 - SandboxGrade checks again, and says so
        print(f"[seqgrader] the self-check could not run before autograde: {type(e).__name__}: {e}", file=sys.stderr)


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
        from nbgrader.api import Gradebook, MissingEntry

        course_id = assignment_course(db, assignment_id)
        if course_id is None:
            continue  # not an assignment of this gradebook: nbgrader stops on it too
        with Gradebook(f"sqlite:///{db.resolve()}", course_id) as gb:
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


def assignment_course(db, assignment_id):
    """The course id owning `assignment_id` in the sqlite gradebook `db` (a path), or None: a
    Gradebook opened with another course id would add a stray course row."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(str(db))) as con:
        row = con.execute("SELECT course_id FROM assignment WHERE name = ?", (assignment_id,)).fetchone()
    return row[0] if row else None
