"""Per-student HTML report: one self-contained page (inline CSS, pictures as data: URIs, no script,
nothing fetched), in the course's language (zh, en or both; words from report/messages.py).

    render_html(report, language="both") -> str      (a Report or the dict of a JSON report)

What the page holds, top to bottom, so that its first screen tells the student what to do:

1. whose report it is, and the score, coloured by how good it is (model.level);
2. what to fix: one line per function with a failed test (model.fixes): the named mistake, or
   the property that does not hold, the points it costs, and a link to its details;
3. the score per exercise (every test's score folded below it);
4. problems while loading the submission;
5. the details, function by function: each named mistake once (title, explanation, how to fix
   it), then the function's first failed test in full (what went wrong, the call and its inputs,
   expected vs the student's values side by side with the wrong entries marked, the picture from
   report/plots.py, the hint), its other failed tests folded (<details>, no script needed; their
   tables, no picture).

A submission that was not graded shows "not graded", the reason and what to do, and no test card.
The sandbox line of the JSON is for the instructor and is not on the page.
"""

import html
import math
from pathlib import Path

from .messages import label as label_of
from .messages import pair, pick, say
from .messages import value as value_of
from .model import (
    Status,
    advice_key,
    as_dict,
    cx_slices,
    exercise_not_graded_reason,
    fix_headline,
    fixes,
    level,
    not_graded_reason,
    student_of,
)

# {status: (zh, en, css class)}, for callers that look the words up here
STATUS = {s.value: (*s.words(), "ok" if s == Status.PASSED else "bad") for s in Status}

