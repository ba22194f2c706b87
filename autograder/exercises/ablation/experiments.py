"""Facts of `make_ablation` and `run_ablation`, read from what the student's functions return:

* make_ablation: configs that share one dict -- every config holding the last value at the factor
  (so one dict was changed and appended again), said with the level shared (the whole config, or
  the nested dict holding the factor); or, where the returned objects keep their identity (the
  function run in this process), two configs holding the very same nested dict (a change to one is
  seen in the other), found by changing one of them;
* run_ablation: the seed each result was run with, read by matching each result with the student's
  own run_experiment on that arm's config under candidate seeds (the seed given, base's seed, the
  seed shifted by the arm's index times 1, 10, 100 or 1000, multiplied by index + 1): every repeat
  with base's seed (the seed not set per repeat), or arms run with other seeds than the first arm's
  (the seed offset per value).

A fact is said only when every call shows it, and no catalogued mistake of the function shows the
same (that one is the diagnosis' business).
"""

import copy

from ...diagnose.registry import CallFailed, Guarded
from ...report.messages import pair


def _base(seed=0, steps=2, lr=0.05, d=4):
    from .probes import base_config

    return base_config(seed=seed, steps=steps, lr=lr, d=d)


def _get(config, factor):
    node = config
    for k in factor.split("."):
        if not isinstance(node, dict) or k not in node:
            return KeyError
        node = node[k]
    return node


# ---------------------------------------------------------------- make_ablation

MAKE_CASES = [("model.d_model", [6, 2, 8]), ("train.steps", [5, 1, 3]), ("seed", [4, 9])]


def _make_facts(student):
    """(facts, the text of a call) or (None, None): facts per call."""
    g = Guarded(student)
    out, shows = [], None
    for factor, values in MAKE_CASES:
        base = _base()
        res = g.call("make_ablation", copy.deepcopy(base), factor, list(values))
        if (
            isinstance(res, CallFailed)
            or not isinstance(res, (list, tuple))
            or len(res) != len(values)
            or not all(isinstance(c, dict) for c in res)
        ):
            return None, None
        facts = set()
        got = [_get(c, factor) for c in res]
        if len(values) > 1 and all(x == values[-1] for x in got):
            # every config holds the last value: one dict written for every value
            facts.add("last value " + ("whole" if "." not in factor else "nested"))
        # the same nested dict in two configs (a change to one seen in the other)
        shared = set()
        for i in range(len(res)):
            for j in range(i + 1, len(res)):
                if res[i] is res[j]:
                    shared.add("whole")
                    continue
                for k, v in res[i].items():
                    if isinstance(v, dict) and v is res[j].get(k):
                        probe = object()
                        v["__probe__"] = probe
                        seen = res[j][k].get("__probe__") is probe
                        del v["__probe__"]
                        if seen:
                            shared.add(k)
        if shared:
            facts.add("shared " + ",".join(sorted(shared)))
        out.append(facts)
        shows = shows or f"make_ablation(base, {factor!r}, {values})"
    return out, shows


def _explain_make(student, catalogued, deadline):
    facts, shows = _make_facts(student)
    if not facts:
        return []
    # "last value": seen on every call of its kind; "shared": seen somewhere (identity is a fact)
    said = []
    nested = [f for (factor, _), f in zip(MAKE_CASES, facts) if "." in factor]
    top = [f for (factor, _), f in zip(MAKE_CASES, facts) if "." not in factor]
    if all("last value nested" in f for f in nested):
        said.append(("whole" if all("last value whole" in f for f in top) else "nested",))
    shared = sorted({x for f in facts for x in f if x.startswith("shared ")})
    if shared and not said:
        said.append(("identity", shared[0][len("shared ") :]))
    if not said:
        return []
    for mistake in catalogued:
        if deadline is not None and deadline():
            return []
        theirs, _ = _make_facts(mistake)
        if theirs == facts:
            return []
    claims = []
    for fact in said:
        if fact[0] == "whole":
            zh, en = pair("part.abl_one_dict")
        elif fact[0] == "nested":
            zh, en = pair("part.abl_nested_shared")
        else:
            which = fact[1]
            zh, en = pair(
                "part.abl_identity",
                what=("整个配置" if which == "whole" else f"嵌套字典 `{which}`"),
                what_en=("the whole config" if which == "whole" else f"the nested dict `{which}`"),
            )
        claims.append(
            {"function": "make_ablation", "part": "shared " + ":".join(fact), "zh": zh, "en": en, "probe": shows}
        )
    return claims


