"""Hidden properties of the `ablation` exercise: a one-factor ablation experiment.

    make_ablation(base, factor, values)        one deep copy of base per value, only `factor` set
                                               (a key, or a dotted path "model.d_model")
    run_experiment(config)                     {"train_losses": [steps floats], "test_accuracy": float},
                                               everything drawn from config["seed"] (the global random
                                               state left alone), test set drawn last, each loss
                                               recorded before its update
    run_ablation(base, factor, values, seeds)  results[i][j] = run_experiment(config i with seed seeds[j])

Only data crosses the sandbox (plain dicts, lists, numbers), so every property reads the student's
returned values; the configs the judge sends are its own copies.  Consequences: a configuration
shared by reference shows as every config holding the last value (they arrive as equal copies),
and a `make_ablation` that modifies `base` fails on its first call: the worker compares every list
and dict argument before and after a call (sandbox/protocol.container_snapshot).

The run_experiment properties are counterfactuals on the student's own function (the same config
twice, another seed, another test-set size, the flag flipped), so they hold for any correct way of
drawing the data and the init.  One property checks the effect of the factor itself, with honest
margins: without positional encoding the model is permutation invariant, and the order task puts
the same multiset of tokens under both labels with equal probability (swap A and B), so on a test
set drawn independently of training the number of correct answers is exactly Binomial(n, 1/2):
over 3 seeds x 512 test sequences, P(accuracy >= 0.6) < 1e-14.  The same fact checks that the test
set is really unseen (`unseen_test_set_scores_like_chance`): in a configuration that memorises its
32 training sequences without the encoding (training accuracy ~1.0 after 20 steps), the count right
over 3 seeds x 32 test sequences must lie in the exact Binomial(96, 1/2) interval at 1e-9 (one check
per grading: a correct submission fails it with probability <= 1e-9), while a "test set" taken from
the training data scores ~1.0, far above its upper end (0.80).  With positional encoding the
reference reaches a 3-seed mean accuracy of 0.87-1.0 (50 triples of seeds, lowest 0.871; the lowest
single run of 150 was 0.707) in the 60 steps used here; the property asks for 0.75.  The given model
uses GELU, not ReLU: with ReLU a tiny model (d = 2 or 4) is sometimes born dead (every unit
negative on every input), its loss stays exactly ln 2 whatever the seed or the flag, and the
counterfactual properties would reject correct code.
"""
import math

from hypothesis import example, given
from hypothesis import strategies as st

from ...properties._harness import check_global_state_untouched, fail, prop

EX = "ablation"
MAKE, RUN, ABL = "make_ablation", "run_experiment", "run_ablation"
KEYS = ("train_losses", "test_accuracy")
seeds = st.integers(0, 2 ** 31 - 1)


# ---------------------------------------------------------------- plain-data helpers (trusted)


