# %% timeseries_intro [markdown] nbgrader={"grade": false, "grade_id": "timeseries_intro", "locked": true, "schema_version": 3, "solution": false}
# # 练习 7：时间序列预处理的信息边界 / Exercise 7: The information boundary in time-series preprocessing
#
# **目标 / Goal.** 为一步或多步预测准备数据：按时间切分（`chronological_split`），只用训练期拟合标准化（`fit_standardizer`），用滑动窗口造出输入和目标（`sliding_windows`），再把它们串成一条不泄漏的流水线（`make_datasets`）。
#
# Prepare data for forecasting: split in time (`chronological_split`), fit the standardiser on the training period only
# (`fit_standardizer`), cut sliding windows with a forecast horizon (`sliding_windows`), and chain them into a
# pipeline that leaks nothing (`make_datasets`).
#
# **信息边界 / The information boundary.** 测试期就是未来。部署时我们只知道过去，所以训练时用到的任何东西——训练样本、目标、标准化的均值和标准差——都不能依赖测试期。检验方法很简单：**把测试期的值随便改掉，训练用到的一切都不应改变。**
# 三种常见的泄漏：随机切分（训练集里混进了未来）、在整条序列上算均值和标准差、窗口的输入里包含了它自己的目标。
#
# The test period is the future. At deployment only the past is known, so nothing used in training — the samples,
# the targets, the mean and std of the standardiser — may depend on the test period. The test is simple: **change
# the test period at will, and nothing used for training may change.** Three usual leaks: a random split (the future
# in the training set), statistics over the whole series, a window whose input contains its own target.

# %% timeseries_notation [markdown] nbgrader={"grade": false, "grade_id": "timeseries_notation", "locked": true, "schema_version": 3, "solution": false}
# ### 记号与代码约定 / Notation and code convention
#
# 标量用小写字母（$t, d, \ell_b$），向量用粗体小写字母，并且是**列向量**（$\mathbf{x}_t \in \mathbb{R}^{d}$），矩阵用粗体大写字母（$\mathbf{X}, \mathbf{W}$）；上标 $[l]$ 表示第 $l$ 层（$\mathbf{h}^{[l]}_t$），下标 $t$ 表示时间步。一批数据有 $B$ 个长度为 $T$ 的序列；代码里第 $b$ 个序列第 $t$ 个位置的特征向量存放在 `X[b, t]`，所以输入的形状是 `(B, T, d)`，位置从 0 开始计数。
#
# Scalars are lower case ($t, d, \ell_b$), vectors bold lower case and **column vectors**
# ($\mathbf{x}_t \in \mathbb{R}^{d}$), matrices bold upper case ($\mathbf{X}, \mathbf{W}$); the superscript $[l]$ names
# the layer ($\mathbf{h}^{[l]}_t$), the subscript $t$ the time step. A batch holds $B$ sequences of length $T$; in code
# the feature vector of position $(b, t)$ is stored at `X[b, t]`, so inputs are `(B, T, d)`, positions counted from 0.
#
# > **行约定 / Row convention.** 公式写成列向量形式 $\mathbf{y} = \mathbf{W}\mathbf{x} + \mathbf{b}$；代码沿用 PyTorch 的
# > 行约定 `y = x @ W.T + b`（与 `torch.nn.Linear` 相同），所以 $\mathbf{x}_t$ 是矩阵 `X` 的一行。
# >
# > Formulas use column vectors, $\mathbf{y} = \mathbf{W}\mathbf{x} + \mathbf{b}$; code follows PyTorch's row convention
# > `y = x @ W.T + b`, as `torch.nn.Linear` does, so $\mathbf{x}_t$ is a row of `X`.
#
# 一条时间序列有 $N$ 个时间步、$F$ 个特征，形状 `(N, F)`；第 $t$ 步是 `series[t]`。
#
# A time series has $N$ steps of $F$ features, shape `(N, F)`; step $t$ is `series[t]`.

