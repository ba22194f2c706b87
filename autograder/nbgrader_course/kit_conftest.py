"""自测：在这个文件夹里运行 `pytest`。/ Visible checks: run `pytest` in this folder.

每个函数一行：通过（PASSED）、还没有实现（NOT IMPLEMENTED YET），或者没通过（FAILED：自测自己的提示，以及出错的那一行代码）。
隐藏测试不在这里运行：它们在作业评分时运行。只需要 torch、numpy、matplotlib、pytest 和 nbformat。

One line per function: PASSED, NOT IMPLEMENTED YET, or FAILED with the check's own message and the line
that went wrong. The hidden tests do not run here: they run when your work is graded. Needs only torch,
numpy, matplotlib, pytest and nbformat.

How it works: each notebook's code cells run in order, as "Run All" would (outside Jupyter, pictures
drawn off screen); each 🔒 visible-checks cell runs on what the cells above it defined.
(Written by seqgrader; do not edit.)
"""

import io
import json
import linecache
import os
import re
import signal
import sys
import traceback
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

HIDDEN = "# autograder: hidden tests"
VISIBLE = "# autograder: visible checks"
CELL_SECONDS = 120  # a cell that runs longer is stopped (an endless loop?)
WIDTH = 400  # characters of a message on the one line


def pytest_configure(config):
    """One line per check and nothing more: -v at least, no traceback sections, no short summary (-rN)."""
    # one line per function (-v), and no traceback sections below them: the line says it all
    if config.option.verbose < 1:
        config.option.verbose = 1
    if getattr(config.option, "tbstyle", "auto") == "auto":
        config.option.tbstyle = "no"
    config.option.reportchars = "N"


def pytest_collect_file(file_path, parent):
    """A Notebook for every .ipynb outside .ipynb_checkpoints; None for any other file."""
    p = Path(str(file_path))
    if p.suffix == ".ipynb" and ".ipynb_checkpoints" not in p.parts:
        return Notebook.from_parent(parent, path=p)
    return None


def pytest_report_teststatus(report, config):
    """The word of a check's line that raised CheckFailed: "NOT IMPLEMENTED YET" (N) or "FAILED:
    <message>" (F); None leaves pytest's own."""
    word = getattr(report, "seqgrader_word", None)
    if word and report.when == "call":
        kind, text = word
        if kind == "missing":
            return "not implemented", "N", ("NOT IMPLEMENTED YET / 还没有实现" + text, {"yellow": True})
        if kind == "failed":
            return "failed", "F", ("FAILED: " + text, {"red": True})
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A CheckFailed's kind and text put on the check's report (`seqgrader_word`; the text is the
    whole failure report)."""
    outcome = yield
    report = outcome.get_result()
    if (
        call.when == "call"
        and isinstance(item, Check)
        and call.excinfo is not None
        and isinstance(call.excinfo.value, CheckFailed)
    ):
        report.seqgrader_word = (call.excinfo.value.kind, call.excinfo.value.text)
        report.longrepr = call.excinfo.value.text


class CheckFailed(Exception):
    def __init__(self, kind, text):
        super().__init__(text)
        self.kind, self.text = kind, text


class TimeUp(BaseException):
    pass


def _one_line(text, width=WIDTH):
    text = re.sub(r"\s+", " ", str(text)).strip()
    return text if len(text) <= width else text[: width - 1] + "…"


def _plain(src):
    """A cell's source without IPython magics and shell lines (`%matplotlib`, `!pip`)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in src.splitlines())


