# %% rope_intro [markdown] nbgrader={"grade": false, "grade_id": "rope_intro", "locked": true, "schema_version": 3, "solution": false}
# # 练习 6：旋转位置编码 / Exercise 6: Rotary position embedding (RoPE)
#
# **目标 / Goal.** 实现旋转位置编码（Su et al., 2021 的 RoFormer）：`rope_angles` 算出每个位置、每对列的旋转角，`apply_rope` 把查询或键的每一对列 $(2i, 2i+1)$ 按这个角度旋转。
#
# Implement rotary position embedding (RoFormer, Su et al., 2021): `rope_angles` gives the rotation angle of every
# position and column pair, `apply_rope` turns each pair of columns $(2i, 2i+1)$ of a query or key by that angle.
#
# **为什么旋转 / Why rotate.** 正弦位置编码把位置*加*到输入上；RoPE 把 $\mathbf{q}$ 和 $\mathbf{k}$ 按各自的位置*旋转*。旋转不改变长度，而两个旋转的差只取决于角度差，所以注意力分数 $\langle R(m)\mathbf{q}, R(n)\mathbf{k}\rangle$
# 只依赖相对位置 $m - n$。
#
# The sinusoidal encoding *adds* the position to the input; RoPE *rotates* $\mathbf{q}$ and $\mathbf{k}$ by their
# positions. A rotation keeps lengths, and two rotations differ only by the difference of their angles, so the
# attention score $\langle R(m)\mathbf{q}, R(n)\mathbf{k}\rangle$ depends on the relative position $m - n$ only.
#
# **信息边界 / The information boundary.** 位置 $t$ 的旋转只依赖 $t$ 自己（和 $d$、base），不依赖内容、序列长度或别的位置。所以生成时可以只把新词元放进模型：缓存里已有 `offset` 个词元，新词元的位置从 `offset` 开始，它们得到的旋转和把整段序列重新算一遍时完全一样（KV 缓存）。
#
# The rotation at position $t$ depends on $t$ alone (and on $d$ and base): not on the content, the length or other
# positions. So generation may feed only the new tokens: with `offset` tokens already in the cache, the new ones
# start at position `offset` and get exactly the rotation they would get if the whole sequence were recomputed
# (a KV cache).

# %% rope_notation [markdown] nbgrader={"grade": false, "grade_id": "rope_notation", "locked": true, "schema_version": 3, "solution": false}
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

# %% rope_how_to [markdown] nbgrader={"grade": false, "grade_id": "rope_how_to", "locked": true, "schema_version": 3, "solution": false}
# ### 怎么做 / How to work
#
# 1. 从上到下运行单元格。把每个 `raise NotImplementedError` 换成你的代码；不要改函数名和参数。
# 2. “动手检查”先在纸上算，再运行代码对照；图在函数实现之前只打印提示。
# 3. 🔒 “自测”单元格本身不计分，但必须全部通过。本练习的 30 分全部来自隐藏的性质测试：作业评分时，评分器用许多随机的小输入检查你的函数，所以自测通过不等于满分。函数不要原地修改输入，也不要依赖其他练习的笔记本。
# 4. 提交前自查：在这个文件夹里运行 `pytest`，每个函数一行：通过、还没有实现、或没通过以及原因。
#
# 1. Run the cells from top to bottom. Replace every `raise NotImplementedError` by your code; keep the names and
#    signatures.
# 2. Work out each "check by hand" on paper first, then run the cell and compare; the pictures only print a hint
#    until the function is implemented.
# 3. The 🔒 "visible checks" score no points themselves, but must all pass. All 30 points of this exercise
#    come from hidden property tests: when your work is graded, the grader checks your functions on many small random
#    inputs, so passing the visible checks does not guarantee full marks. Do not modify inputs in place, and do not
#    rely on another exercise's notebook.
# 4. Before submitting: run `pytest` in this folder, one line per function: passed, not implemented yet, or failed
#    and why.

# %% rope_setup nbgrader={"grade": false, "grade_id": "rope_setup", "locked": true, "schema_version": 3, "solution": false}
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)  # 可复现 / reproducible


