"""Named hypothesis strategies shared by the property modules.

Values are drawn as multiples of 1/100 in a small range so that a shrunk counterexample is
readable by hand; every element is drawn on its own (no fill value), so examples are not
degenerate (a constant tensor would hide most attention bugs).
"""
import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


def sizes(lo=1, hi=4):
    """A dimension such as B, T, d or H."""
    return st.integers(lo, hi)


@st.composite
def float_tensors(draw, shape, lo=-2.0, hi=2.0, dtype=torch.float32):
    """A tensor of `shape` with entries in [lo, hi], two decimals."""
    shape = tuple(int(s) for s in shape)
    a = draw(hnp.arrays(np.int32, shape, elements=st.integers(int(lo * 100), int(hi * 100)), fill=st.nothing()))
    return torch.from_numpy(a.astype(np.float64) / 100).to(dtype)


@st.composite
def lengths_for(draw, B, T, lo=0):
    """(B,) int64 lengths in [lo, T]; the longest is T when lo >= 1 is not forced."""
    return torch.tensor(draw(st.lists(st.integers(lo, T), min_size=B, max_size=B)), dtype=torch.int64)


def padding_mask_ref(lengths, T):
    """Trusted reference: (B, T) bool, True = real token."""
    return torch.arange(T)[None, :] < lengths[:, None]