def copy_data(x):
    """A deep copy of plain data (dicts, lists, scalars): what the student gets, never our own."""
    if isinstance(x, dict):
        return {k: copy_data(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(copy_data(v) for v in x)
    return x


def get_path(config, factor):
    """config's entry at `factor` (a key or a dotted path); KeyError if it is not there."""
    node = config
    for k in factor.split("."):
        if not isinstance(node, dict) or k not in node:
            raise KeyError(factor)
        node = node[k]
    return node


def set_path(config, factor, value):
    """A copy of config with the entry at `factor` set (the trusted make_ablation of one value)."""
    out = copy_data(config)
    *path, key = factor.split(".")
    node = out
    for k in path:
        node = node[k]
    node[key] = value
    return out


def flatten(config, prefix=""):
    """{dotted path: leaf}; a nested dict is itself an entry ("<dict>") and is walked into."""
    out = {}
    for k, v in config.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict):
            out[path] = "<dict>"
            out.update(flatten(v, path + "."))
        else:
            out[path] = v
    return out


def same(a, b):
    """Equal values of the same type (so True, 1 and 1.0 are three different values)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


# ---------------------------------------------------------------- strategies

NAMES = ["seed", "lr", "steps", "d_model", "dropout", "name", "layers", "heads", "n_train", "n_test",
         "warmup", "act", "norm", "optim", "batch_size", "sizes"]
GROUPS = ["data", "model", "train", "optim", "logging"]
leaves = st.one_of(
    st.integers(-3, 300),
    st.sampled_from([0.0, 0.1, 0.01, 0.5, 1e-3, 2.5]),
    st.booleans(),
    st.sampled_from(["adam", "sgd", "relu", "gelu", "layer"]),
    st.lists(st.integers(1, 64), max_size=3),
    st.none(),
)


@st.composite
def bases(draw):
    """A nested config: "seed" at the top, a few leaves, one or two levels of groups."""
    def level(depth):
        d = {k: draw(leaves) for k in draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))}
        if depth < 2:
            for g in draw(st.lists(st.sampled_from(GROUPS), max_size=2, unique=True)):
                d[g] = level(depth + 1)
        return d

    base = level(0)
    base["seed"] = draw(st.integers(0, 99))
    return base


@st.composite
def value_lists(draw, n_max=4):
    """2..n_max distinct values of one type."""
    kind = draw(st.sampled_from(["int", "float", "str", "bool"]))
    if kind == "bool":
        return draw(st.permutations([True, False]))
    pool = {"int": st.integers(-5, 500), "float": st.sampled_from([0.1, 0.01, 0.003, 1.0, 0.5, 2.0]),
            "str": st.sampled_from(["sinusoidal", "learned", "none", "rope", "relu", "gelu"])}[kind]
    return draw(st.lists(pool, min_size=2, max_size=n_max, unique=True))


@st.composite
def ablations(draw):
    """(base, factor, values): factor is the path of one leaf of base."""
    base = draw(bases())
    paths = sorted(p for p, v in flatten(base).items() if v != "<dict>")
    return base, draw(st.sampled_from(paths)), draw(value_lists())


def config_for(seed, n_train=24, n_test=35, T=5, V=6, d=4, pe=True, steps=3, lr=0.05):
    """A run_experiment config (the contract's layout)."""
    return {"seed": seed,
            "data": {"n_train": n_train, "n_test": n_test, "seq_len": T, "vocab_size": V},
            "model": {"d_model": d, "positional_encoding": pe},
            "train": {"steps": steps, "lr": lr}}


@st.composite
def experiments(draw):
    """A small config: a run takes a few milliseconds."""
    return config_for(draw(seeds), n_train=draw(st.integers(8, 40)), n_test=draw(st.integers(5, 40)),
                      T=draw(st.integers(2, 6)), V=draw(st.integers(4, 8)), d=draw(st.sampled_from([2, 4, 8])),
                      pe=draw(st.booleans()), steps=draw(st.integers(1, 4)), lr=draw(st.sampled_from([0.01, 0.05, 0.1])))


@st.composite
def quick_experiments(draw):
    """A smaller config still (a run takes about a millisecond): for properties that read a fact of every
    run (types, the global state, the first loss), not an effect of training."""
    return config_for(draw(seeds), n_train=draw(st.integers(4, 16)), n_test=draw(st.integers(3, 12)),
                      T=draw(st.integers(2, 4)), V=draw(st.integers(4, 6)), d=draw(st.sampled_from([2, 4])),
                      pe=draw(st.booleans()), steps=draw(st.integers(1, 2)), lr=draw(st.sampled_from([0.01, 0.05, 0.1])))


# the reference base of the notebook, smaller (60 steps): the effect of positional encoding
HELP_SEEDS = (0, 1, 2)
HELP_WITH, HELP_WITHOUT = 0.75, 0.6


def help_config(seed, pe):
    """The notebook's base config, smaller (60 steps): where positional encoding must help."""
    return config_for(seed, n_train=256, n_test=512, T=8, V=8, d=16, pe=pe, steps=60, lr=0.03)


# ---------------------------------------------------------------- hints

COPY_HINT_ZH = ("每个值一个独立的深拷贝：config = copy.deepcopy(base)，再沿着点号路径（\"model.d_model\" → "
                "config[\"model\"][\"d_model\"]）把这一项设成这个值。dict(base) 或 base.copy() 只拷贝最外层，"
                "嵌套的字典仍然是同一个对象；[base] * n 或 config = base 根本没有拷贝。")
COPY_HINT_EN = ("One independent deep copy per value: config = copy.deepcopy(base), then follow the dotted path "
                "(\"model.d_model\" -> config[\"model\"][\"d_model\"]) and set that one entry. dict(base) or base.copy() "
                "copies the top level only, the nested dicts stay shared; [base] * n or config = base copies nothing.")
ONE_FACTOR_ZH = ("消融只改一个因素：除了 factor 这一项，每个配置的每个键、每个值都必须和 base 完全一样——"
                 "不要给配置加名字、不要改 seed、不要删键。不同的运行靠 run_ablation 里的 seeds 区分。")
ONE_FACTOR_EN = ("An ablation changes one factor: apart from `factor`, every key and value of each config must be "
                 "exactly base's — do not add a name, change the seed or drop a key. Runs are told apart by the "
                 "seeds of run_ablation.")
RNG_HINT_ZH = ("所有随机数都从 g = torch.Generator().manual_seed(config[\"seed\"]) 抽取：order_task(..., generator=g)、"
               "init_classifier(..., generator=g)。每次调用都新建并播种生成器；不要用全局随机状态，也不要用模块级的生成器。")
RNG_HINT_EN = ("Draw every random number from g = torch.Generator().manual_seed(config[\"seed\"]): order_task(..., "
               "generator=g), init_classifier(..., generator=g). Create and seed the generator in every call; do not "
               "use the global random state or a generator created once at module level.")
TEST_LAST_ZH = ("测试集是训练时看不到的数据：先抽训练数据和初始参数，最后才抽测试集（或者用另一个生成器），"
                "只在训练集上训练。这样测试集的大小和内容都改变不了训练。")
TEST_LAST_EN = ("The test set is data training never sees: draw the training data and the initial params first and "
                "the test set last (or from another generator), and train on the training set only. Then neither the "
                "size nor the content of the test set can change training.")
TRAIN_HINT_ZH = ("每一步：loss = F.cross_entropy(classifier_logits(X_train, params, pe), y_train)；opt.zero_grad()；"
                 "loss.backward()；opt.step()；记下 loss.item()。优化器 torch.optim.Adam(params, lr=config[\"train\"][\"lr\"])；"
                 "评估测试集时用同一个 pe 开关。")
TRAIN_HINT_EN = ("At each step: loss = F.cross_entropy(classifier_logits(X_train, params, pe), y_train); opt.zero_grad(); "
                 "loss.backward(); opt.step(); record loss.item(). The optimizer is torch.optim.Adam(params, "
                 "lr=config[\"train\"][\"lr\"]); evaluate the test set with the same pe flag.")


# ---------------------------------------------------------------- make_ablation


def _make(student, base, factor, values):
    """The student's configs (a list of len(values) dicts), called on copies of our inputs."""
    out = student.call(MAKE, copy_data(base), factor, copy_data(values))
    if not isinstance(out, (list, tuple)) or len(out) != len(values):
        fail(f"make_ablation 应返回 {len(values)} 个配置的列表（每个值一个），实际返回 "
             f"{type(out).__name__}{f'，长度 {len(out)}' if isinstance(out, (list, tuple)) else ''}。",
             f"make_ablation should return a list of {len(values)} configs (one per value), got {type(out).__name__}"
             + (f" of length {len(out)}" if isinstance(out, (list, tuple)) else "") + ".",
             student=student, show={"base": base, "factor": factor, "values": values},
             hint_zh="values 里每个值对应一个配置，顺序与 values 相同。", hint_en="One config per value, in the order of values.")
    for i, c in enumerate(out):
        if not isinstance(c, dict):
            fail(f"第 {i} 个配置应是 dict，实际是 {type(c).__name__}。", f"config {i} should be a dict, got "
                 f"{type(c).__name__}.", student=student, show={"base": base, "factor": factor, "values": values},
                 hint_zh="配置就是 base 的深拷贝（一个普通的 dict）。", hint_en="A config is a deep copy of base (a plain dict).")
    return list(out)


def _ex_base():
    return {"seed": 0, "data": {"n_train": 256, "seq_len": 8}, "model": {"d_model": 16, "positional_encoding": True},
            "train": {"steps": 100, "lr": 0.01}}


@prop(EX, MAKE, "one_config_per_value_in_order",
      zh="make_ablation 对每个值返回一个配置，顺序与 values 相同；第 i 个配置的 factor 项（可以是嵌套路径 \"model.d_model\"）等于 values[i]",
      en="make_ablation returns one config per value, in the order of values; config i holds values[i] at `factor` "
         "(which may be a dotted path such as \"model.d_model\")")
@given(case=ablations())
@example(case=(_ex_base(), "model.positional_encoding", [True, False]))
@example(case=(_ex_base(), "train.lr", [0.1, 0.01, 0.001]))
@example(case=({"seed": 0, "lr": 0.5, "name": "run"}, "lr", [0.5, 0.1]))
@example(case=(_ex_base(), "model.d_model", [32, 8, 16]))
def make_in_order(student, case):
    base, factor, values = case
    configs = _make(student, base, factor, values)
    got = []
    for c in configs:
        try:
            got.append(get_path(c, factor))
        except KeyError:
            got.append("<missing>")
    if not all(same(g, v) for g, v in zip(got, values)):
        shared = len(values) > 1 and all(same(g, values[-1]) for g in got)
        why_zh = "每个配置都拿到了最后一个值：它们是同一个（或共享嵌套字典的）对象。" if shared else ""
        why_en = " Every config holds the last value: they are one object (or share nested dicts)." if shared else ""
        fail(f"第 i 个配置的 {factor!r} 应为 values[i]。{why_zh}",
             f"config i should hold values[i] at {factor!r}.{why_en}",
             show={"base": base, "factor": factor, "values（期望 expected）": values, "实际 got": got},
             student=student, hint_zh=COPY_HINT_ZH + "按 values 的顺序遍历，不要排序或去重。",
             hint_en=COPY_HINT_EN + " Walk through values in their order; do not sort or deduplicate them.")


@prop(EX, MAKE, "only_the_factor_differs",
      zh="每个配置与 base 只在 factor 这一项不同：其余每个键（包括嵌套字典里的）、每个值都与 base 相同，不多不少",
      en="each config differs from base only at `factor`: every other key (nested ones included) and value is "
         "base's, none added, none dropped")
@given(case=ablations())
@example(case=(_ex_base(), "model.positional_encoding", [True, False]))
@example(case=({"seed": 3, "lr": 0.5, "name": "run"}, "lr", [0.5, 0.1]))
@example(case=(_ex_base(), "train.steps", [10, 20]))
def make_one_factor(student, case):
    base, factor, values = case
    configs = _make(student, base, factor, values)
    flat_base = flatten(base)
    for i, c in enumerate(configs):
        flat = flatten(c)
        for path in sorted(set(flat_base) | set(flat)):
            if path == factor or path.startswith(factor + "."):
                continue
            if path not in flat or path not in flat_base or not same(flat[path], flat_base[path]):
                b = flat_base.get(path, "<missing>")
                g = flat.get(path, "<missing>")
                fail(f"第 {i} 个配置（values[{i}] = {values[i]!r}）在 {path!r} 上与 base 不同：base 是 {b!r}，配置里是 {g!r}。",
                     f"config {i} (values[{i}] = {values[i]!r}) differs from base at {path!r}: base has {b!r}, the "
                     f"config {g!r}.", show={"base": base, "factor": factor, "values": values, f"config {i}": c},
                     student=student, hint_zh=ONE_FACTOR_ZH, hint_en=ONE_FACTOR_EN)


@prop(EX, MAKE, "rejects_bad_arguments",
      zh="factor 不是 base 的键（或嵌套路径不存在）、少于 2 个值、有重复的值时抛出 ValueError",
      en="a factor that is not a key of base (or a dotted path that does not exist), fewer than 2 values or "
         "duplicate values raise ValueError")
@given(case=ablations(), bad=st.sampled_from(["missing", "missing_nested", "through_leaf", "one_value", "no_values",
                                              "duplicates"]))
@example(case=(_ex_base(), "model.d_model", [8, 16]), bad="missing")
@example(case=(_ex_base(), "model.d_model", [8, 16]), bad="missing_nested")
@example(case=(_ex_base(), "model.d_model", [8, 16]), bad="through_leaf")
@example(case=(_ex_base(), "model.d_model", [8, 16]), bad="one_value")
@example(case=(_ex_base(), "train.lr", [0.1, 0.01]), bad="duplicates")
def make_rejects(student, case, bad):
    base, factor, values = case
    group = next((k for k, v in base.items() if isinstance(v, dict)), None)
    args = {
        "missing": ("learning_rate", values),
        "missing_nested": (f"{group}.learning_rate" if group else "model.learning_rate", values),
        "through_leaf": ("seed.value", values),
        "one_value": (factor, values[:1]),
        "no_values": (factor, []),
        "duplicates": (factor, list(values) + [values[0]]),
    }[bad]
    why_zh = {"missing": "factor 不是 base 的键", "missing_nested": "嵌套路径不存在",
              "through_leaf": "路径穿过了一个不是字典的值", "one_value": "只有 1 个值", "no_values": "没有值",
              "duplicates": "values 里有重复"}[bad]
    why_en = {"missing": "the factor is not a key of base", "missing_nested": "the dotted path does not exist",
              "through_leaf": "the path goes through a value that is not a dict", "one_value": "there is only 1 value",
              "no_values": "there are no values", "duplicates": "values holds a duplicate"}[bad]
    if not student.raises(ValueError, MAKE, copy_data(base), args[0], copy_data(args[1])):
        fail(f"make_ablation(base, {args[0]!r}, {args[1]!r}) 没有抛出 ValueError（{why_zh}）。",
             f"make_ablation(base, {args[0]!r}, {args[1]!r}) did not raise ValueError ({why_en}).",
             show={"base": base}, student=student,
             hint_zh="先检查再拷贝：路径的每一段都必须是已有的键（不要悄悄新建一个键，也不要让 KeyError/TypeError 漏出去），"
                     "至少 2 个互不相同的值；否则 raise ValueError(...)。",
             hint_en="Check before copying: every part of the path must be an existing key (do not silently add a key, "
                     "and do not let a KeyError/TypeError escape), and there must be at least 2 distinct values; "
                     "otherwise raise ValueError(...).")


# values a config may hold that a set() cannot (lists, dicts) and None: "values" are compared with ==
PLAIN_VALUES = [
    [[8, 16], [16, 32]],
    [[1], [1, 2], []],
    [{"kind": "sinusoidal"}, {"kind": "rope", "base": 10000}],
    [None, [4]],
    [[0.1, 0.01], None, {"lr": 0.5}],
]


@st.composite
def plain_value_cases(draw):
    """(base, factor, values, duplicate): values holding lists, dicts or None; `duplicate` a list of them with
    one value repeated (equal by ==, a different object)."""
    base = draw(st.one_of(st.just(_ex_base()), bases()))
    paths = sorted(p for p, v in flatten(base).items() if v != "<dict>")
    values = copy_data(draw(st.sampled_from(PLAIN_VALUES)))
    repeat = copy_data(values[draw(st.integers(0, len(values) - 1))])
    return base, draw(st.sampled_from(paths)), values, values + [repeat]


@prop(EX, MAKE, "accepts_any_plain_values",
      zh="values 可以是配置允许的任何值（列表、字典、None）：每个值一个配置、factor 处是 values[i]、其余不变；"
         "重复（用 == 比较，例如两个相等的列表）抛出 ValueError",
      en="values may be anything a config holds (lists, dicts, None): one config per value, values[i] at `factor`, "
         "nothing else changed; a repeat (compared with ==, e.g. two equal lists) raises ValueError")
@given(case=plain_value_cases())
@example(case=(_ex_base(), "model.d_model", [[8, 16], [16, 32]], [[8, 16], [16, 32], [8, 16]]))
@example(case=(_ex_base(), "train.lr", [None, [4]], [None, [4], [4]]))
@example(case=({"seed": 1, "sizes": [2, 3], "act": "gelu"}, "sizes", [[1], [1, 2], []], [[1], [1, 2], [], [1, 2]]))
def make_plain_values(student, case):
    base, factor, values, duplicate = case
    hint_zh = ("值要用 == 比较，不能放进 set()：列表和字典不可哈希，set(values) 会抛出 TypeError。"
               "重复检查可以写成 any(a == b for i, a in enumerate(values) for b in values[i + 1:])。")
    hint_en = ("Compare values with ==, do not put them in a set(): lists and dicts are unhashable and set(values) "
               "raises TypeError. A repeat check: any(a == b for i, a in enumerate(values) for b in values[i + 1:]).")
    configs = _make(student, base, factor, values)
    for i, c in enumerate(configs):
        try:
            got = get_path(c, factor)
        except KeyError:
            got = "<missing>"
        flat, flat_base = flatten(c), flatten(base)
        others = [p for p in sorted(set(flat) | set(flat_base)) if p != factor and not p.startswith(factor + ".")]
        if not same(got, values[i]) or any(p not in flat or p not in flat_base or not same(flat[p], flat_base[p])
                                           for p in others):
            fail(f"第 {i} 个配置应是 base 只把 {factor!r} 换成 values[{i}] = {values[i]!r}。",
                 f"config {i} should be base with only {factor!r} set to values[{i}] = {values[i]!r}.",
                 show={"base": base, "factor": factor, "values": values, f"config {i}": c}, student=student,
                 hint_zh=COPY_HINT_ZH, hint_en=COPY_HINT_EN)
    if not student.raises(ValueError, MAKE, copy_data(base), factor, copy_data(duplicate)):
        fail(f"make_ablation(base, {factor!r}, {duplicate!r}) 没有抛出 ValueError：最后一个值和前面的一个值相等（==）。",
             f"make_ablation(base, {factor!r}, {duplicate!r}) did not raise ValueError: its last value equals (==) an "
             f"earlier one.", show={"base": base}, student=student, hint_zh=hint_zh, hint_en=hint_en)


# ---------------------------------------------------------------- run_experiment


def _run(student, config, label=RUN):
    """The student's result for `config`: (train_losses as floats, test_accuracy as a float)."""
    out = student.call(RUN, copy_data(config))
    return _parse(student, out, config, label)


def _parse(student, out, config, label=RUN):
    steps = config["train"]["steps"]
    if not isinstance(out, dict) or any(k not in out for k in KEYS):
        fail(f"{label} 应返回带有键 \"train_losses\" 和 \"test_accuracy\" 的 dict，实际返回 "
             f"{type(out).__name__}{'，键 ' + str(sorted(out)) if isinstance(out, dict) else ''}。",
             f"{label} should return a dict with the keys \"train_losses\" and \"test_accuracy\", got "
             f"{type(out).__name__}" + (f" with keys {sorted(out)}" if isinstance(out, dict) else "") + ".",
             student=student, show={"config": config},
             hint_zh="return {\"train_losses\": losses, \"test_accuracy\": accuracy}。",
             hint_en="return {\"train_losses\": losses, \"test_accuracy\": accuracy}.")
    losses, acc = out["train_losses"], out["test_accuracy"]
    if hasattr(losses, "tolist") and not isinstance(losses, (list, tuple)):
        losses = losses.tolist()  # a 1-D tensor or array is accepted too
    if not isinstance(losses, (list, tuple)) or len(losses) != steps:
        fail(f"train_losses 应是 {steps} 个损失的列表（config[\"train\"][\"steps\"] = {steps}，每步一个，"
             f"在这一步更新之前），实际是 {type(losses).__name__}"
             f"{f'，长度 {len(losses)}' if isinstance(losses, (list, tuple)) else ''}。",
             f"train_losses should be a list of {steps} losses (config[\"train\"][\"steps\"] = {steps}, one per step, "
             f"before that step's update), got {type(losses).__name__}"
             + (f" of length {len(losses)}" if isinstance(losses, (list, tuple)) else "") + ".",
             student=student, show={"config": config},
             hint_zh="for _ in range(steps): 算损失、反向、更新，然后 losses.append(loss.item())；不要在循环前后再多记一个。",
             hint_en="for _ in range(steps): loss, backward, step, then losses.append(loss.item()); do not record an "
                     "extra one before or after the loop.")
    try:
        losses = [float(v) for v in losses]
        acc = float(acc)
    except (TypeError, ValueError):
        fail("train_losses 和 test_accuracy 应是数（Python float）。", "train_losses and test_accuracy should be "
             "numbers (Python floats).", student=student, show={"config": config},
             hint_zh="用 loss.item() 和 correct.float().mean().item()。",
             hint_en="Use loss.item() and correct.float().mean().item().")
    if not all(math.isfinite(v) for v in losses) or not 0.0 <= acc <= 1.0:
        fail("train_losses 应全是有限的数，test_accuracy 应在 [0, 1] 内。",
             "train_losses should all be finite and test_accuracy within [0, 1].",
             show={"config": config, "train_losses": losses, "test_accuracy": acc}, student=student,
             hint_zh="准确率是测试集上预测正确的比例（0 到 1），不是百分数，也不是正确的个数。",
             hint_en="The accuracy is the fraction of the test set predicted right (0 to 1): not a percentage, not a count.")
    return losses, acc


@prop(EX, RUN, "returns_losses_and_accuracy",
      zh="run_experiment(config) 返回 {\"train_losses\": steps 个有限的损失, \"test_accuracy\": [0, 1] 内的数}",
      en="run_experiment(config) returns {\"train_losses\": steps finite losses, \"test_accuracy\": a number in [0, 1]}")
@given(config=experiments())
@example(config=config_for(0, steps=1))
@example(config=config_for(1, n_train=16, n_test=9, T=2, V=4, d=2, pe=False, steps=4))
def run_structure(student, config):
    _run(student, config)


@prop(EX, RUN, "reproducible_given_seed",
      zh="同一个配置运行两次，train_losses 和 test_accuracy 完全相同（所有随机数都来自 config[\"seed\"]，不用全局随机状态）",
      en="running the same config twice gives exactly the same train_losses and test_accuracy (every random number "
         "comes from config[\"seed\"], not from the global random state)")
@given(config=experiments())
@example(config=config_for(0))
@example(config=config_for(7, pe=False, steps=2))
def run_reproducible(student, config):
    a = _run(student, config)
    b = _run(student, config)
    if a != b:
        fail("同一个配置运行两次，结果不同：实验不可复现。", "the same config run twice gives different results: the "
             "experiment is not reproducible.",
             show={"config": config, "第一次 first": {"train_losses": a[0], "test_accuracy": a[1]},
                   "第二次 second": {"train_losses": b[0], "test_accuracy": b[1]}},
             student=student, hint_zh=RNG_HINT_ZH, hint_en=RNG_HINT_EN)


@prop(EX, RUN, "seed_changes_the_run",
      zh="另一个 seed 给出另一次运行：train_losses 不同（seed 真的被用上了）",
      en="another seed gives another run: different train_losses (the seed is really used)")
@given(config=experiments(), other=seeds)
@example(config=config_for(0), other=1)
@example(config=config_for(5, pe=False, steps=2), other=6)
def run_seeded(student, config, other):
    if other == config["seed"]:
        other += 1
    a = _run(student, config)
    b = _run(student, {**config, "seed": other})
    if a[0] == b[0]:
        fail(f"seed={config['seed']} 和 seed={other} 给出完全相同的 train_losses：seed 没有用上。",
             f"seed={config['seed']} and seed={other} give exactly the same train_losses: the seed is not used.",
             show={"config": config, "train_losses": a[0]}, student=student,
             hint_zh="torch.Generator() 不调用 manual_seed(config[\"seed\"]) 时总是同一个默认种子；" + RNG_HINT_ZH,
             hint_en="torch.Generator() without manual_seed(config[\"seed\"]) always starts from the same default seed. "
                     + RNG_HINT_EN)


@prop(EX, RUN, "test_set_does_not_change_training",
      zh="只改变测试集的大小 n_test，train_losses 完全不变：训练看不到测试集",
      en="changing only the test-set size n_test leaves train_losses exactly unchanged: training never sees the "
         "test set")
@given(config=experiments(), n_test=st.integers(5, 40))
@example(config=config_for(0), n_test=7)
@example(config=config_for(3, n_train=12, n_test=30, pe=False, steps=2), n_test=31)
def run_test_set_apart(student, config, n_test):
    if n_test == config["data"]["n_test"]:
        n_test += 1
    other = {**config, "data": {**config["data"], "n_test": n_test}}
    a = _run(student, config)
    b = _run(student, other)
    if a[0] != b[0]:
        fail(f"n_test 从 {config['data']['n_test']} 改成 {n_test}，train_losses 变了：训练用到了测试集"
             f"（或者测试集在训练数据/初始参数之前抽取）。",
             f"changing n_test from {config['data']['n_test']} to {n_test} changed train_losses: training depends "
             f"on the test set (or the test set is drawn before the training data / initial params).",
             show={"config": config, "原来的 before train_losses": a[0], "改变后的 after train_losses": b[0]},
             student=student, hint_zh=TEST_LAST_ZH, hint_en=TEST_LAST_EN)


@prop(EX, RUN, "accuracy_on_the_test_set",
      zh="test_accuracy 是 n_test 个测试序列上的正确率：它乘以 n_test 是整数（不是在训练集上算的）",
      en="test_accuracy is the fraction right over the n_test test sequences: times n_test it is a whole number "
         "(it is not measured on the training set)")
@given(config=experiments())
@example(config=config_for(0, n_train=24, n_test=35))
@example(config=config_for(2, n_train=40, n_test=13, T=6, steps=2))
@example(config=config_for(4, n_train=27, n_test=16, pe=False))
def run_accuracy_on_test(student, config):
    _, acc = _run(student, config)
    n = config["data"]["n_test"]
    if abs(acc * n - round(acc * n)) > 1e-3:
        n_train = config["data"]["n_train"]
        on_train = abs(acc * n_train - round(acc * n_train)) <= 1e-3
        fail(f"test_accuracy = {acc:.6g} 不是 k / n_test（n_test = {n}）"
             + (f"，却是 k / n_train（n_train = {n_train}）：准确率是在训练集上算的。" if on_train else "。"),
             f"test_accuracy = {acc:.6g} is not k / n_test (n_test = {n})"
             + (f" but k / n_train (n_train = {n_train}): the accuracy was measured on the training set." if on_train
                else "."),
             show={"config": config}, student=student,
             hint_zh="在 n_test 个测试序列上评估：(classifier_logits(X_test, params, pe).argmax(-1) == y_test).float().mean()。"
                     "训练集上的准确率只说明记住了多少，不说明学会了什么。",
             hint_en="Evaluate on the n_test test sequences: (classifier_logits(X_test, params, pe).argmax(-1) == "
                     "y_test).float().mean(). Accuracy on the training set tells how much was memorised, not what was "
                     "learned.")


@prop(EX, RUN, "positional_encoding_flag_changes_the_model",
      zh="同一个 seed，config[\"model\"][\"positional_encoding\"] 为 True 和 False 时 train_losses 不同（开关真的起作用）",
      en="with the same seed, config[\"model\"][\"positional_encoding\"] True and False give different train_losses "
         "(the flag really changes the model)")
@given(config=experiments())
@example(config=config_for(0))
@example(config=config_for(9, T=3, d=2, steps=1))
def run_flag_used(student, config):
    on = {**config, "model": {**config["model"], "positional_encoding": True}}
    off = {**config, "model": {**config["model"], "positional_encoding": False}}
    a, b = _run(student, on), _run(student, off)
    if a[0] == b[0]:
        fail("positional_encoding 为 True 和 False 时 train_losses 完全相同：开关没有传到模型里。",
             "positional_encoding True and False give exactly the same train_losses: the flag does not reach the model.",
             show={"config": config, "train_losses": a[0]}, student=student,
             hint_zh="把 config[\"model\"][\"positional_encoding\"] 传给 classifier_logits(tokens, params, pe)，训练和测试都要。",
             hint_en="Pass config[\"model\"][\"positional_encoding\"] to classifier_logits(tokens, params, pe), in "
                     "training and at test time.")


@prop(EX, RUN, "positional_encoding_helps_on_the_order_task",
      zh=f"在顺序任务上（n_train=256, n_test=512, T=8, V=8, d=16, 60 步, lr=0.03, seed 0/1/2）：有位置编码时平均测试准确率 "
         f">= {HELP_WITH}，没有时 <= {HELP_WITHOUT}（没有位置编码，模型分不出顺序，只能猜）",
      en=f"on the order task (n_train=256, n_test=512, T=8, V=8, d=16, 60 steps, lr=0.03, seeds 0/1/2): the mean test "
         f"accuracy is >= {HELP_WITH} with positional encoding and <= {HELP_WITHOUT} without (without it the model "
         f"cannot tell the order and can only guess)")
def run_pe_helps(student):
    acc = {pe: [_run(student, help_config(s, pe))[1] for s in HELP_SEEDS] for pe in (True, False)}
    mean = {pe: sum(v) / len(v) for pe, v in acc.items()}
    show = {"config (seed 0, positional_encoding=True)": help_config(0, True),
            "有位置编码 with PE": [round(a, 4) for a in acc[True]],
            "没有位置编码 without PE": [round(a, 4) for a in acc[False]]}
    if mean[False] > HELP_WITHOUT:
        fail(f"没有位置编码时平均测试准确率是 {mean[False]:.3f} > {HELP_WITHOUT}。这个模型（注意力 + 平均池化）不带位置编码时"
             f"对顺序完全不敏感，在独立的测试集上只能是 0.5 左右：位置编码没有关掉，或者测试集泄漏进了训练。",
             f"without positional encoding the mean test accuracy is {mean[False]:.3f} > {HELP_WITHOUT}. Without it this "
             f"model (attention + mean pooling) is blind to order and must score about 0.5 on an independent test "
             f"set: the encoding was not switched off, or the test set leaked into training.",
             show=show, student=student, hint_zh=TRAIN_HINT_ZH + TEST_LAST_ZH, hint_en=TRAIN_HINT_EN + " " + TEST_LAST_EN)
    if mean[True] < HELP_WITH:
        fail(f"有位置编码时平均测试准确率只有 {mean[True]:.3f} < {HELP_WITH}：模型没有学会（或者测试时没有用位置编码）。",
             f"with positional encoding the mean test accuracy is only {mean[True]:.3f} < {HELP_WITH}: the model did "
             f"not learn (or the test set was evaluated without the encoding).",
             show=show, student=student, hint_zh=TRAIN_HINT_ZH, hint_en=TRAIN_HINT_EN)


@prop(EX, RUN, "returns_plain_data",
      zh="run_experiment 返回普通数据：train_losses 是 Python 浮点数的列表，test_accuracy 是一个 Python 浮点数（不是张量）",
      en="run_experiment returns plain data: train_losses a list of Python floats, test_accuracy one Python float "
         "(not tensors)")
@given(config=quick_experiments())
@example(config=config_for(0, steps=2))
@example(config=config_for(3, n_train=12, n_test=7, pe=False, steps=1))
def run_plain(student, config):
    out = student.call(RUN, copy_data(config))
    _parse(student, out, config)  # the structure first: a dict, the keys, steps losses
    losses, acc = out["train_losses"], out["test_accuracy"]

    def kind(v):
        return f"{type(v).__name__}" + (f" {tuple(v.shape)}" if hasattr(v, "shape") else "")

    bad = []
    if not isinstance(losses, (list, tuple)) or not all(isinstance(v, float) for v in losses):
        bad.append(("train_losses", kind(losses) if not isinstance(losses, (list, tuple))
                    else f"{type(losses).__name__} of {sorted({kind(v) for v in losses})}"))
    if not isinstance(acc, float):
        bad.append(("test_accuracy", kind(acc)))
    if bad:
        what = "; ".join(f"{k}: {v}" for k, v in bad)
        fail(f"run_experiment 返回的不是普通数据（{what}）：合同要求 float 的列表和一个 float。",
             f"run_experiment did not return plain data ({what}): the contract asks for a list of floats and one "
             f"float.", show={"config": config}, student=student,
             hint_zh="每一步 losses.append(loss.item())；准确率用 (pred == y_test).float().mean().item()。"
                     "0 维张量看起来像数，可是写不进 JSON 结果表，和别的运行比较时也会出错。",
             hint_en="losses.append(loss.item()) at each step; the accuracy as (pred == y_test).float().mean().item(). "
                     "A 0-dim tensor looks like a number but does not go into a JSON results table, and comparing it "
                     "with other runs misbehaves.")


@prop(EX, RUN, "leaves_global_random_state_alone",
      zh="run_experiment 不使用也不改变全局随机状态（不调用 torch.manual_seed；随机数只来自用 config[\"seed\"] 播种的 torch.Generator()）",
      en="run_experiment neither uses nor changes the global random state (no torch.manual_seed; random numbers come "
         "only from torch.Generator()s seeded from config[\"seed\"])")
@given(config=quick_experiments())
@example(config=config_for(0, steps=1))
@example(config=config_for(4, pe=False, steps=2))
def run_global_state(student, config):
    other = {**config, "seed": config["seed"] + 1}
    check_global_state_untouched(student, RUN, [lambda: _run(student, config), lambda: _run(student, other)],
                                 show={"config": config}, hint_zh=RNG_HINT_ZH, hint_en=RNG_HINT_EN)


@prop(EX, RUN, "first_loss_is_before_any_update",
      zh="train_losses[k] 是第 k 步更新之前的损失：只改变学习率，train_losses[0]（初始参数上的损失）完全不变",
      en="train_losses[k] is the loss before update k: changing only the learning rate leaves train_losses[0] (the "
         "loss of the initial params) unchanged")
@given(config=quick_experiments(), factor=st.sampled_from([3.0, 0.25, 10.0]))
@example(config=config_for(0, steps=1), factor=3.0)
@example(config=config_for(2, pe=False, steps=3, lr=0.1), factor=0.25)
def run_first_loss(student, config, factor):
    other = {**config, "train": {**config["train"], "lr": config["train"]["lr"] * factor}}
    a, b = _run(student, config)[0], _run(student, other)[0]
    if not math.isclose(a[0], b[0], rel_tol=1e-6, abs_tol=1e-7):
        fail(f"学习率从 {config['train']['lr']:g} 改成 {other['train']['lr']:g}，train_losses[0] 就从 {a[0]:.6g} 变成了 "
             f"{b[0]:.6g}：记录的是更新之后的损失。",
             f"changing the learning rate from {config['train']['lr']:g} to {other['train']['lr']:g} changed "
             f"train_losses[0] from {a[0]:.6g} to {b[0]:.6g}: the losses are recorded after the update.",
             show={"config": config, "原来的 before train_losses": a, "改变后的 after train_losses": b}, student=student,
             hint_zh="train_losses[k] 是第 k 次更新之前的损失：先 loss = F.cross_entropy(...)，再 zero_grad、backward、step，"
                     "然后记下这个 loss.item()；不要在 step 之后重新计算损失再记录。第一个损失只取决于初始参数和数据。",
             hint_en="train_losses[k] is the loss before update k: loss = F.cross_entropy(...), then zero_grad, "
                     "backward, step, and record that loss.item(); do not compute the loss again after the step. The "
                     "first loss depends on the initial params and the data only.")


# an untrainable configuration: without the encoding the model cannot tell the order, but 32 training
# sequences over 29 filler ids are easy to memorise (training accuracy ~1.0 after 20 steps)
CHANCE_SEEDS = (0, 1, 2)


def chance_config(seed):
    """A config that memorises its 32 training sequences without the encoding: its test set scores like chance."""
    return config_for(seed, n_train=32, n_test=32, T=8, V=32, d=16, pe=False, steps=20, lr=0.05)


@prop(EX, RUN, "unseen_test_set_scores_like_chance",
      zh="没有位置编码时模型只能猜：在真正没见过的测试集上（3 个 seed × 32 个序列），答对的个数在 Binomial(96, 1/2) "
         "的精确区间内（错误拒绝概率 <= 1e-9）。这个配置能把 32 个训练序列背下来，所以从训练集里切出来的“测试集”会远高于它",
      en="without positional encoding the model can only guess: on a test set it has really never seen (3 seeds x 32 "
         "sequences) the number right lies in the exact interval of Binomial(96, 1/2) (false rejection <= 1e-9). This "
         "configuration memorises its 32 training sequences, so a \"test set\" cut from the training data scores far "
         "above it")
def run_chance(student):
    # The swap argument (module docstring): a test sequence and its A/B swap hold the same multiset, so the
    # model without the encoding predicts the same for both, and exactly one of them is right; test sequences
    # are drawn independently of the params and of each other, so the count right is exactly Binomial(N, 1/2).
    from ..bert_masking.properties import DELTA, binomial_interval

    accs = [_run(student, chance_config(s))[1] for s in CHANCE_SEEDS]
    n = chance_config(0)["data"]["n_test"]
    right, N = round(sum(accs) * n), n * len(CHANCE_SEEDS)
    lo, hi = binomial_interval(N, 0.5, DELTA)
    if not lo <= right <= hi:
        fail(f"没有位置编码时，{len(CHANCE_SEEDS)} 个 seed 的测试集一共答对 {right} / {N}；只能猜的模型在真正没见过的测试集上"
             f"答对的个数服从 Binomial({N}, 1/2)，落在 [{lo}, {hi}] 之外的概率小于 1e-9。测试集不是独立抽取的：它来自训练数据"
             f"（切片、同一批序列），或者准确率不是在测试集上算的。",
             f"without positional encoding the test sets of the {len(CHANCE_SEEDS)} seeds got {right} / {N} right; a "
             f"model that can only guess gets Binomial({N}, 1/2) right on a test set it has never seen, outside "
             f"[{lo}, {hi}] with probability below 1e-9. The test set is not drawn independently: it comes from the "
             f"training data (a slice, the same sequences), or the accuracy is not measured on it.",
             show={"config (seed 0)": chance_config(0), "test_accuracy": [round(a, 4) for a in accs]},
             student=student, hint_zh=TEST_LAST_ZH, hint_en=TEST_LAST_EN)


# ---------------------------------------------------------------- run_ablation


def _ablation(student, base, factor, values, seeds_):
    out = student.call(ABL, copy_data(base), factor, copy_data(values), list(seeds_))
    shape_ok = isinstance(out, (list, tuple)) and len(out) == len(values) and \
        all(isinstance(r, (list, tuple)) and len(r) == len(seeds_) for r in out)
    if not shape_ok:
        got = [len(r) if isinstance(r, (list, tuple)) else type(r).__name__ for r in out] \
            if isinstance(out, (list, tuple)) else type(out).__name__
        fail(f"run_ablation 应返回 len(values) = {len(values)} 个列表，每个含 len(seeds) = {len(seeds_)} 个结果"
             f"（results[i][j]：第 i 个值、第 j 个 seed）。",
             f"run_ablation should return len(values) = {len(values)} lists of len(seeds) = {len(seeds_)} results each "
             f"(results[i][j]: value i, seed j).",
             show={"factor": factor, "values": values, "seeds": list(seeds_), "实际 got (每行长度 lengths)": got},
             student=student,
             hint_zh="外层按 values，内层按 seeds：[[run_experiment(...) for s in seeds] for config in configs]。"
                     "每个值都要用每个 seed 跑一遍，不要用 zip 把值和 seed 配对。",
             hint_en="Values outside, seeds inside: [[run_experiment(...) for s in seeds] for config in configs]. Every "
                     "value runs with every seed; do not pair values with seeds through zip.")
    return out


def _abl_base(seed=0, pe=True):
    return config_for(seed, n_train=20, n_test=17, T=4, V=6, d=4, pe=pe, steps=2, lr=0.05)


@st.composite
def ablation_runs(draw):
    """(base, factor, values, seeds) on small experiments."""
    base = draw(experiments())
    factor, values = draw(st.sampled_from([
        ("model.positional_encoding", [True, False]),
        ("model.positional_encoding", [False, True]),
        ("model.d_model", [2, 4]),
        ("train.lr", [0.1, 0.01]),
        ("train.steps", [1, 3, 2]),
        ("data.n_train", [12, 24]),
    ]))
    return base, factor, values, draw(st.lists(st.integers(0, 1000), min_size=1, max_size=3, unique=True))


@prop(EX, ABL, "one_result_per_value_and_seed",
      zh="run_ablation 返回 len(values) 个列表，每个含 len(seeds) 个结果：results[i][j] 是第 i 个值、第 j 个 seed 的运行",
      en="run_ablation returns len(values) lists of len(seeds) results: results[i][j] is the run of value i with "
         "seed j")
@given(case=ablation_runs())
@example(case=(_abl_base(), "model.positional_encoding", [True, False], [1, 2, 3]))
@example(case=(_abl_base(), "train.steps", [1, 2, 3], [5, 6]))
def ablation_shape(student, case):
    base, factor, values, seeds_ = case
    out = _ablation(student, base, factor, values, seeds_)
    for i, row in enumerate(out):
        for j, r in enumerate(row):
            _parse(student, r, set_path(base, factor, values[i]), label=f"results[{i}][{j}]")


@prop(EX, ABL, "every_value_runs_with_every_seed",
      zh="results[i][j] 与 run_experiment(第 i 个配置，seed 换成 seeds[j]) 完全相同：每个值都用同样的 seeds，"
         "各组之间只差这一个因素",
      en="results[i][j] is exactly run_experiment(config i with its seed set to seeds[j]): every value runs with the "
         "same seeds, so the arms differ in the factor only")
@given(case=ablation_runs())
@example(case=(_abl_base(), "model.positional_encoding", [True, False], [1, 2]))
@example(case=(_abl_base(3), "model.d_model", [2, 4], [8]))
@example(case=(_abl_base(0, pe=False), "train.lr", [0.1, 0.01], [0, 5]))
def ablation_same_seeds(student, case):
    base, factor, values, seeds_ = case
    configs = [set_path(base, factor, v) for v in values]
    wants = [[_run(student, {**c, "seed": s}) for s in seeds_] for c in configs]  # the student's own runs
    out = _ablation(student, base, factor, values, seeds_)  # called last: the counterexample shows this call
    for i, row in enumerate(out):
        for j, r in enumerate(row):
            got, want = _parse(student, r, configs[i], label=f"results[{i}][{j}]"), wants[i][j]
            if got != want:
                fail(f"results[{i}][{j}] 不等于 run_experiment(第 {i} 个配置，seed={seeds_[j]})：这个值的第 {j} 次运行"
                     f"没有用 seeds[{j}]（或者配置不是 make_ablation 的第 {i} 个）。",
                     f"results[{i}][{j}] is not run_experiment(config {i} with seed={seeds_[j]}): the run of value {i} "
                     f"with seed {j} did not use seeds[{j}] (or its config is not make_ablation's config {i}).",
                     show={"base": base, "factor": factor, "values": values, "seeds": list(seeds_),
                           f"期望 expected results[{i}][{j}]": {"train_losses": want[0], "test_accuracy": want[1]},
                           f"实际 got results[{i}][{j}]": {"train_losses": got[0], "test_accuracy": got[1]}},
                     student=student,
                     hint_zh="configs = make_ablation(base, factor, values)；results[i][j] = run_experiment("
                             "{**configs[i], \"seed\": seeds[j]})。每组都用同一组 seeds：不要加上组号、不要忽略 seeds，"
                             "否则组间的差别可能只是运气（数据和初始化不同）。",
                     hint_en="configs = make_ablation(base, factor, values); results[i][j] = run_experiment("
                             "{**configs[i], \"seed\": seeds[j]}). Every arm uses the same seeds: do not add the arm's "
                             "index or ignore seeds, or the difference between arms may be luck (other data, other init).")


@prop(EX, ABL, "rejects_bad_arguments",
      zh="factor 是 \"seed\"、seeds 为空或有重复时抛出 ValueError（seed 是重复实验用的，不是要消融的因素），"
         "make_ablation 抛出的 ValueError 也照样抛出",
      en="factor \"seed\", no seeds or duplicate seeds raise ValueError (the seed repeats the experiment; it is not a "
         "factor to ablate), and so does whatever make_ablation rejects")
@given(bad=st.sampled_from(["seed_factor", "no_seeds", "duplicate_seeds", "missing_factor", "one_value",
                             "duplicate_values"]), seed=st.integers(0, 50))
@example(bad="seed_factor", seed=0)
@example(bad="no_seeds", seed=0)
@example(bad="duplicate_seeds", seed=3)
@example(bad="missing_factor", seed=1)
@example(bad="duplicate_values", seed=2)
def ablation_rejects(student, bad, seed):
    base = _abl_base(seed)
    factor, values, seeds_ = {"seed_factor": ("seed", [1, 2], [0, 1]),
                              "no_seeds": ("model.positional_encoding", [True, False], []),
                              "duplicate_seeds": ("model.positional_encoding", [True, False], [seed, seed + 1, seed]),
                              # whatever make_ablation raises
                              "missing_factor": ("model.dropout", [0.0, 0.1], [seed]),
                              "one_value": ("train.lr", [0.1], [seed]),
                              "duplicate_values": ("train.lr", [0.1, 0.01, 0.1], [seed])}[bad]
    if not student.raises(ValueError, ABL, copy_data(base), factor, values, seeds_):
        why_zh = {"seed_factor": "seed 不能作为消融的因素", "no_seeds": "没有 seed", "duplicate_seeds": "seeds 有重复",
                  "missing_factor": "base 里没有这个 factor，make_ablation 会抛出 ValueError",
                  "one_value": "只有 1 个值，make_ablation 会抛出 ValueError",
                  "duplicate_values": "values 有重复，make_ablation 会抛出 ValueError"}[bad]
        why_en = {"seed_factor": "the seed cannot be the ablated factor", "no_seeds": "there are no seeds",
                  "duplicate_seeds": "seeds holds a duplicate",
                  "missing_factor": "the factor is not in base, which make_ablation rejects with ValueError",
                  "one_value": "there is only 1 value, which make_ablation rejects with ValueError",
                  "duplicate_values": "values holds a duplicate, which make_ablation rejects with ValueError"}[bad]
        fail(f"run_ablation(base, {factor!r}, {values!r}, {seeds_!r}) 没有抛出 ValueError（{why_zh}）。",
             f"run_ablation(base, {factor!r}, {values!r}, {seeds_!r}) did not raise ValueError ({why_en}).",
             show={"base": base}, student=student,
             hint_zh="run_ablation 会把每个配置的 seed 换成 seeds[j]：消融 \"seed\" 会被悄悄覆盖掉，没有意义；"
                     "至少一个 seed，且互不相同（重复的 seed 只是把同一次运行算了两遍）。配置要用 make_ablation(base, "
                     "factor, values) 生成，它的 ValueError（factor 不存在、少于 2 个值、值重复）也要传出来。",
             hint_en="run_ablation sets each config's seed to seeds[j]: ablating \"seed\" would be silently overwritten "
                     "and means nothing; there must be at least one seed, all distinct (a repeated seed counts the same "
                     "run twice). Build the configs with make_ablation(base, factor, values) and let its ValueError "
                     "(a factor not in base, fewer than 2 values, a repeated value) through.")