# %% rope_angles_formula [markdown] nbgrader={"grade": false, "grade_id": "rope_angles_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 1. 旋转角 / The angles `rope_angles`
#
# **公式 / Formula.** 第 $t$ 行（$t = 0, \dots, T-1$）的位置是 $p = \text{offset} + t$；第 $i$ 对列（$i = 0, \dots, d/2-1$）的频率与正弦位置编码相同，$\omega_i = \text{base}^{-2i/d}$：
#
# $$\theta_{t,i} = (\text{offset} + t)\,\omega_i = \frac{\text{offset} + t}{\text{base}^{2i/d}}$$
#
# 返回 `(T, d/2)` 的 `float32` 张量；$d$ 为奇数时引发 `ValueError`。
#
# Row $t$ is position $p = \text{offset} + t$; pair $i$ turns at the frequency of the sinusoidal encoding,
# $\omega_i = \text{base}^{-2i/d}$. Returns a `(T, d/2)` `float32` tensor; an odd $d$ raises `ValueError`.

# %% rope_angles nbgrader={"grade": false, "grade_id": "rope_angles", "locked": false, "schema_version": 3, "solution": true}
def rope_angles(T, d, offset=0, base=10000.0):
    """(T, d/2) float32 angles theta[t, i] = (offset + t) * base**(-2i/d)."""
    # positions offset, ..., offset + T - 1: (T, 1);  frequencies w_i: (d/2,)  ->  theta: (T, d/2)
    # ValueError if d is odd
    # 你的代码 / your code
    raise NotImplementedError("rope_angles")


# %% rope_angles_by_hand [markdown] nbgrader={"grade": false, "grade_id": "rope_angles_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand
#
# $T = 2$，$d = 4$，base $= 100$：两对列的频率是 $\omega_0 = 1$、$\omega_1 = 100^{-2/4} = 0.1$。先写出 $\boldsymbol{\theta}$（$2 \times 2$），再想想 `offset=3` 时它变成什么。
#
# $T = 2$, $d = 4$, base $= 100$: the two pairs turn at $\omega_0 = 1$ and $\omega_1 = 100^{-2/4} = 0.1$.
# Write $\boldsymbol{\theta}$ ($2 \times 2$), then think what it becomes with `offset=3`.
#
# <details><summary>答案 / Answer</summary>
#
# ```
# offset=0: [[0.0, 0.0],      offset=3: [[3.0, 0.3],
#            [1.0, 0.1]]                 [4.0, 0.4]]
# ```
# </details>

# %% rope_angles_demo
try:
    print(rope_angles(2, 4, base=100.0))  # (T, d/2) = (2, 2)
    print(rope_angles(2, 4, offset=3, base=100.0))  # (T, d/2) = (2, 2)
except NotImplementedError:
    print("请先实现 rope_angles，再运行这个单元格。/ Implement rope_angles first, then run this cell again.")

# %% rope_angles_checks [markdown] nbgrader={"grade": false, "grade_id": "rope_angles_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `rope_angles`

# %% test_rope_angles nbgrader={"grade": true, "grade_id": "test_rope_angles", "locked": true, "points": 6, "schema_version": 3, "solution": false}
th = rope_angles(2, 4, base=100.0)
assert isinstance(th, torch.Tensor) and th.dtype == torch.float32, "应返回 float32 张量 / should return a float32 tensor"
assert th.shape == (2, 2), f"形状应为 (T, d/2) = (2, 2)，得到 {tuple(th.shape)} / shape should be (T, d/2) = (2, 2), got {tuple(th.shape)}"
assert torch.allclose(th, torch.tensor([[0.0, 0.0], [1.0, 0.1]]), atol=1e-6), f"手算例子不对 / wrong hand example:\n{th}"
assert torch.allclose(rope_angles(2, 4, offset=3, base=100.0), torch.tensor([[3.0, 0.3], [4.0, 0.4]]), atol=1e-6), \
    "第 t 行的位置是 offset + t / row t is position offset + t"
assert torch.allclose(rope_angles(3, 2)[:, 0], torch.tensor([0.0, 1.0, 2.0])), "第 0 对的频率是 1 / pair 0 turns at frequency 1"
try:
    rope_angles(2, 3)
except ValueError:
    pass
else:
    raise AssertionError("d 为奇数时应引发 ValueError / an odd d should raise ValueError")
print("rope_angles：自测通过 / visible checks passed")


