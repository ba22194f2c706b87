"""When the diagnosis calls two values the same: one tolerance and one rule for every comparison
(a probe's result against the reference's, an experiment's variant against the student's output).

    near(a, b)          entry by entry, two tensors of one shape (NaN equals NaN)
    close(a, b)         two tensors, whole: one shape (a one-number tensor and a 0-dim alike), all near
    close_numbers(x, y) two Python floats

A wider tolerance (`scale` tolerances) says "clearly apart" (engine._clearly_apart)."""

import math

import torch

ATOL = RTOL = 1e-4


def near(a, b, scale=1.0):
    """A bool tensor: where a and b agree within `scale` tolerances (NaN agrees with NaN)."""
    return torch.isclose(a, b, atol=ATOL * scale, rtol=RTOL * scale, equal_nan=True)


def close(a, b):
    """True where two tensors are the same value: one shape (or one number each) and every entry near."""
    if a.shape != b.shape:
        if a.numel() == b.numel() == 1:
            a, b = a.reshape(()), b.reshape(())
        else:
            return False
    return bool(near(a, b).all())


def close_numbers(x, y):
    """Two floats within the tolerance (NaN equals NaN)."""
    return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=RTOL, abs_tol=ATOL)
