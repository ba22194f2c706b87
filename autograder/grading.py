"""Grade one submission: plan the tests from course.yml, run them, score them, build the Report."""

import re
import time
from pathlib import Path

from . import safe
from .plan import known_exercises, run_plan
from .report.feedback import feedback_text
from .report.messages import pair
from .report.model import ExerciseResult, Report, Status, TestResult, exercise_not_graded_reason, not_graded_reason
from .selfcheck import verify as verify_errors


def grade(path, course, runner, exercises=None, progress=None, verify=True, behaviour=None):
    """Grade the submission at `path` with `runner` (see sandbox/); returns a Report.

    `verify`: a test that ends in an error is run again on the reference solutions, now, through
    the same runner; if the reference fails it too, the grader is at fault and GraderEnvironmentError
    stops everything (selfcheck.verify).

    `behaviour`: a dict, filled with {function: {"outputs", "named"}} of the failing functions
    whose probe outputs the diagnosis recorded (similarity/behaviour.py).  It is the instructor's
    (grade-batch writes it to its own folder), never part of the Report."""
    start = time.monotonic()
    ids = list(exercises or course.assignment())  # default: the first assignment
    known_exercises(course, ids)
    registry, raw = run_plan(path, course, runner, {ex: list(course.exercises[ex].tests) for ex in ids}, progress)
    if verify:
        verify_errors(course, runner, raw, student=str(path))
    if behaviour is not None:
        for got in raw.values():
            if isinstance(got.get("behaviour"), dict):
                behaviour.update(got["behaviour"])
    return build_report(path, course, ids, registry, raw, start)


def build_report(path, course, ids, registry, raw, start):
    """The Report of a submission from the runner's raw outcomes."""
    exercises_out, errors = [], []
    levels = next((r["levels"] for r in raw.values() if r.get("levels")), {})
    for ex in ids:
        cfg = course.exercises[ex]
        got = raw.get(ex, {"tests": {}, "load_errors": []})
        load_errors = [safe.cap(e, LOAD_ERROR_CHARS, 2) for e in got["load_errors"][:MAX_LOAD_ERRORS]]
        for e in load_errors:
            if e not in errors and len(errors) < MAX_LOAD_ERRORS:
                errors.append(e)
        tests = []
        for name, tcfg in cfg.tests.items():
            p = registry[f"{ex}/{name}"]
            o = got["tests"].get(name) or {
                "status": "error",
                "zh": "测试没有运行。",
                "en": "The test did not run.",
                "details": [],
            }
            o = clean_outcome(o)
            passed = o["status"] == "passed"
            res = TestResult(
                name=f"{ex}/{name}",
                function=p.function,
                score=tcfg.points if passed else 0.0,
                max_score=tcfg.points,
                passed=passed,
                feedback="",
                status=o["status"],
                property_zh=p.zh,
                property_en=p.en,
                message_zh=o.get("zh", ""),
                message_en=o.get("en", ""),
                details=[list(d) for d in o.get("details", [])],
                hint_zh=o.get("hint_zh", ""),
                hint_en=o.get("hint_en", ""),
                seconds=o.get("seconds", 0.0),
                counterexample=o.get("counterexample") or {},
                diagnosis=o.get("diagnosis") or [],
                explained_by_part=o.get("explained_by_part") or [],
            )
            res.feedback = feedback_text(res, course.language)
            tests.append(res)
        exercises_out.append(ExerciseResult(ex, sum(t.score for t in tests), cfg.max_score, tests, load_errors))
    from .judge.runner import PEAKS
    from .load.reader import peak_mib

    timing = {}
    for got in raw.values():
        for k, v in (got.get("timing") or {}).items():
            timing[k] = max(timing.get(k, 0.0), v) if k in PEAKS else round(timing.get(k, 0.0) + v, 4)
    if raw:
        timing["grader_peak_mib"] = peak_mib()  # the most memory this grading process has held yet
    report = Report(
        submission=safe.cap(str(Path(path)), 1000, 1),
        score=sum(e.score for e in exercises_out),
        max_score=sum(e.max_score for e in exercises_out),
        exercises=exercises_out,
        errors=errors,
        seconds=round(time.monotonic() - start, 3),
        sandbox=_describe(levels),
        sandbox_warning=weak_warning(levels),
        language=course.language,
        timing=timing,
    )
    return mark_not_graded(report, course.language)


