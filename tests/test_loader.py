"""Loading submissions: notebooks, folders, magics, graded test cells."""
import nbformat
import pytest

from autograder.errors import SubmissionNotFound
from autograder.load import find_files, load_submission


def _nb(path, cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nbformat.write(nb, path)


def test_notebook_cells_run_in_order_skipping_magics_and_graded_test_cells(tmp_path):
    test_cell = nbformat.v4.new_code_cell("raise AssertionError('visible test')")
    test_cell.metadata["nbgrader"] = {"grade": True, "solution": False, "points": 1, "grade_id": "t"}
    _nb(tmp_path / "a.ipynb", [
        nbformat.v4.new_code_cell("%matplotlib inline\n!pip install nothing\nx = 1"),
        test_cell,
        nbformat.v4.new_code_cell("def f():\n    return x + 1"),
        nbformat.v4.new_code_cell("1 / 0"),
        nbformat.v4.new_code_cell("def g():\n    return 3"),
    ])
    sub = load_submission(tmp_path / "a.ipynb")
    assert sub.get("f")() == 2 and sub.get("g")() == 3
    assert len(sub.load_errors) == 1 and "ZeroDivisionError" in sub.load_errors[0]
    assert "cell 4" in sub.load_errors[0]


def test_folder_prefers_the_file_named_after_the_exercise(tmp_path):
    (tmp_path / "a_scratch.py").write_text("def f():\n    return 'scratch'\n")
    (tmp_path / "masks.py").write_text("def f():\n    return 'masks'\n")
    (tmp_path / "test_mine.py").write_text("raise SystemExit\n")
    sub = load_submission(tmp_path)
    assert sub.get("f", prefer="masks")() == "masks"
    assert sub.get("f")() == "scratch"
    assert [p.name for p in find_files(tmp_path)] == ["a_scratch.py", "masks.py"]


def test_a_sibling_import_works(tmp_path):
    (tmp_path / "helpers.py").write_text("K = 7\n")
    (tmp_path / "main.py").write_text("from helpers import K\ndef f():\n    return K\n")
    assert load_submission(tmp_path).get("f")() == 7


def test_not_a_submission(tmp_path):
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(SubmissionNotFound):
        find_files(tmp_path / "notes.txt")
    with pytest.raises(SubmissionNotFound):
        find_files(tmp_path)
