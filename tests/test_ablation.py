"""The one-factor ablation: the exercise `ablation`, alone in the assignment
sequence-models-4, 90 points of hidden properties and a written analysis graded by hand (10).

Fast: course.yml adds the assignment (90 + 10 manual = 100) and leaves the others alone,
docs/contract-extra.md names every function, the catalogue covers every function and every property
rejects one of its mistakes (in this process, no sandbox), mistakes left out of the catalogue are
caught too, the notebook has its stubs, the given code and the hand-graded answer cell, the nbgrader
course fills the stubs and the model answer in, and the facts the properties rest on hold (the model
without positional encoding gives a sequence and its A/B swap the same logits; a run leaves the global
random state alone).
A failure explains itself in Chinese and English.
Slow: the reference gets full marks from the command line (its report in Chinese and English), and
each correct variant in tests/files/correct_extra/*/ablation.py gets full marks through the
sandbox at four times course.yml's examples.  (Each catalogued mistake is graded through the sandbox
by tests/test_catalogue.py.)
"""

import copy
import re
import time

import pytest
import torch

from autograder.catalogue import SOLUTIONS, load_catalogue
from autograder.config import load_course
from autograder.errors import ConfigError, PropertyFailure

from .conftest import ROOT, Namespace, failures_in_process, reference_with

EX = "ablation"
ASSIGNMENT = "sequence-models-4"
FUNCTIONS = ["make_ablation", "run_experiment", "run_ablation"]
ANSWER = "ablation_analysis"
VARIANTS = sorted(p for p in (ROOT / "tests" / "files" / "correct_extra").glob(f"*/{EX}.py"))


# ---------------------------------------------------------------- course.yml, docs, catalogue


def test_own_assignment_worth_90_plus_10_by_hand_and_the_others_untouched():
    course = load_course()
    assert course.assignment(ASSIGNMENT) == [EX]
    ex = course.exercises[EX]
    assert ex.max_score == 90 and ex.manual == {ANSWER: 10} and ex.max_score + ex.manual_score == 100
    assert course.assignment() == ["masks", "positional_encoding", "attention", "recurrent", "masked_loss"]
    assert course.assignment("sequence-models-2") == ["rope", "timeseries", "bert_masking"]
    assert course.assignment("sequence-models-3") == ["tiny_lm"]
    assert all(course.exercises[e].manual == {} for e in course.exercises if e != EX)
    assert {name.split("/", 1)[0] for name in ex.tests} == set(FUNCTIONS)


def test_contract_extra_documents_every_function():
    text = (ROOT / "docs" / "contract-extra.md").read_text(encoding="utf-8")
    assert f"### `{EX}`" in text and ASSIGNMENT in text and ANSWER in text
    for fn in FUNCTIONS:
        assert re.search(rf"^- `{fn}\(", text, re.M), f"{fn} is not documented like the contract"


def test_catalogue_covers_every_function_and_names_every_property():
    entries = [e for _, e in load_catalogue(EX)]
    assert len(entries) >= 10, f"only {len(entries)} catalogued mistakes"
    assert {e["function"] for e in entries} == set(FUNCTIONS)
    assert all(e["id"].startswith("ablation_") for e in entries)
    tests = set(load_course().exercises[EX].tests)
    named = {t for e in entries for t in e["expect_failing"]}
    assert named <= tests and named == tests, f"properties no mistake expects to fail: {sorted(tests - named)}"


# ---------------------------------------------------------------- the notebook and the nbgrader course


def _nbgrader(cell):
    return cell.get("metadata", {}).get("nbgrader") or {}


