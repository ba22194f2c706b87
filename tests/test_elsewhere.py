"""The device sentences on every machine: the simulated device (checks/elsewhere.py) behaves as a
GPU does for the code students write -- a device-aware function keeps the device and the values, one
that builds on the CPU returns a CPU tensor or raises -- and the marks cross the protocol; the GPUs
a device worker may see are read the way CUDA reads CUDA_VISIBLE_DEVICES (sandbox/devices.py)."""

import json
import math
import os

import numpy as np
import pytest
import torch

from autograder.checks.elsewhere import (
    ELSEWHERE,
    MARK,
    SIMULATED,
    Place,
    SimTensor,
    bring_back,
    device_of,
    put_elsewhere,
    uses_elsewhere,
)
from autograder.sandbox import devices
from autograder.sandbox import protocol as P

from .conftest import remote_student

# ---------------------------------------------------------------- students' ways of using the device


def pm_arange(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError("bad lengths")
    return torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]


def pm_loop(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else int(max_len)
    mask = torch.zeros(len(lengths), T, dtype=torch.bool, device=lengths.device)
    for b in range(len(lengths)):
        mask[b, : lengths[b]] = True
    return mask


def pm_tolist(lengths, max_len=None):
    L = lengths.tolist()
    T = max(L) if max_len is None else max_len
    return torch.tensor([[t < n for t in range(T)] for n in L], device=lengths.device)


def pm_tensor_T(lengths, max_len=None):
    T = lengths.max() if max_len is None else max_len  # a 0-dim tensor as arange's end
    return torch.arange(T, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def pm_numpy_roundtrip(lengths, max_len=None):
    n = lengths.cpu().numpy()
    T = int(n.max()) if max_len is None else max_len
    return torch.from_numpy(np.arange(T)[None, :] < n[:, None]).to(lengths.device)


def pm_new_tensor(lengths, max_len=None):
    T = int(lengths.max())
    return lengths.new_tensor([[t < n for t in range(T)] for n in lengths.tolist()]).bool()


def pm_stack_fstring(lengths, max_len=None):
    if (lengths < 0).any():
        raise ValueError(f"negative length {lengths.min():d}")
    return torch.stack([torch.arange(int(lengths.max()), device=lengths.device) < n for n in lengths])


def pm_pad_sequence(lengths, max_len=None):
    rows = [torch.ones(int(n), dtype=torch.bool, device=lengths.device) for n in lengths]
    return torch.nn.utils.rnn.pad_sequence(rows, batch_first=True)


def pm_type_as_cumsum(lengths, max_len=None):
    T = int(lengths.max())
    return torch.ones(len(lengths), T).type_as(lengths).cumsum(1) <= lengths[:, None]


def pm_new_zeros_index_put(lengths, max_len=None):
    T = int(lengths.max())
    mask = lengths.new_zeros((len(lengths), T), dtype=torch.bool)
    for b, n in enumerate(lengths.tolist()):
        mask[b, torch.arange(n)] = True  # CPU indices into a device tensor: allowed on a GPU too
    return mask


def pm_arange_cpu(lengths, max_len=None):  # mixes devices: raises on a GPU
    T = int(lengths.max())
    return torch.arange(T)[None, :] < lengths[:, None]


def pm_zeros_cpu(lengths, max_len=None):  # builds on the CPU: returns a CPU mask on a GPU
    T = int(lengths.max())
    mask = torch.zeros(len(lengths), T, dtype=torch.bool)
    for b, n in enumerate(lengths.tolist()):
        mask[b, :n] = True
    return mask


def cm_ones(T, device=None):
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def cm_to(T, device=None):
    return torch.tril(torch.ones(T, T)).bool().to(device)


def cm_arange(T, device=None):
    i = torch.arange(T, device=device)
    return i[None, :] <= i[:, None]


def cm_ignores(T, device=None):
    return torch.ones(T, T, dtype=torch.bool).tril()


def pe_table(T, d):
    pos = torch.arange(T, dtype=torch.float32)[:, None]
    w = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.zeros(T, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * w), torch.cos(pos * w)
    return pe


def add_to(X):
    return X + pe_table(X.shape[1], X.shape[2]).to(dtype=X.dtype, device=X.device)


def add_to_tensor(X):
    return X + pe_table(X.shape[1], X.shape[2]).to(X)


def add_type_as(X):
    return X + pe_table(X.shape[1], X.shape[2]).type_as(X)


def add_built_there(X):
    B, T, d = X.shape
    pos = torch.arange(T, dtype=X.dtype, device=X.device)[:, None]
    i = torch.arange(0, d, 2, dtype=X.dtype, device=X.device)
    ang = pos / 10000 ** (i / d)
    pe = torch.zeros(T, d, dtype=X.dtype, device=X.device)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(ang), torch.cos(ang)
    return X + pe


def add_as_tensor(X):
    return X + torch.as_tensor(pe_table(X.shape[1], X.shape[2]).numpy(), device=X.device, dtype=X.dtype)


def add_left_on_cpu(X):
    return X + pe_table(X.shape[1], X.shape[2]).to(X.dtype)


def add_returns_cpu(X):
    return X.cpu() + pe_table(X.shape[1], X.shape[2])


LENGTHS = torch.tensor([3, 1, 2])
PM_RIGHT = torch.tensor([[True, True, True], [True, False, False], [True, True, False]])


def run(fn, *args, **kwargs):
    """`fn` on the simulated device, as a worker runs it: (result brought back, the device used)."""
    place = Place()
    with place.active():
        out = fn(*place.put(args), **place.put(kwargs))
        return bring_back(out), str(place.device)


@pytest.mark.parametrize(
    "fn",
    [
        pm_arange,
        pm_loop,
        pm_tolist,
        pm_tensor_T,
        pm_numpy_roundtrip,
        pm_new_tensor,
        pm_stack_fstring,
        pm_pad_sequence,
        pm_type_as_cumsum,
        pm_new_zeros_index_put,
    ],
)
def test_a_device_aware_padding_mask_stays_on_the_device_with_its_values(fn):
    out, where = run(fn, put_elsewhere(LENGTHS))
    assert device_of(out) == where == str(SIMULATED)
    assert out.dtype == torch.bool and torch.equal(out, PM_RIGHT)


@pytest.mark.parametrize("fn", [cm_ones, cm_to, cm_arange])
def test_a_device_aware_causal_mask_is_built_on_the_device(fn):
    out, where = run(fn, 4, device=ELSEWHERE)
    assert device_of(out) == where
    assert torch.equal(out, torch.ones(4, 4, dtype=torch.bool).tril())


@pytest.mark.parametrize("fn", [add_to, add_to_tensor, add_type_as, add_built_there, add_as_tensor])
def test_a_device_aware_encoding_stays_on_x_s_device_with_its_values(fn):
    X = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0))
    out, where = run(fn, put_elsewhere(X))
    assert device_of(out) == where and out.dtype == X.dtype
    assert torch.allclose(out, X + pe_table(3, 4), atol=1e-5)