# %% timeseries_how_to [markdown] nbgrader={"grade": false, "grade_id": "timeseries_how_to", "locked": true, "schema_version": 3, "solution": false}
# ### 怎么做 / How to work
#
# 1. 从上到下运行单元格。把每个 `raise NotImplementedError` 换成你的代码；不要改函数名和参数。
# 2. “动手检查”先在纸上算，再运行代码对照；图在函数实现之前只打印提示。
# 3. 🔒 “自测”单元格本身不计分，但必须全部通过。本练习的 35 分全部来自隐藏的性质测试：作业评分时，评分器用许多随机的小输入检查你的函数，所以自测通过不等于满分。函数不要原地修改输入，也不要依赖其他练习的笔记本。
# 4. 提交前自查：在这个文件夹里运行 `pytest`，每个函数一行：通过、还没有实现、或没通过以及原因。
#
# 1. Run the cells from top to bottom. Replace every `raise NotImplementedError` by your code; keep the names and
#    signatures.
# 2. Work out each "check by hand" on paper first, then run the cell and compare; the pictures only print a hint
#    until the function is implemented.
# 3. The 🔒 "visible checks" score no points themselves, but must all pass. All 35 points of this exercise
#    come from hidden property tests: when your work is graded, the grader checks your functions on many small random
#    inputs, so passing the visible checks does not guarantee full marks. Do not modify inputs in place, and do not
#    rely on another exercise's notebook.
# 4. Before submitting: run `pytest` in this folder, one line per function: passed, not implemented yet, or failed
#    and why.

# %% timeseries_setup nbgrader={"grade": false, "grade_id": "timeseries_setup", "locked": true, "schema_version": 3, "solution": false}
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)  # 可复现 / reproducible


# %% chronological_split_formula [markdown] nbgrader={"grade": false, "grade_id": "chronological_split_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 1. 按时间切分 / Chronological split `chronological_split`
#
# **公式 / Formula.** 前 $n_{\text{train}}$ 步训练，其余测试，顺序不变，从不打乱：
#
# $$\text{train} = (\mathbf{x}_0, \dots, \mathbf{x}_{n_{\text{train}}-1}), \qquad
#   \text{test} = (\mathbf{x}_{n_{\text{train}}}, \dots, \mathbf{x}_{N-1})$$
#
# `1 <= n_train <= N - 1` 之外（某一段为空）引发 `ValueError`。
#
# The first $n_{\text{train}}$ steps train, the rest test, in order, never shuffled. An `n_train` outside
# `[1, N - 1]` (an empty period) raises `ValueError`.

# %% chronological_split nbgrader={"grade": false, "grade_id": "chronological_split", "locked": false, "schema_version": 3, "solution": true}
def chronological_split(series, n_train):
    """train = series[:n_train], test = series[n_train:], in time order."""
    # series: (N, F)  ->  train (n_train, F), test (N - n_train, F)
    # ValueError unless 1 <= n_train <= N - 1
    # 你的代码 / your code
    raise NotImplementedError("chronological_split")


# %% chronological_split_checks [markdown] nbgrader={"grade": false, "grade_id": "chronological_split_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `chronological_split`

# %% test_chronological_split nbgrader={"grade": true, "grade_id": "test_chronological_split", "locked": true, "points": 5, "schema_version": 3, "solution": false}
s = torch.arange(10.0).reshape(10, 1)  # (N, F) = (10, 1), value = time step
train, test = chronological_split(s, 6)
assert train.shape == (6, 1) and test.shape == (4, 1), "形状应为 (6, 1) 和 (4, 1) / shapes should be (6, 1) and (4, 1)"
assert train.flatten().tolist() == [0, 1, 2, 3, 4, 5] and test.flatten().tolist() == [6, 7, 8, 9], \
    "按时间顺序切开，不要打乱 / cut in time order, never shuffle"
for bad in (0, 10, -1):
    try:
        chronological_split(s, bad)
    except ValueError:
        pass
    else:
        raise AssertionError(f"n_train={bad} 应引发 ValueError / should raise ValueError")
print("chronological_split：自测通过 / visible checks passed")


# %% fit_standardizer_formula [markdown] nbgrader={"grade": false, "grade_id": "fit_standardizer_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 2. 只用训练期拟合标准化 / A standardiser fitted on the training period `fit_standardizer`
#
# **公式 / Formula.** 对每个特征 $f$，在训练期的 $n$ 个时间步上（总体标准差，除以 $n$，与 sklearn 的 `StandardScaler` 相同）：
#
# $$\mu_f = \frac1n \sum_{t=0}^{n-1} x_{t,f}, \qquad
#   \sigma_f = \sqrt{\frac1n \sum_{t=0}^{n-1} (x_{t,f} - \mu_f)^2}, \qquad \sigma_f := 1 \text{ if } \sigma_f = 0$$
#
# 返回 `(mean, std)`，形状都是 `(F,)`，dtype 与输入相同。之后任何一段数据都用同一对统计量：$(\mathbf{x}_t - \boldsymbol\mu) / \boldsymbol\sigma$。
#
# For each feature $f$, over the $n$ training steps (population std, dividing by $n$, as sklearn's `StandardScaler`).
# Returns `(mean, std)`, each `(F,)`, in the input's dtype. Every later period is standardised with the same pair:
# $(\mathbf{x}_t - \boldsymbol\mu) / \boldsymbol\sigma$.

