"""The untrusted side: a worker process that runs the student's code and answers requests.

It is forked from a zygote that holds no answers (see server.py), applies its limits, runs the
submission's sources, then serves requests until the channel closes.  Everything it sends is
data (protocol.py); the judge believes none of it beyond "these are the arrays that came back".

Requests (header "op"):
  call    {name, args, kwargs}                  call the student's function `name`
  new     {name, args, kwargs}                  instantiate the student's class; answer a handle
  invoke  {handle, args, kwargs, state, grad_params, training}
                                                call a handle (after loading `state` into it, and,
                                                with `training`, calling its .train(training) if it
                                                is an nn.Module); the answer's "params" names the
                                                parameters of `grad_params` whose gradients a vjp
                                                returns after the inputs' ones
  vjp     {call, grads}                         gradients of an earlier call's outputs
  random_state {}                               a digest of the global random states
Answers: {"ok": value, "call": id, "after": [every input tensor as it is now]}, {"raised": {...}},
{"missing": name}.  Before any of them, once: {"levels": what apply_worker_limits put in force,
"refused": true when a guarantee is missing and weak sandboxes are not allowed}.
"""

import os
import sys
import traceback
from collections import OrderedDict

from ..checks import rngstate  # binds its getters when the worker's code is imported, before any student code
from . import protocol as P

KEEP_CALLS = 64  # calls whose graph is kept for a later vjp


def _describe_module(obj):
    """The sub-modules of an nn.Module that the judge may read or write: nn.Linear children."""
    import torch

    if not isinstance(obj, torch.nn.Module):
        return {}, []
    desc, arrays = {}, []
    for name, child in list(obj.named_children())[:32]:
        if type(child) is torch.nn.Linear:
            desc[name] = {
                "linear": [child.in_features, child.out_features, child.bias is not None],
                "weight": P.encode(child.weight, arrays),
                "bias": P.encode(child.bias, arrays) if child.bias is not None else None,
            }
        else:
            desc[name] = {"obj": type(child).__name__[:100]}
    return desc, arrays


