"""Diagnosis: name the catalogued mistake a failing function makes, or name nothing.

For every contract function a fixed set of small, seeded *probes* (masks, padding, causal,
Tq != Tk, dk != dv, float64, gradients, invalid arguments...) is run three ways, through the same
Student interface the properties use (``call`` / ``new`` / ``invoke`` / ``raises``):

* on the student's code (an in-process ``Student`` or a sandboxed ``RemoteStudent``),
* on the reference solution (solutions/<exercise>.py),
* on every catalogued mistake of the exercise (the reference with the entry's ``code`` appended:
  trusted code, executed here in the judge, never in the worker).

A probe's observation is data: values (float32 tolerances), shapes, dtypes, "raised", "modified
its input in place", gradients, finiteness where the contract leaves the values free.  Where the
contract leaves the random draws free (mlm_mask, init_tiny_lm, train_tiny_lm) a probe observes only
what it fixes: structural facts that hold for every draw, rates read through exact binomial bounds,
reproducibility given the seed, the trend of the training losses.  A mistake M
*explains* the student's function f when

    the student's f behaves like M's f on every probe of f, M's f differs from the reference's
    on at least one of them, and the student's M.function behaves like M's on all its probes too.

So a mistake in ``padding_mask`` is also named on ``attention_mask``'s failed tests when the
student's attention_mask inherits it (same for lstm_cell -> lstm_sequence, the attention function
-> MultiHeadAttention, sinusoidal_encoding -> add_positional_encoding).  Mistakes that behave the
same on every probe are one mistake for the student: the catalogue gives them a shared ``group``
(tests/test_diagnosis.py checks that no two other mistakes collide); anything that matches
nothing, or only part of a mistake, gets no name.

Mistakes are run lazily, probe by probe, stopping at the first probe where they differ from the
student: a diagnosis costs a few tenths of a second in the judge.  It runs after every test of an
exercise has its result (sandbox/runner.py), under its own time budget, and only adds to them.

Adding an exercise: register probes for each of its functions with ``@probe(exercise, function)``
(a probe takes a Student and returns anything encode() reads; derive facts from odd outputs only
defensively); tests/test_diagnosis.py then checks that every catalogued mistake of it is named and
that no two collide.  An exercise without probes never gets a diagnosis.
"""
import math
import signal
import threading
import time

import torch

from .catalogue import load_catalogue, reference_solution
from .errors import MissingFunction, PropertyFailure, TestTimeout

ATOL = RTOL = 1e-4
FAILED = ("failed", "error", "timeout")

PROBES = {}  # exercise -> {function: [probe(student) -> value]}


def probe(exercise, function):
    def register(fn):
        PROBES.setdefault(exercise, {}).setdefault(function, []).append(fn)
        return fn
    return register


# ---------------------------------------------------------------- inputs


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def rnd(shape, seed, scale=2.0, dtype=torch.float32):
    """Entries in [-scale, scale], two decimals, seeded."""
    x = torch.randint(-100, 101, tuple(shape), generator=_gen(seed)).double() * (scale / 100)
    return x.to(dtype)


def bools(shape, seed, p=0.6, full_rows=True):
    m = torch.rand(tuple(shape), generator=_gen(seed)) < p
    if full_rows:  # every query row keeps an allowed key
        idx = torch.randint(0, shape[-1], tuple(shape[:-1]) + (1,), generator=_gen(seed + 1))
        m = m.scatter(-1, idx, True)
    return m


def prefix(lengths, T):
    return torch.arange(T)[None, :] < torch.as_tensor(lengths)[:, None]


def _grads(out_terms, leaves):
    """Gradients of sum(term * fixed weights) w.r.t. leaves; None -> zeros; 'nograd' if cut."""
    loss = 0
    for i, t in enumerate(out_terms):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            return "not a tensor"
        loss = loss + (t * rnd(t.shape, 900 + i, 1.0, torch.float64).to(t.dtype)).sum()
    if not isinstance(loss, torch.Tensor) or not loss.requires_grad:
        return "nograd"
    got = torch.autograd.grad(loss, leaves, allow_unused=True)
    return [torch.zeros_like(x) if g is None else g for g, x in zip(got, leaves)]


def _finite(x):
    if isinstance(x, torch.Tensor):
        return bool(torch.isfinite(x.detach()).all()) if x.is_floating_point() else True
    if isinstance(x, (list, tuple)):
        return all(_finite(v) for v in x)
    return True


def _rows(x, keep):
    """x[..., keep, :] restricted to the query rows `keep` (bool over Tq) when shapes allow."""
    try:
        return x.detach()[..., keep, :]
    except Exception:  # noqa: BLE001 - an odd shape: compare it whole
        return x


# ---------------------------------------------------------------- masks

M = "masks"


@probe(M, "padding_mask")
def _pm(s):
    return [s.call("padding_mask", torch.tensor([3, 0, 2])),
            s.call("padding_mask", torch.tensor([1, 4, 2]), 6),
            s.call("padding_mask", torch.tensor([2, 2]), max_len=2),
            s.call("padding_mask", torch.tensor([5]))]


@probe(M, "padding_mask")
def _pm_bad(s):
    return [s.raises(ValueError, "padding_mask", torch.tensor([-1, 2])),
            s.raises(ValueError, "padding_mask", torch.tensor([5, 1]), 3),
            s.raises(ValueError, "padding_mask", torch.tensor([2, 1]), 2)]


@probe(M, "causal_mask")
def _cm(s):
    return [s.call("causal_mask", 1), s.call("causal_mask", 4), s.call("causal_mask", 3, device="cpu")]


@probe(M, "attention_mask")
def _am(s):
    return [s.call("attention_mask", torch.tensor([3, 1, 2])),
            s.call("attention_mask", torch.tensor([3, 1, 2]), causal=True),
            s.call("attention_mask", torch.tensor([2, 4]), 5, causal=True),
            s.call("attention_mask", torch.tensor([1, 3]), 4)]


