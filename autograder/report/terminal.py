"""Terminal report with rich (`grade --rich`), in the order of the HTML page: the score (coloured),
what to fix (one line per function), the score per exercise, then function by function: each named
mistake once, the first failed test in full (the counterexample as small tables, wrong entries in
red and marked ✗, the hint), the function's other failed tests one line each.

    render_rich(report, language="both", console=None)   prints it
    render_rich_text(report, language="both", width=100) -> str   the same, as plain text (tests)
"""

import io

from .feedback import by_part, unexplained
from .feedback import where as located
from .messages import label as label_of
from .messages import pick, say
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
from .model import cell_text as _v

COLOUR = {"good": "green", "fair": "yellow", "poor": "red", "none": "bright_black"}
STATUS = {s.value: (*s.words(), "green" if s == Status.PASSED else "red") for s in Status}


def _array(rows, differs, title):
    """A small table under its caption; the caption is never cut (its width counted in cells: a
    Chinese character takes two)."""
    from rich.cells import cell_len
    from rich.table import Table

    if not rows or not isinstance(rows[0], list):
        rows, differs = [rows], ([differs] if differs is not None else None)
    n = max(len(r) for r in rows)
    t = Table(
        title=title,
        show_header=True,
        header_style="dim",
        box=None,
        pad_edge=False,
        title_justify="left",
        min_width=cell_len(title) + 1,
    )
    t.add_column("", style="dim")
    for j in range(n):
        t.add_column(str(j), justify="right")
    for i, row in enumerate(rows):
        cells = []
        for j, v in enumerate(row):
            bad = differs is not None and differs[i][j]
            cells.append(f"[bold red]✗{_v(v)}[/]" if bad else _v(v))
        t.add_row(str(i), *cells)
    return t


def _test_parts(t, language):
    from rich.columns import Columns
    from rich.text import Text

    L = lambda key, **kw: say(key, language, sep=" ", **kw)  # noqa: E731
    parts = []
    msg = pick(language, t.get("message_zh", ""), t.get("message_en", ""), sep="\n")
    if msg:
        parts.append(Text(msg, style="bold"))
    cx = t.get("counterexample") or {}
    if cx.get("call"):
        parts.append(Text(L("cx.call") + ": " + cx["call"], style="cyan"))
    for name, v in (cx.get("inputs") or {}).items():
        name = label_of(name, language)
        if isinstance(v, dict) and "shape" in v:
            vals = v.get("values")
            if vals is not None and 0 < len(v["shape"]) <= 2 and len(str(vals)) < 400:
                parts.append(_array(vals, None, f"{name} {tuple(v['shape'])}"))
            else:
                parts.append(
                    Text(
                        f"{name}: shape {tuple(v['shape'])} {v.get('dtype', '')}"
                        + (f" = {vals}" if len(v["shape"]) == 0 else "")
                    )
                )
        else:
            parts.append(Text(f"{name}: {value_of(v, language) if isinstance(v, str) else v}"))
    names = cx.get("labels") or ["expected", "got"]
    words = {"expected": L("word.expected"), "got": L("word.got"), "before": L("word.before"), "after": L("word.after")}
    for idx, e, g, d in cx_slices(cx, limit=2):
        where = cx.get("what", "") + (f"[{', '.join(map(str, idx))}]" if idx else "")
        tables = []
        if e is not None:
            tables.append(_array(e, d, f"{words.get(names[0], names[0])} {where}"))
        tables.append(_array(g, d, f"{words.get(names[1], names[1])} {where}"))
        parts.append(Columns(tables, padding=(0, 4)))
    hint = pick(language, t.get("hint_zh", ""), t.get("hint_en", ""), sep="\n")
    if hint:
        parts.append(Text(L("test.hint") + ": " + hint, style="blue"))
    return parts


