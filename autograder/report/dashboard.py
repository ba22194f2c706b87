"""The instructor's dashboard: one self-contained HTML page about a whole batch, rendered from
autograder/templates/dashboard.html.

    collect(grades_dir)                    -> dict of the numbers below (tests use it too)
    render_dashboard(grades_dir, language) -> str

It reads what `grade-batch` writes in its --out folder: reports/<student>.json (the contract's
report plus a "batch" entry: status, note) and grades.csv (one row per student; used for the
students whose report is missing).  It shows

* the submissions that could not be graded (status "error: ...") and why, first: they have no score;
* the score distribution per exercise and of the total (histograms, over graded submissions);
* where the points were lost: per exercise and per test, the points lost over the class and the
  share of failures the diagnosis could not name, worst first, with the mistakes it did name
  (an exercise where everyone lost points to undiagnosed failures shows up here, not only in the
  named mistakes);
* the pass rate of every property, worst first;
* the most frequent diagnosed mistakes (TestResult.diagnosis), counted once per student: what to
  explain again in class;
* every student's total, linked to their own HTML report when it is there.
"""

import csv
import json
import math
from collections import Counter, defaultdict
from pathlib import Path

from ..store import write_atomic
from .model import level, pick


def _float(x):
    try:
        v = float(x)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def collect(grades_dir):
    """The batch's numbers, from reports/*.json and grades.csv."""
    folder = Path(grades_dir)
    reports = {}
    for p in sorted((folder / "reports").glob("*.json")):
        try:
            r = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        student = str((r.get("batch") or {}).get("student") or p.stem)
        reports[student] = r
    rows = {}
    csv_path = folder / "grades.csv"
    if csv_path.is_file():
        with open(csv_path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                rows[row.get("student", "")] = row

    students = sorted(set(reports) | set(rows))
    errored, graded = [], []
    exercise_max, exercise_scores = {}, defaultdict(list)
    totals, max_total = [], None
    tests = {}  # name -> {"passed", "total", "max_score"}
    mistakes = {}  # id -> {"entry", "students": set, "tests": Counter}
    lost = {}  # exercise -> {"lost", "max", "failures", "unnamed", "tests": {name: same + "named": Counter}}
    table = []
    for s in students:
        r, row = reports.get(s), rows.get(s, {})
        status = ((r or {}).get("batch") or {}).get("status") or row.get("status") or "graded"
        note = ((r or {}).get("batch") or {}).get("note") or row.get("note") or ""
        html_report = (folder / "reports" / f"{s}.html").is_file()
        if status != "graded":
            errored.append({"student": s, "status": status, "note": note, "errors": (r or {}).get("errors", [])})
            table.append(
                {"student": s, "score": None, "max_score": None, "status": status, "html": html_report, "note": note}
            )
            continue
        graded.append(s)
        if r is None:  # a row without its report: the scores of the CSV only
            score = _float(row.get("total"))
            table.append(
                {
                    "student": s,
                    "score": score,
                    "max_score": _float(row.get("max_score")),
                    "status": status,
                    "html": html_report,
                    "note": note,
                }
            )
            if score is not None:
                totals.append(score)
            continue
        totals.append(float(r.get("score", 0.0)))
        max_total = float(r.get("max_score", 0.0))
        table.append(
            {
                "student": s,
                "score": float(r.get("score", 0.0)),
                "max_score": max_total,
                "status": status,
                "html": html_report,
                "note": note,
            }
        )
        for ex in r.get("exercises", []):
            exercise_max[ex["id"]] = float(ex.get("max_score", 0.0))
            exercise_scores[ex["id"]].append(float(ex.get("score", 0.0)))
            e_lost = lost.setdefault(ex["id"], _lost_counts())
            for t in ex.get("tests", []):
                c = tests.setdefault(t["name"], {"passed": 0, "total": 0, "max_score": t.get("max_score", 0)})
                c["total"] += 1
                c["passed"] += bool(t.get("passed"))
                t_lost = e_lost["tests"].setdefault(t["name"], _lost_counts())
                for counts in (e_lost, t_lost):
                    _count_loss(counts, t)
                for d in t.get("diagnosis") or []:
                    t_lost["named"][d.get("id") or d.get("title_en") or "?"] += 1
                    t_lost["titles"].setdefault(d.get("id") or d.get("title_en") or "?", d)
                for d in t.get("diagnosis") or []:
                    key = d.get("id") or d.get("title_en") or d.get("title_zh") or "?"
                    m = mistakes.setdefault(
                        key, {"entry": d, "students": set(), "tests": Counter(), "exercise": ex["id"]}
                    )
                    m["students"].add(s)
                    m["tests"][t["name"]] += 1
    ranked = sorted(mistakes.items(), key=lambda kv: (-len(kv[1]["students"]), kv[0]))
    return {
        "folder": str(folder),
        "students": students,
        "graded": graded,
        "errored": errored,
        "exercise_max": exercise_max,
        "exercise_scores": dict(exercise_scores),
        "totals": totals,
        "max_total": max_total,
        "pass_rates": sorted(
            ((n, c["passed"] / c["total"], c["passed"], c["total"]) for n, c in tests.items() if c["total"]),
            key=lambda x: (x[1], x[0]),
        ),
        "mistakes": [
            {
                "id": k,
                **{
                    f: v["entry"].get(f, "")
                    for f in ("title_zh", "title_en", "explanation_zh", "explanation_en", "hint_zh", "hint_en")
                },
                "exercise": v["exercise"],
                "count": len(v["students"]),
                "students": sorted(v["students"]),
                "tests": dict(v["tests"]),
            }
            for k, v in ranked
        ],
        "table": table,
        "lost": _ranked_losses(lost),
    }


def _lost_counts():
    return {"lost": 0.0, "max": 0.0, "failures": 0, "unnamed": 0, "tests": {}, "named": Counter(), "titles": {}}


def _count_loss(counts, t):
    top = _float(t.get("max_score")) or 0.0
    score = _float(t.get("score")) or 0.0
    counts["max"] += top
    counts["lost"] += max(0.0, top - score)
    if not t.get("passed"):
        counts["failures"] += 1
        counts["unnamed"] += not t.get("diagnosis")


def _share(unnamed, failures):
    return unnamed / failures if failures else 0.0


def _ranked_losses(lost):
    """[{exercise, points_lost, points_max, failures, unnamed, unnamed_share, tests: [...]}], the
    exercise (and, inside it, the test) where most points were lost first."""
    out = []
    for ex, c in lost.items():
        tests = [
            {
                "name": name,
                "points_lost": t["lost"],
                "points_max": t["max"],
                "failures": t["failures"],
                "unnamed": t["unnamed"],
                "unnamed_share": _share(t["unnamed"], t["failures"]),
                "mistakes": [
                    {
                        "id": k,
                        "count": n,
                        "title_zh": t["titles"][k].get("title_zh", ""),
                        "title_en": t["titles"][k].get("title_en", ""),
                    }
                    for k, n in sorted(t["named"].items(), key=lambda kv: (-kv[1], kv[0]))
                ],
            }
            for name, t in c["tests"].items()
            if t["lost"] > 0 or t["failures"]
        ]
        tests.sort(key=lambda t: (-t["points_lost"], -t["unnamed_share"], t["name"]))
        out.append(
            {
                "exercise": ex,
                "points_lost": c["lost"],
                "points_max": c["max"],
                "failures": c["failures"],
                "unnamed": c["unnamed"],
                "unnamed_share": _share(c["unnamed"], c["failures"]),
                "tests": tests,
            }
        )
    out.sort(key=lambda e: (-e["points_lost"], -e["unnamed_share"], e["exercise"]))
    return out


# ---------------------------------------------------------------- pictures


def histograms(data):
    """PNG: one histogram per exercise and one of the total (graded submissions)."""
    from .plots import _save, _setup

    fig = histogram_figure(data)
    return None if fig is None else _save(fig, _setup())


def histogram_figure(data):
    """The figure of `histograms`: integer scores get one bar per score and integer ticks, the
    counts of students integer ticks."""
    from matplotlib.ticker import MaxNLocator

    from .plots import _setup

    plt = _setup()
    panels = [(ex, data["exercise_scores"][ex], data["exercise_max"].get(ex, 0)) for ex in data["exercise_scores"]]
    if data["totals"]:
        panels.append(("total", data["totals"], data["max_total"] or max(data["totals"] + [1])))
    if not panels:
        return None
    n = len(panels)
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.9 * rows), squeeze=False)
    for k, ax in enumerate(axes.ravel()):
        if k >= n:
            ax.axis("off")
            continue
        name, scores, top = panels[k]
        top = float(top) or max(scores + [1])
        integer = float(top).is_integer() and all(float(x).is_integer() for x in scores)
        if integer and top <= 30:  # one bar per possible score, centred on it
            bins = [i - 0.5 for i in range(int(top) + 2)]
        else:
            bins = [top * i / 10 for i in range(11)]
        ax.hist(
            [min(max(s, 0.0), top) for s in scores],
            bins=bins,
            color="#2b6cb0" if name != "total" else "#1b7f3b",
            edgecolor="white",
        )
        mean = sum(scores) / len(scores) if scores else 0
        ax.axvline(mean, color="#c0162c", linestyle="--", linewidth=1.2)
        ax.set_title(f"{name}  (n={len(scores)}, mean {mean:.1f} / {top:g})", fontsize=10)
        ax.set_xlim(bins[0], bins[-1])
        ax.set_xlabel("score")
        ax.set_ylabel("students")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts of students
        if integer:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # integer scores
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- the page


