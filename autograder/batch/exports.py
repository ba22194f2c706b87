"""What a batch exports besides the reports: a submission's status, the CSV row, Gradescope's file.

classify()             ("graded" | "error: <reason>", note) of a report: a submission that could
                       not be graded at all is never a silent 0
error_report()         a report in the contract's shape for a submission that was not graded
gradescope_results()   Gradescope's autograder results.json, in the course's language
csv_row(), write_csv() grades.csv: one row per student, one column per exercise, total,
                       max_score, status, note; no cell a spreadsheet would run as a formula
                       (safe.csv_cell: a student named "=HYPERLINK(...)" is text)
"""

import csv
import io

from .. import safe
from ..safe import csv_cell
from ..store import one_line, write_atomic


def classify(report):
    """(status, note) of a report: "error: ..." when nothing of the submission could be graded
    (report/model.not_graded_reason, the one rule every report follows)."""
    from ..report.model import Status, not_graded_reason

    reason = not_graded_reason({k: v for k, v in report.items() if k != "batch"})
    if reason is not None:
        return "error: " + one_line(reason), ""
    errors = report.get("errors", [])
    if errors:
        return "graded", one_line("; ".join(errors), 500)
    statuses = [Status.of(t) for ex in report.get("exercises", []) for t in ex.get("tests", [])]
    if statuses and all(s == Status.MISSING for s in statuses):
        return "graded", "no exercise function found (or all are stubs)"
    return "graded", ""


def error_report(item, course, exercises, reason):
    """A report in the contract's shape for a submission the grader could not grade: every
    exercise, every test at 0 with status "error", and the reason in `errors`."""
    exs = []
    for ex in exercises:
        cfg = course.exercises[ex]
        tests = [
            {
                "name": f"{ex}/{name}",
                "function": name.split("/", 1)[0],
                "score": 0.0,
                "max_score": t.points,
                "passed": False,
                "status": "error",
                "feedback": f"not graded: {reason}",
                "seconds": 0.0,
            }
            for name, t in cfg.tests.items()
        ]
        exs.append({"id": ex, "score": 0.0, "max_score": cfg.max_score, "tests": tests, "load_errors": []})
    return {
        "submission": safe.cap(str(item.path), 1000, 1),
        "score": 0.0,
        "max_score": sum(e["max_score"] for e in exs),
        "exercises": exs,
        "errors": [f"not graded: {reason}"],
        "seconds": 0.0,
    }


def gradescope_results(report, language="both"):
    """Gradescope's autograder results.json for one report, in the course's language.

    A submission that was not graded is never a silent 0: `output` says so, why and what to do,
    and one test, "not graded", carries the only status the format has ("failed"), so that the
    student sees it in red; the format needs a score, which stays 0 (extra_data: graded false)."""
    from ..report.feedback import feedback_text
    from ..report.messages import say
    from ..report.model import advice_key, not_graded_reason
    from ..report.text import render_text

    reason = not_graded_reason(report)
    if reason is not None:
        text = render_text(report, language)
        return {
            "score": 0.0,
            "output": text,
            "visibility": "visible",
            "stdout_visibility": "hidden",
            "tests": [
                {
                    "name": say("gradescope.not_graded_test", language),
                    "score": 0.0,
                    "max_score": 0.0,
                    "status": "failed",
                    "visibility": "visible",
                    "output": say("test.not_graded", language, reason=reason)
                    + ("\n" + say(advice_key(reason), language, sep="\n") if advice_key(reason) != "why.other" else ""),
                }
            ],
            "extra_data": {
                "graded": False,
                "status": (report.get("batch") or {}).get("status", "error: " + reason),
                "not_graded_reason": reason,
            },
        }
    status = (report.get("batch") or {}).get("status", "graded")
    out = render_text(report, language).split("\n\n==", 1)[0].rstrip() + "\n"  # the score and what to fix
    same = report.get("language", "both") == language  # else the feedback is written again in `language`
    tests = [
        {
            "name": t["name"],
            "score": t["score"],
            "max_score": t["max_score"],
            "output": t.get("feedback", "") if same else feedback_text(t, language),
            "status": "passed" if t.get("passed") else "failed",
            "visibility": "visible",
        }
        for ex in report["exercises"]
        for t in ex["tests"]
    ]
    return {
        "score": report["score"],
        "execution_time": report.get("seconds", 0.0),
        "output": out,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"graded": True, "status": status, "max_score": report["max_score"]},
    }


def csv_row(student, report, exercises):
    """grades.csv's row of `student`: each exercise's score, total, max_score, status and note; the
    scores empty when the submission was not graded."""
    meta = report.get("batch", {})
    status = meta.get("status", "graded")
    row = {"student": student}
    by_id = {e["id"]: e for e in report.get("exercises", [])}
    graded = status == "graded"
    for ex in exercises:
        row[ex] = f"{by_id[ex]['score']:g}" if graded and ex in by_id else ""
    row["total"] = f"{report['score']:g}" if graded else ""
    row["max_score"] = f"{report['max_score']:g}"
    row["status"] = status
    row["note"] = meta.get("note", "")
    return row


def write_csv(path, rows, exercises):
    """Write grades.csv to `path` atomically: one row per student, by name, every cell made safe
    (`csv_cell`)."""
    buf = io.StringIO()
    w = csv.DictWriter(
        buf, fieldnames=["student", *exercises, "total", "max_score", "status", "note"], lineterminator="\n"
    )
    w.writeheader()
    for student in sorted(rows):
        w.writerow({k: csv_cell(v) for k, v in rows[student].items()})
    write_atomic(path, buf.getvalue())