class Worker:
    def __init__(self, sock, submission, roots, devices=False):
        from ..checks.elsewhere import Place

        self.sock, self.sub, self.roots = P.Channel(sock), submission, tuple(roots)
        self.place = Place(gpu=devices)  # where the judge's "another device" is (checks/elsewhere.py)
        self.handles = {}
        self.calls = OrderedDict()
        self.next_id = 0
        self.order = {}  # prefer -> the namespaces in lookup order (Submission.get's order)

    def lookup(self, name, prefer):
        """Submission.get(name, prefer), with the order of the namespaces computed once."""
        mods = self.order.get(prefer)
        if mods is None:
            from pathlib import Path

            mods = self.sub.modules
            if prefer:
                mods = sorted(mods, key=lambda m: Path(m[0]).stem != prefer)
            mods = self.order[prefer] = [ns for _, ns in mods]
        for ns in mods:
            if name in ns:
                return ns[name]
        return None

    def serve(self):
        """Answer the judge's requests, one frame each, until the channel closes or a frame is
        malformed; an exception becomes a {"raised": ...} answer."""
        while True:
            try:
                header, arrays = self.sock.recv()
            except P.ProtocolError:
                return
            out_arrays = []
            try:
                answer = self.handle(header, arrays, out_arrays)
            except BaseException as e:  # noqa: BLE001 - report, never die silently
                out_arrays = []
                answer = {"raised": self.exception(e)}
            try:
                self.sock.send(answer, out_arrays)
            except (OSError, ValueError):
                return

    # -- requests
    def handle(self, h, arrays, out_arrays):
        """The answer to request `h`: load_rest, vjp, random_state, or a call / new / invoke
        (arguments on another device run on `place`'s device, which the answer names)."""
        op = h.get("op")
        if op == "load_rest":
            return self.load_rest()
        if op == "vjp":
            return self.vjp(h, arrays, out_arrays)
        if op == "random_state":  # a digest of the global random states (rngstate.py)
            return {"ok": P.encode(rngstate.digest(), out_arrays)}
        if h.get("elsewhere"):  # arguments on another device than the CPU: see elsewhere.py
            device = self.place.device  # the GPU, or the simulated device (started before any student call)
            with self.place.active():
                answer = self._handle(h, arrays, out_arrays, op, place=self.place)
            answer["elsewhere"] = str(device)
            if self.place.problem:
                answer["device_problem"] = self.place.problem
            return answer
        return self._handle(h, arrays, out_arrays, op)

    def _handle(self, h, arrays, out_arrays, op, place=None):
        import torch

        args = P.decode(h.get("args", {"tuple": []}), arrays, leaf_grads=True)
        kwargs = {k: P.decode(v, arrays, leaf_grads=True) for k, v in h.get("kwargs", {}).items()}
        if op in ("call", "new"):
            fn = self.lookup(h["name"], h.get("prefer"))
            if fn is None:
                return {"missing": h["name"]}
        elif op == "invoke":
            fn = self.handles.get(h.get("handle"))
            if fn is None:
                return {
                    "raised": {
                        "type": "RuntimeError",
                        "mro": ["RuntimeError"],
                        "message": "the object was lost (the worker restarted)",
                        "where": "",
                    }
                }
            self.load_state(fn, h.get("state", {}), arrays)
        else:
            return {"raised": {"type": "ProtocolError", "mro": [], "message": f"unknown op {op}", "where": ""}}
        if not callable(fn):
            return {"not_callable": type(fn).__name__[:100]}
        if place is not None:
            args, kwargs = place.put(args), place.put(kwargs)
        inputs = P.flat_tensors(list(args) + list(kwargs.values()))
        containers = P.container_snapshot(list(args) + list(kwargs.values()))
        try:
            mode = h.get("training") if op == "invoke" else None
            if isinstance(mode, bool) and isinstance(fn, torch.nn.Module):
                fn.train(mode)  # the student's module: module.train() / module.eval(), as the judge asked
            out = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - the student's exception, whatever it is
            return {"raised": self.exception(e)}
        # every input as it is now: the judge compares them with what it sent (remote.py)
        answer = {"after": [P.encode(t, out_arrays) for t in inputs]}
        try:
            now = P.container_snapshot(list(args) + list(kwargs.values())) if containers is not None else None
            if now != containers:  # a list or dict argument changed in place: which ones (positions)
                answer["mutated"] = [i for i, (a, b) in enumerate(zip(containers, now)) if a != b] or True
        except BaseException:  # noqa: BLE001 - a hostile object put into an argument
            answer["mutated"] = True
        if op == "new":
            hid = len(self.handles) + 1
            self.handles[hid] = out
            desc, arr = _describe_module(out)
            base = len(out_arrays)
            out_arrays.extend(arr)
            answer["ok"] = {"handle": hid, "type": type(out).__name__[:100], "children": _shift(desc, base)}
            return answer
        answer["ok"] = P.encode(out, out_arrays)
        leaves = [t for t in inputs if t.requires_grad]
        if op == "invoke":  # the parameters whose gradient the judge asked for, by name ("W_q.weight")
            names = []
            for name in h.get("grad_params") or []:
                child, _, pname = str(name).partition(".")
                p = getattr(getattr(fn, child, None), pname, None) if pname in ("weight", "bias") else None
                if isinstance(p, torch.Tensor) and p.requires_grad and name not in names:
                    names.append(name)
                    leaves.append(p)
            answer["params"] = names
        outs = [t for t in P.flat_tensors(out) if isinstance(t, torch.Tensor)]
        if leaves and any(t.requires_grad for t in outs):
            self.next_id += 1
            self.calls[self.next_id] = (outs, leaves)
            while len(self.calls) > KEEP_CALLS:
                self.calls.popitem(last=False)
            answer["call"] = self.next_id
        return answer

    def load_rest(self):
        """Run the files exec_sources left (the judge looked up a name the focus file lacks)."""
        self.sub.load_rest()
        self.order = {}
        return loaded_header(self.sub)

    def load_state(self, module, state, arrays):
        """Copy the judge's mirrored weights and biases (`state`, by child name) into the student's
        `module`, where the shapes match."""
        import torch

        with torch.no_grad():
            for name, params in state.items():
                child = getattr(module, name, None)
                for pname in ("weight", "bias"):
                    enc = params.get(pname)
                    p = getattr(child, pname, None)
                    if enc is not None and isinstance(p, torch.Tensor):
                        value = P.decode(enc, arrays)
                        if value.shape == p.shape:
                            p.copy_(value.to(p.dtype))

    def vjp(self, h, arrays, out_arrays):
        """The gradients of a remembered call's leaves, given the judge's gradients of its outputs;
        a {"raised": ...} answer when the graph is gone or backward fails."""
        import torch

        entry = self.calls.get(h.get("call"))
        if entry is None:
            return {
                "raised": {
                    "type": "RuntimeError",
                    "mro": ["RuntimeError"],
                    "message": "the graph of that call is gone",
                    "where": "",
                }
            }
        outs, leaves = entry
        grads_in = [P.decode(g, arrays) for g in h.get("grads", [])]
        pairs = [
            (o, g.to(o.dtype))
            for o, g in zip(outs, grads_in)
            if isinstance(g, torch.Tensor) and o.requires_grad and g.shape == o.shape
        ]
        if not pairs:
            return {"ok": {"list": [None] * len(leaves)}}
        try:
            # the vector-Jacobian product as the gradient of sum(o * g): the gradient reaching
            # each o is exactly g (1 * g), and, unlike grad_outputs=, it does not make torch
            # import sympy (about a second in every worker that computes a gradient)
            total = sum((o * g).sum() for o, g in pairs)
            grads = torch.autograd.grad(total, leaves, allow_unused=True, retain_graph=True)
        except BaseException as e:  # noqa: BLE001
            return {"raised": self.exception(e)}
        return {"ok": {"list": [P.encode(g, out_arrays) if g is not None else None for g in grads]}}

    def exception(self, e):
        """What the judge learns of an exception: its type, a short message and the student's own
        frames (at most 3), each capped (see cap_message), so that nothing long ever leaves."""
        frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename.startswith(self.roots)]
        where = "".join(
            f"  {f.filename.rsplit('/', 1)[-1][:80]}, line {f.lineno}, in {str(f.name)[:80]}\n"
            f"    {str(f.line or '')[:160]}\n"
            for f in frames[-3:]
        )
        try:
            mro = [c.__name__[:100] for c in type(e).__mro__][:20]
        except Exception:  # noqa: BLE001
            mro = []
        try:
            msg = cap_message(str(e))
        except BaseException:  # noqa: BLE001 - a hostile __str__
            msg = "<unprintable>"
        return {"type": type(e).__name__[:100], "mro": mro, "message": msg, "where": where.rstrip()[:600]}


