"""An explanation by part: which part of a function's computation differs, found by experiment.

When no catalogued mistake accounts for how a function deviates (engine.diagnose names nothing),
this module runs the student's function on its own small, seeded inputs (through the same guarded
Student interface as the probes: in the sandbox for a RemoteStudent) and compares what comes back
with *variants* of the reference: the reference computed with one part altered (a parameter block
of a recurrent cell zeroed, doubled, negated or swapped; the state of a sequence taken at another
step; one condition of a mask flipped; the losses summed over other tokens or divided by another
count...).  The student's code is never read.

A variant is *tested* on the outputs (of the calls) where it differs from the reference.  It is
claimed only when

* it is tested on at least two calls, and the student reproduces its values (within the grader's
  tolerance) on every output that tests it;
* no other variant reproduces the student as well: of variants whose tested outputs overlap, only
  one that tests all the others' outputs (and so explains more) is kept; two that explain the same
  outputs are ambiguous and say nothing; and
* no catalogued mistake of the function computes the same thing on these inputs (naming it is
  the catalogue's business, and the diagnosis did not name it).

For masks and the positional encoding the claim may also be a plain observation of where the
student's values differ (only the diagonal, only the odd columns...), said only when it holds on
every call.  What the student's values show beyond the claimed part is said too ("something else
differs as well").  Nothing is said when nothing qualifies: a wrong claim is worse than silence.

This module holds the engine and the experiments of recurrent, masks, positional_encoding and
masked_loss; the other exercises' experiments are modules named by their exercise (attention.py,
rope.py, timeseries.py, tiny_lm.py, ablation.py; mlm.py: bert_masking's mlm_mask), and form.py says
how a result's form differs; base.py holds what they all use (calls, variants, inputs, values).
"""

import importlib

import torch

from ...report.messages import pair
from ..registry import CallFailed, Guarded
from ..values import near
from .base import CRASHED, INPLACE, MIN_CALLS, Call, Variant, _close, _gen, _rnd, _value, first_wrong  # noqa: F401


def _student_outputs(student, calls, deadline):
    g = Guarded(student)
    got = []
    for c in calls:
        if deadline is not None and deadline():
            return None
        try:
            with torch.random.fork_rng():
                out = c.run(g)
        except Exception:  # noqa: BLE001 - what came back could not be read: compare nothing
            out = None
        got.append(out)
    return got


def _judge(S, R, calls, variants):
    """The variants claimed (see the module docstring): [(variant, tested cells, cells else)]."""
    deviating = {
        (i, k)
        for i, (s, r) in enumerate(zip(S, R))
        if s is not None
        for k in range(len(r))
        if not (k < len(s) and _close(s[k], r[k]))
    }
    deviating |= {(i, k) for i, s in enumerate(S) if s is None for k in range(len(R[i]))}
    if not deviating:
        return []
    claimed = []
    for v in variants:
        tested, ok = set(), True
        for i, r in enumerate(R):
            outs = v.outs(i, calls[i])
            if outs is None:
                continue
            for k in range(len(r)):
                if not _close(outs[k], r[k]):
                    tested.add((i, k))
                    s = S[i]
                    if s is None or k >= len(s) or not _close(s[k], outs[k]):
                        ok = False
                        break
            if not ok:
                break
        if ok and len({i for i, _ in tested}) >= MIN_CALLS:
            claimed.append((v, tested))
    if not claimed:
        return []
    # two variants computing the same on every call are one claim, said the first way (a mask
    # region that is all False in the reference: set to True or flipped, the same)
    distinct = []
    for v, tested in claimed:
        if not any(
            t == tested and all(_same_outs(v.outs(i, c), w.outs(i, c)) for i, c in enumerate(calls))
            for w, t in distinct
        ):
            distinct.append((v, tested))
    claimed = distinct
    # the claims that explain most: of two whose tested outputs overlap, one that holds the other's
    kept = []
    for v, tested in claimed:
        others = [t for w, t in claimed if w is not v and t & tested]
        if any(t > tested for t in others):
            continue  # another claim explains this and more
        if any(t == tested for t in others):
            return []  # two different parts explain exactly the same: ambiguous
        kept.append((v, tested))
    # two kept claims that overlap without one holding the other: ambiguous, say nothing
    for a in range(len(kept)):
        for b in range(a + 1, len(kept)):
            if kept[a][1] & kept[b][1]:
                return []
    explained = set().union(*(t for _, t in kept)) if kept else set()
    return [(v, t, bool(deviating - explained)) for v, t in kept]


def _same_outs(a, b):
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))


# ---------------------------------------------------------------- recurrent cells


def _cell_params(kind, B, d_in, d_h, seed):
    n = 4 if kind == "lstm" else 3
    x = _rnd((B, d_in), seed)
    h = _rnd((B, d_h), seed + 1)
    c = _rnd((B, d_h), seed + 2, 1.5)
    W = [
        _rnd((n * d_h, d_in), seed + 3, 0.8),
        _rnd((n * d_h, d_h), seed + 4, 0.8),
        _rnd((n * d_h,), seed + 5, 0.5),
        _rnd((n * d_h,), seed + 6, 0.5),
    ]
    return x, h, c, W


CELL_SHAPES = [(2, 3, 4), (3, 2, 2), (1, 4, 3), (2, 3, 3), (4, 2, 3)]
PARAMS = ("W_ih", "W_hh", "b_ih", "b_hh")
GATES = {"lstm": "ifgo", "gru": "rzn"}


def _cell_calls(ref_ns, kind):
    name = f"{kind}_cell"
    calls = []
    for j, (B, d_in, d_h) in enumerate(CELL_SHAPES):
        x, h, c, W = _cell_params(kind, B, d_in, d_h, 4000 + 37 * j + (0 if kind == "lstm" else 500))

        def run(g, x=x, h=h, c=c, W=W):
            args = [t.clone() for t in W]
            if kind == "lstm":
                out = g.call(name, x.clone(), (h.clone(), c.clone()), *args)
                return (
                    [_value(o) for o in out]
                    if isinstance(out, (tuple, list)) and len(out) == 2
                    else [_value(out), None]
                )
            return [_value(g.call(name, x.clone(), h.clone(), *args))]

        def reference(x=x, h=h, c=c, W=W, fn=ref_ns[name]):
            return _cell_ref(kind, fn, x, h, c, W)

        shows = f"{name}(x {B}×{d_in}, " + ("(h, c) " if kind == "lstm" else "h ") + f"{B}×{d_h}, …)"
        call = Call(shows, run, reference)
        call.inputs = (x, h, c, W, d_h)
        calls.append(call)
    return calls