# ---------------------------------------------------------------- positional_encoding

PE = "positional_encoding"


@probe(PE, "sinusoidal_encoding")
def _pe(s):
    return [s.call("sinusoidal_encoding", 5, 6), s.call("sinusoidal_encoding", 1, 2),
            s.call("sinusoidal_encoding", 4, 8, 100.0), s.call("sinusoidal_encoding", 3, 4, base=50.0),
            s.call("sinusoidal_encoding", 7, 10)]


@probe(PE, "sinusoidal_encoding")
def _pe_odd(s):
    return [s.raises(ValueError, "sinusoidal_encoding", 3, 5), s.raises(ValueError, "sinusoidal_encoding", 2, 1)]


def _add_pe(shape, seed, dtype=torch.float32):
    def run(s):
        return s.call("add_positional_encoding", rnd(shape, seed, dtype=dtype))
    return run


for _i, (_shape, _dt) in enumerate([((2, 4, 6), torch.float32), ((3, 3, 4), torch.float32),
                                    ((1, 5, 2), torch.float32), ((2, 3, 4), torch.float64),
                                    ((4, 2, 4), torch.float32)]):
    probe(PE, "add_positional_encoding")(_add_pe(_shape, 10 + _i, _dt))


# ---------------------------------------------------------------- attention

A = "attention"
SDPA = "scaled_dot_product_attention"


def _sdpa(lead, Tq, Tk, dk, dv, seed, mask=None, dtype=torch.float32, grad=False, empty=None):
    """mask: None, a shape (random, every row kept), or 'causal'; empty: a query row left with no key."""
    def run(s):
        Q, K, V = (rnd(lead + (T, d), seed + j, dtype=dtype) for j, (T, d) in enumerate([(Tq, dk), (Tk, dk), (Tk, dv)]))
        if mask is None:
            m = None
        elif mask == "causal":
            m = torch.ones(Tq, Tk, dtype=torch.bool).tril()
        else:
            m = bools(mask, seed + 7)
            if empty is not None:
                m = m.clone()
                m[..., empty, :] = False
        leaves = [x.requires_grad_(True) for x in (Q, K, V)] if grad else []
        args = (Q, K, V) if m is None else (Q, K, V, m)
        res = s.call(SDPA, *args)
        if not isinstance(res, (tuple, list)) or len(res) != 2:
            return res
        out, w = res
        if empty is None:
            obs = [out, w]
            if grad:
                obs.append(_grads([out, w], leaves))
            return obs
        keep = torch.ones(Tq, dtype=torch.bool)
        keep[empty] = False
        obs = [_rows(out, keep), _rows(w, keep), _finite(out), _finite(w)]
        if grad:
            g = _grads([out, w], leaves)
            obs.append(g if isinstance(g, str) else _finite(g))
        return obs
    return run


for _i, _kw in enumerate([
        dict(lead=(), Tq=3, Tk=5, dk=4, dv=2),
        dict(lead=(2,), Tq=4, Tk=4, dk=3, dv=5, mask="causal"),
        dict(lead=(2, 2), Tq=3, Tk=5, dk=4, dv=3, mask=(2, 1, 1, 5)),
        dict(lead=(2,), Tq=2, Tk=3, dk=2, dv=2, mask=(2, 2, 3), dtype=torch.float64),
        dict(lead=(1, 3), Tq=4, Tk=2, dk=5, dv=2, mask=(4, 2)),
        dict(lead=(2,), Tq=3, Tk=4, dk=2, dv=3, mask=(2, 3, 4), grad=True),
        dict(lead=(2, 2), Tq=2, Tk=3, dk=3, dv=2, grad=True),
        dict(lead=(2,), Tq=3, Tk=4, dk=2, dv=3, mask=(2, 3, 4), empty=1),
        dict(lead=(2,), Tq=3, Tk=3, dk=2, dv=2, mask=(3, 3), empty=0, grad=True),
]):
    probe(A, SDPA)(_sdpa(seed=100 + 10 * _i, **_kw))


MHA = "MultiHeadAttention"


def _mha_params(d, bias, seed):
    P = {}
    for j, name in enumerate(("W_q", "W_k", "W_v", "W_o")):
        P[name] = rnd((d, d), seed + j, 0.6)
        if bias:
            P[name + ".bias"] = rnd((d,), seed + 10 + j, 0.3)
    return P


def _mha(d, H, bias, B, Tq, Tk, seed, mask=None, self_attn=False, grad=False):
    """grad: also the gradients with respect to x_q and x_kv (a mistake in the student's own
    scaled_dot_product_attention that shows only in gradients shows here too)."""
    def run(s):
        P = _mha_params(d, bias, seed)
        mha = s.new(MHA, d, H, bias=bias)
        layout = []
        with torch.no_grad():
            for name in ("W_q", "W_k", "W_v", "W_o"):
                lin = getattr(mha, name, None)
                w, b = getattr(lin, "weight", None), getattr(lin, "bias", None)
                layout.append((tuple(w.shape) if isinstance(w, torch.Tensor) else None,
                               tuple(b.shape) if isinstance(b, torch.Tensor) else None))
                if isinstance(w, torch.Tensor) and tuple(w.shape) == (d, d):
                    w.copy_(P[name])
                if isinstance(b, torch.Tensor) and tuple(b.shape) == (d,):
                    b.copy_(P[name + ".bias"] if bias else rnd((d,), seed + 50, 0.3))
        x_q = rnd((B, Tq, d), seed + 20)
        x_kv = x_q if self_attn else rnd((B, Tk, d), seed + 21)
        if mask is None:
            m = None
        elif mask == "causal":
            m = torch.ones(Tq, Tk, dtype=torch.bool).tril()
        elif mask == "padding":
            m = prefix([Tk - 1, 2][:B] + [Tk] * max(0, B - 2), Tk)[:, None, None, :]
        else:
            m = bools(mask, seed + 30)
        leaves = [x.requires_grad_(True) for x in (x_q, x_kv)] if grad else []
        args = (x_q, x_kv) if m is None else (x_q, x_kv, m)
        res = s.invoke(f"{MHA}.forward", mha, *args)
        if grad and isinstance(res, (tuple, list)) and len(res) == 2:
            return [layout, res, _grads(list(res), leaves)]
        return [layout, res]
    return run