MESSAGE_LINES, MESSAGE_CHARS = 4, 300


def cap_message(text, lines=MESSAGE_LINES, chars=MESSAGE_CHARS):
    """An exception message as feedback shows it: its first few lines and characters.  Feedback
    is a channel out of the sandbox; keeping it narrow means no future hole becomes a wide one."""
    text = str(text)
    parts = text.splitlines()
    short = "\n".join(parts[:lines])
    if len(short) > chars:
        short = short[:chars]
    if short != text:
        short += " …"
    return short


def _shift(desc, base):
    """Array indices in `desc` were counted from 0; they start at `base` in the frame."""

    def fix(v):
        if isinstance(v, dict):
            return {k: (x + base if k == "t" else fix(x)) for k, x in v.items()}
        if isinstance(v, list):
            return [fix(x) for x in v]
        return v

    return fix(desc)


def loaded_header(sub, **more):
    """What the judge learns from a load: the problems met, the names defined, what is left."""
    names = sorted({n for _, ns in sub.modules for n in ns if not n.startswith("__")})[:5000]
    return {
        "loaded": sub.load_errors[:50],
        "names": names,
        "timed_out": sub.timed_out[:50],
        "partial": sub.partial,
        **more,
    }


def worker_main(
    sock, sources, errors, root, roots, workdir, limit_options, skip=(), focus=None, needed=(), devices=False
):
    """Body of a worker process: never returns.  `devices`: a device worker, which may use the GPUs
    the grader was started with (devices.py); every other worker sees none, as on a machine
    without one."""
    try:
        from . import devices as D
        from . import forkcheck

        forkcheck.role("worker")
        if not devices:
            os.environ.update(D.HIDDEN)
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        for std in (0, 1, 2):
            os.dup2(devnull, std)
        P.close_other_fds([sock.fileno()])
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        allow_weak = bool((limit_options or {}).get("allow_weak"))
        if limit_options is not None:
            limit_options = {k: v for k, v in limit_options.items() if k != "allow_weak"}
        levels = apply_limits(
            workdir, dict(limit_options, devices=True) if devices and limit_options is not None else limit_options
        )
        die_with_parent()  # after any uid change, which clears it
        from ..load import exec_sources

        forget_the_grader()
        seed_everything()
        # the only word on the sandbox the judge takes from a worker: sent before any student code
        # runs, and no student code runs where a guarantee is missing unless the instructor allowed it
        if limit_options is not None:
            from .limits import missing

            gaps = missing(levels)
            P.send(sock, {"levels": levels, "refused": bool(gaps) and not allow_weak})
            if gaps and not allow_weak:
                return
        if isinstance(levels, dict) and levels.get("view") == "new root" and levels.get("submission") and root:
            sources, root, roots = in_the_view(sources, root, roots)
        keep_python_path(root)
        sub = exec_sources(sources, errors, root, skip=skip, focus=focus, needed=needed)
        P.send(sock, loaded_header(sub))
        Worker(sock, sub, roots, devices=devices).serve()
    except BaseException:  # noqa: BLE001
        pass
    finally:
        os._exit(0)


