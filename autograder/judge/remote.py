"""The trusted side: a judge talks to the student's code only through a worker process.

    judge (runs the properties, the torch references, the verdict; never imports student code)
      └── zygote  (forked by the sandbox server, which holds nothing of the grader's: server.py)
            └── worker (forked per (re)start; limits applied; runs the submission; see worker.py)

`RemoteStudent` has the same interface as properties/_harness.Student (call, new, invoke,
raises, lookup, last_call), so the properties do not know which one they talk to.  Outputs
come back as new tensors built from checked `.npy` arrays; when the inputs require grad, the
outputs are attached to them through `_Attach`, whose backward asks the worker for the
vector-Jacobian product, so `out.backward()` and `torch.autograd.grad` in a property just work.
An `nn.Module` the student's class returns is mirrored by a `RemoteObject` whose `nn.Linear`
children are real local replicas: a property may read and overwrite their weights, and the new
values are sent along with the next call.
"""

import functools
import os
import socket
import time

import torch

from .. import safe
from ..checks.elsewhere import MARK, uses_elsewhere
from ..errors import MissingFunction, PropertyFailure, StudentCrash
from ..properties._harness import argument_position, fmt, fmt_call, raise_container_mutated
from ..sandbox import protocol as P

# ---------------------------------------------------------------- zygote


class Zygote:
    """The judge's handle on a zygote: a process of the sandbox server (server.py) that holds the
    submission's sources and forks workers for this judge (spawn) and kills them (reap).

    The server holds nothing of the grader's, so a worker can find nothing of the judge's in its
    memory.  Student code never runs in a process descended from the judge: where there is no
    server, or it does not take the submission, there is no zygote (SandboxUnavailable says why)."""

    def __init__(self, sources, errors, root, roots, limit_options=None, train=False):
        from ..sandbox import server as S

        init = {
            "sources": sources,
            "errors": list(errors),
            "root": root,
            "roots": list(roots),
            "limit_options": limit_options,
        }
        self.pid = None
        self.limited = limit_options is not None  # its workers send their levels first (worker.py)
        self.allow_weak = bool((limit_options or {}).get("allow_weak"))
        srv = S.connect()
        if srv is None:
            raise SandboxUnavailable(S.reason())
        self.worker_cpu = 0.0
        try:
            self.sock = srv.open(train=train)
            self.channel = P.Channel(self.sock, buffered=False)
        except OSError as e:
            raise SandboxUnavailable(f"the sandbox server did not answer ({e.strerror or e})") from None
        try:
            S.send_init(self.sock, init)
        except (OSError, P.ProtocolError) as e:
            self.sock.close()
            raise SandboxUnavailable(f"the sandbox server could not take the submission ({e})") from None

    def spawn(self, skip=(), focus=None, needed=(), devices=False):
        """A new worker: (pid, its socket).  `devices`: a device worker (devices.py)."""
        P.send(
            self.sock, {"spawn": {"skip": list(skip), "focus": focus, "needed": list(needed), "devices": bool(devices)}}
        )
        header, _, fds = self.channel.recv_fds(1)
        if not isinstance(header.get("pid"), int) or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise RuntimeError("the zygote did not start a worker")
        return header["pid"], socket.socket(fileno=fds[0])

    def reap(self, pid, grace=0.0):
        """Kill the worker (and what it started) and return how it ended, e.g. 'signal SIGSEGV'.
        `grace`: seconds to let a worker that is already dying finish (to learn its signal).
        The CPU seconds the worker used are added to `self.worker_cpu`."""
        try:
            P.send(self.sock, {"reap": pid, "grace": float(grace)})
            header, _ = self.channel.recv()
        except (OSError, P.ProtocolError):
            return "unknown"
        cpu = header.get("cpu")
        self.worker_cpu += float(cpu) if isinstance(cpu, (int, float)) else 0.0
        return safe.one_line(str(header.get("status") or ""), 60) or "unknown"

    def close(self):
        """Close the socket to the zygote, which then kills every worker it forked (server.zygote_loop)."""
        try:
            self.sock.close()
        except OSError:
            pass


class SandboxUnavailable(Exception):
    """No zygote for this submission: no sandbox server here, or it could not take the submission."""


