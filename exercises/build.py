"""Write the exercise notebooks exercises/<name>.ipynb from their sources
autograder/exercises/<name>/notebook.py, and link each reference solution
autograder/exercises/<name>/solution.py into the built-in course as solutions/<name>.py.

    .venv/bin/python exercises/build.py            # rewrite every notebook from its source, refresh the links
    .venv/bin/python exercises/build.py --check    # exit 1 naming the notebooks and links that are out of date

A source is its notebook in Jupytext's percent format: the text and code exactly as the student sees
them, one cell after each header line

    # %% <cell id> [markdown] nbgrader={...}      an instruction (each line of text behind "# ")
    # %% <cell id> nbgrader={...}                 code: set-up, a stub, visible checks
    # %% <cell id>                                code without nbgrader metadata (a check by hand, a picture)

The cell id (letters, digits, "_" and "-") becomes the notebook cell's id and must equal its nbgrader
grade_id.  nbgrader metadata (schema 3):
  instructions (markdown, set-up code)  grade=false solution=false locked=true
  stubs                                 grade=false solution=true  locked=false  grade_id=<function>
  visible checks                        grade=true  solution=false locked=true   grade_id=test_<function>, points
  answers graded by hand (markdown)     grade=true  solution=true  locked=false  points
Checks by hand and pictures carry none: students may play with them.  The notebooks have no outputs
and the same notebook metadata (the kernel python3); the tests in tests/test_notebooks.py check the rest.
"""
import argparse
import os
import re
import sys
from pathlib import Path

import jupytext
import nbformat

HERE = Path(__file__).resolve().parent
SOURCES = HERE.parent / "autograder" / "exercises"  # <name>/notebook.py, <name>/solution.py
NOTEBOOK, SOLUTION = "notebook.py", "solution.py"
METADATA = {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
            "language_info": {"name": "python"}}
CELL_ID = re.compile(r"[A-Za-z0-9_-]+")
HEADER = "# %%"


class SourceError(Exception):
    """A source that does not make a notebook (the message names the file and the line)."""


def build(source):
    """The text of the notebook written from `source` (a path), as exercises/<name>.ipynb holds it."""
    text = source.read_text(encoding="utf-8")
    headers = [n for n, line in enumerate(text.splitlines(), 1) if line.startswith(HEADER)]
    if not text.startswith(HEADER):
        raise SourceError(f"{source}:1: a source starts with a cell header `# %% <cell id> ...`")
    try:
        nb = jupytext.reads(text, fmt="py:percent")
    except Exception as e:  # noqa: BLE001 - whatever jupytext cannot read, say where
        raise SourceError(f"{source}: jupytext cannot read it: {e}") from e
    if len(nb.cells) != len(headers):
        raise SourceError(f"{source}: {len(headers)} cell headers but jupytext reads {len(nb.cells)} cells")
    nb.metadata = nbformat.from_dict(METADATA)
    seen = set()
    for line, cell in zip(headers, nb.cells):
        where = f"{source}:{line}"
        if "incorrectly_encoded_metadata" in cell.metadata:
            raise SourceError(f"{where}: cannot read the metadata {cell.metadata['incorrectly_encoded_metadata']}"
                              " (key=JSON, e.g. nbgrader={\"grade\": false, ...})")
        cell.id = cell.metadata.pop("title", "")
        if not CELL_ID.fullmatch(cell.id):
            raise SourceError(f"{where}: a cell header is `# %% <cell id> [markdown] key=value`, the id made of "
                              f"letters, digits, _ and -; got the id {cell.id!r}")
        if cell.id in seen:
            raise SourceError(f"{where}: a second cell with the id {cell.id!r}")
        seen.add(cell.id)
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", cell.id)
        if grade_id != cell.id:
            raise SourceError(f"{where}: the cell {cell.id!r} has the nbgrader grade_id {grade_id!r}: make them equal")
        cell.metadata.pop("lines_to_next_cell", None)  # the blank lines of the source, not the notebook's
        cell.source = cell.source.strip("\n")
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as e:
        raise SourceError(f"{source}: not a valid notebook: {e.message}") from e
    return nbformat.writes(nb) + "\n"


def link_target(solution, link):
    """The relative path the link `link` (solutions/<name>.py) holds to reach `solution`."""
    return os.path.relpath(solution, link.parent)


def link_state(solution, link):
    """None when `link` is a link to `solution`; else what is wrong, or SourceError for a file of its
    own there (a course author's edit, never overwritten)."""
    if link.is_symlink():
        return None if os.readlink(link) == link_target(solution, link) else "links elsewhere"
    if not link.exists():
        return "missing"
    if link.read_bytes() != solution.read_bytes():
        raise SourceError(f"{link} is a file that differs from {solution}: edit the solution there and delete {link}")
    return "a copy"


def main(argv=None):
    """The command line (see the module docstring); the exit status."""
    parser = argparse.ArgumentParser(
        prog="exercises/build.py", description="Write the exercise notebooks from their Jupytext sources "
        "(percent format): SRC/<name>/notebook.py -> OUT/<name>.ipynb, and link each SRC/<name>/solution.py "
        "as SOLUTIONS/<name>.py.",
        epilog="Edit autograder/exercises/<name>/notebook.py, run this script, commit the source and its notebook. "
        "Exit status: 0 done (or, with --check, every notebook and link up to date); 1 with --check, some "
        "notebook or link is out of date or missing; 2 a source is malformed.")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; name the notebooks and links that are out of date and exit 1")
    parser.add_argument("--src", type=Path, default=SOURCES,
                        help="folder of the exercises' folders <name>/notebook.py (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=HERE, help="folder of the notebooks (default: %(default)s)")
    parser.add_argument("--solutions", type=Path, default=None,
                        help="folder of the solutions' links (default: solutions/ next to OUT)")
    args = parser.parse_args(argv)
    solutions = args.solutions or args.out.parent / "solutions"
    sources = sorted(args.src.glob(f"*/{NOTEBOOK}"))
    if not sources:
        parser.error(f"no source <name>/{NOTEBOOK} in {args.src}")
    built, links, errors = {}, {}, []
    for source in sources:  # every source is read before any notebook is written
        name = source.parent.name
        try:
            built[args.out / f"{name}.ipynb"] = build(source).encode("utf-8")
            solution = source.parent / SOLUTION
            if solution.is_file():
                link = solutions / f"{name}.py"
                if link_state(solution, link) is not None:
                    links[link] = solution
        except SourceError as e:
            errors.append(f"error: {e}")
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 2
    stale, written = [], 0
    for path, data in built.items():
        if path.exists() and path.read_bytes() == data:
            continue
        if args.check:
            stale.append(path.name)
        else:
            path.write_bytes(data)
            written += 1
            print(f"wrote {path}")
    for link, solution in links.items():
        if args.check:
            stale.append(f"{solutions.name}/{link.name}")
        else:
            solutions.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(link_target(solution, link))
            written += 1
            print(f"linked {link} -> {link_target(solution, link)}")
    if stale:
        print(f"out of date, rebuild them with exercises/build.py: {', '.join(stale)}")
        return 1
    if not written:
        print(f"{len(built)} notebooks, all up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
