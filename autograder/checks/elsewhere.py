"""A device that is not the CPU, for the contract's device sentences, on every machine.

"Built on `device`", "on `lengths.device`", "in X's device" cannot show on the CPU alone: every
tensor is on the CPU whether or not the function used the device.  So the properties also give
the student's code a device that is not the CPU, and check where the result is.

The judge's side (the properties; it never touches a GPU, see devices.py):

    ELSEWHERE             a device argument meaning "a device other than the CPU"
                          (``causal_mask(T, device=ELSEWHERE)``)
    put_elsewhere(t)      a copy of tensor `t` marked to be on that device (``lengths``, ``X``)
    device_of(t)          where a result is: "cpu", or the device the code ran on ("cuda:0", "meta")
    uses_elsewhere(v)     does a call's argument list hold either?

The side that runs the code (a worker, or the in-process Student) turns the marks into a device
with `Place`:

* the real GPU, "cuda:0", in a device worker on a machine with CUDA, when CUDA starts there;
* a simulated device everywhere else: tensors that say they are on "meta" (``SimTensor``) but hold
  their values on the CPU, under a dispatch mode that runs every operation on the CPU, keeps a
  result on the simulated device when an input was on it (or when it was asked for with
  ``device=``), and refuses, as CUDA does, to mix it with a CPU tensor of one or more dimensions
  ("Expected all tensors to be on the same device").  Code that uses the device passes, code that
  builds on the CPU returns a CPU tensor or raises, exactly as on a GPU -- and values,
  ``.item()``, ``int()``, ``.tolist()`` and comparisons work, which the real "meta" device
  (no data) would refuse.

Either way the result crosses back as a CPU tensor that remembers its device (``device_of``), so a
property gives the same verdict and the same feedback on a laptop and on a GPU server.
"""

import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode, return_and_correct_aliasing
from torch.utils._pytree import tree_map

MARK = "_seqgrader_device"  # attribute of a judge-side tensor: "elsewhere" (an input) or where a result was
SIMULATED = torch.device("meta")


class _Elsewhere:
    """The device argument "a device other than the CPU" (a singleton; travels as its name)."""

    __slots__ = ()
    name = "elsewhere"

    def __repr__(self):
        return "<another device>"

    def __reduce__(self):
        return "ELSEWHERE"

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self


ELSEWHERE = _Elsewhere()


def put_elsewhere(t):
    """A copy of `t`, marked to be put on the other device when the student's code gets it."""
    out = t.detach().clone()
    setattr(out, MARK, ELSEWHERE.name)
    return out


def device_of(x):
    """Where a tensor the student's code returned is ("cpu", "cuda:0", "meta"); None for a
    value that is not a tensor."""
    if not isinstance(x, torch.Tensor):
        return None
    mark = getattr(x, MARK, None)
    return mark if isinstance(mark, str) else str(x.device)


def mark(t, device):
    """`t` (a CPU tensor), remembering that the code put it on `device` (a string)."""
    setattr(t, MARK, str(device))
    return t


def uses_elsewhere(value, depth=0):
    """True if `value` (an argument, a list of them) holds ELSEWHERE or a tensor put_elsewhere."""
    if value is ELSEWHERE:
        return True
    if isinstance(value, torch.Tensor):
        return getattr(value, MARK, None) == ELSEWHERE.name
    if depth > 20:
        return False
    if isinstance(value, (tuple, list)):
        return any(uses_elsewhere(v, depth + 1) for v in value)
    if type(value) is dict:
        return any(uses_elsewhere(v, depth + 1) for v in value.values())
    return False


# ---------------------------------------------------------------- the simulated device