class WeakSandbox(Exception):
    """A worker's sandbox misses a guarantee (limits.missing) and weak sandboxes are not allowed:
    the worker ran no student code.  `levels`: what it had, as the judge verified it."""

    def __init__(self, levels):
        from ..sandbox.limits import missing

        self.levels, self.missing = levels, missing(levels)
        super().__init__("; ".join(self.missing))


# ---------------------------------------------------------------- autograd bridge


class _Attach(torch.autograd.Function):
    """Connect outputs computed in the worker to the judge's inputs; backward asks the worker."""

    @staticmethod
    def forward(ctx, remote, call_id, n_leaves, differentiable, *tensors):
        ctx.remote, ctx.call_id, ctx.n_leaves = remote, call_id, n_leaves
        ctx.leaves = [(t.shape, t.dtype) for t in tensors[:n_leaves]]
        outs = tuple(t.clone() for t in tensors[n_leaves:])
        ctx.mark_non_differentiable(*[o for o, d in zip(outs, differentiable) if not d])
        return outs

    @staticmethod
    def backward(ctx, *grads):
        got = ctx.remote._vjp(ctx.call_id, grads, ctx.leaves)
        return (None, None, None, None, *got, *([None] * len(grads)))


def _replace(value, it):
    if isinstance(value, torch.Tensor):
        new = next(it)
        if getattr(value, MARK, None) is not None:
            setattr(new, MARK, getattr(value, MARK))  # where the worker had it (elsewhere.device_of)
        return new
    if isinstance(value, tuple):
        return tuple(_replace(v, it) for v in value)
    if isinstance(value, list):
        return [_replace(v, it) for v in value]
    if type(value) is dict:
        return {k: _replace(v, it) for k, v in value.items()}
    return value


def _rg_flags(enc, out):
    if isinstance(enc, dict):
        if "t" in enc or "bf" in enc or "meta" in enc:
            out.append(bool(enc.get("rg")))
        for key in ("tuple", "list"):
            for v in enc.get(key, []) if isinstance(enc.get(key), list) else []:
                _rg_flags(v, out)
        for item in enc.get("dict", []) if isinstance(enc.get("dict"), list) else []:
            if isinstance(item, list) and len(item) == 2:
                _rg_flags(item[1], out)
    return out


# ---------------------------------------------------------------- what the judge takes of the worker's word

# Everything a worker says is data, and every text of it is capped here, in the judge: a worker
# whose code was replaced by the student's still cannot make a report, a page or a log line grow
# past these (and safe.py takes out what a terminal or a spreadsheet would act on).
MESSAGE_CHARS, MESSAGE_LINES = 300, 4  # an exception's message
WHERE_CHARS, WHERE_LINES = 600, 6  # the student's own frames of a traceback (3 frames, 2 lines each)
LOAD_ERROR_CHARS, MAX_LOAD_ERRORS = 600, 50  # the problems met loading the submission
TYPE_CHARS = 100  # a type's name
MAX_NAME_CHARS, MAX_NAMES = 200, 5000  # the names a submission defines
MAX_MRO = 20  # the classes of an exception
MAX_CHILDREN = 32  # the sub-modules of an object the student's class made


def _linear(d, arrays):
    """The judge's replica of an nn.Linear child of the student's module, built from the arrays the
    worker sent (already allocated within the protocol's caps), never from sizes it claims; None
    for anything that is not a weight matrix (and a bias vector) of floats."""
    try:
        w = P.decode(d.get("weight"), arrays)
        b = P.decode(d.get("bias"), arrays) if d.get("bias") is not None else None
    except P.ProtocolError:
        return None
    if not isinstance(w, torch.Tensor) or w.dim() != 2 or not w.is_floating_point() or w.is_meta:
        return None
    if b is not None and (not isinstance(b, torch.Tensor) or b.shape != (w.shape[0],) or not b.is_floating_point()):
        return None
    lin = torch.nn.Linear(w.shape[1], w.shape[0], bias=b is not None, device="meta")  # allocates nothing
    lin.weight = torch.nn.Parameter(w.detach().float(), requires_grad=False)
    if b is not None:
        lin.bias = torch.nn.Parameter(b.detach().float(), requires_grad=False)
    return lin


# ---------------------------------------------------------------- the student, seen from the judge


