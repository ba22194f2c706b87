"""Probes of the `attention` exercise: scaled_dot_product_attention, MultiHeadAttention."""

import torch

from ...diagnose.inputs import bools, finite, gradients, prefix, query_rows, rnd
from ...diagnose.registry import probe

EX = "attention"
SDPA = "scaled_dot_product_attention"
MHA = "MultiHeadAttention"


def attention_call(lead, Tq, Tk, dk, dv, seed, mask=None, dtype=torch.float32, grad=False, empty=None, far=False):
    """One call of the attention function.  mask: None, a shape (random, every row kept) or 'causal';
    empty: a query row left with no allowed key (its values are free: only finiteness is read);
    far: every score far below 0 (Q ~ -15, K ~ +15), where exp underflows in float32."""

    def run(s):
        Q, K, V = (rnd(lead + (T, d), seed + j, dtype=dtype) for j, (T, d) in enumerate([(Tq, dk), (Tk, dk), (Tk, dv)]))
        if far:
            Q, K = Q / 3 - 15, K / 3 + 15
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
            obs = {"out": out, "weights": w}
            if grad:
                obs["gradient"] = gradients([out, w], leaves)
            return obs
        keep = torch.ones(Tq, dtype=torch.bool)
        keep[empty] = False
        obs = {
            "out": query_rows(out, keep),
            "weights": query_rows(w, keep),
            "finite out (a query with no allowed key)": finite(out),
            "finite weights (a query with no allowed key)": finite(w),
        }
        if grad:
            g = gradients([out, w], leaves)
            obs["finite gradient (a query with no allowed key)"] = g if isinstance(g, str) else finite(g)
        return obs

    run.__name__ = (
        f"attention_{Tq}x{Tk}"
        + (f"_{mask if isinstance(mask, str) else 'mask'}" if mask else "")
        + ("_far_below_0" if far else "")
    )
    return run


for _i, _kw in enumerate(
    [
        dict(lead=(), Tq=3, Tk=5, dk=4, dv=2),
        dict(lead=(2,), Tq=4, Tk=4, dk=3, dv=5, mask="causal"),
        dict(lead=(2, 2), Tq=3, Tk=5, dk=4, dv=3, mask=(2, 1, 1, 5)),
        dict(lead=(2,), Tq=2, Tk=3, dk=2, dv=2, mask=(2, 2, 3), dtype=torch.float64),
        dict(lead=(1, 3), Tq=4, Tk=2, dk=5, dv=2, mask=(4, 2)),
        dict(lead=(2,), Tq=3, Tk=4, dk=2, dv=3, mask=(2, 3, 4), grad=True),
        dict(lead=(2, 2), Tq=2, Tk=3, dk=3, dv=2, grad=True),
        dict(lead=(2,), Tq=3, Tk=4, dk=2, dv=3, mask=(2, 3, 4), empty=1),
        dict(lead=(2,), Tq=3, Tk=3, dk=2, dv=2, mask=(3, 3), empty=0, grad=True),
        dict(lead=(2,), Tq=3, Tk=4, dk=4, dv=2, mask=(2, 3, 4), far=True),
    ]
):
    probe(EX, SDPA)(attention_call(seed=100 + 10 * _i, **_kw))


def mha_params(d, bias, seed):
    """MultiHeadAttention's four d x d weights (and biases when `bias`), seeded."""
    P = {}
    for j, name in enumerate(("W_q", "W_k", "W_v", "W_o")):
        P[name] = rnd((d, d), seed + j, 0.6)
        if bias:
            P[name + ".bias"] = rnd((d,), seed + 10 + j, 0.3)
    return P


def mha_call(d, H, bias, B, Tq, Tk, seed, mask=None, self_attn=False, grad=False, zero_q=False, before=None):
    """One forward of the student's module with fixed weights.  grad: also the gradients with
    respect to x_q and x_kv (a mistake in the student's own attention function that shows only in
    gradients shows here too).  zero_q: x_q is 0 (queries are W_q's bias alone), so that whatever
    adds x_q to a result (a residual) cannot matter."""

    def run(s):
        P = mha_params(d, bias, seed)
        mha = s.new(MHA, d, H, bias=bias)
        layout = []
        with torch.no_grad():
            for name in ("W_q", "W_k", "W_v", "W_o"):
                lin = getattr(mha, name, None)
                w, b = getattr(lin, "weight", None), getattr(lin, "bias", None)
                layout.append(
                    (
                        tuple(w.shape) if isinstance(w, torch.Tensor) else None,
                        tuple(b.shape) if isinstance(b, torch.Tensor) else None,
                    )
                )
                if isinstance(w, torch.Tensor) and tuple(w.shape) == (d, d):
                    w.copy_(P[name])
                if isinstance(b, torch.Tensor) and tuple(b.shape) == (d,):
                    b.copy_(P[name + ".bias"] if bias else rnd((d,), seed + 50, 0.3))
        x_q = torch.zeros(B, Tq, d) if zero_q else rnd((B, Tq, d), seed + 20)
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
        if before is not None:  # a forward on other inputs first: the module keeps nothing from it
            s.invoke(f"{MHA}.forward", mha, rnd((B, before[0], d), seed + 40), rnd((B, before[1], d), seed + 41))
        res = s.invoke(f"{MHA}.forward", mha, *args)
        obs = {"layout of W_q, W_k, W_v, W_o": layout}
        if isinstance(res, (tuple, list)) and len(res) == 2:
            obs["out"], obs["weights"] = res
            if grad:
                obs["gradient"] = gradients(list(res), leaves)
        else:
            obs["result"] = res
        return obs

    run.__name__ = (
        f"multi_head_{d}_{H}"
        + (f"_{mask if isinstance(mask, str) else 'mask'}" if mask else "")
        + ("_zero_queries" if zero_q else "")
        + (f"_after_a_call_{before[0]}x{before[1]}" if before else "")
    )
    return run


for _i, _kw in enumerate(
    [
        dict(d=4, H=2, bias=True, B=2, Tq=3, Tk=5),
        dict(d=6, H=3, bias=False, B=2, Tq=4, Tk=4, mask="causal", self_attn=True),
        dict(d=4, H=2, bias=True, B=2, Tq=4, Tk=4, mask="padding", self_attn=True),
        dict(d=6, H=2, bias=True, B=2, Tq=3, Tk=4, mask=(2, 2, 3, 4)),
        dict(d=8, H=4, bias=True, B=1, Tq=2, Tk=3, mask=(1, 1, 2, 3)),
        dict(d=4, H=2, bias=True, B=2, Tq=3, Tk=4, mask=(2, 1, 1, 4), grad=True),
        dict(d=4, H=2, bias=True, B=2, Tq=3, Tk=5, before=(3, 5)),
        dict(d=6, H=3, bias=True, B=2, Tq=2, Tk=4, before=(4, 2)),
    ]
):
    probe(EX, MHA)(mha_call(seed=300 + 100 * _i, **_kw))

# x_q = 0: a residual x_q + ... (or anything else scaling or adding x_q) cannot matter, so that a
# mistake in keys, values or the output projection is seen alone (d = 6, H = 2: d_head = 3 is not
# sqrt(d), so that scaling by d_head is not scaling by sqrt(d_model) there)
probe(EX, MHA, isolates=True)(mha_call(d=6, H=2, bias=True, B=2, Tq=2, Tk=3, seed=900, zero_q=True))


@probe(EX, MHA)
def multi_head_rejects_indivisible_width(s):
    """MultiHeadAttention with d not divisible by H: ValueError?"""
    return [s.raises(ValueError, MHA, 5, 2), s.raises(ValueError, MHA, 6, 4)]
