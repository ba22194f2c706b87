"""Small, seeded inputs for the probes, and helpers to read what came back."""

import torch

from .registry import CallFailed


def generator(seed):
    """A CPU torch.Generator seeded with `seed`."""
    return torch.Generator().manual_seed(seed)


def rnd(shape, seed, scale=2.0, dtype=torch.float32):
    """Entries in [-scale, scale], two decimals, seeded."""
    x = torch.randint(-100, 101, tuple(shape), generator=generator(seed)).double() * (scale / 100)
    return x.to(dtype)


def bools(shape, seed, p=0.6, full_rows=True):
    """A random bool mask; full_rows: every query row keeps at least one allowed key."""
    m = torch.rand(tuple(shape), generator=generator(seed)) < p
    if full_rows:
        idx = torch.randint(0, shape[-1], tuple(shape[:-1]) + (1,), generator=generator(seed + 1))
        m = m.scatter(-1, idx, True)
    return m


def prefix(lengths, T):
    """(B, T) bool: t < lengths[b]."""
    return torch.arange(T)[None, :] < torch.as_tensor(lengths)[:, None]


def gradients(out_terms, leaves):
    """Gradients of sum(term * fixed weights) w.r.t. leaves (None -> zeros); 'nograd' when the graph
    is cut, 'not a tensor' when a term is not a float tensor (a CallFailed included)."""
    loss = 0
    for i, t in enumerate(out_terms):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            return "not a tensor"
        loss = loss + (t * rnd(t.shape, 900 + i, 1.0, torch.float64).to(t.dtype)).sum()
    if not isinstance(loss, torch.Tensor) or not loss.requires_grad:
        return "nograd"
    got = torch.autograd.grad(loss, leaves, allow_unused=True)
    return [torch.zeros_like(x) if g is None else g for g, x in zip(got, leaves)]


def finite(x):
    """True when every float entry is finite (lists too); a CallFailed is not finite."""
    if isinstance(x, CallFailed):
        return False
    if isinstance(x, torch.Tensor):
        return bool(torch.isfinite(x.detach()).all()) if x.is_floating_point() else True
    if isinstance(x, (list, tuple)):
        return all(finite(v) for v in x)
    return True


def query_rows(x, keep):
    """x[..., keep, :] restricted to the query rows `keep` (bool over Tq) when shapes allow."""
    try:
        return x.detach()[..., keep, :]
    except Exception:  # noqa: BLE001 - an odd shape (or a CallFailed): compare it whole
        return x


def kind_of(res):
    """What came back, as types, shapes and dtypes (for results that are not the expected tensors)."""
    if isinstance(res, CallFailed):
        return res
    if isinstance(res, (tuple, list)):
        return (
            "kind",
            tuple(
                (type(x).__name__, tuple(x.shape), str(x.dtype)) if isinstance(x, torch.Tensor) else type(x).__name__
                for x in res[:3]
            ),
            len(res),
        )
    return ("kind", type(res).__name__)


def outcome(s, name, *args, **kwargs):
    """What a call with arguments the contract rejects does (`s` a Guarded student): "ValueError",
    "other exception", or the shapes (and dtypes) of what it returned instead."""
    if s.raises(ValueError, name, *args, **kwargs) is True:
        return "ValueError"
    out = s.call(name, *args, **kwargs)
    if isinstance(out, CallFailed):
        return "other exception" if out.kind == "error" else out
    items = out if isinstance(out, (tuple, list)) else [out]
    return tuple((tuple(x.shape), str(x.dtype)) if isinstance(x, torch.Tensor) else type(x).__name__ for x in items)


def global_state_moves(s, name, *calls):
    """Do calls of `name` (each an argument tuple) leave the global random states alone?  One flag
    per call: the state changed across it (torch.manual_seed inside leaves a state that depends on
    the seed; unseeded global draws move it on every call)."""
    s.lookup(name)  # other files load (and run their top-level code) before the state is read
    states = [s.global_random_state()]
    for args in calls:
        s.call(name, *args)
        states.append(s.global_random_state())
    return [a != b for a, b in zip(states, states[1:])]
