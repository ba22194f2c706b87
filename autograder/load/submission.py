"""Load a student's submission: a .py file, an .ipynb notebook, or a folder of them.

Each file becomes its own module namespace.  Top-level statements (and notebook cells) run one
by one, so a failing demo line or cell costs only what it would have defined; the problems met
are kept as `load_errors` and shown in the report.  Notebook cells that are nbgrader's graded
test cells (ours, not the student's) and IPython magics / shell lines are skipped.

This runs student code: call it only inside a sandboxed worker (see sandbox/).
"""

import ast
import json
import os
import stat
import sys
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SubmissionNotFound

SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints", ".git", ".venv", "node_modules"}


# files of a folder that are not the student's code: the kit's own (its pytest plugin, the script
# that sends the work to the grading service) and a packaging script
KIT_FILES = ("conftest.py", "submit.py", "setup.py")


def find_files(path):
    """The .py/.ipynb files of a submission, in a stable order.  Symbolic links inside a folder
    submission are never followed (see `symlinks`): a link to a classmate's notebook or to the
    reference solutions would otherwise be read, by the trusted judge, as the student's code."""
    path = Path(path)
    if not path.exists():
        raise SubmissionNotFound(f"submission not found: {path}")
    if path.is_file():
        if path.suffix not in (".py", ".ipynb"):
            raise SubmissionNotFound(f"a submission is a .py file, an .ipynb notebook or a folder; got {path}")
        return [path]
    files = sorted(
        p
        for p in _walk(path)
        if p.suffix in (".py", ".ipynb")
        and not any(part in SKIP_DIRS or part.startswith(".") for part in p.relative_to(path).parts)
        and not p.name.startswith("test_")
        and p.name not in KIT_FILES
    )
    if not files:
        raise SubmissionNotFound(f"no .py or .ipynb file in {path}")
    return files


PACKAGE = Path(__file__).resolve().parent.parent
# the built-in course's reference solutions: in a checkout, solutions/<exercise>.py is a link to the
# exercise's folder, autograder/exercises/<exercise>/solution.py (the wheel holds real copies)
COURSE_SOLUTIONS = PACKAGE / "default_course" / "solutions"


def course_link(p):
    """Is `p` one of the built-in course's own links, solutions/<exercise>.py to the exercise's
    folder?  Those, and no other link, are read: the folder is the grader's own (a student's folder
    is never it), and the target is the solution of the exercise the link names."""
    p = Path(p)
    if not p.is_symlink():
        return False
    try:
        same_folder = p.parent.resolve() == COURSE_SOLUTIONS.resolve()
    except OSError:
        return False
    target = PACKAGE / "exercises" / p.stem / "solution.py"
    return same_folder and os.path.realpath(p) == str(target) and target.is_file()


def _walk(root, links=None):
    """Regular files under `root`, never through a symbolic link (those go to `links`) but the
    built-in course's own links to its exercises' folders (course_link)."""
    out = []
    for top, dirs, names in os.walk(root, followlinks=False):
        for d in list(dirs):
            if os.path.islink(os.path.join(top, d)):
                dirs.remove(d)
                if links is not None:
                    links.append(Path(top, d))
        for n in names:
            p = Path(top, n)
            if course_link(p):
                out.append(p)
            elif p.is_symlink():
                if links is not None:
                    links.append(p)
            elif p.is_file():
                out.append(p)
    return out


def symlinks(path):
    """The symbolic links inside a folder submission (reported as load problems, never read)."""
    path = Path(path)
    if not path.is_dir():
        return []
    links = []
    _walk(path, links)
    return sorted(p for p in links if p.suffix in (".py", ".ipynb") or not p.suffix)


MAX_FILE_BYTES = 64 << 20  # a submission's code file larger than this is not read


