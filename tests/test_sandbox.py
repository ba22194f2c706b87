"""What student code cannot do to the verdict once it runs in a worker: lie with objects, patch
the judge's torch, find the expected answers in its memory, write on the grader's pipe."""

import pytest

from .conftest import ROOT, remote_student
from .test_robustness import MASKS, grade_masks

WRONG = MASKS.replace(".tril()  # (T, T)", ".triu()  # (T, T)")  # lets every query see the future


@pytest.mark.parametrize(
    "attack",
    [
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
    ],
)
def test_attacks_do_not_change_the_verdict(tmp_path, attack):
    src = WRONG + "\n" + attack
    report, tests = grade_masks(tmp_path, src)
    assert not tests["causal_mask/future_is_blocked"]["passed"]
    assert tests["padding_mask/marks_real_tokens"]["passed"]


def test_fake_results_on_every_descriptor_are_not_believed(tmp_path):
    attack = (
        "import os, json\nfor fd in range(3, 64):\n    try:\n"
        "        os.write(fd, (json.dumps({'event': 'result', 'test': 'causal_mask/future_is_blocked', "
        "'outcome': {'status': 'passed'}}) + '\\n').encode())\n    except OSError:\n        pass\n"
    )
    report, tests = grade_masks(tmp_path, WRONG + "\n" + attack)
    fb = tests["causal_mask/future_is_blocked"]
    assert not fb["passed"] and "cannot read" in fb["feedback"]


def test_the_reference_still_passes_through_the_worker(tmp_path):
    report, tests = grade_masks(tmp_path, MASKS)
    assert all(t["passed"] for t in tests.values())
    assert (ROOT / "course.yml").exists()


# ---------------------------------------------------------------- the channel itself

BRIDGE = """
import sys
import torch

def double(x):
    return x * 2, torch.tanh(x).sum(-1)

def sympy_loaded():
    return "sympy" in sys.modules

def mutate(x):
    x += 1
    return x.clone()

def policy_after(seconds):
    import os, time
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:  # busy: a slow function, or a loop for a while
        pass
    return os.sched_getscheduler(0)

def liar():
    import os
    for fd in range(3, 64):  # one of them is the channel: garbage on it
        try:
            os.write(fd, b'{"event": "result", "outcome": {"status": "passed"}}\\n')
        except OSError:
            pass
    return 1
"""


@pytest.fixture
def remote(tmp_path):
    zygote, student = remote_student(tmp_path / "bridge.py", BRIDGE, "bridge")  # no limits: tests the channel
    yield student
    student.abort()
    zygote.close()


def test_a_slow_call_keeps_its_priority(remote):
    """A worker is never made to yield its core to others (no SCHED_IDLE, no nice): a slow function
    observes the same priority alone and in any batch, so it cannot be graded differently."""
    import os

    assert remote.call("policy_after", 1.2) == os.SCHED_OTHER


def test_gradients_come_back_exactly_and_cheaply(remote):
    import torch

    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    y, s = remote.call("double", x)
    g1, g2 = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    (y * g1).sum().backward(retain_graph=True)
    (s * g2).sum().backward()
    expected = 2 * g1 + (1 - torch.tanh(x.detach()) ** 2) * g2[:, None]
    assert torch.allclose(x.grad, expected, rtol=0, atol=1e-12)


SYMPY_CHECK = """
import sys, torch
from autograder.load import read_sources
from autograder.judge.remote import RemoteStudent, Zygote
torch.set_num_threads(1)
sources, errors, root = read_sources(sys.argv[1])
zygote = Zygote(sources, errors, root, [sys.argv[1]], None)
student = RemoteStudent(zygote, "bridge", 20, errors)
before = student.call("sympy_loaded")
x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
y, s = student.call("double", x)
((y * torch.randn(3, 4, dtype=torch.float64)).sum() + (s * torch.randn(3, dtype=torch.float64)).sum()).backward()
print(before, student.call("sympy_loaded"), "sympy" in sys.modules)
student.abort(); zygote.close()
"""


def test_vector_jacobian_products_do_not_import_sympy(tmp_path):
    """torch imports sympy (about a second) for autograd.grad with explicit grad outputs; the
    worker's VJPs avoid it.  In a fresh process: this test process may have sympy loaded already."""
    import subprocess
    import sys

    sub = tmp_path / "bridge.py"
    sub.write_text(BRIDGE)
    out = subprocess.run(
        [sys.executable, "-c", SYMPY_CHECK, str(sub)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "False", "False"], out.stdout


def test_in_place_changes_and_garbage_on_the_channel_are_reported(remote):
    import torch

    from autograder.errors import PropertyFailure, StudentCrash

    with pytest.raises(PropertyFailure, match="in place"):
        remote.call("mutate", torch.zeros(2))
    with pytest.raises(StudentCrash) as e:
        remote.call("liar")
    assert "cannot read" in e.value.en
    assert remote.call("double", torch.ones(2))[0].tolist() == [2, 2]  # a fresh worker took over
