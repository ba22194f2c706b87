"""Hidden properties of the `timeseries` exercise: the information boundary in preprocessing.

    chronological_split(series, n_train) -> series[:n_train], series[n_train:]   (never shuffled)
    fit_standardizer(train)              -> mean, population std over time (std 0 -> 1)
    sliding_windows(series, w, h)        -> X[i] = series[i:i+w], y[i] = series[i+w-1+h]
    make_datasets(series, n_train, w, h) -> split, standardise with the training statistics,
                                            window each period on its own

The test period is the future.  The central property is a counterfactual: change the test
period (any values, by a lot) and nothing computed for training — training windows, training
targets, the mean and the std — may change.  The window properties use a series whose first
feature is the time index t itself, so "the target is h steps after the last input" and "no
input is its own target" are read off directly.

Tolerances: statistics in float32 summed in another order (or in float64 and cast) differ by
a few eps32 times the values (|x| <= 2): atol = rtol = 1e-5.  Standardised values divide by a
std that can be as small as ~0.005, so they get rtol = atol = 1e-4.  A counterfactual compares
the student's own outputs before and after a change: equal up to 1e-6 (the same arithmetic).
"""
from dataclasses import dataclass

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ...properties._harness import check_close, check_equal, check_tensor, fail, prop, unpack
from ...properties.strategies import sizes

EX = "timeseries"
SPLIT, FIT, WIN, MAKE = "chronological_split", "fit_standardizer", "sliding_windows", "make_datasets"
seeds = st.integers(0, 2 ** 31 - 1)


# ---------------------------------------------------------------- trusted references


def split_ref(series, n_train):
    """The reference split: the first n_train rows, then the rest."""
    return series[:n_train], series[n_train:]


def fit_ref(train):
    """The reference standardizer of the training rows: (mean, std), a std of 0 read as 1."""
    t = train.double()
    mean, std = t.mean(0), t.std(0, correction=0)
    return mean, torch.where(std == 0, torch.ones_like(std), std)


def windows_ref(series, window, horizon):
    """The reference windows: X[i] = series[i:i + window], y[i] the row `horizon` steps after its last."""
    M = series.shape[0] - window - horizon + 1
    X = torch.stack([series[i:i + window] for i in range(M)])
    y = series[window - 1 + horizon:window - 1 + horizon + M]
    return X, y


def make_ref(series, n_train, window, horizon):
    """The reference datasets: split, standardized with the training period's statistics, windowed."""
    train, test = split_ref(series.double(), n_train)
    mean, std = fit_ref(train)
    return (*windows_ref((train - mean) / std, window, horizon), *windows_ref((test - mean) / std, window, horizon),
            mean, std)


# ---------------------------------------------------------------- strategies


def _series(N, F, seed, dtype=torch.float32, time_index=False):
    """(N, F): entries in [-2, 2] with two decimals; with `time_index`, column 0 is t = 0..N-1."""
    g = torch.Generator().manual_seed(int(seed))
    s = torch.randint(-200, 201, (N, F), generator=g, dtype=torch.int64).double() / 100
    if time_index:
        s[:, 0] = torch.arange(N, dtype=torch.float64)
    return s.to(dtype)


@st.composite
def series_cases(draw, min_N=2, max_N=16, time_index=False):
    """A series (N, F), F <= 3, float32 or float64."""
    N, F = draw(sizes(min_N, max_N)), draw(sizes(1, 3))
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    return _series(N, F, draw(seeds), dtype, time_index)


@st.composite
def split_cases(draw):
    """(series, n_train) with both periods non-empty."""
    s = draw(series_cases())
    return s, draw(st.integers(1, s.shape[0] - 1))


@st.composite
def window_cases(draw, time_index=True):
    """(series, window, horizon) with at least one window: N >= window + horizon."""
    window, horizon = draw(sizes(1, 5)), draw(sizes(1, 4))
    N = draw(st.integers(window + horizon, window + horizon + 8))
    F = draw(sizes(1, 3))
    return _series(N, F, draw(seeds), draw(st.sampled_from([torch.float32, torch.float64])), time_index), window, horizon


