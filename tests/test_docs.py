"""The contract lives in the repository: docs/contract.md is word for word the shared contract
(../shared/contract.md, relative to the repository root, where that folder exists: graders outside
this repo rely on it), and nothing the repository ships points outside it."""
import re

from .conftest import ROOT

SHARED = ROOT.parent / "shared" / "contract.md"
# a path of a development machine or a file beside the repository, in prose, comments or code
OUTSIDE = re.compile(r"\.\./shared\b|(?<![\w.])/work/|(?<![\w.])/home/\w|(?<![\w.])/Users/\w")
SHIPPED = ("*.md", "*.py", "*.yml", "*.toml", "*.ipynb", "*.cfg", "*.txt")
NOT_SHIPPED = {".git", ".venv", ".hypothesis", ".pytest_cache", "__pycache__", "out", "grades", "build"}


def test_docs_contract_is_the_shared_contract_word_for_word():
    ours = (ROOT / "docs" / "contract.md").read_bytes()
    assert len(ours) > 1000 and b"# " in ours  # the repository's copy is there, whether ../shared is or not
    if SHARED.exists():
        assert ours == SHARED.read_bytes(), "docs/contract.md differs from ../shared/contract.md: copy it over"


def test_nothing_refers_outside_the_repository():
    import fnmatch
    import os

    this = __file__.rsplit("/", 1)[-1]
    bad, seen = [], 0
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in NOT_SHIPPED and not d.endswith(".egg-info")]
        for name in files:
            if name == this or not any(fnmatch.fnmatch(name, p) for p in SHIPPED):
                continue
            path = os.path.join(folder, name)
            seen += 1
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    if OUTSIDE.search(line):
                        bad.append(f"{os.path.relpath(path, ROOT)}:{n}: {line.strip()[:120]}")
    assert seen > 100 and bad == [], "\n".join(bad)
    assert "docs/contract.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`contract.md`" in (ROOT / "docs" / "contract-extra.md").read_text(encoding="utf-8")  # its neighbour
