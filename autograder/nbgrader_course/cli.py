"""`nbgrader-course DIR`: build a ready nbgrader course; `nbgrader-gradebook GRADES`: grade-batch's
results into its gradebook (then `nbgrader generate_feedback` and `nbgrader export` work)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from ..errors import GraderError


def _command(name):
    """How to call the console script `name` of this installation: its plain name when that is what
    PATH finds, else its full path (so every printed command runs as printed)."""
    here = Path(sys.executable).parent / name
    found = shutil.which(name)
    if found and here.exists() and Path(found).resolve() == here.resolve():
        return name
    return str(here) if here.exists() else f"{sys.executable} -m {'autograder' if name == 'seqgrader' else name}"


def next_steps(first):
    """The commands to run in the course folder after `nbgrader-course`, in order (runnable as they
    are; lines starting with # are comments)."""
    nbg, seq = _command("nbgrader"), _command("seqgrader")
    return f"""\
  # optional, a due date for late penalties: {nbg} db assignment add {first} --duedate "YYYY-MM-DD HH:MM:SS UTC"
  {nbg} generate_assignment {first}      # release/{first}/: stubs, visible checks, conftest.py; no solutions
  # hand out release/{first}/ (or nbgrader release_assignment); students submit into
  # submitted/<student>/{first}/ with nbgrader's timestamp.txt (or nbgrader collect)
  {nbg} autograde {first}                # hidden properties in seqgrader's sandbox
  {nbg} generate_feedback {first}        # feedback/<student>/{first}/*.html
  {nbg} export                           # grades.csv
or, faster for a whole class (grade-batch grades, nbgrader-gradebook records it for nbgrader):
  {seq} grade-batch submitted --assignment {first} --out grades
  {seq} nbgrader-gradebook grades --course-dir . --assignment {first}
  {nbg} generate_feedback {first}
  {nbg} export"""


def cmd_nbgrader_course(args):
    """`seqgrader nbgrader-course`: the nbgrader course built in `args.dir`, and the next commands
    to run there printed; returns 0."""
    from ..config import load_course
    from .build import build_course

    course = load_course(args.course)
    built = build_course(
        args.dir,
        course,
        assignments=args.assignment,
        force=args.force,
        course_id=args.course_id,
        service_url=args.service_url,
    )
    out = Path(args.dir).resolve()
    for name, paths in built.items():
        print(f"source/{name}/: " + ", ".join(p.name for p in paths) + ", conftest.py, submit.py, submit.json")
    first = next(iter(built))
    print(
        f"\nnbgrader course written to {out} (course.yml, solutions/, exercises/: its course)\n"
        f"Next, in {out}:\n{next_steps(first)}",
        file=sys.stderr,
    )
    return 0


def _hand_grades(course_dir, assignment, course_id, restore=None):
    """The written answers someone has scored by hand: {(student, notebook, cell): needs_manual_grade}.
    nbgrader's autograde asks for a new review of every hand grade it passes; the answers here are
    the same ones, so `restore` puts the reviewers' flags back."""
    from nbgrader.api import Gradebook

    from .gradebook import _db_url

    out = {}
    with Gradebook(_db_url(course_dir), course_id) as gb:
        for sub in gb.assignment_submissions(assignment):
            for nb in sub.notebooks:
                for grade in nb.grades:
                    key = (sub.student.id, nb.name, grade.name)
                    if grade.cell.cell_type == "markdown" and grade.manual_score is not None:
                        if restore is None:
                            out[key] = grade.needs_manual_grade
                        elif key in restore:
                            grade.needs_manual_grade = restore[key]
        gb.db.commit()
    return out


def _autograde_from_reports(course_dir, assignment, grades, course_id):
    """nbgrader's own autograde, with SandboxGrade reading grade-batch's reports (no grading):
    timestamps, late penalties, restored test cells and autograded/ for generate_feedback.
    Returns {student: nbgrader's error} for the submissions it could not process."""
    if not (Path(course_dir) / "submitted").is_dir():
        return {}
    cmd = [
        sys.executable,
        "-m",
        "nbgrader",
        "autograde",
        assignment,
        "--force",
        f"--SandboxGrade.reports_dir={(Path(grades) / 'reports').resolve()}",
    ]
    reviewed = _hand_grades(course_dir, assignment, course_id)
    proc = subprocess.run(
        cmd,
        cwd=course_dir,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONWARNINGS="ignore"),
    )
    _hand_grades(course_dir, assignment, course_id, restore=reviewed)
    log = proc.stdout + proc.stderr
    failed = re.findall(r"error processing assignment '[^']*' for student '([^']+)'", log)
    if proc.returncode != 0 and not failed:
        raise GraderError(f"nbgrader autograde failed ({proc.returncode}):\n{log[-3000:]}")
    return {s: log for s in failed}


