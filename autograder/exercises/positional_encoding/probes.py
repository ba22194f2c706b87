"""Probes of the `positional_encoding` exercise: sinusoidal_encoding, add_positional_encoding."""

import torch

from ...checks.elsewhere import put_elsewhere
from ...diagnose.inputs import rnd
from ...diagnose.registry import probe
from ..masks.probes import where

EX = "positional_encoding"


@probe(EX, "sinusoidal_encoding")
def encoding_values(s):
    """sinusoidal_encoding of a few sizes and bases."""
    return [
        s.call("sinusoidal_encoding", 5, 6),
        s.call("sinusoidal_encoding", 1, 2),
        s.call("sinusoidal_encoding", 4, 8, 100.0),
        s.call("sinusoidal_encoding", 3, 4, base=50.0),
        s.call("sinusoidal_encoding", 7, 10),
    ]


@probe(EX, "sinusoidal_encoding")
def encoding_rejects_odd_d(s):
    """sinusoidal_encoding with an odd d: ValueError?"""
    return [s.raises(ValueError, "sinusoidal_encoding", 3, 5), s.raises(ValueError, "sinusoidal_encoding", 2, 1)]


def added_encoding(shape, seed, dtype=torch.float32):
    """A probe: add_positional_encoding of a seeded X of `shape` and `dtype`."""

    def run(s):
        return s.call("add_positional_encoding", rnd(shape, seed, dtype=dtype))

    run.__name__ = f"added_encoding_{'x'.join(map(str, shape))}"
    return run


# (B, T, d): B != T, B == T (an encoding added along the batch axis runs only there), B == 1, float64
for _i, (_shape, _dtype) in enumerate(
    [
        ((2, 4, 6), torch.float32),
        ((3, 3, 4), torch.float32),
        ((1, 5, 2), torch.float32),
        ((2, 3, 4), torch.float64),
        ((4, 2, 4), torch.float32),
    ]
):
    probe(EX, "add_positional_encoding")(added_encoding(_shape, 10 + _i, _dtype))


@probe(EX, "add_positional_encoding", on_device=True)
def added_encoding_elsewhere(s):
    """X on a device other than the CPU: where the output came back, and the output."""
    out = s.call("add_positional_encoding", put_elsewhere(rnd((2, 3, 4), 20)))
    return [where(s, out), out]
