"""Probes of the `recurrent` exercise: lstm_cell, gru_cell, lstm_sequence."""

import torch

from ...diagnose.inputs import gradients, rnd
from ...diagnose.registry import probe

EX = "recurrent"


def weights(n_gates, d_in, d_h, seed, dtype=torch.float32):
    """(W_ih, W_hh, b_ih, b_hh) of a cell of `n_gates` gates, seeded."""
    return (
        rnd((n_gates * d_h, d_in), seed, 0.8, dtype),
        rnd((n_gates * d_h, d_h), seed + 1, 0.8, dtype),
        rnd((n_gates * d_h,), seed + 2, 0.5, dtype),
        rnd((n_gates * d_h,), seed + 3, 0.5, dtype),
    )


def lstm_step(B, d_in, d_h, seed, dtype=torch.float32, grad=False):
    """A probe: one lstm_cell step on seeded inputs (and its gradients when `grad`)."""

    def run(s):
        x = rnd((B, d_in), seed, 1.0, dtype)
        h, c = rnd((B, d_h), seed + 1, 1.0, dtype), rnd((B, d_h), seed + 2, 1.5, dtype)
        W = weights(4, d_in, d_h, seed + 3, dtype)
        leaves = [t.requires_grad_(True) for t in (x, h, c)] if grad else []
        res = s.call("lstm_cell", x, (h, c), *W)
        if grad and isinstance(res, (tuple, list)) and len(res) == 2:
            return {"h_new, c_new": res, "gradient": gradients(list(res), leaves)}
        return res

    run.__name__ = f"lstm_step_{B}x{d_in}x{d_h}"
    return run


for _i, _kw in enumerate(
    [
        dict(B=2, d_in=3, d_h=4),
        dict(B=3, d_in=2, d_h=2),
        dict(B=1, d_in=4, d_h=3, dtype=torch.float64),
        dict(B=2, d_in=2, d_h=3, grad=True),
    ]
):
    probe(EX, "lstm_cell")(lstm_step(seed=500 + 10 * _i, **_kw))


def gru_step(B, d_in, d_h, seed, dtype=torch.float32):
    """A probe: one gru_cell step on seeded inputs."""

    def run(s):
        x, h = rnd((B, d_in), seed, 1.0, dtype), rnd((B, d_h), seed + 1, 1.0, dtype)
        return s.call("gru_cell", x, h, *weights(3, d_in, d_h, seed + 3, dtype))

    run.__name__ = f"gru_step_{B}x{d_in}x{d_h}"
    return run


for _i, _kw in enumerate(
    [dict(B=2, d_in=3, d_h=4), dict(B=3, d_in=2, d_h=2), dict(B=1, d_in=4, d_h=3, dtype=torch.float64)]
):
    probe(EX, "gru_cell")(gru_step(seed=600 + 10 * _i, **_kw))


# Weights in which one part of a cell cannot matter, so that a mistake there hides and another one
# is seen alone (a cell with two gate mistakes: each probe shows one of them).  Inputs in [-1, 1],
# weights in [-0.8, 0.8]: a gate's pre-activation stays within +-8 of its bias.


def gru_isolated(B, d_in, d_h, seed, what):
    """`what`: "rz equal" (the r and z blocks alike: their order cannot matter), "no b_hn" (b_hh's n
    block 0), "linear n" (the n block's pre-activation small and positive: tanh(a) = a = relu(a)
    within the tolerance)."""

    def run(s):
        x, h = rnd((B, d_in), seed, 1.0), rnd((B, d_h), seed + 1, 1.0)
        W_ih, W_hh, b_ih, b_hh = weights(3, d_in, d_h, seed + 3)
        H = d_h
        if what == "rz equal":
            for t in (W_ih, W_hh, b_ih, b_hh):
                t[H : 2 * H] = t[:H]
        elif what == "no b_hn":
            b_hh[2 * H :] = 0
        elif what == "linear n":
            W_ih[2 * H :] = W_ih[2 * H :].abs() * 0.002
            W_hh[2 * H :] = W_hh[2 * H :].abs() * 0.002
            b_ih[2 * H :], b_hh[2 * H :] = 0.02, 0.01
            x, h = x.abs(), h.abs()
        return s.call("gru_cell", x, h, W_ih, W_hh, b_ih, b_hh)

    run.__name__ = f"gru_step_{B}x{d_in}x{d_h}_{what.replace(' ', '_')}"
    return run


for _i, _what in enumerate(["rz equal", "no b_hn", "linear n"]):
    probe(EX, "gru_cell", isolates=True)(gru_isolated(2, 3, 3, 640 + 10 * _i, _what))


def lstm_isolated(B, d_in, d_h, seed, gate):
    """One LSTM gate saturated at 1 (its bias +20): i (c = f c + g), g (tanh and sigmoid alike: 1)."""

    def run(s):
        x = rnd((B, d_in), seed, 1.0)
        h, c = rnd((B, d_h), seed + 1, 1.0), rnd((B, d_h), seed + 2, 1.5)
        W_ih, W_hh, b_ih, b_hh = weights(4, d_in, d_h, seed + 3)
        k = "ifgo".index(gate)
        b_ih[k * d_h : (k + 1) * d_h] += 20.0
        return s.call("lstm_cell", x, (h, c), W_ih, W_hh, b_ih, b_hh)

    run.__name__ = f"lstm_step_{B}x{d_in}x{d_h}_{gate}_saturated"
    return run


for _i, _gate in enumerate("ig"):
    probe(EX, "lstm_cell", isolates=True)(lstm_isolated(2, 2, 3, 560 + 10 * _i, _gate))


def lstm_over_padded_batch(lengths, T, d_in, d_h, seed, state=False, dtype=torch.float32, grad=False):
    """A probe: lstm_sequence over a padded batch of `lengths` (with an initial state, gradients when asked)."""

    def run(s):
        B = len(lengths)
        X = rnd((B, T, d_in), seed, 1.0, dtype)
        W = weights(4, d_in, d_h, seed + 3, dtype)
        kw = {}
        if state:
            kw["state"] = (rnd((B, d_h), seed + 1, 1.0, dtype), rnd((B, d_h), seed + 2, 1.0, dtype))
        if grad:
            X.requires_grad_(True)
        res = s.call("lstm_sequence", X, torch.tensor(lengths), *W, **kw)
        if grad:
            try:
                out, (h, c) = res
            except Exception:  # noqa: BLE001 - not (outputs, (h_n, c_n)): compare it as it is
                return res
            return {"outputs, (h_n, c_n)": res, "gradient": gradients([out, h, c], [X])}
        return res

    run.__name__ = f"lstm_sequence_{'_'.join(map(str, lengths))}_of_{T}"
    return run


for _i, _kw in enumerate(
    [
        dict(lengths=[4, 2, 1], T=4, d_in=2, d_h=3),
        dict(lengths=[3, 1], T=5, d_in=3, d_h=2, state=True),
        dict(lengths=[2, 3], T=3, d_in=2, d_h=2, dtype=torch.float64),
        dict(lengths=[3, 3], T=3, d_in=2, d_h=3, state=True),
        dict(lengths=[3, 2], T=3, d_in=2, d_h=2, grad=True),
        # past 64 (and 128) steps: what a fixed chunk or table of steps gets wrong
        dict(lengths=[150, 97], T=150, d_in=2, d_h=2),
    ]
):
    probe(EX, "lstm_sequence")(lstm_over_padded_batch(seed=700 + 10 * _i, **_kw))
