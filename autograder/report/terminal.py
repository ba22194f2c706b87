"""Terminal report with rich: a score table, then a panel per failed test with the named mistake,
the counterexample as small tables (wrong entries in red, marked ✗) and the hint.

    render_rich(report, language="both", console=None)   prints it (`grade --rich`)
    render_rich_text(report, language="both", width=100) -> str   the same, as plain text (tests)
"""
import io

from .model import as_dict, cell_text as _v, cx_slices, pick
from .feedback import unexplained, where as located

STATUS = {"passed": ("通过", "passed", "green"), "failed": ("未通过", "failed", "red"),
          "missing": ("缺失", "missing", "red"), "error": ("出错", "error", "red"),
          "timeout": ("超时", "time-out", "red")}




def _array(rows, differs, title):
    from rich.table import Table

    if not rows or not isinstance(rows[0], list):
        rows, differs = [rows], ([differs] if differs is not None else None)
    n = max(len(r) for r in rows)
    t = Table(title=title, show_header=True, header_style="dim", box=None, pad_edge=False, title_justify="left",
              min_width=len(title) + 1)
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


def _renderables(r, language):
    from rich.columns import Columns
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    L = lambda zh, en: pick(language, zh, en)  # noqa: E731
    out = []
    who = (r.get("batch") or {}).get("student") or r.get("submission", "")
    out.append(Text.from_markup(f"[bold]{escape(L('成绩报告', 'Grade report'))}[/]: {escape(str(who))}   "
                                f"[bold]{r.get('score', 0):g} / {r.get('max_score', 0):g}[/]"))
    table = Table(show_header=True, header_style="bold")
    table.add_column(L("练习", "Exercise"))
    table.add_column(L("得分", "Score"), justify="right")
    table.add_column(L("通过", "Passed"), justify="right")
    for ex in r.get("exercises", []):
        tests = ex.get("tests", [])
        n_pass = sum(1 for t in tests if t.get("passed"))
        color = "green" if n_pass == len(tests) else "red"
        table.add_row(escape(ex["id"]), f"{ex['score']:g} / {ex['max_score']:g}", f"[{color}]{n_pass}/{len(tests)}[/]")
    out.append(table)
    for e in r.get("errors") or []:
        out.append(Text.from_markup(f"[yellow]! {escape(str(e))}[/]"))
    for ex in r.get("exercises", []):
        for t in ex.get("tests", []):
            if t.get("passed"):
                continue
            zh, en, color = STATUS.get(t.get("status"), STATUS["failed"])
            parts = []
            msg = pick(language, t.get("message_zh", ""), t.get("message_en", ""), sep="\n")
            if msg:
                parts.append(Text(msg, style="bold"))
            for d in t.get("diagnosis") or []:
                body = "\n".join(s for s in (
                    pick(language, d.get("explanation_zh", ""), d.get("explanation_en", ""), sep="\n"),
                    L("怎么改", "How to fix it") + ": " + pick(language, d.get("hint_zh", ""), d.get("hint_en", ""), sep="\n"))
                    if s)
                w_zh, w_en = located(d, t.get("function"))
                parts.append(Panel(Text(body), title=escape(L("诊断", "Diagnosis") + ": "
                                                            + pick(language, d.get("title_zh", "") + w_zh,
                                                                   d.get("title_en", "") + w_en)),
                                   border_style="yellow", title_align="left"))
            more = unexplained(t.get("diagnosis"))
            if more:
                parts.append(Text(pick(language, *more, sep="\n"), style="yellow"))
            cx = t.get("counterexample") or {}
            if cx.get("call"):
                parts.append(Text(L("调用", "Call") + ": " + cx["call"], style="cyan"))
            for name, v in (cx.get("inputs") or {}).items():
                if isinstance(v, dict) and "shape" in v:
                    vals = v.get("values")
                    if vals is not None and 0 < len(v["shape"]) <= 2 and len(str(vals)) < 400:
                        parts.append(_array(vals, None, f"{name} {tuple(v['shape'])}"))
                    else:
                        parts.append(Text(f"{name}: shape {tuple(v['shape'])} {v.get('dtype', '')}"
                                          + (f" = {vals}" if len(v["shape"]) == 0 else "")))
                else:
                    parts.append(Text(f"{name}: {v}"))
            names = cx.get("labels") or ["expected", "got"]
            words = {"expected": L("期望", "expected"), "got": L("你的结果", "yours"),
                     "before": L("之前", "before"), "after": L("之后", "after")}
            for idx, e, g, d in cx_slices(cx, limit=2):
                where = cx.get("what", "") + (f"[{', '.join(map(str, idx))}]" if idx else "")
                tables = []
                if e is not None:
                    tables.append(_array(e, d, f"{words.get(names[0], names[0])} {where}"))
                tables.append(_array(g, d, f"{words.get(names[1], names[1])} {where}"))
                parts.append(Columns(tables, padding=(0, 4)))
            hint = pick(language, t.get("hint_zh", ""), t.get("hint_en", ""), sep="\n")
            if hint:
                parts.append(Text(L("提示", "Hint") + ": " + hint, style="blue"))
            from rich.console import Group
            out.append(Panel(Group(*parts), border_style=color, title_align="left",
                             title=f"[{color}]✗ {escape(L(zh, en))}[/] {escape(t['name'])} "
                                   f"({t['score']:g}/{t['max_score']:g})"))
    if r.get("sandbox"):
        out.append(Text(f"({r['sandbox']})", style="dim"))
    return out


def render_rich(report, language="both", console=None):
    from rich.console import Console

    console = console or Console()
    for item in _renderables(as_dict(report), language):
        console.print(item)


def render_rich_text(report, language="both", width=100):
    from rich.console import Console

    buf = io.StringIO()
    render_rich(report, language, Console(file=buf, width=width, color_system=None, force_terminal=False))
    return buf.getvalue()
