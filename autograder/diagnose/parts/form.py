"""The form of what a function returns and takes, in any exercise: dtype, shape, gradient, in-place
writes, ValueError -- read from the calls the diagnosis' probes already made.

Every probe call is logged by the Guarded student (registry.Guarded.log), the student's and the
reference's alike.  The two logs of a probe are aligned call by call (the same function on the
same arguments: calls only one side makes, such as the call that follows a `raises` check the
student fails, are left out) and compared:

* an output tensor of another dtype, or another shape (and then, when the values allow, the
  reference's transposed or cut along one axis), or another type (a Python number for a tensor);
* an output that carries no gradient where the reference's does (rebuilt from `.item()`, detached);
* a call that writes into one of its arguments in place (which one: the argument whose value the
  harness shows as "before"), or changes a list or dict it was given;
* a call the contract rejects that the student accepts (the reference raises ValueError), or a
  ValueError where the reference returns.

These are facts of the calls, not guesses: each is said with the call that shows it.  They are
said for the function diagnosed, when nothing catalogued is named, at most three of them;
"something else differs as well" when the values differ too (beyond the dtype's precision, or the
relation between the shapes), or a probe deviates where no form differs.
"""

import difflib
import inspect

import torch

from ...report.messages import pair
from ..registry import CallFailed
from ..values import ATOL, close, near

# functions whose values are draws: only their form is compared, never their values
RANDOM = {"mlm_mask", "init_tiny_lm", "train_tiny_lm", "run_experiment", "run_ablation"}
OUTPUTS = {  # function -> the names of what it returns (a tuple), for the report
    "lstm_cell": ("h_new", "c_new"),
    "lstm_sequence": ("outputs", ("h_n", "c_n")),
    "scaled_dot_product_attention": ("out", "weights"),
    "MultiHeadAttention": ("out", "weights"),
    "chronological_split": ("train", "test"),
    "fit_standardizer": ("mean", "std"),
    "sliding_windows": ("X", "y"),
    "make_datasets": ("X_train", "y_train", "X_test", "y_test", "mean", "std"),
    "mlm_mask": ("inputs", "labels"),
    "init_tiny_lm": ("E", "W_q", "W_k", "W_v", "W_o", "W_out"),
}
MAX_CLAIMS = 3


def _dt(d):
    return str(d).replace("torch.", "")


def _leaves(x, path=()):
    """[(path, value)] of a result: tensors and numbers inside tuples and lists (two levels)."""
    if isinstance(x, (tuple, list)) and len(path) < 2:
        out = []
        for i, v in enumerate(x):
            out += _leaves(v, path + (i,))
        return out
    return [(path, x)]


def _out_name(function, path, n_out):
    """(zh, en) of the output at `path` of `function`'s result."""
    names = OUTPUTS.get(function)
    if not path:
        return "结果", "the result"
    try:
        name = names
        for i in path:
            name = name[i]
        if isinstance(name, str):
            return f"`{name}`", f"`{name}`"
    except (TypeError, IndexError):
        pass
    where = "".join(f"[{i}]" for i in path)
    return f"结果{where}", f"the result{where}"


def _short(a):
    if isinstance(a, torch.Tensor):
        if a.numel() <= 8 and not a.is_floating_point():
            return f"tensor({a.tolist()})"
        return f"<{tuple(a.shape)} {_dt(a.dtype)}>"
    if isinstance(a, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in a):
        inner = ", ".join(_short(v) for v in a)
        return f"({inner})" if isinstance(a, tuple) else f"[{inner}]"
    r = repr(a)
    return r if len(r) <= 60 else r[:57] + "..."


def _call_text(name, args, kwargs):
    return f"{name}({', '.join([_short(a) for a in args] + [f'{k}={_short(v)}' for k, v in kwargs.items()])})"


def _key(entry):
    method, name, args, kwargs, _ = entry
    return (method, _call_text(name, args, kwargs))


def _written(entry, ref_ns):
    """The name of the argument a call wrote into (per the harness's "before"), or None."""
    _, name, args, kwargs, out = entry
    written = getattr(out, "written", None)  # its position among the arguments (the harness says it)
    if written is not None:
        top, _, item = written.partition(".")
        try:
            params = list(inspect.signature(ref_ns[name]).parameters)
            arg = params[int(top)] if top.isdigit() else top
        except Exception:  # noqa: BLE001 - a class, or a position the reference has no name for
            return None
        return f"{arg}[{item}]" if item else arg
    failure = getattr(out, "failure", None)
    details = dict((k, v) for k, v in (getattr(failure, "details", None) or []) if isinstance(k, str))
    flat = []  # (argument name, value), in the harness's order: the arguments, then tensors in tuples
    try:
        bound = list(inspect.signature(ref_ns[name]).bind(*args, **kwargs).arguments.items())
    except Exception:  # noqa: BLE001 - a class, or arguments the reference would not take
        bound = [(f"#{i}", a) for i, a in enumerate(args)] + list(kwargs.items())
    for arg, v in bound:
        flat.append((arg, v))
    for arg, v in bound:
        if isinstance(v, (tuple, list)):
            flat += [(f"{arg}[{i}]", t) for i, t in enumerate(v) if isinstance(t, torch.Tensor)]
    before = next((v for k, v in details.items() if k.startswith("调用前")), None)
    if before is None:  # a list or dict changed: the one container given, if one
        boxes = [a for a, v in bound if isinstance(v, (dict, list))]
        return boxes[0] if len(boxes) == 1 and not boxes[0].startswith("#") else None
    from ...properties._harness import fmt

    hits = [a for a, v in flat if isinstance(v, torch.Tensor) and fmt(v) == before]
    return hits[0] if len(hits) == 1 and not hits[0].startswith("#") else None


