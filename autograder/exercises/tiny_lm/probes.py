"""Probes of the `tiny_lm` exercise: init_tiny_lm, tiny_lm_logits, tiny_lm_loss, train_tiny_lm, and
the parts the student pastes into it (padding_mask, causal_mask, sinusoidal_encoding,
scaled_dot_product_attention, masked_cross_entropy), probed as in their own exercises.

init_tiny_lm and train_tiny_lm are random: their probes compare only what the contract fixes."""

import math

import torch

from ...diagnose.inputs import finite, generator, global_state_moves, kind_of, prefix, rnd
from ...diagnose.registry import CallFailed, probe

EX = "tiny_lm"


def model_params(V, d, seed):
    """(E, W_q, W_k, W_v, W_o, W_out) float32, entries of about 1/sqrt(d) with two decimals."""
    shapes = [(V, d), (d, d), (d, d), (d, d), (d, d), (V, d)]
    return tuple(rnd(shape, seed + j, 1.7 / math.sqrt(d)) for j, shape in enumerate(shapes))


def tokens(B, T, V, seed):
    """A seeded (B, T) batch of token ids below V."""
    return torch.randint(0, V, (B, T), generator=generator(seed))


@probe(EX, "init_tiny_lm")
def init_facts(s):
    """Shapes, dtypes and finiteness (the distribution is free), and the seed: the same seed with
    another global state gives the same params, another seed other ones."""
    out = []
    for V, d, seed in [(5, 4, 0), (10, 16, 7)]:
        torch.manual_seed(12345)
        a = s.call("init_tiny_lm", V, d, seed)
        torch.manual_seed(54321)
        b = s.call("init_tiny_lm", V, d, seed)
        c = s.call("init_tiny_lm", V, d, seed + 1)
        if not all(
            isinstance(p, (tuple, list)) and len(p) == 6 and all(isinstance(x, torch.Tensor) for x in p)
            for p in (a, b, c)
        ):
            out.append(kind_of(a))
            continue
        out.append(
            [
                [(tuple(x.shape), str(x.dtype)) for x in a],
                finite(list(a)),
                all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, b)),
                all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, c)),
            ]
        )
    return out


def valid_logits(out, lengths):
    """Logits at valid positions (t < lengths[b]); padded positions are free and read as 0."""
    if not isinstance(out, torch.Tensor) or out.dim() != 3 or out.shape[0] != len(lengths):
        return out
    keep = prefix(lengths, out.shape[1])[..., None]
    return out.detach().masked_fill(~keep, 0.0)


def logits_call(B, T, V, d, lengths, seed):
    """A probe: tiny_lm_logits on a seeded batch, its valid logits."""

    def run(s):
        lengths_t = torch.tensor(lengths)
        return valid_logits(
            s.call("tiny_lm_logits", tokens(B, T, V, seed), lengths_t, model_params(V, d, seed + 1)), lengths_t
        )

    return run


for _i, _kw in enumerate(
    [
        dict(B=2, T=4, V=6, d=4, lengths=[4, 2]),
        dict(B=3, T=5, V=5, d=6, lengths=[1, 5, 3]),
        dict(B=1, T=3, V=4, d=2, lengths=[3]),
        dict(B=2, T=6, V=9, d=8, lengths=[6, 6]),
    ]
):
    probe(EX, "tiny_lm_logits")(logits_call(seed=1300 + 10 * _i, **_kw))


@probe(EX, "tiny_lm_logits")
def logits_with_extra_padding(s):
    """A batch padded beyond its longest sequence (T = 6 > max(lengths) = 4): the valid logits, or
    'unusable' when the call fails or does not give (B, T, V) (a mask or an encoding sized by
    lengths.max() instead of T fails either way)."""
    B, T, V, d, lengths = 2, 6, 7, 4, torch.tensor([3, 4])
    out = s.call("tiny_lm_logits", tokens(B, T, V, 1350), lengths, model_params(V, d, 1351))
    if isinstance(out, CallFailed) and out.kind == "inplace":
        return out
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (B, T, V):
        return "unusable"
    return valid_logits(out, lengths)


def loss_call(B, T, V, d, lengths, seed):
    """A probe: tiny_lm_loss on a seeded batch."""

    def run(s):
        return s.call("tiny_lm_loss", tokens(B, T, V, seed), torch.tensor(lengths), model_params(V, d, seed + 1))

    return run


