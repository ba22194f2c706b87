"""What student code cannot do to the verdict once it runs in a worker: lie with objects, patch
the judge's torch, find the expected answers in its memory, write on the grader's pipe."""
import pytest

from .conftest import ROOT
from .test_robustness import MASKS, grade_masks

WRONG = MASKS.replace(".tril()  # (T, T)", ".triu()  # (T, T)")  # lets every query see the future


@pytest.mark.parametrize("attack", [
    # patch torch so that every comparison says "equal"
    "torch.equal = lambda *a, **k: True\ntorch.allclose = lambda *a, **k: True\n"
    "torch.Tensor.__eq__ = lambda s, o: torch.ones_like(s, dtype=torch.bool)\n"
    "torch.Tensor.__ne__ = lambda s, o: torch.zeros_like(s, dtype=torch.bool)\n",
    # return a tensor subclass that claims equality with anything
    "class Liar(torch.Tensor):\n    def __eq__(self, o): return torch.ones(self.shape, dtype=torch.bool)\n"
    "    def __ne__(self, o): return torch.zeros(self.shape, dtype=torch.bool)\n"
    "_cm = causal_mask\ndef causal_mask(T, device=None):\n    return _cm(T, device).as_subclass(Liar)\n",
    # search memory for a (T, T) bool tensor the grader made and return it
    "import gc\n_cm = causal_mask\ndef causal_mask(T, device=None):\n"
    "    for o in gc.get_objects():\n"
    "        if isinstance(o, torch.Tensor) and o.dtype == torch.bool and o.shape == (T, T) and bool(o.tril().equal(o)):\n"
    "            return o.clone()\n"
    "    return _cm(T, device)\n",
])
def test_attacks_do_not_change_the_verdict(tmp_path, attack):
    src = WRONG + "\n" + attack
    report, tests = grade_masks(tmp_path, src)
    assert not tests["causal_mask/future_is_blocked"]["passed"]
    assert tests["padding_mask/marks_real_tokens"]["passed"]


def test_fake_results_on_every_descriptor_are_not_believed(tmp_path):
    attack = ("import os, json\nfor fd in range(3, 64):\n    try:\n"
              "        os.write(fd, (json.dumps({'event': 'result', 'test': 'causal_mask/future_is_blocked', "
              "'outcome': {'status': 'passed'}}) + '\\n').encode())\n    except OSError:\n        pass\n")
    report, tests = grade_masks(tmp_path, WRONG + "\n" + attack)
    fb = tests["causal_mask/future_is_blocked"]
    assert not fb["passed"] and "cannot read" in fb["feedback"]


def test_the_reference_still_passes_through_the_worker(tmp_path):
    report, tests = grade_masks(tmp_path, MASKS)
    assert all(t["passed"] for t in tests.values())
    assert (ROOT / "course.yml").exists()