def _is_value_error(out):
    failure = getattr(out, "failure", None)
    return any(isinstance(v, str) and v.startswith("ValueError") for _, v in (getattr(failure, "details", None) or []))


def _relation(s, r):
    """How the student's tensor relates to the reference's of another shape: ("transposed",),
    ("cut", axis, n), or None."""
    try:
        sv, rv = s.detach().cpu().double(), r.detach().cpu().double()
        if sv.dim() == rv.dim() == 2 and tuple(sv.shape) == tuple(rv.shape)[::-1] and _close(sv, rv.T):
            return ("transposed",)
        if sv.dim() == rv.dim():
            diff = [k for k in range(sv.dim()) if sv.shape[k] != rv.shape[k]]
            if len(diff) == 1 and sv.shape[diff[0]] < rv.shape[diff[0]]:
                k = diff[0]
                if _close(sv, rv.narrow(k, 0, sv.shape[k])):
                    return ("cut", k, sv.shape[k])
    except Exception:  # noqa: BLE001
        pass
    return None


def _close(a, b):
    return a.shape == b.shape and close(a, b)


def _values_differ(s, r, random):
    """Do two tensors of one shape differ beyond the precision of the coarser dtype?"""
    if random:
        return False
    try:
        sv, rv = s.detach().cpu(), r.detach().cpu()
        if sv.is_floating_point() and rv.is_floating_point():
            coarse = sv.dtype if torch.finfo(sv.dtype).eps > torch.finfo(rv.dtype).eps else rv.dtype
            tol = max(ATOL, 4 * torch.finfo(coarse).eps)
            return not bool(near(sv.double(), rv.double(), tol / ATOL).all())
        return not bool((sv.double() == rv.double()).all())
    except Exception:  # noqa: BLE001
        return True


def facts(function, s_log, r_log, ref_ns):
    """([(fact key, fields, call text)], values differ too) for one probe's two logs."""
    out, differ = [], False
    S = [e for e in s_log if e[1] == function]
    R = [e for e in r_log if e[1] == function]
    matcher = difflib.SequenceMatcher(a=[_key(e) for e in S], b=[_key(e) for e in R], autojunk=False)
    random = function in RANDOM
    for a, b, n in matcher.get_matching_blocks():
        for s, r in zip(S[a : a + n], R[b : b + n]):
            method, name, args, kwargs, so = s
            ro = r[4]
            text = _call_text(name, args, kwargs)
            if method == "raises":
                if ro is True and so is False:
                    out.append((("accepts",), {}, text))
                elif ro is False and so is True:
                    out.append((("rejects",), {}, text))
                continue
            if isinstance(ro, CallFailed):
                continue
            if isinstance(so, CallFailed):
                if so.kind == "inplace":
                    arg = _written(s, ref_ns)
                    out.append((("inplace", arg), {"arg": arg}, text))
                elif _is_value_error(so):
                    out.append((("rejects",), {}, text))
                else:
                    differ = True
                continue
            rl, sl = dict(_leaves(ro)), dict(_leaves(so))
            for path, rv in rl.items():
                sv = sl.get(path)
                if not isinstance(rv, torch.Tensor):
                    continue
                if sv is None:
                    differ = True
                    continue
                if not isinstance(sv, torch.Tensor):
                    if isinstance(sv, (int, float)) and not isinstance(sv, bool) and rv.numel() == 1:
                        out.append((("type", path), {"got": type(sv).__name__}, text))
                    else:
                        differ = True
                    continue
                if sv.dtype != rv.dtype:
                    out.append((("dtype", path, _dt(sv.dtype), _dt(rv.dtype)), {}, text))
                if rv.requires_grad and not sv.requires_grad and sv.is_floating_point():
                    out.append((("nograd", path), {}, text))
                if tuple(sv.shape) != tuple(rv.shape):
                    rel = None if random else _relation(sv, rv)
                    out.append((("shape", path, tuple(sv.shape), tuple(rv.shape), rel), {}, text))
                    differ |= rel is None and not random
                elif _values_differ(sv, rv, random):
                    differ = True
    return out, differ


