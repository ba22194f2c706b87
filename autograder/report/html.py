"""Per-student HTML report: one self-contained page (inline CSS, pictures as data: URIs, no script,
nothing fetched), in the course's language (zh, en or both).

    render_html(report, language="both") -> str      (a Report or the dict of a JSON report)

What the page holds, top to bottom: the total, a score table per exercise (every test, its status
and points), problems while loading, then one card per failed test: the property, what went wrong,
the named mistake (TestResult.diagnosis: title, explanation, hint) when one matched, the call and
its inputs, expected vs the student's values side by side with the wrong entries marked, the
picture (report/plots.py), the hint, and the full text of the counterexample.
"""
import html
import math

from .model import as_dict, cx_slices, pick

STATUS = {
    "passed": ("通过", "passed", "ok"),
    "failed": ("未通过", "failed", "bad"),
    "missing": ("缺失", "missing", "bad"),
    "error": ("出错", "error", "bad"),
    "timeout": ("超时", "time-out", "bad"),
}

CSS = """
:root { --bad: #c0162c; --ok: #1b7f3b; --mark: #ffe1e4; --muted: #5b6170; --line: #d9dce3; }
* { box-sizing: border-box; }
body { font-family: "Noto Sans CJK SC", "PingFang SC", "Microsoft YaHei", "WenQuanYi Zen Hei", system-ui,
       -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; padding: 24px 32px; color: #1d2130;
       background: #f6f7f9; line-height: 1.45; }
main { max-width: 1100px; margin: 0 auto; }
h1 { font-size: 1.6em; margin: 0 0 4px; }
h2 { font-size: 1.25em; margin: 28px 0 10px; }
h3 { font-size: 1.05em; margin: 0 0 6px; }
.muted { color: var(--muted); font-size: 0.9em; }
.total { font-size: 2.2em; font-weight: 700; margin: 8px 0 16px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 18px; margin: 12px 0; }
.card.failed { border-left: 5px solid var(--bad); }
table { border-collapse: collapse; }
table.scores { width: 100%; background: #fff; }
table.scores td, table.scores th { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left; }
table.scores tr.exercise td { background: #eef1f6; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 0.85em; font-weight: 600; }
.badge.ok { background: #dff3e5; color: var(--ok); }
.badge.bad { background: #fde2e5; color: var(--bad); }
.diagnosis { background: #fff7e0; border: 1px solid #f0c94a; border-radius: 6px; padding: 10px 14px; margin: 10px 0; }
.diagnosis .title { font-weight: 700; font-size: 1.05em; }
.hint { background: #e8f2ff; border-left: 4px solid #2b6cb0; padding: 8px 12px; margin: 10px 0; }
.message { margin: 6px 0; }
.pair { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; margin: 8px 0; }
.pair figure { margin: 0; }
.pair figcaption { font-weight: 600; font-size: 0.9em; margin-bottom: 3px; }
table.arr td { border: 1px solid var(--line); padding: 2px 6px; text-align: right; font-family: ui-monospace,
               "DejaVu Sans Mono", monospace; font-size: 0.85em; min-width: 2.2em; }
table.arr td.t { background: #dbe8f7; }
table.arr td.diff { background: var(--mark); outline: 2px solid var(--bad); outline-offset: -2px; font-weight: 700;
                    color: var(--bad); }
table.arr th { font-weight: normal; color: var(--muted); font-size: 0.75em; padding: 0 4px; }
table.inputs td { padding: 3px 8px; vertical-align: top; border-bottom: 1px solid var(--line); }
table.inputs td.name { font-family: ui-monospace, monospace; font-weight: 600; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.88em; }
pre { background: #f3f4f7; padding: 8px 10px; border-radius: 4px; overflow-x: auto; white-space: pre-wrap; }
img.cx-picture { max-width: 100%; border: 1px solid var(--line); border-radius: 4px; background: #fff; margin: 8px 0; }
details summary { cursor: pointer; color: var(--muted); }
.legend { font-size: 0.85em; color: var(--muted); }
.errors li { color: var(--bad); }
"""


def esc(x):
    return html.escape(str(x), quote=True)


def text(language, zh, en, tag="span"):
    """Both languages as two blocks (zh first), or the one the course uses."""
    if language == "both" and zh and en and zh != en:
        return f'<{tag} lang="zh">{esc(zh)}</{tag}><br><{tag} lang="en">{esc(en)}</{tag}>'
    return f"<{tag}>{esc(pick(language, zh, en))}</{tag}>"


