"""`seqgrader student-kit DIR`: what students of a course without nbgrader get -- the notebooks
(stubs, 0-point visible checks, hidden-tests cells that only say when they run) and conftest.py --
and nothing of the grader: no reference solution, no property, no import of this package.
(`pytest` in such a folder, with only the student packages, runs in tests/test_nbgrader.py.)"""

import ast
import json
import re
import sys

import nbformat

from autograder.cli import main
from autograder.nbgrader_course.build import KIT_CONFTEST, KIT_SUBMIT
from autograder.nbgrader_course.preprocessor import hidden_call

from .conftest import ROOT


def test_student_kit_holds_notebooks_and_conftest_and_no_answers(tmp_path, capsys):
    kit = tmp_path / "kit"
    assert main(["student-kit", str(kit), "--course", str(ROOT), "--assignment", "sequence-models"]) == 0
    assert "pytest" in capsys.readouterr().out
    names = {p.name for p in kit.iterdir()}
    assert names == {
        "masks.ipynb",
        "positional_encoding.ipynb",
        "attention.ipynb",
        "recurrent.ipynb",
        "masked_loss.ipynb",
        "conftest.py",
        "submit.py",
        "submit.json",
    }, names
    assert (kit / "conftest.py").read_bytes() == KIT_CONFTEST.read_bytes()
    assert (kit / "submit.py").read_bytes() == KIT_SUBMIT.read_bytes()
    assert json.loads((kit / "submit.json").read_text()) == {"assignment": "sequence-models"}
    conftest = (kit / "conftest.py").read_text(encoding="utf-8")
    assert not re.search(r"^\s*(import|from) (autograder|hypothesis)", conftest, re.M)
    for ex in ("masks", "attention"):
        nb = nbformat.read(str(kit / f"{ex}.ipynb"), as_version=4)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        ref = (ROOT / "solutions" / f"{ex}.py").read_text(encoding="utf-8")
        body = [
            ln.strip()
            for ln in ref.splitlines()
            if len(ln.strip()) > 30 and not ln.strip().startswith(("#", "def ", "class ", '"""'))
        ]
        assert body and not [ln for ln in body if ln in code], f"reference lines in the kit's {ex}.ipynb"
        assert "BEGIN SOLUTION" not in code and "raise NotImplementedError" in code
        assert not re.search(r"^\s*(import|from) autograder", code, re.M)
        hidden = [c for c in nb.cells if hidden_call(c.source)]
        visible = [c for c in nb.cells if c.source.startswith("# autograder: visible checks")]
        assert hidden and len(hidden) == len(visible) and all(c.metadata.nbgrader.points == 0 for c in visible)
    # an existing, non-empty folder is not overwritten by accident
    assert main(["student-kit", str(kit), "--course", str(ROOT)]) == 2


def test_the_kit_submit_script_needs_only_the_standard_library_and_knows_the_service(tmp_path, capsys):
    kit = tmp_path / "kit"
    assert main(["student-kit", str(kit), "--course", str(ROOT), "--service-url", "https://grader.example.edu/c1"]) == 0
    assert "grader.example.edu" in capsys.readouterr().out
    assert json.loads((kit / "submit.json").read_text()) == {
        "assignment": "sequence-models",
        "url": "https://grader.example.edu/c1/",
    }
    tree = ast.parse((kit / "submit.py").read_text(encoding="utf-8"))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    imported -= {"IPython"}  # asked, in a notebook only, to make the browser save
    assert imported and imported <= set(sys.stdlib_module_names), sorted(imported - set(sys.stdlib_module_names))