def _cell_ref(kind, fn, x, h, c, W):
    with torch.no_grad():
        if kind == "lstm":
            return [_value(o) for o in fn(x, (h, c), *W)]
        return [_value(fn(x, h, *W))]


def _cell_variants(ref_ns, kind):
    fn = ref_ns[f"{kind}_cell"]
    gates = GATES[kind]
    out = []

    def variant(vid, key, change, **fields):
        def outs(i, call):
            x, h, c, W, d_h = call.inputs
            x2, h2, c2, W2 = x.clone(), h.clone(), c.clone(), [t.clone() for t in W]
            change(x2, h2, c2, W2, d_h)
            return _cell_ref(kind, fn, x2, h2, c2, W2)

        out.append(Variant(vid, key, outs, **fields))

    def block(t, k, d_h):
        return t[k * d_h : (k + 1) * d_h]

    for p, name in enumerate(PARAMS):
        variant(f"{name}=0", "part.cell_zero", lambda x, h, c, W, d, p=p: W[p].zero_(), param=name)
        variant(f"{name}*2", "part.cell_double", lambda x, h, c, W, d, p=p: W[p].mul_(2), param=name)
        variant(f"{name}*-1", "part.cell_negate", lambda x, h, c, W, d, p=p: W[p].neg_(), param=name)
        for k, gate in enumerate(gates):
            variant(
                f"{name}[{gate}]=0",
                "part.cell_block_zero",
                lambda x, h, c, W, d, p=p, k=k: block(W[p], k, d).zero_(),
                param=name,
                gate=gate,
            )
            variant(
                f"{name}[{gate}]*2",
                "part.cell_block_double",
                lambda x, h, c, W, d, p=p, k=k: block(W[p], k, d).mul_(2),
                param=name,
                gate=gate,
            )
            variant(
                f"{name}[{gate}]*-1",
                "part.cell_block_negate",
                lambda x, h, c, W, d, p=p, k=k: block(W[p], k, d).neg_(),
                param=name,
                gate=gate,
            )
    variant("b_hh<-b_ih", "part.cell_replaced", lambda x, h, c, W, d: W[3].copy_(W[2]), a="b_hh", b="b_ih")
    variant("b_ih<-b_hh", "part.cell_replaced", lambda x, h, c, W, d: W[2].copy_(W[3]), a="b_ih", b="b_hh")

    def swap(t, k, m, d):
        a, b = block(t, k, d).clone(), block(t, m, d).clone()
        block(t, k, d).copy_(b)
        block(t, m, d).copy_(a)

    for k in range(len(gates)):
        for m in range(k + 1, len(gates)):
            variant(
                f"swap[{gates[k]},{gates[m]}]",
                "part.cell_swap_all",
                lambda x, h, c, W, d, k=k, m=m: [swap(t, k, m, d) for t in W],
                g1=gates[k],
                g2=gates[m],
            )
            for p, name in enumerate(PARAMS):
                variant(
                    f"{name}swap[{gates[k]},{gates[m]}]",
                    "part.cell_swap_one",
                    lambda x, h, c, W, d, p=p, k=k, m=m: swap(W[p], k, m, d),
                    param=name,
                    g1=gates[k],
                    g2=gates[m],
                )
    for k in range(len(gates)):  # one gate's block a copy of another gate's
        for m in range(len(gates)):
            if k != m:
                for p, name in enumerate(PARAMS):
                    variant(
                        f"{name}[{gates[k]}]<-[{gates[m]}]",
                        "part.cell_block_copied",
                        lambda x, h, c, W, d, p=p, k=k, m=m: block(W[p], k, d).copy_(block(W[p], m, d).clone()),
                        param=name,
                        gate=gates[k],
                        other=gates[m],
                    )
    for k, gate in enumerate(gates):  # one gate through the other activation (sigmoid <-> tanh)
        acts = [GATE_ACTS[kind][j] if j != k else OTHER_ACT[GATE_ACTS[kind][j]] for j in range(len(gates))]
        out.append(
            Variant(
                f"act[{gate}]={acts[k]}",
                "part.cell_activation",
                _manual_cell(kind, acts),
                gate=gate,
                got=acts[k],
                want=GATE_ACTS[kind][k],
            )
        )
    if kind == "gru":
        out.append(
            Variant(
                "b_hn outside r", "part.gru_b_hn_outside", _manual_cell(kind, list(GATE_ACTS[kind]), b_hn_outside=True)
            )
        )
    if kind == "lstm":
        variant("c=0", "part.cell_state_zero", lambda x, h, c, W, d: c.zero_(), state="c")

        def swapped(i, call):  # (c_new, h_new)
            x, h, c, W, d_h = call.inputs
            h_new, c_new = _cell_ref(kind, fn, x, h, c, W)
            return [c_new, h_new]

        out.append(Variant("h_new, c_new swapped", "part.swapped", swapped, a="h_new", b="c_new"))

        def state_swapped(i, call):  # the state read as (c, h)
            x, h, c, W, d_h = call.inputs
            return _cell_ref(kind, fn, x, c, h, W)

        out.append(Variant("state read as (c, h)", "part.swapped_in", state_swapped, a="h", b="c"))
    else:
        variant("h=0", "part.cell_state_zero", lambda x, h, c, W, d: h.zero_(), state="h")
        variant("h<-0 in the update", "part.gru_carry_zero", lambda x, h, c, W, d: None)
        out[-1].outs = _gru_without_carry(fn)
    return out


GATE_ACTS = {"lstm": ("sigmoid", "sigmoid", "tanh", "sigmoid"), "gru": ("sigmoid", "sigmoid", "tanh")}
OTHER_ACT = {"sigmoid": "tanh", "tanh": "sigmoid"}


