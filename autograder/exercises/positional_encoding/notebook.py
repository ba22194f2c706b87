# %% positional_encoding_intro [markdown] nbgrader={"grade": false, "grade_id": "positional_encoding_intro", "locked": true, "schema_version": 3, "solution": false}
# # 练习 2：正弦位置编码 / Exercise 2: Sinusoidal positional encoding
#
# **目标 / Goal.** 实现 Vaswani et al. (2017) 的正弦位置编码表 `sinusoidal_encoding`，并把它加到一批输入上（`add_positional_encoding`）。
#
# Implement the sinusoidal positional-encoding table of Vaswani et al. (2017), `sinusoidal_encoding`, and add it
# to a batch of inputs (`add_positional_encoding`).
#
# **为什么需要位置 / Why positions.** 自注意力对位置一无所知：把输入序列打乱，输出只是跟着打乱（置换等变）。“狗咬人”和“人咬狗”在它看来是同一袋词。把位置向量 $\mathbf{p}_t$ 加到 $\mathbf{x}_t$ 上，模型才能区分顺序。
#
# Self-attention knows nothing about positions: permute the input and the output is just permuted the same way
# (permutation equivariance); "dog bites man" and "man bites dog" are the same bag of words to it. Adding a position
# vector $\mathbf{p}_t$ to $\mathbf{x}_t$ lets the model tell the order.
#
# **信息边界 / The information boundary.** $\mathbf{p}_t$ 只依赖位置 $t$ 和宽度 $d$：不依赖内容，不依赖序列长度 $T$，也不依赖其他位置。所以位置 $t$ 在任何序列、任何批次里得到同一个向量；加上位置编码不会把未来或填充的信息带到位置 $t$。
#
# $\mathbf{p}_t$ depends on the position $t$ and the width $d$ only: not on the content, not on the sequence length
# $T$, not on other positions. So position $t$ gets the same vector in every sequence and every batch; adding it
# carries no information from the future or from padding into position $t$.

# %% positional_encoding_notation [markdown] nbgrader={"grade": false, "grade_id": "positional_encoding_notation", "locked": true, "schema_version": 3, "solution": false}
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

# %% positional_encoding_how_to [markdown] nbgrader={"grade": false, "grade_id": "positional_encoding_how_to", "locked": true, "schema_version": 3, "solution": false}
# ### 怎么做 / How to work
#
# 1. 从上到下运行单元格。把每个 `raise NotImplementedError` 换成你的代码；不要改函数名和参数。
# 2. “动手检查”先在纸上算，再运行代码对照；图在函数实现之前只打印提示。
# 3. 🔒 “自测”单元格本身不计分，但必须全部通过。本练习的 15 分全部来自隐藏的性质测试：作业评分时，评分器用许多随机的小输入检查你的函数，所以自测通过不等于满分。函数不要原地修改输入，也不要依赖其他练习的笔记本。
# 4. 提交前自查：在这个文件夹里运行 `pytest`，每个函数一行：通过、还没有实现、或没通过以及原因。
#
# 1. Run the cells from top to bottom. Replace every `raise NotImplementedError` by your code; keep the names and
#    signatures.
# 2. Work out each "check by hand" on paper first, then run the cell and compare; the pictures only print a hint
#    until the function is implemented.
# 3. The 🔒 "visible checks" score no points themselves, but must all pass. All 15 points of this exercise
#    come from hidden property tests: when your work is graded, the grader checks your functions on many small random
#    inputs, so passing the visible checks does not guarantee full marks. Do not modify inputs in place, and do not
#    rely on another exercise's notebook.
# 4. Before submitting: run `pytest` in this folder, one line per function: passed, not implemented yet, or failed
#    and why.

# %% positional_encoding_setup nbgrader={"grade": false, "grade_id": "positional_encoding_setup", "locked": true, "schema_version": 3, "solution": false}
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)  # 可复现 / reproducible