def seed_everything(seed=0):
    """The global random states as every worker starts with them: Python's `random`, numpy's and
    torch's.  A submission that draws from them (it should not) is then graded the same way every
    time, whichever process forked the worker."""
    import random

    import numpy
    import torch

    random.seed(seed)
    numpy.random.seed(seed)
    torch.manual_seed(seed)


def in_the_view(sources, root, roots):
    """The submission's paths as the worker sees them: its root is /submission in the new root
    (view._new_root), so that `__file__`, tracebacks and sibling imports name what exists."""
    from .view import SUBMISSION

    root = os.path.abspath(root)

    def move(path):
        path = str(path)
        if path == root:
            return SUBMISSION
        if path.startswith(root + "/"):
            return SUBMISSION + path[len(root) :]
        return path

    moved = [
        (label, modname, move(filename), [(c_label, move(c_file), code) for c_label, c_file, code in chunks])
        for label, modname, filename, chunks in sources
    ]
    return moved, SUBMISSION, [move(r) for r in roots]


def keep_python_path(root):
    """sys.path with only what the worker can import from: directories that exist in its view,
    never the grader's own source tree (PYTHONPATH) or the current directory of whoever started it."""
    package_tree = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    kept = []
    for p in sys.path:
        if not p or p == package_tree or not os.path.isdir(p):
            continue
        try:
            os.listdir(p)
        except OSError:
            continue
        kept.append(p)
    sys.path[:] = kept


# What the worker never needs and the student must not find in its process: the properties and
# their reference helpers, the diagnosis with its catalogue of mistakes, the grading and reports.
GRADER_ONLY = (
    "autograder.exercises",
    "autograder.properties",
    "autograder.diagnose",
    "autograder.catalogue",
    "autograder.grading",
    "autograder.judge",
    "autograder.report",
    "autograder.batch",
    "autograder.store",
    "autograder.nbgrader_course",
    "hypothesis",
)