def test_code_that_mixes_devices_raises_as_on_a_gpu():
    for fn, arg in ((pm_arange_cpu, put_elsewhere(LENGTHS)), (add_left_on_cpu, put_elsewhere(torch.zeros(1, 2, 4)))):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            run(fn, arg)


def test_code_that_builds_on_the_cpu_returns_a_cpu_tensor():
    assert device_of(run(pm_zeros_cpu, put_elsewhere(LENGTHS))[0]) == "cpu"
    assert device_of(run(cm_ignores, 3, device=ELSEWHERE)[0]) == "cpu"
    assert device_of(run(add_returns_cpu, put_elsewhere(torch.zeros(1, 2, 4)))[0]) == "cpu"


def test_a_simulated_tensor_refuses_numpy_as_a_gpu_tensor_does():
    place = Place()
    with place.active():
        t = place.put(put_elsewhere(LENGTHS))
        assert isinstance(t, SimTensor) and t.device == SIMULATED and not t.is_cuda
        with pytest.raises(TypeError, match="Use Tensor.cpu"):
            t.numpy()
        assert t.tolist() == [3, 1, 2] and int(t.max()) == 3 and f"{t[0]:d}" == "3"


def test_in_place_changes_and_views_of_a_simulated_tensor_share_its_values():
    place = Place()
    with place.active():
        t = place.put(put_elsewhere(torch.zeros(2, 3)))
        row = t[1]
        row.add_(1)
        t[0, :2] = 5.0
        assert torch.equal(bring_back(t), torch.tensor([[5.0, 5.0, 0.0], [1.0, 1.0, 1.0]]))