for _i, _kw in enumerate([
        dict(d=4, H=2, bias=True, B=2, Tq=3, Tk=5),
        dict(d=6, H=3, bias=False, B=2, Tq=4, Tk=4, mask="causal", self_attn=True),
        dict(d=4, H=2, bias=True, B=2, Tq=4, Tk=4, mask="padding", self_attn=True),
        dict(d=6, H=2, bias=True, B=2, Tq=3, Tk=4, mask=(2, 2, 3, 4)),
        dict(d=8, H=4, bias=True, B=1, Tq=2, Tk=3, mask=(1, 1, 2, 3)),
        dict(d=4, H=2, bias=True, B=2, Tq=3, Tk=4, mask=(2, 1, 1, 4), grad=True),
]):
    probe(A, MHA)(_mha(seed=300 + 100 * _i, **_kw))


@probe(A, MHA)
def _mha_bad(s):
    return [s.raises(ValueError, MHA, 5, 2), s.raises(ValueError, MHA, 6, 4)]


# ---------------------------------------------------------------- recurrent

R = "recurrent"


def _weights(n_gates, d_in, d_h, seed, dtype=torch.float32):
    return (rnd((n_gates * d_h, d_in), seed, 0.8, dtype), rnd((n_gates * d_h, d_h), seed + 1, 0.8, dtype),
            rnd((n_gates * d_h,), seed + 2, 0.5, dtype), rnd((n_gates * d_h,), seed + 3, 0.5, dtype))


def _lstm(B, d_in, d_h, seed, dtype=torch.float32, grad=False):
    def run(s):
        x = rnd((B, d_in), seed, 1.0, dtype)
        h, c = rnd((B, d_h), seed + 1, 1.0, dtype), rnd((B, d_h), seed + 2, 1.5, dtype)
        W = _weights(4, d_in, d_h, seed + 3, dtype)
        leaves = [t.requires_grad_(True) for t in (x, h, c)] if grad else []
        res = s.call("lstm_cell", x, (h, c), *W)
        if grad and isinstance(res, (tuple, list)) and len(res) == 2:
            return [res, _grads(list(res), leaves)]
        return res
    return run


for _i, _kw in enumerate([dict(B=2, d_in=3, d_h=4), dict(B=3, d_in=2, d_h=2), dict(B=1, d_in=4, d_h=3, dtype=torch.float64),
                          dict(B=2, d_in=2, d_h=3, grad=True)]):
    probe(R, "lstm_cell")(_lstm(seed=500 + 10 * _i, **_kw))


def _gru(B, d_in, d_h, seed, dtype=torch.float32):
    def run(s):
        x, h = rnd((B, d_in), seed, 1.0, dtype), rnd((B, d_h), seed + 1, 1.0, dtype)
        return s.call("gru_cell", x, h, *_weights(3, d_in, d_h, seed + 3, dtype))
    return run


for _i, _kw in enumerate([dict(B=2, d_in=3, d_h=4), dict(B=3, d_in=2, d_h=2), dict(B=1, d_in=4, d_h=3, dtype=torch.float64)]):
    probe(R, "gru_cell")(_gru(seed=600 + 10 * _i, **_kw))


def _seq(lengths, T, d_in, d_h, seed, state=False, dtype=torch.float32, grad=False):
    def run(s):
        B = len(lengths)
        X = rnd((B, T, d_in), seed, 1.0, dtype)
        W = _weights(4, d_in, d_h, seed + 3, dtype)
        kw = {}
        if state:
            kw["state"] = (rnd((B, d_h), seed + 1, 1.0, dtype), rnd((B, d_h), seed + 2, 1.0, dtype))
        if grad:
            X.requires_grad_(True)
        res = s.call("lstm_sequence", X, torch.tensor(lengths), *W, **kw)
        if grad:
            try:
                out, (h, c) = res
            except Exception:  # noqa: BLE001
                return res
            return [res, _grads([out, h, c], [X])]
        return res
    return run


for _i, _kw in enumerate([dict(lengths=[4, 2, 1], T=4, d_in=2, d_h=3),
                          dict(lengths=[3, 1], T=5, d_in=3, d_h=2, state=True),
                          dict(lengths=[2, 3], T=3, d_in=2, d_h=2, dtype=torch.float64),
                          dict(lengths=[3, 3], T=3, d_in=2, d_h=3, state=True),
                          dict(lengths=[3, 2], T=3, d_in=2, d_h=2, grad=True)]):
    probe(R, "lstm_sequence")(_seq(seed=700 + 10 * _i, **_kw))


# ---------------------------------------------------------------- masked_loss

L = "masked_loss"
CE = "masked_cross_entropy"


def _ce(B, T, V, seed, mask, pad_targets=None, pad_logits=None, scale=3.0, grad=False):
    def run(s):
        logits = rnd((B, T, V), seed, scale)
        targets = torch.randint(0, V, (B, T), generator=_gen(seed + 1))
        m = torch.as_tensor(mask)
        if pad_targets is not None:
            targets = targets.masked_fill(~m, pad_targets)
        if pad_logits is not None:
            logits = logits.masked_fill(~m[..., None], pad_logits)
        if grad:
            logits.requires_grad_(True)
        loss = s.call(CE, logits, targets, m)
        if not grad:
            if scale > 100 and isinstance(loss, torch.Tensor) and not _finite(loss):
                return "not finite"  # overflow: inf or NaN, whichever the unstable formula gives
            return loss
        g = _grads([loss], [logits])
        if isinstance(g, str):
            return [loss, g]
        g = g[0]
        return [loss, g.masked_fill(~m[..., None], 0.0), _finite(g[~m]), bool((g[~m] == 0).all())]
    return run