# The body's fonts: the usual CJK families first, in order of preference; a reader with another CJK
# font still sees every character, the browser falling back to any installed font that holds it.
CSS = """
:root { --bad: #c0162c; --ok: #1b7f3b; --fair: #9a5b00; --none: #5b6170; --mark: #ffe1e4; --muted: #5b6170;
        --line: #d9dce3; }
* { box-sizing: border-box; }
body { font-family: "Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei", "WenQuanYi Zen Hei",
       "WenQuanYi Micro Hei", system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       padding: 20px 32px; color: #1d2130; background: #f6f7f9; line-height: 1.45; }
main { max-width: 1100px; margin: 0 auto; }
h1 { font-size: 1.5em; margin: 0 0 2px; }
h2 { font-size: 1.2em; margin: 22px 0 8px; }
h3 { font-size: 1.05em; margin: 0 0 6px; }
.muted { color: var(--muted); font-size: 0.9em; }
.en { color: var(--muted); }
.head { display: flex; align-items: center; gap: 24px; flex-wrap: wrap; margin: 10px 0 4px; }
.total { font-size: 2.1em; font-weight: 700; padding: 2px 18px; border-radius: 10px; border: 2px solid; }
.total.level-good { color: var(--ok); background: #e3f4e8; }
.total.level-fair { color: var(--fair); background: #fff3d6; }
.total.level-poor { color: var(--bad); background: #fde6e9; }
.total.level-none { color: var(--none); background: #eceef2; }
.fix-list { margin: 6px 0 0; padding-left: 1.6em; }
.fix-list li { margin: 4px 0; }
.fix-list .fn { font-weight: 700; }
.fix-list .cost { color: var(--bad); font-size: 0.88em; white-space: nowrap; }
.all-passed { font-size: 1.15em; color: var(--ok); font-weight: 600; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 18px; margin: 12px 0; }
.card.failed { border-left: 5px solid var(--bad); }
.not-graded { border-left: 5px solid var(--none); }
section.function { margin: 18px 0 26px; }
section.function > h3 { font-size: 1.15em; border-bottom: 2px solid var(--line); padding-bottom: 4px; }
details.test { background: #fff; border: 1px solid var(--line); border-left: 5px solid var(--bad); border-radius: 8px;
               margin: 8px 0; padding: 8px 14px; }
details.test > summary { cursor: pointer; }
details.test[open] > summary { margin-bottom: 8px; }
table { border-collapse: collapse; }
table.scores { width: 100%; background: #fff; }
table.scores td, table.scores th { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; }
table.scores tr.exercise td { font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.bar { background: #e4e7ee; height: 10px; border-radius: 5px; width: 160px; display: inline-block; vertical-align: middle; }
.bar span { display: block; height: 10px; border-radius: 5px; }
.bar .level-good { background: var(--ok); } .bar .level-fair { background: #d69e2e; } .bar .level-poor { background: var(--bad); }
.bar .level-none { background: var(--none); }
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
details summary { cursor: pointer; }
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


def inline(language, zh, en):
    """Both languages on one line, English beside the Chinese (muted), or the one the course uses."""
    if language == "both" and zh and en and zh != en:
        return f'<span lang="zh">{esc(zh)}</span> <span class="en" lang="en">/ {esc(en)}</span>'
    return esc(pick(language, zh, en))


def label(language, zh, en):
    """A short label on one line: "中文 English" for both."""
    return esc(pick(language, zh, en, sep=" "))


def L(key, language, **fields):
    """A catalogue label on one line, escaped."""
    return esc(say(key, language, sep=" ", **fields))


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


def array_table(rows, differs=None, mask=False, cls="arr", language="both"):
    """A 2-D nested list as a table; `differs` marks the wrong cells (class "diff")."""
    if not rows or not isinstance(rows[0], list):
        rows = [rows]
        differs = [differs] if differs is not None else None
    out = [f'<table class="{cls}">']
    ncols = max((len(r) for r in rows), default=0)
    out.append("<tr><th></th>" + "".join(f"<th>{j}</th>" for j in range(ncols)) + "</tr>")
    wrong = L("cx.wrong_cell", language)
    for i, row in enumerate(rows):
        cells = []
        for j, v in enumerate(row):
            classes = []
            if differs is not None and i < len(differs) and j < len(differs[i]) and differs[i][j]:
                classes.append("diff")
            if mask and v is True:
                classes.append("t")
            c = f' class="{" ".join(classes)}"' if classes else ""
            title = f' title="{wrong}"' if "diff" in classes else ""
            cells.append(f"<td{c}{title}>{esc(fmt_value(v))}</td>")
        out.append(f"<tr><th>{i}</th>{''.join(cells)}</tr>")
    out.append("</table>")
    return "".join(out)


def _count(shape):
    n = 1
    for k in shape or ():
        n *= int(k)
    return n


def _value_html(v, language):
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
            return head + array_table(vals, mask=v.get("dtype") == "bool", language=language)
        parts = []
        for s in cx_slices({"got": vals}, limit=4):
            parts.append(
                f"<figure><figcaption>[{esc(', '.join(map(str, s[0])))}, :, :]</figcaption>"
                f"{array_table(s[2], mask=v.get('dtype') == 'bool', language=language)}</figure>"
            )
        return head + f'<div class="pair">{"".join(parts)}</div>'
    shown = value_of(v, language) if isinstance(v, str) else v
    if isinstance(shown, str) and "\n" in shown:
        return f"<pre>{esc(shown)}</pre>"
    return f"<code>{esc(shown)}</code>"


def _partial(cx, slices):
    """True when the tables do not show the whole tensor (a window of it, or some slices only)."""
    if cx.get("offset") or cx.get("index"):
        return True
    shape = cx.get("shape") or []
    return len(shape) > 2 and _count(shape[:-2]) > len(slices)


WORDS = {"expected": "word.expected", "got": "word.got", "before": "word.before", "after": "word.after"}


def counterexample_html(cx, language, picture=True):
    """The call, its inputs, expected vs got side by side (wrong entries marked) and the picture."""
    if not cx:
        return ""
    out = ['<div class="counterexample">']
    out.append(f"<h3>{L('cx.title', language)}</h3>")
    if cx.get("call"):
        out.append(f"<p>{L('cx.call', language)}: <code>{esc(cx['call'])}</code></p>")
    inputs = cx.get("inputs") or {}
    if inputs:
        out.append('<table class="inputs">')
        for name, v in inputs.items():
            cell = _value_html(v, language)
            big = isinstance(v, dict) and v.get("values") is not None and _count(v.get("shape")) > 24
            if big:  # a weight matrix: folded, so that the wrong values stay in view
                cell = (
                    f"<details><summary>shape {esc(tuple(v['shape']))} · {esc(v.get('dtype', ''))} "
                    f"({L('cx.click', language)})</summary>{cell}</details>"
                )
            out.append(f'<tr><td class="name">{esc(label_of(name, language))}</td><td>{cell}</td></tr>')
        out.append("</table>")
    if cx.get("kind") == "shape" and (cx.get("expected_shape") or cx.get("got_shape")):
        want = tuple(cx.get("expected_shape") or cx.get("shape") or ())
        have = tuple(cx.get("got_shape") or cx.get("shape") or ())
        out.append(
            f"<p>{L('cx.expected_shape', language)}: <code>{esc(want)}</code> · "
            f"{L('cx.your_shape', language)}: <code>{esc(have)}</code></p>"
        )
    slices = cx_slices(cx)
    if slices:
        names = cx.get("labels") or ["expected", "got"]
        we = L(WORDS[names[0]], language) if names[0] in WORDS else esc(names[0])
        wg = L(WORDS[names[1]], language) if names[1] in WORDS else esc(names[1])
        what = esc(cx.get("what", ""))
        n = cx.get("n_differ")
        if n is not None:
            legend = L("cx.wrong_one", language) if n == 1 else L("cx.wrong_n", language, n=n)
            if _partial(cx, slices):
                legend += " · " + L("cx.partial", language)
            out.append(f'<p class="legend">{legend}</p>')
        mask = cx.get("kind") == "mask"
        for idx, e, g, d in slices:
            where = f"{what}[{esc(', '.join(map(str, idx)))}{', :, :' if idx else ''}]" if idx else what
            if cx.get("offset"):
                where += f' <span class="muted">({L("cx.from", language, at=tuple(cx["offset"]))})</span>'
            figs = []
            if e is not None:
                figs.append(
                    f'<figure class="expected"><figcaption>{we} {where}</figcaption>'
                    f"{array_table(e, d, mask, language=language)}</figure>"
                )
            figs.append(
                f'<figure class="got"><figcaption>{wg} {where}</figcaption>'
                f"{array_table(g, d, mask, language=language)}</figure>"
            )
            out.append(f'<div class="pair">{"".join(figs)}</div>')
    if picture:
        from .plots import data_uri
        from .plots import picture as draw

        png = draw(cx, language)
        if png:
            out.append(f'<img class="cx-picture" alt="{L("cx.picture", language)}" src="{data_uri(png)}">')
    if cx.get("note"):
        note = say("cx.too_large", language) if cx["note"] == "too large to show" else cx["note"]
        out.append(f'<p class="muted">{esc(note)}</p>')
    out.append("</div>")
    return "".join(out)


def diagnosis_html(diag, language, group=None, function=None):
    from .feedback import unexplained, where

    out = []
    for d in diag or []:
        out.append('<div class="diagnosis">')
        out.append(f'<div class="muted">{L("diagnosis.head", language)}</div>')
        where_zh, where_en = where(d, function if function is not None else (group or {}).get("function"))
        out.append(
            f'<div class="title">{text(language, d.get("title_zh", "") + where_zh, d.get("title_en", "") + where_en)}</div>'
        )
        if d.get("explanation_zh") or d.get("explanation_en"):
            out.append(f"<p>{text(language, d.get('explanation_zh', ''), d.get('explanation_en', ''))}</p>")
        if d.get("hint_zh") or d.get("hint_en"):
            out.append(
                f"<p><b>{L('diagnosis.fix', language)}:</b> "
                f"{text(language, d.get('hint_zh', ''), d.get('hint_en', ''))}</p>"
            )
        if group is not None:
            fn = d.get("function") or group["function"]
            others = sorted({t.get("function") for t in group["tests"]} - {fn})
            if others:
                out.append(f'<p class="muted">{L("report.in_function", language, fn=fn, tests=", ".join(others))}</p>')
        out.append("</div>")
    more = unexplained(diag)
    if more:
        out.append(f'<p class="unexplained muted">{text(language, *more)}</p>')
    return "".join(out)


def parts_html(parts, language):
    """Which part of a function differs, found by experiment (where no catalogued mistake is named)."""
    from .feedback import by_part

    return "".join(
        f'<p class="by-part muted"><b>{L("part.head", language)}:</b> {text(language, zh, en)}</p>'
        for zh, en in by_part(parts)
    )


def _score(x):
    return f"{x:g}" if isinstance(x, (int, float)) and math.isfinite(x) else "–"


def _shown_elsewhere(t):
    """Labels of the test's details that the counterexample already shows as tables."""
    cx = t.get("counterexample") or {}
    skip = set(cx.get("inputs") or {})
    if cx.get("call"):
        skip.add("调用 call")
    if cx_slices(cx):
        skip |= {
            lab
            for lab, _ in t.get("details") or []
            if lab.startswith(
                (
                    "期望 expected",
                    "实际 got",
                    "之前 before",
                    "之后 after",
                    "原来的 before",
                    "改变后的 after",
                    "不同的元素 differing entries",
                )
            )
        }
    return skip


