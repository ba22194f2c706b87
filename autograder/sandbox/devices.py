"""The machine's accelerators, as the grader sees them without ever starting them.

A CUDA build of torch changes two things about `fork`, and the grader forks all the time (judges,
the sandbox server, zygotes, workers; see server.py):

* once a process has initialised CUDA (``torch.cuda.is_available()``, a tensor on the GPU, or the
  autograd engine asking how many GPUs there are), a child forked from it cannot use CUDA;
* once a process has run a backward pass on a machine where CUDA is visible, the autograd engine
  has started one thread per GPU, and a child forked from it cannot run backward at all
  ("Unable to handle autograd's threading in combination with fork-based multiprocessing").

So no grading process, judge, server or zygote ever sees the GPU: ``hide()`` sets
``CUDA_VISIBLE_DEVICES`` to empty in the grading process before anything touches CUDA (the judges
it forks inherit it), and a worker hides it too, unless it is a *device worker*: the one worker a
judge starts for the contract's device sentences (``causal_mask(T, device)``, a mask on
``lengths.device``, an encoding on ``X.device``; see elsewhere.py), which sees the GPUs the grader
was started with.  Everything else runs on the CPU, exactly as on a machine without a GPU.

What the grader was started with is kept by ``hide()`` in this process (the judges it forks
inherit it) and handed to the sandbox server it starts as ``SEQGRADER_CUDA_VISIBLE_DEVICES``
(JSON: the string, or null when it was unset; ``show()``).  ``visible()`` reads the GPUs through
NVML, which does not initialise CUDA, with the same rules as CUDA itself for
``CUDA_VISIBLE_DEVICES``.
"""

import contextlib
import ctypes
import json
import os

VISIBLE = "CUDA_VISIBLE_DEVICES"
ORIGINAL = "SEQGRADER_CUDA_VISIBLE_DEVICES"  # JSON: what VISIBLE was when the grader started (null: unset)
# what a process that must not see a GPU sets (ROCm builds read HIP_VISIBLE_DEVICES as well)
HIDDEN = {VISIBLE: "", "HIP_VISIBLE_DEVICES": ""}
# variables that decide what CUDA sees and how it starts: the sandbox server and its device
# workers keep them (server.server_environment), the self-check's environment names them
PASSED_ON = (
    "CUDA_DEVICE_ORDER",
    "CUDA_MODULE_LOADING",
    "CUDA_LAUNCH_BLOCKING",
    "LD_LIBRARY_PATH",
    "PYTORCH_NVML_BASED_CUDA_CHECK",
    "PYTORCH_CUDA_ALLOC_CONF",
    "NVIDIA_VISIBLE_DEVICES",
)

_UNSET = object()
_SAVED = _UNSET  # CUDA_VISIBLE_DEVICES before hide() (None: it was not set)
_VISIBLE_CACHE = {}


def original():
    """CUDA_VISIBLE_DEVICES as the grader was started with it (None: not set)."""
    if _SAVED is not _UNSET:
        return _SAVED
    saved = os.environ.get(ORIGINAL)  # a sandbox server: what its grading process was started with
    if saved is not None:
        try:
            value = json.loads(saved)
            return value if value is None or isinstance(value, str) else None
        except ValueError:
            return None
    return os.environ.get(VISIBLE)


def hide():
    """In a trusted process (a grading process, nbgrader's autograde): remember what the grader
    was started with, then hide every GPU from this process and from what it forks.  Idempotent;
    call it before anything asks torch about CUDA (CUDA reads the variable when it starts)."""
    global _SAVED
    if _SAVED is _UNSET:
        _SAVED = original()
    os.environ.update(HIDDEN)


@contextlib.contextmanager
def hidden():
    """hide() for a while: the in-process runner grades in its caller's process, whose
    environment (and the programs it starts later) it must leave as it found it."""
    global _SAVED
    before, saved = {k: os.environ.get(k) for k in HIDDEN}, _SAVED
    hide()
    try:
        yield
    finally:
        _SAVED = saved
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def show(env):
    """The variables of `env` (a dict) set so that CUDA sees what the grader was started with:
    the environment of the sandbox server, whose device workers may use the GPU."""
    value = original()
    for key in HIDDEN:
        env.pop(key, None)
    if value is not None:
        env[VISIBLE] = value
    for key in PASSED_ON:
        if os.environ.get(key) is not None:
            env[key] = os.environ[key]
    env[ORIGINAL] = json.dumps(value)
    return env


