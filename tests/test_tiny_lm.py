"""The tiny causal language model: the exercise `tiny_lm`, alone in the assignment
sequence-models-3.

Fast: course.yml adds the assignment (100 points) and leaves the others alone, docs/contract-extra.md
names every function, the catalogue is large enough and covers every function, the notebook has a
stub for each pasted part and the nbgrader course fills every stub with the reference, and the
properties accept the reference and reject a few catalogued mistakes in this process (no sandbox).
Slow: the reference and every correct variant in tests/files/correct_extra/*/tiny_lm.py get full
marks from the command line, the reference quickly.  (Each catalogued mistake is graded through the
sandbox by tests/test_catalogue.py, within sequence-models-3.)
"""

import re
import time

import pytest

from autograder.catalogue import load_catalogue
from autograder.config import load_course

from .conftest import ROOT, failures_in_process, reference_with

EX = "tiny_lm"
ASSIGNMENT = "sequence-models-3"
FUNCTIONS = ["init_tiny_lm", "tiny_lm_logits", "tiny_lm_loss", "train_tiny_lm"]
PARTS = ["padding_mask", "causal_mask", "sinusoidal_encoding", "scaled_dot_product_attention", "masked_cross_entropy"]
VARIANTS = sorted(p for p in (ROOT / "tests" / "files" / "correct_extra").glob("*/tiny_lm.py"))


# ---------------------------------------------------------------- course.yml, docs, catalogue


def test_own_assignment_worth_100_and_the_others_untouched():
    course = load_course()
    assert course.assignment(ASSIGNMENT) == [EX]
    assert course.exercises[EX].max_score == 100
    assert course.assignment() == ["masks", "positional_encoding", "attention", "recurrent", "masked_loss"]
    assert course.assignment("sequence-models-2") == ["rope", "timeseries", "bert_masking"]
    graded = {name.split("/", 1)[0] for name in course.exercises[EX].tests}
    assert graded == set(FUNCTIONS)


def test_contract_extra_documents_every_function():
    text = (ROOT / "docs" / "contract-extra.md").read_text(encoding="utf-8")
    assert f"### `{EX}`" in text and ASSIGNMENT in text
    for fn in FUNCTIONS:
        assert re.search(rf"^- `{fn}\(", text, re.M), f"{fn} is not documented like the contract"


def test_catalogue_covers_every_function():
    entries = [e for _, e in load_catalogue(EX)]
    assert len(entries) >= 12, f"only {len(entries)} catalogued mistakes"
    assert {e["function"] for e in entries} == set(FUNCTIONS)
    assert all(e["id"].startswith("tiny_lm_") for e in entries)
    tests = set(load_course().exercises[EX].tests)
    for e in entries:
        assert {f"{t}" for t in e["expect_failing"]} <= tests, e["id"]


# ---------------------------------------------------------------- the notebook and the nbgrader course


def _nbgrader(cell):
    return cell.get("metadata", {}).get("nbgrader") or {}


def test_notebook_has_a_stub_per_part_then_the_exercise():
    import nbformat

    nb = nbformat.read(str(ROOT / "exercises" / f"{EX}.ipynb"), as_version=4)
    stubs = [_nbgrader(c)["grade_id"] for c in nb.cells if _nbgrader(c).get("solution")]
    assert stubs == PARTS + FUNCTIONS
    checks = [_nbgrader(c)["grade_id"] for c in nb.cells if _nbgrader(c).get("grade")]
    assert checks == [f"test_{fn}" for fn in FUNCTIONS]
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "粘贴" in text and "Paste your own" in text and "动手检查 / Check by hand" in text


def test_nbgrader_course_puts_the_reference_into_every_stub():
    from autograder.nbgrader_course.build import source_notebook

    nb = source_notebook(EX, load_course(), ROOT / "exercises", ROOT / "solutions")
    regions = [
        _nbgrader(c)["grade_id"] for c in nb.cells if _nbgrader(c).get("solution") and "### BEGIN SOLUTION" in c.source
    ]
    assert regions == PARTS + FUNCTIONS
    hidden = [_nbgrader(c)["grade_id"] for c in nb.cells if _nbgrader(c).get("grade_id", "").startswith("hidden_")]
    assert hidden == [f"hidden_{fn}" for fn in FUNCTIONS]


# ---------------------------------------------------------------- the properties, in this process


def _failures(code=None, only=None):
    """{property: message} of the tiny_lm properties that fail on the reference (+ code)."""
    return failures_in_process(EX, reference_with(EX, code), only)


@pytest.fixture(scope="module", autouse=True)
def _one_thread(one_thread):
    pass


def test_properties_accept_the_reference_in_process():
    assert _failures() == {}


@pytest.mark.parametrize(
    "mistake", ["tiny_lm_no_causal_mask", "tiny_lm_loss_includes_last_position", "tiny_lm_mask_sized_by_longest"]
)
def test_boundary_mistakes_fail_their_boundary_property_in_process(mistake):
    entry = next(e for _, e in load_catalogue(EX) if e["id"] == mistake)
    boundary = [t for t in entry["expect_failing"] if "future" in t or "padding" in t]
    failed = _failures(entry["code"], only=boundary)
    assert set(failed) == set(boundary), (mistake, failed)


# ---------------------------------------------------------------- full marks


@pytest.mark.slow
def test_reference_gets_full_marks_quickly(grade_cli):
    start = time.monotonic()
    proc, report = grade_cli(ROOT / "solutions", "--assignment", ASSIGNMENT)
    wall = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    assert [e["id"] for e in report["exercises"]] == [EX]
    assert report["score"] == report["max_score"] == 100
    seconds = sum(t.get("seconds") or 0 for e in report["exercises"] for t in e["tests"])
    assert seconds < 20, f"the tests of tiny_lm took {seconds:.1f} s on the reference"
    assert wall < 90, f"grading the reference took {wall:.0f} s"


@pytest.mark.slow
@pytest.mark.parametrize("path", VARIANTS, ids=[p.parent.name for p in VARIANTS])
def test_correct_variant_gets_full_marks(path, grade_cli):
    proc, report = grade_cli(path, "--assignment", ASSIGNMENT)
    assert proc.returncode == 0, proc.stderr
    lost = {t["name"]: t["feedback"] for e in report["exercises"] for t in e["tests"] if not t["passed"]}
    assert not lost, f"{path.parent.name} lost points:\n" + "\n\n".join(f"{k}\n{v}" for k, v in lost.items())
    assert report["score"] == report["max_score"] == 100


def test_there_are_two_correct_variants():
    assert len(VARIANTS) >= 2
