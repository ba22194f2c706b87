"""The per-function result text shared by SandboxGrade (a hidden-tests cell's output) and the
gradebook writer (an answer cell's comment).

A hidden-tests cell never imports this package: run by a student it only prints that the hidden
tests run when the work is graded (build.hidden_cell); in `nbgrader autograde` SandboxGrade fills it.
"""


def function_result(report, exercise, function):
    """(points, max points, feedback text) of `function`'s tests in a grade report."""
    tests = [t for e in report.get("exercises", []) if e["id"] == exercise for t in e["tests"]
             if t["function"] == function]
    score = sum(t["score"] for t in tests)
    total = sum(t["max_score"] for t in tests)
    lines = [f"{function}: {score:g} / {total:g}"]
    for t in tests:
        mark = "✓" if t["passed"] else "✗"
        lines.append(f"{mark} {t['name']}  ({t['score']:g}/{t['max_score']:g})")
        if not t["passed"] and t.get("feedback"):
            lines += ["    " + ln for ln in t["feedback"].splitlines()]
    errors = report.get("errors") or []
    if errors and score < total:
        lines.append("载入时的问题 / problems while loading your code:")
        lines += ["    " + e for e in errors]
    return score, total, "\n".join(lines)
