"""The examples drawn once per process (properties._harness.record) are exactly those hypothesis
runs a property on, and a property run on them (run_property) ends as hypothesis alone ends it."""

import copy
import weakref

import pytest
import torch

from autograder.catalogue import load_catalogue
from autograder.judge.runner import run_one
from autograder.properties import _harness as H
from autograder.properties import load_all
from autograder.sandbox.protocol import same_values

from .conftest import Namespace, reference_with

CORE = ["masks", "positional_encoding", "attention", "recurrent", "masked_loss"]


def _same(a, b):
    if isinstance(a, weakref.ref):  # a module's parameters, once a body has run on a pinned example
        return isinstance(b, weakref.ref) and _same(a(), b())
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and bool(same_values(a, b))
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if hasattr(a, "__dict__") and not isinstance(a, type):
        return type(a) is type(b) and _same(vars(a), vars(b))
    return type(a) is type(b) and (a == b or (a != a and b != b))


def _snapshot(kwargs):
    return {k: v.clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v) for k, v in kwargs.items()}


def _student(exercise, code=None):
    return H.Student(Namespace(reference_with(exercise, code)), (), exercise)


@pytest.fixture(scope="module")
def recorded(one_thread):
    from autograder.config import load_course

    H.grading_profile(load_course(None).max_examples)
    props = [p for p in load_all().values() if hasattr(p.run, "hypothesis")]
    H.prepare(props)
    H.record(props)
    return props


def test_the_recorded_examples_are_those_hypothesis_runs(recorded):
    """Every property of every exercise: the reference passes, and hypothesis hands its body the
    recorded examples, value for value, in the same order; only the properties that draw inside
    their body (st.data()) are left to hypothesis."""
    checked, left = 0, []
    for p in recorded:
        examples = p.run._seqgrader_examples
        if examples is None:
            left.append(p.full_name)
            continue
        before = [_snapshot(kw) for kw in examples]  # the body may write into a pinned example's objects
        seen = []
        inner = p.run.hypothesis.inner_test

        def spy(student, seen=seen, inner=inner, **kwargs):
            seen.append(_snapshot(kwargs))
            return inner(student, **kwargs)

        p.run.hypothesis.inner_test = spy
        try:
            p.run(_student(p.exercise))
        finally:
            p.run.hypothesis.inner_test = inner
        assert len(seen) == len(before) and all(_same(a, b) for a, b in zip(before, seen)), p.full_name
        checked += 1
    assert checked >= 100
    assert sorted(left) == [
        "attention/scaled_dot_product_attention/permutation_equivariant",
        "masks/padding_mask/rejects_bad_lengths",
    ]


def _outcome(prop, student, again=None):
    out = run_one(prop, student, 30, again)
    out.pop("seconds")
    return out


@pytest.mark.parametrize("exercise", CORE)
def test_a_wrong_function_ends_as_with_hypothesis_alone(exercise, recorded, monkeypatch):
    """Catalogued mistakes: the same status, message, details and shrunk counterexample whether
    the property starts from the recorded examples or hypothesis runs it alone."""
    props = [p for p in recorded if p.exercise == exercise]
    failed = 0
    for entry in [e for _, e in load_catalogue(exercise)][:4]:
        for p in props:
            restarts = []
            with_record = _outcome(p, _student(exercise, entry["code"]), lambda restarts=restarts: restarts.append(1))
            monkeypatch.setattr(H, "run_property", lambda prop, student, again=None: prop.run(student))
            alone = _outcome(p, _student(exercise, entry["code"]))
            monkeypatch.undo()
            assert with_record == alone, (entry["id"], p.full_name)
            assert len(restarts) == (with_record["status"] != "passed" and p.run._seqgrader_examples is not None)
            failed += with_record["status"] != "passed"
    assert failed >= 4


def test_a_call_answered_two_ways_keeps_its_failure(recorded):
    """A function that is wrong on its first call only: hypothesis, starting over, sees it pass;
    the failure the recorded examples met still stands (it is what hypothesis alone meets first)."""
    code = (
        "_calls = [0]\n_right = causal_mask\n\n"
        "def causal_mask(T, device=None):\n"
        "    _calls[0] += 1\n"
        "    m = _right(T, device)\n"
        "    return ~m if _calls[0] == 1 else m\n"
    )
    prop = next(p for p in recorded if p.full_name == "masks/causal_mask/past_and_present_allowed")
    restarts = []
    out = _outcome(prop, _student("masks", code), lambda: restarts.append(1))
    assert out["status"] == "failed" and restarts == [1]


def test_examples_recorded_under_other_settings_are_not_used(recorded, monkeypatch):
    """The examples belong to the settings they were drawn under (course.yml's max_examples):
    under others, hypothesis runs the property until they are drawn again."""
    from autograder.config import load_course

    prop = next(p for p in recorded if p.full_name == "masks/causal_mask/future_is_blocked")
    n = len(prop.run._seqgrader_examples)
    ran = []
    monkeypatch.setattr(prop.run.hypothesis, "inner_test", lambda student, **kw: ran.append(kw))
    try:
        H.grading_profile(load_course(None).max_examples + 3)
        H.prepare([prop])
        H.run_property(prop, None)  # hypothesis itself: it draws the examples of these settings
        assert len(ran) > n
        H.record([prop])
        assert len(prop.run._seqgrader_examples) == len(ran)
    finally:
        monkeypatch.undo()
        H.grading_profile(load_course(None).max_examples)
        H.prepare([prop])
        H.record([prop])
    assert len(prop.run._seqgrader_examples) == n
