"""The explanation by part of the `positional_encoding` exercise (the engine:
autograder/diagnose/parts/): facts of the table rather than variants, the columns (even: sin, odd:
cos) and positions where the student's values differ, or only the dtype; else the conditions under
which it is wrong (past some position, on a second call of other sizes)."""

import torch

from ...diagnose.parts.base import (
    INPLACE,
    MIN_CALLS,
    Call,
    _claim,
    _conditions,
    _deviates,
    _rnd,
    _student_outputs,
    _value,
    first_wrong,
)
from ...diagnose.registry import Guarded
from ...diagnose.values import near
from ...report.messages import pair

PE_CASES = [(5, 6, None), (4, 8, 100.0), (3, 4, 50.0), (7, 10, None), (6, 4, None), (2, 2, None)]
ADD_CASES = [
    ((2, 4, 6), torch.float32),
    ((3, 5, 4), torch.float32),
    ((1, 6, 2), torch.float32),
    ((2, 3, 4), torch.float64),
    ((4, 2, 8), torch.float32),
]


def _pe_calls(ref_ns, function):
    calls = []
    if function == "sinusoidal_encoding":
        for T, d, base in PE_CASES:
            args = (T, d) if base is None else (T, d, base)

            def run(g, args=args):
                out = g.call(function, *args)
                return [_value(out)], out

            call = Call(
                f"{function}({', '.join(map(repr, args))})", run, (lambda args=args: [_value(ref_ns[function](*args))])
            )
            call.table = lambda args=args: ref_ns[function](*args)
            call.dtype = torch.float32
            calls.append(call)
        return calls
    for j, (shape, dtype) in enumerate(ADD_CASES):
        X = _rnd(shape, 9100 + j, 2.0, dtype)

        def run(g, X=X):
            out = g.call(function, X.clone())
            v = _value(out)
            return [None if v is None or v is INPLACE or v.shape != X.shape else v - X.double()], out

        call = Call(
            f"{function}(X {'×'.join(map(str, shape))}, {str(dtype).replace('torch.', '')})",
            run,
            (lambda X=X: [_value(ref_ns[function](X)) - X.double()]),
        )
        call.dtype = dtype
        calls.append(call)
    return calls


PE_LONG = [(150, 8), (300, 6)]  # (T, d): past a table of 100 or 128 positions
PE_SECOND = [((3, 4), (9, 4)), ((12, 6), (5, 6)), ((4, 8), (4, 2))]  # a first call, then the one compared


def _pe_conditions(student, ref_ns, function, deadline):
    """The encoding's conditions (see _conditions): right on the small tables, wrong past some
    position, or on a second call of other sizes (a table kept from the first call)."""
    fn = ref_ns[function]

    def make(T, d, before=None, seed=0):
        X = _rnd((2, T, d), 9300 + seed, 2.0) if function == "add_positional_encoding" else None
        B = _rnd((2,) + before, 9350 + seed, 2.0) if function == "add_positional_encoding" and before else None

        def run(g):
            if before is not None:
                g.call(function, *((B.clone(),) if B is not None else before))
            out = g.call(function, *((X.clone(),) if X is not None else (T, d)))
            v = _value(out)
            if v is None or v is INPLACE:
                return [v]
            return [v - X.double() if X is not None and v.shape == X.shape else v]

        def ref():
            with torch.no_grad():
                return [_value(fn(X)) - X.double()] if X is not None else [_value(fn(T, d))]

        what = f"X 2×{T}×{d}" if X is not None else f"{T}, {d}"
        pre = (
            ""
            if before is None
            else f"after {function}({'2×' + '×'.join(map(str, before)) if X is not None else ', '.join(map(str, before))}): "
        )
        return Call(f"{pre}{function}({what})", run, ref)

    calls = [make(T, d, seed=k) for k, (T, d, _) in enumerate(PE_CASES[:4])]
    for k, (T, d) in enumerate(PE_LONG):
        c = make(T, d, seed=10 + k)
        c.condition, c.where = "long_positions", first_wrong(-2)
        calls.append(c)
    for k, (before, (T, d)) in enumerate(PE_SECOND):
        c = make(T, d, before=before, seed=20 + k)
        c.condition = "second"
        calls.append(c)
    S = _student_outputs(student, calls, deadline)
    if S is None:
        return []
    R = [c.ref() for c in calls]
    plain = [i for i, c in enumerate(calls) if not getattr(c, "condition", None)]
    long_ = [i for i, c in enumerate(calls) if getattr(c, "condition", None) == "long_positions"]
    if not any(_deviates(S[i], R[i]) for i in plain) and all(_deviates(S[i], R[i]) for i in long_):
        # wrong (or failing) on long tables only: the first wrong length, bisected between the two
        lo, hi = max(T for T, _, _ in PE_CASES[:4]), PE_LONG[0][0]
        shows = calls[long_[0]].shows
        while hi - lo > 1 and not (deadline is not None and deadline()):
            mid = (lo + hi) // 2
            c = make(mid, PE_LONG[0][1], seed=30)
            got = _student_outputs(student, [c], deadline)
            if got is None:
                return []
            if _deviates(got[0], c.ref()):
                hi, shows = mid, c.shows
            else:
                lo = mid
        if hi - lo == 1:
            zh, en = pair("part.when_length", fn=function, t=hi, t1=lo, T=", ".join(str(T) for T, _ in PE_LONG))
            return [_claim(function, "when length", zh, en, shows, False)]
    return _conditions(function, calls, S, R)


