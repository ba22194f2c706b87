"""Loading submissions: notebooks, folders, magics, graded test cells."""

import nbformat
import pytest

from autograder.errors import SubmissionNotFound
from autograder.load import find_files, load_submission

from .conftest import ROOT


def _nb(path, cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nbformat.write(nb, path)


def test_notebook_cells_run_in_order_skipping_magics_and_graded_test_cells(tmp_path):
    test_cell = nbformat.v4.new_code_cell("raise AssertionError('visible test')")
    test_cell.metadata["nbgrader"] = {"grade": True, "solution": False, "points": 1, "grade_id": "t"}
    _nb(
        tmp_path / "a.ipynb",
        [
            nbformat.v4.new_code_cell("%matplotlib inline\n!pip install nothing\nx = 1"),
            test_cell,
            nbformat.v4.new_code_cell("def f():\n    return x + 1"),
            nbformat.v4.new_code_cell("1 / 0"),
            nbformat.v4.new_code_cell("def g():\n    return 3"),
        ],
    )
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


def _sources(tmp_path):
    from autograder.load import read_sources

    return read_sources(tmp_path)


def test_a_focus_file_that_defines_what_is_needed_runs_alone(tmp_path):
    from autograder.load.submission import exec_sources

    (tmp_path / "attention.py").write_text("raise RuntimeError('attention ran')\n")
    (tmp_path / "masks.py").write_text("def causal_mask(T):\n    return T\nstate = 'masks'\n")
    (tmp_path / "z_other.py").write_text("def helper():\n    return 'other'\n")
    sources, errors, root = _sources(tmp_path)
    sub = exec_sources(sources, errors, root, focus="masks", needed=["causal_mask"])
    assert [m[0] for m in sub.modules] == ["masks.py"] and sub.partial
    assert sub.load_errors == []  # attention.py did not run
    assert sub.get("helper") is None
    sub.load_rest()  # what a worker does when the judge looks up a name the focus file lacks
    assert not sub.partial and [m[0] for m in sub.modules] == ["attention.py", "masks.py", "z_other.py"]
    assert sub.get("helper")() == "other" and sub.get("causal_mask", prefer="masks")(3) == 3
    assert len(sub.load_errors) == 1 and "attention ran" in sub.load_errors[0]


def test_a_focus_file_missing_a_needed_name_loads_everything(tmp_path):
    from autograder.load.submission import exec_sources

    (tmp_path / "masks.py").write_text("def causal_mask(T):\n    return T\n")
    (tmp_path / "scratch.py").write_text("def padding_mask(lengths):\n    return 'scratch'\n")
    sources, errors, root = _sources(tmp_path)
    sub = exec_sources(sources, errors, root, focus="masks", needed=["causal_mask", "padding_mask"])
    assert not sub.partial and sub.get("padding_mask", prefer="masks")(1) == "scratch"
    # no file named after the exercise (one .py for everything): everything, as without a focus
    sub = exec_sources(sources, errors, root, focus="attention", needed=["scaled_dot_product_attention"])
    assert not sub.partial and len(sub.modules) == 2


MASKS_NB = (
    "import torch\n"
    "def padding_mask(lengths, max_len=None):\n"
    "    T = int(lengths.max()) if max_len is None else max_len\n"
    "    return torch.arange(T)[None, :] < lengths[:, None]\n"
    "def causal_mask(T, device=None):\n    return torch.ones(T, T, dtype=torch.bool).tril()\n"
    "def attention_mask(lengths, causal=False):\n    return None\n"
)


def _worker(folder, exercise):
    import torch

    from autograder.judge.remote import RemoteStudent, Zygote
    from autograder.load import read_sources
    from autograder.properties import load_all

    torch.set_num_threads(1)
    load_all()  # the judge knows which functions each exercise needs
    sources, errors, root = read_sources(folder)
    zygote = Zygote(sources, errors, root, [str(folder)], None)
    return zygote, RemoteStudent(zygote, exercise, 20, errors)


def test_each_exercise_worker_pays_only_for_its_own_notebook(tmp_path):
    """A worker grading `masks` does not run attention.ipynb (an endless loop at top level, then
    an exit); it runs the other files only when asked for a name its own file lacks."""
    import time

    from autograder.errors import StudentCrash

    _nb(
        tmp_path / "attention.ipynb",
        [nbformat.v4.new_code_cell("while True:\n    pass"), nbformat.v4.new_code_cell("import os\nos._exit(3)")],
    )
    _nb(tmp_path / "masks.ipynb", [nbformat.v4.new_code_cell(MASKS_NB)])
    zygote, student = _worker(tmp_path, "masks")
    try:
        t = time.monotonic()
        student.start()
        assert time.monotonic() - t < 2.5  # the endless loop would take 3 s of CPU, then os._exit
        assert student.partial and student.load_errors == []
        assert student.call("causal_mask", 2).tolist() == [[True, False], [True, True]]
        with pytest.raises(StudentCrash, match="exit status 3"):  # only now do the other files run
            student.lookup("no_such_function")
    finally:
        student.abort()
        zygote.close()

    other = tmp_path / "other"
    other.mkdir()
    _nb(other / "masks.ipynb", [nbformat.v4.new_code_cell(MASKS_NB)])
    (other / "util.py").write_text("def extra():\n    return 41 + 1\n1 / 0\n")
    zygote, student = _worker(other, "masks")
    try:
        student.start()
        assert student.partial and student.load_errors == []
        assert student.call("extra") == 42  # only util.py has it: the worker ran the other files
        assert not student.partial and any("ZeroDivisionError" in e for e in student.load_errors)
    finally:
        student.abort()
        zygote.close()


def test_a_link_is_read_only_where_the_built_in_course_links_its_own_solutions(tmp_path):
    """solutions/<exercise>.py of the built-in course links to autograder/exercises/<exercise>/solution.py
    and is read there; the same link in any other folder (a student's) is never followed."""
    from autograder.load import find_files
    from autograder.load.submission import course_link, read_sources, symlinks

    reference = ROOT / "autograder" / "exercises" / "masks" / "solution.py"
    sub = tmp_path / "alice"
    sub.mkdir()
    (sub / "masks.py").symlink_to(reference)
    (sub / "attention.py").write_text("x = 1\n", encoding="utf-8")
    assert not course_link(sub / "masks.py")
    assert [p.name for p in find_files(sub)] == ["attention.py"]
    assert [p.name for p in symlinks(sub)] == ["masks.py"]
    links = sorted((ROOT / "solutions").glob("*.py"))
    assert links and all(p.is_symlink() and course_link(p) for p in links)
    assert find_files(ROOT / "solutions") == links and not symlinks(ROOT / "solutions")
    files, _errors, _root = read_sources(ROOT / "solutions")
    codes = [code for _label, _mod, _filename, chunks in files for _chunk, _fn, code in chunks]
    assert reference.read_text(encoding="utf-8") in codes
