"""Probes of the `ablation` exercise: make_ablation, run_experiment, run_ablation.

Plain data in and out.  run_experiment draws its data and init from the config's seed in any order
the student likes, so its probes compare facts, never the numbers: how many losses, reproducible,
another seed changes them, another test-set size does not, the accuracy is k / n_test, the flag
matters, the losses move at all.  make_ablation's results are compared whole; the worker reports a
base changed in place, so two probes give values that end with base's own value (a base changed and
changed back is not reported): then configs shared with base, or with each other, show."""

import math

from ...diagnose.inputs import global_state_moves
from ...diagnose.registry import CallFailed, probe

EX = "ablation"


def base_config(seed=0, n_train=14, n_test=9, T=4, V=5, d=4, pe=True, steps=3, lr=0.05):
    """A small run_experiment config (the contract's layout) for the probes."""
    return {
        "seed": seed,
        "data": {"n_train": n_train, "n_test": n_test, "seq_len": T, "vocab_size": V},
        "model": {"d_model": d, "positional_encoding": pe},
        "train": {"steps": steps, "lr": lr},
    }


@probe(EX, "make_ablation")
def configs_for_a_nested_factor(s):
    """make_ablation's configs for a factor inside a nested dict (a dotted path)."""
    return [
        s.call("make_ablation", base_config(), "model.d_model", [6, 2, 4]),
        s.call("make_ablation", base_config(), "train.steps", [5, 1]),
    ]


@probe(EX, "make_ablation")
def configs_ending_with_the_base_value(s):
    """The last value is base's own: a base changed in place ends as it was (so it is not reported)."""
    # base's value is the last and the largest: sorting changes nothing here, so a sorted list is
    # never mistaken for configs that share one dict
    return [
        s.call("make_ablation", base_config(seed=3), "seed", [1, 2, 3]),
        s.call("make_ablation", base_config(d=4), "model.d_model", [2, 4]),
    ]


@probe(EX, "make_ablation")
def configs_reject_bad_arguments(s):
    """make_ablation on a missing factor, a path through a leaf, one value, a repeated value: ValueError?"""
    return [
        s.raises(ValueError, "make_ablation", base_config(), "model.width", [1, 2]),
        s.raises(ValueError, "make_ablation", base_config(), "train.lr.value", [1, 2]),
        s.raises(ValueError, "make_ablation", base_config(), "seed", [1]),
        s.raises(ValueError, "make_ablation", base_config(), "seed", [1, 2, 1]),
    ]


def _run(s, config):
    """(train_losses as floats, test_accuracy) or None when the result is not that shape."""
    res = s.call("run_experiment", config)
    if not isinstance(res, dict):
        return None
    losses, acc = res.get("train_losses"), res.get("test_accuracy")
    try:
        return [float(v) for v in losses], float(acc)
    except (TypeError, ValueError):
        return None


def _same(a, b):
    return a is not None and b is not None and a[0] == b[0] and a[1] == b[1]


def _integer(x):
    return abs(x - round(x)) <= 1e-6


@probe(EX, "run_experiment")
def experiment_facts(s):
    """Facts of a few tiny runs (3 steps of 14 sequences): the number of losses, finite, the same
    config again (another global random state) -> the same result, another seed -> other losses,
    another n_test -> the same losses, accuracy x n_test an integer, the flag -> other losses,
    another learning rate -> the same first loss (it is taken before any update), whether the
    losses move at all, and whether it fits a single training example."""
    import torch

    config = base_config(seed=5)
    torch.manual_seed(111)
    first = s.call("run_experiment", config)
    if not isinstance(first, dict):
        return first if isinstance(first, CallFailed) else ("kind", type(first).__name__)
    torch.manual_seed(222)
    a = _run(s, config)
    if a is None:
        return ("keys", tuple(sorted(map(str, first))))
    try:
        b = [float(v) for v in first["train_losses"]], float(first["test_accuracy"])
    except (TypeError, ValueError):
        b = None
    other_seed = _run(s, base_config(seed=6))
    other_n_test = _run(s, base_config(seed=5, n_test=13))
    other_flag = _run(s, base_config(seed=5, pe=False))
    # the first loss is the one before any update: another learning rate leaves it as it is
    other_lr = _run(s, base_config(seed=5, lr=0.2))
    # one training example, T = 2, no encoding: any correct run fits it (its loss falls to ~0), a run
    # that also trains on the test set cannot (without positions, A B and B A look the same)
    single = _run(s, base_config(seed=5, n_train=1, n_test=40, T=2, V=4, d=8, pe=False, steps=8, lr=0.5))
    losses, acc = a
    return {
        "number of losses": len(losses),
        "finite": all(math.isfinite(v) for v in losses) and math.isfinite(acc),
        "same config -> same result": _same(a, b),
        "another seed -> other losses": other_seed is not None and other_seed[0] != losses,
        "another n_test -> same losses": other_n_test is not None and other_n_test[0] == losses,
        "accuracy is k / n_test": _integer(acc * 9),
        "the flag changes the losses": other_flag is not None and other_flag[0] != losses,
        "another lr -> same first loss": other_lr is not None and other_lr[0][:1] == losses[:1],
        "the losses move": len(set(losses)) > 1,
        "fits a single training example": single is not None and bool(single[0]) and single[0][-1] < 0.1 * single[0][0],
    }


