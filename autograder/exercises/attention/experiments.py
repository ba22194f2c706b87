"""Experiments for the attention exercise: the reference attention with one change (another scale,
the mask ignored, inverted or filled with 0, the softmax over the queries), a temperature read off
the student's weights, and, for MultiHeadAttention, the reference's projections and heads around the
student's own scaled_dot_product_attention.  Same rules as the package's variants."""

import math

import torch

from ...diagnose.parts.base import INPLACE, Call, Variant, _rnd, _value
from ...diagnose.values import near

SDPA = "scaled_dot_product_attention"
MHA = "MultiHeadAttention"

# (lead, Tq, Tk, dk, dv, mask shape or None or "causal"): Tq, Tk, dk and dv told apart across the calls
SDPA_CASES = [
    ((), 3, 5, 4, 2, None),
    ((2,), 4, 4, 9, 3, "causal"),
    ((2, 2), 2, 6, 3, 4, (2, 1, 1, 6)),
    ((1,), 5, 3, 6, 2, (5, 3)),
    ((2,), 3, 7, 2, 5, (2, 3, 7)),
    ((), 6, 2, 5, 3, None),
]


def _mask(shape, seed):
    if shape is None:
        return None
    if shape == "causal":
        return "causal"
    m = torch.rand(shape, generator=torch.Generator().manual_seed(seed)) < 0.7
    m[..., 0] = True  # every query keeps a key: the rows' values are graded
    return m


# far: every score of the call far below 0 (Q ~ -15, K ~ +15: scores ~ -225 sqrt(dk)), where exp underflows
FAR_CASES = [((2,), 3, 4, 4, 2, (2, 3, 4)), ((1,), 2, 5, 6, 3, (2, 5))]
# above: the masked keys' scores far above the allowed ones (Q ~ +15, masked keys ~ +15, allowed ones ~ 0)
ABOVE_CASES = [((2,), 3, 4, 4, 2, (4,)), ((1,), 2, 5, 6, 3, (5,))]


def _sdpa_calls(ref_ns):
    calls = []
    cases = [(c, None) for c in SDPA_CASES] + [(c, "far") for c in FAR_CASES] + [(c, "above") for c in ABOVE_CASES]
    for j, ((lead, Tq, Tk, dk, dv, mshape), kind) in enumerate(cases):
        seed = 8800 + 17 * j
        Q, K, V = (
            _rnd(lead + (Tq, dk), seed, 1.5),
            _rnd(lead + (Tk, dk), seed + 1, 1.5),
            _rnd(lead + (Tk, dv), seed + 2),
        )
        far = kind == "far"
        if far:
            Q, K = Q / 3 - 15, K / 3 + 15
        m = _mask(mshape, seed + 3)
        if m == "causal":
            m = torch.ones(Tq, Tk, dtype=torch.bool).tril()
        if kind == "above":
            m = torch.arange(Tk) % 2 == 0  # keys 0, 2, ... allowed
            Q = Q / 3 + 15
            K = torch.where(m[:, None], K / 3, K / 3 + 15)

        def run(g, Q=Q, K=K, V=V, m=m):
            args = (Q.clone(), K.clone(), V.clone()) + (() if m is None else (m.clone(),))
            out = g.call(SDPA, *args)
            if isinstance(out, (tuple, list)) and len(out) == 2:
                return [_value(out[0]), _value(out[1])]
            v = _value(out)
            return [v, v] if v is INPLACE else None

        call = Call(
            f"{SDPA}(Q {'×'.join(map(str, lead + (Tq, dk)))}, K …×{Tk}×{dk}, V …×{Tk}×{dv}"
            + ("" if m is None else f", mask {'×'.join(map(str, m.shape))}")
            + ")",
            run,
            None,
        )
        call.inputs = (Q.double(), K.double(), V.double(), m)
        call.ref = lambda call=call: _attend(*call.inputs)
        if far:
            call.condition, call.where = "far", _highest_score
        elif kind == "above":
            call.condition = "masked_above"
        calls.append(call)
    return calls