def test_body(t, language, picture=True, diagnosis=True):
    """What went wrong in one test: the property, the message, (the named mistake), the
    counterexample, the hint, and what else the property said."""
    out = []
    if t.get("property_zh") or t.get("property_en"):
        out.append(
            f'<p class="muted">{L("test.must_hold", language)}: '
            f"{inline(language, t.get('property_zh', ''), t.get('property_en', ''))}</p>"
        )
    out.append(f'<p class="message">{text(language, t.get("message_zh", ""), t.get("message_en", ""), tag="b")}</p>')
    if diagnosis:
        out.append(diagnosis_html(t.get("diagnosis"), language, function=t.get("function")))
        out.append(parts_html(t.get("explained_by_part"), language))
    out.append(counterexample_html(t.get("counterexample") or {}, language, picture))
    hint = (t.get("hint_zh"), t.get("hint_en"))
    if any(hint):
        out.append(f'<div class="hint"><b>{L("test.hint", language)}:</b> {text(language, *hint)}</div>')
    skip = _shown_elsewhere(t)
    rest = [(lab, val) for lab, val in t.get("details") or [] if lab not in skip]
    if rest:
        lines = []
        for lab, val in rest:
            lab, val = label_of(lab, language), value_of(val, language)
            lines.append(f"{lab}:\n{val}" if "\n" in str(val) else f"{lab}: {val}")
        # open when there is no table to look at (a crash: the exception and where it was raised)
        is_open = " open" if "got" not in (t.get("counterexample") or {}) else ""
        out.append(
            f"<details{is_open}><summary>{L('test.more', language)}</summary>"
            f"<pre>{esc(chr(10).join(lines))}</pre></details>"
        )
    return "".join(out)


