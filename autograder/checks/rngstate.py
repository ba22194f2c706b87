"""The global random states a seeded function must leave alone, as one short digest.

The contract says of mlm_mask, init_tiny_lm and run_experiment that all randomness comes from a
`torch.Generator()` seeded from the argument and that "the global random state is not used".  A
function that calls `torch.manual_seed(seed)` and then draws from the global generator repeats
itself (determinism holds) but changes its caller's random state.  No return value shows that;
the state of the process that ran the function does.  `digest()` hashes the three global
states a student can reach: torch's default CPU generator, numpy's legacy global RandomState
(`np.random.seed`) and Python's `random`.  A property takes it before and after each call.

The getters are bound when this module is imported, which happens in the grader before any
student code runs (worker.py imports it): a submission that rebinds `torch.default_generator`,
`np.random` or `random.getstate` changes nothing here, and `torch.rand` keeps using the C default
generator whose state is read.
"""

import hashlib
import random

import numpy as np
import torch

_TORCH = torch.default_generator.get_state
_NUMPY = np.random.mtrand._rand.get_state
_PYTHON = random._inst.getstate


def digest():
    """A hex digest of torch's, numpy's and Python's global random states."""
    h = hashlib.sha256()
    h.update(_TORCH().numpy().tobytes())
    name, keys, pos, has_gauss, cached = _NUMPY()
    h.update(np.asarray(keys).tobytes())
    h.update(repr((name, pos, has_gauss, cached)).encode())
    h.update(repr(_PYTHON()).encode())
    return h.hexdigest()[:32]
