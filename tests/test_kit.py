"""`seqgrader student-kit DIR`: what students of a course without nbgrader get -- the notebooks
(stubs, 0-point visible checks, hidden-tests cells that only say when they run) and conftest.py --
and nothing of the grader: no reference solution, no property, no import of this package.
(`pytest` in such a folder, with only the student packages, runs in tests/test_nbgrader.py.)"""
import re

import nbformat

from autograder.cli import main
from autograder.nbgrader_course.build import KIT_CONFTEST
from autograder.nbgrader_course.preprocessor import hidden_call

from .conftest import ROOT


def test_student_kit_holds_notebooks_and_conftest_and_no_answers(tmp_path, capsys):
    kit = tmp_path / "kit"
    assert main(["student-kit", str(kit), "--course", str(ROOT), "--assignment", "sequence-models"]) == 0
    assert "pytest" in capsys.readouterr().out
    names = {p.name for p in kit.iterdir()}
    assert names == {"masks.ipynb", "positional_encoding.ipynb", "attention.ipynb", "recurrent.ipynb",
                     "masked_loss.ipynb", "conftest.py"}, names
    assert (kit / "conftest.py").read_bytes() == KIT_CONFTEST.read_bytes()
    conftest = (kit / "conftest.py").read_text(encoding="utf-8")
    assert not re.search(r"^\s*(import|from) (autograder|hypothesis)", conftest, re.M)
    for ex in ("masks", "attention"):
        nb = nbformat.read(str(kit / f"{ex}.ipynb"), as_version=4)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        ref = (ROOT / "solutions" / f"{ex}.py").read_text(encoding="utf-8")
        body = [ln.strip() for ln in ref.splitlines() if len(ln.strip()) > 30 and not ln.strip().startswith(("#", "def ", "class ", '"""'))]
        assert body and not [ln for ln in body if ln in code], f"reference lines in the kit's {ex}.ipynb"
        assert "BEGIN SOLUTION" not in code and "raise NotImplementedError" in code
        assert not re.search(r"^\s*(import|from) autograder", code, re.M)
        hidden = [c for c in nb.cells if hidden_call(c.source)]
        visible = [c for c in nb.cells if c.source.startswith("# autograder: visible checks")]
        assert hidden and len(hidden) == len(visible) and all(c.metadata.nbgrader.points == 0 for c in visible)
    # an existing, non-empty folder is not overwritten by accident
    assert main(["student-kit", str(kit), "--course", str(ROOT)]) == 2
