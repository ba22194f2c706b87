"""Grade a whole class: ``python -m autograder grade-batch SUBMISSIONS --out DIR``.

Pipeline of one batch (each step is a module of this package):

    discover()      the submissions: nbgrader's submitted/<student>/<assignment>/, or a flat folder
                    where each .py / .ipynb file or each sub-folder is one student's submission
                    (discover.py)
    resume_key()    a hash of the submission's bytes, course.yml, the options and the grader's own
                    code: a report that records the same key is kept (resume; ../store.py)
    LocalPool       N grading processes (each imports torch once and grades submission after
                    submission with a ForkRunner), fed one submission at a time (pool.py);
    or run_dask()   one Dask task per submission, graded by warm grading processes that each Dask
                    worker keeps (the same pool), on a copy of the submission's files and of the
                    course (cluster.py)
    Batch.record()  writes reports/<student>.json (the contract's JSON plus a "batch" entry),
                    reports/<student>.html (the student's page, report/html.py) and
                    gradescope/<student>/results.json, atomically; grades.csv and the
                    instructor's dashboard.html (report/dashboard.py) at the end (exports.py)

A submission that cannot be graded at all (corrupt notebook, nothing loadable, grader failure) is
a row whose status is "error: <reason>", never a silent 0.
"""

import json
import os
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from ..errors import ConfigError, GraderError
from ..options import add_course_option
from ..store import grader_version, one_line, remove_stale_temp_files, resume_key, settings_digest, write_atomic
from ..store import lock_folder as _lock
from ..store import now as _now
from .discover import discover
from .exports import classify, csv_row, error_report, gradescope_results, write_csv
from .pool import LocalPool

PARALLEL_DEFAULT = "submissions"  # measured on 2 cores: see docs/benchmarks.md, "Spreading a batch over the cores"


# ---------------------------------------------------------------- the batch