def test_notebook_has_stubs_the_given_code_and_a_hand_graded_answer():
    import nbformat

    nb = nbformat.read(str(ROOT / "exercises" / f"{EX}.ipynb"), as_version=4)
    stubs = [_nbgrader(c)["grade_id"] for c in nb.cells if _nbgrader(c).get("solution") and c.cell_type == "code"]
    assert stubs == FUNCTIONS
    checks = [_nbgrader(c)["grade_id"] for c in nb.cells if _nbgrader(c).get("grade") and c.cell_type == "code"]
    assert checks == [f"test_{fn}" for fn in FUNCTIONS]
    (given,) = [c for c in nb.cells if _nbgrader(c).get("grade_id") == "ablation_given"]
    assert _nbgrader(given)["locked"] and not _nbgrader(given)["solution"]
    for name in ("def order_task(", "def init_classifier(", "def classifier_logits(", "BASE = {"):
        assert name in given.source
    # the given code is the reference's, word for word: a change to one is a change to both
    import ast

    src = (ROOT / "solutions" / f"{EX}.py").read_text(encoding="utf-8")
    lines = src.splitlines()
    for node in ast.parse(src).body:
        if isinstance(node, ast.FunctionDef) and node.name in (
            "order_task",
            "init_classifier",
            "sinusoidal_encoding",
            "classifier_logits",
        ):
            assert "\n".join(lines[node.lineno - 1 : node.end_lineno]) in given.source, node.name
    (answer,) = [c for c in nb.cells if _nbgrader(c).get("solution") and c.cell_type == "markdown"]
    assert _nbgrader(answer) == {
        "grade": True,
        "solution": True,
        "locked": False,
        "grade_id": ANSWER,
        "points": 10,
        "schema_version": 3,
    }
    prompt = nb.cells[nb.cells.index(answer) - 1].source
    assert "手工评分" in prompt and "graded by hand" in prompt and "one seed" in prompt.lower()
    experiment = [c for c in nb.cells if c.cell_type == "code" and "run_ablation(BASE" in c.source]
    assert experiment and not _nbgrader(experiment[0])  # a demo cell the student runs
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "动手检查 / Check by hand" in text and "信息边界" in text


def test_nbgrader_course_puts_the_reference_and_the_model_answer_in():
    from autograder.nbgrader_course.build import source_notebook

    course = load_course()
    nb = source_notebook(EX, course, ROOT / "exercises", ROOT / "solutions")
    regions = [
        _nbgrader(c)["grade_id"] for c in nb.cells if _nbgrader(c).get("solution") and "### BEGIN SOLUTION" in c.source
    ]
    assert regions == FUNCTIONS + [ANSWER]
    (answer,) = [c for c in nb.cells if _nbgrader(c).get("grade_id") == ANSWER]
    assert answer.cell_type == "markdown" and _nbgrader(answer)["points"] == 10
    assert "One seed is not enough" in answer.source and "一个 seed 不够" in answer.source
    hidden = [_nbgrader(c)["grade_id"] for c in nb.cells if _nbgrader(c).get("grade_id", "").startswith("hidden_")]
    assert hidden == [f"hidden_{fn}" for fn in FUNCTIONS]
    # course.yml is where the hand-graded points live: without them the course is not built
    no_manual = course.model_copy(deep=True)
    no_manual.exercises[EX].manual = {}
    with pytest.raises(ConfigError, match="no points in course.yml"):
        source_notebook(EX, no_manual, ROOT / "exercises", ROOT / "solutions")


# ---------------------------------------------------------------- the properties, in this process


def _module(code=None, path=None):
    return reference_with(EX, code, path)


def _failures(code=None, only=None, path=None):
    """{property: message} of the ablation properties that fail on the reference (+ code)."""
    return failures_in_process(EX, _module(code, path), only)


@pytest.fixture(scope="module", autouse=True)
def _one_thread(one_thread):
    pass


def test_properties_accept_the_reference_in_process():
    assert _failures() == {}


CLAIMS = [(e, prop) for _, e in load_catalogue(EX) for prop in e["expect_failing"]]