def _manual_cell(kind, acts, b_hn_outside=False):
    """The cell written out with an activation per gate (and, for the GRU, b_hn inside or outside r)."""

    def outs(i, call):
        x, h, c, W, d_h = call.inputs
        f = [getattr(torch, a) for a in acts]
        with torch.no_grad():
            gx, gh = x @ W[0].T + W[2], h @ W[1].T + W[3]
            if kind == "lstm":
                i_, f_, g_, o_ = [f[k]((gx + gh)[:, k * d_h : (k + 1) * d_h]) for k in range(4)]
                c_new = f_ * c + i_ * g_
                return [_value(o_ * torch.tanh(c_new)), _value(c_new)]
            r = f[0](gx[:, :d_h] + gh[:, :d_h])
            z = f[1](gx[:, d_h : 2 * d_h] + gh[:, d_h : 2 * d_h])
            if b_hn_outside:
                pre = gx[:, 2 * d_h :] + r * (h @ W[1][2 * d_h :].T) + W[3][2 * d_h :]
            else:
                pre = gx[:, 2 * d_h :] + r * gh[:, 2 * d_h :]
            n = f[2](pre)
            return [_value((1 - z) * n + z * h)]

    return outs


def _gru_without_carry(fn):
    """h_new = (1 - z) * n: the carried h left out of the update (z * h)."""

    def outs(i, call):
        x, h, _, W, d_h = call.inputs
        with torch.no_grad():
            full = fn(x, h, *W)
            z = torch.sigmoid((x @ W[0].T + W[2])[:, d_h : 2 * d_h] + (h @ W[1].T + W[3])[:, d_h : 2 * d_h])
            return [_value(full - z * h)]

    return outs


# ---------------------------------------------------------------- lstm_sequence

SEQ_CASES = [
    ([4, 2, 1], 4, 2, 3, False),
    ([3, 1], 5, 3, 2, True),
    ([2, 3], 3, 2, 2, False),
    ([3, 3], 3, 2, 3, True),
    ([1, 4, 2], 4, 3, 2, True),
    ([5, 2], 5, 2, 3, False),
    # lengths unsorted: [2, 3] and [1, 4, 2] above; the same sequences sorted and unsorted
    ([4, 3, 1], 4, 2, 2, False),
    ([1, 3, 4], 4, 2, 2, False),
    ([3, 2], 3, 2, 3, True),
    ([2, 3], 3, 2, 3, True),
    # long sequences, lengths sorted: wrong only past some number of steps
    ([150, 97], 150, 2, 2, False),
    ([131, 131, 70], 131, 2, 2, True),
]
SEQ_LONG = 100  # a call with T at least this long is tagged "long"


def _sequence(cell, X, lengths, W, state, knobs):
    """The reference LSTM over padded sequences, with knobs turned (see _sequence_variants)."""
    B, T, _ = X.shape
    d_h = W[1].shape[1]
    h0, c0 = (X.new_zeros(B, d_h), X.new_zeros(B, d_h)) if state is None else state
    if "ignore h0" in knobs:
        h0 = torch.zeros_like(h0)
    if "ignore c0" in knobs:
        c0 = torch.zeros_like(c0)
    h, c = h0, c0
    outputs, hs, cs = [], [h], [c]
    for t in range(T):
        h_t, c_t = cell(X[:, t], (h, c), *W)
        valid = (t < lengths)[:, None]
        h = h_t if "h on padding" in knobs else torch.where(valid, h_t, h)
        c = c_t if "c on padding" in knobs else torch.where(valid, c_t, c)
        if "pad holds" in knobs:
            outputs.append(torch.where(valid, h_t, h))
        elif "pad computed" in knobs:
            outputs.append(h_t)
        else:
            outputs.append(torch.where(valid, h_t, torch.zeros_like(h_t)))
        hs.append(h_t)
        cs.append(c_t)
    out = torch.stack(outputs, 1)
    if "pad continued" in knobs:  # padded outputs: the h of a state that kept running through the padding
        hc = (h0, c0)
        run = []
        for t in range(T):
            hc = cell(X[:, t], hc, *W)
            run.append(hc[0])
        valid = torch.arange(T)[None, :, None] < lengths[:, None, None]
        out = torch.where(valid, out, torch.stack(run, 1))
    for which in ("h", "c"):
        for step in ("early", "late"):
            if f"{which} {step}" in knobs:  # the state after step length - 1 (early) or length + 1 (late)
                states = torch.stack(
                    hs if which == "h" else cs, 1
                )  # (B, T + 1, d): [state before step 0, after 0, ...]
                at = (lengths - 1 if step == "early" else torch.clamp(lengths + 1, max=T)).long()
                pick = states[torch.arange(B), at]
                h, c = (pick, c) if which == "h" else (h, pick)
    return [out, h, c]


def _sequence_calls(ref_ns):
    calls = []
    for j, (lengths, T, d_in, d_h, with_state) in enumerate(SEQ_CASES):
        seed = 7000 + 41 * j
        B = len(lengths)
        X = _rnd((B, T, d_in), seed)
        W = [
            _rnd((4 * d_h, d_in), seed + 3, 0.8),
            _rnd((4 * d_h, d_h), seed + 4, 0.8),
            _rnd((4 * d_h,), seed + 5, 0.5),
            _rnd((4 * d_h,), seed + 6, 0.5),
        ]
        state = (_rnd((B, d_h), seed + 1), _rnd((B, d_h), seed + 2)) if with_state else None
        L = torch.tensor(lengths)

        def run(g, X=X, W=W, state=state, L=L):
            kw = {"state": (state[0].clone(), state[1].clone())} if state is not None else {}
            out = g.call("lstm_sequence", X.clone(), L.clone(), *[t.clone() for t in W], **kw)
            if isinstance(out, CallFailed):
                v = _value(out)
                if v is INPLACE and (out.written or "").split(".")[0] != "state":
                    return None  # it writes into another argument (X, a weight): not the state
                return [v, v, v]
            try:
                o, (h, c) = out
            except Exception:  # noqa: BLE001 - not (outputs, (h_n, c_n))
                return None
            return [_value(o), _value(h), _value(c)]

        shows = f"lstm_sequence(X {B}×{T}×{d_in}, lengths={lengths}" + (", state=(h0, c0)" if with_state else "") + ")"
        call = Call(shows, run, None)
        call.inputs = (X, L, W, state)
        if T >= SEQ_LONG:
            call.condition, call.where = "long", _first_wrong_step
        elif lengths != sorted(lengths, reverse=True):
            call.condition = "unsorted"
        call.ref = lambda call=call, ns=ref_ns: _seq_outs(ns, call, ())
        calls.append(call)
    return calls