def _read_bytes(f):
    """A file's bytes, refusing a symbolic link (O_NOFOLLOW), anything but a regular file, and a
    file larger than MAX_FILE_BYTES (the trusted judge reads it); a link of the built-in course to
    its exercise's folder (course_link) is read at its target."""
    if course_link(f):
        f = os.path.realpath(f)
    fd = os.open(f, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{f} is not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise OSError(f"{f} is larger than {MAX_FILE_BYTES >> 20} MiB")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


@dataclass
class Submission:
    """The namespaces of a loaded submission and what went wrong while loading it."""

    modules: list = field(default_factory=list)  # [(file label, dict namespace)]
    load_errors: list = field(default_factory=list)  # ["file: message"]
    timed_out: list = field(default_factory=list)  # [[chunk label, line, seconds]] skipped for time
    _pending: list = field(default_factory=list)  # [(index, source)] not run yet (see exec_sources)
    _budget: dict = field(default_factory=lambda: {"timed_out": [], "skip": {}})
    _order: dict = field(default_factory=dict)  # file label -> its index among the sources

    @property
    def partial(self):
        """Some files have not been run (exec_sources with a focus)."""
        return bool(self._pending)

    def load_rest(self):
        """Run the files not run yet; the modules stay in the files' order."""
        self._run([i for i, _ in self._pending])

    def _run(self, indices):
        todo = [(i, src) for i, src in self._pending if i in indices]
        self._pending = [(i, src) for i, src in self._pending if i not in indices]
        for i, (label, modname, filename, chunks) in todo:
            mod = types.ModuleType(modname)
            mod.__file__ = filename
            sys.modules.setdefault(modname, mod)
            for chunk_label, chunk_file, code in chunks:
                _run_source(code, chunk_file, mod.__dict__, self.load_errors, chunk_label, self._budget)
            self._order[label] = i
            self.modules.append((label, mod.__dict__))
        self.modules.sort(key=lambda m: self._order.get(m[0], -1))
        self.timed_out = self._budget["timed_out"]

    def get(self, name, prefer=None):
        """The object called `name`; a file whose stem is `prefer` is searched first."""
        mods = sorted(self.modules, key=lambda m: Path(m[0]).stem != prefer) if prefer else self.modules
        for _, ns in mods:
            if name in ns:
                return ns[name]
        return None


LOAD_MESSAGE_CHARS = 300


def _short_traceback(exc, filename):
    """The student's own frames only: never a grader-internal traceback; the message capped (its
    first line, 300 characters), so that a load error is never a wide channel out of the sandbox."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(filename)]
    where = f" (line {frames[-1].lineno})" if frames else ""
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001 - a hostile __str__
        text = "<unprintable>"
    first = text.splitlines()[0] if text.strip() else ""
    if len(first) > LOAD_MESSAGE_CHARS:
        first = first[:LOAD_MESSAGE_CHARS]
    if first != text:
        first += " …"
    return f"{type(exc).__name__[:100]}: {first}{where}"


# CPU seconds one top-level statement (a notebook cell's statement) may take while loading: a
# demo cell that calls an endlessly looping function is skipped, so the rest of the notebook
# still loads (the load as a whole has its own wall-clock limit, course.yml load_timeout).
# After one statement ran out, the next get less: a loop usually sits in a function many cells call.
STATEMENT_CPU_SECONDS = (3.0, 1.0)


class StatementTimeout(BaseException):
    """A top-level statement ran out of CPU time while loading (raised by SIGPROF)."""


def _on_sigprof(_signum, _frame):
    raise StatementTimeout()


def _cpu_limit(seconds):
    """Arm (or with None disarm) the per-statement CPU timer; False where signals are unavailable."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "ITIMER_PROF"):
        return False
    if seconds is None:
        signal.setitimer(signal.ITIMER_PROF, 0)
        return True
    signal.signal(signal.SIGPROF, _on_sigprof)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    return True


def _run_source(source, filename, ns, errors, label, budget=None):
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as e:
        errors.append(f"{label}: SyntaxError: {e.msg} (line {e.lineno})")
        return
    budget = budget if budget is not None else {"timed_out": [], "skip": {}}
    for stmt in tree.body:
        if (label, stmt.lineno) in budget["skip"]:  # it ran out of time in an earlier worker
            limit = budget["skip"][(label, stmt.lineno)]
            budget["timed_out"].append([label, stmt.lineno, limit])
            errors.append(_too_long(label, stmt.lineno, limit))
            continue
        code = compile(ast.Module([stmt], type_ignores=[]), filename, "exec")
        limit = STATEMENT_CPU_SECONDS[min(len(budget["timed_out"]), 1)]
        try:
            armed = _cpu_limit(limit)
            try:
                exec(code, ns)
            finally:
                if armed:
                    _cpu_limit(None)
        except StatementTimeout:
            budget["timed_out"].append([label, stmt.lineno, limit])
            errors.append(_too_long(label, stmt.lineno, limit))
        except BaseException as e:  # noqa: BLE001 - SystemExit, KeyboardInterrupt from student code too
            from ..errors import TestTimeout

            if isinstance(e, TestTimeout):
                raise
            errors.append(f"{label}: {_short_traceback(e, filename)}")


def _too_long(label, lineno, limit):
    return (
        f"{label}: line {lineno}: did not finish within {limit:g} s of CPU time (an endless loop?); "
        f"skipped / 这一行运行超过 {limit:g} 秒（死循环？），已跳过"
    )


def _notebook_cells(path):
    """(cell number, source) of the code cells a student wrote; raises ValueError if corrupt.

    Plain JSON, not nbformat: importing nbformat (jsonschema's format checkers, lark grammars)
    costs about 2 s, as much as torch, and reading cells needs none of it."""
    try:
        data = json.loads(_read_bytes(path).decode("utf-8", errors="replace"))
    except (json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"the notebook is not valid JSON ({str(e)[:200]})") from None
    except MemoryError:
        raise ValueError("the notebook is too large to read") from None
    except OSError as e:
        raise ValueError(f"the notebook cannot be read ({type(e).__name__}: {e})") from None
    if not isinstance(data, dict):
        raise ValueError("the notebook cannot be read (its JSON is not an object)")
    if isinstance(data.get("cells"), list):  # nbformat 4
        raw, key = data["cells"], "source"
    elif isinstance(data.get("worksheets"), list):  # nbformat 3
        raw = [c for ws in data["worksheets"] if isinstance(ws, dict) for c in ws.get("cells") or []]
        key = "input"
    else:
        raise ValueError("the notebook cannot be read (no list of cells in it)")
    cells = []
    for n, cell in enumerate(raw, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata")
        meta = meta.get("nbgrader") if isinstance(meta, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        if meta.get("grade") and not meta.get("solution"):
            continue  # a graded test cell: ours
        src = cell.get(key, "")
        if isinstance(src, list):
            src = "".join(s for s in src if isinstance(s, str))
        if not isinstance(src, str):
            continue
        lines = [ln for ln in src.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        cells.append((n, "\n".join(lines)))
    return cells


MAX_FILES = 64  # code files of a folder submission that are read (the rest: a load problem each)
MAX_CODE_BYTES = 256 << 10  # bytes of code in one file (a notebook's code cells together): more is not read
MAX_TOTAL_CODE_BYTES = 1 << 20  # ... and in the whole submission
MAX_CELLS = 1000  # code cells of one notebook


def read_sources(path):
    """Read (never run) the submission: [(label, module name, file, [(chunk label, filename, code)])]
    and the problems met (a corrupt notebook, a file too large).  It parses notebooks and holds
    what it read: in a trusted process, call it through `load.reader.read_submission`, which runs
    it in a child process whose memory and time are limited."""
    files = find_files(path)
    root = Path(path) if Path(path).is_dir() else Path(path).parent
    sources, errors, total = [], [], 0
    for link in symlinks(path):
        errors.append(
            f"{link.relative_to(root)}: a symbolic link, not read (submit the file itself) / "
            f"符号链接，未读取（请提交文件本身）"
        )
    for n_file, f in enumerate(files):
        label = str(f.relative_to(root)) if f != root else f.name
        if n_file >= MAX_FILES:
            errors.append(
                f"{label}: not read: a submission holds at most {MAX_FILES} code files / "
                f"未读取：一份提交最多读取 {MAX_FILES} 个代码文件"
            )
            continue
        try:
            if f.suffix == ".py":
                try:
                    text = _read_bytes(f).decode("utf-8", errors="replace")
                except OSError as e:
                    why = (
                        "a symbolic link"
                        if f.is_symlink()
                        else "too large"
                        if "larger than" in str(e)
                        else type(e).__name__
                    )
                    raise ValueError(f"cannot be read ({why})") from None
                chunks = [(label, str(f), text)]
            else:
                cells = _notebook_cells(f)
                if len(cells) > MAX_CELLS:
                    raise ValueError(f"cannot be read (more than {MAX_CELLS} code cells)")
                chunks = [(f"{label} cell {n}", f"{f}#cell{n}", src) for n, src in cells]
            size = sum(len(code.encode("utf-8", "surrogatepass")) for _, _, code in chunks)
            if size > MAX_CODE_BYTES:
                raise ValueError(
                    f"cannot be read (more than {MAX_CODE_BYTES >> 10} KiB of code; "
                    f"代码超过 {MAX_CODE_BYTES >> 10} KiB)"
                )
            if total + size > MAX_TOTAL_CODE_BYTES:
                raise ValueError(
                    f"not read: a submission holds at most {MAX_TOTAL_CODE_BYTES >> 20} MiB of code / "
                    f"未读取：一份提交最多读取 {MAX_TOTAL_CODE_BYTES >> 20} MiB 代码"
                )
        except ValueError as e:
            errors.append(f"{label}: {e}")
            continue
        total += size
        sources.append((label, f"submission_{f.stem}", str(f), chunks))
    return sources, errors, str(root)


def exec_sources(sources, errors=(), root=None, skip=(), focus=None, needed=()):
    """Run the code read by `read_sources`; never raises for problems in the student's code.
    skip: [chunk label, line, seconds] of statements that ran out of CPU time in an earlier load
    (a restarted worker skips them at once; `Submission.timed_out` lists this load's).

    focus, needed: an exercise's worker needs only the file named after the exercise
    (`attention.ipynb` for `attention`) when that file defines every name in `needed`; the other
    files are then left for `Submission.load_rest` (called when something else is looked up).
    Each file is its own namespace, so what the focus file defines does not depend on them."""
    if root and root not in sys.path:
        sys.path.insert(0, root)  # a student's file may import its sibling
    sub = Submission(load_errors=list(errors))
    budget = {"timed_out": [], "skip": {}}
    for entry in skip or ():
        try:
            budget["skip"][(str(entry[0]), int(entry[1]))] = float(entry[2])
        except (TypeError, ValueError, IndexError):
            continue
    sub._budget = budget
    sub._pending = list(enumerate(sources))
    own = [i for i, (_, _, filename, _) in sub._pending if focus and Path(filename).stem == focus]
    if len(own) == 1:
        sub._run(own)
        ns = sub.modules[0][1]
        if all(n in ns for n in needed):
            return sub
    sub.load_rest()
    return sub


def load_submission(path):
    """Read and run every file of the submission (in this process: only inside a worker)."""
    sources, errors, root = read_sources(path)
    return exec_sources(sources, errors, root)