class Batch:
    def __init__(self, args):
        from ..config import find_course, load_course

        self.args = args
        self.course_file = find_course(args.course)
        self.course = load_course(self.course_file, language=args.language, max_examples=args.max_examples)
        known = args.assignment if args.assignment in self.course.assignments else None
        self.exercises = list(args.exercise or self.course.assignment(known))
        for ex in self.exercises:
            if ex not in self.course.exercises:
                raise ConfigError(f"unknown exercise {ex!r}; course.yml has {list(self.course.exercises)}")
            self.course.reference(ex)  # missing: one clear error now, not an error row per student
        self.options = {
            "language": args.language,
            "max_examples": args.max_examples,
            "exercises": self.exercises,
            "share": not getattr(args, "no_share", False),
        }
        self.settings = settings_digest(self.course_file, self.course, self.exercises)
        self.out = Path(args.out)
        self.reports = self.out / "reports"
        self.gradescope = self.out / "gradescope"
        self.rows = {}
        self.counts = {"graded": 0, "error": 0, "kept": 0}
        self.scores = []
        self.unconfined = []  # students graded with a weak sandbox (see note_sandbox)

    # budget of one submission: every exercise at its time limit, plus a load each
    def budget(self):
        """Seconds one submission may take: each exercise's time limit plus a load and 5 s, and 60 s more."""
        c = self.course
        return sum(c.exercises[ex].timeout + c.load_timeout + 5 for ex in self.exercises) + 60

    def report_path(self, student):
        """reports/<student>.json in the output folder."""
        return self.reports / f"{student}.json"

    def html_path(self, student):
        """reports/<student>.html, the student's page beside the JSON."""
        return self.reports / f"{student}.html"

    def write_html(self, student, report, log):
        """The student's own page (report/html.py) beside the JSON; a failure here costs no grade."""
        from ..report.html import render_html

        try:
            write_atomic(self.html_path(student), render_html(report, self.course.language))
        except Exception as e:  # noqa: BLE001 - the JSON and the CSV are what count
            log.write(f"{_now()} could not write the HTML report of {student}: {type(e).__name__}: {e}\n")

    def kept_report(self, item, fp):
        """The stored report of `item` if it is complete and still up to date, else None."""
        p = self.report_path(item.student)
        try:
            report = json.loads(p.read_text(encoding="utf-8"))
            meta = report["batch"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if meta.get("resume_key") != fp or meta.get("retry"):
            return None
        return report

    def note_sandbox(self, student, report):
        """Remember a submission graded with a weak sandbox (--allow-weak-sandbox): the summary warns."""
        if report["batch"].get("status") == "graded" and report.get("sandbox_warning"):
            self.unconfined.append(student)

    def keep(self, item, report, log):
        """An up-to-date report: its row, and its Gradescope file if that was lost."""
        self.counts["kept"] += 1
        self.note_sandbox(item.student, report)
        self.rows[item.student] = csv_row(item.student, report, self.exercises)
        if report["batch"].get("status") == "graded":
            self.scores.append(report["score"])
        gs = self.gradescope / item.student / "results.json"
        if not gs.exists():
            write_atomic(gs, json.dumps(gradescope_results(report, self.course.language), ensure_ascii=False, indent=1))
        if not self.html_path(item.student).exists():
            self.write_html(item.student, report, log)
        log.write(f"{_now()} kept {item.student} (report up to date)\n")

    def record_safely(self, item, fp, res, log):
        """record(), and whatever goes wrong there (a file that cannot be written, a report the
        grader could not make sense of) becomes this student's error row: the class goes on."""
        try:
            return self.record(item, fp, res, log)
        except Exception as e:  # noqa: BLE001 - one student's failure is one row
            reason = one_line(f"the grader could not record this submission: {type(e).__name__}: {e}")
            log.write(f"{_now()} {reason} ({item.student})\n")
        try:
            return self.record(item, fp, {"error": reason, "retry": True}, log)
        except Exception:  # noqa: BLE001 - not even that: the row alone
            report = error_report(item, self.course, self.exercises, reason)
            report["batch"] = {"status": f"error: {reason}", "note": ""}
            self.rows[item.student] = csv_row(item.student, report, self.exercises)
            self.counts["error"] += 1
            return f"error: {reason}", report

    def record(self, item, fp, res, log):
        """Write the files of one finished submission; return (status, report)."""
        if res.get("report") is not None:
            report = res["report"]
            status, note = classify(report)
        else:
            reason = one_line(res.get("error") or "unknown failure")
            report = error_report(item, self.course, self.exercises, reason)
            status, note = f"error: {reason}", ""
        report["batch"] = {
            "student": str(item.student),
            "resume_key": fp,
            "status": status,
            "note": note,
            "retry": bool(res.get("retry")) and status != "graded",
            "grader": res.get("grader", grader_version()),
            "graded_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "grading_seconds": res.get("seconds", 0.0),
        }
        if res.get("host"):
            report["batch"]["host"] = res["host"]
        write_atomic(
            self.gradescope / item.student / "results.json",
            json.dumps(gradescope_results(report, self.course.language), ensure_ascii=False, indent=1),
        )
        self.write_html(item.student, report, log)
        if status == "graded":  # the instructor's, for the similarity report: never in a student's files
            from ..similarity.behaviour import path_of

            write_atomic(
                path_of(self.out, item.student),
                json.dumps({"functions": res.get("behaviour") or {}}, ensure_ascii=False, indent=1),
            )
        write_atomic(
            self.report_path(item.student), json.dumps(report, ensure_ascii=False, indent=1)
        )  # last: the commit
        self.rows[item.student] = csv_row(item.student, report, self.exercises)
        if status == "graded":
            self.counts["graded"] += 1
            self.scores.append(report["score"])
        else:
            self.counts["error"] += 1
        self.note_sandbox(item.student, report)
        process = (
            f" process={res['host'] + ':' if res.get('host') else ''}{res['pid']}#{res.get('warm', 0)}"
            if res.get("pid")
            else ""
        )  # which grading process, and how many it had graded before
        log.write(
            f"{_now()} graded {item.student} resume_key={fp[:16]}{process} score={report['score']:g} "
            f"status={status}"
            + (f" checked={res['checked']['tests']}@{res['checked']['seconds']}s" if res.get("checked") else "")
            + "\n"
        )
        log.flush()
        return status, report


def _plan_parallel(args, n_todo):
    """(grading processes, exercises in parallel per process)."""
    cores = args.workers or os.cpu_count() or 1
    if args.parallel == "exercises":
        return 1, cores
    return max(1, min(cores, n_todo)), 1


def run_batch(args):
    """`seqgrader grade-batch`: grade the submissions found in `args.submissions` into `args.out`
    (locked against a second batch, logged in batch.log); returns the exit status (130: interrupted)."""
    from rich.console import Console
    from rich.markup import escape

    console = Console(stderr=True, quiet=args.quiet, highlight=False, soft_wrap=True)
    signal.signal(signal.SIGTERM, _interrupt)  # kill -TERM: stop the graders, keep what is written
    batch = Batch(args)
    layout, items, warnings = discover(args.submissions, args.layout, args.assignment, exclude=[args.out])
    for w in warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    batch.out.mkdir(parents=True, exist_ok=True)
    lock = _lock(batch.out)
    log = open(batch.out / "batch.log", "a", encoding="utf-8")
    try:
        return _run(args, batch, layout, items, console, log)
    except KeyboardInterrupt:
        log.write(f"{_now()} interrupted\n")
        print("interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    finally:
        log.close()
        lock.close()


def _run(args, batch, layout, items, console, log):
    from rich.markup import escape
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    stale = remove_stale_temp_files(batch.out)
    log.write(
        f"{_now()} start: {len(items)} submission(s) in {args.submissions} ({layout} layout), "
        f"grader {grader_version()}{', --force' if args.force else ''}\n"
    )
    if stale:
        log.write(f"{_now()} removed {stale} temp file(s) left by an interrupted batch\n")

    # 1. what is up to date stays
    todo, fps = [], {}
    for item in items:
        try:
            fps[item.student] = fp = resume_key(item.path, batch.settings)
        except OSError as e:  # a file that cannot be read: this student's error row, the class goes on
            batch.record_safely(
                item,
                "",
                {"error": f"cannot read the submission ({type(e).__name__}: {e.strerror or e})", "retry": True},
                log,
            )
            continue
        kept = None if args.force else batch.kept_report(item, fp)
        if kept is None:
            todo.append(item)
        else:
            batch.keep(item, kept, log)
    log.flush()

    procs, per = _plan_parallel(args, len(todo))
    where = (
        f"the Dask cluster at {args.dask_scheduler}"
        if args.dask_scheduler
        else f"{procs} process(es) x {per} exercise(s) at a time"
    )
    console.print(
        f"{len(items)} submission(s) ({layout} layout): {batch.counts['kept']} up to date, "
        f"{len(todo)} to grade on {where}"
    )

    # 2. grade the rest, writing each one's files as soon as it is done
    start, done, skew_warned = time.monotonic(), 0, False
    if todo:
        if args.dask_scheduler:  # course.yml against the properties: checked by the workers (fatal)
            from .cluster import run_dask

            results = run_dask(
                args.dask_scheduler, todo, batch.course_file, batch.course, batch.options, batch.budget()
            )
        else:
            pool = LocalPool(procs, per, batch.course_file, batch.options, batch.budget(), batch.out / "workers.log")
            results = pool.run(todo)
        progress = Progress(
            TextColumn("[bold]grading[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("elapsed"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            disable=args.quiet,
        )
        try:
            with progress:
                task = progress.add_task("grading", total=len(todo))
                for item, res in results:
                    if res.get("fatal"):  # course.yml and the properties disagree, or the reference
                        # solutions lose points here (selfcheck.py): nobody can be graded, no row is written
                        log.write(f"{_now()} stopped: {res['fatal']}\n")
                        raise GraderError(res["fatal"])
                    if res.get("grader") not in (None, grader_version()) and not skew_warned:
                        skew_warned = True
                        progress.console.print(
                            f"[yellow]warning:[/] {escape(res.get('host', 'a worker'))} runs grader "
                            f"{escape(res['grader'])}, this machine {grader_version()}: "
                            f"update it (the reports record which version graded them)"
                        )
                    status, report = batch.record_safely(item, fps[item.student], res, log)
                    done += 1
                    progress.advance(task)
                    if status == "graded":
                        progress.console.print(
                            f"[green]graded[/] {escape(item.student)}  {report['score']:g}/"
                            f"{report['max_score']:g}  ({res.get('seconds', 0):.1f} s)"
                        )
                    else:
                        progress.console.print(f"[red]error[/]  {escape(item.student)}  {escape(status)}")
        except KeyboardInterrupt:
            log.write(f"{_now()} interrupted after {done} of {len(todo)}\n")
            print(
                f"interrupted: {done} of {len(todo)} graded in this run, their files are written; "
                f"run the same command again to grade the rest",
                file=sys.stderr,
            )
            return 130
        finally:
            results.close()  # stops the grading processes
    elapsed = time.monotonic() - start

    # 3. the table, the instructor's dashboard and the summary
    write_csv(batch.out / "grades.csv", batch.rows, batch.exercises)
    try:
        from ..report.dashboard import write_dashboard

        write_dashboard(batch.out, language=batch.course.language)
    except Exception as e:  # noqa: BLE001 - the grades are written; a dashboard can be made again
        log.write(f"{_now()} could not write dashboard.html: {type(e).__name__}: {e}\n")
    if getattr(args, "similarity", False):
        _similarity(args, batch, console, log)
    n_err = sum(1 for r in batch.rows.values() if r["status"] != "graded")
    summary = [
        f"{len(items)} submission(s): {len(items) - n_err} graded, {n_err} error(s) "
        f"({done} graded in this run, {batch.counts['kept']} kept up to date)"
    ]
    if batch.scores:
        summary.append(
            f"mean score {sum(batch.scores) / len(batch.scores):.2f} / {_max(batch):g} "
            f"over {len(batch.scores)} graded submission(s)"
        )
    if done:
        summary.append(f"time {elapsed:.1f} s, {elapsed / done:.2f} s per submission")
    summary.append(f"results in {batch.out}{os.sep} (grades.csv, dashboard.html, reports/, gradescope/)")
    if batch.unconfined:
        warning = (
            f"WARNING: {len(batch.unconfined)} submission(s) were graded with a weak sandbox "
            f"(--allow-weak-sandbox; see each report's sandbox_warning): {', '.join(sorted(batch.unconfined)[:10])}"
            + (" ..." if len(batch.unconfined) > 10 else "")
        )
        summary.append(warning)
        console.print(f"[bold red]{escape(warning)}[/]")
    log.write(f"{_now()} done: {'; '.join(summary)}\n")
    print("\n".join(summary))
    return 0


def _similarity(args, batch, console, log):
    """--similarity: similarity.json and similarity.html beside grades.csv, from the code and the
    behaviour this batch recorded (behaviour/); never a reason to lose the grades."""
    from ..similarity.cli import analyse, write
    from ..similarity.pairs import FLAG

    try:
        result = analyse(
            args.submissions,
            batch.course,
            args.assignment,
            (),
            batch.out,
            args.layout,
            skip=[batch.out],
            exercises=batch.exercises,
            workers=args.workers or os.cpu_count() or 1,
        )
        write(result, batch.out, batch.course.language)
        flagged = sum(1 for p in result.pairs if p.score >= FLAG)
        console.print(f"similarity: {flagged} pair(s) flagged, in {batch.out / 'similarity.html'}")
        log.write(f"{_now()} similarity: {result.compared} pair(s) compared, {flagged} flagged\n")
    except Exception as e:  # noqa: BLE001 - the grades are written; `seqgrader similarity` can run again
        console.print(f"[yellow]warning:[/] the similarity report failed: {type(e).__name__}: {e}")
        log.write(f"{_now()} could not write the similarity report: {type(e).__name__}: {e}\n")


def _interrupt(_signum, _frame):
    raise KeyboardInterrupt


def _max(batch):
    return sum(batch.course.exercises[ex].max_score for ex in batch.exercises)


# ---------------------------------------------------------------- command line

HELP = """\
Grade every submission of a folder and write, in --out DIR:

  reports/<student>.json               the contract's JSON report of `grade` (plus a "batch" entry:
                                       resume key, status, note, grader version, time)
  reports/<student>.html               the student's own report: one self-contained HTML page
  gradescope/<student>/results.json    the same in Gradescope's autograder format
  dashboard.html                       the instructor's view: score distributions, pass rate per
                                       property, frequent mistakes, errored submissions
                                       (`python -m autograder dashboard DIR` makes it again)
  grades.csv                           one row per student: one column per exercise, total,
                                       max_score, status ("graded" or "error: <reason>"), note
  batch.log                            what each run did (graded / kept), appended
  behaviour/<student>.json             for the instructor only: a hash of the probe outputs of each
                                       failing function (the similarity report's behaviour evidence)
  similarity.json, similarity.html     with --similarity: the instructor's similarity report
                                       (`seqgrader similarity SUBMISSIONS --grades DIR` makes it again)

SUBMISSIONS is either nbgrader's layout -- the course root (holding submitted/) or the submitted/
folder itself, with submitted/<student>/<assignment>/ as one submission (--assignment picks one
when there are several) -- or a flat folder where each .py / .ipynb file or each sub-folder is one
submission, named by the file's stem or the folder's name. The layout is detected (a submitted/
folder means nbgrader); --layout overrides it.

A submission that could not be graded at all (a corrupt notebook, nothing loadable, a grader
failure, a crash of the grading process) gets status "error: <reason>" and empty scores, never a
silent 0; a submission with load problems that was still graded is "graded" with the problems in
the note column.

Resume: every file is written atomically, and each report records a resume key: a hash of the
submission's bytes, course.yml, the options and the grader's code. Running the same command again
(after a kill, or after a few students resubmitted) grades only what is missing or changed;
--force regrades everything. Two batches cannot write to the same DIR at once.

Parallelism (local): --workers N cores (default: all). --parallel submissions (default) runs N
grading processes, each importing torch once and grading one submission after another; --parallel
exercises runs one process that grades the exercises of a submission N at a time.

Cluster: --dask-scheduler tcp://HOST:8786 sends each submission as a task to a Dask cluster (the
course -- course.yml and its reference solutions -- is sent once per worker); each Dask worker keeps
warm grading processes, one per thread, the same as the local mode's (sandboxed as on one machine),
so a worker core grades as fast as a local one. The results are written here exactly as in the
local mode. See docs/instructors.md, "Grade a whole class".

Self-check: before its first submission, every grading process (local, or on each Dask worker)
grades the reference solutions in its own environment; if they lose a point there, or if a
student's error turns out to be the reference's too, nobody more is graded: the batch stops with
exit status 2, writes no report, CSV row or Gradescope file for what it had not finished, and
says which property failed and what to try (docs/instructors.md, "GPU machines"). A pass is remembered per
environment in ~/.cache/seqgrader/self-check/ (SEQGRADER_CACHE_DIR).

Exit status: 0 when the batch finished (whatever the scores and errors), 2 when it could not
start (no such folder, no submissions, bad course.yml, scheduler unreachable) or the self-check
stopped it, 130 when interrupted (run again to resume)."""


def add_parser(sub):
    """Add the `grade-batch` subcommand to `sub` (argparse's subparsers); returns its parser."""
    import argparse

    b = sub.add_parser(
        "grade-batch",
        help="grade a folder of submissions (nbgrader or flat); CSV, JSON, Gradescope",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    b.add_argument(
        "submissions",
        metavar="SUBMISSIONS",
        help="course root or submitted/ folder (nbgrader), or a folder of .py/.ipynb files and folders",
    )
    b.add_argument("--out", metavar="DIR", default="grades", help="output folder (default: ./grades)")
    b.add_argument(
        "--layout",
        choices=["auto", "nbgrader", "flat"],
        default="auto",
        help="how SUBMISSIONS is organised (default: auto-detect)",
    )
    b.add_argument("--assignment", metavar="NAME", help="nbgrader: the assignment to grade (needed if several)")
    b.add_argument("--workers", type=int, metavar="N", help="cores to use locally (default: number of cores)")
    b.add_argument(
        "--parallel",
        choices=["submissions", "exercises"],
        default=PARALLEL_DEFAULT,
        help="grade N submissions at a time, one exercise at a time each (default), "
        "or one submission at a time with N exercises in parallel",
    )
    b.add_argument(
        "--force", action="store_true", help="regrade every submission, even those with an up-to-date report"
    )
    b.add_argument(
        "--no-share",
        action="store_true",
        help="let no judge start from what the diagnosis observed of the reference and the catalogued "
        "mistakes in an earlier one (autograder/diagnose/share.py; the reports are the same, only "
        "slower)",
    )
    b.add_argument(
        "--dask-scheduler", metavar="ADDRESS", help="grade on a Dask cluster (e.g. tcp://HOST:8786) instead of locally"
    )
    add_course_option(b)
    b.add_argument("--exercise", action="append", metavar="ID", help="grade only this exercise (repeatable)")
    b.add_argument("--language", choices=["zh", "en", "both"], help="feedback language (overrides course.yml)")
    b.add_argument("--max-examples", type=int, help="hypothesis examples per property (overrides course.yml)")
    b.add_argument(
        "--similarity",
        action="store_true",
        help="also write the instructor's similarity report (similarity.json, similarity.html): "
        "the code compared function by function, and the wrong outputs this batch recorded",
    )
    b.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bar and no line per submission on stderr (the summary is still printed)",
    )
    b.set_defaults(func=run_batch)
    return b