# Every text of a report passes through safe.cap here, whatever produced it: a report, and every
# page, terminal and spreadsheet made from it, stays within these sizes and holds no control
# character (the judge caps what it takes of a worker already: judge/remote.py)
TEXT_CHARS, TEXT_LINES = 4000, 80  # one text of an outcome (a message, a detail, a hint)
LOAD_ERROR_CHARS, MAX_LOAD_ERRORS = 600, 50
MAX_ITEMS, MAX_DEPTH = 500, 12  # of a list or dict in an outcome (a counterexample's values)


def clean_outcome(outcome):
    """A runner's outcome of one test with every text made safe and short (see TEXT_CHARS)."""

    def clean(v, depth=0):
        if isinstance(v, str):
            return safe.cap(v, TEXT_CHARS, TEXT_LINES)
        if isinstance(v, (bool, int, float)) or v is None or depth > MAX_DEPTH:
            return v if depth <= MAX_DEPTH else None
        if isinstance(v, (list, tuple)):
            return [clean(x, depth + 1) for x in list(v)[:MAX_ITEMS]]
        if isinstance(v, dict):
            return {safe.cap(k, 200, 1): clean(x, depth + 1) for k, x in list(v.items())[:MAX_ITEMS]}
        return safe.cap(v, TEXT_CHARS, TEXT_LINES)

    return clean(outcome)


def mark_not_graded(report, language):
    """A submission nothing of which could be graded (a corrupt notebook, a file that does not
    parse, a process that died loading it) is marked so: `graded` false and the reason; each test
    says "not graded: <reason>" instead of blaming a function for being missing.  The scores stay
    0, as the contract asks, but no report shows them as a grade (report/model.not_graded_reason).
    Likewise one exercise of a folder submission whose own file could not be read
    (ExerciseResult.not_graded_reason, report/model.exercise_not_graded_reason)."""
    reason = not_graded_reason(report)
    if reason is not None:
        report.graded, report.not_graded_reason = False, reason
        for ex in report.exercises:
            _not_graded_tests(ex, reason, language)
        return report
    for ex in report.exercises:  # a folder submission: one exercise's own file may be unreadable
        why = exercise_not_graded_reason(ex)
        if why is not None:
            ex.not_graded_reason = why
            _not_graded_tests(ex, why, language)
    return report


def _not_graded_tests(ex, reason, language):
    zh, en = pair("test.not_graded", reason=reason)
    for t in ex.tests:
        t.status = Status.NOT_GRADED.value
        t.message_zh, t.message_en = zh, en
        t.details, t.counterexample, t.diagnosis, t.hint_zh, t.hint_en = [], {}, [], "", ""
        t.explained_by_part = []
        t.feedback = feedback_text(t, language)


def weak_warning(levels):
    """The first line of every report graded under a weak sandbox (--allow-weak-sandbox), else ""."""
    if not levels:
        return ""
    from .sandbox.limits import missing

    gaps = missing(levels)
    if not gaps:
        return ""
    return safe.cap(
        "WARNING: graded with a weak sandbox (--allow-weak-sandbox): the student's code was not kept "
        "from: " + "; ".join(gaps),
        1000,
        1,
    )


def _describe(levels):
    if not levels:
        return "in-process (no isolation)"
    from .sandbox.limits import describe

    try:
        return safe.cap(re.sub(r" \(worker uid \d+\)", "", describe(levels)), 1000, 2)  # the same report every time
    except Exception:  # noqa: BLE001 - a description must never cost a report
        return "sandboxed worker"
