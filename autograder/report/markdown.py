"""Per-student Markdown report (for an LMS comment box, a GitHub issue, a README).

    render_markdown(report, language="both", images=None) -> str

The same order as the HTML page (report/html.py): the score, what to fix (one line per function,
linked to its details), the score per exercise, then the details function by function: each named
mistake once, the first failed test in full (the call and its inputs, expected and the student's
values as tables, wrong entries in bold and marked ✗, the hint), the function's other failed tests
folded in <details>.  `images`, a folder, makes the pictures too (PNG files written there and
linked by a path relative to the folder's parent, where the Markdown file is expected to live);
without it there are no pictures.  A submission that was not graded says so, and why.
"""

from pathlib import Path

from .feedback import by_part, unexplained
from .feedback import where as located
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
    not_graded_reason,
    student_of,
)
from .model import cell_text as _v

STATUS = {s.value: s.words() for s in Status}


def _md(x):
    """Text in a table cell or inline: pipes escaped, one line."""
    return str(x).replace("|", "\\|").replace("\n", " ")


def md_table(rows, differs=None):
    """A Markdown table of `rows` (a list of rows, or one row), rows and columns numbered; the cells
    `differs` marks in bold with ✗."""
    if not rows or not isinstance(rows[0], list):
        rows, differs = [rows], ([differs] if differs is not None else None)
    n = max(len(r) for r in rows)
    out = ["|   | " + " | ".join(str(j) for j in range(n)) + " |", "|---|" + "---:|" * n]
    for i, row in enumerate(rows):
        cells = []
        for j, v in enumerate(row):
            bad = differs is not None and differs[i][j]
            cells.append(f"**✗ {_v(v)}**" if bad else _v(v))
        out.append(f"| {i} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _input(v, language):
    if isinstance(v, dict) and "shape" in v:
        head = f"shape {tuple(v['shape'])}, {v.get('dtype', '')}"
        vals = v.get("values")
        if vals is None or len(v["shape"]) > 2 or len(v["shape"]) == 0:
            return f"`{vals}` ({head})" if len(v["shape"]) == 0 else head
        return head + "\n\n" + md_table(vals)
    return f"`{_md(value_of(v, language, sep=' / ') if isinstance(v, str) else v)}`"


def _blocks(language, zh, en, fmt="{}"):
    """Chinese then English, each its own line (both), or the course's language."""
    if language == "both" and zh and en and zh != en:
        return [fmt.format(zh) + "  ", fmt.format(en)]
    text = pick(language, zh, en)
    return [fmt.format(text)] if text else []


def _test(t, language, images, counter):
    """The body of one failed test: property, message, call, inputs, tables, picture, hint."""
    L = lambda key, **kw: say(key, language, sep=" ", **kw)  # noqa: E731
    out = []
    if t.get("property_zh") or t.get("property_en"):
        out += [f"*{L('test.must_hold')}: {pick(language, t.get('property_zh', ''), t.get('property_en', ''))}*", ""]
    out += _blocks(language, t.get("message_zh", ""), t.get("message_en", ""), "**{}**") + [""]
    cx = t.get("counterexample") or {}
    if cx.get("call"):
        out += [f"{L('cx.call')}: `{cx['call']}`", ""]
    for name, v in (cx.get("inputs") or {}).items():
        out += [f"- `{_md(label_of(name, language))}`: {_input(v, language)}", ""]
    words = {"expected": L("word.expected"), "got": L("word.got"), "before": L("word.before"), "after": L("word.after")}
    names = cx.get("labels") or ["expected", "got"]
    for idx, e, g, d in cx_slices(cx):
        where = cx.get("what", "") + (f"[{', '.join(map(str, idx))}, :, :]" if idx else "")
        if e is not None:
            out += [f"{words.get(names[0], names[0])} `{where}`:", "", md_table(e, d), ""]
        out += [
            f"{words.get(names[1], names[1])} `{where}`" + (f" ({L('cx.wrong_mark')})" if d else "") + ":",
            "",
            md_table(g, d),
            "",
        ]
    if images is not None and cx:
        from .plots import picture

        png = picture(cx, language)
        if png:
            folder = Path(images)
            folder.mkdir(parents=True, exist_ok=True)
            counter[0] += 1
            name = f"{t['name'].replace('/', '__')}.png"
            (folder / name).write_bytes(png)
            out += [f"![{L('cx.picture')}]({folder.name}/{name})", ""]
    hint = pick(language, t.get("hint_zh", ""), t.get("hint_en", ""))
    if hint:
        out += [f"**{L('test.hint')}**: {hint}", ""]
    return out


def render_markdown(report, language="both", images=None):
    """The report as Markdown in `language`: score, what to fix, scores per exercise, then each
    failing function's diagnoses and tests; with `images` (a folder), the counterexamples' pictures
    written there as PNG and linked."""
    r = as_dict(report)
    L = lambda key, **kw: say(key, language, sep=" ", **kw)  # noqa: E731
    who = student_of(r)
    out = [f"**{r['sandbox_warning']}**", ""] if r.get("sandbox_warning") else []
    out += [f"# {L('report.title')}: {who}", ""]
    reason = not_graded_reason(r)
    if reason is not None:
        out += [f"**{L('report.score')}: {L('report.not_graded')}**", ""]
        out += _blocks(language, *pair("report.not_graded_why"), "> {}") + ["", f"    {reason}", ""]
        if advice_key(reason) != "why.other":
            out += _blocks(language, *pair(advice_key(reason))) + [""]
        out += _blocks(language, *pair("report.not_graded_next"), "_{}_") + [""]
        return "\n".join(out)
    out += [f"**{L('report.score')}: {r.get('score', 0):g} / {r.get('max_score', 0):g}**", ""]
    groups = fixes(r)
    if groups:
        out += [f"## {L('report.to_fix')} ({len(groups)})", ""]
        for i, g in enumerate(groups, 1):
            lost = L("report.not_graded") if g.get("not_graded") else L("report.lost", points=f"{g['lost']:g}")
            out.append(
                f"{i}. [`{g['function']}`](#{g['anchor']}) ({g['exercise']}, {lost}): "
                f"{pick(language, *fix_headline(g))}"
            )
        out.append("")
    else:
        out += [f"**{L('report.all_passed')}**", ""]
    out += [
        f"## {L('report.scores')}",
        "",
        f"| {L('report.exercise')} | {L('report.status')} | {L('report.points')} |",
        "|---|---|---:|",
    ]
    for ex in r.get("exercises", []):
        tests = ex.get("tests", [])
        n_pass = sum(1 for t in tests if t.get("passed"))
        if exercise_not_graded_reason(ex) is not None:
            out.append(f"| {ex['id']} | {L('report.not_graded')} | – / {ex['max_score']:g} |")
            continue
        out.append(
            f"| {ex['id']} | {L('report.passed_of', p=n_pass, n=len(tests))} | {ex['score']:g} / {ex['max_score']:g} |"
        )
    out.append("")
    if r.get("errors"):
        out += [f"## {L('report.load_problems')}", ""]
        out += [f"- `{_md(e)}`" for e in r["errors"]] + [""]
    counter = [0]
    if groups:
        out += [f"## {L('report.details')}", ""]
    for g in groups:
        if g.get("not_graded"):
            out += [
                f'<a id="{g["anchor"]}"></a>',
                "",
                f"### `{g['exercise']}`: {L('report.not_graded')}",
                "",
                f"    {g['not_graded']}",
                "",
            ]
            if advice_key(g["not_graded"]) != "why.other":
                out += _blocks(language, *pair(advice_key(g["not_graded"]))) + [""]
            continue
        lost = L("report.lost", points=f"{g['lost']:g}")
        out += [f'<a id="{g["anchor"]}"></a>', "", f"### `{g['function']}` ({g['exercise']}, {lost})", ""]
        for d in g["diagnoses"]:
            w_zh, w_en = located(d, g["function"])
            out += [
                f"> **{L('diagnosis.short')}: {pick(language, d.get('title_zh', '') + w_zh, d.get('title_en', '') + w_en)}**",
                ">",
            ]
            out += [f"> {line}" for line in _blocks(language, d.get("explanation_zh", ""), d.get("explanation_en", ""))]
            out += [">", f"> {L('diagnosis.fix')}: {pick(language, d.get('hint_zh', ''), d.get('hint_en', ''))}", ""]
        more = unexplained(g["diagnoses"])
        if more:
            out += [f"> {pick(language, *more)}", ""]
        for zh, en in by_part(g.get("parts")):
            out += [f"> **{L('part.head')}**: {pick(language, zh, en)}", ""]
        first, rest = g["tests"][0], g["tests"][1:]
        out += [f"#### ✗ `{first['name']}` ({first['score']:g} / {first['max_score']:g})", ""]
        out += _test(first, language, images, counter)
        for t in rest:
            zh, en = STATUS.get(t.get("status"), STATUS["failed"])
            out += [
                "<details>",
                f"<summary>✗ {t['name']} ({t['score']:g} / {t['max_score']:g}, {pick(language, zh, en)})</summary>",
                "",
            ]
            out += _test(t, language, images, counter)
            out += ["</details>", ""]
    return "\n".join(out)
