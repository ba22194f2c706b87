"""The rest of the chapter: rope, timeseries, bert_masking, in the assignment sequence-models-2.

Fast: course.yml's assignments (the default one keeps the five core exercises and 100 points, the
second one is worth 100), docs/contract-extra.md names every function, the catalogue of each new
exercise is large, the exact binomial bound of bert_masking is right (checked against brute
force), and the statistical properties accept the reference on fresh random batches.
Slow: the reference solutions and every correct variant in tests/files/correct_extra/ get full
marks from the command line.  (Each catalogued mistake is graded by tests/test_catalogue.py.)
"""

import math
import random
import re
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from autograder import EXERCISES as CORE
from autograder.catalogue import load_catalogue
from autograder.config import load_course

from .conftest import ROOT

EXTRA = {
    "rope": ["rope_angles", "apply_rope"],
    "timeseries": ["chronological_split", "fit_standardizer", "sliding_windows", "make_datasets"],
    "bert_masking": ["special_tokens_mask", "mlm_mask"],
}
ASSIGNMENT = "sequence-models-2"
CORRECT_EXTRA = sorted(p for p in (ROOT / "tests" / "files" / "correct_extra").iterdir() if p.is_dir())


# ---------------------------------------------------------------- course.yml and docs


def test_assignments_keep_the_core_and_add_the_rest_worth_100():
    course = load_course()
    names = course.assignment_names()
    assert names[0] == "sequence-models" and course.assignment() == list(CORE)
    assert sum(course.exercises[e].max_score for e in course.assignment()) == 100
    assert course.assignment(ASSIGNMENT) == list(EXTRA)
    assert sum(course.exercises[e].max_score for e in course.assignment(ASSIGNMENT)) == 100
    for ex, functions in EXTRA.items():
        graded = {name.split("/", 1)[0] for name in course.exercises[ex].tests}
        assert graded == set(functions), ex


def test_contract_extra_documents_every_function():
    text = (ROOT / "docs" / "contract-extra.md").read_text(encoding="utf-8")
    for ex, functions in EXTRA.items():
        assert f"### `{ex}`" in text, ex
        for fn in functions:
            assert re.search(rf"^- `{fn}\(", text, re.M), f"{fn} is not documented like the contract"


def test_each_new_exercise_has_a_large_catalogue():
    for ex in EXTRA:
        entries = [e for _, e in load_catalogue(ex)]
        assert len(entries) >= 10, f"{ex}: only {len(entries)} catalogued mistakes"
        assert {e["function"] for e in entries} == set(EXTRA[ex]), f"{ex}: every function needs a catalogued mistake"
    rope = {e["id"]: e for _, e in load_catalogue("rope")}
    assert rope["rope_half_split_layout"]["expect_failing"] == ["apply_rope/matches_reference"]


# ---------------------------------------------------------------- the binomial bound


def _exact_tails(n, p):
    """P(X < k) and P(X > k) for k = 0..n, in exact rational arithmetic."""
    p = Fraction(p)
    pmf = [math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]
    below = [sum(pmf[:k]) for k in range(n + 1)]
    above = [sum(pmf[k + 1 :]) for k in range(n + 1)]
    return below, above


@pytest.mark.parametrize("n,p,delta", [(30, 0.15, 1e-3), (60, 0.8, 1e-6), (40, 0.1, 1e-4), (25, 0.5, 0.05)])
def test_binomial_interval_is_exact(n, p, delta):
    from autograder.exercises.bert_masking.properties import binomial_interval

    lo, hi = binomial_interval(n, p, delta)
    below, above = _exact_tails(n, p)
    side = Fraction(delta) / 2
    assert below[lo] <= side and (lo == n or below[lo + 1] > side), "lo is not the tightest lower bound"
    assert above[hi] <= side and (hi == 0 or above[hi - 1] > side), "hi is not the tightest upper bound"
    _, hi1 = binomial_interval(n, p, delta, upper_only=True)
    assert above[hi1] <= Fraction(delta) and (hi1 == 0 or above[hi1 - 1] > Fraction(delta))


def test_statistical_properties_accept_the_reference_on_fresh_batches():
    """Twenty batches the hypothesis profile never draws: the reference passes every binomial check, the
    lower bounds of random_tokens_reach_every_id included."""
    from autograder.errors import PropertyFailure
    from autograder.exercises.bert_masking import properties as P
    from autograder.properties._harness import Student

    sys.path.insert(0, str(ROOT / "solutions"))
    try:
        import bert_masking as solution
    finally:
        sys.path.remove(str(ROOT / "solutions"))

    class Submission:
        load_errors = []

        def get(self, name, prefer=None):
            return getattr(solution, name, None)

    student, rng = Student(Submission()), random.Random(20261130)
    for _ in range(12):
        V = rng.choice([60, 200, 1000, 30522])
        special = rng.sample(range(V), 4)
        case = P._large(
            rng.choice([64, 96, 128]),
            rng.choice([192, 256]),
            V,
            special,
            seed=rng.randrange(2**31),
            data_seed=rng.randrange(2**31),
        )
        for prop in (P.mlm_rate, P.mlm_split, P.mlm_uniform):
            try:
                prop.hypothesis.inner_test(student, case)
            except PropertyFailure as e:  # pragma: no cover - would be a 1e-9 event or a broken bound
                pytest.fail(f"{prop.__name__} rejected the reference on {case}: {e}")
    for _ in range(8):  # the lower bounds need a small vocabulary (V <= 8) in a large batch
        V = rng.choice([6, 7, 8])
        case = P._large(128, 256, V, rng.sample(range(V), 4), seed=rng.randrange(2**31), data_seed=rng.randrange(2**31))
        try:
            P.mlm_reach.hypothesis.inner_test(student, case)
        except PropertyFailure as e:  # pragma: no cover - would be a 1e-9 event or a broken bound
            pytest.fail(f"mlm_reach rejected the reference on {case}: {e}")


# ---------------------------------------------------------------- full marks


@pytest.mark.slow
def test_reference_solutions_get_full_marks_in_the_second_assignment(grade_cli):
    proc, report = grade_cli(ROOT / "solutions", "--assignment", ASSIGNMENT)
    assert proc.returncode == 0, proc.stderr
    assert [e["id"] for e in report["exercises"]] == list(EXTRA)
    assert report["score"] == report["max_score"] == 100


@pytest.mark.slow
@pytest.mark.parametrize("folder", CORRECT_EXTRA, ids=[p.name for p in CORRECT_EXTRA])
def test_correct_variant_gets_full_marks(folder, grade_cli):
    proc, report = grade_cli(folder, "--assignment", ASSIGNMENT)
    assert proc.returncode == 0, proc.stderr
    lost = {t["name"]: t["feedback"] for e in report["exercises"] for t in e["tests"] if not t["passed"]}
    assert not lost, f"{folder.name} lost points:\n" + "\n\n".join(f"{k}\n{v}" for k, v in lost.items())
    assert report["score"] == report["max_score"] == 100


def test_there_are_three_correct_variants_of_each_new_exercise():
    assert len(CORRECT_EXTRA) >= 3
    for folder in CORRECT_EXTRA:
        assert {p.stem for p in Path(folder).glob("*.py")} >= set(EXTRA), folder