def _renderables(r, language):
    from rich.console import Group
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    L = lambda key, **kw: say(key, language, sep=" ", **kw)  # noqa: E731
    out = []
    who = student_of(r)
    reason = not_graded_reason(r)
    if reason is not None:
        out.append(
            Text.from_markup(
                f"[bold]{escape(L('report.title'))}[/]: {escape(who)}   "
                f"[bold bright_black]{escape(L('report.not_graded'))}[/]"
            )
        )
        body = [say("report.not_graded_why", language, sep="\n"), "  " + reason]
        if advice_key(reason) != "why.other":
            body += ["", say(advice_key(reason), language, sep="\n")]
        body += ["", say("report.not_graded_next", language, sep="\n")]
        out.append(Panel(Text("\n".join(body)), border_style="bright_black"))
        return out
    colour = COLOUR[level(r.get("score"), r.get("max_score"))]
    out.append(
        Text.from_markup(
            f"[bold]{escape(L('report.title'))}[/]: {escape(who)}   "
            f"[bold {colour}]{r.get('score', 0):g} / {r.get('max_score', 0):g}[/]"
        )
    )
    groups = fixes(r)
    if groups:
        out.append(Text(f"{L('report.to_fix')} ({len(groups)}):", style="bold"))
        for i, g in enumerate(groups, 1):
            lost = L("report.not_graded") if g.get("not_graded") else L("report.lost", points=f"{g['lost']:g}")
            out.append(
                Text.from_markup(
                    f"  {i}. [bold]{escape(g['function'])}[/] [red]({escape(g['exercise'])}, {escape(lost)})[/]"
                    f": {escape(pick(language, *fix_headline(g)))}"
                )
            )
    else:
        out.append(Text(L("report.all_passed"), style="bold green"))
    table = Table(show_header=True, header_style="bold")
    table.add_column(L("report.exercise"))
    table.add_column(L("report.points"), justify="right")
    table.add_column(L("report.status"), justify="right")
    for ex in r.get("exercises", []):
        tests = ex.get("tests", [])
        n_pass = sum(1 for t in tests if t.get("passed"))
        if exercise_not_graded_reason(ex) is not None:
            table.add_row(
                escape(ex["id"]), f"– / {ex['max_score']:g}", f"[bright_black]{escape(L('report.not_graded'))}[/]"
            )
            continue
        c = COLOUR[level(ex.get("score"), ex.get("max_score"))]
        table.add_row(escape(ex["id"]), f"[{c}]{ex['score']:g} / {ex['max_score']:g}[/]", f"{n_pass}/{len(tests)}")
    out.append(table)
    for e in r.get("errors") or []:
        out.append(Text.from_markup(f"[yellow]! {escape(str(e))}[/]"))
    for g in groups:
        if g.get("not_graded"):
            body = [g["not_graded"]]
            if advice_key(g["not_graded"]) != "why.other":
                body += [say(advice_key(g["not_graded"]), language, sep="\n")]
            out.append(
                Panel(
                    Text("\n".join(body)),
                    border_style="bright_black",
                    title_align="left",
                    title=escape(f"{g['exercise']}: {L('report.not_graded')}"),
                )
            )
            continue
        out.append(Text.from_markup(f"\n[bold]== {escape(g['function'])}[/] ({escape(g['exercise'])})"))
        for d in g["diagnoses"]:
            body = "\n".join(
                s
                for s in (
                    pick(language, d.get("explanation_zh", ""), d.get("explanation_en", ""), sep="\n"),
                    L("diagnosis.fix") + ": " + pick(language, d.get("hint_zh", ""), d.get("hint_en", ""), sep="\n"),
                )
                if s
            )
            w_zh, w_en = located(d, g["function"])
            out.append(
                Panel(
                    Text(body),
                    title=escape(
                        L("diagnosis.short")
                        + ": "
                        + pick(language, d.get("title_zh", "") + w_zh, d.get("title_en", "") + w_en)
                    ),
                    border_style="yellow",
                    title_align="left",
                )
            )
        more = unexplained(g["diagnoses"])
        if more:
            out.append(Text(pick(language, *more, sep="\n"), style="yellow"))
        for zh, en in by_part(g.get("parts")):
            out.append(Text(L("part.head") + ": " + pick(language, zh, en, sep="\n"), style="yellow"))
        first, rest = g["tests"][0], g["tests"][1:]
        zh, en, colour = STATUS.get(first.get("status"), STATUS["failed"])
        out.append(
            Panel(
                Group(*_test_parts(first, language)),
                border_style=colour,
                title_align="left",
                title=f"[{colour}]✗ {escape(pick(language, zh, en))}[/] {escape(first['name'])} "
                f"({first['score']:g}/{first['max_score']:g})",
            )
        )
        for t in rest:  # one line each; the message only when it is not the one above
            zh, en, colour = STATUS.get(t.get("status"), STATUS["failed"])
            msg = pick(language, (t.get("message_zh") or "").split("\n")[0], (t.get("message_en") or "").split("\n")[0])
            if (t.get("message_zh"), t.get("message_en")) == (first.get("message_zh"), first.get("message_en")):
                msg = ""
            out.append(
                Text.from_markup(
                    f"  [{colour}]✗[/] {escape(t['name'])} ({t['score']:g}/{t['max_score']:g})"
                    + (f": {escape(msg)}" if msg else "")
                )
            )
    return out


def render_rich(report, language="both", console=None):
    """Print the report (a Report or a JSON report's dict) in `language` on `console` (default: a
    new rich Console)."""
    from rich.console import Console

    console = console or Console()
    for item in _renderables(as_dict(report), language):
        console.print(item)


def render_rich_text(report, language="both", width=100):
    """What `render_rich` prints, as plain text without colours, `width` columns wide."""
    from rich.console import Console

    buf = io.StringIO()
    render_rich(report, language, Console(file=buf, width=width, color_system=None, force_terminal=False))
    return buf.getvalue()
