"""Command line (``seqgrader ...`` or ``python -m autograder ...``):
``grade SUBMISSION --json OUT [--html OUT] [--markdown OUT]``, ``self-check`` (the reference solutions
graded here: see selfcheck.py), ``grade-batch SUBMISSIONS --out DIR``
(see batch.py), ``dashboard DIR --out dashboard.html`` (see report/dashboard.py), ``init-course DIR``
(a course folder to edit), ``student-kit DIR`` (what students need, without the grader),
``similarity SUBMISSIONS --out DIR`` (the instructors' similarity report: similarity/cli.py), the
nbgrader commands (nbgrader_course/cli.py), and ``serve`` / ``tokens``, the grading web service
(service/cli.py)."""

import argparse
import json
import os
import sys
from pathlib import Path

from . import __version__
from .options import add_course_option


def cmd_grade(args):
    """`seqgrader grade`: after the self-check, one submission graded; prints the report (plain or
    --rich) and writes --json, --html and --markdown.  Returns 0 whenever a report was made."""
    if not args.in_process:  # first: the sandbox server starts while we read the course
        from .sandbox import server

        server.prestart()
    from .config import load_course
    from .store import write_atomic

    course = load_course(args.course, language=args.language, max_examples=args.max_examples)
    exercises = args.exercise or course.assignment(args.assignment)
    for ex in exercises:  # a bad course fails before anything is graded
        if ex in course.exercises:
            course.reference(ex)
    from .grading import grade
    from .judge import ForkRunner, InProcessRunner
    from .report.text import render_text

    runner = InProcessRunner(course) if args.in_process else ForkRunner(course, workers=args.workers)
    from .selfcheck import ensure

    checked = ensure(course, runner, exercises)  # the reference gets full marks here, or nobody is graded
    if args.verbose:
        print(
            f"(self-check: the reference solutions get {checked['score']:g}/{checked['max_score']:g} here"
            f"{', remembered from ' + str(checked.get('checked_at')) if checked['cached'] else ''})",
            file=sys.stderr,
            flush=True,
        )

    def progress(ex, test, status):
        if args.verbose:
            print(f"  {status:<8} {ex}/{test}", file=sys.stderr, flush=True)

    report = grade(args.submission, course, runner, exercises=exercises, progress=progress)
    if args.student:
        report.student = args.student
    if report.sandbox_warning:
        print(report.sandbox_warning, file=sys.stderr, flush=True)
    if args.verbose:  # for the instructor (student pages do not show it)
        print(f"({report.sandbox})", file=sys.stderr, flush=True)
    if args.json:
        write_atomic(args.json, json.dumps(report.to_dict(), ensure_ascii=False, indent=1))
    if args.html:
        from .report.html import render_html

        write_atomic(args.html, render_html(report, course.language))
    if args.markdown:
        from .report.markdown import render_markdown

        md = Path(args.markdown)
        write_atomic(md, render_markdown(report, course.language, images=md.parent / f"{md.stem}_files"))
    if not args.quiet:
        if args.rich:
            from .report.terminal import render_rich

            render_rich(report, course.language)
        else:
            sys.stdout.write(render_text(report, course.language))
    return 0