def cmd_nbgrader_gradebook(args):
    """`seqgrader nbgrader-gradebook`: grade-batch's reports recorded in the course's gradebook.db
    through nbgrader's autograde; returns 1 when nbgrader could not record a submission that is not
    flagged for manual grading, else 0."""
    from .gradebook import read_batch, write_reports

    if not (Path(args.course_dir) / "nbgrader_config.py").is_file():
        raise GraderError(f"{args.course_dir} has no nbgrader_config.py: give the folder `nbgrader-course` wrote")
    reports = read_batch(args.grades)
    failed = _autograde_from_reports(args.course_dir, args.assignment, args.grades, args.course_id)
    totals = write_reports(args.course_dir, args.assignment, reports, course_id=args.course_id)
    flagged = sorted(
        s
        for s, r in reports.items()
        if r.get("batch", {}).get("status", "graded") != "graded"
        or any(".ipynb: the notebook" in e for e in r.get("errors") or [])
    )
    unexplained = sorted(set(failed) - set(flagged))
    print(
        f"wrote {len(totals)} submission(s) of {args.assignment!r} into {Path(args.course_dir) / 'gradebook.db'}"
        + (f"; flagged for manual grading (not graded): {', '.join(flagged)}" if flagged else ""),
        file=sys.stderr,
    )
    if unexplained:
        print(
            f"error: nbgrader autograde could not record: {', '.join(unexplained)} (is there a grade-batch report "
            f"for each? see `nbgrader autograde {args.assignment}`'s log)",
            file=sys.stderr,
        )
        return 1
    return 0


def add_parser(sub):
    """Add the `nbgrader-course` and `nbgrader-gradebook` subcommands to `sub`."""
    from ..options import add_course_option

    p = sub.add_parser(
        "nbgrader-course",
        help="build a ready nbgrader course from a course folder",
        description="Write DIR/nbgrader_config.py, a copy of the course (course.yml, solutions/, "
        "exercises/) and DIR/source/<assignment>/ (one notebook per exercise, the reference "
        "solutions in solution regions, one locked hidden-tests cell per function, "
        "conftest.py for the students' pytest). Prints the next commands.",
    )
    p.add_argument("dir", metavar="DIR", help="the course folder (created; nbgrader's CourseDirectory.root)")
    add_course_option(p)
    p.add_argument(
        "--assignment",
        action="append",
        metavar="NAME",
        help="only this course.yml assignment (repeatable; default: all)",
    )
    p.add_argument("--course-id", default="seqgrader", help="nbgrader course id (default: seqgrader)")
    p.add_argument("--force", action="store_true", help="rewrite source/ in an existing course folder")
    p.add_argument(
        "--service-url",
        metavar="URL",
        help="the grading service (`seqgrader serve`) the released submit.py sends work to (written into "
        "submit.json; under JupyterHub submit.py finds the service by itself)",
    )
    p.set_defaults(func=cmd_nbgrader_course)

    g = sub.add_parser(
        "nbgrader-gradebook",
        help="record grade-batch's results in an nbgrader course",
        description="Read GRADES/reports/*.json (grade-batch's output), run nbgrader's autograde "
        "with SandboxGrade taking each student's results from them (no grading: "
        "timestamps, late penalties, autograded/ for generate_feedback), then write each "
        "student's feedback comments and errors into COURSE_DIR/gradebook.db, so "
        "formgrader, `nbgrader generate_feedback` and `nbgrader export` work.",
    )
    g.add_argument("grades", metavar="GRADES", help="grade-batch's output folder (--out)")
    g.add_argument("--course-dir", default=".", metavar="DIR", help="the nbgrader course folder (default: .)")
    g.add_argument("--assignment", required=True, metavar="NAME", help="the nbgrader assignment")
    g.add_argument("--course-id", default="seqgrader", help="nbgrader course id (default: seqgrader)")
    g.set_defaults(func=cmd_nbgrader_gradebook)