def label(language, zh, en):
    """A short label on one line: "中文 English" for both."""
    return esc(pick(language, zh, en, sep=" "))


def fmt_value(v):
    if isinstance(v, bool):
        return "T" if v else "F"
    if isinstance(v, float):
        if v == int(v) and abs(v) < 1e6:
            return f"{v:.1f}"
        return f"{v:.4g}"
    if v is None:
        return "–"
    return str(v)


def array_table(rows, differs=None, mask=False, cls="arr"):
    """A 2-D nested list as a table; `differs` marks the wrong cells (class "diff")."""
    if not rows or not isinstance(rows[0], list):
        rows = [rows]
        differs = [differs] if differs is not None else None
    out = [f'<table class="{cls}">']
    ncols = max((len(r) for r in rows), default=0)
    out.append("<tr><th></th>" + "".join(f"<th>{j}</th>" for j in range(ncols)) + "</tr>")
    for i, row in enumerate(rows):
        cells = []
        for j, v in enumerate(row):
            classes = []
            if differs is not None and i < len(differs) and j < len(differs[i]) and differs[i][j]:
                classes.append("diff")
            if mask and v is True:
                classes.append("t")
            c = f' class="{" ".join(classes)}"' if classes else ""
            title = ' title="wrong / 不对"' if "diff" in classes else ""
            cells.append(f"<td{c}{title}>{esc(fmt_value(v))}</td>")
        out.append(f"<tr><th>{i}</th>{''.join(cells)}</tr>")
    out.append("</table>")
    return "".join(out)


def _count(shape):
    n = 1
    for k in shape or ():
        n *= int(k)
    return n


def _value_html(v):
    """An input of the counterexample: a tensor (table if small, else its shape) or a scalar."""
    if isinstance(v, dict) and "shape" in v:
        head = f'<span class="muted">shape {esc(tuple(v["shape"]))} · {esc(v.get("dtype", ""))}</span>'
        vals = v.get("values")
        if vals is None:
            return head
        shape = v["shape"]
        if len(shape) == 0:
            return f"<code>{esc(fmt_value(vals))}</code> {head}"
        if len(shape) <= 2:
            return head + array_table(vals, mask=v.get("dtype") == "bool")
        parts = []
        for s in cx_slices({"got": vals}, limit=4):
            parts.append(f'<figure><figcaption>[{esc(", ".join(map(str, s[0])))}, :, :]</figcaption>'
                         f'{array_table(s[2], mask=v.get("dtype") == "bool")}</figure>')
        return head + f'<div class="pair">{"".join(parts)}</div>'
    return f"<code>{esc(v)}</code>"


def _partial(cx, slices):
    """True when the tables do not show the whole tensor (a window of it, or some slices only)."""
    if cx.get("offset") or cx.get("index"):
        return True
    shape = cx.get("shape") or []
    return len(shape) > 2 and _count(shape[:-2]) > len(slices)


