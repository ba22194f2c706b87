"""Sharing the diagnosis' trusted observations between judges (autograder/diagnose/share.py): a
judge that starts from what an earlier judge computed names the same mistakes, charges the same
time to its clock, and does a fraction of the work; what it gets is only ever trusted data."""

import io
import os
import pickle
import struct
import time

import pytest
import torch

from .heldout_multi import CASES
from .test_diagnosis import _generated_student


def _in_judge(fn):
    """Run fn() in a forked child (a judge: share.enable() patches the engine for good) and
    return what it returned."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            data = pickle.dumps(fn())
            os.write(w, struct.pack("<Q", len(data)))
            while data:
                data = data[os.write(w, data) :]
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        out = pickle.loads(f.read(n))
    os.waitpid(pid, 0)
    return out


def _diagnose_in_judge(case):
    from autograder import diagnose as D
    from autograder.diagnose import engine, share

    torch.set_num_threads(1)  # as in a judge
    for cache in (engine._CACHE, engine._COMPOSED, engine._CONSENSUS):
        cache.clear()  # a judge starts with none (this test process may have diagnosed before)
    share.enable()
    student = _generated_student(case)
    cpu = time.process_time()
    found = D.diagnose(student, case.exercise, list(D.PROBES[case.exercise]))
    spent = time.process_time() - cpu
    names = {f: sorted(d["id"] for d in ds) for f, ds in found.items()}
    return {"names": names, "cpu": spent, "credit": share._CREDIT[0], "export": share.export()}


@pytest.mark.parametrize("name", ["att_scale_dv_mask_after_softmax", "att_mha_values_wk_weights_averaged"])
def test_a_warm_judge_names_the_same_mistakes_with_less_work(name):
    """Two mistakes in one function (tests/heldout_multi.py): the pair search composes catalogued
    entries, the costliest part of a diagnosis, and runs every mistake's probes."""
    from autograder.diagnose import share

    case = next(c for c in CASES if c.name == name)
    share.PENDING.clear()
    share.COMPOSITIONS.clear()
    cold = _in_judge(lambda: _diagnose_in_judge(case))
    assert cold["export"] and cold["credit"] == 0.0 and any(cold["names"].values())
    assert share.merge(cold["export"]) > 0
    warm = _in_judge(lambda: _diagnose_in_judge(case))  # forked after the merge: inherits it
    again = _in_judge(lambda: _diagnose_in_judge(case))  # CPU time is noisy on a loaded machine: the lesser of two
    share.PENDING.clear()
    share.COMPOSITIONS.clear()
    assert warm["names"] == cold["names"]
    assert warm["export"] is None  # the same work, so nothing new to send
    # what was not done again is charged to the clock, as if it had been done (budgets decide alike)
    assert 0.3 * cold["cpu"] < warm["credit"] < 1.5 * cold["cpu"], (warm, cold["cpu"])
    # typically 0.3-0.45 of the cold judge's CPU; about 1.0 if nothing were shared (measured:
    # 0.73 once, for a cold judge in a test process that other tests had warmed, under load)
    assert again["names"] == cold["names"]
    assert min(warm["cpu"], again["cpu"]) < 0.75 * cold["cpu"], (warm["cpu"], again["cpu"], cold["cpu"])


def test_merge_takes_only_plain_data():
    from autograder.diagnose import share

    class Evil:
        def __reduce__(self):
            return (os.system, ("touch /tmp/seqgrader-share-pwned",))

    share.PENDING.clear()
    assert share.merge(pickle.dumps({"obs": {("masks", None, None, "x"): {("causal_mask", 0): (Evil(), 1.0)}}})) == 0
    assert not os.path.exists("/tmp/seqgrader-share-pwned")
    assert share.merge(b"not a torch file") == 0 and share.merge("text") == 0
    buf = io.BytesIO()
    torch.save(
        {
            "obs": {
                ("masks", None, None, "x"): {
                    ("causal_mask", 0): (("T", "torch.bool", (2, 2), torch.ones(2, 2)), 0.5),
                    ("causal_mask", 1): ("no cost",),
                }
            },
            "compositions": {"k": (["def f(): pass"], 0.1), "j": ([1], 0.1)},
        },
        buf,
    )
    assert share.merge(buf.getvalue()) == 2  # the entries without a cost or with code that is not text are left out
    share.PENDING.clear()
    share.COMPOSITIONS.clear()


def _explained_in_judge(code):
    from autograder import diagnose as D
    from autograder.diagnose import engine, share
    from autograder.properties._harness import Student

    from .conftest import Namespace, reference_with

    torch.set_num_threads(1)
    for cache in (engine._CACHE, engine._COMPOSED, engine._CONSENSUS):
        cache.clear()
    share.enable()
    by_part = {}
    D.diagnose(Student(Namespace(reference_with("rope", code)), (), "rope"), "rope", ["rope_angles"], by_part=by_part)
    return {"parts": by_part, "export": share.export()}


def test_a_warm_judge_explains_the_form_as_a_cold_one_does():
    """The form's comparison reads the calls the reference's probes made; an observation shared from
    another judge comes without them, and the probe runs again for them."""
    from autograder.diagnose import share

    code = """
def rope_angles(T, d, offset=0, base=10000.0):
    if d % 2 != 0:
        raise ValueError("d must be even")
    return torch.arange(offset, offset + T, dtype=torch.float64)[:, None] * base ** (
        -torch.arange(0, d, 2, dtype=torch.float64) / d)
"""
    share.PENDING.clear()
    share.COMPOSITIONS.clear()
    cold = _in_judge(lambda: _explained_in_judge(code))
    assert share.merge(cold["export"]) > 0
    warm = _in_judge(lambda: _explained_in_judge(code))
    share.PENDING.clear()
    share.COMPOSITIONS.clear()
    assert [c["part"] for c in cold["parts"]["rope_angles"]] == ["form:dtype:():float64:float32"]
    assert warm["parts"] == cold["parts"]
