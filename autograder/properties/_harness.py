"""What every property module uses: registration, calling student code, checks and messages.

A property is a function ``prop_fn(student, **drawn)`` wrapped by hypothesis' ``@given`` and
registered with ``@prop(...)``.  It calls the student's code only through ``student.call`` /
``student.new`` (which catch crashes, check that inputs are not modified in place and remember
the call for the counterexample) and reports a broken property by raising ``PropertyFailure``
through ``fail`` or the ``check_*`` helpers.  Hypothesis shrinks the failing input, so the
counterexample in the report is the smallest one found.
"""
import ast
import functools
import inspect
import json
import math
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis.errors import InvalidArgument

from ..checks.elsewhere import Place, bring_back, device_of, uses_elsewhere
from ..errors import MissingFunction, PropertyFailure, StudentCrash, TestTimeout
from ..load import source
from ..sandbox.protocol import container_snapshot, same_values

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
    """Deterministic settings: the same submission always sees the same examples.  One settings
    object per `max_examples`, registered once: the same settings are the same object
    (settings.default), in this process and in the processes it forks (use_current_profile and
    record compare with it)."""
    name = f"grading-{max_examples}"
    try:
        settings.get_profile(name)
    except InvalidArgument:
        settings.register_profile(
            name,
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
    settings.load_profile(name)
    no_local_constants()


def no_local_constants():
    """hypothesis draws, now and then, a constant it found in the process's "local" modules (those
    not installed in site-packages: the grader itself in a checkout, a course's solutions).  Which
    of them a process has imported differs between `grade`, a batch's grading process that graded
    others before, the self-check, a checkout and an installed wheel: the drawn examples would
    differ with them.  None is drawn: the examples depend on the property alone."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # another hypothesis: nothing of the kind to turn off
        return
    if getattr(providers._get_local_constants, "seqgrader_none", False):
        return
    empty = Constants()

    def none():
        return empty

    none.seqgrader_none = True
    providers._get_local_constants = none
    providers.CONSTANTS_CACHE.cache.clear()


grading_profile()


def prepare(props):
    """Pay once per process what hypothesis pays on every run of a property: with `derandomize`
    it seeds each run from a digest of the test's source (inspect.getsource + tokenize, ~3 ms a
    property, twice per run).  The same seed, set once: the same examples, in a process that
    grades many submissions (and in the children it forks) for free.  Idempotent."""
    from hypothesis import seed
    from hypothesis.internal.compat import int_from_bytes
    from hypothesis.internal.reflection import function_digest

    props = list(props)
    for p in props:
        run = p.run
        if getattr(run, "_seqgrader_prepared", False) or not hasattr(run, "hypothesis"):
            continue
        digest = function_digest(run.hypothesis.inner_test)
        seed(int_from_bytes(digest))(run)  # what `derandomize` would draw, without the digest
        run._hypothesis_internal_database_key = digest
        run._seqgrader_prepared = True
    use_current_profile(props)


def record(props):
    """Draw once, in a process that grades many submissions, the examples hypothesis runs each
    property on when the student passes them all: the pinned @examples, then the drawn ones
    (after prepare, under the judges' settings).  With `derandomize`, no database and a body that
    neither draws (st.data()) nor rejects, that list depends on the property and the settings
    alone, never on the student: hypothesis only changes course after a failure.  A property that
    draws inside its body is not recorded (hypothesis runs it, as always).  Idempotent."""
    for p in props:
        _record(p)


def _record(prop):
    from hypothesis import settings
    from hypothesis.strategies import DataObject

    run = getattr(prop, "run", None)
    if not hasattr(run, "hypothesis") or getattr(run, "_seqgrader_recorded", None) is settings.default:
        return
    seen = []
    inner = run.hypothesis.inner_test
    first = next(iter(inspect.signature(inner).parameters))  # the student, which run_property passes

    def capture(*args, **kwargs):
        kwargs.pop(first, None)
        seen.append(kwargs)

    run.hypothesis.inner_test = capture
    try:
        run(None)
    except Exception:  # noqa: BLE001 - a property that cannot be recorded is run by hypothesis
        seen = None
    finally:
        run.hypothesis.inner_test = inner
    if seen is not None and any(isinstance(v, DataObject) for kw in seen for v in kw.values()):
        seen = None
    run._seqgrader_examples = seen
    run._seqgrader_recorded = settings.default  # recorded under these settings only (grading_profile)


def run_property(prop, student, again=None):
    """Run a property on the student's code: its recorded examples (record), if any, one after the other,
    each with the global random states hypothesis gives an example; at the first example that
    does not pass, hypothesis runs the property from the start, as it always did, and finds and
    shrinks the failure (`again()` is called first: the test starts over, with its whole time
    limit).  The same examples, in the same order, as hypothesis alone: the same outcome, without
    drawing them again for every student."""
    from hypothesis import settings
    from hypothesis.internal.entropy import deterministic_PRNG

    run = prop.run
    examples = getattr(run, "_seqgrader_examples", None)
    if examples is None or getattr(run, "_seqgrader_recorded", None) is not settings.default:
        run(student)
        return
    inner = run.hypothesis.inner_test
    try:
        for kwargs in examples:
            with deterministic_PRNG():
                inner(student, **kwargs)
        return
    except Exception as e:  # noqa: BLE001 - the first example that did not pass: hypothesis takes over
        first = e
    if again is not None:
        again()
    run(student)
    raise first  # passed when run again: the student's code answered the same call two ways


def use_current_profile(props):
    """@given keeps the settings that were current when the property module was imported; a
    property must run with the profile current now (grading_profile(course.max_examples)), in
    whatever order the caller imported things."""
    from hypothesis import settings

    current = settings.default
    for p in props:
        run = p.run
        if hasattr(run, "hypothesis") and getattr(run, "_seqgrader_profile", None) is not current:
            run._hypothesis_internal_use_settings = settings(current, database=None)
            run._seqgrader_profile = current


def _tensor_pretty(obj, printer, cycle):
    """How hypothesis shows a tensor: it prints every explicit example's arguments, even when
    nobody reads them (quiet verbosity), and torch's repr is slow.  Our reports never use it."""
    printer.text(f"tensor(shape={tuple(obj.shape)}, dtype={obj.dtype})")


def _register_pretty():
    try:
        from hypothesis.vendor.pretty import for_type_by_name
        for_type_by_name("torch", "Tensor", _tensor_pretty)
    except ImportError:  # a hypothesis without it: only slower
        pass


_register_pretty()

# ---------------------------------------------------------------- formatting


def fmt(x, limit=400):
    """A small, readable rendering of a value for a counterexample."""
    if isinstance(x, torch.Tensor):
        if x.is_meta:
            return f"tensor shape={tuple(x.shape)} dtype={str(x.dtype).replace('torch.', '')} device=meta (no values)"
        t = x.detach().cpu()
        head = f"tensor shape={tuple(t.shape)} dtype={str(t.dtype).replace('torch.', '')}"
        if t.numel() == 0:
            return head + " (empty)"
        if t.is_complex() or t.numel() > 96:
            return head
        if t.dtype == torch.bool:
            t = t.to(torch.int64)
        elif t.dtype in (torch.bfloat16, torch.float16):
            t = t.to(torch.float32)
        a = t.numpy()
        # a tiny non-zero (3e-41 of uninitialised memory where 0 is due) must not print as 0
        tiny = a.dtype.kind == "f" and bool(((a != 0) & (np.abs(a) < 5e-5)).any())
        body = np.array2string(a, precision=4, suppress_small=not tiny, separator=", ", max_line_width=100)
        body = "\n".join(ln for ln in body.splitlines() if ln.strip())
        return f"{head}\n{body}"
    if isinstance(x, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in x):
        return "(" + ",\n ".join(fmt(v) for v in x) + ")"
    r = x if isinstance(x, str) else repr(x)
    return r if len(r) <= limit else r[:limit] + " ..."  # strings too: feedback is a narrow channel


def _short(a):
    if isinstance(a, torch.Tensor):  # the dtype too when it is not the usual one (int32 lengths, float64 X)
        usual = a.dtype in (torch.float32, torch.int64, torch.bool)
        return f"<{tuple(a.shape)}>" if usual else f"<{tuple(a.shape)} {str(a.dtype).replace('torch.', '')}>"
    if isinstance(a, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in a):
        inner = ", ".join(_short(v) for v in a)
        return f"({inner})" if isinstance(a, tuple) else f"[{inner}]"
    return fmt(a, 60)


class CallText(str):
    """The text of a call, `f(<(2, 3)>, causal=True)`, which also remembers the call itself (label,
    args, kwargs) so that a failure can put the inputs into the structured counterexample."""

    label, args, kwargs = "", (), {}


def fmt_call(label, args, kwargs):
    """`f(<(2, 3)>, causal=True)`: tensors by their shape (the values are shown separately)."""
    short = [_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()]
    text = CallText(f"{label}({', '.join(short)})")
    text.label, text.args, text.kwargs = str(label), tuple(args), dict(kwargs)
    return text


# ---------------------------------------------------------------- structured counterexample
#
# Besides the text lines (`details`), a failure carries a small JSON-able dict that renderers draw
# (report/plots.py, report/html.py); see TestResult.counterexample in report/model.py:
#   {"kind": "mask" | "weights" | "encoding" | "tensor" | "scalar" | "shape" | "values",
#    "what": "mask", "call": "causal_mask(3)",
#    "inputs": {name: value},      # a tensor is {"shape", "dtype", "values": nested list or None}
#    "expected", "got": nested lists (or a 2-D slice of a large tensor: see "index", "offset"),
#    "differs": nested list of bools (True = this entry is wrong), "n_differ": int,
#    "shape": the full shape, "labels": ["expected", "got"] or ["before", "after"], ...}

CX_ENTRIES = 256  # at most this many entries of one tensor are kept whole
CX_ROWS, CX_COLS = 24, 16  # otherwise a window of one 2-D slice, around the first wrong entry
CX_BYTES = 40_000  # the whole counterexample, as JSON; input values are dropped first beyond it

# The contract's parameter names (docs/contract.md), to name the arguments of the last call.
@functools.lru_cache(maxsize=64)
def _signatures(path, mtime):
    """{name: [parameter names]} of the reference solution at `path`: its functions', a class's
    (its constructor's, without self) and its methods' (without self; the first class that has one)."""
    tree = source.parse(Path(path).read_text(encoding="utf-8"))
    out = {}
    for name, node in source.qualified(tree).items():
        if isinstance(node, ast.ClassDef):
            continue
        owner, _, method = name.rpartition(".")
        if not owner:
            out[name] = source.parameters(node)
        elif method == "__init__":
            out[owner] = source.parameters(node)[1:]
        else:
            out.setdefault(method, source.parameters(node)[1:])
    return out


def parameter_names(exercise, name):
    """The parameter names of `name` (a function, a class: its constructor's, or a method) in the
    reference solution of `exercise`, as the contract spells them; [] where there is none."""
    from ..catalogue import reference_solution

    try:
        path = reference_solution(exercise)
        return list(_signatures(str(path), path.stat().st_mtime_ns).get(name, []))
    except OSError:
        return []


PAIRS = [("期望 expected ", "实际 got ", ["expected", "got"]), ("之前 before ", "之后 after ", ["before", "after"]),
         ("原来的 before ", "改变后的 after ", ["before", "after"])]


def _num(v):
    """A JSON-safe number: floats to 6 significant digits, NaN and inf as strings."""
    if isinstance(v, bool):
        return v
    if isinstance(v, float):
        if math.isfinite(v):
            return float(f"{v:.6g}")
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    return v


def _nested(t):
    """A small tensor as nested lists of JSON-safe numbers."""
    if t.is_complex():
        t = t.abs()
    if t.dtype == torch.bfloat16 or t.dtype == torch.float16:
        t = t.float()
    lst = t.tolist()

    def walk(x):
        return [walk(v) for v in x] if isinstance(x, list) else _num(x)

    return walk(lst)


def _as_tensor(x):
    if isinstance(x, torch.Tensor) and not x.is_meta:  # a meta tensor has no values to show
        return x.detach().cpu()
    return None


def _cx_value(x):
    """An input of the counterexample: a tensor as {"shape", "dtype", "values"}, else a JSON scalar."""
    t = _as_tensor(x)
    if t is not None:
        small = t.numel() <= CX_ENTRIES
        return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                "values": _nested(t) if small else None}
    if x is None or isinstance(x, (bool, int, float, str)):
        return _num(x) if not isinstance(x, str) else x[:400]
    return fmt(x, 200)