def _attend(Q, K, V, m, scale=None, mask="as given", axis=-1):
    """The reference attention in float64 with one thing changed: `scale` (the divisor of the scores;
    None: sqrt(dk)), `mask` ("as given", "ignored", "inverted", "zero": masked scores set to 0 rather than
    -inf) and the softmax's `axis`."""
    with torch.no_grad():
        s = Q @ K.transpose(-2, -1) / (math.sqrt(Q.shape[-1]) if scale is None else scale)
        if m is not None and mask != "ignored":
            keep = ~m if mask == "inverted" else m
            keep = keep.expand(s.shape)
            if mask == "zero":
                s = s.masked_fill(~keep, 0.0)
                w = torch.softmax(s, axis)
            else:
                if not bool(keep.any(-1).all()):
                    return None  # a row with no key left: nothing to compare
                w = torch.softmax(s.masked_fill(~keep, float("-inf")), axis).masked_fill(~keep, 0.0)
        else:
            w = torch.softmax(s, axis)
        return [_value(w @ V), _value(w)]


def _highest_score(S, R, calls):
    """{"s"}: the highest score QK^T / sqrt(dk) of the calls, rounded down to a round number."""
    top = max(
        float((Q @ K.transpose(-2, -1)).max() / math.sqrt(Q.shape[-1])) for Q, K, V, m in (c.inputs for c in calls)
    )
    return {"s": f"{math.floor(top / 10) * 10:g}"}


SCALES = {  # id -> (the divisor of the scores from (Tq, Tk, dk, dv), words)
    "sqrt(Tk)": (
        lambda Tq, Tk, dk, dv: math.sqrt(Tk),
        ("键的个数的平方根 sqrt(Tk)", "the square root of the number of keys, sqrt(Tk)"),
    ),
    "sqrt(Tq)": (
        lambda Tq, Tk, dk, dv: math.sqrt(Tq),
        ("查询个数的平方根 sqrt(Tq)", "the square root of the number of queries, sqrt(Tq)"),
    ),
    "sqrt(dv)": (lambda Tq, Tk, dk, dv: math.sqrt(dv), ("sqrt(dv)（V 的宽度）", "sqrt(dv) (the width of V)")),
    "dk": (lambda Tq, Tk, dk, dv: dk, ("dk 本身（没有开平方）", "dk itself (no square root)")),
    "1": (lambda Tq, Tk, dk, dv: 1.0, ("1（没有缩放）", "1 (no scaling)")),
    "1/sqrt(dk)": (
        lambda Tq, Tk, dk, dv: 1 / math.sqrt(dk),
        ("1/sqrt(dk)（乘而不是除）", "1/sqrt(dk) (multiplied instead of divided)"),
    ),
}


def _sdpa_variants():
    out = []
    for sid, (divisor, (zh, en)) in SCALES.items():

        def outs(i, call, divisor=divisor):
            Q, K, V, m = call.inputs
            return _attend(Q, K, V, m, scale=divisor(Q.shape[-2], K.shape[-2], Q.shape[-1], V.shape[-1]))

        out.append(Variant(f"scale {sid}", "part.attn_scale", outs, by_zh=zh, by_en=en))
    for how in ("ignored", "inverted", "zero"):

        def outs(i, call, how=how):
            Q, K, V, m = call.inputs
            return None if m is None else _attend(Q, K, V, m, mask=how)

        out.append(Variant(f"mask {how}", f"part.attn_mask_{how}", outs))

    def queries(i, call):
        Q, K, V, m = call.inputs
        return _attend(Q, K, V, m, axis=-2)

    out.append(Variant("softmax over queries", "part.attn_softmax_queries", queries))
    return out