class RemoteObject:
    """Judge-side mirror of an object the student's class created in the worker."""

    def __init__(self, handle, type_name, children):
        self._handle, self._type_name = handle, type_name
        self._training = None  # set by train() / eval(): the mode the worker puts the object in before the next call
        for name, child in children.items():
            setattr(self, name, child)
        self._children = children

    def __repr__(self):
        return f"<{self._type_name} in the worker>"

    def train(self, mode=True):
        """`module.train(mode)`, done in the worker with the next call (as the weights are)."""
        self._training = bool(mode)
        return self

    def eval(self):
        """`module.eval()`: `train(False)`, done in the worker with the next call."""
        return RemoteObject.train(self, False)

    def _grad_params(self):
        """Names ("W_q.weight") of the mirrored parameters with requires_grad on: a property that
        wants the gradient of a parameter turns it on (they start off, see RemoteStudent._remote_object)."""
        return [
            f"{name}.{pname}"
            for name, child in self._children.items()
            if isinstance(child, torch.nn.Linear)
            for pname in ("weight", "bias")
            if isinstance(getattr(child, pname), torch.Tensor) and getattr(child, pname).requires_grad
        ]

    def _state(self, arrays):
        state = {}
        for name, child in self._children.items():
            if isinstance(child, torch.nn.Linear):
                state[name] = {
                    "weight": P.encode(child.weight, arrays),
                    "bias": P.encode(child.bias, arrays) if child.bias is not None else None,
                }
        return state


def _may_run_on_the_device(method):
    """call / new / raises: with an argument on another device, on the device worker if there is
    one (RemoteStudent._on_device); the arguments after the first (a name, or an exception type
    and a name) are the call's."""

    @functools.wraps(method)
    def run(self, first, *args, **kwargs):
        call_args = args[1:] if method.__name__ == "raises" else args
        target = self._on_device(call_args, kwargs)
        if target is not None:
            return self._routed(target, method, first, *args, **kwargs)
        return method(self, first, *args, **kwargs)

    return run


