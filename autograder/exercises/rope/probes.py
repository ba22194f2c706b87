"""Probes of the `rope` exercise: rope_angles, apply_rope."""

import torch

from ...diagnose.inputs import outcome, rnd
from ...diagnose.registry import probe

EX = "rope"


@probe(EX, "rope_angles")
def angle_values(s):
    """rope_angles of a few sizes, offsets and bases."""
    return [
        s.call("rope_angles", 5, 6),
        s.call("rope_angles", 1, 2),
        s.call("rope_angles", 3, 4, offset=2),
        s.call("rope_angles", 4, 8, offset=3, base=100.0),
        s.call("rope_angles", 2, 10, offset=7),
    ]


@probe(EX, "rope_angles")
def angles_reject_odd_d(s):
    """rope_angles with an odd d: ValueError?"""
    return [s.raises(ValueError, "rope_angles", 3, 5), s.raises(ValueError, "rope_angles", 2, 1, offset=1)]


def rotated(shape, seed, dtype=torch.float32, **kw):
    """A probe: apply_rope of a seeded x of `shape` and `dtype`."""

    def run(s):
        return s.call("apply_rope", rnd(shape, seed, dtype=dtype), **kw)

    run.__name__ = f"rotated_{'x'.join(map(str, shape))}"
    return run


for _i, (_shape, _dtype, _kw) in enumerate(
    [
        ((5, 6), torch.float32, {}),
        ((2, 3, 4), torch.float32, {"offset": 2}),
        ((1, 2, 4, 8), torch.float32, {"offset": 1, "base": 100.0}),
        ((3, 4), torch.float64, {}),
        ((2, 6), torch.float32, {"offset": 7}),
        # past 1024 positions: what a fixed table of angles gets wrong
        ((1100, 4), torch.float32, {}),
    ]
):
    probe(EX, "apply_rope")(rotated(_shape, 1000 + _i, _dtype, **_kw))


@probe(EX, "apply_rope")
def apply_rope_rejects_odd_d(s):
    """apply_rope on an odd last axis: what comes out (a ValueError, or else)."""
    return [outcome(s, "apply_rope", rnd((3, 5), 1010)), outcome(s, "apply_rope", rnd((2, 2, 1), 1011))]