# %% fit_standardizer nbgrader={"grade": false, "grade_id": "fit_standardizer", "locked": false, "schema_version": 3, "solution": true}
def fit_standardizer(train):
    """Per-feature mean and population std of the training period; a std of 0 becomes 1."""
    # train: (n, F)  ->  mean (F,), std (F,)
    # 你的代码 / your code
    raise NotImplementedError("fit_standardizer")


# %% fit_standardizer_checks [markdown] nbgrader={"grade": false, "grade_id": "fit_standardizer_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `fit_standardizer`

# %% test_fit_standardizer nbgrader={"grade": true, "grade_id": "test_fit_standardizer", "locked": true, "points": 6, "schema_version": 3, "solution": false}
train = torch.tensor([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0], [4.0, 5.0]])  # (n, F) = (4, 2); feature 1 is constant
mean, std = fit_standardizer(train)
assert mean.shape == (2,) and std.shape == (2,), "每个特征一个值，形状 (F,) / one value per feature, shape (F,)"
assert torch.allclose(mean, torch.tensor([2.5, 5.0])), f"mean 应为 [2.5, 5.0] / mean should be [2.5, 5.0], got {mean}"
assert abs(std[0].item() - math.sqrt(1.25)) < 1e-6, \
    f"总体标准差 sqrt(1.25) ≈ 1.1180（除以 n，不是 n-1）/ population std sqrt(1.25) ≈ 1.1180 (divide by n, not n-1), got {std[0].item():.4f}"
assert std[1].item() == 1.0, "常数特征的 std 应为 1 / a constant feature gets std 1"
print("fit_standardizer：自测通过 / visible checks passed")


# %% sliding_windows_formula [markdown] nbgrader={"grade": false, "grade_id": "sliding_windows_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 3. 带预测跨度的滑动窗口 / Sliding windows with a horizon `sliding_windows`
#
# **公式 / Formula.** 窗口 $i$ 的输入是连续 `window` 步，目标在最后一个输入之后 `horizon` 步（`horizon = 1` 是下一步）：
#
# $$\mathbf{X}_i = (\mathbf{x}_i, \dots, \mathbf{x}_{i+w-1}), \qquad \mathbf{y}_i = \mathbf{x}_{i+w-1+h},
#   \qquad i = 0, \dots, M-1, \quad M = N - w - h + 1$$
#
# 其中 $w$ = `window`，$h$ = `horizon`。因为 $h \ge 1$，目标总在输入之后：**窗口的输入里从不包含它自己的目标**。返回 `X` `(M, window, F)` 和 `y` `(M, F)`；`window < 1`、`horizon < 1` 或 $M < 1$ 时引发 `ValueError`。
#
# with $w$ = `window`, $h$ = `horizon`. Since $h \ge 1$ the target always comes after the inputs: **no window's input
# contains its own target**. Returns `X` `(M, window, F)` and `y` `(M, F)`; `window < 1`, `horizon < 1` or $M < 1$
# raises `ValueError`.

# %% sliding_windows nbgrader={"grade": false, "grade_id": "sliding_windows", "locked": false, "schema_version": 3, "solution": true}
def sliding_windows(series, window, horizon):
    """X[i] = series[i : i+window], y[i] = series[i + window - 1 + horizon]."""
    # series: (N, F)  ->  X (M, window, F), y (M, F),  M = N - window - horizon + 1
    # ValueError if window < 1, horizon < 1 or M < 1
    # 你的代码 / your code
    raise NotImplementedError("sliding_windows")


# %% sliding_windows_by_hand [markdown] nbgrader={"grade": false, "grade_id": "sliding_windows_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand
#
# 序列 $0, 1, \dots, 5$（$N = 6$，$F = 1$，值就是时间步），`window=2`，`horizon=2`：$M = 6 - 2 - 2 + 1 = 3$。窗口 0 的输入是步 0、1，最后一个输入是步 1，目标在它之后 2 步：步 3。写出全部三个窗口。
#
# The series $0, 1, \dots, 5$ ($N = 6$, $F = 1$, value = time step), `window=2`, `horizon=2`: $M = 3$. Window 0's
# inputs are steps 0 and 1, the last input is step 1, the target 2 steps later: step 3. Write all three windows.
#
# <details><summary>答案 / Answer</summary>
#
# ```
# X = [[0, 1], [1, 2], [2, 3]]     y = [3, 4, 5]
# ```
# </details>