_first_wrong_step = first_wrong(1)


def _first_wrong_square(S, R, calls):
    """first_wrong over a (query, key) square: the first position t whose row or column is wrong (the
    t×t block before it is right)."""
    a, b = first_wrong(-2)(S, R, calls), first_wrong(-1)(S, R, calls)
    return {"skip": True} if "skip" in a or "skip" in b else {"t": min(a["t"], b["t"])}


def _seq_outs(ns, call, knobs):
    X, L, W, state = call.inputs
    with torch.no_grad():
        return [_value(o) for o in _sequence(ns["lstm_cell"], X, L, W, state, knobs)]


SEQ_VARIANTS = [  # (knobs, message key, fields)
    (("h on padding", "c on padding"), "part.seq_state_at_T", {"which": "h_n, c_n"}),
    (("h on padding",), "part.seq_state_at_T", {"which": "h_n"}),
    (("c on padding",), "part.seq_state_at_T", {"which": "c_n"}),
    (("h early", "c early"), "part.seq_state_early", {"which": "h_n, c_n"}),
    (("h early",), "part.seq_state_early", {"which": "h_n"}),
    (("c early",), "part.seq_state_early", {"which": "c_n"}),
    (("h late", "c late"), "part.seq_state_late", {"which": "h_n, c_n"}),
    (("h late",), "part.seq_state_late", {"which": "h_n"}),
    (("c late",), "part.seq_state_late", {"which": "c_n"}),
    (("pad holds",), "part.seq_pad_holds", {}),
    (("pad computed",), "part.seq_pad_computed", {}),
    (("pad continued",), "part.seq_pad_continued", {}),
    (("ignore h0", "ignore c0"), "part.seq_initial_ignored", {"which": "h0, c0"}),
    (("ignore h0",), "part.seq_initial_ignored", {"which": "h0"}),
    (("ignore c0",), "part.seq_initial_ignored", {"which": "c0"}),
]


def _sequence_variants(ref_ns):
    out = []
    for knobs, key, fields in SEQ_VARIANTS:

        def outs(i, call, knobs=knobs):
            return _seq_outs(ref_ns, call, knobs)

        out.append(Variant("+".join(knobs), key, outs, **fields))

    def inplace(i, call):  # it writes into the initial state it is given
        return [INPLACE] * 3 if call.inputs[3] is not None else None

    out.append(Variant("state in place", "part.seq_state_in_place", inplace))

    def swapped(i, call):  # (outputs, (c_n, h_n))
        o, h, c = _seq_outs(ref_ns, call, ())
        return [o, c, h]

    out.append(Variant("h_n, c_n swapped", "part.swapped", swapped, a="h_n", b="c_n"))
    return out


# ---------------------------------------------------------------- masks

PAD_CASES = [([3, 0, 2], None), ([1, 4, 2], 6), ([2, 2], 2), ([5], None), ([4, 1, 3, 2], 5), ([2, 0], 3)]
CAUSAL_CASES = [1, 2, 3, 4, 6]
ATT_CASES = [
    ([3, 1, 2], None, False),
    ([3, 1, 2], None, True),
    ([2, 4], 5, True),
    ([1, 3], 4, False),
    ([4, 2, 3], 5, False),
    ([2, 3, 1], 4, True),
]


def _causal_grid(a):
    T = a[0]
    return torch.arange(T)[:, None], torch.arange(T)[None, :], T


def _padding_grid(a):
    L = torch.as_tensor(a[0])[:, None]
    T = int(L.max()) if a[1] is None else a[1]
    return torch.arange(T)[None, :], L, T


def _attention_grid(a):
    L = torch.as_tensor(a[0])[:, None, None, None]
    T = int(L.max()) if a[1] is None else a[1]
    return torch.arange(T)[None, None, :, None], torch.arange(T)[None, None, None, :], L, a[2]


CONDITIONS = {  # function -> [(id, (grid's values) -> bool tensor)], the more specific first
    "causal_mask": (
        _causal_grid,
        [
            ("diagonal", lambda i, j, T: i == j),
            ("future", lambda i, j, T: j > i),
            ("next key", lambda i, j, T: j == i + 1),
            ("previous key", lambda i, j, T: j == i - 1),
            ("first row", lambda i, j, T: (i == 0) & (j >= 0)),
            ("last row", lambda i, j, T: (i == T - 1) & (j >= 0)),
            ("first column", lambda i, j, T: (j == 0) & (i >= 0)),
            ("last column", lambda i, j, T: (j == T - 1) & (i >= 0)),
        ],
    ),
    "padding_mask": (
        _padding_grid,
        [
            ("first padded", lambda t, L, T: t == L),
            ("last valid", lambda t, L, T: t == L - 1),
            ("first position", lambda t, L, T: (t == 0) & (L >= 0)),
            ("last position", lambda t, L, T: (t == T - 1) & (L >= 0)),
            ("empty rows", lambda t, L, T: (L == 0) & (t >= 0)),
            ("full rows", lambda t, L, T: (L == T) & (t >= 0)),
        ],
    ),
    "attention_mask": (
        _attention_grid,
        [
            ("padded queries", lambda i, j, L, c: (i >= L) & (j >= 0)),
            ("padded keys", lambda i, j, L, c: (j >= L) & (i >= 0)),
            ("padded diagonal", lambda i, j, L, c: (i == j) & (i >= L)),
            ("diagonal", lambda i, j, L, c: (i == j) & (L >= 0)),
            ("first key", lambda i, j, L, c: (j == 0) & (i >= 0) & (L >= 0)),
            ("future", lambda i, j, L, c: (j > i) & (L >= 0) & c),
            ("last valid key", lambda i, j, L, c: (j == L - 1) & (i >= 0)),
        ],
    ),
}


def _mask_conditions(function):
    """[(id, cond(case) -> bool tensor of the mask's shape)] for a mask function."""
    grid, conditions = CONDITIONS[function]
    return [(cid, lambda a, f=f: f(*grid(a))) for cid, f in conditions]