def forget_the_grader():
    """Drop the grader's own modules from this (forked) worker before student code runs: no
    sys.modules entry, no package attribute, and, once unreferenced, no objects either (the
    parent's objects are gc.freeze()d, which gc.get_objects() does not list)."""
    import gc

    import autograder

    for name in list(sys.modules):
        if any(name == g or name.startswith(g + ".") for g in GRADER_ONLY):
            mod = sys.modules.pop(name, None)
            parent, _, child = name.rpartition(".")
            if parent and getattr(sys.modules.get(parent), child, None) is mod:
                try:
                    delattr(sys.modules[parent], child)
                except AttributeError:
                    pass
    for attr in (
        "exercises",
        "properties",
        "diagnose",
        "catalogue",
        "grading",
        "report",
        "batch",
        "store",
        "nbgrader_course",
    ):
        autograder.__dict__.pop(attr, None)
    gc.collect()


def die_with_parent():
    """prctl(PR_SET_PDEATHSIG, SIGKILL): the worker dies when the zygote does."""
    try:
        import ctypes
        import signal as _signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(_signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def apply_limits(workdir, options):
    """limits.apply_worker_limits(workdir, **options); `options` None (the grader's own tests of
    the channel): no limits, only a private working directory."""
    if options is None:
        os.chdir(workdir)
        os.environ.update(HOME=workdir, TMPDIR=workdir)
        return {"tmpdir": workdir}
    from .limits import apply_worker_limits

    try:
        return apply_worker_limits(workdir, **options)
    except Exception as e:  # noqa: BLE001 - the judge sees the levels (and refuses them)
        return {"error": str(e)[:200], "problems": [f"limits: {str(e)[:200]}"]}


def _status_text(status):
    import signal as _signal

    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"signal {_signal.Signals(sig).name}"
        except ValueError:
            return f"signal {sig}"
    if os.WIFEXITED(status):
        return f"exit status {os.WEXITSTATUS(status)}"
    return "unknown"


def kill_and_wait(pid, limit_options, grace=0.0):
    """(In the zygote) kill the worker `pid` and what it started, reap it, and say how it ended:
    (text, CPU seconds the worker used).  `grace`: seconds to let a worker that is already dying
    finish (to learn its signal)."""
    import signal as _signal
    import time

    kill_tree = None
    if limit_options is not None:
        from .identity import kill_worker_tree as kill_tree
    end = time.monotonic() + grace
    cpu = 0.0
    while True:
        try:
            done, status, usage = os.wait4(pid, os.WNOHANG)
        except ChildProcessError:
            return "unknown", cpu
        if done or time.monotonic() >= end:
            break
        time.sleep(0.005)
    text = _status_text(status) if done else None
    if done:
        cpu = usage.ru_utime + usage.ru_stime
    try:
        if kill_tree is not None:
            kill_tree(pid, (limit_options or {}).get("uid"))
        else:
            os.killpg(pid, _signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError, TypeError):
        pass
    if text is None:
        try:
            _, status, usage = os.wait4(pid, 0)
            cpu = usage.ru_utime + usage.ru_stime
            text = "killed"
        except ChildProcessError:
            text = "unknown"
    return text, cpu


def _children(pid):
    """The live processes whose parent is `pid` (read from /proc)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and int(fields[1]) == pid and fields[0] not in (b"Z", b"X"):
            out.append(int(name))
    return out


def kill_orphans(workers, deadline=2.0):
    """(In the zygote, a child subreaper: server.py) kill the processes a worker left behind --
    a daemon that left its session and process group, a fork bomb's children -- which the kernel
    made this process's children when their parents died, whatever uid they run as, where no
    cgroup or uid can find them.  `workers`: the live workers' pids, spared.  Reaps them too."""
    import signal as _signal
    import time

    end = time.monotonic() + deadline
    while True:
        left = [p for p in _children(os.getpid()) if p not in workers]
        for p in left:
            try:
                os.kill(p, _signal.SIGKILL)
            except OSError:
                pass
        for p in left:  # reaped here: nobody else waits for an orphan
            try:
                os.waitpid(p, 0)
            except ChildProcessError:
                pass
        if not left or time.monotonic() >= end:
            return len(left)
        time.sleep(0.01)