@dataclass
class Pipeline:
    series: torch.Tensor  # (N, F)
    n_train: int
    window: int
    horizon: int
    changed: torch.Tensor  # the same series with test-period values changed


@st.composite
def pipeline_cases(draw):
    """Both periods long enough for a window; `changed` differs in some test-period values, by a lot."""
    window, horizon = draw(sizes(1, 4)), draw(sizes(1, 3))
    need = window + horizon
    n_train = draw(st.integers(need, need + 6))
    n_test = draw(st.integers(need, need + 4))
    F, seed = draw(sizes(1, 3)), draw(seeds)
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    s = _series(n_train + n_test, F, seed, dtype)
    which = draw(st.sampled_from(["all", "one", "first", "last"]))
    return Pipeline(s, n_train, window, horizon, _change_test(s, n_train, which, seed))


def _change_test(s, n_train, which, seed):
    """`s` with test-period rows changed: every one, one in the middle, the first or the last."""
    c = s.clone()
    rows = {"all": slice(n_train, None), "one": (n_train + s.shape[0]) // 2, "first": n_train, "last": -1}[which]
    g = torch.Generator().manual_seed(int(seed) + 1)
    c[rows] = c[rows] * 3 + 10 + torch.rand(c[rows].shape, generator=g, dtype=torch.float64).to(s.dtype)
    return c


# ---------------------------------------------------------------- pinned examples

def _pipe(n_train, n_test, F, window, horizon, which="all", dtype=torch.float32, seed=1):
    s = _series(n_train + n_test, F, seed, dtype)
    return Pipeline(s, n_train, window, horizon, _change_test(s, n_train, which, seed))


def _show_series(series, **more):
    return {"series": series, **more}


# ---------------------------------------------------------------- chronological_split

@prop(EX, SPLIT, "keeps_time_order",
      zh="train = series[:n_train]，test = series[n_train:]：按时间顺序切开，从不打乱、不丢行",
      en="train = series[:n_train], test = series[n_train:]: cut in time order, never shuffled, no row lost")
@given(case=split_cases())
@example(case=(_series(2, 1, 1), 1))
@example(case=(_series(10, 2, 2, time_index=True), 7))
@example(case=(_series(5, 3, 3, torch.float64), 4))
def split_order(student, case):
    series, n_train = case
    train, test = unpack(student.call(SPLIT, series, n_train), 2, SPLIT, student)
    exp_train, exp_test = split_ref(series, n_train)
    hint_zh = ("时间序列的测试集是“未来”：前 n_train 个时间步做训练，其余做测试，顺序不变。"
               "不要用 randperm / shuffle / train_test_split(shuffle=True)：打乱后训练集里混进了未来的数据。")
    hint_en = ("The test set of a time series is the future: the first n_train steps train, the rest test, in order. "
               "Do not use randperm / shuffle / train_test_split(shuffle=True): shuffled, the training set holds "
               "data from the future.")
    show = _show_series(series, n_train=n_train)
    check_tensor(train, "train", shape=exp_train.shape, student=student)
    check_tensor(test, "test", shape=exp_test.shape, student=student)
    for x, what in ((train, "train"), (test, "test")):
        if x.dtype != series.dtype:
            fail(f"{what} 的 dtype 应为 {series.dtype}（与 series 相同），实际为 {x.dtype}。",
                 f"{what} should have dtype {series.dtype} (series' dtype), got {x.dtype}.", student=student, show=show,
                 hint_zh="切分只是切片：series[:n_train] 和 series[n_train:] 保持原来的 dtype，不要转换类型。",
                 hint_en="A split is two slices: series[:n_train] and series[n_train:] keep the dtype; convert nothing.")
    check_equal(train, exp_train, "train", student=student, show=show, hint_zh=hint_zh, hint_en=hint_en)
    check_equal(test, exp_test, "test", student=student, show=show, hint_zh=hint_zh, hint_en=hint_en)


@prop(EX, SPLIT, "rejects_bad_n_train",
      zh="n_train 不在 [1, N-1] 内（某一段为空）时抛出 ValueError",
      en="an n_train outside [1, N-1] (an empty period) raises ValueError")
@given(N=sizes(2, 8), bad=st.sampled_from(["zero", "N", "above", "negative"]))
@example(N=5, bad="zero")
@example(N=5, bad="N")
def split_rejects(student, N, bad):
    n_train = {"zero": 0, "N": N, "above": N + 3, "negative": -1}[bad]
    series = _series(N, 2, N)
    if not student.raises(ValueError, SPLIT, series, n_train):
        fail(f"chronological_split(series (N={N}), n_train={n_train}) 没有抛出 ValueError。",
             f"chronological_split(series (N={N}), n_train={n_train}) did not raise ValueError.", student=student,
             hint_zh="训练段和测试段都不能为空：if not 1 <= n_train < N: raise ValueError(...)。"
                     "注意负数切片 series[:-1] 不会报错，只会悄悄切错。",
             hint_en="Neither period may be empty: if not 1 <= n_train < N: raise ValueError(...). Note that a "
                     "negative slice series[:-1] raises nothing, it silently cuts elsewhere.")


# ---------------------------------------------------------------- fit_standardizer

@prop(EX, FIT, "matches_training_statistics",
      zh="mean 和 std 是每个特征在时间轴（dim 0）上的均值和总体标准差（除以 n，不是 n-1），形状 (F,)，dtype 与输入相同",
      en="mean and std are each feature's mean and population std over time (dim 0; divide by n, not n-1), "
         "shape (F,), in the input's dtype")
@given(train=series_cases())
@example(train=_series(2, 1, 4))
@example(train=_series(5, 3, 5))
@example(train=_series(8, 2, 6, torch.float64))
def fit_values(student, train):
    mean, std = unpack(student.call(FIT, train), 2, FIT, student)
    F = train.shape[1]
    exp_mean, exp_std = fit_ref(train)
    for x, what in ((mean, "mean"), (std, "std")):
        check_tensor(x, what, shape=(F,), student=student)
        if x.dtype != train.dtype:
            fail(f"{what} 的 dtype 应为 {train.dtype}（与输入相同），实际为 {x.dtype}。",
                 f"{what} should have dtype {train.dtype} (the input's), got {x.dtype}.", student=student,
                 hint_zh="不要转成 numpy 或 float32；直接用 train.mean(0)、train.std(0, correction=0)。",
                 hint_en="Do not go through numpy or float32; use train.mean(0) and train.std(0, correction=0).")
    show = {"train": train}
    check_close(mean, exp_mean, "mean", atol=1e-5, rtol=1e-5, student=student, show=show,
                hint_zh="每个特征（列）一个均值：在时间轴上求平均，train.mean(dim=0)，形状 (F,)。",
                hint_en="One mean per feature (column): average over time, train.mean(dim=0), shape (F,).")
    check_close(std, exp_std, "std", atol=1e-5, rtol=1e-5, student=student, show=show,
                hint_zh="总体标准差（除以 n，和 sklearn 的 StandardScaler 一样）：train.std(dim=0, correction=0)；"
                        "torch 默认的 std 除以 n-1。在时间轴 dim=0 上算，每个特征一个。",
                hint_en="The population std (divide by n, as sklearn's StandardScaler): train.std(dim=0, correction=0); "
                        "torch's default std divides by n-1. Over time, dim=0, one per feature.")


@prop(EX, FIT, "constant_feature_gets_std_one",
      zh="训练期里不变的特征（std = 0）得到 std = 1，这样标准化不会除以 0",
      en="a feature that is constant over the training period (std = 0) gets std = 1, so standardising never "
         "divides by 0")
@given(train=series_cases(), col=st.integers(0, 2), value=st.sampled_from([0.0, 1.5, -0.25, 2.0, -1.75]))
@example(train=_series(1, 1, 7), col=0, value=0.5)
@example(train=_series(4, 3, 8), col=1, value=-1.25)
def fit_constant(student, train, col, value):
    # a dyadic constant: its sum and mean are exact in float32, so any way of computing the std gives
    # exactly 0 (a constant like 0.1 leaves ~1e-8 of rounding in float32's mean: the contract says
    # "a std of exactly 0", so that is not tested)
    train = train.clone()
    col = col % train.shape[1]
    train[:, col] = value
    mean, std = unpack(student.call(FIT, train), 2, FIT, student)
    check_tensor(std, "std", shape=(train.shape[1],), student=student)
    s = float(std.detach()[col])
    if s != 1.0:
        fail(f"特征 {col} 在训练期里是常数，std[{col}] 应为 1，实际为 {s:.6g}。",
             f"feature {col} is constant over the training period: std[{col}] should be 1, got {s:.6g}.",
             student=student, show={"train": train, "std": std},
             hint_zh="std = torch.where(std == 0, torch.ones_like(std), std)（sklearn 也这样做）；不要加 eps：1e-8 会把测试期的值放大 1e8 倍。",
             hint_en="std = torch.where(std == 0, torch.ones_like(std), std) (as sklearn does); do not add an eps: "
                     "1e-8 would blow up test-period values by 1e8.")


# ---------------------------------------------------------------- sliding_windows

def _call_windows(student, series, window, horizon):
    X, y = unpack(student.call(WIN, series, window, horizon), 2, WIN, student)
    M, F = series.shape[0] - window - horizon + 1, series.shape[1]
    if not isinstance(X, torch.Tensor) or tuple(X.shape) != (M, window, F):
        fail(f"X 的形状应为 (M, window, F) = {(M, window, F)}（M = N - window - horizon + 1 = {M}），"
             f"实际为 {tuple(X.shape) if isinstance(X, torch.Tensor) else type(X).__name__}。",
             f"X should have shape (M, window, F) = {(M, window, F)} (M = N - window - horizon + 1 = {M}), got "
             f"{tuple(X.shape) if isinstance(X, torch.Tensor) else type(X).__name__}.",
             student=student, show={"series": series, "window, horizon": f"window={window}, horizon={horizon}"},
             hint_zh="最后一个窗口的目标是最后一个时间步 N-1：i + window - 1 + horizon = N - 1，所以 i 从 0 到 N - window - horizon。",
             hint_en="The last window's target is the last step N-1: i + window - 1 + horizon = N - 1, so i runs "
                     "from 0 to N - window - horizon.")
    check_tensor(y, "y", shape=(M, F), student=student)
    return X, y


@prop(EX, WIN, "matches_reference",
      zh="X[i] = series[i : i+window]，y[i] = series[i + window - 1 + horizon]，共 M = N - window - horizon + 1 个窗口，dtype 不变",
      en="X[i] = series[i : i+window], y[i] = series[i + window - 1 + horizon], M = N - window - horizon + 1 "
         "windows, dtype kept")
@given(case=window_cases(time_index=False))
@example(case=(_series(2, 1, 9), 1, 1))
@example(case=(_series(6, 2, 10), 3, 1))
@example(case=(_series(9, 1, 11, torch.float64), 2, 3))
def windows_values(student, case):
    series, window, horizon = case
    X, y = _call_windows(student, series, window, horizon)
    eX, ey = windows_ref(series, window, horizon)
    show = {"series": series, "window, horizon": f"window={window}, horizon={horizon}"}
    for got, want, what in ((X, eX, "X"), (y, ey, "y")):
        if got.dtype != series.dtype:
            fail(f"{what} 的 dtype 应为 {series.dtype}，实际为 {got.dtype}。",
                 f"{what} should have dtype {series.dtype}, got {got.dtype}.", student=student, show=show,
                 hint_zh="用切片和 torch.stack 组装窗口，不要经过 numpy 或 torch.tensor(list)。",
                 hint_en="Build the windows with slices and torch.stack, not through numpy or torch.tensor(list).")
        check_close(got, want, what, atol=0, rtol=0, student=student, show=show,
                    hint_zh="窗口 i 的输入是时间步 i, ..., i+window-1；目标在最后一个输入之后 horizon 步：i + window - 1 + horizon。",
                    hint_en="Window i's inputs are steps i, ..., i+window-1; its target is horizon steps after the last "
                            "input: i + window - 1 + horizon.")


@prop(EX, WIN, "target_is_horizon_steps_ahead",
      zh="每个窗口的输入是连续的时间步，目标恰好在最后一个输入之后 horizon 步（horizon = 1 是下一步）",
      en="each window's inputs are consecutive steps and its target is exactly horizon steps after the last input "
         "(horizon = 1 is the next step)")
@given(case=window_cases())
@example(case=(_series(2, 1, 12, time_index=True), 1, 1))
@example(case=(_series(8, 2, 13, time_index=True), 3, 2))
@example(case=(_series(7, 1, 14, time_index=True), 1, 4))
def windows_horizon(student, case):
    series, window, horizon = case
    X, y = _call_windows(student, series, window, horizon)
    tX, ty = X.detach()[:, :, 0].double(), y.detach()[:, 0].double()  # time indices
    show = {"series (column 0 = t)": series, "window, horizon": f"window={window}, horizon={horizon}",
            "X[:, :, 0] (t)": tX, "y[:, 0] (t)": ty}
    gap = ty - tX[:, -1]
    if not bool((gap == horizon).all()):
        i = int((gap != horizon).nonzero()[0])
        fail(f"窗口 {i}：最后一个输入是 t = {tX[i, -1].item():g}，目标却是 t = {ty[i].item():g}（相差 {gap[i].item():g}，应为 horizon = {horizon}）。",
             f"window {i}: its last input is t = {tX[i, -1].item():g} but its target is t = {ty[i].item():g} "
             f"({gap[i].item():g} steps later, should be horizon = {horizon}).", student=student, show=show,
             hint_zh="目标的下标是 i + window - 1 + horizon：最后一个输入的下标 i + window - 1，再往后 horizon 步。常见的差一：i + window + horizon。",
             hint_en="The target's index is i + window - 1 + horizon: the last input is i + window - 1, then horizon "
                     "steps on. The usual off-by-one is i + window + horizon.")
    steps = tX[:, 1:] - tX[:, :-1]
    if not bool((steps == 1).all()):
        fail("有窗口的输入不是连续的时间步。", "some window's inputs are not consecutive steps.", student=student,
             show=show, hint_zh="X[i] = series[i : i + window]。", hint_en="X[i] = series[i : i + window].")


@prop(EX, WIN, "no_window_contains_its_target",
      zh="信息边界：没有一个窗口的输入包含它自己的目标（目标时间步不在输入的时间步里）",
      en="the information boundary: no window's input contains its own target (the target's step is not among "
         "its input steps)")
@given(case=window_cases())
@example(case=(_series(3, 1, 15, time_index=True), 2, 1))
@example(case=(_series(6, 2, 16, time_index=True), 1, 1))
def windows_no_leak(student, case):
    series, window, horizon = case
    X, y = _call_windows(student, series, window, horizon)
    tX, ty = X.detach()[:, :, 0].double(), y.detach()[:, 0].double()
    leak = (tX == ty[:, None]).any(1) | (tX > ty[:, None]).any(1)
    if bool(leak.any()):
        i = int(leak.nonzero()[0])
        fail(f"窗口 {i} 的输入（t = {tX[i].tolist()}）包含或越过了它的目标 t = {ty[i].item():g}：模型只要抄答案就行。",
             f"window {i}'s input (t = {tX[i].tolist()}) contains or passes its own target t = {ty[i].item():g}: the "
             f"model only has to copy the answer.", student=student,
             show={"series (column 0 = t)": series, "window, horizon": f"window={window}, horizon={horizon}"},
             hint_zh="输入是 series[i : i + window]（不含 i + window），目标是 series[i + window - 1 + horizon]，horizon >= 1，所以目标总在输入之后。",
             hint_en="The input is series[i : i + window] (i + window excluded), the target series[i + window - 1 + "
                     "horizon] with horizon >= 1, so the target always comes after the input.")


@prop(EX, WIN, "rejects_bad_arguments",
      zh="window < 1、horizon < 1 或序列太短（N < window + horizon，没有一个窗口）时抛出 ValueError",
      en="window < 1, horizon < 1 or a series too short for one window (N < window + horizon) raises ValueError")
@given(bad=st.sampled_from([(5, 0, 1), (5, 1, 0), (4, 3, 2), (3, 3, 1), (6, -1, 2)]))
@example(bad=(5, 1, 0))
@example(bad=(4, 3, 2))
def windows_rejects(student, bad):
    N, window, horizon = bad
    if not student.raises(ValueError, WIN, _series(N, 1, N), window, horizon):
        fail(f"sliding_windows(series (N={N}), window={window}, horizon={horizon}) 没有抛出 ValueError。",
             f"sliding_windows(series (N={N}), window={window}, horizon={horizon}) did not raise ValueError.",
             student=student,
             hint_zh="horizon = 0 意味着目标就是最后一个输入（信息泄漏）；N < window + horizon 时一个窗口也没有。先检查再切片。",
             hint_en="horizon = 0 makes the target the last input (a leak); with N < window + horizon there is no "
                     "window at all. Validate before slicing.")


# ---------------------------------------------------------------- make_datasets

def _call_make(student, p, series=None):
    s = p.series if series is None else series
    out = unpack(student.call(MAKE, s, p.n_train, p.window, p.horizon), 6, MAKE, student)
    ref = make_ref(s, p.n_train, p.window, p.horizon)
    names = ("X_train", "y_train", "X_test", "y_test", "mean", "std")
    for x, r, what in zip(out, ref, names):
        _windows_cross_the_boundary(x, r, what, p, student)
        check_tensor(x, what, shape=r.shape, student=student)
    return out, ref, names


def _windows_cross_the_boundary(x, r, what, p, student):
    """More windows than a period holds: some window takes inputs or its target across n_train."""
    if what not in ("X_train", "y_train", "X_test", "y_test") or not isinstance(x, torch.Tensor) \
            or x.dim() != r.dim() or x.dim() == 0 or x.shape[1:] != r.shape[1:] or x.shape[0] <= r.shape[0]:
        return
    train = what.endswith("_train")
    period_zh, period_en = ("训练期", "training period") if train else ("测试期", "test period")
    steps = p.n_train if train else p.series.shape[0] - p.n_train
    k, m = int(x.shape[0]), int(r.shape[0])
    fail(f"{what} 有 {k} 个窗口，可{period_zh}（{steps} 个时间步）只容得下 {m} 个"
         f"（步数 - window - horizon + 1）：多出来的 {k - m} 个窗口跨过了训练期和测试期的边界"
         f"（时间步 n_train = {p.n_train}）——" + ("训练窗口的输入或目标来自测试期，训练时就见到了未来。"
                                               if train else "测试窗口的输入来自训练期。"),
         f"{what} has {k} windows, but the {period_en} ({steps} steps) holds only {m} (steps - window - horizon + 1): "
         f"the {k - m} extra window{'s cross' if k - m > 1 else ' crosses'} the boundary between training and test "
         f"(step n_train = {p.n_train}): "
         + ("a training window takes inputs or its target from the test period, so training sees the future."
            if train else "a test window takes inputs from the training period."),
         student=student, show=_pshow(p), what=what, picture="shape", got=x, extra={"expected_shape": list(r.shape)},
         hint_zh="先切分，再对两个时期分别调用 sliding_windows：一个窗口（连同它的目标）必须完全落在一个时期里。",
         hint_en="Split first, then call sliding_windows on each period on its own: a window, target included, must "
                 "lie entirely inside one period.")


def _pshow(p, **more):
    return {"series": p.series, "n_train, window, horizon": f"n_train={p.n_train}, window={p.window}, "
                                                            f"horizon={p.horizon}", **more}


@prop(EX, MAKE, "test_period_does_not_change_training",
      zh="信息边界：改变测试期（时间步 >= n_train）的任何值，训练窗口、训练目标、mean 和 std 都完全不变",
      en="the information boundary: changing any value of the test period (steps >= n_train) changes nothing "
         "computed for training: training windows, training targets, mean and std")
@given(p=pipeline_cases())
@example(p=_pipe(4, 3, 1, 2, 1))
@example(p=_pipe(6, 4, 2, 3, 1, which="first"))
@example(p=_pipe(5, 5, 1, 2, 2, which="one", dtype=torch.float64))
@example(p=_pipe(8, 3, 3, 1, 2, which="last"))
def make_no_leak(student, p):
    before, _, names = _call_make(student, p)
    after, _, _ = _call_make(student, p, p.changed)
    for i in (0, 1, 4, 5):
        b, a = before[i].detach().double(), after[i].detach().double()
        bad = ~torch.isclose(a, b, atol=1e-6, rtol=1e-6)
        if bool(bad.any()):
            fail(f"只改变了测试期（时间步 >= {p.n_train}）的值，{names[i]} 却变了（{int(bad.sum())} 个元素）：训练用到了未来。",
                 f"only test-period values (steps >= {p.n_train}) changed, yet {names[i]} changed in "
                 f"{int(bad.sum())} entries: training saw the future.", student=student,
                 show=_pshow(p, **{"改变后 changed series": p.changed, f"之前 before {names[i]}": before[i],
                                   f"之后 after {names[i]}": after[i]}),
                 hint_zh="先切分，再只用训练期拟合 mean/std（fit_standardizer(train)，不是整条序列），"
                         "训练窗口只在训练期里取（窗口的目标也不能跨进测试期）。",
                 hint_en="Split first, then fit mean/std on the training period only (fit_standardizer(train), not the "
                         "whole series), and take training windows inside the training period (a window's target "
                         "must not reach into the test period either).")


@prop(EX, MAKE, "test_standardised_with_training_statistics",
      zh="测试期用训练期的 mean 和 std 标准化（不是测试期自己的统计量）：X_test · std + mean 还原出测试期的原始窗口",
      en="the test period is standardised with the training mean and std (not its own statistics): "
         "X_test · std + mean gives back the raw test windows")
@given(p=pipeline_cases())
@example(p=_pipe(4, 4, 1, 2, 1))
@example(p=_pipe(6, 5, 2, 2, 2, seed=3))
def make_test_stats(student, p):
    (Xtr, ytr, Xte, yte, mean, std), ref, _ = _call_make(student, p)
    raw_X, raw_y = windows_ref(p.series[p.n_train:].double(), p.window, p.horizon)
    m, s = mean.detach().double(), std.detach().double()
    hint_zh = ("部署时只知道过去：测试期必须用训练期的 mean 和 std 标准化，(test - mean_train) / std_train。"
               "用测试期自己的统计量，等于偷看了整个未来。")
    hint_en = ("At deployment only the past is known: standardise the test period with the training mean and std, "
               "(test - mean_train) / std_train. Its own statistics would peek at the whole future.")
    check_close(Xte.detach().double() * s + m, raw_X, "X_test · std + mean", atol=1e-4, rtol=1e-4, student=student,
                show=_pshow(p, mean=mean, std=std), hint_zh=hint_zh, hint_en=hint_en)
    check_close(yte.detach().double() * s + m, raw_y, "y_test · std + mean", atol=1e-4, rtol=1e-4, student=student,
                show=_pshow(p, mean=mean, std=std), hint_zh=hint_zh, hint_en=hint_en)


@prop(EX, MAKE, "matches_reference",
      zh="六个输出都与参考实现一致：切分、只用训练期拟合、两个时期各自取窗口",
      en="all six outputs match the reference: split, fit on the training period only, windows taken in each "
         "period on its own")
@given(p=pipeline_cases())
@example(p=_pipe(3, 2, 1, 1, 1))
@example(p=_pipe(7, 5, 3, 3, 2, dtype=torch.float64))
def make_values(student, p):
    out, ref, names = _call_make(student, p)
    for x, what in zip(out, names):
        if x.dtype != p.series.dtype:
            fail(f"{what} 的 dtype 应为 {p.series.dtype}（与 series 相同），实际为 {x.dtype}。",
                 f"{what} should have dtype {p.series.dtype} (series' dtype), got {x.dtype}.", student=student,
                 show=_pshow(p),
                 hint_zh="六个输出都保持 series 的 dtype：fit_standardizer 和 sliding_windows 本来就保持 dtype；"
                         "不要先 .double() 或 .float()，也不要经过 numpy。",
                 hint_en="All six outputs keep series' dtype: fit_standardizer and sliding_windows already do; do not "
                         "call .double() or .float() first, and do not go through numpy.")
    for x, r, what in zip(out, ref, names):
        check_close(x, r, what, atol=1e-4, rtol=1e-4, student=student, show=_pshow(p),
                    hint_zh="顺序：train, test = chronological_split(series, n_train)；mean, std = fit_standardizer(train)；"
                            "再分别对 (train - mean) / std 和 (test - mean) / std 调用 sliding_windows。"
                            "返回 (X_train, y_train, X_test, y_test, mean, std)。",
                    hint_en="In order: train, test = chronological_split(series, n_train); mean, std = "
                            "fit_standardizer(train); then sliding_windows on (train - mean) / std and on "
                            "(test - mean) / std separately. Return (X_train, y_train, X_test, y_test, mean, std).")


@prop(EX, MAKE, "rejects_bad_arguments",
      zh="make_datasets 像它调用的函数一样抛出 ValueError：n_train 不在 [1, N-1] 内、window < 1、horizon < 1，"
         "或者训练期或测试期短得放不下一个窗口（少于 window + horizon 步）",
      en="make_datasets raises ValueError as the functions it calls do: n_train outside [1, N-1], window < 1, "
         "horizon < 1, or a training or test period too short for one window (fewer than window + horizon steps)")
@given(bad=st.sampled_from(["train_short", "test_short", "n_train_zero", "n_train_N", "window_zero", "horizon_zero"]),
       window=sizes(1, 3), horizon=sizes(1, 2), F=sizes(1, 2), seed=seeds)
@example(bad="test_short", window=3, horizon=1, F=1, seed=0)
@example(bad="train_short", window=2, horizon=2, F=2, seed=1)
@example(bad="test_short", window=1, horizon=1, F=1, seed=2)
@example(bad="horizon_zero", window=2, horizon=1, F=1, seed=3)
def make_rejects(student, bad, window, horizon, F, seed):
    need = window + horizon  # the fewest steps a period needs for one window
    n_train, n_test = need + 2, need + 1
    if bad == "train_short":
        n_train = need - 1
    elif bad == "test_short":
        n_test = need - 1
    N = n_train + n_test
    args = {"n_train_zero": (0, window, horizon), "n_train_N": (N, window, horizon),
            "window_zero": (n_train, 0, horizon), "horizon_zero": (n_train, window, 0)}.get(bad, (n_train, window, horizon))
    series = _series(N, F, seed)
    why_zh = {"train_short": f"训练期只有 {n_train} 步，放不下一个窗口（需要 window + horizon = {need} 步）",
              "test_short": f"测试期只有 {n_test} 步，放不下一个窗口（需要 window + horizon = {need} 步）",
              "n_train_zero": "n_train = 0，训练期是空的", "n_train_N": "n_train = N，测试期是空的",
              "window_zero": "window = 0", "horizon_zero": "horizon = 0（目标就是最后一个输入）"}[bad]
    why_en = {"train_short": f"the training period has {n_train} steps, too few for one window (window + horizon = "
                             f"{need} are needed)",
              "test_short": f"the test period has {n_test} steps, too few for one window (window + horizon = {need} "
                            f"are needed)",
              "n_train_zero": "n_train = 0 leaves no training period", "n_train_N": "n_train = N leaves no test period",
              "window_zero": "window = 0", "horizon_zero": "horizon = 0 (the target is the last input)"}[bad]
    if not student.raises(ValueError, MAKE, series, *args):
        fail(f"make_datasets(series (N={N}), n_train={args[0]}, window={args[1]}, horizon={args[2]}) 没有抛出 ValueError："
             f"{why_zh}。",
             f"make_datasets(series (N={N}), n_train={args[0]}, window={args[1]}, horizon={args[2]}) did not raise "
             f"ValueError: {why_en}.", student=student, show={"series": series},
             hint_zh="用 chronological_split 和 sliding_windows 组装 make_datasets，它们的 ValueError 就会原样传出来；"
                     "不要把“没有窗口”变成空张量返回，也不要捕获异常。测试期放不下一个窗口时，评估就没有数据可用。",
             hint_en="Build make_datasets from chronological_split and sliding_windows and their ValueErrors pass "
                     "through; do not turn \"no window\" into empty tensors, and do not catch the errors. A test "
                     "period too short for one window leaves nothing to evaluate on.")
