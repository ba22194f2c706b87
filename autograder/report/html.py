"""Per-student HTML report: one self-contained page (inline CSS, pictures as data: URIs, no script,
nothing fetched), in the course's language (zh, en or both; words from report/messages.py),
rendered from autograder/templates/report.html (its blocks in report_parts.html).

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

This module decides what the page says (in the page's language, as plain text); the templates
write it as HTML and escape it.
"""

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


def _context(language):
    """What every block of the page uses: the language, and the catalogue's words in it."""
    return {
        "language": language,
        "lang": {"zh": "zh", "en": "en"}.get(language, "zh"),
        "pick": lambda zh, en: pick(language, zh, en),
        "label": lambda zh, en: pick(language, zh, en, sep=" "),  # a short label on one line
        "L": lambda key, **fields: say(key, language, sep=" ", **fields),  # a catalogue label on one line
    }


def fmt_value(v):
    """A counterexample value as a short cell text: T/F for booleans, floats to 4 significant digits, – for None."""
    if isinstance(v, bool):
        return "T" if v else "F"
    if isinstance(v, float):
        if v == int(v) and abs(v) < 1e6:
            return f"{v:.1f}"
        return f"{v:.4g}"
    if v is None:
        return "–"
    return str(v)


def grid(rows, differs=None, mask=False):
    """A 2-D nested list as the cells of a table: {"ncols", "rows": [[(text, classes)]]}; `differs`
    marks the wrong cells (class "diff"), `mask` the True ones (class "t")."""
    if not rows or not isinstance(rows[0], list):
        rows = [rows]
        differs = [differs] if differs is not None else None
    out = []
    for i, row in enumerate(rows):
        cells = []
        for j, v in enumerate(row):
            classes = []
            if differs is not None and i < len(differs) and j < len(differs[i]) and differs[i][j]:
                classes.append("diff")
            if mask and v is True:
                classes.append("t")
            cells.append((fmt_value(v), classes))
        out.append(cells)
    return {"ncols": max((len(r) for r in rows), default=0), "rows": out}


def _count(shape):
    n = 1
    for k in shape or ():
        n *= int(k)
    return n


def _value(v, language):
    """An input of the counterexample: a tensor (its table if small, else its shape) or a scalar."""
    if isinstance(v, dict) and "shape" in v:
        shape, vals = v["shape"], v.get("values")
        out = {"kind": "tensor", "head": f"shape {tuple(shape)} · {v.get('dtype', '')}"}
        mask = v.get("dtype") == "bool"
        if vals is None:
            pass
        elif len(shape) == 0:
            out["scalar"] = fmt_value(vals)
        elif len(shape) <= 2:
            out["table"] = grid(vals, mask=mask)
        else:
            out["slices"] = [
                (f"[{', '.join(map(str, s[0]))}, :, :]", grid(s[2], mask=mask))
                for s in cx_slices({"got": vals}, limit=4)
            ]
        return out
    shown = value_of(v, language) if isinstance(v, str) else v
    if isinstance(shown, str) and "\n" in shown:
        return {"kind": "pre", "text": shown}
    return {"kind": "code", "text": str(shown)}


def _partial(cx, slices):
    """True when the tables do not show the whole tensor (a window of it, or some slices only)."""
    if cx.get("offset") or cx.get("index"):
        return True
    shape = cx.get("shape") or []
    return len(shape) > 2 and _count(shape[:-2]) > len(slices)


WORDS = {"expected": "word.expected", "got": "word.got", "before": "word.before", "after": "word.after"}


