"""The per-function result text shared by SandboxGrade (a hidden-tests cell's output) and the
gradebook writer (an answer cell's comment).

A hidden-tests cell never imports this package: run by a student it only prints that the hidden
tests run when the work is graded (build.hidden_cell); in `nbgrader autograde` SandboxGrade fills it.
"""


def function_result(report, exercise, function, language=None):
    """(points, max points, feedback text) of `function`'s tests in a grade report, in `language`
    (default: the report's own, that of the course it was graded with).  A submission that was not
    graded says so and why, never a list of functions "not defined"."""
    from ..report.feedback import feedback_text
    from ..report.messages import say
    from ..report.model import advice_key, not_graded_reason

    same = language is None or language == report.get("language", "both")
    language = language or report.get("language") or "both"
    tests = [
        t for e in report.get("exercises", []) if e["id"] == exercise for t in e["tests"] if t["function"] == function
    ]
    score = sum(t["score"] for t in tests)
    total = sum(t["max_score"] for t in tests)
    reason = not_graded_reason(report)
    if reason is not None:
        lines = [f"{function}: " + say("nbgrader.not_graded", language, reason=reason)]
        if advice_key(reason) != "why.other":
            lines.append(say(advice_key(reason), language, sep="\n"))
        return 0.0, total, "\n".join(lines)
    lines = [f"{function}: {score:g} / {total:g}"]
    for t in tests:
        mark = "✓" if t["passed"] else "✗"
        lines.append(f"{mark} {t['name']}  ({t['score']:g}/{t['max_score']:g})")
        if not t["passed"] and t.get("feedback"):
            text = t["feedback"] if same else feedback_text(t, language)
            lines += ["    " + ln for ln in text.splitlines()]
    errors = report.get("errors") or []
    if errors and score < total:
        lines.append(say("nbgrader.load_problems", language) + ":")
        lines += ["    " + e for e in errors]
    return score, total, "\n".join(lines)
