"""What a hidden-tests cell calls when it runs in a Jupyter kernel.

    hidden_tests("attention", "MultiHeadAttention")

Used when a student runs the notebook or `nbgrader validate` (in `nbgrader autograde` the
SandboxGrade preprocessor fills these cells instead; no kernel runs).  It takes the code cells the
kernel has run so far, grades them in a subprocess (`python -m autograder grade`, sandboxed like
any grading), prints the feedback for that function on stdout, and returns the points as a plain
float: the cell's value, which nbgrader reads as partial credit.  Nothing goes to stderr (nbgrader
scores a graded cell with stderr output 0).  The notebook is graded once per exercise and set of
cells; the other hidden-tests cells of the notebook reuse the report.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import warnings

from . import HIDDEN_MARKER, VISIBLE_MARKER

_cache = {}


def _kernel_cells():
    try:
        ip = get_ipython()  # noqa: F821 - defined in IPython kernels
    except NameError:
        return None
    return [src for src in ip.history_manager.input_hist_raw[1:]
            if src.strip() and not src.lstrip().startswith((HIDDEN_MARKER, VISIBLE_MARKER))]


def _grade(exercise, cells, course_file=None):
    import nbformat

    key = (exercise, hashlib.sha256("\0".join(cells).encode()).hexdigest(), course_file)
    if key in _cache:
        return _cache[key]
    with tempfile.TemporaryDirectory(prefix="seqgrader-cell-") as tmp:
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        path = os.path.join(tmp, f"{exercise}.ipynb")
        nbformat.write(nb, path)
        out = os.path.join(tmp, "report.json")
        cmd = [sys.executable, "-m", "autograder", "grade", path, "--exercise", exercise, "--json", out, "-q"]
        if course_file:
            cmd += ["--course", course_file]
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=900)
        if proc.returncode != 0 or not os.path.exists(out):
            report = {"grader_error": proc.stderr.decode("utf-8", "replace")[-2000:]}
        else:
            with open(out, encoding="utf-8") as f:
                report = json.load(f)
    _cache[key] = report
    return report


def function_result(report, exercise, function, language=None):
    """(points, max points, feedback text) of `function`'s tests in a grade report, in `language`
    (default: the report's own, that of the course it was graded with).  A submission that was not
    graded says so and why, never a list of functions "not defined"."""
    from ..report.messages import say
    from ..report.model import advice_key, not_graded_reason

    from ..report.feedback import feedback_text

    same = language is None or language == report.get("language", "both")
    language = language or report.get("language") or "both"
    tests = [t for e in report.get("exercises", []) if e["id"] == exercise for t in e["tests"]
             if t["function"] == function]
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


def hidden_tests(exercise, function, course_file=None):
    """Grade `function` of `exercise` on the cells run so far; print feedback; return the points."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cells = _kernel_cells()
        if cells is None:
            print("hidden_tests() runs in a Jupyter kernel / 只能在 Jupyter 内核里运行。")
            return 0.0
        report = _grade(exercise, cells, course_file or os.environ.get("SEQGRADER_COURSE"))
        if "grader_error" in report:
            print("评分器没有运行成功，这不是你的代码的问题；请告诉助教。/ The grader failed (not your code's "
                  "fault); please tell the teaching staff.\n" + report["grader_error"])
            return 0.0
        score, _total, text = function_result(report, exercise, function)
        print(text)
        return float(score)