def counterexample(cx, language, picture=True):
    """What the counterexample block shows: the call, its inputs, expected vs got side by side
    (wrong entries marked), the picture; None without a counterexample."""
    if not cx:
        return None
    L = _context(language)["L"]
    out = {"call": cx.get("call"), "inputs": [], "shape": None, "legend": None, "slices": [], "picture": None}
    for name, v in (cx.get("inputs") or {}).items():
        big = isinstance(v, dict) and v.get("values") is not None and _count(v.get("shape")) > 24
        out["inputs"].append(
            {
                "name": label_of(name, language),
                "value": _value(v, language),
                # a weight matrix: folded, so that the wrong values stay in view
                "folded": f"shape {tuple(v['shape'])} · {v.get('dtype', '')}" if big else None,
            }
        )
    if cx.get("kind") == "shape" and (cx.get("expected_shape") or cx.get("got_shape")):
        want = tuple(cx.get("expected_shape") or cx.get("shape") or ())
        have = tuple(cx.get("got_shape") or cx.get("shape") or ())
        out["shape"] = (str(want), str(have))
    slices = cx_slices(cx)
    if slices:
        names = cx.get("labels") or ["expected", "got"]
        we, wg = (L(WORDS[n]) if n in WORDS else n for n in names[:2])
        what = cx.get("what", "")
        n = cx.get("n_differ")
        if n is not None:
            legend = L("cx.wrong_one") if n == 1 else L("cx.wrong_n", n=n)
            if _partial(cx, slices):
                legend += " · " + L("cx.partial")
            out["legend"] = legend
        mask = cx.get("kind") == "mask"
        for idx, e, g, d in slices:
            where = f"{what}[{', '.join(map(str, idx))}{', :, :' if idx else ''}]" if idx else what
            figures = [] if e is None else [("expected", we, grid(e, d, mask))]
            figures.append(("got", wg, grid(g, d, mask)))
            offset = L("cx.from", at=tuple(cx["offset"])) if cx.get("offset") else None
            out["slices"].append({"where": where, "offset": offset, "figures": figures})
    if picture:
        from .plots import data_uri
        from .plots import picture as draw

        png = draw(cx, language)
        if png:
            out["picture"] = data_uri(png)
    if cx.get("note"):
        out["note"] = say("cx.too_large", language) if cx["note"] == "too large to show" else cx["note"]
    return out


def diagnoses(diag, language, group=None, function=None):
    """The named mistakes (title and where, explanation, how to fix it; for a function's group,
    its other tests that fail the same way), and what the diagnosis could not explain."""
    from .feedback import unexplained, where

    L = _context(language)["L"]
    out = []
    for d in diag or []:
        where_zh, where_en = where(d, function if function is not None else (group or {}).get("function"))
        item = {
            "title": (d.get("title_zh", "") + where_zh, d.get("title_en", "") + where_en),
            "explanation": (d.get("explanation_zh", ""), d.get("explanation_en", "")),
            "hint": (d.get("hint_zh", ""), d.get("hint_en", "")),
            "others": None,
        }
        if group is not None:
            fn = d.get("function") or group["function"]
            others = sorted({t.get("function") for t in group["tests"]} - {fn})
            if others:
                item["others"] = L("report.in_function", fn=fn, tests=", ".join(others))
        out.append(item)
    return {"named": out, "unexplained": unexplained(diag)}


def parts_html(parts, language):
    """Which part of a function differs, found by experiment (where no catalogued mistake is named)."""
    from ..templates import macros
    from .feedback import by_part

    return str(macros("report_parts.html", **_context(language)).parts(by_part(parts)))


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
    from .feedback import by_part

    out = {
        "property": (t.get("property_zh", ""), t.get("property_en", "")),
        "message": (t.get("message_zh", ""), t.get("message_en", "")),
        "diagnoses": diagnoses(t.get("diagnosis"), language, function=t.get("function")) if diagnosis else None,
        "parts": by_part(t.get("explained_by_part")) if diagnosis else [],
        "counterexample": counterexample(t.get("counterexample") or {}, language, picture),
        "hint": (t.get("hint_zh", ""), t.get("hint_en", "")),
        "more": None,
    }
    skip = _shown_elsewhere(t)
    rest = [(lab, val) for lab, val in t.get("details") or [] if lab not in skip]
    if rest:
        lines = []
        for lab, val in rest:
            lab, val = label_of(lab, language), value_of(val, language)
            lines.append(f"{lab}:\n{val}" if "\n" in str(val) else f"{lab}: {val}")
        # open when there is no table to look at (a crash: the exception and where it was raised)
        out["more"] = {"text": "\n".join(lines), "open": "got" not in (t.get("counterexample") or {})}
    return out


def _test(t, language, picture=True, diagnosis=True, first=None):
    """One failed test: its title (status, name, points), its body; `first`: the open test of its
    function, whose message a folded test does not repeat in its summary."""
    zh, en, cls = STATUS.get(t.get("status", "failed"), STATUS["failed"])
    msg = pick(language, (t.get("message_zh") or "").split("\n")[0], (t.get("message_en") or "").split("\n")[0])
    same = first is not None and (t.get("message_en"), t.get("message_zh")) == (
        first.get("message_en"),
        first.get("message_zh"),
    )
    return {
        "name": t["name"],
        "status": (zh, en, cls),
        "points": f"{_score(t.get('score'))} / {_score(t.get('max_score'))}",
        "summary": None if same or not msg else msg,
        "body": test_body(t, language, picture, diagnosis),
    }