class Notebook(pytest.File):
    def collect(self):
        """One Check per visible-checks cell, named after its function (the code cells sorted into
        hidden tests, checks and the student's code); one failing Check for an unreadable notebook."""
        try:
            with open(self.path, encoding="utf-8") as f:
                nb = json.load(f)
            cells = [c for c in nb["cells"] if c.get("cell_type") == "code"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            yield Check.from_parent(
                self,
                name="(notebook)",
                function=None,
                broken=f"这个笔记本读不出来 / cannot read this notebook: {_one_line(e, 200)}",
            )
            return
        self.cells = []
        for i, cell in enumerate(cells):
            src = cell.get("source", "")
            src = "".join(src) if isinstance(src, list) else src
            meta = (cell.get("metadata") or {}).get("nbgrader") or {}
            grade_id = meta.get("grade_id", "")
            if src.startswith(HIDDEN) or grade_id.startswith("hidden_"):
                kind, function = "hidden", None
            elif src.startswith(VISIBLE) or (
                meta.get("grade") and not meta.get("solution") and grade_id.startswith("test_")
            ):
                kind = "check"
                first = src.splitlines()[0] if src.startswith(VISIBLE) else ""
                function = first[len(VISIBLE) :].lstrip(": ").strip() or grade_id[len("test_") :]
            else:
                kind, function = "code", None
            label = (
                grade_id if (meta.get("solution") and grade_id) else function if kind == "check" else f"cell {i + 1}"
            )
            self.cells.append(
                {
                    "kind": kind,
                    "function": function,
                    "src": src,
                    "label": label,
                    "filename": f"<{self.path.name}: cell {i + 1}, {label}>",
                }
            )
        for cell in self.cells:
            if cell["kind"] == "check":
                yield Check.from_parent(self, name=cell["function"], function=cell["function"])

    def results(self):
        """{function: None (passed) or (kind, text)} of the visible checks; the notebook runs once,
        on first use."""
        if not hasattr(self, "_results"):
            self._results = _run_notebook(self.path, self.cells)
        return self._results


class Check(pytest.Item):
    def __init__(self, *, function, broken=None, **kw):
        super().__init__(**kw)
        self.function, self.broken = function, broken

    def runtest(self):
        """Raise CheckFailed when the notebook could not be read or this function's visible check
        did not pass."""
        if self.broken:
            raise CheckFailed("failed", self.broken)
        result = self.parent.results().get(self.function)
        if result is not None:
            raise CheckFailed(*result)

    def repr_failure(self, excinfo):
        """A CheckFailed's one-line text; pytest's own report for any other exception."""
        if isinstance(excinfo.value, CheckFailed):
            return excinfo.value.text
        return super().repr_failure(excinfo)

    def reportinfo(self):
        """(the notebook's path, no line number, the check's name) for pytest's report."""
        return self.path, None, self.name


def _alarm(signum, frame):
    raise TimeUp()


def _run_cell(cell, ns):
    """Run one cell in `ns`; returns the exception info or None."""
    lines = cell["src"].splitlines(True)
    linecache.cache[cell["filename"]] = (len(cell["src"]), None, lines, cell["filename"])
    try:
        code = compile(_plain(cell["src"]), cell["filename"], "exec")
    except SyntaxError as e:
        return e, None
    timer = hasattr(signal, "SIGALRM")
    if timer:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(CELL_SECONDS)
    try:
        exec(code, ns)  # noqa: S102 - the student's own notebook, on the student's machine
        return None
    except (Exception, TimeUp) as e:  # noqa: BLE001
        return e, e.__traceback__
    finally:
        if timer:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")


def _where(cells, tb, exc):
    """'notebook, cell label, line n: source' of the innermost line of the student's cells (else of the
    check's cell) in the traceback."""
    by_name = {c["filename"]: c for c in cells}
    frames = [f for f in traceback.extract_tb(tb)] if tb is not None else []
    if isinstance(exc, SyntaxError) and exc.filename in by_name:
        frames.append(traceback.FrameSummary(exc.filename, exc.lineno or 0, "<module>", line=(exc.text or "").strip()))
    ours = [f for f in frames if f.filename in by_name]
    student = [f for f in ours if by_name[f.filename]["kind"] != "check"]
    frame = (student or ours or [None])[-1]
    if frame is None:
        return ""
    line = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
    who = "你的代码 / your code" if by_name[frame.filename]["kind"] != "check" else "自测 / check"
    where = by_name[frame.filename]["label"]
    return f" — {who}: {where}, line {frame.lineno}: {line}"


def _describe(cells, exc, tb, function):
    if isinstance(exc, TimeUp):
        return (
            "failed",
            f"运行超过 {CELL_SECONDS} 秒（死循环？）/ ran longer than {CELL_SECONDS} s (an endless loop?)"
            + _where(cells, tb, exc),
        )
    if isinstance(exc, NotImplementedError):
        frames = traceback.extract_tb(tb) if tb is not None else []
        names = {c["filename"] for c in cells if c["kind"] != "check"}
        raised_in = next((f.name for f in reversed(frames) if f.filename in names), None)
        extra = (
            f" ({raised_in} 被调用 / called by {function})"
            if raised_in and raised_in not in (function, "<module>", "__init__", "forward")
            else ""
        )
        return "missing", extra
    if isinstance(exc, AssertionError):
        msg = str(exc) or "断言失败 / an assertion failed"
        return "failed", _one_line(msg) + _where(cells, tb, exc)
    return "failed", _one_line(f"{type(exc).__name__}: {exc}") + _where(cells, tb, exc)


def _run_notebook(path, cells):
    """{function: None (passed) or (kind, text)} for every visible-checks cell of the notebook."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    ns = {"__name__": "__notebook__"}  # not "__main__": long experiments guarded by it do not run here
    results, failed_cells = {}, {}
    cwd = os.getcwd()
    os.chdir(path.parent)  # the notebook's own folder, as in Jupyter
    try:
        with warnings.catch_warnings(), redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            for cell in cells:
                if cell["kind"] == "hidden":
                    continue
                if cell["kind"] == "code":
                    err = _run_cell(cell, ns)
                    if err is not None:
                        failed_cells[cell["label"]] = err
                    continue
                err = _run_cell(cell, dict(ns))
                if err is None:
                    results[cell["function"]] = None
                    continue
                exc, tb = err
                kind, text = _describe(cells, exc, tb, cell["function"])
                if isinstance(exc, NameError) and getattr(exc, "name", None) in failed_cells:
                    label = exc.name  # the function's own cell did not run
                    cexc, ctb = failed_cells[label]
                    kind, text = (
                        "failed",
                        _one_line(f"{type(exc).__name__}: {exc}")
                        + f" — 因为前面的单元格出错 / because an earlier cell failed: {label}: "
                        f"{_one_line(f'{type(cexc).__name__}: {cexc}', 200)}{_where(cells, ctb, cexc)}",
                    )
                results[cell["function"]] = (kind, text)
    finally:
        os.chdir(cwd)
    return results