def _sdpa_fits(S, calls):
    """A temperature read off the student's weights: weights = softmax(c QK^T / sqrt(dk)) for one c,
    then tested on every call like any variant."""
    for i, call in enumerate(calls):
        if not S[i] or not isinstance(S[i][1], torch.Tensor):
            continue
        Q, K, V, m = call.inputs
        w = S[i][1]
        ref = call.ref()
        if ref is None or w.shape != ref[1].shape or bool(near(w, ref[1]).all()):
            continue
        s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
        keep = torch.ones_like(s, dtype=torch.bool) if m is None else m.expand(s.shape)
        if not bool((w[keep] > 1e-12).all()):
            return []
        # log w_j - log w_0 = c (s_j - s_0) along each row: least squares over every allowed pair
        lw = torch.where(keep, w.clamp_min(1e-300).log(), torch.zeros_like(w))
        ds = (s - s[..., :1])[keep]
        dl = (lw - lw[..., :1])[keep]
        if float((ds * ds).sum()) < 1e-6:
            return []
        c = float((ds * dl).sum() / (ds * ds).sum())
        if not math.isfinite(c) or abs(c - 1) < 1e-3 or c <= 0:
            return []
        t = float(f"{1 / c:.3g}")

        def outs(j, call, t=t):
            Q, K, V, m = call.inputs
            return _attend(Q, K, V, m, scale=math.sqrt(Q.shape[-1]) * t)

        return [Variant(f"temperature {t:g}", "part.attn_temperature", outs, t=f"{t:g}")]
    return []


# ---------------------------------------------------------------- MultiHeadAttention

MHA_CASES = [
    (4, 2, 2, 3, 5, None),
    (6, 3, 2, 4, 4, "causal"),
    (6, 2, 2, 3, 4, (2, 1, 3, 4)),
    (8, 4, 1, 2, 3, (1, 1, 2, 3)),
    (4, 2, 3, 2, 2, None),
]  # d, H, B, Tq, Tk, mask


def _mha_params(d, seed):
    return {
        name: (_rnd((d, d), seed + j, 0.6), _rnd((d,), seed + 10 + j, 0.3))
        for j, name in enumerate(("W_q", "W_k", "W_v", "W_o"))
    }


def _load(mha, P):
    with torch.no_grad():
        for name, (w, b) in P.items():
            lin = getattr(mha, name, None)
            lw, lb = getattr(lin, "weight", None), getattr(lin, "bias", None)
            if not isinstance(lw, torch.Tensor) or tuple(lw.shape) != tuple(w.shape):
                return False
            lw.copy_(w)
            if isinstance(lb, torch.Tensor) and tuple(lb.shape) == tuple(b.shape):
                lb.copy_(b)
    return True