def _median(scores):
    srt = sorted(scores)
    return srt[len(srt) // 2] if len(srt) % 2 else (srt[len(srt) // 2 - 1] + srt[len(srt) // 2]) / 2


def render_dashboard(grades_dir, language="both", label=None):
    """The dashboard of a grade-batch folder (autograder/templates/dashboard.html); `label`: what
    the page says it shows (default: the folder's path, which a page served to others must not show)."""
    from ..templates import render
    from .plots import data_uri

    d = collect(grades_dir)
    mean = sum(d["totals"]) / len(d["totals"]) if d["totals"] else None
    png = histograms(d)
    exercises = []
    for ex, scores in d["exercise_scores"].items():
        top = d["exercise_max"].get(ex, 0)
        exercises.append(
            {
                "id": ex,
                "mean": f"{sum(scores) / len(scores):.1f} / {top:g}",
                "median": f"{_median(scores):g}",
                "min": f"{min(scores):g}",
                "max": f"{max(scores):g}",
                "full": f"{sum(1 for s in scores if s >= top)}/{len(scores)}",
            }
        )
    losing = [
        {
            **e,
            "tests": [
                {
                    **t,
                    "named": "; ".join(
                        f"{pick(language, m['title_zh'], m['title_en'])} ({m['count']})" for m in t["mistakes"]
                    ),
                }
                for t in e["tests"]
            ],
        }
        for e in d["lost"]
        if e["points_lost"] > 0
    ]
    mistakes = [
        {
            "id": m["id"],
            "count": m["count"],
            "title": pick(language, m["title_zh"], m["title_en"]),
            "explanation": pick(language, m["explanation_zh"], m["explanation_en"]),
            "tests": ", ".join(sorted(m["tests"])),
            "students": ", ".join(m["students"]),
        }
        for m in d["mistakes"]
    ]
    rates = [
        {"name": name, "text": f"{p}/{tot} ({100 * rate:.0f}%)", "level": level(p, tot), "width": f"{100 * rate:.1f}"}
        for name, rate, p, tot in d["pass_rates"]
    ]
    students = [
        {
            **row,
            "score": "–" if row["score"] is None else f"{row['score']:g} / {row['max_score'] or 0:g}",
            "errored": row["status"] != "graded",
        }
        for row in d["table"]
    ]
    return render(
        "dashboard.html",
        language=language,
        lang={"zh": "zh", "en": "en"}.get(language, "zh"),
        pick=lambda zh, en: pick(language, zh, en),
        L=lambda zh, en: pick(language, zh, en, sep=" "),  # a label on one line
        label=d["folder"] if label is None else label,
        n=len(d["students"]),
        graded=len(d["graded"]),
        errored=d["errored"],
        mean="–" if mean is None else f"{mean:.1f}",
        of_max=f" / {d['max_total']:g}" if d["max_total"] else "",
        histograms=data_uri(png) if png else None,
        exercises=exercises,
        losing=losing,
        mistakes=mistakes,
        rates=rates,
        students=students,
    )


def write_dashboard(grades_dir, out=None, language="both"):
    """Write the dashboard (default GRADES_DIR/dashboard.html) atomically; return its path."""
    out = Path(out) if out else Path(grades_dir) / "dashboard.html"
    write_atomic(out, render_dashboard(grades_dir, language))
    return out