# %% sinusoidal_encoding_formula [markdown] nbgrader={"grade": false, "grade_id": "sinusoidal_encoding_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 1. 位置编码表 / The encoding table `sinusoidal_encoding`
#
# **公式 / Formula.** 对位置 $t = 0, \dots, T-1$ 和 $i = 0, \dots, d/2 - 1$，频率 $\omega_i = \text{base}^{-2i/d}$（base = 10000）：
#
# $$P_{t,\,2i} = \sin(\omega_i\, t) = \sin\!\left(\frac{t}{\text{base}^{2i/d}}\right), \qquad
#   P_{t,\,2i+1} = \cos(\omega_i\, t) = \cos\!\left(\frac{t}{\text{base}^{2i/d}}\right)$$
#
# **交错排列**：偶数列是 $\sin$，奇数列是 $\cos$，同一个 $i$ 的两列相邻（不是“前一半 sin、后一半 cos”）。$\mathbf{p}_t$ 是表 $\mathbf{P}$ 的第 $t$ 行。$d$ 为奇数时引发 `ValueError`。返回 `(T, d)` 的 `float32` 张量。
#
# **Interleaved layout**: even columns hold $\sin$, odd columns $\cos$, the two columns of the same $i$ side by side
# (not "first half sin, second half cos"). $\mathbf{p}_t$ is row $t$ of the table $\mathbf{P}$. An odd $d$ raises
# `ValueError`. Returns a `(T, d)` `float32` tensor.
#
# *提示 / Hint:* `torch.arange(T)[:, None]` 是 `(T, 1)`，`torch.arange(0, d, 2)`（$=2i$）是 `(d/2,)`；广播得到 `(T, d/2)` 的角度，再用切片 `pe[:, 0::2]`、`pe[:, 1::2]` 写入。
#
# `torch.arange(T)[:, None]` is `(T, 1)` and `torch.arange(0, d, 2)` ($=2i$) is `(d/2,)`; broadcasting gives the
# `(T, d/2)` angles, written with the slices `pe[:, 0::2]` and `pe[:, 1::2]`.

# %% sinusoidal_encoding nbgrader={"grade": false, "grade_id": "sinusoidal_encoding", "locked": false, "schema_version": 3, "solution": true}
def sinusoidal_encoding(T, d, base=10000.0):
    """(T, d) float32 table: PE[t, 2i] = sin(t / base**(2i/d)), PE[t, 2i+1] = cos(t / base**(2i/d))."""
    # T, d: int (d even, else ValueError)  ->  pe: (T, d) float32
    # 你的代码 / your code
    raise NotImplementedError("sinusoidal_encoding")


# %% sinusoidal_encoding_by_hand [markdown] nbgrader={"grade": false, "grade_id": "sinusoidal_encoding_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand
#
# $T = 2$，$d = 4$：频率 $\omega_0 = 10000^{0} = 1$，$\omega_1 = 10000^{-2/4} = 0.01$。第 0 行是 $[\sin 0, \cos 0, \sin 0, \cos 0]$；第 1 行是 $[\sin 1, \cos 1, \sin 0.01, \cos 0.01]$。
#
# $T = 2$, $d = 4$: frequencies $\omega_0 = 10000^{0} = 1$, $\omega_1 = 10000^{-2/4} = 0.01$.
# Row 0 is $[\sin 0, \cos 0, \sin 0, \cos 0]$; row 1 is $[\sin 1, \cos 1, \sin 0.01, \cos 0.01]$.
#
# <details><summary>答案 / Answer</summary>
#
# ```
# [[0.0000, 1.0000, 0.0000, 1.0000],
#  [0.8415, 0.5403, 0.0100, 0.99995]]
# ```
# </details>

# %% sinusoidal_encoding_demo
try:
    pe = sinusoidal_encoding(2, 4)  # (T, d) = (2, 4)
    print(pe.dtype, tuple(pe.shape))
    print(pe)
except NotImplementedError:
    print("请先实现 sinusoidal_encoding，再运行这个单元格。/ Implement sinusoidal_encoding first, then run this cell again.")

# %% sinusoidal_encoding_rotation [markdown] nbgrader={"grade": false, "grade_id": "sinusoidal_encoding_rotation", "locked": true, "schema_version": 3, "solution": false}
# ### 相对位置是一个旋转 / A relative position is a rotation
#
# 同一个频率的两列 $(P_{t,2i}, P_{t,2i+1})$ 是单位圆上角度为 $\omega_i t$ 的点。移动 $k$ 个位置就是把它旋转 $\omega_i k$，旋转矩阵与 $t$ 无关：
#
# The two columns of one frequency, $(P_{t,2i}, P_{t,2i+1})$, are the point at angle $\omega_i t$ on the unit
# circle. Moving $k$ positions rotates it by $\omega_i k$, with a matrix that does not depend on $t$:
#
# $$\begin{pmatrix} P_{t+k,\,2i} \\ P_{t+k,\,2i+1} \end{pmatrix}
#  = \begin{pmatrix} \cos \omega_i k & \sin \omega_i k \\ -\sin \omega_i k & \cos \omega_i k \end{pmatrix}
#    \begin{pmatrix} P_{t,\,2i} \\ P_{t,\,2i+1} \end{pmatrix}$$
#
# 所以 $\mathbf{p}_t^\top \mathbf{p}_{t+k} = \sum_i \cos(\omega_i k)$ 只依赖相对距离 $k$（下面右图沿对角线不变）。
#
# Hence $\mathbf{p}_t^\top \mathbf{p}_{t+k} = \sum_i \cos(\omega_i k)$ depends on the offset $k$ only (constant along
# the diagonals of the right-hand picture below).