_MASKS = [[[True, True, True, True], [True, True, False, False]],
          [[True, False, True, False], [False, True, True, True], [True, True, True, True]],
          [[True, True, False], [True, False, False]]]
for _i, _kw in enumerate([
        dict(B=2, T=4, V=5, mask=_MASKS[0]),
        dict(B=3, T=4, V=3, mask=_MASKS[1]),
        dict(B=2, T=3, V=4, mask=_MASKS[2], pad_targets=7),
        dict(B=2, T=3, V=4, mask=_MASKS[2], pad_targets=-1),
        dict(B=2, T=3, V=4, mask=_MASKS[2], pad_logits=float("nan")),
        dict(B=2, T=4, V=5, mask=_MASKS[0], scale=1e4),
        dict(B=3, T=4, V=3, mask=_MASKS[1], grad=True),
        dict(B=2, T=3, V=4, mask=_MASKS[2], pad_logits=float("nan"), grad=True),
        dict(B=2, T=3, V=4, mask=_MASKS[2], pad_logits=float("inf"), grad=True),
]):
    probe(L, CE)(_ce(seed=800 + 10 * _i, **_kw))


@probe(L, CE)
def _ce_empty(s):
    return s.raises(ValueError, CE, rnd((2, 3, 4), 890), torch.zeros(2, 3, dtype=torch.long),
                    torch.zeros(2, 3, dtype=torch.bool))


# ---------------------------------------------------------------- rope

RO = "rope"


@probe(RO, "rope_angles")
def _ro_angles(s):
    return [s.call("rope_angles", 5, 6), s.call("rope_angles", 1, 2), s.call("rope_angles", 3, 4, offset=2),
            s.call("rope_angles", 4, 8, offset=3, base=100.0), s.call("rope_angles", 2, 10, offset=7)]


@probe(RO, "rope_angles")
def _ro_odd(s):
    return [s.raises(ValueError, "rope_angles", 3, 5), s.raises(ValueError, "rope_angles", 2, 1, offset=1)]


def _rope(shape, seed, dtype=torch.float32, **kw):
    def run(s):
        return s.call("apply_rope", rnd(shape, seed, dtype=dtype), **kw)
    return run


for _i, (_shape, _dt, _kw) in enumerate([((5, 6), torch.float32, {}),
                                         ((2, 3, 4), torch.float32, {"offset": 2}),
                                         ((1, 2, 4, 8), torch.float32, {"offset": 1, "base": 100.0}),
                                         ((3, 4), torch.float64, {}),
                                         ((2, 6), torch.float32, {"offset": 7})]):
    probe(RO, "apply_rope")(_rope(_shape, 1000 + _i, _dt, **_kw))


# ---------------------------------------------------------------- timeseries

TS = "timeseries"


def _series(N, F, seed, constant=None):
    x = rnd((N, F), seed, 2.0)
    if constant is not None:
        x[:, constant] = 0.75  # exact in binary: a mean of it is exact, its std exactly 0
    return x


def _split_view(series, n, res):
    """A split seen as facts, so that any shuffle reads the same: shapes, prefix / suffix in
    order, a permutation of the rows, rows in time order."""
    train, test = res
    rows = [tuple(r) for r in series.tolist()]
    idx = [rows.index(tuple(r)) if tuple(r) in rows else -1 for r in torch.cat([train, test]).tolist()]
    return [tuple(train.shape), tuple(test.shape), train.dtype == series.dtype,
            bool(torch.equal(train, series[:n])), bool(torch.equal(test, series[n:])),
            sorted(idx) == list(range(len(rows))), idx == sorted(idx)]


@probe(TS, "chronological_split")
def _ts_split(s):
    out = []
    for N, F, n, seed in [(8, 2, 5, 1100), (6, 1, 1, 1101), (5, 3, 4, 1102)]:
        series = _series(N, F, seed)
        res = s.call("chronological_split", series, n)
        try:
            out.append(_split_view(series, n, res))
        except Exception:  # noqa: BLE001 - not two tensors of rows: compare as it is
            out.append(res)
    return out


@probe(TS, "chronological_split")
def _ts_split_bad(s):
    return [s.raises(ValueError, "chronological_split", _series(5, 2, 1103), n) for n in (0, 5, 7)]


@probe(TS, "fit_standardizer")
def _ts_fit(s):
    return [s.call("fit_standardizer", _series(6, 3, 1110)), s.call("fit_standardizer", _series(5, 2, 1111, constant=0)),
            s.call("fit_standardizer", _series(4, 1, 1112)), s.call("fit_standardizer", _series(3, 4, 1113, constant=3))]


@probe(TS, "sliding_windows")
def _ts_windows(s):
    return [s.call("sliding_windows", _series(N, F, 1120 + N), w, h)
            for N, F, w, h in [(8, 2, 3, 1), (9, 1, 2, 3), (5, 2, 4, 1), (6, 3, 1, 1), (7, 2, 2, 5)]]


@probe(TS, "sliding_windows")
def _ts_windows_bad(s):
    return [s.raises(ValueError, "sliding_windows", _series(N, 2, 1130), w, h)
            for N, w, h in [(6, 2, 0), (6, 0, 1), (3, 3, 1), (4, 2, 3)]]


@probe(TS, "make_datasets")
def _ts_make(s):
    return [s.call("make_datasets", _series(12, 2, 1140), 8, 3, 1),
            s.call("make_datasets", _series(14, 1, 1141), 9, 2, 2),
            s.call("make_datasets", _series(11, 3, 1142, constant=1), 7, 2, 1)]


# ---------------------------------------------------------------- bert_masking

BM = "bert_masking"
MLM = "mlm_mask"
BERT_IDS = [0, 101, 102, 103]  # [PAD], [CLS], [SEP], [MASK]
IGNORE = -100