def test_marks_are_found_anywhere_in_the_arguments_and_cross_the_protocol():
    lengths = put_elsewhere(LENGTHS)
    assert uses_elsewhere(((lengths,), {})) and uses_elsewhere([[1, {"d": ELSEWHERE}]])
    assert not uses_elsewhere([LENGTHS, "cpu", torch.device("cpu")])
    arrays = []
    enc = P.encode((lengths, ELSEWHERE, LENGTHS), arrays)
    back = P.decode(json.loads(json.dumps(enc)), arrays)
    assert getattr(back[0], MARK) == "elsewhere" and back[1] is ELSEWHERE and not hasattr(back[2], MARK)
    # what a worker sends back: a simulated tensor's values, and where it was
    place = Place()
    with place.active():
        out = place.put(lengths) + 1
    arrays = []
    enc = P.encode(out, arrays)
    assert enc["dev"] == "meta"
    got = P.decode(json.loads(json.dumps(enc)), arrays)
    assert device_of(got) == "meta" and torch.equal(got, LENGTHS + 1)
    for bad in ("../etc", "CUDA:0", "x" * 40):  # a worker names a device only in the allowed form
        with pytest.raises(P.ProtocolError):
            P.decode({"t": 0, "rg": False, "dev": bad}, [np.zeros(1)])
    with pytest.raises(P.ProtocolError):
        P.decode({"dev": "meta", "x": 1}, [])


