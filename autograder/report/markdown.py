"""Per-student Markdown report (for an LMS comment box, a GitHub issue, a README).

    render_markdown(report, language="both", images=None) -> str

Same content as the HTML page (report/html.py) in Markdown: the total, a score table, then each
failed test with the named mistake, the call and its inputs, expected and the student's values as
tables (wrong entries in bold, marked ✗) and the hint.  `images`, a folder, makes the pictures
too (PNG files written there and linked by a path relative to the folder's parent, where the
Markdown file is expected to live); without it there are no pictures.
"""
from pathlib import Path

from .model import as_dict, cell_text as _v, cx_slices, pick
from .feedback import unexplained, where as located

STATUS = {"passed": ("通过", "passed"), "failed": ("未通过", "failed"), "missing": ("缺失", "missing"),
          "error": ("出错", "error"), "timeout": ("超时", "time-out")}


def _md(x):
    """Text in a table cell or inline: pipes escaped, one line."""
    return str(x).replace("|", "\\|").replace("\n", " ")




def md_table(rows, differs=None):
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


def _input(v):
    if isinstance(v, dict) and "shape" in v:
        head = f"shape {tuple(v['shape'])}, {v.get('dtype', '')}"
        vals = v.get("values")
        if vals is None or len(v["shape"]) > 2 or len(v["shape"]) == 0:
            return f"`{vals}` ({head})" if len(v["shape"]) == 0 else head
        return head + "\n\n" + md_table(vals)
    return f"`{_md(v)}`"


def render_markdown(report, language="both", images=None):
    r = as_dict(report)
    L = lambda zh, en: pick(language, zh, en)  # noqa: E731
    who = (r.get("batch") or {}).get("student") or r.get("submission", "")
    out = [f"# {L('成绩报告', 'Grade report')}: {who}", "",
           f"**{L('总分', 'Score')}: {r.get('score', 0):g} / {r.get('max_score', 0):g}**", ""]
    status = (r.get("batch") or {}).get("status", "graded")
    if status != "graded":
        out += [f"> {L('无法评分', 'Could not be graded')}: {status}", ""]
    if r.get("errors"):
        out += [f"## {L('加载提交时的问题', 'Problems while loading the submission')}", ""]
        out += [f"- `{_md(e)}`" for e in r["errors"]] + [""]
    out += [f"## {L('各练习得分', 'Scores per exercise')}", "",
            f"| {L('练习 / 测试', 'Exercise / test')} | {L('状态', 'Status')} | {L('得分', 'Score')} |", "|---|---|---:|"]
    for ex in r.get("exercises", []):
        tests = ex.get("tests", [])
        n_pass = sum(1 for t in tests if t.get("passed"))
        out.append(f"| **{ex['id']}** | {n_pass}/{len(tests)} {L('通过', 'passed')} | **{ex['score']:g} / {ex['max_score']:g}** |")
        for t in tests:
            mark = "✓" if t.get("passed") else "✗"
            out.append(f"| &nbsp;&nbsp;{_md(t['name'].split('/', 1)[-1])} | {mark} {L(*STATUS.get(t.get('status'), STATUS['failed']))} "
                       f"| {t['score']:g} / {t['max_score']:g} |")
    out.append("")
    n_img = 0
    for ex in r.get("exercises", []):
        for t in ex.get("tests", []):
            if t.get("passed"):
                continue
            out += [f"## ✗ `{t['name']}` ({t['score']:g} / {t['max_score']:g})", ""]
            if t.get("property_zh") or t.get("property_en"):
                out += [f"*{L('要求', 'Must hold')}: {L(t.get('property_zh', ''), t.get('property_en', ''))}*", ""]
            for zh, en in [(t.get("message_zh", ""), t.get("message_en", ""))]:
                if language in ("zh", "both") and zh:
                    out.append(f"**{zh}**  ")
                if language in ("en", "both") and en:
                    out.append(f"**{en}**")
            out.append("")
            for d in t.get("diagnosis") or []:
                w_zh, w_en = located(d, t.get("function"))
                out += [f"> **{L('诊断', 'Diagnosis')}: {L(d.get('title_zh', '') + w_zh, d.get('title_en', '') + w_en)}**",
                        ">", f"> {L(d.get('explanation_zh', ''), d.get('explanation_en', ''))}", ">",
                        f"> {L('怎么改', 'How to fix it')}: {L(d.get('hint_zh', ''), d.get('hint_en', ''))}", ""]
            more = unexplained(t.get("diagnosis"))
            if more:
                out += [f"> {L(*more)}", ""]
            cx = t.get("counterexample") or {}
            if cx.get("call"):
                out += [f"{L('调用', 'Call')}: `{cx['call']}`", ""]
            for name, v in (cx.get("inputs") or {}).items():
                out += [f"- `{_md(name)}`: {_input(v)}", ""]
            words = {"expected": L("期望", "expected"), "got": L("你的结果", "yours"),
                     "before": L("之前", "before"), "after": L("之后", "after")}
            names = cx.get("labels") or ["expected", "got"]
            for idx, e, g, d in cx_slices(cx):
                where = cx.get("what", "") + (f"[{', '.join(map(str, idx))}, :, :]" if idx else "")
                if e is not None:
                    out += [f"{words.get(names[0], names[0])} `{where}`:", "", md_table(e, d), ""]
                out += [f"{words.get(names[1], names[1])} `{where}`" + (f" ({L('✗ = 不对', '✗ = wrong')})" if d else "") + ":",
                        "", md_table(g, d), ""]
            if images is not None and cx:
                from .plots import picture
                png = picture(cx, language)
                if png:
                    folder = Path(images)
                    folder.mkdir(parents=True, exist_ok=True)
                    n_img += 1
                    name = f"{t['name'].replace('/', '__')}.png"
                    (folder / name).write_bytes(png)
                    out += [f"![{L('期望与你的结果', 'expected vs yours')}]({folder.name}/{name})", ""]
            hint = L(t.get("hint_zh", ""), t.get("hint_en", ""))
            if hint:
                out += [f"**{L('提示', 'Hint')}**: {hint}", ""]
    if r.get("sandbox"):
        out += [f"_({r['sandbox']})_", ""]
    return "\n".join(out)
