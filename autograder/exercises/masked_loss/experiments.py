"""The explanation by part of the `masked_loss` exercise (the engine: autograder/diagnose/parts/):
the loss summed over other tokens or divided by another count, softmax applied first, a class
ignored, the logits clamped or rounded, a lower precision, and label smoothing read off the
student's outputs."""

import torch

from ...diagnose.parts.base import (
    Call,
    Variant,
    _close,
    _gen,
    _rnd,
    _value,
)

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


# ---------------------------------------------------------------- the interface the engine calls

FUNCTIONS = ("masked_cross_entropy",)
FITS = {"masked_cross_entropy": _loss_fits}  # variants whose constant is read off the student's outputs


def setup(function, ref_ns):
    """(calls, variants) of `function`, or None."""
    if function == "masked_cross_entropy":
        return _loss_calls(ref_ns), _loss_variants()
    return None