class SimTensor(torch.Tensor):
    """A tensor on the simulated device: it says "meta", its values live on the CPU (`elem`)."""

    elem: torch.Tensor
    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, elem):
        r = torch.Tensor._make_wrapper_subclass(
            cls,
            elem.size(),
            strides=elem.stride(),
            storage_offset=elem.storage_offset(),
            dtype=elem.dtype,
            layout=elem.layout,
            device=SIMULATED,
            requires_grad=False,
        )
        r.elem = elem
        return r

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs or {})

    # what a CUDA tensor allows and a tensor subclass would refuse (values through the CPU)
    def tolist(self):
        """The values as nested lists, read on the CPU (as a CUDA tensor allows)."""
        return self.elem.tolist()

    def numpy(self, *, force=False):
        """Refused, as for a CUDA tensor ("Use Tensor.cpu()"); with `force`, the CPU values as an array."""
        if force:
            return self.elem.numpy(force=True)
        raise TypeError(
            "can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
        )

    def __array__(self, dtype=None, copy=None):
        return self.numpy()

    def __repr__(self, *, tensor_contents=None):
        return repr(self.elem)[:-1] + ", device='meta')"

    def __format__(self, spec):
        if self.dim() == 0:
            return self.elem.item().__format__(spec)
        return repr(self).__format__(spec)

    def __reduce_ex__(self, proto):
        raise TypeError("a tensor on another device cannot be pickled here")

    def as_subclass(self, cls):  # the subclass holds the values, on the simulated device still
        """`self` viewed as `cls`, still on the simulated device."""
        return SimTensor(self.elem.as_subclass(cls))


def _wrap(t):
    return t if isinstance(t, SimTensor) or not isinstance(t, torch.Tensor) else SimTensor(t)


def _is_sim_device(d):
    if isinstance(d, str):
        try:
            d = torch.device(d)
        except (RuntimeError, ValueError):
            return False
    return isinstance(d, torch.device) and d.type == SIMULATED.type


# operations CUDA runs with a CPU tensor among a GPU tensor's arguments (indices, copies)
MIXING_ALLOWED = {
    "_to_copy",
    "copy_",
    "copy",
    "index",
    "index_put_",
    "_index_put_impl_",
    "index_put",
    "set_",
    "_local_scalar_dense",
    "lift_fresh",
    "lift_fresh_copy",
    "detach",
    "alias",
}
SAME_DEVICE = "Expected all tensors to be on the same device, but found at least two devices, meta and cpu!"


def _dispatch(func, args, kwargs):
    """Run `func` on the CPU values; the result is on the simulated device when an input was (or
    when device= asks for it), on the CPU when device= asks for the CPU."""
    sim = cpu = False

    def unwrap(e):
        nonlocal sim, cpu
        if isinstance(e, SimTensor):
            sim = True
            return e.elem
        if isinstance(e, torch.Tensor) and e.dim() > 0 and e.device.type == "cpu":
            cpu = True
        return e

    a = tree_map(unwrap, args)
    k = {}
    want = None  # the device= of the call, if any: "sim" or "cpu"
    for name, v in kwargs.items():
        if name == "device" and v is not None:
            want = "sim" if _is_sim_device(v) else "cpu"
            k[name] = torch.device("cpu") if want == "sim" else v
        else:
            k[name] = tree_map(unwrap, v)
    op = func.overloadpacket.__name__
    if sim and cpu and op not in MIXING_ALLOWED and want is None:
        raise RuntimeError(SAME_DEVICE)
    out = func(*a, **k)
    if op == "_local_scalar_dense":
        return out
    if want == "cpu" or (want is None and not sim):
        return out
    out = tree_map(_wrap, out)
    if sim and want is None:  # an in-place op returns its own argument, a view shares it
        try:
            return return_and_correct_aliasing(func, args, kwargs, out)
        except Exception:  # noqa: BLE001 - the values are right either way
            return out
    return out


class _SimOps(TorchDispatchMode):
    """Every aten operation while the simulated device is in use: see _dispatch."""


def _mode_dispatch(self, func, types, args=(), kwargs=None):
    return _dispatch(func, args, kwargs or {})


# set after the class exists: TorchDispatchMode wraps a __torch_dispatch__ defined in the class
# body in torch._dynamo.disable, whose first call imports torch._dynamo (1.5-3 s in every worker)
_SimOps.__torch_dispatch__ = _mode_dispatch

_DATA_FACTORIES = {torch.tensor, torch.as_tensor, torch.asarray}