@probe(BM, "special_tokens_mask")
def _bm_special(s):
    return [s.call("special_tokens_mask", torch.tensor([[1, 7, 8, 2, 0, 0]]), [0, 1, 2, 3]),
            s.call("special_tokens_mask", torch.tensor([[101, 2003, 103, 102, 0], [101, 100, 104, 102, 0]]), BERT_IDS),
            s.call("special_tokens_mask", torch.tensor([[5, 0, 9, 5], [3, 9, 9, 4]]), [9, 5, 3]),
            s.call("special_tokens_mask", torch.tensor([[0, 6, 7, 6]]), [6])]


def _bm_rows(B, T, V, seed, min_len, with_mask_token=False):
    """(B, T) BERT-like rows: [CLS] ordinary tokens [SEP], then [PAD]; lengths in [min_len, T];
    with_mask_token: a [MASK] token at position 1 (so that every special id occurs often)."""
    g = _gen(seed)
    ordinary = torch.tensor([i for i in range(V) if i not in BERT_IDS])
    ids = ordinary[torch.randint(0, len(ordinary), (B, T), generator=g)]
    lengths = torch.randint(min_len, T + 1, (B,), generator=g)[:, None]
    t = torch.arange(T)[None, :]
    ids = torch.where(t == 0, 101, ids)
    if with_mask_token:
        ids = torch.where(t == 1, 103, ids)
    ids = torch.where(t == lengths - 1, 102, ids)
    return torch.where(t >= lengths, 0, ids)


def _bm_out(ids, res):
    """(inputs, labels) detached, or None when the result is not two (B, T) integer tensors."""
    if not isinstance(res, (tuple, list)) or len(res) != 2:
        return None
    if not all(isinstance(x, torch.Tensor) and tuple(x.shape) == tuple(ids.shape) and not x.is_floating_point()
               for x in res):
        return None
    return res[0].detach().to(torch.int64), res[1].detach().to(torch.int64)


def _kind(res):
    """What came back, as types, shapes and dtypes (for results that are not two (B, T) tensors)."""
    if isinstance(res, (tuple, list)):
        return ("kind", tuple((type(x).__name__, tuple(x.shape), str(x.dtype)) if isinstance(x, torch.Tensor)
                              else type(x).__name__ for x in res[:3]), len(res))
    return ("kind", type(res).__name__)


def _bm_share(count, n, grid):
    """The rate count / n read as a value of `grid`: the nearest of those whose exact binomial
    interval holds count (a false rejection below 1e-9, so a rate reads the same whatever the RNG
    scheme), 'other' when none does."""
    from .properties.bert_masking import binomial_interval

    if n == 0:
        return "n=0"
    bounds = {p: binomial_interval(n, p) for p in grid}
    fits = [p for p, (lo, hi) in bounds.items() if lo <= count <= hi]
    return min(fits, key=lambda p: abs(count / n - p)) if fits else "other"


@probe(BM, MLM)
def _bm_structure(s):
    """Structural facts that hold for every draw, on a batch where every special id occurs >= 96
    times (a token selected with probability 0.15 is then selected at least once, except with
    probability 0.85^96 < 2e-7) and 37 columns are selectable (a (T,) mask broadcast over the batch
    selects some): dtypes, which special ids are ever touched, what labels hold, whether unlabelled
    tokens change; and the seed: same seed (global state changed) -> same result, another seed ->
    another result."""
    ids = _bm_rows(96, 40, 200, 1200, min_len=3, with_mask_token=True)
    args = (BERT_IDS, 103, 200)
    torch.manual_seed(111)  # code drawing from the global state sees another state each time
    res = s.call(MLM, ids, *args, 5)
    got = _bm_out(ids, res)
    if got is None:
        return _kind(res)
    inputs, labels = got
    lab = labels != IGNORE
    special = torch.isin(ids, torch.tensor(BERT_IDS))
    touched = special & (lab | (inputs != ids))
    foreign = sorted(set(labels[lab & (labels != ids)].tolist()))
    torch.manual_seed(222)
    again = _bm_out(ids, s.call(MLM, ids, *args, 5))
    other = _bm_out(ids, s.call(MLM, ids, *args, 6))
    same = again is not None and all(torch.equal(x, y) for x, y in zip(got, again))
    same_other = other is not None and all(torch.equal(x, y) for x, y in zip(got, other))
    return [[str(x.dtype) for x in res],
            tuple(sorted(set(ids[touched].tolist()))),  # special ids ever selected or changed
            bool((labels[lab] == ids[lab]).all()),  # labels hold the original tokens
            # labels hold the replaced inputs ([MASK] where the original was another token)
            bool((labels[lab] == inputs[lab]).all()) and bool((labels[lab & (ids != 103)] == 103).any()),
            tuple(foreign) if len(foreign) <= 3 else "many",  # label values that are neither -100 nor the original
            bool((~lab & (inputs != ids)).any()),  # an unlabelled token changed
            bool(((inputs < 0) | (inputs >= 200)).any()),
            same, same_other]