# %% apply_rope_formula [markdown] nbgrader={"grade": false, "grade_id": "apply_rope_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 2. 旋转 / The rotation `apply_rope`
#
# **公式 / Formula.** 把第 $t$ 行的第 $i$ 对 $(x_{2i}, x_{2i+1})$ 看成平面上的一个点，旋转角度 $\theta_{t,i}$：
#
# $$\begin{pmatrix} y_{2i} \\ y_{2i+1} \end{pmatrix} =
#   \begin{pmatrix} \cos\theta_{t,i} & -\sin\theta_{t,i} \\ \sin\theta_{t,i} & \cos\theta_{t,i} \end{pmatrix}
#   \begin{pmatrix} x_{2i} \\ x_{2i+1} \end{pmatrix}$$
#
# 整个向量的旋转 $R(p)$ 是 $d/2$ 个这样的 $2\times 2$ 块组成的块对角矩阵。因为 $R(m)^\top R(n) = R(n - m)$：$\langle R(m)\mathbf{q}, R(n)\mathbf{k}\rangle = \mathbf{q}^\top R(n - m)\,\mathbf{k}$。
#
# `x` 的形状是 `(..., T, d)`（前面可以有任意多个轴，例如 `(B, H, T, dh)`）；输出形状、dtype 与 `x` 相同。**交错的列对**：第 $i$ 对是列 $2i$ 和 $2i+1$，即 `x[..., 0::2]` 和 `x[..., 1::2]`
# （Llama 的 `rotate_half` 把列 $i$ 和 $i + d/2$ 配对，那是另一种布局）。
#
# Treat pair $i$ of row $t$, $(x_{2i}, x_{2i+1})$, as a point in the plane and turn it by $\theta_{t,i}$. The rotation
# $R(p)$ of the whole vector is block diagonal with $d/2$ such $2\times 2$ blocks. Because $R(m)^\top R(n) = R(n - m)$:
# $\langle R(m)\mathbf{q}, R(n)\mathbf{k}\rangle = \mathbf{q}^\top R(n - m)\,\mathbf{k}$. `x` is `(..., T, d)` (any
# leading axes, e.g. `(B, H, T, dh)`); the output has x's shape and dtype. **Interleaved pairs**: pair $i$ is
# columns $2i$ and $2i+1$, i.e. `x[..., 0::2]` and `x[..., 1::2]` (Llama's `rotate_half` pairs column $i$ with
# $i + d/2$: another layout).

# %% apply_rope nbgrader={"grade": false, "grade_id": "apply_rope", "locked": false, "schema_version": 3, "solution": true}
def apply_rope(x, offset=0, base=10000.0):
    """Rotate each column pair (2i, 2i+1) of row t by (offset + t) * base**(-2i/d)."""
    # x: (..., T, d)  ->  out: (..., T, d), x's dtype
    # theta = rope_angles(T, d, offset, base): (T, d/2);  x[..., 0::2], x[..., 1::2]: (..., T, d/2)
    # 你的代码 / your code
    raise NotImplementedError("apply_rope")


# %% apply_rope_by_hand [markdown] nbgrader={"grade": false, "grade_id": "apply_rope_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand
#
# $\mathbf{x} = (1, 0, 0, 1)$ 放在位置 1（`offset=1`，$T = 1$），$d = 4$，base $= 100$：角度是 $(1, 0.1)$。第 0 对 $(1, 0)$ 转 1 弧度 → $(\cos 1, \sin 1) \approx (0.5403, 0.8415)$；第 1 对 $(0, 1)$ 转 0.1 弧度 → $(-\sin 0.1, \cos 0.1) \approx (-0.0998, 0.9950)$。长度仍是 $\sqrt 2$。
#
# $\mathbf{x} = (1, 0, 0, 1)$ at position 1 (`offset=1`, $T = 1$), $d = 4$, base $= 100$: the angles are $(1, 0.1)$.
# Pair 0, $(1, 0)$, turned by 1 rad → $(\cos 1, \sin 1) \approx (0.5403, 0.8415)$; pair 1, $(0, 1)$, turned by 0.1 rad
# → $(-\sin 0.1, \cos 0.1) \approx (-0.0998, 0.9950)$. The length is still $\sqrt 2$.

# %% apply_rope_demo
x = torch.tensor([[1.0, 0.0, 0.0, 1.0]])  # (T, d) = (1, 4)
try:
    y = apply_rope(x, offset=1, base=100.0)  # (1, 4)
    print(y, "norm:", y.norm().item())  # [0.5403, 0.8415, -0.0998, 0.9950], sqrt(2)
