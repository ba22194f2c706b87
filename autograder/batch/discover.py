"""Finding the submissions of a class: ``discover(root)``.

Two layouts: nbgrader's ``submitted/<student>/<assignment>/`` (the course root or the submitted/
folder itself; --assignment picks one when there are several), or a flat folder where each .py /
.ipynb file or each sub-folder is one student's submission, named by the file's stem or the
folder's name.  Hidden names (dot-files, the cache folders of store.SKIP_DIRS) are never a
submission, and symbolic links are never followed: a link to a classmate's folder or to the
reference solutions must not be graded as a student's own work (discover warns about them).

A student's id comes from a name the student chose: it is made safe before anything shows or
writes it (`student_id`: no control character, a name that is not UTF-8 shown as \\xNN, at most
ID_BYTES bytes, unique in the class), while the item keeps the real path.
"""

from dataclasses import dataclass
from pathlib import Path

from .. import safe
from ..errors import GraderError, SubmissionNotFound
from ..store import SKIP_DIRS  # noqa: F401 - the hidden-name rule, shared with the store
from ..store import hidden as _hidden

ID_BYTES = 180  # a student id's UTF-8 bytes at most: reports/<id>.json must be a valid file name

CODE_SUFFIXES = (".py", ".ipynb")


@dataclass(frozen=True)
class Item:
    student: str
    path: Path


def discover(root, layout="auto", assignment=None, exclude=()):
    """(layout, [Item], [warning]) for the folder `root`; raises SubmissionNotFound when empty."""
    root = Path(root)
    if not root.exists():
        raise SubmissionNotFound(f"no such folder: {root}")
    if not root.is_dir():
        raise SubmissionNotFound(
            f"{root} is a file; grade-batch grades a folder of submissions "
            f"(grade one file with `python -m autograder grade`)"
        )
    excluded = {Path(p).resolve() for p in exclude}
    _LINKS.clear()
    if layout == "auto":
        layout = "nbgrader" if (root / "submitted").is_dir() or root.name == "submitted" else "flat"
    if layout == "nbgrader":
        items, warnings = _discover_nbgrader(root, assignment, excluded)
    else:
        if assignment:
            raise GraderError("--assignment only applies to nbgrader's layout (submitted/<student>/<assignment>/)")
        items, warnings = _discover_flat(root, excluded)
    if _LINKS:
        warnings.append(
            f"{len(_LINKS)} symbolic link(s) not followed, not graded: "
            + ", ".join(safe.name(p.relative_to(root)) for p in _LINKS[:5])
            + (" ..." if len(_LINKS) > 5 else "")
        )
    items = _unique_ids(items)
    if not items:
        raise SubmissionNotFound(
            f"no submissions in {root}: expected .py / .ipynb files or sub-folders (one per student), "
            f"or nbgrader's submitted/<student>/<assignment>/"
        )
    return layout, items, warnings


_LINKS = []  # symbolic links met by discover (never followed: a link to a classmate's folder or
# to the reference solutions must not be graded as a student's own work)


def _entries(folder, excluded):
    out = []
    for p in sorted(folder.iterdir()):
        if _hidden(p.name) or p.resolve() in excluded:
            continue
        if p.is_symlink():
            _LINKS.append(p)
            continue
        out.append(p)
    return out


def _discover_nbgrader(root, assignment, excluded):
    sub = root / "submitted" if (root / "submitted").is_dir() else root
    students = [p for p in _entries(sub, excluded) if p.is_dir()]
    if not students:
        raise SubmissionNotFound(f"no student folders in {sub} (nbgrader layout: submitted/<student>/<assignment>/)")
    have = {s.name: {a.name for a in _entries(s, excluded) if a.is_dir()} for s in students}
    names = sorted(set().union(*have.values()))
    if not names:
        raise SubmissionNotFound(
            f"no assignment folders in {sub}/<student>/ (nbgrader layout: submitted/<student>/<assignment>/)"
        )
    if assignment is None:
        if len(names) > 1:
            raise GraderError(
                f"{safe.name(sub, 500)} holds several assignments "
                f"({', '.join(map(safe.name, names[:20]))}): choose one with --assignment NAME"
            )
        assignment = names[0]
    elif assignment not in names:
        raise SubmissionNotFound(
            f"no student submitted {safe.name(assignment)!r} in {safe.name(sub, 500)}; "
            f"assignments found: {', '.join(map(safe.name, names[:20]))}"
        )
    items = [Item(s.name, s / assignment) for s in students if assignment in have[s.name]]
    missing = [safe.name(s.name) for s in students if assignment not in have[s.name]]
    warnings = (
        [
            f"{len(missing)} student(s) have no {safe.name(assignment)!r} folder (no row): "
            f"{', '.join(missing[:20])}" + (" ..." if len(missing) > 20 else "")
        ]
        if missing
        else []
    )
    return items, warnings


def _discover_flat(root, excluded):
    found, ignored = [], []
    for p in _entries(root, excluded):
        if p.is_dir() or (p.is_file() and p.suffix in CODE_SUFFIXES):
            found.append(p)
        else:
            ignored.append(p.name)
    stems = [p.stem if p.is_file() else p.name for p in found]
    items, warnings = [], []
    for p, stem in zip(found, stems):
        # alice.py next to alice/ or alice.ipynb: keep both, named by their full names
        items.append(Item(p.name if stems.count(stem) > 1 else stem, p))
    clashes = sorted({safe.name(s) for s in stems if stems.count(s) > 1})
    if clashes:
        warnings.append(f"several submissions share a name ({', '.join(clashes[:20])}): their ids keep the suffix")
    if ignored:
        warnings.append(
            f"ignored {len(ignored)} file(s) that are not .py / .ipynb: "
            f"{', '.join(map(safe.name, ignored[:5]))}" + (" ..." if len(ignored) > 5 else "")
        )
    return items, warnings


def student_id(name):
    """A student's id from the name of their file or folder: safe to show and to write as a file
    name (safe.name; at most ID_BYTES bytes of UTF-8)."""
    text = safe.name(name, ID_BYTES)
    while len(text.encode("utf-8")) > ID_BYTES:
        text = text[:-2] + "…"
    return text or "_"


def _unique_ids(items):
    """The items with safe ids (student_id), made unique with a suffix where two names give one id."""
    out, taken = [], set()
    for item in items:
        base = sid = student_id(item.student)
        n = 1
        while sid in taken:
            n += 1
            sid = f"{base}~{n}"
        taken.add(sid)
        out.append(Item(sid, item.path))
    return out