# ---------------------------------------------------------------- run_ablation

BASE_SEED, SEEDS, VALUES, FACTOR = 7, [2, 5], [0.05, 0.1, 0.2], "train.lr"


def _candidates(i, seed):
    out = [seed, BASE_SEED] + [seed + k * i for k in (1, 10, 100, 1000)] + [seed * (i + 1)]
    return list(dict.fromkeys(out))


def _grid_seeds(student, deadline=None):
    """[[the seed each result was run with, or None]] or None when the grid is not a grid."""
    from .probes import _run, _same

    g = Guarded(student)
    base = _base(seed=BASE_SEED)
    res = g.call("run_ablation", copy.deepcopy(base), FACTOR, list(VALUES), list(SEEDS))
    if (
        not isinstance(res, (list, tuple))
        or len(res) != len(VALUES)
        or not all(isinstance(r, (list, tuple)) and len(r) == len(SEEDS) for r in res)
    ):
        return None
    known = {}

    def run(v, seed):
        if (v, seed) not in known:
            known[(v, seed)] = _run(g, _base(seed=seed, lr=v))
        return known[(v, seed)]

    grid = []
    for i, row in enumerate(res):
        line = []
        for j, r in enumerate(row):
            if deadline is not None and deadline():
                return None
            try:
                got = ([float(x) for x in r.get("train_losses")], float(r.get("test_accuracy")))
            except Exception:  # noqa: BLE001 - not a result
                got = None
            # the first candidate that gives it (two seeds giving one result: never, in practice)
            line.append(
                next((s for s in _candidates(i, SEEDS[j]) if got is not None and _same(got, run(VALUES[i], s))), None)
            )
        grid.append(line)
    return grid


def _explain_run(student, catalogued, deadline):
    grid = _grid_seeds(student, deadline)
    if grid is None or any(s is None for row in grid for s in row):
        return []
    fact = None
    if all(s == BASE_SEED for row in grid for s in row):
        fact = ("base seed",)
    elif all(grid[0][j] == SEEDS[j] for j in range(len(SEEDS))) and all(
        grid[i][j] != SEEDS[j] for i in range(1, len(VALUES)) for j in range(len(SEEDS))
    ):
        fact = ("offset", tuple(tuple(row) for row in grid))
    if fact is None:
        return []
    for mistake in catalogued:
        if deadline is not None and deadline():
            return []
        if _grid_seeds(mistake) == grid:
            return []
    shows = f"run_ablation(base with seed {BASE_SEED}, {FACTOR!r}, {VALUES}, seeds={SEEDS})"
    if fact[0] == "base seed":
        zh, en = pair("part.abl_base_seed", seed=BASE_SEED, seeds=SEEDS)
    else:
        arms = "; ".join(f"{VALUES[i]}: {list(grid[i])}" for i in range(len(VALUES)))
        zh, en = pair("part.abl_seed_per_arm", seeds=SEEDS, arms=arms)
    return [{"function": "run_ablation", "part": "seeds " + fact[0], "zh": zh, "en": en, "probe": shows}]


# ---------------------------------------------------------------- the interface the engine calls

FUNCTIONS = ("make_ablation", "run_ablation")


def setup(function, ref_ns):
    """None: plain data, explained by facts of what the student's functions return (explain)."""
    return None


def explain(student, function, ref_ns, catalogued=(), deadline=None):
    """[claim] for make_ablation or run_ablation (see the module docstring)."""
    if function == "make_ablation":
        return _explain_make(student, catalogued, deadline)
    if function == "run_ablation":
        return _explain_run(student, catalogued, deadline)
    return []
