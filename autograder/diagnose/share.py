"""Sharing the diagnosis' trusted work between the judges of one grading process, and between
the grading processes of one batch.

Most of a diagnosis' time goes into running the probes on trusted code: the reference, and every
catalogued mistake of the exercise in each of its forms (measured: 4.3 s of CPU for a cold
diagnosis of a two-defect function in-process, 0.5 s once those observations are known).  They
never depend on the student, yet each judge (forked per exercise) computed them again and threw
them away when it ended.  With sharing on (grade-batch: `ForkRunner(share=True)`):

    judge      every trusted namespace's observations (engine._Trusted._obs) is an `_Obs`:
               it starts with what earlier judges of this grading process computed (PENDING,
               inherited through fork) and records the CPU time of each observation it computes;
               `export()` after the diagnosis: the new ones, as bytes (torch.save)
               and the code texts of the mistakes it composed in pairs (engine.compositions:
               merging two entries' edits, the pair search's main cost)
    parent     `merge(data)` (torch.load, weights_only: tensors, tuples and plain values only)
               into PENDING and COMPOSITIONS, so that the judges forked after it start with them
    batch      an export that added something is also handed to the batch with the submission's
               result (ForkRunner.take_exports), which passes it to its other grading processes
               with their next submission (merge_exports; pool.py, and through the client to
               the other Dask workers: cluster.py): a process started later (the spare, a
               worker's second) starts warm instead of computing them all again

The judges stay exactly as they were without sharing: an observation taken from PENDING (or a
composition from COMPOSITIONS) is charged when first used, to the diagnosis' clock (engine._clock, the budget and the pair
search's limit) and to its function's probe time (the "slow function" rule), with the CPU time it
took when it was computed.  So a warm judge makes the decisions a cold one makes, only sooner, and
a batch's reports stay those of `grade` run on each submission alone.

Only trusted code ever fills these caches (the reference and the catalogue, run in the judge);
nothing a worker sends is part of them.
"""

import hashlib
import io
import time

PENDING = {}  # trusted namespace key -> {(function, probe index): (observation, cpu seconds)}
COMPOSITIONS = {}  # sha256 of (a, b, pivots) -> (engine.compositions' codes, cpu seconds)
_NEW_COMPOSITIONS = {}  # computed in this judge
MAX_BYTES = 64 << 20  # one judge's export, at most
_CREDIT = [0.0]  # CPU seconds of observations taken from PENDING, charged when first used
_LIVE = []  # this judge's _Obs
_ENABLED = [False]


def clock():
    """The diagnosis' clock in a judge with sharing: its CPU time plus what it did not recompute."""
    return time.process_time() + _CREDIT[0]


def key_of(trusted):
    """A stable name of a trusted namespace: its exercise, entry, code and origin."""
    entry = (trusted.entry or {}).get("id")
    code = repr((trusted.code, trusted.parts))
    return (trusted.exercise, entry, trusted.origin, hashlib.sha256(code.encode()).hexdigest())


class _Obs(dict):
    """A _Trusted's observations in a judge with sharing (see the module docstring)."""

    def __init__(self, owner, imported):
        super().__init__()
        self.owner = owner
        self.imported = {}
        for k, (value, cost) in (imported or {}).items():
            dict.__setitem__(self, k, value)
            self.imported[k] = cost
        self.started = {}
        self.cost = {}  # observations computed here: their CPU time

    def __contains__(self, key):
        found = dict.__contains__(self, key)
        if not found:
            self.started[key] = time.process_time()  # engine computes it now (_Trusted.obs)
        return found

    def __getitem__(self, key):
        cost = self.imported.pop(key, None)
        if cost is not None:  # charged as if it were computed now
            _CREDIT[0] += cost
            f = key[0]
            self.owner.seconds[f] = self.owner.seconds.get(f, 0.0) + cost
        return dict.__getitem__(self, key)

    def __setitem__(self, key, value):
        start = self.started.pop(key, None)
        if start is not None:
            self.cost[key] = time.process_time() - start
        dict.__setitem__(self, key, value)


def enable():
    """In a judge: every trusted namespace made from now on shares (idempotent)."""
    if _ENABLED[0]:
        return
    from . import engine

    _ENABLED[0] = True
    engine._clock = clock
    original = engine._Trusted.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        obs = _Obs(self, PENDING.get(key_of(self)))
        _LIVE.append(obs)
        self._obs = obs

    engine._Trusted.__init__ = init
    compose = engine.compositions
    charged = set()

    def compositions(a, b, pivots):
        key = hashlib.sha256(repr((a, b, list(pivots))).encode()).hexdigest()
        known = COMPOSITIONS.get(key)  # (a judge asks once per pair: engine._composed keeps them)
        if known is not None:
            if key not in charged:  # charged once, as computing it was
                charged.add(key)
                _CREDIT[0] += known[1]
            return list(known[0])
        start = time.process_time()
        out = compose(a, b, pivots)
        _NEW_COMPOSITIONS[key] = (list(out), time.process_time() - start)
        return out

    engine.compositions = compositions


def export():
    """The observations this judge computed, as bytes for `merge` (None when there are none)."""
    import torch

    out = {}
    for obs in _LIVE:
        new = {k: (dict.__getitem__(obs, k), c) for k, c in obs.cost.items() if dict.__contains__(obs, k)}
        if new:
            out.setdefault(key_of(obs.owner), {}).update(new)
    if not out and not _NEW_COMPOSITIONS:
        return None
    buf = io.BytesIO()
    torch.save({"obs": out, "compositions": dict(_NEW_COMPOSITIONS)}, buf)
    data = buf.getvalue()
    return data if len(data) <= MAX_BYTES else None


def merge(data):
    """Add a judge's export to PENDING (in the grading process); returns how many observations
    were new.  Never raises: sharing is an optimisation."""
    import torch

    if not isinstance(data, (bytes, bytearray)) or len(data) > MAX_BYTES:
        return 0
    try:
        got = torch.load(io.BytesIO(data), weights_only=True)
    except Exception:  # noqa: BLE001
        return 0
    n = 0
    if not isinstance(got, dict) or not isinstance(got.get("obs"), dict):
        return 0
    for key, value in (got.get("compositions") or {}).items():
        if (
            isinstance(key, str)
            and key not in COMPOSITIONS
            and isinstance(value, tuple)
            and len(value) == 2
            and isinstance(value[0], list)
            and all(isinstance(c, str) for c in value[0])
            and isinstance(value[1], float)
        ):
            COMPOSITIONS[key] = value
            n += 1
    for key, entries in got["obs"].items():
        if not isinstance(key, tuple) or not isinstance(entries, dict):
            continue
        slot = PENDING.setdefault(key, {})
        for k, v in entries.items():
            if k not in slot and isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], float):
                slot[k] = v
                n += 1
    return n
