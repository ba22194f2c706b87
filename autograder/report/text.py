"""Plain-text report (what `grade` prints): the score, what to fix, the score per exercise, then
the details function by function (each named mistake once, then every failed test's feedback).

    render_text(report, language="both") -> str     (a Report or the dict of a JSON report)

A submission that was not graded says so, with the reason and what to do, and shows no score.
"""

from pathlib import Path

from .feedback import detail_lines, part_lines, unexplained
from .feedback import where as located
from .messages import pick, say
from .model import (
    Status,
    advice_key,
    as_dict,
    exercise_not_graded_reason,
    fix_headline,
    fixes,
    not_graded_reason,
    student_of,
)


class _Test:
    """A test dict read like a TestResult (feedback.py's functions take either)."""

    def __init__(self, t):
        self.__dict__.update(t)


def not_graded_advice(reason, language):
    """What to do about a submission that was not graded (model.advice_key), "" when nothing specific."""
    return say(advice_key(reason), language, sep="\n")


def test_lines(t, language, with_diagnosis=False):
    """The feedback of one failed test, without the named mistake (shown once per function)."""
    from .feedback import diagnosis_lines

    res = _Test(t)
    status = Status.of(t)
    head = pick(language, *status.words())
    prop = pick(language, t.get("property_zh", ""), t.get("property_en", ""))
    out = [f"{head}: {prop}" if prop else head]
    if with_diagnosis:
        out += diagnosis_lines(res, language)
    if language in ("zh", "both") and t.get("message_zh"):
        out.append(t["message_zh"])
    if language in ("en", "both") and t.get("message_en") and t.get("message_en") != t.get("message_zh"):
        out.append(t["message_en"])
    out += detail_lines(t.get("details"), language)
    hint = pick(language, t.get("hint_zh", ""), t.get("hint_en", ""), sep="\n    ")
    if hint:
        out.append(say("test.hint", language, sep=" ") + ":\n    " + hint)
    return out


def render_text(report, language="both"):
    """The plain-text report `grade` prints, of a Report or a JSON report's dict: score, what to
    fix, scores per exercise, then each failing function's diagnoses and tests; not graded: the
    reason, no score."""
    r = as_dict(report)
    L = lambda key, **kw: say(key, language, sep=" ", **kw)  # noqa: E731 - a label: "中文 English"
    sub = Path(str(r.get("submission") or "")).name
    out = [r["sandbox_warning"], ""] if r.get("sandbox_warning") else []
    out += [f"{L('text.submission')}: {student_of(r)}" + (f" ({sub})" if sub and sub != student_of(r) else "")]
    reason = not_graded_reason(r)
    if reason is not None:
        out += [
            f"{L('report.score')}: {say('report.not_graded', language)}",
            "",
            say("report.not_graded_why", language, sep="\n"),
            "  " + reason,
        ]
        advice = not_graded_advice(reason, language)
        if advice:
            out += [""] + advice.split("\n")
        out += ["", say("report.not_graded_next", language, sep="\n"), ""]
        return "\n".join(out)
    out += [f"{L('report.score')}: {r['score']:g} / {r['max_score']:g}", ""]
    groups = fixes(r)
    if groups:
        out.append(f"{L('report.to_fix')} ({len(groups)}):")
        for i, g in enumerate(groups, 1):
            lost = say("report.lost", language, points=f"{g['lost']:g}")
            if g.get("not_graded"):
                lost = say("report.not_graded", language)
            out.append(f"  {i}. {g['function']} ({g['exercise']}, {lost}): {pick(language, *fix_headline(g))}")
        out.append("")
    else:
        out += [say("report.all_passed", language, sep=" "), ""]
    for ex in r.get("exercises", []):
        tests = ex.get("tests", [])
        n_pass = sum(1 for t in tests if t.get("passed"))
        if exercise_not_graded_reason(ex) is not None:
            out.append(f"  {ex['id']:<22} {'–':>5} / {ex['max_score']:<5g} ({say('report.not_graded', language)})")
            continue
        out.append(
            f"  {ex['id']:<22} {ex['score']:>5g} / {ex['max_score']:<5g} "
            f"({say('text.tests_passed', language, p=n_pass, n=len(tests))})"
        )
    if r.get("errors"):
        out += ["", f"{L('report.load_problems')}:"]
        out += [f"  ! {err}" for err in r["errors"]]
    for g in groups:
        if g.get("not_graded"):
            out += ["", f"== {g['exercise']}: {say('report.not_graded', language)}", "  " + g["not_graded"]]
            advice = not_graded_advice(g["not_graded"], language)
            out += ["  " + ln for ln in advice.split("\n") if ln]
            continue
        out += [
            "",
            f"== {g['function']} ({g['exercise']}) " + "=" * max(0, 56 - len(g["function"]) - len(g["exercise"])),
        ]
        for d in g["diagnoses"]:
            out += _diagnosis(d, g, language)
        more = unexplained(g["diagnoses"])
        if more:
            out.append("    " + pick(language, *more, sep="\n    "))
        out += part_lines(g.get("parts"), language)
        for t in g["tests"]:
            out.append(f"\n✗ {t['name']} ({t['score']:g}/{t['max_score']:g})")
            out += ["  " + ln for line in test_lines(t, language) for ln in line.splitlines()]
    out.append("")
    return "\n".join(out)


def _diagnosis(d, group, language):
    fn = d.get("function") or group["function"]
    others = sorted({t.get("function") for t in group["tests"]} - {fn})
    w_zh, w_en = located(d, group["function"])
    title = pick(language, d.get("title_zh", "") + w_zh, d.get("title_en", "") + w_en)
    lines = [f"{say('diagnosis.short', language, sep=' ')}: {title}"]
    expl = pick(language, d.get("explanation_zh", ""), d.get("explanation_en", ""), sep="\n")
    lines += ["    " + ln for ln in expl.splitlines()]
    hint = pick(language, d.get("hint_zh", ""), d.get("hint_en", ""), sep="\n")
    if hint:
        h = hint.splitlines()
        lines.append(f"    {say('diagnosis.fix', language, sep=' ')}: {h[0]}")
        lines += ["        " + ln for ln in h[1:]]
    if others:
        lines.append("    " + say("report.in_function", language, fn=fn, tests=", ".join(f"`{o}`" for o in others)))
    return lines
