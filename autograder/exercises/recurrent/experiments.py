"""The explanation by part of the `recurrent` exercise (the engine: autograder/diagnose/parts/):
an LSTM or GRU cell's variants (a parameter block zeroed, doubled, negated, swapped or copied; a gate
through the other activation; the GRU's b_hn outside r; a state left out), and lstm_sequence's (the
final state taken at another step, the padded outputs, the initial state ignored or written into)."""

import torch

from ...diagnose.parts.base import (
    INPLACE,
    Call,
    Variant,
    _rnd,
    _value,
    first_wrong,
)
from ...diagnose.registry import CallFailed


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


# ---------------------------------------------------------------- the interface the engine calls

FUNCTIONS = ("lstm_cell", "gru_cell", "lstm_sequence")
OUTPUTS = {  # function -> the names of what a call returns, in the order the calls' outputs list them
    "lstm_cell": ("h_new", "c_new"),
    "lstm_sequence": ("outputs", "h_n", "c_n"),
}


def setup(function, ref_ns):
    """(calls, variants) of `function`, or None."""
    if function in ("lstm_cell", "gru_cell"):
        kind = function.split("_")[0]
        return _cell_calls(ref_ns, kind), _cell_variants(ref_ns, kind)
    if function == "lstm_sequence":
        return _sequence_calls(ref_ns), _sequence_variants(ref_ns)
    return None