def cuda_build():
    """The CUDA version this torch was built for, or None (a CPU or ROCm build)."""
    import torch

    return getattr(torch.version, "cuda", None) or None


def _nvml():
    """[(name, uuid)] of every GPU NVML knows, or [] (no driver, no NVML).  NVML does not
    initialise CUDA: a process may ask and fork afterwards."""
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return []
    out = []
    try:
        if lib.nvmlInit_v2() != 0:
            return []
        count = ctypes.c_uint(0)
        if lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            return []
        for i in range(min(count.value, 64)):
            handle = ctypes.c_void_p()
            if lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(i), ctypes.byref(handle)) != 0:
                break
            name, uuid = ctypes.create_string_buffer(96), ctypes.create_string_buffer(96)
            lib.nvmlDeviceGetName(handle, name, ctypes.c_uint(96))
            lib.nvmlDeviceGetUUID(handle, uuid, ctypes.c_uint(96))
            out.append((name.value.decode(errors="replace"), uuid.value.decode(errors="replace")))
    except (AttributeError, OSError):
        return []
    finally:
        try:
            lib.nvmlShutdown()
        except (AttributeError, OSError):
            pass
    return out


def select(gpus, visible):
    """The GPUs of `gpus` ([(name, uuid)], in NVML's order) that CUDA shows for a
    CUDA_VISIBLE_DEVICES of `visible` (None: all of them).  As CUDA reads it: a comma-separated
    list of indices or UUID prefixes, ending at the first entry that names no GPU; a repeated
    entry hides them all."""
    if visible is None:
        return list(gpus)
    out, seen = [], set()
    for token in visible.split(","):
        token = token.strip()
        if not token:
            break
        if token in seen:
            return []
        seen.add(token)
        if token.startswith(("GPU-", "MIG-")):
            match = [g for g in gpus if g[1].startswith(token)] if token.startswith("GPU-") else gpus[:1]
            if len(match) != 1:
                break
            out.append(match[0])
            continue
        digits = token.lstrip("+")
        n = 0
        while n < len(digits) and digits[n].isdigit():
            n += 1
        if n == 0 or int(digits[:n]) >= len(gpus):
            break
        out.append(gpus[int(digits[:n])])
    return out


def visible():
    """The names of the GPUs a device worker would see ([] on a CPU build of torch, without a
    driver, or with the GPUs hidden when the grader started).  Cached per process."""
    key = original()
    if key not in _VISIBLE_CACHE:
        _VISIBLE_CACHE[key] = [name for name, _uuid in select(_nvml(), key)] if cuda_build() else []
    return _VISIBLE_CACHE[key]


def summary():
    """Plain data for the self-check's environment: the build, the GPUs a device worker sees and
    the variables that decide it (nothing is initialised to find out)."""
    import torch

    return {
        "torch": torch.__version__,
        "cuda_build": cuda_build(),
        "hip_build": getattr(torch.version, "hip", None),
        "git": getattr(torch.version, "git_version", None),
        "gpus": visible(),
        VISIBLE: original(),
        "env": {k: os.environ[k] for k in PASSED_ON if k in os.environ},
    }


@contextlib.contextmanager
def unseen():
    """While active, torch's Python side reports no GPU (``torch.cuda.is_available()`` False, no
    device counted) and refuses to start CUDA: for warm-ups in a process that forks later, whose
    imports (torch._dynamo and torch._inductor check the GPU's capability as they load) would
    otherwise start CUDA in it, and so break CUDA in every child.  What they cache stays "no GPU",
    which only a device worker could use, for nothing it is asked to do."""
    import torch

    def refuse(*_a, **_k):
        raise RuntimeError("CUDA is not started in a process of the grader that forks (devices.unseen)")

    saved = {name: getattr(torch.cuda, name) for name in ("is_available", "device_count", "_lazy_init")}
    torch.cuda.is_available, torch.cuda.device_count, torch.cuda._lazy_init = ((lambda: False), (lambda: 0), refuse)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(torch.cuda, name, value)