# %% sinusoidal_encoding_picture
# 图 / picture: 左 = 编码表（行 = 位置 t，列 = 维度），右 = 点积 p_t·p_s / left = the table, right = dot products p_t·p_s
try:
    pe = sinusoidal_encoding(64, 32)  # (T, d) = (64, 32)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), layout="constrained")
    im = axes[0].imshow(pe, cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    axes[0].set(xlabel="dimension", ylabel="position t", title="sinusoidal_encoding(64, 32)")
    fig.colorbar(im, ax=axes[0])
    im = axes[1].imshow(pe @ pe.T, cmap="viridis")  # (T, T)
    axes[1].set(xlabel="position s", ylabel="position t", title="p_t · p_s")
    fig.colorbar(im, ax=axes[1])
    plt.show()
except NotImplementedError:
    print("请先实现 sinusoidal_encoding，再运行这个单元格。/ Implement sinusoidal_encoding first, then run this cell again.")

# %% sinusoidal_encoding_checks [markdown] nbgrader={"grade": false, "grade_id": "sinusoidal_encoding_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `sinusoidal_encoding`

# %% test_sinusoidal_encoding nbgrader={"grade": true, "grade_id": "test_sinusoidal_encoding", "locked": true, "points": 11, "schema_version": 3, "solution": false}
pe = sinusoidal_encoding(2, 4)
assert isinstance(pe, torch.Tensor) and pe.dtype == torch.float32, "应返回 float32 张量 / should return a float32 tensor"
assert pe.shape == (2, 4), f"形状应为 (T, d) = (2, 4)，得到 {tuple(pe.shape)} / shape should be (T, d) = (2, 4), got {tuple(pe.shape)}"
expected = torch.tensor([[0.0, 1.0, 0.0, 1.0],
                         [0.841471, 0.540302, 0.010000, 0.999950]])  # [sin 1, cos 1, sin 0.01, cos 0.01]
assert torch.allclose(pe, expected, atol=1e-5), \
    f"T=2, d=4 的手算值不对（位置从 0 开始，偶数列 sin、奇数列 cos）/ wrong hand-example values (positions from 0, sin in even columns, cos in odd):\n{pe}"
pe = sinusoidal_encoding(2, 4, base=100.0)
assert abs(pe[1, 2].item() - math.sin(0.1)) < 1e-5 and abs(pe[1, 3].item() - math.cos(0.1)) < 1e-5, \
    "base=100 时 ω_1 = 100^(-2/4) = 0.1 / with base=100, ω_1 = 100^(-2/4) = 0.1"
pe = sinusoidal_encoding(50, 8)
assert pe.shape == (50, 8), f"形状应为 (50, 8) / shape should be (50, 8), got {tuple(pe.shape)}"
assert torch.allclose(pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2, torch.ones(50, 4), atol=1e-5), \
    "相邻两列是同一频率的 sin 和 cos（sin² + cos² = 1）/ neighbouring columns are sin and cos of one frequency (sin² + cos² = 1)"
try:
    sinusoidal_encoding(3, 5)
except ValueError:
    pass
else:
    raise AssertionError("d=5 是奇数，应引发 ValueError / d=5 is odd and should raise ValueError")
print("sinusoidal_encoding：自测通过 / visible checks passed")


# %% add_positional_encoding_formula [markdown] nbgrader={"grade": false, "grade_id": "add_positional_encoding_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 2. 加到输入上 / Adding it to the input `add_positional_encoding`
#
# **公式 / Formula.** 对批次里的每个序列 $b$ 和位置 $t$ / for every sequence $b$ and position $t$ of the batch:
#
# $$\tilde{\mathbf{x}}_{b,t} = \mathbf{x}_{b,t} + \mathbf{p}_t, \qquad \text{即 / i.e.}\quad
#   \tilde{\mathbf{X}}_b = \mathbf{X}_b + \mathbf{P}$$
#
# $\mathbf{P}$ = `sinusoidal_encoding(T, d)` 在批次维度上广播；结果保持 `X` 的 dtype 和设备；不缩放 $\mathbf{X}$
# （有的实现先乘 $\sqrt{d}$，这里不要）；不要原地修改 `X`。
#
# $\mathbf{P}$ = `sinusoidal_encoding(T, d)` broadcast over the batch; the result keeps `X`'s dtype and device; no
# scaling of $\mathbf{X}$ (some implementations multiply by $\sqrt{d}$ first: not here); do not modify `X` in place.

# %% add_positional_encoding nbgrader={"grade": false, "grade_id": "add_positional_encoding", "locked": false, "schema_version": 3, "solution": true}
def add_positional_encoding(X):
    """X + PE broadcast over the batch, in X's dtype and device; no scaling of X."""
    # X: (B, T, d)  ->  (B, T, d);  PE: (T, d)
    # 你的代码 / your code
    raise NotImplementedError("add_positional_encoding")


# %% add_positional_encoding_by_hand [markdown] nbgrader={"grade": false, "grade_id": "add_positional_encoding_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand
#
# `X = torch.zeros(2, 2, 4)`（$B=2, T=2, d=4$）：结果的两个序列都应该等于上面 $T=2, d=4$ 的表。
#
# `X = torch.zeros(2, 2, 4)` ($B=2, T=2, d=4$): both sequences of the result should equal the $T=2, d=4$ table above.

# %% add_positional_encoding_demo
try:
    X = torch.zeros(2, 2, 4)  # (B, T, d)
    print(add_positional_encoding(X))  # (B, T, d), each X[b] + PE
except NotImplementedError:
    print("请先实现 add_positional_encoding，再运行这个单元格。/ Implement add_positional_encoding first, then run this cell again.")

# %% add_positional_encoding_checks [markdown] nbgrader={"grade": false, "grade_id": "add_positional_encoding_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `add_positional_encoding`

# %% test_add_positional_encoding nbgrader={"grade": true, "grade_id": "test_add_positional_encoding", "locked": true, "points": 4, "schema_version": 3, "solution": false}
X = torch.zeros(2, 2, 4)
Y = add_positional_encoding(X)
assert Y.shape == (2, 2, 4), f"形状应为 (B, T, d) = (2, 2, 4) / shape should be (B, T, d) = (2, 2, 4), got {tuple(Y.shape)}"
expected = torch.tensor([[0.0, 1.0, 0.0, 1.0],
                         [0.841471, 0.540302, 0.010000, 0.999950]])
assert torch.allclose(Y[0], expected, atol=1e-5) and torch.allclose(Y[1], expected, atol=1e-5), \
    f"每个序列都加上同一张表 / every sequence gets the same table:\n{Y}"
assert (X == 0).all(), "不要原地修改 X / do not modify X in place"
X = torch.full((3, 2, 4), 2.0, dtype=torch.float64)
Y = add_positional_encoding(X)
assert Y.dtype == torch.float64, f"应保持 X 的 dtype（float64）/ should keep X's dtype (float64), got {Y.dtype}"
assert torch.allclose(Y - 2.0, expected.double().expand(3, 2, 4), atol=1e-5), \
    "结果应是 X + PE，不缩放 X / the result should be X + PE, X not scaled"
print("add_positional_encoding：自测通过 / visible checks passed")

# %% positional_encoding_summary [markdown] nbgrader={"grade": false, "grade_id": "positional_encoding_summary", "locked": true, "schema_version": 3, "solution": false}
# ## 小结 / Summary
#
# - $P_{t,2i} = \sin(t/\text{base}^{2i/d})$，$P_{t,2i+1} = \cos(t/\text{base}^{2i/d})$，位置从 0 开始，交错排列。
#
#   Positions from 0, interleaved sin/cos columns.
# - 编码只依赖 $t$ 和 $d$，相对位移是旋转。The encoding depends on $t$ and $d$ only; an offset is a rotation.
# - 加法在批次上广播，保持 dtype 和设备。The addition broadcasts over the batch and keeps dtype and device.