def _pe_explain(student, ref_ns, function, deadline):
    """What differs in the encoding (what the student adds to X, for add_positional_encoding): the
    columns (even: sin, odd: cos) and positions where the values differ, or only the dtype; a
    claim only when it holds on every call."""
    calls = _pe_calls(ref_ns, function)
    g = Guarded(student)
    diffs, dtypes, first, tensors = [], set(), None, 0
    for c in calls:
        if deadline is not None and deadline():
            return []
        try:
            with torch.random.fork_rng():
                (s,), raw = c.run(g)
        except Exception:  # noqa: BLE001
            return []
        r = c.ref()[0]
        if s is None or s is INPLACE or s.shape != r.shape:
            return []
        if isinstance(raw, torch.Tensor):
            dtypes.add((str(raw.dtype), str(c.dtype)))
            tensors += 1
            if raw.dtype != c.dtype and raw.is_floating_point():
                r = r.to(raw.dtype).double()  # the reference's values at the student's precision
        d = ~near(s, r)
        if bool(d.any()) and first is None:
            first = c.shows
        diffs.append(d)
    wrong_dtypes = {(got, want) for got, want in dtypes if got != want}
    if first is None:
        if wrong_dtypes and tensors == len(calls):
            got = sorted({g_ for g_, _ in wrong_dtypes})
            want = sorted({w for _, w in wrong_dtypes})
            zh, en = pair(
                "part.pe_dtype_only",
                got=", ".join(got).replace("torch.", ""),
                want=", ".join(want).replace("torch.", ""),
            )
            return [_claim(function, "dtype", zh, en, calls[0].shows, False)]
        return []
    if len(diffs) != len(calls):
        return []
    even = any(bool(d[..., 0::2].any()) for d in diffs)
    odd = any(bool(d[..., 1::2].any()) for d in diffs)
    calls_with = [d for d in diffs if bool(d.any())]
    if len(calls_with) < MIN_CALLS:
        return []
    # positions: rows of the table (for add_positional_encoding: t, over the B sequences)
    pos = [d.any(-1) if d.dim() == 2 else d.any(-1).any(0) for d in diffs]
    only_zero = all(not bool(p[1:].any()) for p in pos) and any(bool(p[0]) for p in pos)
    zero_right = all(not bool(p[0]) for p in pos) and any(bool(p[1:].any()) for p in pos if p.numel() > 1)
    if even and not odd:
        cols_zh, cols_en = pair("part.pe_cols_even")
    elif odd and not even:
        cols_zh, cols_en = pair("part.pe_cols_odd")
    else:
        cols_zh, cols_en = pair("part.pe_cols_all")
    if only_zero:
        pos_zh, pos_en = pair("part.pe_pos_zero")
    elif zero_right:
        pos_zh, pos_en = pair("part.pe_pos_after_zero")
    else:
        pos_zh, pos_en = "", ""
    if even and odd and not pos_zh:
        return []  # every column, every position: nothing narrower to say
    key = "part.pe_where_added" if function == "add_positional_encoding" else "part.pe_where"
    zh, en = pair(key, cols_zh=cols_zh, cols_en=cols_en, pos_zh=pos_zh, pos_en=pos_en)
    return [_claim(function, "columns" + ("+positions" if pos_zh else ""), zh, en, first, False)]


# ---------------------------------------------------------------- the interface the engine calls

FUNCTIONS = ("sinusoidal_encoding", "add_positional_encoding")


def setup(function, ref_ns):
    """None: the encoding is explained by facts of its table (explain), not by variants."""
    return None


def explain(student, function, ref_ns, catalogued=(), deadline=None):
    """[claim] for `function`: where the values differ, else when (see the module docstring)."""
    return _pe_explain(student, ref_ns, function, deadline) or _pe_conditions(student, ref_ns, function, deadline)