# %% sliding_windows_demo
s = torch.arange(6.0).reshape(6, 1)  # (N, F) = (6, 1)
try:
    X, y = sliding_windows(s, window=2, horizon=2)  # (M, window, F) = (3, 2, 1), (M, F) = (3, 1)
    print("X =", X.squeeze(-1).tolist(), "  y =", y.squeeze(-1).tolist())
except NotImplementedError:
    print("请先实现 sliding_windows，再运行这个单元格。/ Implement sliding_windows first, then run this cell again.")

# %% sliding_windows_checks [markdown] nbgrader={"grade": false, "grade_id": "sliding_windows_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `sliding_windows`

# %% test_sliding_windows nbgrader={"grade": true, "grade_id": "test_sliding_windows", "locked": true, "points": 11, "schema_version": 3, "solution": false}
s = torch.arange(6.0).reshape(6, 1)
X, y = sliding_windows(s, 2, 2)
assert X.shape == (3, 2, 1) and y.shape == (3, 1), f"形状应为 (3, 2, 1) 和 (3, 1) / shapes should be (3, 2, 1) and (3, 1), got {tuple(X.shape)}, {tuple(y.shape)}"
assert X.squeeze(-1).tolist() == [[0, 1], [1, 2], [2, 3]], f"窗口输入不对 / wrong window inputs: {X.squeeze(-1).tolist()}"
assert y.squeeze(-1).tolist() == [3, 4, 5], \
    f"目标应在最后一个输入之后 horizon 步 / the target is horizon steps after the last input: {y.squeeze(-1).tolist()}"
X, y = sliding_windows(torch.arange(3.0).reshape(3, 1), 2, 1)
assert X.squeeze(-1).tolist() == [[0, 1]] and y.squeeze(-1).tolist() == [2], "N = window + horizon：恰好一个窗口 / exactly one window"
for args in ((0, 1), (2, 0), (3, 2)):
    try:
        sliding_windows(torch.arange(4.0).reshape(4, 1), *args)
    except ValueError:
        pass
    else:
        raise AssertionError(f"window, horizon = {args} 应引发 ValueError / should raise ValueError")
print("sliding_windows：自测通过 / visible checks passed")


# %% make_datasets_formula [markdown] nbgrader={"grade": false, "grade_id": "make_datasets_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 4. 不泄漏的流水线 / A pipeline that leaks nothing `make_datasets`
#
# **顺序 / Order.** 先切分，再只在训练期上拟合，最后用**训练期的**统计量标准化两段数据，并在每段数据内部各自取窗口：
#
# $$\text{train}, \text{test} = \text{split}(\mathbf{x}, n_{\text{train}}), \quad
#   (\boldsymbol\mu, \boldsymbol\sigma) = \text{fit}(\text{train}), \quad
#   \mathbf{z} = (\mathbf{x} - \boldsymbol\mu) / \boldsymbol\sigma \text{ in each period}, \quad (\mathbf{X}, \mathbf{y}) = \text{windows}(\mathbf{z})$$
#
# 返回 `(X_train, y_train, X_test, y_test, mean, std)`。两段都必须至少有一个窗口，否则 `ValueError`（由 `sliding_windows` 引发即可）。
#
# Split first, fit on the training period only, standardise both periods with the **training** statistics, and cut
# windows inside each period on its own. Returns `(X_train, y_train, X_test, y_test, mean, std)`; either period too
# short for one window raises `ValueError` (raised by `sliding_windows` is fine).

# %% make_datasets nbgrader={"grade": false, "grade_id": "make_datasets", "locked": false, "schema_version": 3, "solution": true}
def make_datasets(series, n_train, window, horizon):
    """Split, standardise with training statistics, then window each period on its own."""
    # series: (N, F)  ->  X_train (M1, window, F), y_train (M1, F), X_test (M2, window, F), y_test (M2, F),
    #                     mean (F,), std (F,)
    # 你的代码 / your code
    raise NotImplementedError("make_datasets")


# %% make_datasets_by_hand [markdown] nbgrader={"grade": false, "grade_id": "make_datasets_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand: 改变未来 / change the future
#
# 序列 $1, 2, \dots, 10$，`n_train=6`，`window=2`，`horizon=1`。训练期 $1..6$：$\mu = 3.5$，$\sigma = \sqrt{35/12} \approx 1.7078$；训练窗口有 $6 - 2 - 1 + 1 = 4$ 个，最后一个的目标是 6（训练期的最后一步）。下面的单元格把测试期乘以 100：训练用到的东西应当一个数都不变。
#
# The series $1, 2, \dots, 10$, `n_train=6`, `window=2`, `horizon=1`. Training period $1..6$: $\mu = 3.5$,
# $\sigma \approx 1.7078$; 4 training windows, the last one's target is 6 (the last training step). The cell below
# multiplies the test period by 100: nothing used for training may change by a single number.

