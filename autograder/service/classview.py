"""The instructor's view of the class so far, from the database.

class_view(service, assignment)     who submitted what and when, each student's latest and best
                                    score, the scores over time (the numbers of an SVG that
                                    templates/scores_chart.html draws: no script), and the most
                                    frequent named mistakes of the latest reports
dashboard_html(service, assignment) grade-batch's dashboard (report/dashboard.py) over each
                                    student's latest report, written to
                                    DATA/dashboard/<n>/reports/ first (the dashboard reads a folder)
"""

import json
import shutil
import tempfile
from pathlib import Path

from ..report.dashboard import collect, render_dashboard
from . import database


def _latest_folder(svc, assignment):
    """A new folder holding reports/<n>.json: each student's latest report of `assignment`, with
    the "batch" entry the dashboard reads (status, note); the caller removes it."""
    from ..batch.exports import classify

    root = Path(svc.data) / "dashboard"
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="class-", dir=root))
    (folder / "reports").mkdir()
    latest = database.latest_reports(svc.engine, assignment)
    for n, (student, (_row, report)) in enumerate(sorted(latest.items())):
        r = json.loads(report)
        status, note = classify(r)
        r["batch"] = {"student": student, "status": status, "note": note}
        (folder / "reports" / f"{n:05d}.json").write_text(json.dumps(r, ensure_ascii=False), encoding="utf-8")
    return folder


def dashboard_html(svc, assignment):
    """The class dashboard of `assignment`'s latest reports, rendered from a temporary folder."""
    folder = _latest_folder(svc, assignment)
    try:
        return render_dashboard(folder, language=svc.language, label=assignment)  # no server path on a page
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def class_view(svc, assignment):
    """One row per student of `assignment`: submissions, the latest and best score, the last status."""
    rows = database.listing(svc.engine, None, assignment, limit=100_000)
    students = {}
    for r in reversed(rows):  # oldest first
        s = students.setdefault(
            r["student"],
            {"student": r["student"], "count": 0, "latest": None, "best": None, "last_at": None, "last_status": None},
        )
        s["count"] += 1
        s["last_at"], s["last_status"] = r["created_at"], r["status"]
        if r["status"] == "graded":
            s["latest"] = r["score"]
            s["best"] = r["score"] if s["best"] is None else max(s["best"], r["score"])
    folder = _latest_folder(svc, assignment)
    try:
        mistakes = collect(folder)["mistakes"][:10]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "rows": rows[:500],
        "students": sorted(students.values(), key=lambda s: s["student"]),
        "chart": scores_chart(rows),
        "mistakes": mistakes,
        "counts": {k: sum(1 for r in rows if r["status"] == k) for k in database.STATUSES},
    }


def scores_chart(rows, width=720, height=220):
    """The graded submissions' scores (as a share of the maximum) over time, one dot each: the
    numbers templates/scores_chart.html draws; None without a graded submission."""
    points = [
        (database.aware(r["created_at"]), r["score"] / r["max_score"], r["student"], r["score"], r["max_score"])
        for r in rows
        if r["status"] == "graded" and r["max_score"]
    ]
    if not points:
        return None
    t0 = min(p[0] for p in points)
    t1 = max(p[0] for p in points)
    span = max((t1 - t0).total_seconds(), 1.0)
    left, right, top, bottom = 40, 10, 10, 30
    w, h = width - left - right, height - top - bottom
    dots = []
    for t, frac, student, score, top_score in points:
        x = left + w * (t - t0).total_seconds() / span
        y = top + h * (1 - min(max(frac, 0), 1))
        dots.append((f"{x:.1f}", f"{y:.1f}", f"{student} {score:g}/{top_score:g} {t:%Y-%m-%d %H:%M} UTC"))
    return {
        "width": width,
        "height": height,
        "left": left,
        "right": left + w,
        "top": top,
        "w": w,
        "h": h,
        # a line at 0, 50 and 100 %, its label beside it
        "grid": [(f"{top + h * (1 - f):.1f}", f"{top + h * (1 - f) + 4:.1f}", f"{int(f * 100)}%") for f in (0, 0.5, 1)],
        "dots": dots,
        "first": f"{t0:%Y-%m-%d %H:%M}",
        "last": f"{t1:%Y-%m-%d %H:%M} UTC",
    }