@probe(EX, "run_ablation")
def ablation_grid(s):
    """results[i][j] for 2 values x 2 seeds, each read as the (value, seed) of the student's own
    run_experiment that gives it (seeds shifted by one tried too); the seeds given out of order,
    then in order (what the student does with the order of the seeds shows only in the first)."""
    base = base_config(seed=0, steps=2)
    values = [0.05, 0.1]
    res = s.call("run_ablation", base, "train.lr", values, [3, 1])
    if not isinstance(res, (list, tuple)):
        return res if isinstance(res, CallFailed) else ("kind", type(res).__name__)
    known = {}
    out = {
        "shape": [len(res), [len(r) if isinstance(r, (list, tuple)) else None for r in res]],
        "cells": _cells(s, res, values, [3, 1], known),
    }
    in_order = s.call("run_ablation", base, "train.lr", values, [1, 3])
    out["cells, seeds in order"] = (
        _cells(s, in_order, values, [1, 3], known) if isinstance(in_order, (list, tuple)) else ["not a grid"]
    )
    return out


def _cells(s, res, values, seeds, known):
    """Each cell of a grid as "value, seed N" (the student's own run it equals) or "other"."""

    def run(v, seed):  # the student's own run_experiment, each config once
        if (v, seed) not in known:
            known[(v, seed)] = _run(s, base_config(seed=seed, steps=2, lr=v))
        return known[(v, seed)]

    cells = []
    for i, row in enumerate(res):
        for j, r in enumerate(row if isinstance(row, (list, tuple)) else []):
            got = None
            if isinstance(r, dict):
                try:
                    got = ([float(x) for x in r.get("train_losses")], float(r.get("test_accuracy")))
                except (TypeError, ValueError):
                    got = None
            # the expected (value, seed) first: a correct grid costs one run per cell
            first = [(values[i], seeds[j])] if i < len(values) and j < len(seeds) else []
            tries = first + [(v, seed) for v in values for seed in seeds + [x + 1 for x in seeds]]
            cells.append(
                next((f"{v}, seed {seed}" for v, seed in dict.fromkeys(tries) if _same(got, run(v, seed))), "other")
            )
    return cells


@probe(EX, "run_ablation")
def ablation_rejects_bad_arguments(s):
    """run_ablation on a factor of one value, no seed, a repeated seed: ValueError?"""
    base = base_config(steps=1)
    return [
        s.raises(ValueError, "run_ablation", base, "seed", [1, 2], [0]),
        s.raises(ValueError, "run_ablation", base, "train.lr", [0.1, 0.2], []),
        s.raises(ValueError, "run_ablation", base, "train.lr", [0.1, 0.2], [4, 4]),
    ]


@probe(EX, "run_ablation")
def ablation_rejects_what_make_ablation_rejects(s):
    """make_ablation's own errors (a path not in base, one value, a repeated value) reach the caller."""
    base = base_config(steps=1)
    return [
        s.raises(ValueError, "run_ablation", base, "model.width", [1, 2], [0]),
        s.raises(ValueError, "run_ablation", base, "seed", [1], [0]),
        s.raises(ValueError, "run_ablation", base, "seed", [1, 2, 1], [0]),
    ]


@probe(EX, "make_ablation")
def configs_with_list_values(s):
    """Values that are lists (unhashable): the configs, and a repeat among them rejected."""
    return [
        s.call("make_ablation", base_config(), "seed", [[1], [2]]),
        s.raises(ValueError, "make_ablation", base_config(), "seed", [[1], [1]]),
    ]


@probe(EX, "run_experiment")
def experiment_types_and_global_state(s):
    """Plain data (a list of floats, a float) and the global random states left alone by two runs."""
    res = s.call("run_experiment", base_config(seed=5))
    if not isinstance(res, dict):
        return [res if isinstance(res, CallFailed) else ("kind", type(res).__name__)]
    losses = res.get("train_losses")
    kinds = [
        type(losses).__name__,
        sorted({type(v).__name__ for v in losses}) if isinstance(losses, (list, tuple)) else None,
        type(res.get("test_accuracy")).__name__,
    ]
    return kinds + global_state_moves(s, "run_experiment", (base_config(seed=5),), (base_config(seed=6),))


@probe(EX, "run_experiment")
def test_set_is_unseen(s):
    """A configuration that memorises its 32 training sequences without the encoding: an unseen test
    set scores about chance (properties/ablation.chance_config), one cut from the training data ~1."""
    from .properties import chance_config

    got = _run(s, chance_config(0))
    return ["unusable"] if got is None else [got[1] > 0.85]
