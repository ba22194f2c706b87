"""Experiments for timeseries' sliding_windows and make_datasets: the reference computed with one
argument altered (the horizon taken as 1, windows taken across the boundary between the periods,
statistics of other data).  Same rules as the package's variants."""

import torch

from ...diagnose.parts.base import Call, Variant, _rnd, _value

WINDOW_CASES = [(9, 2, 3, 2), (10, 1, 2, 3), (8, 2, 3, 1), (12, 1, 4, 4), (7, 3, 2, 2)]  # (N, F, window, horizon)
DATASET_CASES = [(16, 2, 10, 3, 2), (14, 1, 8, 2, 1), (18, 1, 11, 3, 3), (15, 2, 9, 2, 2)]  # (N, F, n_train, w, h)


def _series(N, F, seed):
    return _rnd((N, F), seed, 3.0).double() + torch.arange(N, dtype=torch.float64)[:, None] * 0.1


def _window_calls(ref_ns):
    calls = []
    for j, (N, F, w, h) in enumerate(WINDOW_CASES):
        s = _series(N, F, 9900 + j)

        def run(g, s=s, w=w, h=h):
            out = g.call("sliding_windows", s.clone(), w, h)
            return [_value(o) for o in out] if isinstance(out, (tuple, list)) and len(out) == 2 else [_value(out), None]

        call = Call(
            f"sliding_windows(series {N}×{F}, window={w}, horizon={h})",
            run,
            (lambda s=s, w=w, h=h: [_value(o) for o in ref_ns["sliding_windows"](s, w, h)]),
        )
        call.inputs = (s, w, h)
        calls.append(call)
    return calls


def _window_variants(ref_ns):
    def next_step(keep_m):
        def outs(i, call):
            s, w, h = call.inputs
            if h == 1:
                return None
            X, y = ref_ns["sliding_windows"](s, w, 1)
            if keep_m:  # the reference's number of windows, each target the next step
                M = s.shape[0] - w - h + 1
                X, y = X[:M], y[:M]
            return [_value(X), _value(y)]

        return outs

    return [
        Variant("horizon ignored", "part.ts_horizon_ignored", next_step(True)),
        Variant("horizon 1", "part.ts_horizon_one", next_step(False)),
    ]


def _dataset_calls(ref_ns):
    calls = []
    for j, (N, F, n, w, h) in enumerate(DATASET_CASES):
        s = _series(N, F, 9950 + j)

        def run(g, s=s, n=n, w=w, h=h):
            out = g.call("make_datasets", s.clone(), n, w, h)
            if isinstance(out, (tuple, list)) and len(out) == 6:
                return [_value(o) for o in out]
            return [_value(out)] + [None] * 5

        call = Call(
            f"make_datasets(series {N}×{F}, n_train={n}, window={w}, horizon={h})",
            run,
            (lambda s=s, n=n, w=w, h=h: [_value(o) for o in ref_ns["make_datasets"](s, n, w, h)]),
        )
        call.inputs = (s, n, w, h)
        calls.append(call)
    return calls


def _dataset_variants(ref_ns):
    def across(which):
        def outs(i, call):
            s, n, w, h = call.inputs
            ref = ref_ns["make_datasets"](s, n, w, h)
            mean, std = ref[4], ref[5]
            X, y = ref_ns["sliding_windows"]((s - mean) / std, w, h)
            target = torch.arange(X.shape[0]) + w - 1 + h  # the index of each window's target
            test = target >= n  # every window whose target lies in the test period, inputs in training too
            train = target < n  # (the reference's training windows)
            return [_value(X[train]), _value(y[train]), _value(X[test]), _value(y[test]), _value(mean), _value(std)]

        return outs

    return [Variant("test windows across the boundary", "part.ts_across_boundary", across("test by target"))]


# ---------------------------------------------------------------- the interface the engine calls

FUNCTIONS = ("sliding_windows", "make_datasets")


def setup(function, ref_ns):
    """(calls, variants) of `function`, or None."""
    if function == "sliding_windows":
        return _window_calls(ref_ns), _window_variants(ref_ns)
    if function == "make_datasets":
        return _dataset_calls(ref_ns), _dataset_variants(ref_ns)
    return None