def cmd_self_check(args):
    """Grade the reference solutions here, now (no cache), and say what this environment is."""
    if args.simulate:  # before anything forks: every process of the grader checks its autograd
        from .sandbox import forkcheck

        os.environ[forkcheck.MODE] = args.simulate
        forkcheck.install()
    if not args.in_process:
        from .sandbox import server

        server.prestart()
    from .config import load_course
    from .errors import GraderEnvironmentError
    from .judge import ForkRunner, InProcessRunner
    from .selfcheck import cache_dir, ensure, environment

    course = load_course(args.course)
    exercises = args.exercise or course.assignment(args.assignment)
    for ex in exercises:
        if ex in course.exercises:
            course.reference(ex)
    runner = InProcessRunner(course) if args.in_process else ForkRunner(course, workers=args.workers)
    out = {"environment": environment(course, exercises, "in-process" if args.in_process else "sandbox")}
    try:
        out.update(ensure(course, runner, exercises, refresh=True), passed=True)
        rc = 0
    except GraderEnvironmentError as e:
        out.update(passed=False, lost=e.lost, message=str(e))
        rc = 2
    if args.json:
        text = json.dumps(out, ensure_ascii=False, indent=1)
        if args.json == "-":
            print(text)
        else:
            from .store import write_atomic

            write_atomic(args.json, text)
    if not args.quiet and args.json != "-":
        env = out["environment"]
        gpus = env["torch"]["gpus"]
        print(f"grader {env['grader']}, Python {env['python']} ({env['executable']}), {env['kernel']}")
        print(
            f"torch {env['torch']['torch']} ({'CUDA ' + env['torch']['cuda_build'] if env['torch']['cuda_build'] else 'CPU build'}); "
            f"GPUs for the device sentences: {', '.join(gpus) if gpus else 'none (a simulated device)'}"
            f"; CUDA_VISIBLE_DEVICES={env['torch']['CUDA_VISIBLE_DEVICES']!r}"
        )
        if out["passed"]:
            used = {k: v for k, v in (out.get("devices") or {}).items() if k != "problems"}
            print(
                f"self-check passed: the reference solutions of {', '.join(exercises)} get "
                f"{out['score']:g}/{out['max_score']:g} here ({out['seconds']:.1f} s); remembered in {cache_dir()}"
            )
            if used:
                print(
                    "device sentences ran on: "
                    + "; ".join(
                        f"{'a simulated device (meta)' if d == 'meta' else d} ({len(t)} test(s))"
                        for d, t in used.items()
                    )
                )
            for p in (out.get("devices") or {}).get("problems", []):
                print(f"the GPU could not be used in the sandbox, a simulated device was: {p}")
        else:
            print(f"self-check FAILED: {out['message']}", file=sys.stderr)
    return rc


def cmd_dashboard(args):
    """`seqgrader dashboard`: the class dashboard of grade-batch's --out folder, written to
    `args.out`; returns 0."""
    from .errors import GraderError
    from .report.dashboard import write_dashboard

    folder = Path(args.grades)
    if not (folder / "reports").is_dir() and not (folder / "grades.csv").is_file():
        raise GraderError(f"{folder} holds neither reports/ nor grades.csv: give the --out folder of grade-batch")
    out = write_dashboard(folder, args.out, language=args.language)
    if not args.quiet:
        print(f"dashboard written to {out}")
    return 0


def cmd_init_course(args):
    """`seqgrader init-course`: the built-in course (course.yml, solutions/, exercises/) copied into
    `args.dir` to edit; an existing course.yml is kept unless --force."""
    import shutil

    from .config import BUILTIN, ConfigError

    out = Path(args.dir)
    if (out / "course.yml").exists() and not args.force:
        raise ConfigError(f"{out} already holds a course.yml (--force overwrites the course's files)")
    parts = {
        "course.yml": BUILTIN / "course.yml",
        "solutions": BUILTIN / "solutions",
        "exercises": BUILTIN / "exercises",
    }
    missing = [str(p) for p in parts.values() if not p.exists()]
    if missing:
        raise ConfigError(f"the built-in course is missing from this installation: {', '.join(missing)}")
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(parts["course.yml"], out / "course.yml")
    for name, pattern in (("solutions", "*.py"), ("exercises", "*.ipynb")):
        (out / name).mkdir(exist_ok=True)
        for f in sorted(parts[name].glob(pattern)):
            if not f.name.startswith("_"):
                shutil.copyfile(f, out / name / f.name)
    if not args.quiet:
        print(f"""course written to {out.resolve()}:
  course.yml   assignments, points per test, time limits, feedback language
  solutions/   the reference solutions (never give them to students)
  exercises/   the student notebooks
Use it with --course {out} (or from inside the folder), e.g.
  seqgrader grade SUBMISSION --course {out}
  seqgrader nbgrader-course COURSE_DIR --course {out}     # a ready nbgrader course
  seqgrader student-kit KIT_DIR --course {out}            # notebooks + visible checks, no grader needed""")
    return 0


