"""The instructor's dashboard: one self-contained HTML page about a whole batch.

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
import html
import json
import math
from collections import Counter, defaultdict
from pathlib import Path

from ..store import write_atomic
from .model import level, pick


def esc(x):
    return html.escape(str(x), quote=True)


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

# The body's fonts as in html.py: the usual CJK families first, then the browser's own fallback.
CSS = """
:root { --bad: #c0162c; --ok: #1b7f3b; --muted: #5b6170; --line: #d9dce3; }
body { font-family: "Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei", "WenQuanYi Zen Hei",
       "WenQuanYi Micro Hei", system-ui, sans-serif;
       margin: 0; padding: 24px 32px; color: #1d2130; background: #f6f7f9; line-height: 1.45; }
main { max-width: 1150px; margin: 0 auto; }
h1 { font-size: 1.6em; margin: 0 0 4px; }
h2 { font-size: 1.25em; margin: 28px 0 10px; }
.muted { color: var(--muted); font-size: 0.9em; }
.cards { display: flex; gap: 14px; flex-wrap: wrap; margin: 14px 0; }
.kpi { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 18px; min-width: 150px; }
.kpi .v { font-size: 1.8em; font-weight: 700; }
.kpi.bad .v { color: var(--bad); }
table { border-collapse: collapse; background: #fff; width: 100%; }
td, th { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left; vertical-align: top; }
th { background: #eef1f6; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.bar { background: #e4e7ee; height: 12px; border-radius: 6px; min-width: 160px; position: relative; }
.bar span { display: block; height: 12px; border-radius: 6px; background: var(--ok); }
.bar span.level-good { background: var(--ok); }
.bar span.level-fair { background: #d69e2e; }
.bar span.level-poor { background: var(--bad); }
td.note { color: var(--muted); font-size: 0.9em; }
.errored td { color: var(--bad); }
.mistake-title { font-weight: 700; }
img.hist { max-width: 100%; background: #fff; border: 1px solid var(--line); border-radius: 6px; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.9em; }
"""


def render_dashboard(grades_dir, language="both", label=None):
    """The dashboard of a grade-batch folder; `label`: what the page says it shows (default: the
    folder's path, which a page served to others must not show)."""
    from .plots import data_uri

    d = collect(grades_dir)
    L = lambda zh, en: esc(pick(language, zh, en, sep=" "))  # noqa: E731
    n, n_err = len(d["students"]), len(d["errored"])
    mean = sum(d["totals"]) / len(d["totals"]) if d["totals"] else None
    of_max = f" / {d['max_total']:g}" if d["max_total"] else ""
    body = [
        f"<h1>{L('班级成绩总览', 'Class dashboard')}</h1>",
        f'<div class="muted">{esc(d["folder"] if label is None else label)}</div>',
        '<div class="cards">',
        f'<div class="kpi" id="kpi-submissions"><div class="v">{n}</div>{L("份提交", "submissions")}</div>',
        f'<div class="kpi" id="kpi-graded"><div class="v">{len(d["graded"])}</div>{L("已评分", "graded")}</div>',
        f'<div class="kpi{" bad" if n_err else ""}" id="kpi-errors"><div class="v">{n_err}</div>{L("无法评分", "errored")}</div>',
        f'<div class="kpi" id="kpi-mean"><div class="v">{"–" if mean is None else f"{mean:.1f}"}</div>'
        f"{L('平均总分', 'mean total')}{of_max}</div>",
        "</div>",
    ]

    # errored first: they have no score at all
    body.append(f'<h2 id="errored">{L("无法评分的提交", "Submissions that could not be graded")} ({n_err})</h2>')
    if d["errored"]:
        body.append(
            f'<table class="errored-table"><tr><th>{L("学生", "Student")}</th><th>{L("状态", "Status")}</th>'
            f"<th>{L('说明', 'Note')}</th></tr>"
        )
        for e in d["errored"]:
            body.append(
                f'<tr class="errored" data-student="{esc(e["student"])}"><td><b>{esc(e["student"])}</b></td>'
                f"<td>{esc(e['status'])}</td><td>{esc(e['note'])}</td></tr>"
            )
        body.append("</table>")
    else:
        body.append(f'<p class="muted">{L("没有。", "None.")}</p>')

    # distributions
    body.append(f'<h2 id="distribution">{L("各练习的分数分布", "Score distribution per exercise")}</h2>')
    png = histograms(d)
    if png:
        body.append(f'<img class="hist" alt="{L("分数分布直方图", "score histograms")}" src="{data_uri(png)}">')
    if d["exercise_scores"]:
        body.append(
            f'<table><tr><th>{L("练习", "Exercise")}</th><th class="num">{L("平均", "mean")}</th>'
            f'<th class="num">{L("中位数", "median")}</th><th class="num">{L("最低", "min")}</th>'
            f'<th class="num">{L("最高", "max")}</th><th class="num">{L("满分人数", "full marks")}</th></tr>'
        )
        for ex, scores in d["exercise_scores"].items():
            top = d["exercise_max"].get(ex, 0)
            srt = sorted(scores)
            med = srt[len(srt) // 2] if len(srt) % 2 else (srt[len(srt) // 2 - 1] + srt[len(srt) // 2]) / 2
            body.append(
                f'<tr data-exercise="{esc(ex)}"><td><code>{esc(ex)}</code></td>'
                f'<td class="num">{sum(scores) / len(scores):.1f} / {top:g}</td><td class="num">{med:g}</td>'
                f'<td class="num">{min(scores):g}</td><td class="num">{max(scores):g}</td>'
                f'<td class="num">{sum(1 for s in scores if s >= top)}/{len(scores)}</td></tr>'
            )
        body.append("</table>")

    # where the points went
    body.append(f'<h2 id="points-lost">{L("在哪里丢了分（最多的在前）", "Where points were lost (worst first)")}</h2>')
    losing = [e for e in d["lost"] if e["points_lost"] > 0]
    if losing:
        note = L(
            "全班丢掉的分数；“诊断不出”是诊断没能说出错误名称的失败所占的比例：这些失败只有性质自己的反馈。",
            "Points lost over the class; 'not diagnosed' is the share of failures the diagnosis could not "
            "name: they have only the property's own feedback.",
        )
        body.append(f'<p class="muted">{note}</p>')
        body.append(
            f'<table class="points-lost"><tr><th>{L("练习 / 测试", "Exercise / test")}</th>'
            f'<th class="num">{L("丢分", "points lost")}</th><th class="num">{L("失败", "failures")}</th>'
            f'<th class="num">{L("诊断不出", "not diagnosed")}</th><th>{L("诊断出的错误", "named mistakes")}</th></tr>'
        )
        for e in losing:
            body.append(
                f'<tr class="lost-exercise" data-exercise="{esc(e["exercise"])}"><td><b><code>{esc(e["exercise"])}</code></b></td>'
                f'<td class="num"><b>{e["points_lost"]:g}</b> / {e["points_max"]:g}</td>'
                f'<td class="num">{e["failures"]}</td>'
                f'<td class="num">{100 * e["unnamed_share"]:.0f}%</td><td></td></tr>'
            )
            for t in e["tests"]:
                named = "; ".join(
                    f"{pick(language, m['title_zh'], m['title_en'])} ({m['count']})" for m in t["mistakes"]
                )
                body.append(
                    f'<tr class="lost-test" data-test="{esc(t["name"])}"><td>&nbsp;&nbsp;<code>{esc(t["name"])}</code></td>'
                    f'<td class="num">{t["points_lost"]:g}</td><td class="num">{t["failures"]}</td>'
                    f'<td class="num">{100 * t["unnamed_share"]:.0f}%</td><td>{esc(named)}</td></tr>'
                )
        body.append("</table>")
    else:
        body.append(f'<p class="muted">{L("没有丢分。", "No points were lost.")}</p>')

    # mistakes
    body.append(f'<h2 id="mistakes">{L("最常见的错误（诊断）", "Most frequent diagnosed mistakes")}</h2>')
    if d["mistakes"]:
        body.append(
            f'<p class="muted">{L("每个学生只计一次：课上值得再讲一遍的内容。", "Each student counted once: what to explain again in class.")}</p>'
        )
        body.append(
            f'<table class="mistakes"><tr><th class="num">{L("学生数", "students")}</th>'
            f"<th>{L('错误', 'Mistake')}</th><th>{L('学生', 'who')}</th></tr>"
        )
        for m in d["mistakes"]:
            title = pick(language, m["title_zh"], m["title_en"])
            expl = pick(language, m["explanation_zh"], m["explanation_en"])
            body.append(
                f'<tr class="mistake" data-mistake="{esc(m["id"])}"><td class="num"><b>{m["count"]}</b></td>'
                f'<td><div class="mistake-title">{esc(title)}</div><div class="muted">{esc(expl)}</div>'
                f'<div class="muted"><code>{esc(", ".join(sorted(m["tests"])))}</code></div></td>'
                f"<td>{esc(', '.join(m['students']))}</td></tr>"
            )
        body.append("</table>")
    else:
        body.append(f'<p class="muted">{L("没有诊断出已知的错误。", "No catalogued mistake was diagnosed.")}</p>')

    # pass rates
    body.append(f'<h2 id="pass-rates">{L("各性质的通过率（最低的在前）", "Pass rate per property (worst first)")}</h2>')
    if d["pass_rates"]:
        body.append(
            f'<table class="pass-rates"><tr><th>{L("测试", "Test")}</th><th class="num">{L("通过", "passed")}</th>'
            f"<th></th></tr>"
        )
        for name, rate, p, tot in d["pass_rates"]:
            low = f' class="level-{level(p, tot)}"'
            body.append(
                f'<tr data-test="{esc(name)}"><td><code>{esc(name)}</code></td>'
                f'<td class="num">{p}/{tot} ({100 * rate:.0f}%)</td>'
                f'<td><div class="bar"><span{low} style="width:{100 * rate:.1f}%"></span></div></td></tr>'
            )
        body.append("</table>")

    # every student
    body.append(f'<h2 id="students">{L("所有学生", "Every student")}</h2>')
    body.append(
        f'<table class="students"><tr><th>{L("学生", "Student")}</th><th class="num">{L("总分", "Total")}</th>'
        f"<th>{L('状态', 'Status')}</th><th>{L('备注（加载时的问题）', 'Notes (load problems)')}</th></tr>"
    )
    for row in d["table"]:
        name = esc(row["student"])
        if row["html"]:
            name = f'<a href="reports/{esc(row["student"])}.html">{name}</a>'
        score = "–" if row["score"] is None else f"{row['score']:g} / {row['max_score'] or 0:g}"
        cls = "" if row["status"] == "graded" else ' class="errored"'
        body.append(
            f'<tr{cls} data-student="{esc(row["student"])}"><td>{name}</td><td class="num">{score}</td>'
            f'<td>{esc(row["status"])}</td><td class="note">{esc(row.get("note", ""))}</td></tr>'
        )
    body.append("</table>")
    title = pick(language, "班级成绩总览", "Class dashboard")
    lang_attr = {"zh": "zh", "en": "en"}.get(language, "zh")
    return (
        f'<!DOCTYPE html>\n<html lang="{lang_attr}"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{esc(title)}</title>'
        f"<style>{CSS}</style></head><body><main>{''.join(body)}</main></body></html>\n"
    )


def write_dashboard(grades_dir, out=None, language="both"):
    """Write the dashboard (default GRADES_DIR/dashboard.html) atomically; return its path."""
    out = Path(out) if out else Path(grades_dir) / "dashboard.html"
    write_atomic(out, render_dashboard(grades_dir, language))
    return out
