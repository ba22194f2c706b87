"""Replay (autograder/sandbox/replay.py): a grading process that grades many submissions passes a
property on the inputs hypothesis would draw, recorded once against the reference; anything else
goes to hypothesis.  It must never change a report."""
import sys

import pytest

from autograder.catalogue import build_submission, load_catalogue
from autograder.config import load_course
from autograder.grading import grade
from autograder.load import load_submission
from autograder.properties import Student, load_all
from autograder.sandbox import ForkRunner
from autograder.sandbox import replay as RP

from .conftest import ROOT

CORE = ["masks", "positional_encoding", "attention", "recurrent", "masked_loss"]
# one mistake per exercise, some caught on a pinned example, some only on generated ones
MISTAKES = ["causal_mask_excludes_diagonal", "pe_sin_cos_swapped", "sdpa_softmax_over_queries", "lstm_gate_order_ifog",
            "ml_per_sequence_mean"]


def _outcomes(report):
    return [{k: v for k, v in t.items() if k != "seconds"} for e in report.to_dict()["exercises"] for t in e["tests"]]


@pytest.fixture(scope="module")
def course():
    return load_course()


@pytest.fixture(scope="module")
def recorded(course):
    from autograder.properties._harness import grading_profile

    grading_profile(course.max_examples)
    registry = load_all()
    props = [registry[f"{ex}/{n}"] for ex in CORE for n in course.exercises[ex].tests]
    RP.RECORDED.clear()
    RP.record(props, course.max_examples)
    yield props
    RP.RECORDED.clear()


def test_every_property_is_recorded_but_those_that_draw_inside(recorded):
    drawing = {p.full_name for p in recorded if "data" in p.run.hypothesis._given_kwargs}
    assert len(drawing) == 2  # padding_mask/rejects_bad_lengths, permutation_equivariant
    assert set(RP.RECORDED) == {p.full_name for p in recorded} - drawing
    # pinned @examples come first, then at least one generated input
    for p in recorded:
        if p.full_name in RP.RECORDED:
            assert len(RP.RECORDED[p.full_name]) > len(p.run.hypothesis_explicit_examples), p.full_name


def test_replay_passes_the_reference_and_refuses_each_mistake(recorded, tmp_path):
    reference = load_submission(ROOT / "solutions")
    for p in recorded:
        if p.full_name in RP.RECORDED:
            assert RP.replay(p, Student(reference, [str(ROOT / "solutions")], p.exercise)), p.full_name
    by_id = {e["id"]: (ex, e) for ex, e in load_catalogue()}
    for mid in MISTAKES:
        ex, entry = by_id[mid]
        sub = load_submission(build_submission(ex, entry, tmp_path / mid))
        student = Student(sub, [str(tmp_path / mid)], ex)
        broken = [p for p in recorded if p.exercise == ex and p.name in entry["expect_failing"]
                  and p.full_name in RP.RECORDED]
        assert broken, mid
        assert not any(RP.replay(p, student) for p in broken), mid


def _same_copy(a, b, memo_a, memo_b, path="kwargs"):
    """b is what copy.deepcopy(a) would be: same types, values, dtypes, grad flags; the same
    object twice in `a` is one object twice in `b`."""
    import torch

    if id(a) in memo_a or id(b) in memo_b:
        assert memo_a.get(id(a)) == id(b) and memo_b.get(id(b)) == id(a), path
        return
    memo_a[id(a)], memo_b[id(b)] = id(b), id(a)
    assert type(a) is type(b), path
    if isinstance(a, torch.Tensor):
        assert a is not b and a.dtype == b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad, path
        assert a.is_leaf == b.is_leaf and torch.equal(a.detach(), b.detach()), path
        if a.numel():
            assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr(), path  # nothing shared
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _same_copy(x, y, memo_a, memo_b, f"{path}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            _same_copy(a[k], b[k], memo_a, memo_b, f"{path}[{k!r}]")
    elif hasattr(a, "__dict__") and not isinstance(a, type):
        assert a is not b, path
        _same_copy(vars(a), vars(b), memo_a, memo_b, f"{path}.__dict__")
    else:
        assert a == b, path


def test_fresh_copies_every_recorded_input_as_deepcopy_does(recorded):
    """replay.fresh copies a property's cases attribute by attribute and tensors with clone():
    on every recorded input it gives what copy.deepcopy gives, and shares no tensor with it."""
    import copy

    cases = 0
    for name, runs in RP.RECORDED.items():
        for kwargs in runs:
            ours, theirs = RP.fresh(kwargs), copy.deepcopy(kwargs)
            _same_copy(kwargs, ours, {}, {}, name)
            _same_copy(theirs, ours, {}, {}, name)
            cases += any(hasattr(v, "__dict__") for v in kwargs.values())
    assert cases > 100  # the properties' case objects are among them
    assert RP._plain_object(type(next(v for runs in RP.RECORDED.values() for kw in runs for v in kw.values()
                                      if type(v).__name__ == "SeqCase")))


@pytest.mark.slow
def test_reports_are_identical_with_and_without_replay(recorded, course, tmp_path):
    by_id = {e["id"]: (ex, e) for ex, e in load_catalogue()}
    subs = [(ROOT / "tests" / "files" / "correct" / "alt1", CORE)]
    for mid in MISTAKES:
        ex, entry = by_id[mid]
        subs.append((build_submission(ex, entry, tmp_path / mid), [ex]))
    saved = dict(RP.RECORDED)
    try:
        RP.RECORDED.clear()
        plain = [_outcomes(grade(s, course, ForkRunner(course, workers=1), exercises=exs)) for s, exs in subs]
        RP.RECORDED.update(saved)
        fast = [_outcomes(grade(s, course, ForkRunner(course, workers=1, replay=True), exercises=exs))
                for s, exs in subs]
    finally:
        RP.RECORDED.update(saved)
    assert fast == plain
    assert all(t["status"] == "passed" for t in fast[0])
    assert all(any(t["status"] != "passed" for t in outcomes) for outcomes in fast[1:])


def test_workers_never_see_the_recorded_inputs(recorded, tmp_path):
    import torch

    from autograder.load import read_sources
    from autograder.sandbox.remote import RemoteStudent, Zygote

    assert RP.RECORDED  # this process holds them, and the worker is forked from it
    sub = tmp_path / "snoop.py"
    sub.write_text("import sys, gc\n"
                   "def snoop():\n"
                   "    mod = sys.modules.get('autograder.sandbox.replay')\n"
                   "    held = len(mod.RECORDED) if mod is not None else 0\n"
                   "    dicts = [o for o in gc.get_objects() if isinstance(o, dict) and any(\n"
                   "             isinstance(k, str) and k.startswith('masks/') for k in list(o)[:3])]\n"
                   "    return held, len(dicts)\n")
    torch.set_num_threads(1)
    sources, errors, root = read_sources(sub)
    zygote = Zygote(sources, errors, root, [str(sub)], None)
    student = RemoteStudent(zygote, "snoop", 20, errors)
    try:
        assert student.call("snoop") == (0, 0)
    finally:
        student.abort()
        zygote.close()
    assert "autograder.sandbox.replay" in sys.modules and RP.RECORDED  # the judge keeps them