def cmd_student_kit(args):
    """`seqgrader student-kit`: the students' kit of an assignment (notebooks, visible checks,
    submit.py) written into `args.dir`; returns 0."""
    from .config import load_course
    from .nbgrader_course.build import write_student_kit

    course = load_course(args.course)
    written = write_student_kit(
        args.dir, course, assignment=args.assignment, force=args.force, service_url=args.service_url
    )
    if not args.quiet:
        print(f"student kit written to {Path(args.dir).resolve()}: " + ", ".join(p.name for p in written))
        print(
            "Students run `pytest` there (needs only torch, numpy, matplotlib, pytest and nbformat); "
            "the hidden tests run when their work is graded."
        )
        if args.service_url:
            print(
                f'`python submit.py NOTEBOOK` (or `from submit import submit; submit("NOTEBOOK")` in a '
                f"notebook) sends their work to {args.service_url} and prints the score."
            )
    return 0


def _prog():
    name = os.path.basename(sys.argv[0] or "")
    return "seqgrader" if name.startswith("seqgrader") else "python -m autograder"


def build_parser():
    """The argparse parser of every `seqgrader` command, each subcommand with its `func`."""
    p = argparse.ArgumentParser(
        prog=_prog(), description="Autograder for the sequence-models chapter. `COMMAND --help` explains each command."
    )
    p.add_argument("--version", action="version", version=f"seqgrader {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser(
        "grade",
        help="grade one submission (.py, .ipynb or a folder)",
        description="Grade one student's submission and print a report. "
        "Exit status 0 whenever a report was produced, whatever the score; 2 when the "
        "grader cannot grade: among others when the reference solutions do not get full "
        "marks in this environment (checked before the first score and remembered per "
        "environment: see `self-check`).",
    )
    g.add_argument("submission", help="a .py file, an .ipynb notebook, or a folder of them")
    g.add_argument("--json", metavar="OUT", help="write the JSON report to OUT")
    add_course_option(g)
    g.add_argument(
        "--assignment", metavar="NAME", help="grade the exercises of this course.yml assignment (default: the first)"
    )
    g.add_argument("--exercise", action="append", metavar="ID", help="grade only this exercise (repeatable)")
    g.add_argument("--language", choices=["zh", "en", "both"], help="feedback language (overrides course.yml)")
    g.add_argument("--max-examples", type=int, help="hypothesis examples per property (overrides course.yml)")
    g.add_argument("--workers", type=int, help="exercises graded in parallel (default: number of cores)")
    g.add_argument(
        "--in-process", action="store_true", help="no child processes (debugging only: student code runs in the grader)"
    )
    g.add_argument("--html", metavar="OUT", help="write the student's report as one self-contained HTML page")
    g.add_argument(
        "--markdown",
        metavar="OUT",
        help="write the report as Markdown (its pictures go to the folder OUT's-stem_files/ beside it)",
    )
    g.add_argument(
        "--rich",
        action="store_true",
        help="print the report with colours, tables and the counterexamples (rich) instead of plain text",
    )
    g.add_argument(
        "--student",
        metavar="NAME",
        help="whose submission it is: the title of the reports (default: the file's or folder's name)",
    )
    g.add_argument("-q", "--quiet", action="store_true", help="no report on stdout")
    g.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print each test as it finishes, and the sandbox's isolation level (stderr)",
    )
    g.set_defaults(func=cmd_grade)

    c = sub.add_parser(
        "self-check",
        help="grade the reference solutions here, now, and print this environment",
        description="Grade the course's reference solutions in this environment (interpreter, torch "
        "build, GPUs, sandbox, course) and say whether they get full marks. `grade`, "
        "`grade-batch` and nbgrader's autograde do the same before the first score and "
        "remember a pass per environment; this command checks again, whatever is "
        "remembered. Exit status 0: full marks; 2: the reference loses points here (the "
        "graders refuse to grade).",
    )
    add_course_option(c)
    c.add_argument("--assignment", metavar="NAME", help="the course.yml assignment (default: the first)")
    c.add_argument("--exercise", action="append", metavar="ID", help="only this exercise (repeatable)")
    c.add_argument("--workers", type=int, help="exercises graded in parallel (default: number of cores)")
    c.add_argument("--in-process", action="store_true", help="check the in-process runner (debugging) instead")
    c.add_argument(
        "--simulate",
        choices=["cuda", "broken"],
        help="on a machine without a GPU, make autograd behave across fork as a CUDA build does on one "
        "(cuda), or break it in every process the grader forks (broken): see "
        "autograder/sandbox/forkcheck.py",
    )
    c.add_argument("--json", metavar="OUT", help="write the environment and the result as JSON to OUT (- for stdout)")
    c.add_argument("-q", "--quiet", action="store_true", help="print nothing (the exit status says it)")
    c.set_defaults(func=cmd_self_check)

    d = sub.add_parser(
        "dashboard",
        help="the instructor's dashboard (HTML) of a grade-batch output folder",
        description="Summarise a grade-batch output folder (reports/*.json and grades.csv) in one "
        "self-contained HTML page: score distribution per exercise, pass rate per "
        "property, the most frequent diagnosed mistakes, the submissions that errored. "
        "grade-batch writes it as dashboard.html at the end of every run.",
    )
    d.add_argument("grades", metavar="GRADES_DIR", help="the --out folder of grade-batch")
    d.add_argument("--out", metavar="HTML", help="where to write it (default: GRADES_DIR/dashboard.html)")
    d.add_argument("--language", choices=["zh", "en", "both"], default="both", help="language of the page")
    d.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    d.set_defaults(func=cmd_dashboard)

    i = sub.add_parser(
        "init-course",
        help="write a course folder (a copy of the built-in course) to edit",
        description="Write DIR/course.yml, DIR/solutions/ and DIR/exercises/: the built-in course, "
        "ready to edit. Select it with --course DIR, or run the commands inside DIR.",
    )
    i.add_argument("dir", metavar="DIR", help="the course folder (created)")
    i.add_argument("--force", action="store_true", help="overwrite the course files of an existing course folder")
    i.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    i.set_defaults(func=cmd_init_course)

    k = sub.add_parser(
        "student-kit",
        help="write what students need for an assignment (no grader, no solutions)",
        description="Write DIR/<exercise>.ipynb for each exercise of the assignment (stubs, visible "
        "checks, hidden-tests cells that only say when they run), DIR/submit.py and "
        "DIR/submit.json (the work sent to the grading service) and DIR/conftest.py: "
        "`pytest` in DIR runs the visible checks with only torch, numpy, matplotlib, "
        "pytest and nbformat installed. Neither the properties nor the solutions are in it.",
    )
    k.add_argument("dir", metavar="DIR", help="the kit folder (created)")
    add_course_option(k)
    k.add_argument("--assignment", metavar="NAME", help="the course.yml assignment (default: the first)")
    k.add_argument("--force", action="store_true", help="write into a folder that is not empty")
    k.add_argument(
        "--service-url",
        metavar="URL",
        help="the grading service (`seqgrader serve`) students submit to: written into DIR/submit.json, "
        "which DIR/submit.py reads (under JupyterHub it finds the service by itself)",
    )
    k.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    k.set_defaults(func=cmd_student_kit)

    from .batch import add_parser

    add_parser(sub)
    from .similarity.cli import add_parser as add_similarity_parser

    add_similarity_parser(sub)
    from .nbgrader_course.cli import add_parser as add_nbgrader_parser

    add_nbgrader_parser(sub)
    from .service.cli import add_parser as add_service_parser

    add_service_parser(sub)
    for name in ("grade", "self-check", "grade-batch", "serve"):
        sub.choices[name].add_argument(
            "--allow-weak-sandbox",
            action="store_true",
            help="grade even where the sandbox misses a guarantee (a view without the course, no network, no "
            "reach to the grader's processes: see docs/security.md); every report then says so at its top. "
            "Without it the grader refuses (exit status 2)",
        )
    return p


def main(argv=None):
    """Run the command line `argv` (default: sys.argv); returns the exit status, 2 on a GraderError.
    As a program, `grade` and `self-check` exit at once, without tearing torch down."""
    from .errors import GraderError

    args = build_parser().parse_args(argv)
    if getattr(args, "allow_weak_sandbox", False):  # every grading process started from here inherits it
        from .sandbox.limits import WEAK_ENV

        os.environ[WEAK_ENV] = "1"
    try:
        rc = args.func(args)
    except GraderError as e:
        print(f"error: {e}", file=sys.stderr)
        rc = 2
    if argv is None and args.func in (cmd_grade, cmd_self_check):
        _exit_now(rc)
    return rc


def _exit_now(rc):
    """`grade` run as a program: everything is written, so end without tearing down torch
    (the interpreter's clean-up of torch costs ~0.5 s, a tenth of a whole `grade`).  Nothing is
    left to clean up: no thread, no atexit handler; the sandbox server dies with this process."""
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(rc if isinstance(rc, int) else 1)