def counterexample_html(cx, language, picture=True):
    """The call, its inputs, expected vs got side by side (wrong entries marked) and the picture."""
    if not cx:
        return ""
    out = ['<div class="counterexample">']
    out.append(f"<h3>{label(language, '反例（最小的失败输入）', 'Counterexample (the smallest failing input)')}</h3>")
    if cx.get("call"):
        out.append(f'<p>{label(language, "调用", "Call")}: <code>{esc(cx["call"])}</code></p>')
    inputs = cx.get("inputs") or {}
    if inputs:
        out.append('<table class="inputs">')
        for name, v in inputs.items():
            cell = _value_html(v)
            big = isinstance(v, dict) and v.get("values") is not None and _count(v.get("shape")) > 24
            if big:  # a weight matrix: folded, so that the wrong values stay in view
                cell = (f'<details><summary>shape {esc(tuple(v["shape"]))} · {esc(v.get("dtype", ""))} '
                        f'({label(language, "点击展开", "click to show")})</summary>{cell}</details>')
            out.append(f'<tr><td class="name">{esc(name)}</td><td>{cell}</td></tr>')
        out.append("</table>")
    if cx.get("kind") == "shape" and (cx.get("expected_shape") or cx.get("got_shape")):
        want = tuple(cx.get("expected_shape") or cx.get("shape") or ())
        have = tuple(cx.get("got_shape") or cx.get("shape") or ())
        out.append(f'<p>{label(language, "期望的形状", "expected shape")}: <code>{esc(want)}</code> · '
                   f'{label(language, "你的形状", "your shape")}: <code>{esc(have)}</code></p>')
    slices = cx_slices(cx)
    if slices:
        names = cx.get("labels") or ["expected", "got"]
        words = {"expected": ("期望", "expected"), "got": ("你的结果", "yours"),
                 "before": ("之前", "before"), "after": ("之后", "after")}
        we = label(language, *words.get(names[0], (names[0], names[0])))
        wg = label(language, *words.get(names[1], (names[1], names[1])))
        what = esc(cx.get("what", ""))
        n = cx.get("n_differ")
        if n is not None:
            en = "1 wrong entry (outlined in red)" if n == 1 else f"{n} wrong entries (outlined in red)"
            legend = label(language, f"{n} 个元素不对（红框标出）", en)
            if _partial(cx, slices):
                legend += " · " + label(language, "只显示了一部分", "only a part is shown")
            out.append(f'<p class="legend">{legend}</p>')
        mask = cx.get("kind") == "mask"
        for idx, e, g, d in slices:
            where = f"{what}[{esc(', '.join(map(str, idx)))}{', :, :' if idx else ''}]" if idx else what
            if cx.get("offset"):
                where += f' <span class="muted">(from {esc(tuple(cx["offset"]))})</span>'
            figs = []
            if e is not None:
                figs.append(f'<figure class="expected"><figcaption>{we} {where}</figcaption>{array_table(e, d, mask)}</figure>')
            figs.append(f'<figure class="got"><figcaption>{wg} {where}</figcaption>{array_table(g, d, mask)}</figure>')
            out.append(f'<div class="pair">{"".join(figs)}</div>')
    if picture:
        from .plots import data_uri, picture as draw
        png = draw(cx, language)
        if png:
            alt = pick(language, "期望与你的结果对比图", "picture: expected vs yours")
            out.append(f'<img class="cx-picture" alt="{esc(alt)}" src="{data_uri(png)}">')
    if cx.get("note"):
        out.append(f'<p class="muted">{esc(cx["note"])}</p>')
    out.append("</div>")
    return "".join(out)


def diagnosis_html(diag, language, function=None):
    from .feedback import unexplained, where

    out = []
    for d in diag or []:
        out.append('<div class="diagnosis">')
        out.append(f'<div class="muted">{label(language, "诊断：你的代码很可能犯了这个常见错误", "Diagnosis: your code most likely makes this common mistake")}</div>')
        where_zh, where_en = where(d, function)
        out.append(f'<div class="title">{text(language, d.get("title_zh", "") + where_zh, d.get("title_en", "") + where_en)}</div>')
        if d.get("explanation_zh") or d.get("explanation_en"):
            out.append(f'<p>{text(language, d.get("explanation_zh", ""), d.get("explanation_en", ""))}</p>')
        if d.get("hint_zh") or d.get("hint_en"):
            out.append(f'<p><b>{label(language, "怎么改", "How to fix it")}:</b> '
                       f'{text(language, d.get("hint_zh", ""), d.get("hint_en", ""))}</p>')
        out.append("</div>")
    more = unexplained(diag)
    if more:
        out.append(f'<p class="unexplained muted">{text(language, *more)}</p>')
    return "".join(out)


def _score(x):
    return f"{x:g}" if isinstance(x, (int, float)) and math.isfinite(x) else "–"


def test_card(t, language, picture=True):
    zh, en, cls = STATUS.get(t.get("status", "failed"), STATUS["failed"])
    out = [f'<section class="card failed" data-test="{esc(t["name"])}">']
    out.append(f'<h3><span class="badge {cls}">{label(language, zh, en)}</span> <code>{esc(t["name"])}</code> '
               f'<span class="muted">{_score(t.get("score"))} / {_score(t.get("max_score"))}</span></h3>')
    if t.get("property_zh") or t.get("property_en"):
        out.append(f'<p class="muted">{label(language, "要求", "Must hold")}: '
                   f'{text(language, t.get("property_zh", ""), t.get("property_en", ""))}</p>')
    out.append(f'<p class="message">{text(language, t.get("message_zh", ""), t.get("message_en", ""), tag="b")}</p>')
    out.append(diagnosis_html(t.get("diagnosis"), language, t.get("function")))
    out.append(counterexample_html(t.get("counterexample") or {}, language, picture))
    hint = (t.get("hint_zh"), t.get("hint_en"))
    if any(hint):
        out.append(f'<div class="hint"><b>{label(language, "提示", "Hint")}:</b> {text(language, *hint)}</div>')
    if t.get("details"):
        lines = []
        for lab, val in t["details"]:
            lines.append(f"{lab}:\n{val}" if "\n" in str(val) else f"{lab}: {val}")
        # open when there is no table to look at (a crash: the exception and where it was raised)
        is_open = " open" if "got" not in (t.get("counterexample") or {}) else ""
        out.append(f'<details{is_open}><summary>{label(language, "完整的反馈文本", "Full feedback text")}</summary>'
                   f'<pre>{esc(chr(10).join(lines))}</pre></details>')
    out.append("</section>")
    return "".join(out)


