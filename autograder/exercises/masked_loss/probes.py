"""Probes of the `masked_loss` exercise: masked_cross_entropy."""

import torch

from ...diagnose.inputs import finite, generator, gradients, rnd
from ...diagnose.registry import CallFailed, probe

EX = "masked_loss"
CE = "masked_cross_entropy"


def loss_call(B, T, V, seed, mask, pad_targets=None, pad_logits=None, scale=3.0, grad=False):
    """One call: padded targets / logits set to a value (pad_targets, pad_logits), logits up to
    `scale`; grad: also the gradient at valid positions, and whether it is finite and exactly 0
    at padded ones."""

    def run(s):
        logits = rnd((B, T, V), seed, scale)
        targets = torch.randint(0, V, (B, T), generator=generator(seed + 1))
        m = torch.as_tensor(mask)
        if pad_targets is not None:
            targets = targets.masked_fill(~m, pad_targets)
        if pad_logits is not None:
            logits = logits.masked_fill(~m[..., None], pad_logits)
        if grad:
            logits.requires_grad_(True)
        loss = s.call(CE, logits, targets, m)
        if not grad:
            if scale > 100 and isinstance(loss, torch.Tensor) and not finite(loss):
                return "not finite"  # overflow: inf or NaN, whichever the unstable formula gives
            return loss
        if isinstance(loss, CallFailed):
            return loss
        g = gradients([loss], [logits])
        if isinstance(g, str):
            return {"loss": loss, "gradient": g}
        g = g[0]
        return {
            "loss": loss,
            "gradient at valid positions": g.masked_fill(~m[..., None], 0.0),
            "finite gradient at padded positions": finite(g[~m]),
            "gradient exactly 0 at padded positions": bool((g[~m] == 0).all()),
        }

    what = "_".join(f"{k}" for k, v in (("pad_targets", pad_targets), ("pad_logits", pad_logits)) if v is not None)
    run.__name__ = (
        f"loss_{B}x{T}x{V}"
        + (f"_{what}" if what else "")
        + ("_large" if scale > 100 else "")
        + ("_gradient" if grad else "")
    )
    return run


MASKS = [
    [[True, True, True, True], [True, True, False, False]],
    [[True, False, True, False], [False, True, True, True], [True, True, True, True]],
    [[True, True, False], [True, False, False]],
]
for _i, _kw in enumerate(
    [
        dict(B=2, T=4, V=5, mask=MASKS[0]),
        dict(B=3, T=4, V=3, mask=MASKS[1]),
        dict(B=2, T=3, V=4, mask=MASKS[2], pad_targets=7),
        dict(B=2, T=3, V=4, mask=MASKS[2], pad_targets=-1),
        dict(B=2, T=3, V=4, mask=MASKS[2], pad_logits=float("nan")),
        dict(B=2, T=4, V=5, mask=MASKS[0], scale=1e4),
        dict(B=3, T=4, V=3, mask=MASKS[1], grad=True),
        dict(B=2, T=3, V=4, mask=MASKS[2], pad_logits=float("nan"), grad=True),
        dict(B=2, T=3, V=4, mask=MASKS[2], pad_logits=float("inf"), grad=True),
    ]
):
    probe(EX, CE)(loss_call(seed=800 + 10 * _i, **_kw))


def uniform_logits(B, T, V, seed, mask):
    """Logits equal across the vocabulary at every position (each position its own constant):
    every token's loss is log V, so that how the log-probabilities are formed (smoothed, through
    a softmax...) cannot matter and only how the losses are summed and divided shows."""

    def run(s):
        logits = rnd((B, T, 1), seed, 2.0).expand(B, T, V).contiguous()
        targets = torch.randint(0, V, (B, T), generator=generator(seed + 1))
        return s.call(CE, logits, targets, torch.as_tensor(mask))

    run.__name__ = f"loss_{B}x{T}x{V}_uniform_logits"
    return run


for _i, (_shape, _mask) in enumerate([((3, 4, 3), MASKS[1]), ((2, 4, 5), MASKS[0])]):
    probe(EX, CE, isolates=True)(uniform_logits(*_shape, 900 + 10 * _i, _mask))


@probe(EX, CE)
def loss_rejects_empty_mask(s):
    """A mask with no valid token: ValueError?"""
    return s.raises(
        ValueError, CE, rnd((2, 3, 4), 890), torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3, dtype=torch.bool)
    )