def _inputs(student, show, skip):
    """The last call's arguments, named as in the contract, then what the property chose to show."""
    out = {}
    call = getattr(student, "last_call", None) if student is not None else None
    if isinstance(call, CallText):
        base = call.label.rsplit(".", 1)[-1] if call.label.endswith(".forward") else call.label
        names = parameter_names(getattr(student, "exercise", None), base)
        for i, a in enumerate(call.args):
            name = names[i] if i < len(names) else f"arg{i}"
            if isinstance(a, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in a):
                for j, v in enumerate(a):
                    out[f"{name}[{j}]"] = _cx_value(v)
            else:
                out[name] = _cx_value(a)
        for k, v in call.kwargs.items():
            if isinstance(v, (tuple, list)) and any(isinstance(u, torch.Tensor) for u in v):
                for j, u in enumerate(v):
                    out[f"{k}[{j}]"] = _cx_value(u)
            else:
                out[k] = _cx_value(v)
    seen = [_as_tensor(a) for a in _flat(list(call.args) + list(call.kwargs.values()))] \
        if isinstance(call, CallText) else []
    for label, v in (show or {}).items():
        label = str(label)
        if label in skip or label in out or label.startswith("不同的元素") \
                or any(label.startswith(p) for pair in PAIRS for p in pair[:2]):
            continue
        items = list(enumerate(v)) if isinstance(v, (tuple, list)) and any(isinstance(u, torch.Tensor) for u in v) \
            else [(None, v)]
        for j, u in items:
            t = _as_tensor(u)
            if t is not None and any(s is not None and s.shape == t.shape and s.dtype == t.dtype
                                     and bool((s == t).all()) for s in seen):
                continue  # the same tensor as an argument of the call, under another name
            out[label if j is None else f"{label}[{j}]"] = _cx_value(u)
    return out