def _test_title(t, language):
    zh, en, cls = STATUS.get(t.get("status", "failed"), STATUS["failed"])
    return (
        f'<span class="badge {cls}">{label(language, zh, en)}</span> <code>{esc(t["name"])}</code> '
        f'<span class="muted">{_score(t.get("score"))} / {_score(t.get("max_score"))}</span>'
    )


def test_card(t, language, picture=True, diagnosis=True):
    """One failed test, open."""
    return (
        f'<section class="card failed" id="t-{esc(t["name"])}" data-test="{esc(t["name"])}">'
        f"<h3>{_test_title(t, language)}</h3>{test_body(t, language, picture, diagnosis)}</section>"
    )


def test_folded(t, language, picture=True, first=None):
    """One failed test, folded: its title and message in the summary (the message only when it is
    not the same as the open test's `first`), the rest inside."""
    msg = pick(language, (t.get("message_zh") or "").split("\n")[0], (t.get("message_en") or "").split("\n")[0])
    same = first is not None and (t.get("message_en"), t.get("message_zh")) == (
        first.get("message_en"),
        first.get("message_zh"),
    )
    summary = "" if same or not msg else f" — {esc(msg)}"
    return (
        f'<details class="test" id="t-{esc(t["name"])}" data-test="{esc(t["name"])}"><summary>'
        f"{_test_title(t, language)}{summary}</summary>{test_body(t, language, picture, diagnosis=False)}"
        f"</details>"
    )