@pytest.mark.parametrize("entry,prop", CLAIMS, ids=[f"{e['id']}:{p}" for e, p in CLAIMS])
def test_every_catalogued_mistake_fails_every_property_it_names_in_process(entry, prop):
    # with test_catalogue_covers_every_function_and_names_every_property: every property rejects a
    # catalogued mistake (tests/test_catalogue.py checks one named property per mistake, in the sandbox)
    assert set(_failures(entry["code"], only=[prop])) == {prop}, entry["id"]


# wrong implementations the catalogue leaves out, written differently: each is still caught
UNCATALOGUED = {
    "dotted path taken as one key": (
        "make_ablation/one_config_per_value_in_order",
        """
def make_ablation(base, factor, values):
    if factor not in base or len(values) < 2 or len(set(map(repr, values))) < len(values):
        raise ValueError("bad arguments")
    return [{**copy.deepcopy(base), factor: v} for v in values]
""",
    ),
    "a run name added": (
        "make_ablation/only_the_factor_differs",
        """
_make = make_ablation
def make_ablation(base, factor, values):
    return [{**c, "name": f"{factor}={v}"} for c, v in zip(_make(base, factor, values), values)]
""",
    ),
    "one value accepted": (
        "make_ablation/rejects_bad_arguments",
        """
_make = make_ablation
def make_ablation(base, factor, values):
    if len(values) == 1:
        return _make(base, factor, [values[0], object()])[:1]
    return _make(base, factor, values)
""",
    ),
    "a fresh seed per call, from a generator made at import": (
        "run_experiment/reproducible_given_seed",
        """
_G = torch.Generator().manual_seed(1234)
_run = run_experiment
def run_experiment(config):
    return _run({**config, "seed": int(torch.randint(0, 10 ** 6, (1,), generator=_G))})
""",
    ),
    "accuracy as a percentage": (
        "run_experiment/returns_losses_and_accuracy",
        """
_run = run_experiment
def run_experiment(config):
    out = _run(config)
    return {**out, "test_accuracy": 100 * out["test_accuracy"]}
""",
    ),
    "the flag read at the top level": (
        "run_experiment/positional_encoding_flag_changes_the_model",
        """
_run = run_experiment
def run_experiment(config):
    pe = config.get("positional_encoding", False)
    return _run({**config, "model": {**config["model"], "positional_encoding": pe}})
""",
    ),
    "zip: one seed per arm": (
        "run_ablation/one_result_per_value_and_seed",
        """
def run_ablation(base, factor, values, seeds):
    if factor == "seed" or not seeds or len(set(seeds)) < len(seeds):
        raise ValueError("bad")
    return [[run_experiment({**c, "seed": s})] for c, s in zip(make_ablation(base, factor, values), seeds)]
""",
    ),
    "the seeds ignored": (
        "run_ablation/every_value_runs_with_every_seed",
        """
def run_ablation(base, factor, values, seeds):
    if factor == "seed" or not seeds or len(set(seeds)) < len(seeds):
        raise ValueError("bad")
    return [[run_experiment(c) for _ in seeds] for c in make_ablation(base, factor, values)]
""",
    ),
}


def test_a_failure_explains_itself_in_chinese_and_english():
    from autograder.properties import load_all
    from autograder.properties._harness import Student

    entry = next(e for _, e in load_catalogue(EX) if e["id"] == "ablation_shallow_copy")
    student = Student(Namespace(_module(entry["code"])), (), EX)
    with pytest.raises(PropertyFailure) as info:
        load_all()[f"{EX}/make_ablation/one_config_per_value_in_order"].run(student)
    e = info.value
    # a shallow copy writes into base's nested dict: caught as an argument changed in place, on the
    # first call, before the configs are even compared
    assert "原地修改" in e.zh and "in place" in e.en
    assert "copy.deepcopy" in e.zh and "copy.deepcopy" in e.en
    assert any("make_ablation(" in text for _, text in e.details)


@pytest.mark.parametrize("name", list(UNCATALOGUED))
def test_uncatalogued_mistakes_are_caught_in_process(name):
    prop, code = UNCATALOGUED[name]
    assert prop in _failures(code, only=[prop]), name


