"""The contract's functions of each submission, read (never run), and the code everyone shares.

``contract_functions(course, exercises)``  {function: exercise}: the top-level functions and
                                           classes of the reference solutions (solutions/<ex>.py)
``functions_of(path, names)``              {function: Source} of one submission, read by the
                                           limited reader (load/reader.py: code only, capped):
                                           every .py file and notebook code cell is parsed with ``ast`` and the
                                           last definition of each name wins, as when the cells
                                           run in order; a file or cell that does not parse is
                                           skipped (students paste functions into different
                                           files and cells: where one is does not matter)
``shared_sources(course, exercises, extra)``  what is never evidence: the release's starter code
                                           (the stubs of exercises/*.ipynb: imports, docstrings,
                                           signatures), the reference solutions, the catalogued
                                           mistakes' code, and every .py / .ipynb under the
                                           folders given with --exclude (known public sources)
"""

import ast
from dataclasses import dataclass
from pathlib import Path

from ..load import source
from ..load.reader import read_submission
from .normalize import aliases, resolve

MAX_DEFINITION_CHARS = 16 << 10  # a definition longer than this is not compared (no function of the chapter is)


@dataclass
class Source:
    """One definition: its name, the text of the cell or file it is in, its node, where it is."""

    name: str
    text: str  # the definition's own lines
    node: ast.AST  # its tree, with the line numbers of `where`
    where: str  # "alice/masks.py" or "alice.ipynb cell 4"
    first_line: int  # the definition's first line in `where` (a fingerprint's lines count from it: 1)
    resolved: str = ""  # when the submission's aliases or helpers changed `node`: its tree, dumped

    @property
    def key(self):
        """What the fingerprints depend on: the text, and what was resolved in it."""
        return self.text + "\0" + self.resolved


def contract_functions(course, exercises):
    """{name: exercise} of the public functions and classes of `exercises`' reference solutions (a
    name defined twice keeps the first exercise)."""
    out = {}
    for ex in exercises:
        path = course.solutions_dir / f"{ex}.py"
        if not path.is_file():
            continue
        for node in source.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                out.setdefault(node.name, ex)
    return out


def chunks(path):
    """[(where, code)] of a submission (a file or a folder): .py files whole, notebooks cell by cell
    (nbgrader's own test cells and shell / magic lines left out, as the loader does), read in a
    child process of bounded memory (load/reader.py) with the loader's caps."""
    path = Path(path)
    top = (path if path.is_dir() else path.parent).name
    try:
        reading = read_submission(path)
    except Exception:  # noqa: BLE001 - nothing readable: no function
        return []
    return [(f"{top}/{label}", code) for _, _, _, pieces in reading.sources for label, _, code in pieces]


def definitions(text, where, names=None, tree=None):
    """{name: Source} of the top-level definitions in `text` (only `names` when given; `tree`:
    the text already parsed)."""
    out = {}
    lines = text.splitlines()
    for node in (tree if tree is not None else source.parse(text)).body:
        if isinstance(node, source.DEFINITIONS) and (names is None or node.name in names):
            start = node.lineno - len(node.decorator_list)
            body = "\n".join(lines[start - 1 : node.end_lineno])
            if len(body) > MAX_DEFINITION_CHARS:
                continue
            out[node.name] = Source(node.name, body, node, where, start)
    return out


def functions_of(path, names):
    """{function: Source} of one submission (the last definition of each name wins).  Each
    function's tree has the submission's module aliases written as the module (`th.matmul` as
    `torch.matmul` after `import torch as th`, in whichever file or cell the import is) and the
    calls of the student's own one-expression helper functions replaced by the expression."""
    return _resolved(chunks(path), names, names)


def _resolved(pieces, names, contract):
    """{name: Source} of the definitions in `pieces` ([(where, code)]; only `names`, or all when
    None), with the aliases and the helpers (the other top-level functions, not in `contract`) of
    all the pieces resolved (normalize.resolve)."""
    out, modules, helpers = {}, [], {}
    for where, text in pieces:
        modules.append(source.parse(text))
        out.update(definitions(text, where, names, modules[-1]))
        for node in modules[-1].body:
            if isinstance(node, ast.FunctionDef) and node.name not in contract:
                helpers[node.name] = node
    alias = aliases(modules)
    if not alias and not helpers:
        return out
    for src in out.values():
        used = {n.id for n in ast.walk(src.node) if isinstance(n, ast.Name)}
        if used & set(alias) or used & set(helpers):
            before = ast.dump(src.node)
            resolve(src.node, alias, helpers)
            after = ast.dump(src.node)
            if after != before:
                src.resolved = after
    return out


def shared_sources(course, exercises, extra=()):
    """[(what, label, [Source])]: the code whose fingerprints are never evidence."""
    out = []
    stubs = []
    contract = set(contract_functions(course, exercises))
    for ex in exercises:
        nb = Path(course.exercises_dir) / f"{ex}.ipynb"
        if nb.is_file():
            stubs.extend(_resolved(chunks(nb), None, contract).values())
    out.append(("starter", "exercises/*.ipynb", stubs))
    ref = []
    for ex in exercises:
        path = course.solutions_dir / f"{ex}.py"
        if path.is_file():
            ref.extend(_resolved([(f"solutions/{ex}.py", path.read_text(encoding="utf-8"))], None, contract).values())
    out.append(("reference", "solutions/*.py", ref))
    from ..catalogue import load_catalogue

    mistakes = []
    for ex in exercises:
        try:
            entries = load_catalogue(ex)
        except Exception:  # noqa: BLE001 - an exercise without a catalogue
            continue
        for _, entry in entries:
            mistakes.extend(
                _resolved([(f"catalogue {entry.get('id')}", entry.get("code") or "")], None, contract).values()
            )
    out.append(("catalogue", "autograder/exercises/*/mistakes.yml", mistakes))
    for folder in extra:
        found = []
        folder = Path(folder)
        files = [folder] if folder.is_file() else sorted(p for p in folder.rglob("*") if p.suffix in (".py", ".ipynb"))
        for f in files:
            found.extend(_resolved(chunks(f), None, contract).values())
        out.append(("excluded", str(folder), found))
    return out
