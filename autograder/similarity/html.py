"""The similarity report as one self-contained HTML page (the instructors' only: it shows students'
code side by side).  One renderer of the data cli.analyse() returns, as report/html.py is of a
grade Report; similarity.json is the other.

Ranked pairs first (score, the functions and their part), then the clusters, then each pair in
detail: the evidence in words (Chinese first, English beside it, as the other reports), and per
function the two definitions side by side, each matched region (fragment) of one in the same row
as the region it matches in the other, in the same colour, the lines nothing matched last."""

from html import escape

from ..report.messages import say
from .pairs import FLAG

DETAILED = 40  # pairs shown in detail (the flagged ones always)
COLOURS = ["#ffe08a", "#b6e3ff", "#c8f0c0", "#ffc9de", "#e2d4ff", "#ffd8b0"]

CSS = """
body{font:14px/1.45 system-ui,"Noto Sans CJK SC","WenQuanYi Zen Hei",sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
main{max-width:1240px;margin:0 auto;padding:20px 24px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px} h3{font-size:15px;margin:16px 0 6px}
.summary{color:#5b6170;margin:0 0 12px}
table{border-collapse:collapse;background:#fff}
table.ranked td,table.ranked th{border-bottom:1px solid #e3e6eb;padding:4px 10px;text-align:left;vertical-align:top}
.bar{display:inline-block;width:120px;height:10px;background:#e3e6eb;border-radius:5px;vertical-align:middle;margin-right:6px}
.bar span{display:block;height:10px;border-radius:5px}
tr.flagged td.score{font-weight:600;color:#c0162c}
.fn{display:inline-block;margin:0 8px 2px 0;font-family:ui-monospace,monospace;font-size:12px}
section.pair{background:#fff;border:1px solid #e3e6eb;border-radius:8px;padding:12px 16px;margin:14px 0}
section.pair h2{margin-top:0}
ul.evidence{margin:4px 0 10px;padding-left:20px}
ul.summary{margin:6px 0 10px;padding:8px 12px 8px 28px;background:#fff;border-left:4px solid #c0392b;color:#1d2330;font-size:15px}
table.side{width:100%;table-layout:fixed;border:1px solid #e3e6eb}
table.side th{background:#eef0f4;padding:4px 8px;text-align:left;font-weight:600}
table.side td{vertical-align:top;padding:0;border-top:1px solid #e3e6eb;width:50%}
table.side td+td{border-left:1px solid #e3e6eb}
pre{margin:0;padding:4px 8px;font:12px/1.4 ui-monospace,"DejaVu Sans Mono",monospace;white-space:pre-wrap;word-break:break-all}
pre .ln{color:#98a0ad;user-select:none;display:inline-block;width:2.6em}
td.match{position:relative}
td.match .tag{position:absolute;right:6px;top:2px;font-size:11px;color:#5b6170}
tr.rest td{background:#fafbfc;color:#5b6170}
.where{color:#5b6170;font-weight:400;font-size:12px}
"""


def _t(key, language, **fields):
    return escape(say(key, language, **fields))


def _words(item, language):
    if language == "zh":
        return escape(item["zh"])
    if language == "en":
        return escape(item["en"])
    return f'{escape(item["zh"])}<br><span class="en">{escape(item["en"])}</span>'


def _lines(text, first, last, offset):
    rows = text.splitlines()
    out = []
    for n in range(first, last + 1):
        if 1 <= n <= len(rows):
            out.append(f'<span class="ln">{n + offset - 1}</span>{escape(rows[n - 1])}')
    return "\n".join(out)


def _rest(text, covered, offset):
    rows = text.splitlines()
    out = []
    for n in range(1, len(rows) + 1):
        if n not in covered and rows[n - 1].strip():
            out.append(f'<span class="ln">{n + offset - 1}</span>{escape(rows[n - 1])}')
    return "\n".join(out)


def _side_by_side(pair, m, sources, language):
    sa, sb = sources[pair.a][m.function], sources[pair.b][m.function]
    head = (
        f'<tr><th>{escape(pair.a)} <span class="where">{escape(sa.where)}</span></th>'
        f'<th>{escape(pair.b)} <span class="where">{escape(sb.where)}</span></th></tr>'
    )
    rows, cov_a, cov_b = [], set(), set()
    for k, f in enumerate(m.fragments, 1):
        colour = COLOURS[(k - 1) % len(COLOURS)]
        tag = _t("similarity.fragment", language, k=k)
        rows.append(
            f'<tr class="fragment" data-k="{k}">'
            f'<td class="match" style="background:{colour}"><span class="tag">{tag}</span>'
            f"<pre>{_lines(sa.text, f.a[0], f.a[1], sa.first_line)}</pre></td>"
            f'<td class="match" style="background:{colour}"><span class="tag">{tag}</span>'
            f"<pre>{_lines(sb.text, f.b[0], f.b[1], sb.first_line)}</pre></td></tr>"
        )
        cov_a.update(range(f.a[0], f.a[1] + 1))
        cov_b.update(range(f.b[0], f.b[1] + 1))
    rest_a, rest_b = _rest(sa.text, cov_a, sa.first_line), _rest(sb.text, cov_b, sb.first_line)
    if rest_a or rest_b:
        rows.append(
            f'<tr class="rest"><td colspan="2"><pre>{_t("similarity.unmatched", language)}</pre></td></tr>'
            f'<tr class="rest"><td><pre>{rest_a}</pre></td><td><pre>{rest_b}</pre></td></tr>'
        )
    return (
        f'<h3 class="function">{escape(m.function)} <span class="where">{m.strength:.2f}</span></h3>'
        f'<table class="side" data-function="{escape(m.function)}">{head}{"".join(rows)}</table>'
    )


