"""What every property module uses: registration, calling student code, checks and messages.

A property is a function ``prop_fn(student, **drawn)`` wrapped by hypothesis' ``@given`` and
registered with ``@prop(...)``.  It calls the student's code only through ``student.call`` /
``student.new`` (which catch crashes, check that inputs are not modified in place and remember
the call for the counterexample) and reports a broken property by raising ``PropertyFailure``
through ``fail`` or the ``check_*`` helpers.  Hypothesis shrinks the failing input, so the
counterexample in the report is the smallest one found.
"""
import math
import sys
import traceback
from dataclasses import dataclass

import numpy as np
import torch
from hypothesis import HealthCheck, Phase, Verbosity, settings

from ..errors import MissingFunction, PropertyFailure, StudentCrash, TestTimeout
from ..sandbox.protocol import same_values

# ---------------------------------------------------------------- registry


@dataclass(frozen=True)
class Property:
    exercise: str
    function: str
    name: str  # "function/property", as in course.yml
    zh: str  # what must hold, in Chinese
    en: str  # ... and in English
    run: object  # callable(student)

    @property
    def full_name(self):
        return f"{self.exercise}/{self.name}"


REGISTRY = {}  # full name -> Property


def prop(exercise, function, name, *, zh, en):
    """Register a property; `name` is the part after the function, e.g. "future_is_blocked"."""

    def register(fn):
        p = Property(exercise, function, f"{function}/{name}", zh, en, fn)
        if p.full_name in REGISTRY:
            raise RuntimeError(f"property {p.full_name} is registered twice")
        REGISTRY[p.full_name] = p
        return fn

    return register