class _SimFactories(torch.overrides.TorchFunctionMode):
    """torch.tensor(data, device=...) and friends, which copy their data to the device below the
    dispatcher: made on the CPU, then put on the simulated device."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _DATA_FACTORIES and _is_sim_device(kwargs.get("device")):
            kwargs["device"] = torch.device("cpu")
            return _wrap(func(*args, **kwargs))
        if (
            func is torch.Tensor.new_tensor
            and args
            and isinstance(args[0], SimTensor)
            and (kwargs.get("device") is None or _is_sim_device(kwargs.get("device")))
        ):
            kwargs["device"] = torch.device("cpu")
            return _wrap(args[0].elem.new_tensor(*args[1:], **kwargs))
        return func(*args, **kwargs)


@contextlib.contextmanager
def simulated():
    """Operations on the simulated device work while this is active."""
    with _SimFactories(), _SimOps():
        yield


# ---------------------------------------------------------------- turning the marks into a device


class Place:
    """Where the code under test runs the marked arguments.  `gpu`: a device worker may use the
    real GPU (it has one in its view and CUDA starts); the simulated device otherwise."""

    def __init__(self, gpu=False):
        self.gpu = gpu
        self._device = None
        self.problem = None  # why the real GPU could not be used, when it was allowed

    GPU_MEMORY = 2 << 30  # bytes of GPU memory torch's allocator gives a device worker (the probes need kB)

    @property
    def device(self):
        """The device the marked arguments go to, decided on first use: the GPU when allowed and
        CUDA starts (its memory capped), else the simulated one (why not the GPU, in `problem`)."""
        if self._device is None:
            self._device = SIMULATED
            if self.gpu:
                try:
                    if not torch.cuda.is_available():
                        raise RuntimeError("torch.cuda.is_available() is False in the worker")
                    torch.zeros(1, device="cuda").add_(1).cpu()
                    self._device = torch.device("cuda", torch.cuda.current_device())
                except Exception as e:  # noqa: BLE001 - the simulated device checks the same sentence
                    self.problem = f"{type(e).__name__}: {str(e)[:200]}"
                else:
                    self._cap_memory()
        return self._device

    def _cap_memory(self):
        """A cap on what torch's allocator takes of the GPU, which other workers share: a best
        effort against code that fills it (the student's code could lift it; RLIMIT_DATA still caps
        host memory)."""
        try:
            total = torch.cuda.get_device_properties(self._device).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, self.GPU_MEMORY / total), self._device)
        except Exception:  # noqa: BLE001 - no cap: the device is usable all the same
            pass

    @property
    def simulated(self):
        """True when the device is the simulated one ("meta")."""
        return self.device.type == SIMULATED.type

    def active(self):
        """The context the student's code runs in."""
        return simulated() if self.simulated else contextlib.nullcontext()

    def put(self, value, depth=0):
        """The arguments with the marks replaced: ELSEWHERE by the device, a marked tensor by a
        tensor on it (call inside active())."""
        if value is ELSEWHERE:
            return self.device
        if isinstance(value, torch.Tensor):
            if getattr(value, MARK, None) != ELSEWHERE.name:
                return value
            t = value.detach()  # a device probe asks for no gradient
            return SimTensor(t.clone()) if self.simulated else t.to(self.device)
        if depth > 20:
            return value
        if isinstance(value, tuple):
            return tuple(self.put(v, depth + 1) for v in value)
        if isinstance(value, list):
            return [self.put(v, depth + 1) for v in value]
        if type(value) is dict:
            return {k: self.put(v, depth + 1) for k, v in value.items()}
        return value


def to_cpu(t):
    """(a CPU tensor with the values of `t`, the device `t` was on as a string, or None for the CPU)."""
    if isinstance(t, SimTensor):
        return t.elem, str(SIMULATED)
    if t.device.type not in ("cpu", "meta"):
        return t.detach().cpu(), str(t.device)
    return t, None


def bring_back(value, depth=0):
    """A result with every tensor on the CPU, marked with the device it was on (in-process)."""
    if isinstance(value, torch.Tensor):
        t, device = to_cpu(value)
        return mark(t.detach().clone() if device else t, device) if device else t
    if depth > 20:
        return value
    if isinstance(value, tuple):
        return tuple(bring_back(v, depth + 1) for v in value)
    if isinstance(value, list):
        return [bring_back(v, depth + 1) for v in value]
    if type(value) is dict:
        return {k: bring_back(v, depth + 1) for k, v in value.items()}
    return value