COND_WORDS = {  # condition id -> (zh, en)
    "diagonal": ("对角线 (i == j)", "the diagonal (i == j)"),
    "future": ("未来的位置 (j > i)", "the future (j > i)"),
    "next key": ("下一个位置 (j == i + 1)", "the next key (j == i + 1)"),
    "previous key": ("上一个位置 (j == i - 1)", "the previous key (j == i - 1)"),
    "first row": ("第一行 (i == 0)", "the first row (i == 0)"),
    "last row": ("最后一行 (i == T - 1)", "the last row (i == T - 1)"),
    "first column": ("第一列 (j == 0)", "the first column (j == 0)"),
    "last column": ("最后一列 (j == T - 1)", "the last column (j == T - 1)"),
    "first padded": ("每行第一个填充位置 (t == lengths[b])", "the first padded position of each row (t == lengths[b])"),
    "last valid": (
        "每行最后一个有效位置 (t == lengths[b] - 1)",
        "the last valid position of each row (t == lengths[b] - 1)",
    ),
    "first position": ("第一个位置 (t == 0)", "the first position (t == 0)"),
    "last position": ("最后一个位置 (t == T - 1)", "the last position (t == T - 1)"),
    "empty rows": ("长度为 0 的行", "the rows of length 0"),
    "full rows": ("没有填充的行 (lengths[b] == T)", "the rows without padding (lengths[b] == T)"),
    "padded queries": ("填充的查询行 (i >= lengths[b])", "the padded query rows (i >= lengths[b])"),
    "padded keys": ("填充的键列 (j >= lengths[b])", "the padded key columns (j >= lengths[b])"),
    "padded diagonal": (
        "填充查询行的对角线 (i == j >= lengths[b])",
        "the diagonal of the padded query rows (i == j >= lengths[b])",
    ),
    "first key": ("第一个键 (j == 0)", "the first key (j == 0)"),
    "last valid key": ("最后一个有效的键 (j == lengths[b] - 1)", "the last valid key (j == lengths[b] - 1)"),
}


def _mask_calls(ref_ns, function):
    if function == "causal_mask":
        cases = [(T,) for T in CAUSAL_CASES]
    elif function == "padding_mask":
        cases = PAD_CASES
    else:
        cases = ATT_CASES
    tags = [None] * len(cases)
    for cond, more in MASK_CONDITIONS[function]:
        cases, tags = cases + more, tags + [cond] * len(more)
    calls = []
    for a, tag in zip(cases, tags):

        def args(a=a):
            if function == "causal_mask":
                return (a[0],), {}
            kw = {} if a[1] is None else {"max_len": a[1]}
            if function == "attention_mask" and a[2]:
                kw["causal"] = True
            return (torch.tensor(a[0]),), kw

        def run(g, args=args):
            p, kw = args()
            return [_value(g.call(function, *p, **kw))]

        def reference(args=args):
            p, kw = args()
            return [_value(ref_ns[function](*p, **kw))]

        p, kw = args()
        shown = ", ".join(
            [
                repr(x)
                if not isinstance(x, torch.Tensor)
                else f"tensor({x.tolist()})"
                if x.numel() <= 8
                else f"lengths of {x.numel()} sequences {x.tolist()[:6]}…"
                for x in p
            ]
            + [f"{k}={v!r}" for k, v in kw.items()]
        )
        call = Call(f"{function}({shown})", run, reference)
        call.case = a
        if tag is not None:
            call.condition = tag
            call.where = (
                first_wrong(0)
                if tag == "big_batch"
                else first_wrong(-1)
                if function == "padding_mask"
                else _first_wrong_square
            )
        calls.append(call)
    return calls


def _lengths(n, T, seed):
    return torch.randint(1, T + 1, (n,), generator=_gen(seed)).tolist()


MASK_CONDITIONS = {  # function -> [(condition, [case])]: past the positions and batch sizes of the cases above
    "causal_mask": [("long_positions", [(100,), (150,)])],
    "padding_mask": [
        ("long_positions", [([150, 3, 97], None), ([130, 130, 1], 140)]),
        ("big_batch", [(_lengths(40, 6, 1), 6), (_lengths(33, 5, 2), None)]),
    ],
    "attention_mask": [
        ("long_positions", [([130, 70], None, True), ([100, 100, 5], 120, False)]),
        ("big_batch", [(_lengths(40, 4, 3), 4, False), (_lengths(24, 3, 4) + [3], None, True)]),
    ],
}


def _mask_variants(function):
    out = []
    for cid, cond in _mask_conditions(function):
        for op in ("on", "off", "flip"):

            def outs(i, call, cond=cond, op=op):
                r = call.ref()[0]
                if r is None:
                    return None
                m = cond(call.case).expand(r.shape) if cond(call.case).dim() == r.dim() else None
                if m is None or m.shape != r.shape:
                    return None
                rb = r != 0
                v = rb | m if op == "on" else rb & ~m if op == "off" else rb ^ m
                return [v.to(torch.float64)]

            zh, en = COND_WORDS[cid]
            out.append(Variant(f"{cid}:{op}", f"part.mask_{op}", outs, where_zh=zh, where_en=en))
    return out


# ---------------------------------------------------------------- positional encoding

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


# ---------------------------------------------------------------- the masked loss

LOSS_CASES = [  # (B, T, V, mask, scale): valid counts, B, T and B*T all told apart across the calls;
    # the last three with large logits (|logit| up to 60, 2000, 300), where a clamp or a precision shows
    (2, 4, 5, [[1, 1, 1, 0], [1, 0, 0, 0]], 3.0),
    (3, 4, 3, [[1, 0, 1, 0], [0, 1, 1, 1], [1, 1, 1, 1]], 3.0),
    (2, 3, 4, [[1, 1, 0], [1, 0, 0]], 3.0),
    (3, 5, 4, [[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]], 3.0),
    (1, 6, 3, [[1, 1, 1, 1, 0, 0]], 3.0),
    (2, 5, 6, [[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]], 60.0),
    (3, 3, 5, [[1, 1, 1], [1, 1, 0], [1, 0, 0]], 2000.0),
    (2, 4, 3, [[1, 1, 1, 1], [1, 1, 0, 0]], 300.0),
]