def grading_profile(max_examples=20):
    """Deterministic settings: the same submission always sees the same examples."""
    settings.register_profile(
        "grading",
        derandomize=True,
        deadline=None,
        database=None,
        max_examples=max_examples,
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=Verbosity.quiet,
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    settings.load_profile("grading")


grading_profile()

# ---------------------------------------------------------------- formatting


def fmt(x, limit=400):
    """A small, readable rendering of a value for a counterexample."""
    if isinstance(x, torch.Tensor):
        t = x.detach().cpu()
        head = f"tensor shape={tuple(t.shape)} dtype={str(t.dtype).replace('torch.', '')}"
        if t.numel() == 0:
            return head + " (empty)"
        if t.is_complex() or t.numel() > 96:
            return head
        a = t.to(torch.int64 if t.dtype == torch.bool else t.dtype).numpy()
        body = np.array2string(a, precision=4, suppress_small=True, separator=", ", max_line_width=100)
        body = "\n".join(ln for ln in body.splitlines() if ln.strip())
        return f"{head}\n{body}"
    if isinstance(x, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in x):
        return "(" + ",\n ".join(fmt(v) for v in x) + ")"
    r = x if isinstance(x, str) else repr(x)
    return r if len(r) <= limit or isinstance(x, str) else r[:limit] + " ..."


def _short(a):
    if isinstance(a, torch.Tensor):
        return f"<{tuple(a.shape)}>"
    if isinstance(a, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in a):
        inner = ", ".join(_short(v) for v in a)
        return f"({inner})" if isinstance(a, tuple) else f"[{inner}]"
    return fmt(a, 60)


def fmt_call(label, args, kwargs):
    """`f(<(2, 3)>, causal=True)`: tensors by their shape (the values are shown separately)."""
    short = [_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()]
    return f"{label}({', '.join(short)})"


# ---------------------------------------------------------------- failures


def fail(zh, en, *, show=None, hint_zh="", hint_en="", student=None, kind="failed"):
    """Raise a PropertyFailure; `show` maps labels to values printed as the counterexample."""
    details = []
    if student is not None and student.last_call:
        details.append(("调用 call", student.last_call))
    for label, value in (show or {}).items():
        details.append((label, fmt(value)))
    raise PropertyFailure(zh, en, details, hint_zh, hint_en, kind)


class Student:
    """The student's functions, called safely: crashes become PropertyFailures."""

    def __init__(self, submission, roots=(), exercise=None):
        self.submission = submission
        self.roots = tuple(str(r) for r in roots)
        self.exercise = exercise
        self.last_call = ""

    def lookup(self, name):
        obj = self.submission.get(name, prefer=self.exercise)
        if obj is None:
            errs = self.submission.load_errors
            raise MissingFunction(
                f"提交中找不到 `{name}`。请确认名称与模板一致，并且定义它的单元格能运行。",
                f"`{name}` is not defined in your submission. Check the name matches the template "
                f"and that the cell defining it runs.",
                [("加载时的错误 load errors", "\n".join(errs))] if errs else [],
                kind="missing",
            )
        return obj

    def call(self, name, *args, **kwargs):
        return self.invoke(name, self.lookup(name), *args, **kwargs)

    def new(self, name, *args, **kwargs):
        """Instantiate the student's class `name`."""
        return self.invoke(name, self.lookup(name), *args, **kwargs)

    def invoke(self, label, fn, *args, **kwargs):
        self.last_call = fmt_call(label, args, kwargs)
        tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, (tuple, list)):
                tensors += [v for v in a if isinstance(v, torch.Tensor)]
        before = [t.detach().clone() for t in tensors]
        if not callable(fn):
            raise StudentCrash(f"`{label}` 不是函数（是 {type(fn).__name__}）。",
                               f"`{label}` is not callable (it is a {type(fn).__name__}).", kind="missing")
        try:
            out = fn(*args, **kwargs)
        except TestTimeout:
            raise
        except BaseException as e:  # noqa: BLE001 - the student's exception, whatever it is
            raise self._crash(label, e) from None
        for t, b in zip(tensors, before):
            if not same_values(t.detach(), b):
                raise PropertyFailure(
                    f"`{label}` 原地修改了它的输入（例如用了 `+=`、`masked_fill_` 或切片赋值）。输入必须保持不变。",
                    f"`{label}` modified one of its inputs in place (e.g. `+=`, `masked_fill_`, slice "
                    f"assignment). Inputs must stay unchanged; work on a new tensor.",
                    [("调用 call", self.last_call), ("调用前 before", fmt(b)), ("调用后 after", fmt(t))],
                )
        return out

    def raises(self, exc_type, name, *args, **kwargs):
        """True if the student's `name` raises `exc_type` (any other exception is a crash)."""
        fn = self.lookup(name)
        self.last_call = fmt_call(name, args, kwargs)
        try:
            fn(*args, **kwargs)
        except TestTimeout:
            raise
        except exc_type:
            return True
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, NotImplementedError):
                raise self._crash(name, e) from None
            return False
        return False

    def _crash(self, label, e):
        frames = [f for f in traceback.extract_tb(e.__traceback__)
                  if self.roots and f.filename.startswith(self.roots)]
        where = "".join(f"  {f.filename.rsplit('/', 1)[-1]}, line {f.lineno}, in {f.name}\n    {f.line}\n"
                        for f in frames[-3:])
        msg = f"{type(e).__name__}: {str(e)[:500]}"
        if isinstance(e, NotImplementedError):
            return StudentCrash(
                f"`{label}` 还没有实现（仍然抛出 NotImplementedError）。",
                f"`{label}` is not implemented yet (it still raises NotImplementedError).",
                [("调用 call", self.last_call)], kind="missing")
        return StudentCrash(
            f"调用 `{label}` 时你的代码抛出了异常 {type(e).__name__}。",
            f"Your code raised {type(e).__name__} when `{label}` was called.",
            [("调用 call", self.last_call), ("异常 exception", msg)] + ([("位置 where", where.rstrip())] if where else []),
            "检查调用里的输入形状：它们在合同允许的范围内。",
            "Look at the input shapes in the call above: they are all allowed by the contract.",
            kind="error")


# ---------------------------------------------------------------- checks