def test_the_simulated_device_imports_no_compiler():
    """A worker must not pay torch._dynamo's import (1.5-3 s) for a device probe."""
    import subprocess
    import sys

    code = (
        "import sys, torch\nfrom autograder.checks.elsewhere import *\np = Place()\n"
        "with p.active():\n    x = p.put(put_elsewhere(torch.tensor([2, 1])))\n"
        "    (torch.arange(2, device=x.device)[None] < x[:, None]).tolist()\n"
        "print(any(m.startswith('torch._dynamo.') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr[-2000:]


# ---------------------------------------------------------------- which GPUs a device worker sees

GPUS = [("NVIDIA H200", "GPU-aaaa-1111"), ("NVIDIA H200", "GPU-bbbb-2222"), ("NVIDIA A100", "GPU-cccc-3333")]


@pytest.mark.parametrize(
    "visible,names",
    [
        (None, ["NVIDIA H200", "NVIDIA H200", "NVIDIA A100"]),
        ("", []),
        ("2", ["NVIDIA A100"]),
        ("1,0", ["NVIDIA H200", "NVIDIA H200"]),
        ("0,7,1", ["NVIDIA H200"]),
        ("0,0", []),
        ("-1", []),
        ("GPU-cccc", ["NVIDIA A100"]),
        ("GPU-", []),
        ("1,GPU-aaaa", ["NVIDIA H200", "NVIDIA H200"]),
        ("abc", []),
    ],
)
def test_cuda_visible_devices_is_read_as_cuda_reads_it(visible, names):
    assert [n for n, _ in devices.select(GPUS, visible)] == names


def test_hiding_keeps_what_the_grader_was_started_with(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    monkeypatch.delenv(devices.ORIGINAL, raising=False)
    monkeypatch.delenv("HIP_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(devices, "_SAVED", devices._UNSET)
    devices.hide()
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "" and devices.original() == "1"
    devices.hide()  # idempotent: what it was started with is kept
    assert devices.original() == "1" and devices.ORIGINAL not in os.environ  # nothing for unrelated programs
    env = devices.show({"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": ""})  # the sandbox server's
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and "HIP_VISIBLE_DEVICES" not in env
    assert json.loads(env[devices.ORIGINAL]) == "1"
    monkeypatch.setattr(devices, "_SAVED", devices._UNSET)  # a server started with that environment
    monkeypatch.setenv(devices.ORIGINAL, env[devices.ORIGINAL])
    assert devices.original() == "1"
    monkeypatch.delenv(devices.ORIGINAL)
    monkeypatch.setattr(devices, "_SAVED", devices._UNSET)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    with devices.hidden():  # the in-process runner: for a while only
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "" and devices.original() is None
    assert "CUDA_VISIBLE_DEVICES" not in os.environ and devices._SAVED is devices._UNSET
    assert "CUDA_VISIBLE_DEVICES" not in devices.show({})


def test_a_cpu_build_sees_no_gpu():
    assert devices.summary()["cuda_build"] == torch.version.cuda
    if torch.version.cuda is None:  # (a CUDA build: bench/gpu_check.py checks what it sees)
        assert devices.visible() == []


# ---------------------------------------------------------------- the device worker, in the real sandbox

DEVICE_FUNCS = """
import torch


def padding_mask(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else int(max_len)
    return torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]


def on_cpu(lengths):
    return torch.zeros(len(lengths), dtype=torch.bool)


def bump(X):
    X += 1
    return X
"""


@pytest.fixture
def sandboxed(tmp_path):
    sub = tmp_path / "devices.py"
    zygote, student = remote_student(sub, DEVICE_FUNCS, "devices", {"remove_workdir": True, "submission": str(sub)})
    yield student
    student.abort()
    zygote.close()


def test_without_a_gpu_the_first_worker_runs_the_device_sentences_on_the_simulated_device(sandboxed, monkeypatch):
    monkeypatch.setattr(devices, "visible", lambda: [])
    out = sandboxed.call("padding_mask", put_elsewhere(LENGTHS))
    assert device_of(out) == sandboxed.elsewhere == "meta" and torch.equal(out, PM_RIGHT)
    assert sandboxed._device is None  # no second worker
    assert device_of(sandboxed.call("on_cpu", put_elsewhere(LENGTHS))) == "cpu"
    assert device_of(sandboxed.call("padding_mask", LENGTHS)) == "cpu"  # nothing marked: the CPU, as always


def test_with_a_gpu_a_device_worker_takes_the_device_sentences(sandboxed, monkeypatch):
    """Where the grader sees a GPU, a call with an argument on another device goes to a worker of
    its own, whose view holds the GPU; here (no CUDA) it says why it could not use it and runs on
    the simulated device: the verdict is the same."""
    monkeypatch.setattr(devices, "visible", lambda: ["a GPU"])
    assert device_of(sandboxed.call("padding_mask", LENGTHS)) == "cpu"
    first = sandboxed.pid
    out = sandboxed.call("padding_mask", put_elsewhere(LENGTHS))
    worker = sandboxed._device
    assert worker is not None and worker.pid not in (None, first) and sandboxed.pid == first
    assert worker.levels.get("devices") is True and "as" not in worker.levels.get("rlimits", {})
    assert "as" in sandboxed.levels.get("rlimits", {})  # every other worker keeps its address-space limit
    assert device_of(out) == sandboxed.elsewhere != "cpu" and torch.equal(out, PM_RIGHT)
    if torch.version.cuda is None:  # a CPU build: the simulated device, and why
        assert sandboxed.elsewhere == "meta" and "is_available() is False" in sandboxed.device_problem
    sandboxed.abort()
    assert sandboxed._device.pid is None  # both workers reaped


def test_an_input_on_the_device_changed_in_place_is_seen_as_on_a_gpu(sandboxed, monkeypatch):
    """`X += 1` on the student's own copy of X is an input changed in place, on the simulated
    device as on a GPU: in the worker and in this process alike (the diagnosis compares the two)."""
    from autograder.errors import PropertyFailure
    from autograder.properties._harness import Student

    monkeypatch.setattr(devices, "visible", lambda: [])
    with pytest.raises(PropertyFailure, match="modified one of its inputs in place"):
        sandboxed.call("bump", put_elsewhere(torch.zeros(2, 3)))

    def bump(X):
        X += 1
        return X

    class Namespace:
        load_errors = []

        def get(self, name, prefer=None):
            return bump if name == "bump" else None

    with pytest.raises(PropertyFailure, match="modified one of its inputs in place"):
        Student(Namespace(), (), "devices").call("bump", put_elsewhere(torch.zeros(2, 3)))
    assert P.same_values(SimTensor(torch.ones(2)), SimTensor(torch.ones(2)))
    assert not P.same_values(SimTensor(torch.ones(2)), SimTensor(torch.zeros(2)))


def test_unseen_hides_the_gpu_from_warm_ups_and_puts_everything_back():
    """What a warm-up in a process that forks sees of CUDA: nothing, and nothing can start it."""
    saved = torch.cuda.is_available, torch.cuda.device_count, torch.cuda._lazy_init
    with devices.unseen():
        assert torch.cuda.is_available() is False and torch.cuda.device_count() == 0
        with pytest.raises(RuntimeError, match="not started in a process of the grader"):
            torch.cuda._lazy_init()
    assert (torch.cuda.is_available, torch.cuda.device_count, torch.cuda._lazy_init) == saved