def _heads(P, x_q, x_kv, H):
    """The reference's projections split into heads: q, k, v (B, H, T, dh)."""

    def split(x):
        B, T, d = x.shape
        return x.view(B, T, H, d // H).transpose(1, 2)

    lin = {n: (lambda x, w=w, b=b: x @ w.double().T + b.double()) for n, (w, b) in P.items()}
    return split(lin["W_q"](x_q)), split(lin["W_k"](x_kv)), split(lin["W_v"](x_kv)), lin["W_o"]


def _mha_ref(P, x_q, x_kv, m, H, attend):
    q, k, v, w_o = _heads(P, x_q.double(), x_kv.double(), H)
    res = attend(q, k, v, m)
    if res is None:
        return None
    out, w = res
    if not isinstance(out, torch.Tensor) or out.shape[:-1] != q.shape[:-1]:
        return None
    B, Tq = x_q.shape[:2]
    return [_value(w_o(out.double().transpose(1, 2).reshape(B, Tq, -1))), _value(w)]


def _mha_calls(ref_ns):
    calls = []
    for j, (d, H, B, Tq, Tk, mshape) in enumerate(MHA_CASES):
        seed = 8900 + 31 * j
        P = _mha_params(d, seed)
        x_q, x_kv = _rnd((B, Tq, d), seed + 20), _rnd((B, Tk, d), seed + 21)
        calls.append(_mha_call(P, x_q, x_kv, _mask(mshape, seed + 30), d, H))
    # the same module called twice: first on other inputs (of the same and of other sizes), then on these
    for j, (first, (d, H, B, Tq, Tk, mshape)) in enumerate(
        [((2, 3, 5), MHA_CASES[0]), ((2, 2, 2), MHA_CASES[4]), ((2, 4, 4), MHA_CASES[2])]
    ):
        seed = 8900 + 31 * [0, 4, 2][j]
        P = _mha_params(d, seed)
        x_q, x_kv = _rnd((B, Tq, d), seed + 20), _rnd((B, Tk, d), seed + 21)
        before = (_rnd(first[:2] + (d,), seed + 40), _rnd(first[:1] + first[2:] + (d,), seed + 41))
        call = _mha_call(P, x_q, x_kv, _mask(mshape, seed + 30), d, H, before=before)
        call.condition = "second"
        calls.append(call)
    # the first call again, on a new module: a function of its inputs and weights gives the same
    again = _mha_call(*calls[0].args)
    again.condition, again.again_of = "again", 0
    calls.append(again)
    return calls


def _mha_call(P, x_q, x_kv, m, d, H, before=None):
    """One forward of a new module with the weights P (after a forward on `before`, when given)."""
    B, Tq, Tk = x_q.shape[0], x_q.shape[1], x_kv.shape[1]
    if m == "causal":
        m = torch.ones(Tq, Tk, dtype=torch.bool).tril()
    pre = (
        ""
        if before is None
        else (
            f"after .forward(x_q {'×'.join(map(str, before[0].shape))}, x_kv {'×'.join(map(str, before[1].shape))}): "
        )
    )
    call = Call(
        pre
        + f"{MHA}({d}, {H}).forward(x_q {B}×{Tq}×{d}, x_kv {B}×{Tk}×{d}"
        + ("" if m is None else f", mask {'×'.join(map(str, m.shape))}")
        + ")",
        None,
        None,
    )
    call.via, call.ran = None, False

    def run(g, P=P, x_q=x_q, x_kv=x_kv, m=m, d=d, H=H, call=call):
        mha = g.new(MHA, d, H)
        if not _load(mha, P):
            return None
        margs = () if m is None else (m.clone(),)
        if getattr(call, "again_of", None) is not None:
            torch.manual_seed(5)  # another random state than the first call's (in this process; a worker's moves on)
        if before is not None:
            g.invoke(f"{MHA}.forward", mha, before[0].clone(), before[1].clone())
        res = g.invoke(f"{MHA}.forward", mha, x_q.clone(), x_kv.clone(), *margs)
        # the reference's projections and heads around the student's own attention function
        q, k, v, _ = _heads(P, x_q.double(), x_kv.double(), H)
        theirs = g.call(SDPA, q.float(), k.float(), v.float(), *margs)
        if isinstance(theirs, (tuple, list)) and len(theirs) == 2 and not call.ran:
            call.via = _mha_ref(P, x_q, x_kv, m, H, lambda *a: [_value(t) for t in theirs])
        call.ran = True  # the first run is the student's: later runs (a catalogued mistake's) keep its `via`
        if isinstance(res, (tuple, list)) and len(res) == 2:
            return [_value(res[0]), _value(res[1])]
        return None

    call.run = run
    call.args = (P, x_q, x_kv, m, d, H)
    call.ref = lambda P=P, x_q=x_q, x_kv=x_kv, m=m, H=H: _mha_ref(P, x_q, x_kv, m, H, _attend)
    return call


def _mha_variants():
    def swapped(i, call):  # forward(x_kv, x_q): queries from x_kv, keys and values from x_q
        P, x_q, x_kv, m, d, H = call.args
        if m is not None:
            return None
        return _mha_ref(P, x_kv, x_q, None, H, _attend)

    return [
        Variant("x_q, x_kv swapped", "part.swapped_in", swapped, a="x_q", b="x_kv"),
        Variant(
            "its own attention function",
            "part.mha_attention_function",
            lambda i, call: call.via,
            function=SDPA,
            hint_zh=f"问题出在 `{SDPA}`：先让它通过自己的测试；MultiHeadAttention 的投影和分头是对的。",
            hint_en=f"The difference comes from `{SDPA}`: make it pass its own tests first; "
            "MultiHeadAttention's projections and heads are right.",
        ),
    ]


# ---------------------------------------------------------------- the interface the engine calls

FUNCTIONS = (SDPA, MHA)
FITS = {SDPA: _sdpa_fits}  # variants whose constant is read off the student's outputs
OUTPUTS = {SDPA: ("out", "weights"), MHA: ("out", "weights")}  # the names of what a call returns, in order


def setup(function, ref_ns):
    """(calls, variants) of `function`, or None."""
    if function == SDPA:
        return _sdpa_calls(ref_ns), _sdpa_variants()
    if function == MHA:
        return _mha_calls(ref_ns), _mha_variants()
    return None