def _loss_calls(ref_ns):
    calls = []
    for j, (B, T, V, mask, scale) in enumerate(LOSS_CASES):
        logits = _rnd((B, T, V), 9500 + j, scale)
        targets = torch.randint(0, V, (B, T), generator=_gen(9600 + j))
        m = torch.tensor(mask, dtype=torch.bool)

        def run(g, logits=logits, targets=targets, m=m):
            return [_value(g.call("masked_cross_entropy", logits.clone(), targets.clone(), m.clone()))]

        call = Call(
            f"masked_cross_entropy(logits {B}×{T}×{V}, targets, mask={[list(map(int, r)) for r in mask]})",
            run,
            (lambda logits=logits, targets=targets, m=m: [_value(ref_ns["masked_cross_entropy"](logits, targets, m))]),
        )
        ce = torch.nn.functional.cross_entropy(
            logits.double().reshape(-1, V), targets.reshape(-1), reduction="none"
        ).reshape(B, T)
        call.inputs = (ce, m)
        call.logits, call.targets = logits, targets
        # the cross-entropy of softmax(logits) taken as the scores: log_softmax applied twice
        call.ce_softmax = torch.nn.functional.cross_entropy(
            torch.softmax(logits.double(), -1).reshape(-1, V), targets.reshape(-1), reduction="none"
        ).reshape(B, T)
        calls.append(call)
    return calls


def _last_valid(m):
    L = m.long().cumsum(1)
    return m & (L == m.sum(1, keepdim=True))  # the last valid token of each row (any mask)


def _first_valid(m):
    return m & (m.long().cumsum(1) == 1)


TOKENS = {  # id -> which tokens' losses are summed
    "valid": lambda m: m,
    "all": lambda m: torch.ones_like(m),
    "padded": lambda m: ~m,
    "valid but last": lambda m: m & ~_last_valid(m),
    "valid but first": lambda m: m & ~_first_valid(m),
}
DENOMS = {  # id -> what the sum is divided by
    "valid": lambda m: m.sum(),
    "B*T": lambda m: m.numel(),
    "B": lambda m: m.shape[0],
    "T": lambda m: m.shape[1],
    "1": lambda m: 1,
    "valid+1": lambda m: m.sum() + 1,
    "valid-1": lambda m: m.sum() - 1,
    "padded": lambda m: (~m).sum(),
    "per sequence": None,  # each sequence's sum / its count, then the mean over sequences
    "per sequence, summed": None,  # ... then summed over sequences
    "per sequence + 1": None,  # each sequence's sum / (its count + 1), then the mean over sequences
}
TOKEN_WORDS = {
    "valid": ("有效词元", "the valid tokens"),
    "all": ("所有位置（包括填充）", "every position (padding included)"),
    "padded": ("填充的位置", "the padded positions"),
    "valid but last": ("有效词元，但漏掉了每个序列最后一个", "the valid tokens but the last one of each sequence"),
    "valid but first": ("有效词元，但漏掉了每个序列第一个", "the valid tokens but the first one of each sequence"),
}
DENOM_WORDS = {
    "valid": ("有效词元数", "the number of valid tokens"),
    "B*T": ("B·T（所有位置数）", "B·T (every position)"),
    "B": ("批大小 B", "the batch size B"),
    "T": ("序列长度 T", "the sequence length T"),
    "1": ("1（只求和）", "1 (a sum only)"),
    "valid+1": ("有效词元数 + 1", "the number of valid tokens + 1"),
    "valid-1": ("有效词元数 - 1", "the number of valid tokens - 1"),
    "padded": ("填充位置数", "the number of padded positions"),
    "per sequence": (
        "每个序列各自的词元数（再对序列取平均）",
        "each sequence's own count (then the mean over sequences)",
    ),
    "per sequence, summed": (
        "每个序列各自的词元数（再对序列求和）",
        "each sequence's own count (then summed over sequences)",
    ),
    "per sequence + 1": (
        "每个序列各自的词元数 + 1（再对序列取平均）",
        "each sequence's own count + 1 (then the mean over sequences)",
    ),
}


def _loss_variants():
    out = []
    for tid, tokens in TOKENS.items():
        for did, denom in DENOMS.items():
            if tid == "valid" and did == "valid":
                continue  # the reference

            def outs(i, call, tokens=tokens, did=did, denom=denom):
                ce, m = call.inputs
                sel = tokens(m)
                if did.startswith("per sequence"):
                    counts = sel.sum(1).double() + (1 if did.endswith("+ 1") else 0)
                    if bool((counts == 0).any()):
                        return None
                    per = (ce * sel).sum(1) / counts
                    v = per.sum() if did.endswith("summed") else per.mean()
                else:
                    n = float(denom(m))
                    if n == 0:
                        return None
                    v = (ce * sel).sum() / n
                return [v.to(torch.float64)]

            tz, te = TOKEN_WORDS[tid]
            dz, de = DENOM_WORDS[did]
            out.append(Variant(f"{tid}/{did}", "part.loss", outs, tokens_zh=tz, tokens_en=te, denom_zh=dz, denom_en=de))

    def softmaxed(i, call):
        m = call.inputs[1]
        return [((call.ce_softmax * m).sum() / m.sum()).to(torch.float64)]

    out.append(Variant("softmax before cross_entropy", "part.loss_softmax_first", softmaxed))
    for k in range(3):  # the tokens whose target is class k left out, as ignore_index=k does
        for did in ("kept", "valid"):

            def ignored(i, call, k=k, did=did):
                ce, m = call.inputs
                keep = m & (call.targets != k)
                n = float(keep.sum() if did == "kept" else m.sum())
                return None if n == 0 else [((ce * keep).sum() / n).to(torch.float64)]

            out.append(Variant(f"ignore class {k}/{did}", f"part.loss_ignore_{did}", ignored, k=k))
    for c in CLAMPS:  # the logits clamped to [-c, c] first
        out.append(Variant(f"clamp {c:g}", "part.loss_clamp", _loss_of(lambda x, c=c: x.clamp(-c, c)), c=f"{c:g}"))
    for dtype, name in ((torch.float16, "float16"), (torch.bfloat16, "bfloat16")):
        out.append(Variant(f"in {name}", "part.loss_precision", _loss_in(dtype), dtype=name))
        out.append(Variant(f"in {name}, mean too", "part.loss_precision", _loss_in(dtype, True), dtype=name))
        out.append(
            Variant(
                f"logits rounded to {name}",
                "part.loss_rounded",
                _loss_of(lambda x, dtype=dtype: x.to(dtype).to(torch.float64)),
                dtype=name,
            )
        )
    return out