def _colour(score):
    return "#c0162c" if score >= FLAG else "#d69e2e" if score >= FLAG / 2 else "#98a0ad"


def render_similarity(result, language="both"):
    """The page of a cli.Similarity result."""
    pairs = result.pairs
    n_flag = sum(1 for p in pairs if p.score >= FLAG)
    out = [
        f'<!DOCTYPE html><html lang="{"en" if language == "en" else "zh"}"><head><meta charset="utf-8">'
        f"<title>{_t('similarity.title', language)}</title><style>{CSS}</style></head><body><main>",
        f"<h1>{_t('similarity.title', language)}</h1>",
        f'<p class="summary">{_t("similarity.summary", language, n=len(result.students), c=result.compared, f=n_flag, flag=FLAG)}</p>',
        f"<h2>{_t('similarity.pairs', language)}</h2>",
    ]
    if pairs:
        out.append(
            f'<table class="ranked"><tr><th>#</th><th>{_t("similarity.pair", language)}</th>'
            f"<th>{_t('similarity.score', language)}</th><th>{_t('similarity.functions', language)}</th></tr>"
        )
        for i, p in enumerate(pairs, 1):
            fns = " ".join(
                f'<span class="fn">{escape(f)} {m.strength:.2f}</span>'
                for f, m in sorted(p.functions.items(), key=lambda kv: -kv[1].strength)
            )
            link = (
                f'<a href="#pair-{i}">{escape(p.a)} – {escape(p.b)}</a>'
                if i <= _detailed(pairs)
                else f"{escape(p.a)} – {escape(p.b)}"
            )
            out.append(
                f'<tr class="{"flagged" if p.score >= FLAG else ""}" data-a="{escape(p.a)}" data-b="{escape(p.b)}">'
                f'<td>{i}</td><td>{link}</td><td class="score"><span class="bar"><span style="width:{100 * p.score:.0f}%;'
                f'background:{_colour(p.score)}"></span></span>{p.score:.2f}</td><td>{fns}</td></tr>'
            )
        out.append("</table>")
    else:
        out.append(f"<p>{_t('similarity.no_pairs', language)}</p>")
    out.append(f"<h2>{_t('similarity.clusters', language)}</h2>")
    if result.clusters:
        out.append(
            '<ul class="clusters">'
            + "".join(f"<li>{', '.join(escape(s) for s in c)}</li>" for c in result.clusters)
            + "</ul>"
        )
    else:
        out.append(f"<p>{_t('similarity.no_clusters', language)}</p>")
    for i, p in enumerate(pairs[: _detailed(pairs)], 1):
        out.append(
            f'<section class="pair" id="pair-{i}" data-a="{escape(p.a)}" data-b="{escape(p.b)}">'
            f"<h2>#{i} {escape(p.a)} – {escape(p.b)}: {p.score:.2f}"
            f"{' · ' + _t('similarity.flagged', language) if p.score >= FLAG else ''}</h2>"
            + '<ul class="summary">'
            + "".join(f"<li>{_words(x, language)}</li>" for x in p.summary())
            + "</ul>"
            f'<h3>{_t("similarity.evidence", language)}</h3><ul class="evidence">'
            + "".join(f'<li data-kind="{e["kind"]}">{_words(e, language)}</li>' for e in p.evidence())
            + "</ul>"
        )
        for m in sorted(p.functions.values(), key=lambda m: -m.strength):
            if m.fragments and m.function in result.sources.get(p.a, {}) and m.function in result.sources.get(p.b, {}):
                out.append(_side_by_side(p, m, result.sources, language))
        out.append("</section>")
    out.append(
        f'<h2>{_t("similarity.excluded", language)}</h2><ul class="excluded">'
        + "".join(
            f"<li>{escape(e['what'])}: {escape(e['source'])} ({e['definitions']} definitions, "
            f"{e['fingerprints']} fingerprints)</li>"
            for e in result.excluded
        )
        + "</ul>"
    )
    out.append("</main></body></html>")
    return "\n".join(out)


def _detailed(pairs):
    return max(DETAILED, sum(1 for p in pairs if p.score >= FLAG))