def render_html(report, language="both", picture=True):
    """The whole page for one student."""
    r = as_dict(report)
    lang_attr = {"zh": "zh", "en": "en"}.get(language, "zh")
    title = pick(language, "成绩报告", "Grade report")
    who = (r.get("batch") or {}).get("student") or r.get("submission", "")
    status = (r.get("batch") or {}).get("status", "graded")
    body = [f"<h1>{esc(title)}: {esc(who)}</h1>",
            f'<div class="muted">{label(language, "提交", "Submission")}: <code>{esc(r.get("submission", ""))}</code></div>']
    if status != "graded":
        body.append(f'<p class="errors"><b>{label(language, "无法评分", "Could not be graded")}:</b> {esc(status)}</p>')
    body.append(f'<div class="total" id="total">{_score(r.get("score"))} / {_score(r.get("max_score"))}</div>')
    if r.get("errors"):
        body.append(f"<h2>{label(language, '加载提交时的问题', 'Problems while loading the submission')}</h2><ul class='errors'>"
                    + "".join(f"<li><code>{esc(e)}</code></li>" for e in r["errors"]) + "</ul>")

    # the score table
    body.append(f"<h2>{label(language, '各练习得分', 'Scores per exercise')}</h2>")
    rows = ['<table class="scores"><tr>'
            f'<th>{label(language, "练习 / 测试", "Exercise / test")}</th><th>{label(language, "状态", "Status")}</th>'
            f'<th class="num">{label(language, "得分", "Score")}</th></tr>']
    for ex in r.get("exercises", []):
        tests = ex.get("tests", [])
        n_pass = sum(1 for t in tests if t.get("passed"))
        rows.append(f'<tr class="exercise" data-exercise="{esc(ex["id"])}"><td>{esc(ex["id"])}</td>'
                    f'<td>{n_pass}/{len(tests)} {label(language, "通过", "passed")}</td>'
                    f'<td class="num">{_score(ex.get("score"))} / {_score(ex.get("max_score"))}</td></tr>')
        for t in tests:
            zh, en, cls = STATUS.get(t.get("status", "failed"), STATUS["failed"])
            name = t["name"].split("/", 1)[-1]
            link = f'<a href="#t-{esc(t["name"])}">{esc(name)}</a>' if not t.get("passed") else esc(name)
            rows.append(f'<tr data-test-row="{esc(t["name"])}"><td>&nbsp;&nbsp;{link}</td>'
                        f'<td><span class="badge {cls}">{label(language, zh, en)}</span></td>'
                        f'<td class="num">{_score(t.get("score"))} / {_score(t.get("max_score"))}</td></tr>')
    rows.append("</table>")
    body.append("".join(rows))

    # the failed tests
    failed = [(ex, t) for ex in r.get("exercises", []) for t in ex.get("tests", []) if not t.get("passed")]
    if failed:
        body.append(f"<h2>{label(language, '没有通过的测试', 'Failed tests')} ({len(failed)})</h2>")
        current = None
        for ex, t in failed:
            if ex["id"] != current:
                current = ex["id"]
                body.append(f'<h2 class="exercise-title">{esc(current)}</h2>')
            body.append(f'<a id="t-{esc(t["name"])}"></a>' + test_card(t, language, picture))
    elif status == "graded":
        body.append(f'<p class="card">{label(language, "全部测试通过！", "Every test passed!")}</p>')
    if r.get("sandbox"):
        body.append(f'<p class="muted">({esc(r["sandbox"])})</p>')
    return (f'<!DOCTYPE html>\n<html lang="{lang_attr}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}: {esc(who)}</title><style>{CSS}</style></head>"
            f'<body><main>{"".join(body)}</main></body></html>\n')