CLAMPS = (1, 2, 3, 5, 10, 15, 20, 25, 30, 40, 50, 64, 80, 100, 128, 200, 256, 500, 1000)


def _loss_of(change, smoothing=0.0):
    """The reference loss with the logits changed first (and label smoothing), in float64."""

    def outs(i, call):
        m = call.inputs[1]
        x = change(call.logits.double())[m]
        v = torch.nn.functional.cross_entropy(x, call.targets[m], label_smoothing=smoothing, reduction="sum")
        return [(v / m.sum()).to(torch.float64)]

    return outs


def _loss_in(dtype, mean=False):
    """The reference loss computed in a lower precision (cross_entropy on the valid logits cast to it;
    the mean taken in it too when `mean`)."""

    def outs(i, call):
        m = call.inputs[1]
        if mean:
            return [_value(torch.nn.functional.cross_entropy(call.logits[m].to(dtype), call.targets[m]))]
        ce = torch.nn.functional.cross_entropy(call.logits[m].to(dtype), call.targets[m], reduction="none")
        return [(ce.double().sum() / m.sum()).to(torch.float64)]

    return outs


def _loss_fits(S, calls):
    """Variants whose constant is read off the student's first deviating call (and then tested on the
    others like any variant): label smoothing, loss = (1 - eps) CE + eps mean_k(-log p_k)."""
    out = []
    for i, call in enumerate(calls):
        s = S[i][0] if S[i] else None
        if not isinstance(s, torch.Tensor) or s.numel() != 1 or not bool(torch.isfinite(s).all()):
            continue
        plain, uniform = _loss_of(lambda x: x)(i, call)[0], _loss_of(lambda x: x, 1.0)(i, call)[0]
        if abs(float(uniform - plain)) < 1e-3 or _close(s, plain):
            continue
        eps = float((s.reshape(()) - plain) / (uniform - plain))
        if not 0.0 < eps < 1.0:
            return out
        eps = _simple(eps)
        out.append(
            Variant(f"label smoothing {eps:g}", "part.loss_smoothing", _loss_of(lambda x: x, eps), eps=f"{eps:g}")
        )
        return out
    return out


def _simple(x):
    """x rounded to 2 significant digits when that is within 1e-4 of it (0.1, not 0.1000003)."""
    r = float(f"{x:.2g}")
    return r if abs(r - x) <= 1e-4 * max(1.0, abs(x)) else x


# ---------------------------------------------------------------- the explanation


def _claim(function, part, zh, en, shows, something_else):
    d = {"function": function, "part": part, "zh": zh, "en": en, "probe": shows}
    if something_else:
        d["else_zh"], d["else_en"] = pair("part.also_else")
    return d


FUNCTIONS = {  # exercise -> functions explained by part
    "recurrent": ("lstm_cell", "gru_cell", "lstm_sequence"),
    "masks": ("padding_mask", "causal_mask", "attention_mask"),
    "positional_encoding": ("sinusoidal_encoding", "add_positional_encoding"),
    "masked_loss": ("masked_cross_entropy",),
    "rope": ("apply_rope",),
    "timeseries": ("sliding_windows", "make_datasets"),
    "tiny_lm": ("tiny_lm_loss",),
    "bert_masking": ("mlm_mask",),
    "ablation": ("make_ablation", "run_ablation"),
    "attention": ("scaled_dot_product_attention", "MultiHeadAttention"),
}


def _sdpa_fits(S, calls):
    from . import attention

    return attention._sdpa_fits(S, calls)


FITS = {  # function -> fits(S, calls) -> [Variant]: variants whose constant is read off the student's outputs
    "masked_cross_entropy": _loss_fits,
    "scaled_dot_product_attention": _sdpa_fits,
}


def _setup(exercise, function, ref_ns):
    """(calls, variants) of a function with variants, or None."""
    if function in ("lstm_cell", "gru_cell"):
        kind = function.split("_")[0]
        return _cell_calls(ref_ns, kind), _cell_variants(ref_ns, kind)
    if function == "lstm_sequence":
        return _sequence_calls(ref_ns), _sequence_variants(ref_ns)
    if function in ("padding_mask", "causal_mask", "attention_mask"):
        return _mask_calls(ref_ns, function), _mask_variants(function)
    if function == "masked_cross_entropy":
        return _loss_calls(ref_ns), _loss_variants()
    if exercise == "attention":
        from . import attention

        return attention.setup(function, ref_ns)
    if exercise in ("rope", "timeseries", "tiny_lm"):
        return importlib.import_module(f".{exercise}", __name__).setup(function, ref_ns)
    return None


def explain(student, exercise, function, ref_ns, catalogued=(), deadline=None):
    """[claim] for one failing function nothing catalogued accounts for: each claim a dict
    {"function", "part" (the variant's id), "zh", "en" (what differs, in the report's words),
    "probe" (a call that shows it), and "else_zh" / "else_en" when something else differs too}.
    `catalogued`: Students of the function's catalogued mistakes (trusted, in process): a variant
    one of them reproduces is theirs, never claimed here.  `deadline()`: True when out of time."""
    if function not in FUNCTIONS.get(exercise, ()):
        return []
    if function in ("sinusoidal_encoding", "add_positional_encoding"):
        return _pe_explain(student, ref_ns, function, deadline) or _pe_conditions(student, ref_ns, function, deadline)
    if function == "mlm_mask":  # random: facts of what it returns, not variants of the reference
        from . import mlm

        return mlm.explain(student, catalogued, deadline)
    if exercise == "ablation":  # plain data: facts of what the student's functions return
        from . import ablation

        return ablation.explain(student, function, catalogued, deadline)
    setup = _setup(exercise, function, ref_ns)
    if setup is None:
        return []
    calls, variants = setup
    S = _student_outputs(student, calls, deadline)
    if S is None:
        return []
    if function in FITS:
        variants = variants + FITS[function](S, calls)
    R = [c.ref() for c in calls]
    found = _judge(S, R, calls, variants)
    if not found:
        return (
            _conditions(function, calls, S, R) or _which_outputs(function, S, R, calls) or _near(function, S, R, calls)
        )
    out = []
    for v, tested, else_ in found:
        if deadline is not None and deadline():
            return []
        if _catalogued(v, tested, calls, catalogued, deadline):
            return []  # a catalogued mistake computes this: the diagnosis' business, not ours
        fields = dict(v.fields)
        zh, en = pair(v.key, **fields)
        first = min(i for i, _ in tested)
        claim = _claim(function, v.id, zh, en, calls[first].shows, else_)
        if "hint_en" in fields and not else_:  # the part at fault is another function: the test's hint is not
            claim["in"] = fields["function"]
            claim["hint_zh"], claim["hint_en"] = fields["hint_zh"], fields["hint_en"]
        out.append(claim)
    return out


