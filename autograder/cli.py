"""Command line: ``python -m autograder grade SUBMISSION --json OUT [--html OUT] [--markdown OUT]``,
``python -m autograder grade-batch SUBMISSIONS --out DIR`` (see batch.py) and
``python -m autograder dashboard DIR --out dashboard.html`` (see report/dashboard.py)."""
import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from . import __version__


def _write_atomic(path, text):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)  # mkstemp makes it 0600; a report is for the instructor and the student
    os.replace(tmp, path)


def cmd_grade(args):
    if not args.in_process:
        from .sandbox import server
        server.prestart()  # its import of torch runs beside ours
    from .config import load_course
    from .grading import grade
    from .report.text import render_text
    from .sandbox import ForkRunner, InProcessRunner

    course = load_course(args.course, language=args.language, max_examples=args.max_examples)
    runner = InProcessRunner(course) if args.in_process else ForkRunner(course, workers=args.workers)

    def progress(ex, test, status):
        if args.verbose:
            print(f"  {status:<8} {ex}/{test}", file=sys.stderr, flush=True)

    exercises = args.exercise or course.assignment(args.assignment)
    report = grade(args.submission, course, runner, exercises=exercises, progress=progress)
    if args.student:
        report.student = args.student
    if args.verbose or "WARNING" in (report.sandbox or ""):  # for the instructor (student pages do not show it);
        print(f"({report.sandbox})", file=sys.stderr, flush=True)  # a worker that saw too much: always
    if args.json:
        _write_atomic(args.json, json.dumps(report.to_dict(), ensure_ascii=False, indent=1))
    if args.html:
        from .report.html import render_html
        _write_atomic(args.html, render_html(report, course.language))
    if args.markdown:
        from .report.markdown import render_markdown
        md = Path(args.markdown)
        _write_atomic(md, render_markdown(report, course.language, images=md.parent / f"{md.stem}_files"))
    if not args.quiet:
        if args.rich:
            from .report.terminal import render_rich
            render_rich(report, course.language)
        else:
            sys.stdout.write(render_text(report, course.language))
    return 0


def cmd_dashboard(args):
    from .errors import GraderError
    from .report.dashboard import write_dashboard

    folder = Path(args.grades)
    if not (folder / "reports").is_dir() and not (folder / "grades.csv").is_file():
        raise GraderError(f"{folder} holds neither reports/ nor grades.csv: give the --out folder of grade-batch")
    out = write_dashboard(folder, args.out, language=args.language)
    if not args.quiet:
        print(f"dashboard written to {out}")
    return 0


def build_parser():
    p = argparse.ArgumentParser(prog="python -m autograder",
                                description="Autograder for the sequence-models chapter.")
    p.add_argument("--version", action="version", version=f"autograder {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grade", help="grade one submission (.py, .ipynb or a folder)",
                       description="Grade one student's submission and print a report. "
                                   "Exit status 0 whenever a report was produced, whatever the score.")
    g.add_argument("submission", help="a .py file, an .ipynb notebook, or a folder of them")
    g.add_argument("--json", metavar="OUT", help="write the JSON report to OUT")
    g.add_argument("--course", metavar="YML", help="course file (default: course.yml of this repo)")
    g.add_argument("--assignment", metavar="NAME",
                   help="grade the exercises of this course.yml assignment (default: the first)")
    g.add_argument("--exercise", action="append", metavar="ID", help="grade only this exercise (repeatable)")
    g.add_argument("--language", choices=["zh", "en", "both"], help="feedback language (overrides course.yml)")
    g.add_argument("--max-examples", type=int, help="hypothesis examples per property (overrides course.yml)")
    g.add_argument("--workers", type=int, help="exercises graded in parallel (default: number of cores)")
    g.add_argument("--in-process", action="store_true",
                   help="no child processes (debugging only: student code runs in the grader)")
    g.add_argument("--html", metavar="OUT", help="write the student's report as one self-contained HTML page")
    g.add_argument("--markdown", metavar="OUT",
                   help="write the report as Markdown (its pictures go to the folder OUT's-stem_files/ beside it)")
    g.add_argument("--rich", action="store_true",
                   help="print the report with colours, tables and the counterexamples (rich) instead of plain text")
    g.add_argument("--student", metavar="NAME",
                   help="whose submission it is: the title of the reports (default: the file's or folder's name)")
    g.add_argument("-q", "--quiet", action="store_true", help="no report on stdout")
    g.add_argument("-v", "--verbose", action="store_true",
                   help="print each test as it finishes, and the sandbox's isolation level (stderr)")
    g.set_defaults(func=cmd_grade)

    d = sub.add_parser("dashboard", help="the instructor's dashboard (HTML) of a grade-batch output folder",
                       description="Summarise a grade-batch output folder (reports/*.json and grades.csv) in one "
                                   "self-contained HTML page: score distribution per exercise, pass rate per "
                                   "property, the most frequent diagnosed mistakes, the submissions that errored. "
                                   "grade-batch writes it as dashboard.html at the end of every run.")
    d.add_argument("grades", metavar="GRADES_DIR", help="the --out folder of grade-batch")
    d.add_argument("--out", metavar="HTML", help="where to write it (default: GRADES_DIR/dashboard.html)")
    d.add_argument("--language", choices=["zh", "en", "both"], default="both", help="language of the page")
    d.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    d.set_defaults(func=cmd_dashboard)

    from .batch import add_parser
    add_parser(sub)
    from .nbgrader_course.cli import add_parser as add_nbgrader_parser
    add_nbgrader_parser(sub)
    return p


def main(argv=None):
    from .errors import GraderError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except GraderError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