class RemoteStudent:
    """The student's functions, called in a sandboxed worker; same interface as Student.

    A call with an argument on "another device" (checks/elsewhere.py) goes to a second worker, a
    device worker that may use the GPU, when the machine has one (devices.visible()); the first
    worker, like every other, sees no GPU.  Without a GPU the first worker takes it, on the
    simulated device."""

    def __init__(self, zygote, exercise, load_timeout, read_errors=(), devices=False):
        self.zygote, self.exercise, self.load_timeout = zygote, exercise, load_timeout
        self.devices = devices  # this one is a device worker
        self._device = None  # the device worker's student, once a call needed it
        self.elsewhere = None  # the device the last call with another device ran on ("cuda:0", "meta")
        self.device_problem = None  # why a device worker could not use the GPU
        self.read_errors = list(read_errors)
        self.pid = self.sock = None
        self.names = set()
        self.load_errors = list(read_errors)
        self.levels = {}
        self.fatal = None  # (zh, en) when the submission cannot even be loaded
        self.last_call = ""
        self.skip = []  # [[chunk, line, seconds]]: top-level statements that ran out of CPU time
        self.partial = False  # the worker ran only the exercise's own file (see load.exec_sources)
        from ..properties import load_all

        self.needed = sorted({p.function for p in load_all().values() if p.exercise == exercise})

    # -- worker life
    def start(self):
        """Start a worker and wait until it has run the submission's top-level code."""
        if self.fatal:
            raise StudentCrash(*self.fatal, kind="error")
        if self.sock is not None:
            return
        # a known exercise's worker may run just the exercise's own file (load.exec_sources)
        focus = self.exercise if self.needed else None
        self.pid, sock = self.zygote.spawn(self.skip, focus=focus, needed=self.needed, devices=self.devices)
        self.sock = P.Channel(sock)
        deadline = time.monotonic() + self.load_timeout
        try:
            if self.zygote.limited:  # the worker's levels come first, before any student code ran
                first, _ = self.sock.recv(deadline=deadline)
                from ..sandbox.limits import missing, verify

                first = first if isinstance(first, dict) else {}
                self.levels = verify(first.get("levels"), self.pid)
                if first.get("refused") is not False or (missing(self.levels) and not self.zygote.allow_weak):
                    self.abort()
                    raise WeakSandbox(self.levels)
            header, _ = self.sock.recv(deadline=deadline)
            self._loaded(header)
        except P.ChannelTimeout:
            self.abort()
            self.fatal = (
                f"加载你的提交（运行顶层代码）在 {self.load_timeout:g} 秒内没有完成。",
                f"Loading your submission (running its top-level code) did not finish within {self.load_timeout:g} s.",
            )
            raise StudentCrash(*self.fatal, kind="error") from None
        except P.ChannelClosed:
            reason = self.abort(grace=1.0)
            self.fatal = (
                f"加载你的提交时进程意外结束（{reason}）：顶层代码里是否调用了 exit / os._exit？",
                f"The process ended while loading your submission ({reason}): does top-level code "
                f"call exit / os._exit?",
            )
            raise StudentCrash(*self.fatal, kind="error") from None
        except P.ProtocolError as e:
            self.abort()
            self.fatal = (
                "加载你的提交时，运行它的进程发回了无法识别的数据（顶层代码是否写了不属于它的文件描述符？）。",
                "While loading your submission, the process running it sent data the grader cannot "
                f"read (does top-level code write to file descriptors it does not own?): {str(e)[:120]}",
            )
            raise StudentCrash(*self.fatal, kind="error") from None

    def _loaded(self, header):
        """What the worker said about loading: its problems, the names defined, whether files wait.
        All of it is the worker's word, capped here (safe.py) whatever the worker did to its own code."""
        loaded = header.get("loaded")
        loaded = (
            [safe.cap(e, LOAD_ERROR_CHARS, 2) for e in loaded[:MAX_LOAD_ERRORS]] if isinstance(loaded, list) else []
        )
        # the worker's list starts with the read errors it was given: keep each problem once
        self.load_errors = list(dict.fromkeys(self.read_errors + loaded))[:MAX_LOAD_ERRORS]
        names = header.get("names")
        self.names = (
            {n for n in names[:MAX_NAMES] if isinstance(n, str) and len(n) <= MAX_NAME_CHARS and n.isidentifier()}
            if isinstance(names, list)
            else set()
        )
        self.partial = header.get("partial") is True
        timed_out = header.get("timed_out")
        if isinstance(timed_out, list):  # statements a restarted worker skips at once
            self.skip = [
                [safe.cap(t[0], LOAD_ERROR_CHARS, 1), t[1], t[2]]
                for t in timed_out[:50]
                if isinstance(t, list) and len(t) == 3 and isinstance(t[1], int) and isinstance(t[2], (int, float))
            ]

    def _load_rest(self):
        """The worker ran only the exercise's own file and `name` is not in it: run the others."""
        try:
            self.sock.send({"op": "load_rest"})
            header, _ = self.sock.recv(deadline=time.monotonic() + self.load_timeout)
        except P.ChannelTimeout:
            self.abort()
            raise StudentCrash(
                f"加载你的其他文件在 {self.load_timeout:g} 秒内没有完成。",
                f"Loading your other files did not finish within {self.load_timeout:g} s.",
                kind="error",
            ) from None
        except P.ProtocolError:
            reason = self.abort(grace=1.0)
            raise StudentCrash(
                f"加载你的其他文件时进程意外结束（{reason}）。",
                f"The process ended while loading your other files ({reason}).",
                kind="error",
            ) from None
        if not isinstance(header, dict) or "names" not in header:
            self.abort()
            raise StudentCrash("加载你的其他文件失败。", "Loading your other files failed.", kind="error")
        self._loaded(header)

    def abort(self, grace=0.0):
        """Kill the worker (after a time-out or a crash); the next call starts a fresh one."""
        if self._device is not None:
            self._device.abort()
        reason = "unknown"
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            reason = self.zygote.reap(self.pid, grace)
        self.pid = self.sock = None
        return reason

    def _request(self, header, arrays):
        self.start()
        try:
            self.sock.send(header, arrays)
            return self.sock.recv()  # a test's own alarm ends the wait
        except P.ChannelClosed:
            reason = self.abort(grace=1.0)
            raise StudentCrash(
                f"运行你的代码的进程意外结束（{reason}）。",
                f"The process running your code ended unexpectedly ({reason}).",
                [("调用 call", self.last_call)],
                "段错误、os._exit 或内存耗尽都会这样。",
                "A segfault, os._exit or running out of memory does this.",
                kind="error",
            ) from None
        except (P.ProtocolError, OSError) as e:
            self.abort()
            raise StudentCrash(
                "运行你的代码的进程发回了无法识别的数据。",
                "The process running your code sent back data the grader cannot read.",
                [("原因 reason", str(e)[:200])],
                kind="error",
            ) from None

    # -- the Student interface
    def lookup(self, name):
        """`name` when the submission defines it, the worker started first (and the rest of the
        submission run if only the exercise's own file was); raises MissingFunction otherwise."""
        self.start()
        if name not in self.names and self.partial:
            self._load_rest()
        if name not in self.names:
            errs = self.load_errors
            raise MissingFunction(
                f"提交中找不到 `{name}`。请确认名称与模板一致，并且定义它的单元格能运行。",
                f"`{name}` is not defined in your submission. Check the name matches the template "
                f"and that the cell defining it runs.",
                [("加载时的错误 load errors", "\n".join(errs))] if errs else [],
                kind="missing",
            )
        return name

    def _on_device(self, args, kwargs):
        """The student whose worker takes a call with these arguments: a device worker for an
        argument on another device on a machine with a GPU, else this one."""
        if self.devices or not uses_elsewhere([args, kwargs]):
            return None
        from ..sandbox.devices import visible

        if not visible():
            return None  # this worker, on the simulated device
        if self._device is None:
            self._device = RemoteStudent(self.zygote, self.exercise, self.load_timeout, self.read_errors, devices=True)
        return self._device

    def _routed(self, target, method, *args, **kwargs):
        """`target`'s method, as if it were this student's: its call becomes ours."""
        try:
            return method(target, *args, **kwargs)
        finally:
            self.last_call = target.last_call
            self.elsewhere, self.device_problem = target.elsewhere, target.device_problem

    @_may_run_on_the_device
    def call(self, name, *args, **kwargs):
        """The student's `name(*args, **kwargs)`, run in the worker (the device worker's, for an
        argument on another device); gradients flow back to the arguments that require them.  Raises
        a PropertyFailure when it crashes or writes into an input."""
        self.lookup(name)
        return self._call({"op": "call", "name": name, "prefer": self.exercise}, name, args, kwargs)

    @_may_run_on_the_device
    def new(self, name, *args, **kwargs):
        """An instance of the student's class `name`, made in the worker: a RemoteObject mirroring
        its linear layers."""
        self.lookup(name)
        return self._call({"op": "new", "name": name, "prefer": self.exercise}, name, args, kwargs)

    def invoke(self, label, fn, *args, **kwargs):
        """`fn` called as `label`: a RemoteObject in the worker that made it, any other callable
        here (the judge's own code)."""
        owner = getattr(fn, "_student", self)
        if owner is not self:  # an object made in the device worker lives there
            return self._routed(owner, RemoteStudent.invoke, label, fn, *args, **kwargs)
        if not isinstance(fn, RemoteObject):
            if callable(fn):  # a judge-side callable: trusted code, run it here
                return fn(*args, **kwargs)
            raise StudentCrash(
                f"`{label}` 不是函数（是 {type(fn).__name__}）。",
                f"`{label}` is not callable (it is a {type(fn).__name__}).",
                kind="missing",
            )
        return self._call({"op": "invoke", "handle": fn._handle}, label, args, kwargs, obj=fn)

    @_may_run_on_the_device
    def raises(self, exc_type, name, *args, **kwargs):
        """True if the student's `name` raises `exc_type` (by name in its MRO) in the worker; a
        NotImplementedError is a crash."""
        self.lookup(name)
        self.last_call = fmt_call(name, args, kwargs)
        arrays = []
        header = {
            "op": "call",
            "name": name,
            "prefer": self.exercise,
            "args": P.encode(tuple(args), arrays),
            "kwargs": {k: P.encode(v, arrays) for k, v in kwargs.items()},
        }
        if uses_elsewhere([args, kwargs]):
            header["elsewhere"] = True
        answer, _ = self._request(header, arrays)
        self._device_answer(answer)
        raised = answer.get("raised")
        if not isinstance(raised, dict):
            return False
        mro = raised.get("mro") if isinstance(raised.get("mro"), list) else []
        mro = [m for m in mro[:MAX_MRO] if isinstance(m, str)]
        if "NotImplementedError" in mro:
            raise self._crash(name, raised)
        return exc_type.__name__ in mro

    def global_random_state(self):
        """A digest of the worker's global random states (torch, numpy, random; see
        rngstate.py): equal before and after a call that left them alone."""
        answer, out_arrays = self._request({"op": "random_state"}, [])
        try:
            state = P.decode(answer.get("ok"), out_arrays)
        except P.ProtocolError:
            state = None
        if not isinstance(state, str):
            self.abort()
            raise StudentCrash(
                "运行你的代码的进程发回了无法识别的数据。",
                "The process running your code sent back data the grader cannot read.",
                kind="error",
            )
        return state

    # -- helpers
    def _call(self, header, label, args, kwargs, obj=None):
        self.last_call = fmt_call(label, args, kwargs)
        arrays = []
        header["args"] = P.encode(tuple(args), arrays)
        header["kwargs"] = {k: P.encode(v, arrays) for k, v in kwargs.items()}
        if obj is not None:
            header["state"] = obj._state(arrays)
            header["grad_params"] = obj._grad_params()
            if obj._training is not None:
                header["training"] = obj._training
        if uses_elsewhere([args, kwargs]):
            header["elsewhere"] = True  # the worker puts them on its device (elsewhere.Place)
        answer, out_arrays = self._request(header, arrays)
        self._device_answer(answer)
        if "missing" in answer:
            self.lookup(safe.name(answer["missing"], MAX_NAME_CHARS))
            raise MissingFunction(
                f"提交中找不到 `{label}`。", f"`{label}` is not defined in your submission.", kind="missing"
            )
        if "not_callable" in answer:
            what = safe.name(answer["not_callable"], TYPE_CHARS)
            raise StudentCrash(
                f"`{label}` 不是函数（是 {what}）。", f"`{label}` is not callable (it is a {what}).", kind="missing"
            )
        if "raised" in answer:
            raise self._crash(label, answer["raised"] if isinstance(answer["raised"], dict) else {})
        try:
            inputs = P.flat_tensors(list(args) + list(kwargs.values()))
            if answer.get("mutated"):
                changed = answer["mutated"] if isinstance(answer["mutated"], list) else []
                values = list(args) + list(kwargs.values())
                written = (
                    argument_position(args, kwargs, values[changed[0]])
                    if len(changed) == 1 and isinstance(changed[0], int) and 0 <= changed[0] < len(values)
                    else None
                )
                raise_container_mutated(label, self.last_call, written)
            afters = answer.get("after")
            if not isinstance(afters, list) or len(afters) != len(inputs):
                raise P.ProtocolError("the inputs did not come back")
            for i, after in enumerate(afters):  # decided here, on what was sent and what came back
                after = P.decode(after, out_arrays)
                if isinstance(after, torch.Tensor) and P.same_values(inputs[i].detach(), after.detach()):
                    continue
                failure = PropertyFailure(
                    f"`{label}` 原地修改了它的输入（例如用了 `+=`、`masked_fill_` 或切片赋值）。输入必须保持不变。",
                    f"`{label}` modified one of its inputs in place (e.g. `+=`, `masked_fill_`, slice "
                    f"assignment). Inputs must stay unchanged; work on a new tensor.",
                    [
                        ("调用 call", self.last_call),
                        ("调用前 before", fmt(inputs[int(i)])),
                        ("调用后 after", fmt(after)),
                    ],
                )
                failure.written = argument_position(args, kwargs, inputs[int(i)])  # which argument
                raise failure
            ok = answer.get("ok")
            if header["op"] == "new":
                return self._remote_object(ok, out_arrays)
            out = P.decode(ok, out_arrays)
        except P.ProtocolError as e:
            self.abort()
            raise StudentCrash(
                "运行你的代码的进程发回了无法识别的数据。",
                "The process running your code sent back data the grader cannot read.",
                [("原因 reason", str(e)[:200])],
                kind="error",
            ) from None
        leaves = [t for t in inputs if t.requires_grad]
        if obj is not None:  # judge-side parameters that asked for a gradient, as the worker named them
            for name in answer.get("params") or []:
                if isinstance(name, str) and name in header["grad_params"]:
                    child, _, pname = name.partition(".")
                    leaves.append(getattr(obj._children[child], pname))
                else:
                    leaves.append(torch.zeros(0))  # keeps the order; its gradient is dropped
        call_id = answer.get("call")
        outs = P.flat_tensors(out)
        if leaves and isinstance(call_id, int) and outs and torch.is_grad_enabled():
            flags = _rg_flags(ok, [])
            differentiable = [bool(f) and o.is_floating_point() for f, o in zip(flags, outs)]
            attached = _Attach.apply(self, call_id, len(leaves), differentiable, *leaves, *outs)
            out = _replace(out, iter(attached))
        return out

    def _device_answer(self, answer):
        """Where a call with another device ran, as the worker says ("cuda:0", "meta")."""
        where = answer.get("elsewhere")
        if isinstance(where, str) and P.DEVICE.match(where):
            self.elsewhere = where
            problem = answer.get("device_problem")
            self.device_problem = safe.cap(problem, MESSAGE_CHARS, MESSAGE_LINES) if problem else None

    def _remote_object(self, ok, arrays):
        if not isinstance(ok, dict) or type(ok.get("handle")) is not int:
            raise P.ProtocolError("bad handle")
        children = {}
        given = ok.get("children")
        for name, d in list(given.items())[:MAX_CHILDREN] if isinstance(given, dict) else ():
            if (
                not isinstance(name, str)
                or len(name) > MAX_NAME_CHARS
                or not name.isidentifier()
                or name.startswith("_")
            ):
                continue
            lin = _linear(d, arrays) if isinstance(d, dict) and "linear" in d else None
            children[name] = (
                lin
                if lin is not None
                else P.Opaque(safe.name(d.get("obj", "object"), TYPE_CHARS) if isinstance(d, dict) else "object")
            )
        obj = RemoteObject(ok["handle"], safe.name(ok.get("type", "object"), TYPE_CHARS), children)
        obj._student = self
        return obj

    def _vjp(self, call_id, grads, leaves):
        arrays = []
        enc = [P.encode(g, arrays) if g is not None else None for g in grads]
        answer, out_arrays = self._request({"op": "vjp", "call": call_id, "grads": enc}, arrays)
        if "raised" in answer:
            raise self._crash("backward", answer["raised"] if isinstance(answer["raised"], dict) else {})
        got = P.decode(answer.get("ok"), out_arrays)
        if not isinstance(got, list):
            raise StudentCrash("梯度计算失败。", "Computing the gradient failed.", kind="error")
        result = []
        for (shape, dtype), g in zip(leaves, got[: len(leaves)]):
            if isinstance(g, torch.Tensor) and g.shape == shape:
                result.append(g.to(dtype))
            else:
                result.append(None)
        result += [None] * (len(leaves) - len(result))
        return result

    def _crash(self, label, raised):
        mro = raised.get("mro") if isinstance(raised.get("mro"), list) else []
        mro = [m for m in mro[:MAX_MRO] if isinstance(m, str)]
        typ = safe.name(raised.get("type", "Exception"), TYPE_CHARS)
        msg = f"{typ}: {safe.cap(raised.get('message', ''), MESSAGE_CHARS, MESSAGE_LINES)}"
        if "NotImplementedError" in mro:
            return StudentCrash(
                f"`{label}` 还没有实现（仍然抛出 NotImplementedError）。",
                f"`{label}` is not implemented yet (it still raises NotImplementedError).",
                [("调用 call", self.last_call)],
                kind="missing",
            )
        where = safe.cap(raised.get("where", ""), WHERE_CHARS, WHERE_LINES)
        if label == "backward":
            return StudentCrash(
                f"对你的函数的结果反向传播（backward）时抛出了异常 {typ}：前向计算成功了，梯度却算不出来。",
                f"Backpropagating through your function's result raised {typ}: the forward call worked, the "
                f"gradient could not be computed.",
                [("调用 call", self.last_call), ("异常 exception", msg)] + ([("位置 where", where)] if where else []),
                "最常见的原因是原地操作（+=、*=、切片赋值 out[:, t] = ...、masked_fill_）改写了计算图还需要的张量；"
                "改成新建张量（torch.stack、torch.cat、torch.where、masked_fill）。",
                "The usual cause is an in-place operation (+=, *=, slice assignment out[:, t] = ..., masked_fill_) "
                "that overwrote a tensor the graph still needs; build new tensors instead (torch.stack, torch.cat, "
                "torch.where, masked_fill).",
                kind="error",
            )
        return StudentCrash(
            f"调用 `{label}` 时你的代码抛出了异常 {typ}。",
            f"Your code raised {typ} when `{label}` was called.",
            [("调用 call", self.last_call), ("异常 exception", msg)] + ([("位置 where", where)] if where else []),
            "检查调用里的输入（形状，以及标出的 dtype）：它们都在合同允许的范围内。",
            "Look at the inputs in the call above (their shapes, and dtypes where shown): the contract allows them all.",
            kind="error",
        )