def _deviates(s, r):
    return r is not None and (s is None or len(s) != len(r) or not all(_close(a, b) for a, b in zip(s, r)))


def _conditions(function, calls, S, R):
    """Where no variant reproduces the student: the condition under which the student's function
    is wrong, by experiment.  A call may be tagged with a `condition` (lengths unsorted, T past 64, a
    second call of one module, scores far below 0...); the condition is claimed when the student is
    right on every untagged call and wrong on at least MIN_CALLS of the calls it tags, and at least half.  A call tagged
    "again" repeats the call `again_of` on fresh inputs of the same values: differing from the
    student's own first answer, the function is random."""
    plain = [i for i, c in enumerate(calls) if not getattr(c, "condition", None)]
    for i, c in enumerate(calls):
        if getattr(c, "condition", None) == "again" and S[i] is not None and S[c.again_of] is not None:
            if _deviates(S[i], S[c.again_of]) and _deviates(S[c.again_of], R[c.again_of]):
                zh, en = pair("part.random", fn=function)
                return [_claim(function, "random", zh, en, c.shows, False)]
    if not plain or any(_deviates(S[i], R[i]) for i in plain):
        return []
    out = []
    for cond in dict.fromkeys(getattr(c, "condition", None) for c in calls):
        if cond in (None, "again"):
            continue
        tagged = [i for i, c in enumerate(calls) if getattr(c, "condition", None) == cond]
        wrong = [i for i in tagged if _deviates(S[i], R[i])]
        if len(wrong) >= MIN_CALLS and 2 * len(wrong) >= len(tagged):
            fields = {"fn": function, "n": len(wrong), "m": len(tagged)}
            tagged = wrong
            where = getattr(calls[tagged[0]], "where", None)
            if where is not None:
                fields.update(where([S[i] for i in tagged], [R[i] for i in tagged], [calls[i] for i in tagged]))
            if "skip" in fields:
                continue
            zh, en = pair(f"part.when_{cond}", **fields)
            out.append(_claim(function, f"when {cond}", zh, en, calls[tagged[0]].shows, False))
    return out


OUTPUTS = {  # function -> the names of what a call returns, in the order the calls' outputs list them
    "lstm_cell": ("h_new", "c_new"),
    "lstm_sequence": ("outputs", "h_n", "c_n"),
    "scaled_dot_product_attention": ("out", "weights"),
    "MultiHeadAttention": ("out", "weights"),
}


def _which_outputs(function, S, R, calls):
    """Where no variant nor condition fits: which of the function's outputs differ, when it is the
    same proper part of them on every call that deviates (at least MIN_CALLS), and the rest is right
    on every call."""
    names = OUTPUTS.get(function)
    if names is None:
        return []
    seen, first = set(), None
    for i, (s, r) in enumerate(zip(S, R)):
        if r is None:
            continue
        if s is None or len(s) != len(r) or len(r) != len(names):
            return []
        wrong = frozenset(k for k in range(len(r)) if r[k] is not None and not _close(s[k], r[k]))
        if wrong:
            seen.add(wrong)
            first = i if first is None else first
    if len(seen) != 1:
        return []
    wrong = next(iter(seen))
    if len(wrong) == len(names) or sum(1 for s, r in zip(S, R) if r is not None and _deviates(s, r)) < MIN_CALLS:
        return []
    bad = ", ".join(names[k] for k in sorted(wrong))
    good = ", ".join(names[k] for k in range(len(names)) if k not in wrong)
    zh, en = pair("part.which_outputs", fn=function, bad=bad, good=good)
    return [_claim(function, "outputs " + bad, zh, en, calls[first].shows, False)]


NEAR = 1e-2  # a relative difference at most this large, everywhere: "close, but not within the tolerance"


def _near(function, S, R, calls):
    """Where nothing else fits: the student's values are close to the reference's everywhere (within
    NEAR, relative) but outside the tolerance on at least MIN_CALLS calls: how far, at most, said as a
    number next to the rounding of float16 and bfloat16."""
    worst, first, wrong = 0.0, None, 0
    for i, (s, r) in enumerate(zip(S, R)):
        if r is None:
            continue
        if s is None or len(s) != len(r):
            return []
        for a, b in zip(s, r):
            if b is None or not isinstance(b, torch.Tensor):
                continue
            if (
                not isinstance(a, torch.Tensor)
                or a.shape != b.shape
                or not bool(torch.isfinite(a).all())
                or not bool(torch.isfinite(b).all())
            ):
                return []
            rel = float(((a - b).abs() / b.abs().clamp_min(1.0)).max()) if a.numel() else 0.0
            if rel > NEAR:
                return []
            worst = max(worst, rel)
        if _deviates(s, r):
            wrong += 1
            first = i if first is None else first
    if wrong < MIN_CALLS:
        return []
    zh, en = pair("part.near", fn=function, x=f"{worst:.1e}")
    return [_claim(function, "near", zh, en, calls[first].shows, False)]


def _catalogued(v, tested, calls, catalogued, deadline):
    """Does a catalogued mistake give the variant's values on every call that tests it?"""
    for mistake in catalogued:
        if deadline is not None and deadline():
            return True
        got = _student_outputs(mistake, calls, None)
        if got is None:
            continue
        if all(got[i] is not None and k < len(got[i]) and _close(got[i][k], v.outs(i, calls[i])[k]) for i, k in tested):
            return True
    return False


__all__ = ["FUNCTIONS", "explain"]