@probe(BM, MLM)
def _bm_rates(s):
    """Rates on one long sequence (11998 ordinary tokens between [CLS] and [SEP]): the share of
    tokens labelled, and among them the shares replaced by [MASK], by another token, left
    unchanged, each read as one of the rates the contract or a catalogued mistake gives (exact
    binomial bounds, so any RNG scheme reads the same); and whether the other tokens look uniform.
    One sequence: one mask broadcast over a batch reads as the contract here (see _bm_rows_alike)."""
    V, mask_id = 1000, 103
    ids = _bm_rows(1, 12000, V, 1210, min_len=12000)
    got = _bm_out(ids, s.call(MLM, ids, BERT_IDS, mask_id, V, 11))
    if got is None:
        return "unusable"
    inputs, labels = got
    can = ~torch.isin(ids, torch.tensor(BERT_IDS))
    sel = (labels != IGNORE) & can
    n, S = int(can.sum()), int(sel.sum())
    x, orig = inputs[sel], ids[sel]
    n_mask, n_keep = int((x == mask_id).sum()), int((x == orig).sum())
    others = x[(x != mask_id) & (x != orig)]
    R = len(others)
    if R == 0:
        uniform = "none"
    elif R >= 2 and len(set(others.tolist())) == 1:
        uniform = "one"
    else:
        from .properties.bert_masking import binomial_interval

        top = int(torch.bincount(others.clamp(0, V - 1), minlength=V).max())
        _, hi = binomial_interval(R, 1 / (V - 2 - len(BERT_IDS)), 1e-9 / V, upper_only=True)
        uniform = "uniform" if top <= hi else "skewed"
    rate = _bm_share(S, n, (0.12, 0.15, 0.8, 1.0))  # labelled: 0.15 (0.12 = 0.15 x 0.8: [MASK] only)
    if rate not in (0.12, 0.15, 0.8):  # labels everywhere (or nowhere): the mix means nothing
        return [rate]
    return [rate,
            _bm_share(n_mask, S, (0.15, 0.8, 1.0)),
            _bm_share(S - n_mask - n_keep, S, (0.0, 0.02, 0.1)),  # 0.02 = 0.2 x 0.1
            _bm_share(n_keep, S, (0.0, 0.1, 0.18, 0.75)),
            uniform]


@probe(BM, MLM)
def _bm_rows_alike(s):
    """16 identical sequences (126 selectable tokens each): does any pair get the same selection?
    (Two independent rows do with probability < 1e-16.)"""
    row = _bm_rows(1, 128, 200, 1220, min_len=128)
    ids = row.expand(16, 128).contiguous()
    got = _bm_out(ids, s.call(MLM, ids, BERT_IDS, 103, 200, 12))
    if got is None:
        return "unusable"
    sel = got[1] != IGNORE
    return any(bool((sel[i] == sel[j]).all()) for i in range(16) for j in range(i + 1, 16))


# ---------------------------------------------------------------- tiny_lm

LM = "tiny_lm"


def _lm_params(V, d, seed):
    """(E, W_q, W_k, W_v, W_o, W_out) float32, entries of about 1/sqrt(d) with two decimals."""
    shapes = [(V, d), (d, d), (d, d), (d, d), (d, d), (V, d)]
    return tuple(rnd(shape, seed + j, 1.7 / math.sqrt(d)) for j, shape in enumerate(shapes))


def _lm_tokens(B, T, V, seed):
    return torch.randint(0, V, (B, T), generator=_gen(seed))


@probe(LM, "init_tiny_lm")
def _lm_init(s):
    """Shapes, dtypes and finiteness (the distribution is free), and the seed: the same seed with
    another global state gives the same params, another seed other ones."""
    out = []
    for V, d, seed in [(5, 4, 0), (10, 16, 7)]:
        torch.manual_seed(12345)
        a = s.call("init_tiny_lm", V, d, seed)
        torch.manual_seed(54321)
        b = s.call("init_tiny_lm", V, d, seed)
        c = s.call("init_tiny_lm", V, d, seed + 1)
        if not all(isinstance(p, (tuple, list)) and len(p) == 6 and all(isinstance(x, torch.Tensor) for x in p)
                   for p in (a, b, c)):
            out.append(_kind(a))
            continue
        out.append([[(tuple(x.shape), str(x.dtype)) for x in a], _finite(list(a)),
                    all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, b)),
                    all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, c))])
    return out


def _lm_valid(out, lengths):
    """Logits at valid positions (t < lengths[b]); padded positions are free and read as 0."""
    if not isinstance(out, torch.Tensor) or out.dim() != 3 or out.shape[0] != len(lengths):
        return out
    keep = prefix(lengths, out.shape[1])[..., None]
    return out.detach().masked_fill(~keep, 0.0)


def _lm_logits(B, T, V, d, lengths, seed):
    def run(s):
        lengths_t = torch.tensor(lengths)
        return _lm_valid(s.call("tiny_lm_logits", _lm_tokens(B, T, V, seed), lengths_t, _lm_params(V, d, seed + 1)),
                         lengths_t)
    return run


for _i, _kw in enumerate([dict(B=2, T=4, V=6, d=4, lengths=[4, 2]),
                          dict(B=3, T=5, V=5, d=6, lengths=[1, 5, 3]),
                          dict(B=1, T=3, V=4, d=2, lengths=[3]),
                          dict(B=2, T=6, V=9, d=8, lengths=[6, 6])]):
    probe(LM, "tiny_lm_logits")(_lm_logits(seed=1300 + 10 * _i, **_kw))


@probe(LM, "tiny_lm_logits")
def _lm_logits_extra_padding(s):
    """A batch padded beyond its longest sequence (T = 6 > max(lengths) = 4): the valid logits, or
    'unusable' when the call fails or does not give (B, T, V) (a mask or an encoding sized by
    lengths.max() instead of T fails either way)."""
    B, T, V, d, lengths = 2, 6, 7, 4, torch.tensor([3, 4])
    try:
        out = s.call("tiny_lm_logits", _lm_tokens(B, T, V, 1350), lengths, _lm_params(V, d, 1351))
    except PropertyFailure as f:  # observe() reads these three as usual
        if isinstance(f, MissingFunction) or f.kind == "missing" or "in place" in (f.en or ""):
            raise
        return "unusable"
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (B, T, V):
        return "unusable"
    return _lm_valid(out, lengths)


def _lm_loss(B, T, V, d, lengths, seed):
    def run(s):
        return s.call("tiny_lm_loss", _lm_tokens(B, T, V, seed), torch.tensor(lengths), _lm_params(V, d, seed + 1))
    return run


for _i, _kw in enumerate([dict(B=2, T=4, V=6, d=4, lengths=[4, 2]),
                          dict(B=3, T=5, V=5, d=2, lengths=[2, 5, 3]),
                          dict(B=2, T=6, V=7, d=4, lengths=[3, 4]),
                          dict(B=1, T=3, V=4, d=6, lengths=[3])]):
    probe(LM, "tiny_lm_loss")(_lm_loss(seed=1400 + 10 * _i, **_kw))


