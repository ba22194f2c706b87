"""Command line: ``python -m autograder grade SUBMISSION --json OUT`` and
``python -m autograder grade-batch SUBMISSIONS --out DIR`` (see batch.py)."""
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
    if args.json:
        _write_atomic(args.json, json.dumps(report.to_dict(), ensure_ascii=False, indent=1))
    if not args.quiet:
        sys.stdout.write(render_text(report))
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
    g.add_argument("-q", "--quiet", action="store_true", help="no report on stdout")
    g.add_argument("-v", "--verbose", action="store_true", help="print each test as it finishes (stderr)")
    g.set_defaults(func=cmd_grade)

    from .batch import add_parser
    add_parser(sub)
    return p


def main(argv=None):
    from .errors import GraderError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except GraderError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