def test_without_positional_encoding_a_sequence_and_its_swap_look_the_same():
    """What the chance bound of positional_encoding_helps rests on: swapping A and B keeps the multiset
    and flips the label, and the model without the encoding only sees the multiset."""
    ns = _module()
    g = torch.Generator().manual_seed(7)
    tokens, labels = ns["order_task"](64, 8, 8, generator=g)
    swapped = torch.where(tokens == 1, 2, torch.where(tokens == 2, 1, tokens))
    assert torch.equal(tokens.sort(1).values, swapped.sort(1).values)
    assert ((tokens == 1).sum(1) == 1).all() and ((tokens == 2).sum(1) == 1).all()
    pos_a, pos_b = (tokens == 1).int().argmax(1), (tokens == 2).int().argmax(1)
    assert torch.equal(labels, (pos_a < pos_b).long())
    params = ns["init_classifier"](8, 16, generator=g)
    with torch.no_grad():
        off = ns["classifier_logits"](tokens, params, False), ns["classifier_logits"](swapped, params, False)
        on = ns["classifier_logits"](tokens, params, True), ns["classifier_logits"](swapped, params, True)
    assert torch.allclose(off[0], off[1], atol=1e-5)
    assert not torch.allclose(on[0], on[1], atol=1e-3)


def test_a_run_does_not_touch_the_global_random_state():
    ns = _module()
    config = {
        "seed": 5,
        "data": {"n_train": 16, "n_test": 9, "seq_len": 4, "vocab_size": 6},
        "model": {"d_model": 4, "positional_encoding": True},
        "train": {"steps": 3, "lr": 0.05},
    }
    before = copy.deepcopy(config)
    torch.manual_seed(1)
    state = torch.get_rng_state()
    a = ns["run_experiment"](config)
    assert torch.equal(torch.get_rng_state(), state), "the reference drew from the global random state"
    torch.manual_seed(2)
    assert ns["run_experiment"](config) == a and config == before


# ---------------------------------------------------------------- full marks


@pytest.mark.slow
def test_reference_gets_full_marks_quickly_with_a_bilingual_report(grade_cli):
    start = time.monotonic()
    proc, report = grade_cli(SOLUTIONS / f"{EX}.py", "--assignment", ASSIGNMENT)
    wall = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    assert [e["id"] for e in report["exercises"]] == [EX]
    assert report["score"] == report["max_score"] == 90
    assert "90 / 90" in proc.stdout and "总分" in proc.stdout and "Score" in proc.stdout
    seconds = sum(t.get("seconds") or 0 for e in report["exercises"] for t in e["tests"])
    assert seconds < 20, f"the tests of {EX} took {seconds:.1f} s on the reference"
    assert wall < 90, f"grading the reference took {wall:.0f} s"


@pytest.mark.slow
@pytest.mark.parametrize("path", VARIANTS, ids=[p.parent.name for p in VARIANTS])
def test_correct_variant_gets_full_marks(path):
    # through the sandbox, in this process (one torch import for all of them), at four times
    # course.yml's examples: a correct variant must never be rejected
    from autograder.grading import grade
    from autograder.judge import ForkRunner

    course = load_course(max_examples=20)
    report = grade(path, course, ForkRunner(course), exercises=[EX]).to_dict()
    lost = {t["name"]: t["feedback"] for e in report["exercises"] for t in e["tests"] if not t["passed"]}
    assert not lost, f"{path.parent.name} lost points:\n" + "\n\n".join(f"{k}\n{v}" for k, v in lost.items())
    assert report["score"] == report["max_score"] == 90


def test_there_are_three_correct_variants():
    assert len(VARIANTS) >= 3
    texts = {p.read_text(encoding="utf-8").split("# ---- the exercise ----")[1] for p in VARIANTS}
    assert len(texts) == len(VARIANTS), "the variants must be written differently"