def _losses(res):
    """train_tiny_lm's result as a list of floats (a 1-D tensor or a list of 0-dim tensors too)."""
    if isinstance(res, torch.Tensor) and res.dim() == 1:
        res = res.tolist()
    if not isinstance(res, (tuple, list)):
        return None
    try:
        return [float(v) for v in res]
    except (TypeError, ValueError, RuntimeError):
        return None


def _trend(losses):
    """'up': every step up until the losses (perhaps) overflow for good; 'flat': all equal;
    'down': the last below the first; 'not finite'; 'other'."""
    n = next((i for i, v in enumerate(losses) if not math.isfinite(v)), len(losses))
    head, tail = losses[:n], losses[n:]
    if n >= 2 and all(y > x for x, y in zip(head, head[1:])) and not any(math.isfinite(v) for v in tail):
        return "up"
    if tail or not head:
        return "not finite"
    if all(v == head[0] for v in head):
        return "flat"
    return "down" if head[-1] < head[0] else "other"


def _same_losses(a, b):
    return a is not None and b is not None and len(a) == len(b) and \
        all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))


@probe(LM, "train_tiny_lm")
def _lm_train(s):
    """Data, hyper-parameters and the loss values are free: only facts are compared.  Eight steps
    with seed 3 (global state 111), one again (global state 222), eight with seed 4: the number of
    losses, same seed -> the same first loss (before any update: a schedule over `steps` may change
    the later ones), another seed -> other losses, and the trend of both seeds' losses.  'up' (at
    every step, until they overflow) is what stepping along the gradient gives; Adam with a step
    far too large rises for a few steps, then falls back ('other')."""
    steps = 8
    torch.manual_seed(111)
    res = s.call("train_tiny_lm", 3, steps)
    a = _losses(res)
    if a is None:
        return _kind(res)
    torch.manual_seed(222)
    b = _losses(s.call("train_tiny_lm", 3, 1))
    c = _losses(s.call("train_tiny_lm", 4, steps))
    return [len(a), _same_losses(a[:1], b), _same_losses(a, c), _trend(a), _trend(c) if c is not None else None]


@probe(LM, "train_tiny_lm")
def _lm_train_init(s):
    """Is init_tiny_lm deterministic (another global state)?  Tells a training run that is not
    reproducible because of its data from one that is not because of its init."""
    torch.manual_seed(333)
    a = s.call("init_tiny_lm", 10, 16, 3)
    torch.manual_seed(444)
    b = s.call("init_tiny_lm", 10, 16, 3)
    try:
        return all(torch.equal(x, y) for x, y in zip(a, b))
    except Exception:  # noqa: BLE001 - not tensors: compare as they are
        return [a, b]


# ---------------------------------------------------------------- observations


def encode(x):
    """A comparable, plain description of what a probe returned."""
    if isinstance(x, torch.Tensor):
        t = x.detach()
        vals = t.to(torch.float64) if t.is_floating_point() else t.to(torch.int64)
        return ("T", str(t.dtype), tuple(t.shape), vals)
    if isinstance(x, (tuple, list)):
        return ("L", "seq", tuple(encode(v) for v in x))  # a list reads as a tuple
    if isinstance(x, dict):
        return ("D", tuple(sorted((str(k), encode(v)) for k, v in x.items())))
    if x is None or isinstance(x, (bool, int, float, str)):
        return ("P", type(x).__name__, x)
    return ("O", type(x).__name__)


def same(a, b):
    if a[0] != b[0]:
        return False
    if a[0] == "T":
        if a[1] != b[1] or a[2] != b[2]:
            return False
        if a[3].dtype == torch.float64:
            return bool(torch.isclose(a[3], b[3], atol=ATOL, rtol=RTOL, equal_nan=True).all())
        return bool((a[3] == b[3]).all())
    if a[0] == "L":
        return len(a[2]) == len(b[2]) and all(same(x, y) for x, y in zip(a[2], b[2]))
    if a[0] == "D":
        return [k for k, _ in a[1]] == [k for k, _ in b[1]] and all(same(x, y) for (_, x), (_, y) in zip(a[1], b[1]))
    if a[0] == "P":
        if a[1] != b[1]:
            return False
        if a[1] == "float":
            x, y = a[2], b[2]
            return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=RTOL, abs_tol=ATOL)
        return a[2] == b[2]
    return a == b


def observe(student, fn):
    """One probe on one student: its encoded result, or what went wrong."""
    try:
        with torch.enable_grad():
            return encode(fn(student))
    except TestTimeout:
        raise
    except MissingFunction:
        return ("missing",)
    except PropertyFailure as f:
        if f.kind == "missing":
            return ("missing",)
        if "in place" in (f.en or ""):
            return ("inplace",)
        return ("error",)
    except Exception:  # noqa: BLE001 - the probe could not use what came back
        return ("error",)


def observations(student, exercise, function):
    return [observe(student, fn) for fn in PROBES.get(exercise, {}).get(function, [])]


def agree(xs, ys):
    return len(xs) == len(ys) and all(same(x, y) for x, y in zip(xs, ys))


# ---------------------------------------------------------------- trusted namespaces


class _Namespace:
    """What a Submission offers the harness' Student, for one trusted namespace."""

    def __init__(self, ns):
        self.ns, self.load_errors = ns, []

    def get(self, name, prefer=None):
        return self.ns.get(name)


def _trusted_student(exercise, code=None):
    from .properties._harness import Student

    src = reference_solution(exercise).read_text(encoding="utf-8")
    ns = {"__name__": f"catalogue_{exercise}"}
    exec(compile(src + ("\n\n" + code if code else ""), f"<catalogue {exercise}>", "exec"), ns)  # noqa: S102 - trusted
    return Student(_Namespace(ns), (), exercise)


