"""Probes of the `timeseries` exercise: chronological_split, fit_standardizer, sliding_windows,
make_datasets."""

from ...diagnose.inputs import outcome, rnd
from ...diagnose.registry import probe

EX = "timeseries"


def series(N, F, seed, constant=None):
    """A seeded (N, F) series; feature `constant` constant (its std exactly 0)."""
    x = rnd((N, F), seed, 2.0)
    if constant is not None:
        x[:, constant] = 0.75  # exact in binary: a mean of it is exact, its std exactly 0
    return x


def split_facts(series_, n, res):
    """A split seen as facts, so that any shuffle reads the same: shapes, prefix / suffix in
    order, a permutation of the rows, rows in time order."""
    import torch

    train, test = res
    rows = [tuple(r) for r in series_.tolist()]
    idx = [rows.index(tuple(r)) if tuple(r) in rows else -1 for r in torch.cat([train, test]).tolist()]
    return [
        tuple(train.shape),
        tuple(test.shape),
        train.dtype == series_.dtype,
        bool(torch.equal(train, series_[:n])),
        bool(torch.equal(test, series_[n:])),
        sorted(idx) == list(range(len(rows))),
        idx == sorted(idx),
    ]


@probe(EX, "chronological_split")
def split_in_time_order(s):
    """chronological_split of a few series, read as facts (shapes, order, prefix and suffix)."""
    out = []
    for N, F, n, seed in [(8, 2, 5, 1100), (6, 1, 1, 1101), (5, 3, 4, 1102)]:
        x = series(N, F, seed)
        res = s.call("chronological_split", x, n)
        try:
            out.append(split_facts(x, n, res))
        except Exception:  # noqa: BLE001 - not two tensors of rows (or a failed call): compare it as it is
            out.append(res)
    return out


@probe(EX, "chronological_split")
def split_rejects_empty_periods(s):
    """chronological_split leaving a period empty: ValueError?"""
    return [s.raises(ValueError, "chronological_split", series(5, 2, 1103), n) for n in (0, 5, 7)]


@probe(EX, "fit_standardizer")
def standardizer_values(s):
    """fit_standardizer of a few series, a constant feature among them."""
    return [
        s.call("fit_standardizer", series(6, 3, 1110)),
        s.call("fit_standardizer", series(5, 2, 1111, constant=0)),
        s.call("fit_standardizer", series(4, 1, 1112)),
        s.call("fit_standardizer", series(3, 4, 1113, constant=3)),
    ]


@probe(EX, "sliding_windows")
def window_values(s):
    """sliding_windows of a few series, windows and horizons."""
    return [
        s.call("sliding_windows", series(N, F, 1120 + N), w, h)
        for N, F, w, h in [(8, 2, 3, 1), (9, 1, 2, 3), (5, 2, 4, 1), (6, 3, 1, 1), (7, 2, 2, 5)]
    ]


@probe(EX, "sliding_windows", isolates=True)
def windows_of_long_enough_series(s):
    """Every series long enough for two windows or more: a length check (however it is written)
    cannot matter, so that a mistake in the windows themselves is seen alone."""
    return [
        s.call("sliding_windows", series(N, F, 1150 + N), w, h)
        for N, F, w, h in [(8, 2, 3, 1), (9, 1, 2, 3), (6, 3, 1, 1), (7, 2, 2, 2)]
    ]


@probe(EX, "sliding_windows")
def windows_reject_bad_arguments(s):
    """sliding_windows with a horizon or a window of 0, or a series too short: ValueError?"""
    return [
        s.raises(ValueError, "sliding_windows", series(N, 2, 1130), w, h)
        for N, w, h in [(6, 2, 0), (6, 0, 1), (3, 3, 1), (4, 2, 3)]
    ]


@probe(EX, "make_datasets")
def dataset_values(s):
    """make_datasets of a few series."""
    return [
        s.call("make_datasets", series(12, 2, 1140), 8, 3, 1),
        s.call("make_datasets", series(14, 1, 1141), 9, 2, 2),
        s.call("make_datasets", series(11, 3, 1142, constant=1), 7, 2, 1),
    ]


def unit_std_series(N, F, n_train, seed):
    """A series whose training period has a population std of exactly 1 per feature (its rows the
    mean +- 1, the mean exact in binary): dividing by the training std cannot matter."""
    import torch

    x = series(N, F, seed)
    signs = torch.tensor([1.0, -1.0]).repeat(n_train // 2)
    for f in range(F):
        perm = torch.randperm(n_train, generator=torch.Generator().manual_seed(seed + f))
        x[:n_train, f] = 0.25 * (f + 1) + signs[perm]
    return x


@probe(EX, "make_datasets", isolates=True)
def datasets_with_unit_training_std(s):
    """make_datasets where dividing by the training std cannot matter."""
    return [
        s.call("make_datasets", unit_std_series(12, 2, 8, 1160), 8, 3, 1),
        s.call("make_datasets", unit_std_series(13, 1, 6, 1161), 6, 2, 2),
    ]


@probe(EX, "make_datasets")
def datasets_reject_bad_arguments(s):
    """ValueError as the functions it calls: a test period, then a training period, too short for one
    window; a horizon of 0, a window of 0; an empty test period."""
    return [
        outcome(s, "make_datasets", series(N, 2, 1143), n, w, h)
        for N, n, w, h in [(11, 8, 3, 1), (12, 3, 2, 2), (10, 6, 2, 0), (10, 6, 0, 1), (9, 9, 2, 1)]
    ]
