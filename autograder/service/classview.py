"""The instructor's view of the class so far, from the database.

class_view(service, assignment)     who submitted what and when, each student's latest and best
                                    score, the scores over time (an SVG drawn here: no script),
                                    and the most frequent named mistakes of the latest reports
dashboard_html(service, assignment) grade-batch's dashboard (report/dashboard.py) over each
                                    student's latest report, written to
                                    DATA/dashboard/<n>/reports/ first (the dashboard reads a folder)
"""

import json
import shutil
import tempfile
from pathlib import Path

from markupsafe import Markup, escape

from ..report.dashboard import collect, render_dashboard
from . import store


def _latest_folder(svc, assignment):
    """A new folder holding reports/<n>.json: each student's latest report of `assignment`, with
    the "batch" entry the dashboard reads (status, note); the caller removes it."""
    from ..batch.exports import classify

    root = Path(svc.data) / "dashboard"
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="class-", dir=root))
    (folder / "reports").mkdir()
    latest = store.latest_reports(svc.engine, assignment)
    for n, (student, (_row, report)) in enumerate(sorted(latest.items())):
        r = json.loads(report)
        status, note = classify(r)
        r["batch"] = {"student": student, "status": status, "note": note}
        (folder / "reports" / f"{n:05d}.json").write_text(json.dumps(r, ensure_ascii=False), encoding="utf-8")
    return folder


def dashboard_html(svc, assignment):
    folder = _latest_folder(svc, assignment)
    try:
        return render_dashboard(folder, language=svc.language, label=assignment)  # no server path on a page
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def class_view(svc, assignment):
    rows = store.listing(svc.engine, None, assignment, limit=100_000)
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
        "chart": scores_svg(rows),
        "mistakes": mistakes,
        "counts": {k: sum(1 for r in rows if r["status"] == k) for k in store.STATUSES},
    }


def scores_svg(rows, width=720, height=220):
    """The graded submissions' scores (as a share of the maximum) over time: one dot each."""
    points = [
        (store.aware(r["created_at"]), r["score"] / r["max_score"], r["student"], r["score"], r["max_score"])
        for r in rows
        if r["status"] == "graded" and r["max_score"]
    ]
    if not points:
        return Markup("")
    t0 = min(p[0] for p in points)
    t1 = max(p[0] for p in points)
    span = max((t1 - t0).total_seconds(), 1.0)
    left, right, top, bottom = 40, 10, 10, 30
    w, h = width - left - right, height - top - bottom
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="scores over time" class="chart">',
        f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="#fff" stroke="#d9dce3"/>',
    ]
    for frac in (0, 0.5, 1):
        y = top + h * (1 - frac)
        out.append(
            f'<line x1="{left}" x2="{left + w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eceef2"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{int(frac * 100)}%</text>'
        )
    for t, frac, student, score, top_score in points:
        x = left + w * (t - t0).total_seconds() / span
        y = top + h * (1 - min(max(frac, 0), 1))
        out.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="#1b7f3b" fill-opacity="0.6">'
            f"<title>{escape(student)} {score:g}/{top_score:g} {t:%Y-%m-%d %H:%M} UTC</title></circle>"
        )
    out.append(
        f'<text x="{left}" y="{height - 8}" font-size="11">{t0:%Y-%m-%d %H:%M}</text>'
        f'<text x="{left + w}" y="{height - 8}" font-size="11" text-anchor="end">{t1:%Y-%m-%d %H:%M} UTC</text>'
    )
    out.append("</svg>")
    return Markup("".join(out))