except NotImplementedError:
    print("请先实现 apply_rope，再运行这个单元格。/ Implement apply_rope first, then run this cell again.")

# %% apply_rope_picture
# 图 / picture: <R(m)q, R(n)k> 只依赖 m - n / depends on m - n only
try:
    torch.manual_seed(0)
    q, k = torch.randn(1, 16), torch.randn(1, 16)  # (T, d) = (1, 16)
    dist = list(range(0, 40))
    for m0, style in [(0, "-"), (25, "--")]:
        scores = [(apply_rope(q, offset=m0 + s) * apply_rope(k, offset=m0)).sum().item() for s in dist]
        plt.plot(dist, scores, style, label=f"n = {m0}, m = n + s")
    plt.xlabel("m - n"); plt.ylabel("<R(m)q, R(n)k>"); plt.legend(); plt.title("two curves, one score")
    plt.show()
except NotImplementedError:
    print("请先实现 apply_rope，再运行这个单元格。/ Implement apply_rope first, then run this cell again.")

# %% apply_rope_checks [markdown] nbgrader={"grade": false, "grade_id": "apply_rope_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `apply_rope`

# %% test_apply_rope nbgrader={"grade": true, "grade_id": "test_apply_rope", "locked": true, "points": 24, "schema_version": 3, "solution": false}
x = torch.tensor([[1.0, 0.0, 0.0, 1.0]])
y = apply_rope(x, offset=1, base=100.0)
assert isinstance(y, torch.Tensor) and y.shape == (1, 4), f"形状应与 x 相同 / should have x's shape, got {getattr(y, 'shape', y)}"
want = torch.tensor([[math.cos(1), math.sin(1), -math.sin(0.1), math.cos(0.1)]])
assert torch.allclose(y, want, atol=1e-5), \
    f"手算例子不对（交错列对 (2i, 2i+1)）/ wrong hand example (interleaved pairs (2i, 2i+1)):\n{y}\nexpected\n{want}"
torch.manual_seed(1)
x = torch.randn(2, 3, 5, 8, dtype=torch.float64)  # (B, H, T, d)
y = apply_rope(x)
assert y.shape == x.shape and y.dtype == torch.float64, "形状和 dtype 与 x 相同 / x's shape and dtype"
assert torch.allclose(y[..., 0, :], x[..., 0, :]), "R(0) 是恒等变换 / R(0) is the identity"
assert torch.allclose(y.norm(dim=-1), x.norm(dim=-1), atol=1e-5), "旋转不改变长度 / a rotation keeps lengths"
assert torch.allclose(apply_rope(x[..., 2:, :], offset=2), y[..., 2:, :], atol=1e-5), \
    "KV 缓存：offset=2 的后三行应与整段序列的后三行相同 / KV cache: the last rows with offset=2 must match the full sequence"
q, k = torch.randn(1, 8), torch.randn(1, 8)
s1 = (apply_rope(q, offset=7) * apply_rope(k, offset=3)).sum()
s2 = (apply_rope(q, offset=14) * apply_rope(k, offset=10)).sum()
assert torch.allclose(s1, s2, atol=1e-4), "点积只依赖 m - n / the dot product depends on m - n only"
print("apply_rope：自测通过 / visible checks passed")

# %% rope_summary [markdown] nbgrader={"grade": false, "grade_id": "rope_summary", "locked": true, "schema_version": 3, "solution": false}
# ## 小结 / Summary
#
# - RoPE 旋转 $\mathbf{q}$、$\mathbf{k}$ 的每一对列，角度 $(\text{offset} + t)\,\text{base}^{-2i/d}$；不改变长度，$R(0)$ 是恒等。
#
#   RoPE turns each column pair of $\mathbf{q}$ and $\mathbf{k}$ by $(\text{offset} + t)\,\text{base}^{-2i/d}$; lengths are kept and $R(0)$ is the identity.
# - 注意力分数只依赖相对位置 $m - n$。The attention score depends on the relative position $m - n$ only.
# - 位置只依赖自己：新词元从 `offset` 开始旋转，与 KV 缓存一致。A position depends on itself only: new tokens rotate from `offset`, consistent with a KV cache.
# - 交错布局和 `rotate_half` 布局都满足这些性质，只有逐元素比较才能区分——和别人的权重一起用时布局必须一致。
#
#   The interleaved and `rotate_half` layouts both have these properties; only an element-wise comparison tells them apart, and with someone else's weights the layout must match.