def _not_graded_html(reason, language, card_id="not-graded"):
    key = advice_key(reason)
    ident = f' id="{card_id}"' if card_id else ""
    body = [
        f'<section class="card not-graded"{ident}>',
        f"<p><b>{text(language, *pair('report.not_graded_why'))}</b></p>",
        f"<pre>{esc(reason)}</pre>",
    ]
    if key != "why.other":
        body.append(f"<p>{text(language, *pair(key))}</p>")
    body.append(f'<p class="muted">{text(language, *pair("report.not_graded_next"))}</p></section>')
    return "".join(body)


def _fix_list(groups, language):
    out = [f'<h2 id="to-fix">{L("report.to_fix", language)} ({len(groups)})</h2><ol class="fix-list">']
    for g in groups:
        lost = L("report.lost", language, points=f"{g['lost']:g}")
        n = len(g["tests"])
        more = f" · {L('report.n_tests', language, n=n)}" if n > 1 else ""
        if g.get("not_graded"):
            lost, more = L("report.not_graded", language), ""
        out.append(
            f'<li class="fix" data-function="{esc(g["function"])}">'
            f'<a class="fn" href="#{g["anchor"]}"><code>{esc(g["function"])}</code></a> '
            f'<span class="cost">({esc(g["exercise"])} · {lost}{more})</span> — '
            f"{inline(language, *fix_headline(g))} "
            f'<a class="more" href="#{g["anchor"]}">{L("report.details_link", language)} →</a></li>'
        )
    out.append("</ol>")
    return "".join(out)


def _scores(r, language):
    rows = [
        f'<table class="scores" id="scores"><tr><th>{L("report.exercise", language)}</th>'
        f'<th>{L("report.status", language)}</th><th class="num">{L("report.points", language)}</th><th></th></tr>'
    ]
    for ex in r.get("exercises", []):
        tests = ex.get("tests", [])
        n_pass = sum(1 for t in tests if t.get("passed"))
        if exercise_not_graded_reason(ex) is not None:
            rows.append(
                f'<tr class="exercise not-graded" data-exercise="{esc(ex["id"])}"><td>{esc(ex["id"])}</td>'
                f"<td>{L('report.not_graded', language)}</td>"
                f'<td class="num">– / {_score(ex.get("max_score"))}</td><td></td></tr>'
            )
            continue
        lv = level(ex.get("score"), ex.get("max_score"))
        width = 100 * (ex.get("score") or 0) / ex["max_score"] if ex.get("max_score") else 0
        rows.append(
            f'<tr class="exercise" data-exercise="{esc(ex["id"])}"><td>{esc(ex["id"])}</td>'
            f"<td>{L('report.passed_of', language, p=n_pass, n=len(tests))}</td>"
            f'<td class="num">{_score(ex.get("score"))} / {_score(ex.get("max_score"))}</td>'
            f'<td><span class="bar"><span class="level-{lv}" style="width:{width:.0f}%"></span></span></td></tr>'
        )
    rows.append("</table>")
    every = [
        f'<details class="every-test"><summary>{L("report.every_test", language)}</summary>'
        f'<table class="scores"><tr><th>{L("report.exercise_test", language)}</th>'
        f'<th>{L("report.status", language)}</th><th class="num">{L("report.points", language)}</th></tr>'
    ]
    for ex in r.get("exercises", []):
        for t in ex.get("tests", []):
            zh, en, cls = STATUS.get(t.get("status", "failed"), STATUS["failed"])
            link = f'<a href="#t-{esc(t["name"])}">{esc(t["name"])}</a>' if not t.get("passed") else esc(t["name"])
            every.append(
                f'<tr data-test-row="{esc(t["name"])}"><td>{link}</td>'
                f'<td><span class="badge {cls}">{label(language, zh, en)}</span></td>'
                f'<td class="num">{_score(t.get("score"))} / {_score(t.get("max_score"))}</td></tr>'
            )
    every.append("</table></details>")
    return "".join(rows) + "".join(every)