def check_tensor(x, what, *, shape=None, dtype=None, device=None, student=None, finite=False):
    """`x` must be a torch.Tensor of the given shape / dtype / device (and finite if asked)."""
    if not isinstance(x, torch.Tensor):
        fail(f"{what} 应该是 torch.Tensor，实际是 {type(x).__name__}。",
             f"{what} should be a torch.Tensor, got {type(x).__name__}.", student=student,
             hint_zh="所有函数都接收并返回 torch.Tensor（不要返回 numpy 数组、列表或 None）。",
             hint_en="Every function takes and returns torch.Tensors (not numpy arrays, lists or None).")
    if shape is not None and tuple(x.shape) != tuple(shape):
        fail(f"{what} 的形状应为 {tuple(shape)}，实际为 {tuple(x.shape)}。",
             f"{what} should have shape {tuple(shape)}, got {tuple(x.shape)}.", student=student,
             hint_zh="逐行写出每个中间量的形状（B, T, d, H ...），找出第一处不一致。",
             hint_en="Write the shape of every intermediate quantity (B, T, d, H, ...) and find the first that differs.")
    if dtype is not None and x.dtype != dtype:
        fail(f"{what} 的 dtype 应为 {dtype}，实际为 {x.dtype}。",
             f"{what} should have dtype {dtype}, got {x.dtype}.", student=student,
             hint_zh="掩码用 torch.bool；浮点结果保持输入的 dtype。",
             hint_en="Masks are torch.bool; float results keep the input's dtype.")
    if device is not None and x.device != torch.device(device):
        fail(f"{what} 应在设备 {device} 上，实际在 {x.device}。",
             f"{what} should be on device {device}, got {x.device}.", student=student,
             hint_zh="新建张量时传入 device=...（例如 torch.arange(T, device=lengths.device)）。",
             hint_en="Pass device=... when you create tensors (e.g. torch.arange(T, device=lengths.device)).")
    if finite and x.is_floating_point() and not bool(torch.isfinite(x.detach()).all()):
        fail(f"{what} 含有 NaN 或 inf。", f"{what} contains NaN or inf.", student=student,
             show={what: x})
    return x


def check_close(got, expected, what, *, atol=1e-4, rtol=1e-4, student=None, show=None,
                hint_zh="", hint_en="", where=None):
    """Values must agree within float32 tolerances; `where` (bool) limits what is compared."""
    check_tensor(got, what, shape=expected.shape, student=student)
    g = got.detach().to(torch.float64)
    e = expected.detach().to(torch.float64)
    bad = ~torch.isclose(g, e, atol=atol, rtol=rtol, equal_nan=False)
    if where is not None:
        bad &= where.expand_as(bad)
    if bool(bad.any()):
        idx = bad.nonzero()[:5]
        lines = [f"{what}{list(map(int, i))}: expected {e[tuple(i)].item():.6g}, got {g[tuple(i)].item():.6g}"
                 for i in idx]
        shown = dict(show or {})
        shown[f"期望 expected {what}"] = expected
        shown[f"实际 got {what}"] = got
        fail(f"{what} 的数值与参考答案不一致（{int(bad.sum())} 个元素不同）。",
             f"{what} differs from the reference in {int(bad.sum())} "
             + ("entry." if int(bad.sum()) == 1 else "entries."),
             show={**shown, "不同的元素 differing entries": "\n".join(lines)},
             student=student, hint_zh=hint_zh, hint_en=hint_en)
    return got


def check_equal(got, expected, what, *, student=None, show=None, hint_zh="", hint_en=""):
    """Exact equality (masks)."""
    check_tensor(got, what, shape=expected.shape, student=student)
    bad = got.detach() != expected
    if bool(bad.any()):
        idx = bad.nonzero()[:5]
        lines = [f"{what}{list(map(int, i))}: expected {expected[tuple(i)].item()}, got {got[tuple(i)].item()}"
                 for i in idx]
        shown = dict(show or {})
        shown[f"期望 expected {what}"] = expected
        shown[f"实际 got {what}"] = got
        fail(f"{what} 有 {int(bad.sum())} 个元素不对。", f"{what} is wrong in {int(bad.sum())} " + ("entry." if int(bad.sum()) == 1 else "entries."),
             show={**shown, "不同的元素 differing entries": "\n".join(lines)},
             student=student, hint_zh=hint_zh, hint_en=hint_en)
    return got


def unpack(out, n, what, student=None):
    """The student's function must return a tuple of `n` items."""
    if not isinstance(out, (tuple, list)) or len(out) != n:
        fail(f"{what} 应返回 {n} 个值的元组，实际返回 {type(out).__name__}。",
             f"{what} should return a tuple of {n} values, got {type(out).__name__}"
             + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else "") + ".", student=student)
    return tuple(out)


__all__ = ["prop", "fail", "Student", "check_tensor", "check_close", "check_equal", "unpack", "fmt",
           "REGISTRY", "Property", "grading_profile", "math", "sys"]