class _Trusted:
    """A trusted namespace (the reference, or the reference with one mistake) whose probe
    observations are computed when first needed and kept: most mistakes differ from a student
    on the first probe or two, so most are never run in full."""

    def __init__(self, exercise, entry=None):
        self.exercise, self.entry = exercise, entry
        self._student, self._obs = None, {}

    def obs(self, function, i):
        key = (function, i)
        if key not in self._obs:
            if self._student is None:
                try:
                    self._student = _trusted_student(self.exercise, self.entry["code"] if self.entry else None)
                except Exception:  # noqa: BLE001 - a broken entry never matches (test_diagnosis flags it)
                    self._student = False
            if self._student is False:
                return ("broken",)
            with torch.random.fork_rng():
                self._obs[key] = observe(self._student, PROBES[self.exercise][function][i])
        return self._obs[key]

    def all(self, function):
        return [self.obs(function, i) for i in range(len(PROBES[self.exercise].get(function, [])))]

    def agrees_with(self, function, theirs):
        """Every probe of `function` gives what `theirs` holds (stops at the first difference)."""
        n = len(PROBES[self.exercise].get(function, []))
        return len(theirs) == n and all(same(theirs[i], self.obs(function, i)) for i in range(n))


_CACHE = {}


def _trusted(exercise):
    """(reference, [mistake]) of an exercise, as _Trusted namespaces (kept for the process)."""
    if exercise not in _CACHE:
        _CACHE[exercise] = (_Trusted(exercise), [_Trusted(ex, e) for ex, e in load_catalogue(exercise)
                                                 if e.get("diagnosis", True)])
    return _CACHE[exercise]


def signatures(exercise):
    """Every observation, computed in full: {"reference": {function: obs},
    "mistakes": [(entry, {function: obs})]} (for the tests of the catalogue)."""
    ref, mistakes = _trusted(exercise)
    functions = list(PROBES.get(exercise, {}))
    return {"reference": {f: ref.all(f) for f in functions},
            "mistakes": [(m.entry, {f: m.all(f) for f in functions}) for m in mistakes]}


def describe(entry):
    """What the report shows: the entry's (or its group's) id, function, title, explanation, hint."""
    src = entry.get("group") or entry
    d = {"id": src["id"], "function": entry["function"]}
    for key in ("title", "explanation", "hint"):
        for lang in ("zh", "en"):
            d[f"{key}_{lang}"] = (src.get(key) or {}).get(lang, "")
    if entry.get("group"):
        d["members"] = [entry["id"]]
    return d


# ---------------------------------------------------------------- the diagnosis


def diagnose(student, exercise, functions, deadline=None, into=None):
    """{function: [mistake description]} for the given (failing) functions; [] where nothing matches.

    `deadline`: a time.monotonic() after which the diagnosis gives up (functions not reached get
    nothing); `into`: a dict filled as functions are done (kept if the caller's alarm fires).
    Never raises but TestTimeout (the caller's alarm)."""
    if not PROBES.get(exercise):
        return {f: [] for f in functions}  # no probes for this exercise: never guess
    ref, mistakes = _trusted(exercise)
    seen = {}  # function -> the student's observations (None: could not observe)

    def obs(f):
        if f not in seen:
            if deadline is not None and time.monotonic() > deadline:
                seen[f] = None
            else:
                got = observations(student, exercise, f)
                seen[f] = None if any(o == ("missing",) for o in got) else got
        return seen[f]

    out = {} if into is None else into
    for f in functions:
        if f not in PROBES[exercise]:
            out[f] = []
            continue
        mine = obs(f)
        if mine is None or ref.agrees_with(f, mine):
            out[f] = []
            continue  # missing, out of time, or behaves like the reference on every probe
        found = []
        for m in mistakes:
            # the student differs from the reference, so a mistake that agrees with the student
            # on every probe differs from the reference too
            if not m.agrees_with(f, mine):
                continue
            g = m.entry["function"]
            if g != f:  # a mistake of another function that f uses: the student's g must have it
                theirs = obs(g)
                if theirs is None or ref.agrees_with(g, theirs) or not m.agrees_with(g, theirs):
                    continue
            found.append(m.entry)
        out[f] = _merge(describe(e) for e in found)
    return out


def _merge(descriptions):
    """One description per id: a group's members are listed together."""
    merged = {}
    for d in descriptions:
        if d["id"] in merged:
            merged[d["id"]].setdefault("members", []).extend(d.get("members", []))
        else:
            merged[d["id"]] = d
    return list(merged.values())


def diagnose_outcomes(student, exercise, outcomes, functions_of, budget=5.0):
    """Attach `diagnosis` lists to the failed outcomes in place; returns {test: diagnosis} added.

    outcomes: {test name: outcome dict}; functions_of: test name -> function.  Guarded by an alarm
    of `budget` seconds; any problem gives no diagnosis."""
    failed = [n for n, o in outcomes.items() if isinstance(o, dict) and o.get("status") in FAILED]
    if not failed or budget <= 0:
        return {}
    # a function that timed out would most likely spend the whole budget on the first probe
    slow = {functions_of(n) for n in failed if outcomes[n].get("status") == "timeout"}
    functions = [f for f in dict.fromkeys(functions_of(n) for n in failed) if f not in slow]
    if not functions:
        return {}
    armed, old, found = False, None, {}
    try:
        if threading.current_thread() is threading.main_thread():  # an alarm needs the main thread
            old = signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, budget)
            armed = True
        diagnose(student, exercise, functions, deadline=time.monotonic() + budget, into=found)
    except TestTimeout:  # what was found before the alarm stands
        abort = getattr(student, "abort", None)
        if abort:
            try:
                abort()  # the worker may still be running the student's endless loop
            except Exception:  # noqa: BLE001
                pass
    except Exception:  # noqa: BLE001 - a diagnosis must never cost a result
        pass
    finally:
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old if old is not None else signal.SIG_DFL)
    added = {}
    for n in failed:
        d = found.get(functions_of(n)) or []
        if d:
            outcomes[n]["diagnosis"] = d
            added[n] = d
    return added


def _alarm(_signum, _frame):
    raise TestTimeout()