def _group_html(g, language, picture):
    if g.get("not_graded"):
        return (
            f'<section class="function" id="{g["anchor"]}" data-exercise="{esc(g["exercise"])}">'
            f'<h3><code>{esc(g["exercise"])}</code> <span class="muted">{L("report.not_graded", language)}</span></h3>'
            f"{_not_graded_html(g['not_graded'], language, card_id='')}</section>"
        )
    n, lost = len(g["tests"]), f"{g['lost']:g}"
    out = [
        f'<section class="function" id="{g["anchor"]}" data-function="{esc(g["function"])}">',
        f'<h3><code>{esc(g["function"])}</code> <span class="muted">{esc(g["exercise"])} · '
        f"{L('report.lost', language, points=lost)} · {L('report.n_tests', language, n=n)}</span></h3>",
    ]
    out.append(diagnosis_html(g["diagnoses"], language, group=g))
    out.append(parts_html(g.get("parts"), language))
    first, rest = g["tests"][0], g["tests"][1:]
    out.append(test_card(first, language, picture, diagnosis=False))
    # the folded tests keep their tables but draw no picture: the open test shows what the mistake
    # looks like, and a class's pages are drawn in one batch (a picture costs about half a second)
    out += [test_folded(t, language, False, first) for t in rest]
    out.append("</section>")
    return "".join(out)


def render_html(report, language="both", picture=True):
    """The whole page for one student."""
    r = as_dict(report)
    lang_attr = {"zh": "zh", "en": "en"}.get(language, "zh")
    title = say("report.title", language, sep=" ")
    who = student_of(r)
    sub = Path(str(r.get("submission", ""))).name
    reason = not_graded_reason(r)
    body = (
        [f'<p class="warning" role="alert"><strong>{esc(r["sandbox_warning"])}</strong></p>']
        if r.get("sandbox_warning")
        else []
    )
    body += [
        f"<h1>{esc(title)}: {esc(who)}</h1>",
        f'<div class="muted">{L("report.submission", language)}: <code>{esc(sub)}</code></div>',
    ]
    if reason is not None:
        body.append(
            f'<div class="head"><div class="total level-none" id="total">{L("report.not_graded", language)}</div></div>'
        )
        body.append(_not_graded_html(reason, language))
        return _page(lang_attr, title, who, body)
    lv = level(r.get("score"), r.get("max_score"))
    groups = fixes(r)
    body.append(
        f'<div class="head"><div class="total level-{lv}" id="total">{_score(r.get("score"))} / '
        f"{_score(r.get('max_score'))}</div>"
        + ("" if groups else f'<div class="all-passed">{L("report.all_passed", language)}</div>')
        + "</div>"
    )
    if groups:
        body.append(_fix_list(groups, language))
    body.append(f"<h2>{L('report.scores', language)}</h2>")
    body.append(_scores(r, language))
    if r.get("errors"):
        body.append(
            f"<h2>{L('report.load_problems', language)}</h2><ul class='errors'>"
            + "".join(f"<li><code>{esc(e)}</code></li>" for e in r["errors"])
            + "</ul>"
        )
    if groups:
        body.append(f'<h2 id="details">{L("report.details", language)}</h2>')
        body += [_group_html(g, language, picture) for g in groups]
    return _page(lang_attr, title, who, body)


def _page(lang_attr, title, who, body):
    return (
        f'<!DOCTYPE html>\n<html lang="{lang_attr}"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}: {esc(who)}</title><style>{CSS}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )
