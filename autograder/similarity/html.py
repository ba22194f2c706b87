"""The similarity report as one self-contained HTML page (the instructors' only: it shows students'
code side by side), rendered from autograder/templates/similarity.html.  One renderer of the data
cli.analyse() returns, as report/html.py is of a grade Report; similarity.json is the other.

Ranked pairs first (score, the functions and their part), then the clusters, then each pair in
detail: the evidence in words (Chinese first, English beside it, as the other reports), and per
function the two definitions side by side, each matched region (fragment) of one in the same row
as the region it matches in the other, in the same colour, the lines nothing matched last."""

from ..report.messages import say
from .pairs import FLAG

DETAILED = 40  # pairs shown in detail (the flagged ones always)
# The code's colours: its text, and the line numbers and fragment tags beside it, on every colour
# of a matched region and on the page's white and grey: each pair at least 4.5:1 (WCAG AA), which
# tests/test_accessibility.py checks.
TEXT, MUTED = "#1d2330", "#4f5664"
COLOURS = ["#ffe08a", "#b6e3ff", "#c8f0c0", "#ffc9de", "#e2d4ff", "#ffd8b0"]
BACKGROUNDS = ["#ffffff", "#f6f7f9", "#fafbfc", "#eef0f4"]  # the page, the unmatched lines, the heads


def _lines(text, first, last, offset):
    """[(number shown, line)] of lines first..last of `text` (1-based), numbered from `offset`."""
    rows = text.splitlines()
    return [(n + offset - 1, rows[n - 1]) for n in range(first, last + 1) if 1 <= n <= len(rows)]


def _rest(text, covered, offset):
    """[(number shown, line)] of the lines no fragment covers, blank lines left out."""
    rows = text.splitlines()
    return [(n + offset - 1, rows[n - 1]) for n in range(1, len(rows) + 1) if n not in covered and rows[n - 1].strip()]


def _side_by_side(pair, m, sources):
    sa, sb = sources[pair.a][m.function], sources[pair.b][m.function]
    fragments, cov_a, cov_b = [], set(), set()
    for k, f in enumerate(m.fragments, 1):
        fragments.append(
            {
                "k": k,
                "colour": COLOURS[(k - 1) % len(COLOURS)],
                "a": _lines(sa.text, f.a[0], f.a[1], sa.first_line),
                "b": _lines(sb.text, f.b[0], f.b[1], sb.first_line),
            }
        )
        cov_a.update(range(f.a[0], f.a[1] + 1))
        cov_b.update(range(f.b[0], f.b[1] + 1))
    return {
        "function": m.function,
        "strength": f"{m.strength:.2f}",
        "where": (sa.where, sb.where),
        "fragments": fragments,
        "rest": (_rest(sa.text, cov_a, sa.first_line), _rest(sb.text, cov_b, sb.first_line)),
    }


def _colour(score):
    return "#c0162c" if score >= FLAG else "#d69e2e" if score >= FLAG / 2 else "#98a0ad"


def render_similarity(result, language="both"):
    """The page of a cli.Similarity result."""
    from ..templates import render

    pairs = result.pairs
    detailed = _detailed(pairs)
    ranked = [
        {
            "a": p.a,
            "b": p.b,
            "flagged": p.score >= FLAG,
            "linked": i <= detailed,
            "score": f"{p.score:.2f}",
            "width": f"{100 * p.score:.0f}",
            "colour": _colour(p.score),
            "functions": [
                (f, f"{m.strength:.2f}") for f, m in sorted(p.functions.items(), key=lambda kv: -kv[1].strength)
            ],
        }
        for i, p in enumerate(pairs, 1)
    ]
    details = [
        {
            "a": p.a,
            "b": p.b,
            "score": f"{p.score:.2f}",
            "flagged": p.score >= FLAG,
            "summary": p.summary(),
            "evidence": p.evidence(),
            "functions": [
                _side_by_side(p, m, result.sources)
                for m in sorted(p.functions.values(), key=lambda m: -m.strength)
                if m.fragments
                and m.function in result.sources.get(p.a, {})
                and m.function in result.sources.get(p.b, {})
            ],
        }
        for p in pairs[:detailed]
    ]
    return render(
        "similarity.html",
        language=language,
        lang="en" if language == "en" else "zh",
        t=lambda key, **fields: say(key, language, **fields),
        text=TEXT,
        muted=MUTED,
        n_flagged=sum(1 for p in pairs if p.score >= FLAG),
        flag=FLAG,
        students=len(result.students),
        compared=result.compared,
        ranked=ranked,
        clusters=result.clusters,
        details=details,
        excluded=result.excluded,
    )


def _detailed(pairs):
    return max(DETAILED, sum(1 for p in pairs if p.score >= FLAG))