def _not_graded(reason):
    """Why a submission (or an exercise) was not graded, and what to do."""
    key = advice_key(reason)
    return {
        "reason": reason,
        "why": pair("report.not_graded_why"),
        "advice": pair(key) if key != "why.other" else None,
        "next": pair("report.not_graded_next"),
    }


def _scores(r, language):
    """The score per exercise, and every test's."""
    L = _context(language)["L"]
    exercises, tests = [], []
    for ex in r.get("exercises", []):
        ts = ex.get("tests", [])
        row = {"id": ex["id"], "max": _score(ex.get("max_score"))}
        if exercise_not_graded_reason(ex) is not None:
            row["not_graded"] = True
        else:
            row.update(
                passed=L("report.passed_of", p=sum(1 for t in ts if t.get("passed")), n=len(ts)),
                score=_score(ex.get("score")),
                level=level(ex.get("score"), ex.get("max_score")),
                width=f"{100 * (ex.get('score') or 0) / ex['max_score'] if ex.get('max_score') else 0:.0f}",
            )
        exercises.append(row)
        for t in ts:
            zh, en, cls = STATUS.get(t.get("status", "failed"), STATUS["failed"])
            tests.append(
                {
                    "name": t["name"],
                    "link": not t.get("passed"),
                    "status": (zh, en, cls),
                    "points": f"{_score(t.get('score'))} / {_score(t.get('max_score'))}",
                }
            )
    return exercises, tests


def _group(g, language, picture):
    """A function with failed tests (or an exercise not graded): its named mistakes, the first
    failed test open, the others folded."""
    from .feedback import by_part

    if g.get("not_graded"):
        return {"anchor": g["anchor"], "exercise": g["exercise"], "not_graded": _not_graded(g["not_graded"])}
    first, rest = g["tests"][0], g["tests"][1:]
    return {
        "anchor": g["anchor"],
        "function": g["function"],
        "exercise": g["exercise"],
        "lost": f"{g['lost']:g}",
        "n": len(g["tests"]),
        "diagnoses": diagnoses(g["diagnoses"], language, group=g),
        "parts": by_part(g.get("parts")),
        "first": _test(first, language, picture, diagnosis=False),
        # the folded tests keep their tables but draw no picture: the open test shows what the mistake
        # looks like, and a class's pages are drawn in one batch (a picture costs about half a second)
        "rest": [_test(t, language, False, diagnosis=False, first=first) for t in rest],
    }


def _fix(g, language):
    L = _context(language)["L"]
    if g.get("not_graded"):
        cost = L("report.not_graded")
    else:
        n = len(g["tests"])
        cost = L("report.lost", points=f"{g['lost']:g}") + (f" · {L('report.n_tests', n=n)}" if n > 1 else "")
    return {
        "function": g["function"],
        "anchor": g["anchor"],
        "exercise": g["exercise"],
        "cost": cost,
        "headline": fix_headline(g),
    }


def render_html(report, language="both", picture=True, menu=None):
    """The whole page for one student; `menu`: the service's menu above it ({base, user, forms_token})."""
    from ..templates import render

    r = as_dict(report)
    reason = not_graded_reason(r)
    page = {
        "title": say("report.title", language, sep=" "),
        "who": student_of(r),
        "submission": Path(str(r.get("submission", ""))).name,
        "warning": r.get("sandbox_warning"),
        "not_graded": None if reason is None else _not_graded(reason),
    }
    if reason is None:
        groups = fixes(r)
        exercises, tests = _scores(r, language)
        page.update(
            level=level(r.get("score"), r.get("max_score")),
            total=f"{_score(r.get('score'))} / {_score(r.get('max_score'))}",
            fixes=[_fix(g, language) for g in groups],
            exercises=exercises,
            tests=tests,
            errors=r.get("errors") or [],
            groups=[_group(g, language, picture) for g in groups],
        )
    return render("report.html", page=page, menu=menu, **(menu or {}), **_context(language))