def _flat(values):
    out = []
    for v in values:
        if isinstance(v, (tuple, list)):
            out += [u for u in v if isinstance(u, torch.Tensor)]
        elif isinstance(v, torch.Tensor):
            out.append(v)
    return out


def _differs(e, g):
    if e.dtype == torch.bool or not (e.is_floating_point() or g.is_floating_point()):
        return e.to(torch.int64) != g.to(torch.int64)
    e, g = e.to(torch.float64), g.to(torch.float64)
    return ~torch.isclose(g, e, atol=1e-4, rtol=1e-4)


def _window(tensors, bad):
    """Tensors of one shape reduced to a readable window: whole if small, else one 2-D slice (the
    one holding the first wrong entry) cut to CX_ROWS x CX_COLS around it.  Returns (views, meta)."""
    ref = next(t for t in tensors if t is not None)
    if ref.numel() <= CX_ENTRIES:
        return tensors, {}
    first = [int(v) for v in bad.nonzero()[0]] if bad is not None and bool(bad.any()) else [0] * ref.dim()
    meta = {}
    if ref.dim() > 2:
        lead = first[:-2]
        meta["index"] = lead
        tensors = [t[tuple(lead)] if t is not None else None for t in tensors]
        first = first[-2:]
    if ref.dim() == 1:
        n = ref.shape[0]
        c0 = max(0, min(first[0] - CX_ENTRIES // 4, n - CX_ENTRIES))
        meta["offset"] = [c0]
        return [t[c0:c0 + CX_ENTRIES] if t is not None else None for t in tensors], meta
    R, C = tensors[0].shape if tensors[0] is not None else next(t for t in tensors if t is not None).shape
    r0 = max(0, min(first[0] - CX_ROWS // 4, R - CX_ROWS))
    c0 = max(0, min(first[1] - CX_COLS // 4, C - CX_COLS))
    meta["offset"] = [r0, c0]
    return [t[r0:r0 + CX_ROWS, c0:c0 + CX_COLS] if t is not None else None for t in tensors], meta


def _guess_kind(what, t, student):
    w = (what or "").strip()
    if t is None:
        return "values"
    if t.dtype == torch.bool:
        return "mask"
    if w == "weights" or w.startswith("weights[") or w.endswith(" weights"):
        return "weights"
    if w == "PE" or (getattr(student, "exercise", None) == "positional_encoding" and t.dim() == 2):
        return "encoding"
    if t.dim() == 0:
        return "scalar"
    return "tensor"


def counterexample(*, what="", expected=None, got=None, differs=None, show=None, student=None,
                   picture=None, labels=None, skip=(), extra=None):
    """The structured counterexample of a failure (see the comment above); never raises."""
    try:
        cx = _counterexample(what, expected, got, differs, show, student, picture, labels, set(skip))
        cx.update({k: _num(v) if not isinstance(v, (list, dict)) else v for k, v in (extra or {}).items()})
        return cx
    except Exception as e:  # noqa: BLE001 - a picture must never cost the verdict
        return {"kind": "values", "what": what, "note": f"counterexample unavailable ({type(e).__name__})"}


def _counterexample(what, expected, got, differs, show, student, picture, labels, skip):
    show = dict(show or {})
    if expected is None and got is None:  # the expected / got pair among what is shown
        for pre_e, pre_g, names in PAIRS:
            for label, v in show.items():
                if label.startswith(pre_e) and isinstance(v, torch.Tensor):
                    name = label[len(pre_e):]
                    for label_g, vg in show.items():
                        if label_g.startswith(pre_g) and label_g[len(pre_g):] == name and isinstance(vg, torch.Tensor):
                            expected, got, what = v, vg, what or name
                            labels = labels or names
                            skip |= {label, label_g}
                            break
                if expected is not None:
                    break
            if expected is not None:
                break
    e, g = _as_tensor(expected), _as_tensor(got)
    cx = {"kind": picture or _guess_kind(what, e if e is not None else g, student), "what": what}
    call = getattr(student, "last_call", "") if student is not None else ""
    if call:
        cx["call"] = str(call)
    if labels:
        cx["labels"] = list(labels)
    if e is not None and g is not None and tuple(e.shape) != tuple(g.shape):
        cx["kind"] = "shape"
        cx["expected_shape"], cx["got_shape"] = list(e.shape), list(g.shape)
        e = None
    if e is not None or g is not None:
        ref = e if e is not None else g
        cx["shape"] = list(ref.shape)
        cx["dtype"] = str(ref.dtype).replace("torch.", "")
        bad = _as_tensor(differs)
        if bad is not None:
            bad = bad.to(torch.bool).expand(ref.shape).clone()
        elif e is not None and g is not None:
            bad = _differs(e, g)
        if bad is not None:
            cx["n_differ"] = int(bad.sum())
        (e, g, bad), meta = _window([e, g, bad], bad)
        cx.update(meta)
        if e is not None:
            cx["expected"] = _nested(e)
        if g is not None:
            cx["got"] = _nested(g)
        if bad is not None:
            cx["differs"] = _nested(bad)
    cx["inputs"] = _inputs(student, show, skip)
    if len(json.dumps(cx, default=str)) > CX_BYTES:  # keep the report small: inputs' values go first
        for v in cx["inputs"].values():
            if isinstance(v, dict):
                v["values"] = None
    if len(json.dumps(cx, default=str)) > CX_BYTES:
        for k in ("expected", "got", "differs"):
            cx.pop(k, None)
        cx["note"] = "too large to show"
    return cx


# ---------------------------------------------------------------- failures


def fail(zh, en, *, show=None, hint_zh="", hint_en="", student=None, kind="failed", picture=None,
         what="", expected=None, got=None, differs=None, labels=None, extra=None):
    """Raise a PropertyFailure; `show` maps labels to values printed as the counterexample.

    The structured counterexample (for tables and pictures) is built from the last call, `show`
    (an "期望 expected X" / "实际 got X" pair in it is the expected / got pair) or the explicit
    `expected`, `got` and `differs` (bool: the wrong entries); `picture` names what to draw
    ("mask", "weights", "encoding", "tensor"), guessed from the values when not given.
    """
    details = []
    if student is not None and student.last_call:
        details.append(("调用 call", str(student.last_call)))
    for label, value in (show or {}).items():
        details.append((label, fmt(value)))
    cx = counterexample(what=what, expected=expected, got=got, differs=differs, show=show, student=student,
                        picture=picture, labels=labels, extra=extra)
    raise PropertyFailure(zh, en, details, hint_zh, hint_en, kind, counterexample=cx)


def argument_position(args, kwargs, obj):
    """Where `obj` (a tensor, a list or a dict) sits among a call's arguments, by identity: "0" (the
    first positional argument), "1.0" (the first item of the second), "mask" (a keyword); None when
    it is not there.  The diagnosis tells apart mistakes that write into different arguments."""
    for name, v in list(enumerate(args)) + list(kwargs.items()):
        if v is obj:
            return str(name)
        if isinstance(v, (tuple, list)):
            for j, x in enumerate(v):
                if x is obj:
                    return f"{name}.{j}"
    return None


def raise_container_mutated(label, call, written=None):
    """`written`: the position of the list or dict changed (argument_position), when known."""
    failure = PropertyFailure(
        f"`{label}` 原地修改了传给它的列表或字典（例如对参数写 `base[key] = value`）。输入必须保持不变：先复制"
        f"（`copy.deepcopy`），再修改副本。",
        f"`{label}` changed a list or dict it was given, in place (e.g. `base[key] = value` on the argument). "
        f"Inputs must stay unchanged: copy first (`copy.deepcopy`), then change the copy.",
        [("调用 call", str(call))],
        "调用者之后还要用同一个对象（例如用同一个 base 构造下一组配置）。",
        "The caller uses the same object afterwards (e.g. the same base for the next configuration).")
    failure.written = written
    raise failure


class Student:
    """The student's functions, called safely: crashes become PropertyFailures.  A call with an
    argument on "another device" runs on the simulated device (checks/elsewhere.py), and its
    results come back marked with where they were, as from a worker."""

    def __init__(self, submission, roots=(), exercise=None):
        self.submission = submission
        self.roots = tuple(str(r) for r in roots)
        self.exercise = exercise
        self.last_call = ""
        self.elsewhere = None  # the device the last call with another device ran on
        self.device_problem = None

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
        if uses_elsewhere([args, kwargs]):
            place = Place()
            with place.active():
                self.elsewhere = str(place.device)
                out = self._invoke(label, fn, place.put(args), place.put(kwargs))
                return bring_back(out)
        return self._invoke(label, fn, args, kwargs)

    def _invoke(self, label, fn, args, kwargs):
        tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, (tuple, list)):
                tensors += [v for v in a if isinstance(v, torch.Tensor)]
        before = [t.detach().clone() for t in tensors]
        containers = container_snapshot(list(args) + list(kwargs.values()))
        if not callable(fn):
            raise StudentCrash(f"`{label}` 不是函数（是 {type(fn).__name__}）。",
                               f"`{label}` is not callable (it is a {type(fn).__name__}).", kind="missing")
        try:
            out = fn(*args, **kwargs)
        except TestTimeout:
            raise
        except BaseException as e:  # noqa: BLE001 - the student's exception, whatever it is
            raise self._crash(label, e) from None
        if containers is not None:
            now = container_snapshot(list(args) + list(kwargs.values()))
            if now != containers:
                values = list(args) + list(kwargs.values())
                changed = [v for v, a, b in zip(values, containers, now) if a != b]
                raise_container_mutated(label, self.last_call, argument_position(args, kwargs, changed[0])
                                        if len(changed) == 1 else None)
        for t, b in zip(tensors, before):
            if not same_values(t.detach(), b):
                failure = PropertyFailure(
                    f"`{label}` 原地修改了它的输入（例如用了 `+=`、`masked_fill_` 或切片赋值）。输入必须保持不变。",
                    f"`{label}` modified one of its inputs in place (e.g. `+=`, `masked_fill_`, slice "
                    f"assignment). Inputs must stay unchanged; work on a new tensor.",
                    [("调用 call", self.last_call), ("调用前 before", fmt(b)), ("调用后 after", fmt(t))],
                )
                failure.written = argument_position(args, kwargs, t)  # which argument (the diagnosis reads it)
                raise failure
        return out

    def global_random_state(self):
        """A digest of this process's global random states (torch, numpy, random): equal
        before and after a call that left them alone (checks/rngstate.py)."""
        from ..checks.rngstate import digest

        return digest()

    def raises(self, exc_type, name, *args, **kwargs):
        """True if the student's `name` raises `exc_type` (any other exception is a crash)."""
        fn = self.lookup(name)
        self.last_call = fmt_call(name, args, kwargs)
        place = Place() if uses_elsewhere([args, kwargs]) else None
        try:
            if place is not None:
                with place.active():
                    self.elsewhere = str(place.device)
                    fn(*place.put(args), **place.put(kwargs))
            else:
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
            "检查调用里的输入（形状，以及标出的 dtype）：它们都在合同允许的范围内。",
            "Look at the inputs in the call above (their shapes, and dtypes where shown): the contract allows them all.",
            kind="error")


# ---------------------------------------------------------------- checks


def check_tensor(x, what, *, shape=None, dtype=None, device=None, student=None, finite=False, picture=None):
    """`x` must be a torch.Tensor of the given shape / dtype / device (and finite if asked)."""
    if not isinstance(x, torch.Tensor):
        fail(f"{what} 应该是 torch.Tensor，实际是 {type(x).__name__}。",
             f"{what} should be a torch.Tensor, got {type(x).__name__}.", student=student, what=what,
             hint_zh="所有函数都接收并返回 torch.Tensor（不要返回 numpy 数组、列表或 None）。",
             hint_en="Every function takes and returns torch.Tensors (not numpy arrays, lists or None).")
    if shape is not None and tuple(x.shape) != tuple(shape):
        fail(f"{what} 的形状应为 {tuple(shape)}，实际为 {tuple(x.shape)}。",
             f"{what} should have shape {tuple(shape)}, got {tuple(x.shape)}.", student=student,
             picture="shape", what=what, got=x, extra={"expected_shape": list(shape)},
             hint_zh="逐行写出每个中间量的形状（B, T, d, H ...），找出第一处不一致。",
             hint_en="Write the shape of every intermediate quantity (B, T, d, H, ...) and find the first that differs.")
    if dtype is not None and x.dtype != dtype:
        fail(f"{what} 的 dtype 应为 {dtype}，实际为 {x.dtype}。",
             f"{what} should have dtype {dtype}, got {x.dtype}.", student=student, what=what, got=x,
             picture=picture or "values",
             hint_zh="掩码用 torch.bool；浮点结果保持输入的 dtype。",
             hint_en="Masks are torch.bool; float results keep the input's dtype.")
    if device is not None and device_of(x) != str(torch.device(device)):
        fail(f"{what} 应在设备 {device} 上，实际在 {device_of(x)}。",
             f"{what} should be on device {device}, got {device_of(x)}.", student=student, what=what,
             hint_zh="新建张量时传入 device=...（例如 torch.arange(T, device=lengths.device)）。",
             hint_en="Pass device=... when you create tensors (e.g. torch.arange(T, device=lengths.device)).")
    if finite and x.is_floating_point() and not bool(torch.isfinite(x.detach()).all()):
        fail(f"{what} 含有 NaN 或 inf。", f"{what} contains NaN or inf.", student=student,
             show={what: x}, what=what, got=x, differs=~torch.isfinite(x.detach()), picture=picture)
    return x


def check_elsewhere(x, what, *, student, asked_zh, asked_en, hint_zh, hint_en):
    """`x`, from a call with an argument on another device (checks/elsewhere.py: the GPU where
    the machine has one, else a simulated device), must be on that device.  The message names no
    device, so the feedback is the same on every machine; `asked_*` says what asked for it."""
    where = device_of(x)
    if where is not None and where == getattr(student, "elsewhere", None):
        return x
    zh_got = "CPU 上" if where == "cpu" else f"另一个设备（{where}）上"
    en_got = "on the CPU" if where == "cpu" else f"on another device ({where})"
    fail(f"{asked_zh}，{what} 却在{zh_got}（评分器用的是 CPU 以外的一个设备：有 GPU 的机器上就是 GPU）。",
         f"{asked_en}, yet {what} is {en_got} (the grader uses a device other than the CPU: the GPU on a machine "
         f"that has one).", student=student, what=what, hint_zh=hint_zh, hint_en=hint_en)


def same_device_crash(f):
    """True if a StudentCrash is the student's code mixing devices ("Expected all tensors to be on
    the same device"): a tensor made on the CPU next to the other device's."""
    return isinstance(f, StudentCrash) and any("on the same device" in str(text) for _, text in f.details)


def check_close(got, expected, what, *, atol=1e-4, rtol=1e-4, student=None, show=None,
                hint_zh="", hint_en="", where=None, picture=None):
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
             student=student, hint_zh=hint_zh, hint_en=hint_en,
             what=what, expected=expected, got=got, differs=bad, picture=picture)
    return got


def check_equal(got, expected, what, *, student=None, show=None, hint_zh="", hint_en="", picture=None):
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
             student=student, hint_zh=hint_zh, hint_en=hint_en,
             what=what, expected=expected, got=got, differs=bad, picture=picture)
    return got


RNG_ZH = ("所有随机数都从 g = torch.Generator().manual_seed(seed) 抽取，并把 generator=g 传给每一次抽样。"
          "不要调用 torch.manual_seed(seed)（或 np.random.seed、random.seed）：那会重置调用者的全局随机状态，"
          "调用者之后的每一个随机数（下一批数据、dropout、别的实验）都被悄悄固定了。")
RNG_EN = ("Draw every random number from g = torch.Generator().manual_seed(seed) and pass generator=g to every draw. "
          "Do not call torch.manual_seed(seed) (or np.random.seed, random.seed): it resets the caller's global random "
          "state, and every random number the caller draws afterwards (the next batch, dropout, another experiment) "
          "is silently fixed.")


def check_global_state_untouched(student, name, calls, show=None, hint_zh=RNG_ZH, hint_en=RNG_EN):
    """Each call of `calls` (thunks calling the student's `name`) leaves the global random states (torch,
    numpy, random) as they were.  Two calls with different seeds: a function that seeds the global
    generator leaves it in a state that depends on its seed, so the two calls cannot both leave it
    unchanged, whatever it was before.  `name` is looked up first, so that a submission whose other
    files load only when a name is missing (load.exec_sources) runs their top-level code before."""
    student.lookup(name)
    label = name
    state = student.global_random_state()
    for call in calls:
        call()
        now = student.global_random_state()
        if now != state:
            fail(f"调用 {label} 改变了全局随机状态（torch、numpy 或 random 的）。",
                 f"calling {label} changed the global random state (torch's, numpy's or random's).",
                 student=student, show=show, hint_zh=hint_zh, hint_en=hint_en)
        state = now


def unpack(out, n, what, student=None):
    """The student's function must return a tuple of `n` items."""
    if not isinstance(out, (tuple, list)) or len(out) != n:
        fail(f"{what} 应返回 {n} 个值的元组，实际返回 {type(out).__name__}。",
             f"{what} should return a tuple of {n} values, got {type(out).__name__}"
             + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else "") + ".", student=student)
    return tuple(out)


__all__ = ["prop", "fail", "Student", "check_tensor", "check_close", "check_equal", "unpack", "fmt",
           "check_global_state_untouched",
           "counterexample", "CallText",
           "REGISTRY", "Property", "grading_profile", "math", "sys"]