# %% make_datasets_demo
s = torch.arange(1.0, 11.0).reshape(10, 1)  # (N, F) = (10, 1)
future = s.clone()
future[6:] *= 100  # 改变测试期 / change the test period
try:
    a, b = make_datasets(s, 6, 2, 1), make_datasets(future, 6, 2, 1)
    for name, x, y in zip(["X_train", "y_train", "X_test", "y_test", "mean", "std"], a, b):
        print(f"{name:8s} unchanged: {torch.equal(x, y)}")  # the first two and the last two must be True
    print("mean, std =", a[4].item(), a[5].item())  # 3.5, 1.7078
except NotImplementedError:
    print("请先实现 make_datasets，再运行这个单元格。/ Implement make_datasets first, then run this cell again.")

# %% make_datasets_picture
# 图 / picture: 训练期、测试期和一个窗口 / the two periods and one window
try:
    t = torch.arange(40.0)
    s = (torch.sin(t / 4) + 0.05 * t).reshape(-1, 1)  # (N, F) = (40, 1)
    X_tr, y_tr, X_te, y_te, mean, std = make_datasets(s, 28, window=6, horizon=3)
    fig, ax = plt.subplots(figsize=(7, 2.6))
    ax.plot(t[:28], s[:28, 0], "C0.-", label="train")
    ax.plot(t[28:], s[28:, 0], "C1.-", label="test (the future)")
    i = 10
    ax.axvspan(i - 0.4, i + 6 - 0.6, color="C2", alpha=0.2, label="window 10: inputs")
    ax.plot(i + 6 - 1 + 3, (y_tr[i, 0] * std[0] + mean[0]).item(), "C3*", ms=12, label="its target (horizon 3)")
    ax.axvline(27.5, color="k", ls=":")
    ax.set(xlabel="time step t"); ax.legend(fontsize=7, loc="upper left")
    plt.show()
except NotImplementedError:
    print("请先实现 make_datasets，再运行这个单元格。/ Implement make_datasets first, then run this cell again.")

# %% make_datasets_checks [markdown] nbgrader={"grade": false, "grade_id": "make_datasets_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `make_datasets`

# %% test_make_datasets nbgrader={"grade": true, "grade_id": "test_make_datasets", "locked": true, "points": 13, "schema_version": 3, "solution": false}
s = torch.arange(1.0, 11.0).reshape(10, 1)
X_tr, y_tr, X_te, y_te, mean, std = make_datasets(s, 6, 2, 1)
assert X_tr.shape == (4, 2, 1) and y_tr.shape == (4, 1) and X_te.shape == (2, 2, 1) and y_te.shape == (2, 1), \
    "每段各自取窗口：训练 4 个，测试 2 个 / windows inside each period: 4 for training, 2 for testing"
assert abs(mean.item() - 3.5) < 1e-6 and abs(std.item() - math.sqrt(35 / 12)) < 1e-5, \
    f"mean/std 只用训练期拟合 / mean/std fitted on the training period only: got {mean.item():.4f}, {std.item():.4f}"
assert torch.allclose(y_te.flatten() * std + mean, torch.tensor([9.0, 10.0])), \
    "测试期用训练期的 mean/std 标准化 / the test period uses the training mean/std"
future = s.clone()
future[6:] = -50.0
other = make_datasets(future, 6, 2, 1)
for name, a, b in zip(["X_train", "y_train", "mean", "std"], (X_tr, y_tr, mean, std), (other[0], other[1], other[4], other[5])):
    assert torch.equal(a, b), f"改变测试期后 {name} 变了：泄漏 / {name} changed when only the test period changed: a leak"
print("make_datasets：自测通过 / visible checks passed")

# %% timeseries_summary [markdown] nbgrader={"grade": false, "grade_id": "timeseries_summary", "locked": true, "schema_version": 3, "solution": false}
# ## 小结 / Summary
#
# - 测试期是未来：先按时间切分，从不打乱。The test period is the future: split in time first, never shuffle.
# - 统计量只在训练期上拟合，两段数据都用它标准化。Fit the statistics on the training period only, standardise both periods with them.
# - 目标在最后一个输入之后 `horizon` 步，窗口从不包含自己的目标；每段数据各自取窗口。
#
#   The target is `horizon` steps after the last input, never inside its window; window each period on its own.
# - 检验：改变测试期，训练用到的一切都不变。The test: change the test period and nothing used for training changes.