def _words(function, fact):
    kind = fact[0]
    if kind == "accepts":
        return "part.form_accepts", {}
    if kind == "rejects":
        return "part.form_rejects", {}
    if kind == "inplace":
        return ("part.form_inplace", {"arg": fact[1]}) if fact[1] else ("part.form_inplace_some", {})
    zh, en = _out_name(function, fact[1], None)
    if kind == "type":
        return "part.form_type", {"out_zh": zh, "out_en": en}
    if kind == "dtype":
        return "part.form_dtype", {"out_zh": zh, "out_en": en, "got": fact[2], "want": fact[3]}
    if kind == "nograd":
        return "part.form_nograd", {"out_zh": zh, "out_en": en}
    got, want, rel = fact[2], fact[3], fact[4]
    fields = {"out_zh": zh, "out_en": en, "got": str(got), "want": str(want), "rel_zh": "", "rel_en": ""}
    if rel and rel[0] == "transposed":
        fields["rel_zh"], fields["rel_en"] = pair("part.form_rel_transposed")
    elif rel and rel[0] == "cut":
        fields["rel_zh"], fields["rel_en"] = pair("part.form_rel_cut", axis=rel[1], n=rel[2])
    return "part.form_shape", fields


def explain(function, s_logs, r_logs, deviating, ref_ns):
    """[claim] of the form facts of `function` (see the module docstring).  s_logs, r_logs: the
    Guarded logs of each probe (student's, reference's); deviating: the probes (indices) where the
    student deviates."""
    found, differ, shown = {}, False, set()
    for i, (s_log, r_log) in enumerate(zip(s_logs, r_logs)):
        got, d = facts(function, s_log or [], r_log or [], ref_ns)
        differ |= d
        for fact, fields, text in got:
            kind = fact[0]
            # one claim per kind of fact: outputs of one wrong dtype together, one argument written
            group = (
                (kind,) + fact[2:4]
                if kind == "dtype"
                else fact[:2]
                if kind in ("shape", "type", "nograd")
                else (kind,)
                if kind == "inplace"
                else fact
            )
            entry = found.setdefault(group, [fact, fields, text, []])
            if kind == "dtype" and fact[1] not in entry[3]:
                entry[3].append(fact[1])
            if kind == "inplace" and fact[1] != entry[0][1]:  # another argument: name one only if all agree
                entry[0] = ("inplace", None) if entry[0][1] and fact[1] else entry[0] if entry[0][1] else fact
                entry[2] = text if entry[0] is fact else entry[2]
        if got:
            shown.add(i)
    if not found:
        return []
    # a probe deviating without any form fact: something else differs
    differ |= any(i not in shown for i in deviating)
    claims = []
    for fact, _fields, text, paths in list(found.values())[:MAX_CLAIMS]:
        key, f = _words(function, fact)
        if fact[0] == "dtype" and len(paths) > 1:
            names = [_out_name(function, p, None) for p in paths]
            f["out_zh"] = "、".join(n[0] for n in names)
            f["out_en"] = ", ".join(n[1] for n in names)
        zh, en = pair(key, fn=function, call=text, **f)
        part = "form:" + ":".join(str(x) for x in fact if x is not None)
        claims.append({"function": function, "part": part, "zh": zh, "en": en, "probe": text})
    if differ:
        for d in claims:
            d["else_zh"], d["else_en"] = pair("part.also_else")
    return claims


def _half(shape, seed, dtype):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(-100, 101, shape, generator=g).double() / 50).to(dtype)


EXTRA = {  # function -> [(args, kwargs)]: calls of the form experiment beyond the probes' (other dtypes)
    "add_positional_encoding": lambda: [
        ((_half((2, 3, 4), 11, torch.float16),), {}),
        ((_half((2, 3, 4), 12, torch.bfloat16),), {}),
    ],
    "apply_rope": lambda: [
        ((_half((2, 3, 4), 13, torch.float16),), {}),
        ((_half((1, 2, 3, 4), 14, torch.bfloat16),), {}),
    ],
    "scaled_dot_product_attention": lambda: [tuple(_half((2, 3, 4), 15 + k, torch.float16) for k in range(3))],
    "fit_standardizer": lambda: [((_half((6, 2), 18, torch.float64),), {})],
    "sliding_windows": lambda: [((_half((9, 2), 19, torch.float64), 3, 2), {})],
}


def extra_logs(function, student, reference):
    """([student's log], [reference's log]) of the extra calls of `function` (none: [], [])."""
    from ..registry import Guarded

    if function not in EXTRA:
        return [], []
    out = []
    for who in (student, reference):
        g = Guarded(who)
        for call in EXTRA[function]():
            args, kwargs = (call, {}) if not isinstance(call[-1], dict) else call
            with torch.random.fork_rng(), torch.enable_grad():
                g.call(function, *[a.clone() if isinstance(a, torch.Tensor) else a for a in args], **kwargs)
        out.append(g.log)
    return out[0], out[1]


__all__ = ["explain", "facts", "RANDOM"]