for _i, _kw in enumerate(
    [
        dict(B=2, T=4, V=6, d=4, lengths=[4, 2]),
        dict(B=3, T=5, V=5, d=2, lengths=[2, 5, 3]),
        dict(B=2, T=6, V=7, d=4, lengths=[3, 4]),
        dict(B=1, T=3, V=4, d=6, lengths=[3]),
    ]
):
    probe(EX, "tiny_lm_loss")(loss_call(seed=1400 + 10 * _i, **_kw))


def as_losses(res):
    """train_tiny_lm's result as a list of floats (a 1-D tensor or a list of 0-dim tensors too)."""
    if isinstance(res, torch.Tensor) and res.dim() == 1:
        res = res.tolist()
    if not isinstance(res, (tuple, list)):
        return None
    try:
        return [float(v) for v in res]
    except (TypeError, ValueError, RuntimeError):
        return None


def trend(losses):
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


def same_losses(a, b):
    """Are two lists of losses equal (NaN equal to NaN)?"""
    return (
        a is not None
        and b is not None
        and len(a) == len(b)
        and all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))
    )


@probe(EX, "train_tiny_lm")
def training_facts(s):
    """Data, hyper-parameters and the loss values are free: only facts are compared.  Eight steps
    with seed 3 (global state 111), one again (global state 222), eight with seed 4: the number of
    losses, same seed -> the same first loss (before any update: a schedule over `steps` may change
    the later ones), another seed -> other losses, and the trend of both seeds' losses.  'up' (at
    every step, until they overflow) is what stepping along the gradient gives; Adam with a step
    far too large rises for a few steps, then falls back ('other')."""
    steps = 8
    torch.manual_seed(111)
    res = s.call("train_tiny_lm", 3, steps)
    a = as_losses(res)
    if a is None:
        return kind_of(res)
    torch.manual_seed(222)
    b = as_losses(s.call("train_tiny_lm", 3, 1))
    c = as_losses(s.call("train_tiny_lm", 4, steps))
    return [len(a), same_losses(a[:1], b), same_losses(a, c), trend(a), trend(c) if c is not None else None]


@probe(EX, "train_tiny_lm")
def training_init_is_seeded(s):
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


# ---------------------------------------------------------------- the pasted parts

# A part is probed exactly as in its own exercise: a mistake in it is then named after that
# exercise's catalogue entry (engine.part_mistakes), and preferred to a model mistake that only
# looks the same from outside (an off-by-one padding mask looks like a loss counting one position
# too many).
PARTS = {
    "padding_mask": "masks",
    "causal_mask": "masks",
    "sinusoidal_encoding": "positional_encoding",
    "scaled_dot_product_attention": "attention",
    "masked_cross_entropy": "masked_loss",
}


def _register_parts():
    from ...diagnose.registry import PROBES
    from ..attention import probes as _attention  # noqa: F401 - each registers its probes
    from ..masked_loss import probes as _masked_loss  # noqa: F401
    from ..masks import probes as _masks  # noqa: F401
    from ..positional_encoding import probes as _positional_encoding  # noqa: F401

    for function, exercise in PARTS.items():
        for run in PROBES[exercise][function]:
            if not run.on_device:  # tiny_lm runs its parts on the CPU only
                probe(EX, function)(run)


_register_parts()


@probe(EX, "init_tiny_lm")
def init_leaves_global_random_state_alone(s):
    """Do two inits (seeds 3, 4) leave the global random states alone?"""
    return global_state_moves(s, "init_tiny_lm", (5, 4, 3), (5, 4, 4))


@probe(EX, "tiny_lm_logits")
def logits_keep_float64(s):
    """float64 params: the logits keep their dtype (and values)."""
    lengths = torch.tensor([4, 2])
    params = tuple(p.double() for p in model_params(6, 4, 1361))
    return valid_logits(s.call("tiny_lm_logits", tokens(2, 4, 6, 1360), lengths, params), lengths)


@probe(EX, "train_tiny_lm")
def training_returns_floats(s):
    """A list (or tuple) of Python floats, or what came back instead."""
    res = s.call("train_tiny_lm", 3, 2)
    if isinstance(res, (list, tuple)):
        return [len(res), all(isinstance(v, float) for v in res)]
    return kind_of(res)
