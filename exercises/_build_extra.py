"""The notebooks of the rest of the chapter (issue 6): rope, timeseries, bert_masking, tiny_lm.

Loaded by _build.py, which binds its helpers (md, setup, stub, check, demo, closing, how_to,
not_yet, function_points, NOTATION, SETUP) into this module before any builder runs; the plan of
each notebook is the one _build.py's docstring describes.  Functions: docs/contract-extra.md.
"""

# exercise id -> its contract functions, in data-flow order
EXERCISES = {
    "rope": ["rope_angles", "apply_rope"],
    "timeseries": ["chronological_split", "fit_standardizer", "sliding_windows", "make_datasets"],
    "bert_masking": ["special_tokens_mask", "mlm_mask"],
    "tiny_lm": ["init_tiny_lm", "tiny_lm_logits", "tiny_lm_loss", "train_tiny_lm"],
}

# parts the tiny_lm notebook asks the student to paste from the earlier notebooks: one stub cell each
# (grade_id = the function, so the nbgrader course puts the reference part in it); not graded here
PARTS = {
    "tiny_lm": ["padding_mask", "causal_mask", "sinusoidal_encoding", "scaled_dot_product_attention",
                "masked_cross_entropy"],
}

HELPERS = ("md", "setup", "stub", "check", "demo", "closing", "how_to", "not_yet", "function_points",
           "NOTATION", "SETUP")


def bind(namespace):
    """Take the cell helpers from _build.py's namespace (a dict)."""
    globals().update({name: namespace[name] for name in HELPERS})


# ================================================================= rope


def rope_notebook():
    p = function_points("rope")
    total = sum(p.values())
    return [
        md("rope_intro", r"""
# 练习 6：旋转位置编码 / Exercise 6: Rotary position embedding (RoPE)

**目标 / Goal.** 实现旋转位置编码（Su et al., 2021 的 RoFormer）：`rope_angles` 算出每个位置、每对列的旋转角，
`apply_rope` 把查询或键的每一对列 $(2i, 2i+1)$ 按这个角度旋转。
Implement rotary position embedding (RoFormer, Su et al., 2021): `rope_angles` gives the rotation angle of every
position and column pair, `apply_rope` turns each pair of columns $(2i, 2i+1)$ of a query or key by that angle.

**为什么旋转 / Why rotate.** 正弦位置编码把位置*加*到输入上；RoPE 把 $\mathbf{q}$ 和 $\mathbf{k}$ 按各自的位置*旋转*。
旋转不改变长度，而两个旋转的差只取决于角度差，所以注意力分数 $\langle R(m)\mathbf{q}, R(n)\mathbf{k}\rangle$
只依赖相对位置 $m - n$。
The sinusoidal encoding *adds* the position to the input; RoPE *rotates* $\mathbf{q}$ and $\mathbf{k}$ by their
positions. A rotation keeps lengths, and two rotations differ only by the difference of their angles, so the
attention score $\langle R(m)\mathbf{q}, R(n)\mathbf{k}\rangle$ depends on the relative position $m - n$ only.

**信息边界 / The information boundary.** 位置 $t$ 的旋转只依赖 $t$ 自己（和 $d$、base），不依赖内容、序列长度或别的位置。
所以生成时可以只把新词元放进模型：缓存里已有 `offset` 个词元，新词元的位置从 `offset` 开始，
它们得到的旋转和把整段序列重新算一遍时完全一样（KV 缓存）。
The rotation at position $t$ depends on $t$ alone (and on $d$ and base): not on the content, the length or other
positions. So generation may feed only the new tokens: with `offset` tokens already in the cache, the new ones
start at position `offset` and get exactly the rotation they would get if the whole sequence were recomputed
(a KV cache).
"""),
        md("rope_notation", NOTATION),
        md("rope_how_to", how_to("rope", total)),
        setup("rope_setup", SETUP),

        md("rope_angles_formula", r"""
## 1. 旋转角 / The angles `rope_angles`

**公式 / Formula.** 第 $t$ 行（$t = 0, \dots, T-1$）的位置是 $p = \text{offset} + t$；第 $i$ 对列（$i = 0, \dots, d/2-1$）的频率
与正弦位置编码相同，$\omega_i = \text{base}^{-2i/d}$：

$$\theta_{t,i} = (\text{offset} + t)\,\omega_i = \frac{\text{offset} + t}{\text{base}^{2i/d}}$$

返回 `(T, d/2)` 的 `float32` 张量；$d$ 为奇数时引发 `ValueError`。
Row $t$ is position $p = \text{offset} + t$; pair $i$ turns at the frequency of the sinusoidal encoding,
$\omega_i = \text{base}^{-2i/d}$. Returns a `(T, d/2)` `float32` tensor; an odd $d$ raises `ValueError`.
"""),
        stub("rope_angles", '''
def rope_angles(T, d, offset=0, base=10000.0):
    """(T, d/2) float32 angles theta[t, i] = (offset + t) * base**(-2i/d)."""
    # positions offset, ..., offset + T - 1: (T, 1);  frequencies w_i: (d/2,)  ->  theta: (T, d/2)
    # ValueError if d is odd
    # 你的代码 / your code
    raise NotImplementedError("rope_angles")
'''),
        md("rope_angles_by_hand", r"""
### 动手检查 / Check by hand

$T = 2$，$d = 4$，base $= 100$：两对列的频率是 $\omega_0 = 1$、$\omega_1 = 100^{-2/4} = 0.1$。
先写出 $\boldsymbol{\theta}$（$2 \times 2$），再想想 `offset=3` 时它变成什么。
$T = 2$, $d = 4$, base $= 100$: the two pairs turn at $\omega_0 = 1$ and $\omega_1 = 100^{-2/4} = 0.1$.
Write $\boldsymbol{\theta}$ ($2 \times 2$), then think what it becomes with `offset=3`.

<details><summary>答案 / Answer</summary>

```
offset=0: [[0.0, 0.0],      offset=3: [[3.0, 0.3],
           [1.0, 0.1]]                 [4.0, 0.4]]
```
</details>
"""),
        demo("rope_angles_demo", f"""
try:
    print(rope_angles(2, 4, base=100.0))  # (T, d/2) = (2, 2)
    print(rope_angles(2, 4, offset=3, base=100.0))  # (T, d/2) = (2, 2)
except NotImplementedError:
    {not_yet("rope_angles")}
"""),
        md("rope_angles_checks", "### 🔒 自测 / Visible checks: `rope_angles`"),
        check("rope_angles", p["rope_angles"], '''
th = rope_angles(2, 4, base=100.0)
assert isinstance(th, torch.Tensor) and th.dtype == torch.float32, "应返回 float32 张量 / should return a float32 tensor"
assert th.shape == (2, 2), f"形状应为 (T, d/2) = (2, 2)，得到 {tuple(th.shape)} / shape should be (T, d/2) = (2, 2), got {tuple(th.shape)}"
assert torch.allclose(th, torch.tensor([[0.0, 0.0], [1.0, 0.1]]), atol=1e-6), f"手算例子不对 / wrong hand example:\\n{th}"
assert torch.allclose(rope_angles(2, 4, offset=3, base=100.0), torch.tensor([[3.0, 0.3], [4.0, 0.4]]), atol=1e-6), \\
    "第 t 行的位置是 offset + t / row t is position offset + t"
assert torch.allclose(rope_angles(3, 2)[:, 0], torch.tensor([0.0, 1.0, 2.0])), "第 0 对的频率是 1 / pair 0 turns at frequency 1"
try:
    rope_angles(2, 3)
except ValueError:
    pass
else:
    raise AssertionError("d 为奇数时应引发 ValueError / an odd d should raise ValueError")
print("rope_angles：自测通过 / visible checks passed")
'''),

        md("apply_rope_formula", r"""
## 2. 旋转 / The rotation `apply_rope`

**公式 / Formula.** 把第 $t$ 行的第 $i$ 对 $(x_{2i}, x_{2i+1})$ 看成平面上的一个点，旋转角度 $\theta_{t,i}$：

$$\begin{pmatrix} y_{2i} \\ y_{2i+1} \end{pmatrix} =
  \begin{pmatrix} \cos\theta_{t,i} & -\sin\theta_{t,i} \\ \sin\theta_{t,i} & \cos\theta_{t,i} \end{pmatrix}
  \begin{pmatrix} x_{2i} \\ x_{2i+1} \end{pmatrix}$$

整个向量的旋转 $R(p)$ 是 $d/2$ 个这样的 $2\times 2$ 块组成的块对角矩阵。因为 $R(m)^\top R(n) = R(n - m)$：
$\langle R(m)\mathbf{q}, R(n)\mathbf{k}\rangle = \mathbf{q}^\top R(n - m)\,\mathbf{k}$。

`x` 的形状是 `(..., T, d)`（前面可以有任意多个轴，例如 `(B, H, T, dh)`）；输出形状、dtype 与 `x` 相同。
**交错的列对**：第 $i$ 对是列 $2i$ 和 $2i+1$，即 `x[..., 0::2]` 和 `x[..., 1::2]`
（Llama 的 `rotate_half` 把列 $i$ 和 $i + d/2$ 配对，那是另一种布局）。

Treat pair $i$ of row $t$, $(x_{2i}, x_{2i+1})$, as a point in the plane and turn it by $\theta_{t,i}$. The rotation
$R(p)$ of the whole vector is block diagonal with $d/2$ such $2\times 2$ blocks. Because $R(m)^\top R(n) = R(n - m)$:
$\langle R(m)\mathbf{q}, R(n)\mathbf{k}\rangle = \mathbf{q}^\top R(n - m)\,\mathbf{k}$. `x` is `(..., T, d)` (any
leading axes, e.g. `(B, H, T, dh)`); the output has x's shape and dtype. **Interleaved pairs**: pair $i$ is
columns $2i$ and $2i+1$, i.e. `x[..., 0::2]` and `x[..., 1::2]` (Llama's `rotate_half` pairs column $i$ with
$i + d/2$: another layout).
"""),
        stub("apply_rope", '''
def apply_rope(x, offset=0, base=10000.0):
    """Rotate each column pair (2i, 2i+1) of row t by (offset + t) * base**(-2i/d)."""
    # x: (..., T, d)  ->  out: (..., T, d), x's dtype
    # theta = rope_angles(T, d, offset, base): (T, d/2);  x[..., 0::2], x[..., 1::2]: (..., T, d/2)
    # 你的代码 / your code
    raise NotImplementedError("apply_rope")
'''),
        md("apply_rope_by_hand", r"""
### 动手检查 / Check by hand

$\mathbf{x} = (1, 0, 0, 1)$ 放在位置 1（`offset=1`，$T = 1$），$d = 4$，base $= 100$：角度是 $(1, 0.1)$。
第 0 对 $(1, 0)$ 转 1 弧度 → $(\cos 1, \sin 1) \approx (0.5403, 0.8415)$；
第 1 对 $(0, 1)$ 转 0.1 弧度 → $(-\sin 0.1, \cos 0.1) \approx (-0.0998, 0.9950)$。长度仍是 $\sqrt 2$。
$\mathbf{x} = (1, 0, 0, 1)$ at position 1 (`offset=1`, $T = 1$), $d = 4$, base $= 100$: the angles are $(1, 0.1)$.
Pair 0, $(1, 0)$, turned by 1 rad → $(\cos 1, \sin 1) \approx (0.5403, 0.8415)$; pair 1, $(0, 1)$, turned by 0.1 rad
→ $(-\sin 0.1, \cos 0.1) \approx (-0.0998, 0.9950)$. The length is still $\sqrt 2$.
"""),
        demo("apply_rope_demo", f"""
x = torch.tensor([[1.0, 0.0, 0.0, 1.0]])  # (T, d) = (1, 4)
try:
    y = apply_rope(x, offset=1, base=100.0)  # (1, 4)
    print(y, "norm:", y.norm().item())  # [0.5403, 0.8415, -0.0998, 0.9950], sqrt(2)
except NotImplementedError:
    {not_yet("apply_rope")}
"""),
        demo("apply_rope_picture", f"""
# 图 / picture: <R(m)q, R(n)k> 只依赖 m - n / depends on m - n only
try:
    torch.manual_seed(0)
    q, k = torch.randn(1, 16), torch.randn(1, 16)  # (T, d) = (1, 16)
    dist = list(range(0, 40))
    for m0, style in [(0, "-"), (25, "--")]:
        scores = [(apply_rope(q, offset=m0 + s) * apply_rope(k, offset=m0)).sum().item() for s in dist]
        plt.plot(dist, scores, style, label=f"n = {{m0}}, m = n + s")
    plt.xlabel("m - n"); plt.ylabel("<R(m)q, R(n)k>"); plt.legend(); plt.title("two curves, one score")
    plt.show()
except NotImplementedError:
    {not_yet("apply_rope")}
"""),
        md("apply_rope_checks", "### 🔒 自测 / Visible checks: `apply_rope`"),
        check("apply_rope", p["apply_rope"], '''
x = torch.tensor([[1.0, 0.0, 0.0, 1.0]])
y = apply_rope(x, offset=1, base=100.0)
assert isinstance(y, torch.Tensor) and y.shape == (1, 4), f"形状应与 x 相同 / should have x's shape, got {getattr(y, 'shape', y)}"
want = torch.tensor([[math.cos(1), math.sin(1), -math.sin(0.1), math.cos(0.1)]])
assert torch.allclose(y, want, atol=1e-5), \\
    f"手算例子不对（交错列对 (2i, 2i+1)）/ wrong hand example (interleaved pairs (2i, 2i+1)):\\n{y}\\nexpected\\n{want}"
torch.manual_seed(1)
x = torch.randn(2, 3, 5, 8, dtype=torch.float64)  # (B, H, T, d)
y = apply_rope(x)
assert y.shape == x.shape and y.dtype == torch.float64, "形状和 dtype 与 x 相同 / x's shape and dtype"
assert torch.allclose(y[..., 0, :], x[..., 0, :]), "R(0) 是恒等变换 / R(0) is the identity"
assert torch.allclose(y.norm(dim=-1), x.norm(dim=-1), atol=1e-5), "旋转不改变长度 / a rotation keeps lengths"
assert torch.allclose(apply_rope(x[..., 2:, :], offset=2), y[..., 2:, :], atol=1e-5), \\
    "KV 缓存：offset=2 的后三行应与整段序列的后三行相同 / KV cache: the last rows with offset=2 must match the full sequence"
q, k = torch.randn(1, 8), torch.randn(1, 8)
s1 = (apply_rope(q, offset=7) * apply_rope(k, offset=3)).sum()
s2 = (apply_rope(q, offset=14) * apply_rope(k, offset=10)).sum()
assert torch.allclose(s1, s2, atol=1e-4), "点积只依赖 m - n / the dot product depends on m - n only"
print("apply_rope：自测通过 / visible checks passed")
'''),
        closing("rope", r"""
## 小结 / Summary

- RoPE 旋转 $\mathbf{q}$、$\mathbf{k}$ 的每一对列，角度 $(\text{offset} + t)\,\text{base}^{-2i/d}$；不改变长度，$R(0)$ 是恒等。
  RoPE turns each column pair of $\mathbf{q}$ and $\mathbf{k}$ by $(\text{offset} + t)\,\text{base}^{-2i/d}$; lengths are kept and $R(0)$ is the identity.
- 注意力分数只依赖相对位置 $m - n$。The attention score depends on the relative position $m - n$ only.
- 位置只依赖自己：新词元从 `offset` 开始旋转，与 KV 缓存一致。A position depends on itself only: new tokens rotate from `offset`, consistent with a KV cache.
- 交错布局和 `rotate_half` 布局都满足这些性质，只有逐元素比较才能区分——和别人的权重一起用时布局必须一致。
  The interleaved and `rotate_half` layouts both have these properties; only an element-wise comparison tells them apart, and with someone else's weights the layout must match.
"""),
    ]


# ================================================================= timeseries


def timeseries_notebook():
    p = function_points("timeseries")
    total = sum(p.values())
    return [
        md("timeseries_intro", r"""
# 练习 7：时间序列预处理的信息边界 / Exercise 7: The information boundary in time-series preprocessing

**目标 / Goal.** 为一步或多步预测准备数据：按时间切分（`chronological_split`），只用训练期拟合标准化
（`fit_standardizer`），用滑动窗口造出输入和目标（`sliding_windows`），再把它们串成一条不泄漏的流水线（`make_datasets`）。
Prepare data for forecasting: split in time (`chronological_split`), fit the standardiser on the training period only
(`fit_standardizer`), cut sliding windows with a forecast horizon (`sliding_windows`), and chain them into a
pipeline that leaks nothing (`make_datasets`).

**信息边界 / The information boundary.** 测试期就是未来。部署时我们只知道过去，所以训练时用到的任何东西——训练样本、
目标、标准化的均值和标准差——都不能依赖测试期。检验方法很简单：**把测试期的值随便改掉，训练用到的一切都不应改变。**
三种常见的泄漏：随机切分（训练集里混进了未来）、在整条序列上算均值和标准差、窗口的输入里包含了它自己的目标。
The test period is the future. At deployment only the past is known, so nothing used in training — the samples,
the targets, the mean and std of the standardiser — may depend on the test period. The test is simple: **change
the test period at will, and nothing used for training may change.** Three usual leaks: a random split (the future
in the training set), statistics over the whole series, a window whose input contains its own target.
"""),
        md("timeseries_notation", NOTATION + r"""
一条时间序列有 $N$ 个时间步、$F$ 个特征，形状 `(N, F)`；第 $t$ 步是 `series[t]`。
A time series has $N$ steps of $F$ features, shape `(N, F)`; step $t$ is `series[t]`.
"""),
        md("timeseries_how_to", how_to("timeseries", total)),
        setup("timeseries_setup", SETUP),

        md("chronological_split_formula", r"""
## 1. 按时间切分 / Chronological split `chronological_split`

**公式 / Formula.** 前 $n_{\text{train}}$ 步训练，其余测试，顺序不变，从不打乱：

$$\text{train} = (\mathbf{x}_0, \dots, \mathbf{x}_{n_{\text{train}}-1}), \qquad
  \text{test} = (\mathbf{x}_{n_{\text{train}}}, \dots, \mathbf{x}_{N-1})$$

`1 <= n_train <= N - 1` 之外（某一段为空）引发 `ValueError`。
The first $n_{\text{train}}$ steps train, the rest test, in order, never shuffled. An `n_train` outside
`[1, N - 1]` (an empty period) raises `ValueError`.
"""),
        stub("chronological_split", '''
def chronological_split(series, n_train):
    """train = series[:n_train], test = series[n_train:], in time order."""
    # series: (N, F)  ->  train (n_train, F), test (N - n_train, F)
    # ValueError unless 1 <= n_train <= N - 1
    # 你的代码 / your code
    raise NotImplementedError("chronological_split")
'''),
        md("chronological_split_checks", "### 🔒 自测 / Visible checks: `chronological_split`"),
        check("chronological_split", p["chronological_split"], '''
s = torch.arange(10.0).reshape(10, 1)  # (N, F) = (10, 1), value = time step
train, test = chronological_split(s, 6)
assert train.shape == (6, 1) and test.shape == (4, 1), f"形状应为 (6, 1) 和 (4, 1) / shapes should be (6, 1) and (4, 1)"
assert train.flatten().tolist() == [0, 1, 2, 3, 4, 5] and test.flatten().tolist() == [6, 7, 8, 9], \\
    "按时间顺序切开，不要打乱 / cut in time order, never shuffle"
for bad in (0, 10, -1):
    try:
        chronological_split(s, bad)
    except ValueError:
        pass
    else:
        raise AssertionError(f"n_train={bad} 应引发 ValueError / should raise ValueError")
print("chronological_split：自测通过 / visible checks passed")
'''),

        md("fit_standardizer_formula", r"""
## 2. 只用训练期拟合标准化 / A standardiser fitted on the training period `fit_standardizer`

**公式 / Formula.** 对每个特征 $f$，在训练期的 $n$ 个时间步上（总体标准差，除以 $n$，与 sklearn 的 `StandardScaler` 相同）：

$$\mu_f = \frac1n \sum_{t=0}^{n-1} x_{t,f}, \qquad
  \sigma_f = \sqrt{\frac1n \sum_{t=0}^{n-1} (x_{t,f} - \mu_f)^2}, \qquad \sigma_f := 1 \text{ if } \sigma_f = 0$$

返回 `(mean, std)`，形状都是 `(F,)`，dtype 与输入相同。之后任何一段数据都用同一对统计量：$(\mathbf{x}_t - \boldsymbol\mu) / \boldsymbol\sigma$。
For each feature $f$, over the $n$ training steps (population std, dividing by $n$, as sklearn's `StandardScaler`).
Returns `(mean, std)`, each `(F,)`, in the input's dtype. Every later period is standardised with the same pair:
$(\mathbf{x}_t - \boldsymbol\mu) / \boldsymbol\sigma$.
"""),
        stub("fit_standardizer", '''
def fit_standardizer(train):
    """Per-feature mean and population std of the training period; a std of 0 becomes 1."""
    # train: (n, F)  ->  mean (F,), std (F,)
    # 你的代码 / your code
    raise NotImplementedError("fit_standardizer")
'''),
        md("fit_standardizer_checks", "### 🔒 自测 / Visible checks: `fit_standardizer`"),
        check("fit_standardizer", p["fit_standardizer"], '''
train = torch.tensor([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0], [4.0, 5.0]])  # (n, F) = (4, 2); feature 1 is constant
mean, std = fit_standardizer(train)
assert mean.shape == (2,) and std.shape == (2,), "每个特征一个值，形状 (F,) / one value per feature, shape (F,)"
assert torch.allclose(mean, torch.tensor([2.5, 5.0])), f"mean 应为 [2.5, 5.0] / mean should be [2.5, 5.0], got {mean}"
assert abs(std[0].item() - math.sqrt(1.25)) < 1e-6, \\
    f"总体标准差 sqrt(1.25) ≈ 1.1180（除以 n，不是 n-1）/ population std sqrt(1.25) ≈ 1.1180 (divide by n, not n-1), got {std[0].item():.4f}"
assert std[1].item() == 1.0, "常数特征的 std 应为 1 / a constant feature gets std 1"
print("fit_standardizer：自测通过 / visible checks passed")
'''),

        md("sliding_windows_formula", r"""
## 3. 带预测跨度的滑动窗口 / Sliding windows with a horizon `sliding_windows`

**公式 / Formula.** 窗口 $i$ 的输入是连续 `window` 步，目标在最后一个输入之后 `horizon` 步（`horizon = 1` 是下一步）：

$$\mathbf{X}_i = (\mathbf{x}_i, \dots, \mathbf{x}_{i+w-1}), \qquad \mathbf{y}_i = \mathbf{x}_{i+w-1+h},
  \qquad i = 0, \dots, M-1, \quad M = N - w - h + 1$$

其中 $w$ = `window`，$h$ = `horizon`。因为 $h \ge 1$，目标总在输入之后：**窗口的输入里从不包含它自己的目标**。
返回 `X` `(M, window, F)` 和 `y` `(M, F)`；`window < 1`、`horizon < 1` 或 $M < 1$ 时引发 `ValueError`。
with $w$ = `window`, $h$ = `horizon`. Since $h \ge 1$ the target always comes after the inputs: **no window's input
contains its own target**. Returns `X` `(M, window, F)` and `y` `(M, F)`; `window < 1`, `horizon < 1` or $M < 1$
raises `ValueError`.
"""),
        stub("sliding_windows", '''
def sliding_windows(series, window, horizon):
    """X[i] = series[i : i+window], y[i] = series[i + window - 1 + horizon]."""
    # series: (N, F)  ->  X (M, window, F), y (M, F),  M = N - window - horizon + 1
    # ValueError if window < 1, horizon < 1 or M < 1
    # 你的代码 / your code
    raise NotImplementedError("sliding_windows")
'''),
        md("sliding_windows_by_hand", r"""
### 动手检查 / Check by hand

序列 $0, 1, \dots, 5$（$N = 6$，$F = 1$，值就是时间步），`window=2`，`horizon=2`：$M = 6 - 2 - 2 + 1 = 3$。
窗口 0 的输入是步 0、1，最后一个输入是步 1，目标在它之后 2 步：步 3。写出全部三个窗口。
The series $0, 1, \dots, 5$ ($N = 6$, $F = 1$, value = time step), `window=2`, `horizon=2`: $M = 3$. Window 0's
inputs are steps 0 and 1, the last input is step 1, the target 2 steps later: step 3. Write all three windows.

<details><summary>答案 / Answer</summary>

```
X = [[0, 1], [1, 2], [2, 3]]     y = [3, 4, 5]
```
</details>
"""),
        demo("sliding_windows_demo", f"""
s = torch.arange(6.0).reshape(6, 1)  # (N, F) = (6, 1)
try:
    X, y = sliding_windows(s, window=2, horizon=2)  # (M, window, F) = (3, 2, 1), (M, F) = (3, 1)
    print("X =", X.squeeze(-1).tolist(), "  y =", y.squeeze(-1).tolist())
except NotImplementedError:
    {not_yet("sliding_windows")}
"""),
        md("sliding_windows_checks", "### 🔒 自测 / Visible checks: `sliding_windows`"),
        check("sliding_windows", p["sliding_windows"], '''
s = torch.arange(6.0).reshape(6, 1)
X, y = sliding_windows(s, 2, 2)
assert X.shape == (3, 2, 1) and y.shape == (3, 1), f"形状应为 (3, 2, 1) 和 (3, 1) / shapes should be (3, 2, 1) and (3, 1), got {tuple(X.shape)}, {tuple(y.shape)}"
assert X.squeeze(-1).tolist() == [[0, 1], [1, 2], [2, 3]], f"窗口输入不对 / wrong window inputs: {X.squeeze(-1).tolist()}"
assert y.squeeze(-1).tolist() == [3, 4, 5], \\
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
'''),

        md("make_datasets_formula", r"""
## 4. 不泄漏的流水线 / A pipeline that leaks nothing `make_datasets`

**顺序 / Order.** 先切分，再只在训练期上拟合，最后用**训练期的**统计量标准化两段数据，并在每段数据内部各自取窗口：

$$\text{train}, \text{test} = \text{split}(\mathbf{x}, n_{\text{train}}), \quad
  (\boldsymbol\mu, \boldsymbol\sigma) = \text{fit}(\text{train}), \quad
  \mathbf{z} = (\mathbf{x} - \boldsymbol\mu) / \boldsymbol\sigma \text{ in each period}, \quad (\mathbf{X}, \mathbf{y}) = \text{windows}(\mathbf{z})$$

返回 `(X_train, y_train, X_test, y_test, mean, std)`。两段都必须至少有一个窗口，否则 `ValueError`（由 `sliding_windows` 引发即可）。
Split first, fit on the training period only, standardise both periods with the **training** statistics, and cut
windows inside each period on its own. Returns `(X_train, y_train, X_test, y_test, mean, std)`; either period too
short for one window raises `ValueError` (raised by `sliding_windows` is fine).
"""),
        stub("make_datasets", '''
def make_datasets(series, n_train, window, horizon):
    """Split, standardise with training statistics, then window each period on its own."""
    # series: (N, F)  ->  X_train (M1, window, F), y_train (M1, F), X_test (M2, window, F), y_test (M2, F),
    #                     mean (F,), std (F,)
    # 你的代码 / your code
    raise NotImplementedError("make_datasets")
'''),
        md("make_datasets_by_hand", r"""
### 动手检查 / Check by hand: 改变未来 / change the future

序列 $1, 2, \dots, 10$，`n_train=6`，`window=2`，`horizon=1`。训练期 $1..6$：$\mu = 3.5$，
$\sigma = \sqrt{35/12} \approx 1.7078$；训练窗口有 $6 - 2 - 1 + 1 = 4$ 个，最后一个的目标是 6（训练期的最后一步）。
下面的单元格把测试期乘以 100：训练用到的东西应当一个数都不变。
The series $1, 2, \dots, 10$, `n_train=6`, `window=2`, `horizon=1`. Training period $1..6$: $\mu = 3.5$,
$\sigma \approx 1.7078$; 4 training windows, the last one's target is 6 (the last training step). The cell below
multiplies the test period by 100: nothing used for training may change by a single number.
"""),
        demo("make_datasets_demo", f"""
s = torch.arange(1.0, 11.0).reshape(10, 1)  # (N, F) = (10, 1)
future = s.clone()
future[6:] *= 100  # 改变测试期 / change the test period
try:
    a, b = make_datasets(s, 6, 2, 1), make_datasets(future, 6, 2, 1)
    for name, x, y in zip(["X_train", "y_train", "X_test", "y_test", "mean", "std"], a, b):
        print(f"{{name:8s}} unchanged: {{torch.equal(x, y)}}")  # the first two and the last two must be True
    print("mean, std =", a[4].item(), a[5].item())  # 3.5, 1.7078
except NotImplementedError:
    {not_yet("make_datasets")}
"""),
        demo("make_datasets_picture", f"""
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
    {not_yet("make_datasets")}
"""),
        md("make_datasets_checks", "### 🔒 自测 / Visible checks: `make_datasets`"),
        check("make_datasets", p["make_datasets"], '''
s = torch.arange(1.0, 11.0).reshape(10, 1)
X_tr, y_tr, X_te, y_te, mean, std = make_datasets(s, 6, 2, 1)
assert X_tr.shape == (4, 2, 1) and y_tr.shape == (4, 1) and X_te.shape == (2, 2, 1) and y_te.shape == (2, 1), \\
    "每段各自取窗口：训练 4 个，测试 2 个 / windows inside each period: 4 for training, 2 for testing"
assert abs(mean.item() - 3.5) < 1e-6 and abs(std.item() - math.sqrt(35 / 12)) < 1e-5, \\
    f"mean/std 只用训练期拟合 / mean/std fitted on the training period only: got {mean.item():.4f}, {std.item():.4f}"
assert torch.allclose(y_te.flatten() * std + mean, torch.tensor([9.0, 10.0])), \\
    "测试期用训练期的 mean/std 标准化 / the test period uses the training mean/std"
future = s.clone()
future[6:] = -50.0
other = make_datasets(future, 6, 2, 1)
for name, a, b in zip(["X_train", "y_train", "mean", "std"], (X_tr, y_tr, mean, std), (other[0], other[1], other[4], other[5])):
    assert torch.equal(a, b), f"改变测试期后 {name} 变了：泄漏 / {name} changed when only the test period changed: a leak"
print("make_datasets：自测通过 / visible checks passed")
'''),
        closing("timeseries", r"""
## 小结 / Summary

- 测试期是未来：先按时间切分，从不打乱。The test period is the future: split in time first, never shuffle.
- 统计量只在训练期上拟合，两段数据都用它标准化。Fit the statistics on the training period only, standardise both periods with them.
- 目标在最后一个输入之后 `horizon` 步，窗口从不包含自己的目标；每段数据各自取窗口。
  The target is `horizon` steps after the last input, never inside its window; window each period on its own.
- 检验：改变测试期，训练用到的一切都不变。The test: change the test period and nothing used for training changes.
"""),
    ]


# ================================================================= bert_masking


def bert_masking_notebook():
    p = function_points("bert_masking")
    total = sum(p.values())
    return [
        md("bert_masking_intro", r"""
# 练习 8：BERT 的掩码语言模型 / Exercise 8: BERT's masked-language-model masking

**目标 / Goal.** 实现 BERT（Devlin et al., 2019）预训练的遮盖步骤：找出特殊词元（`special_tokens_mask`），
然后选出 15% 的普通词元并按 80/10/10 替换，给出只在被选中位置有效的标签（`mlm_mask`）。
Implement the masking step of BERT's pretraining (Devlin et al., 2019): find the special tokens
(`special_tokens_mask`), then select 15% of the ordinary tokens, replace them 80/10/10 and build labels that
count at the selected positions only (`mlm_mask`).

**信息边界 / The information boundary.** 双向编码器在每个位置都能看到整个句子，所以如果不遮住，预测一个词元只需抄输入。
遮盖画出了边界：被选中的位置，模型看不到原词（或不能信任它看到的词），也只有这些位置进入损失（标签 $-100$ 表示忽略）；
填充和特殊词元不是数据，从不被选中。
A bidirectional encoder sees the whole sentence at every position, so without masking, predicting a token is
copying the input. Masking draws the boundary: at a selected position the model cannot see the original (or cannot
trust what it sees), and only those positions enter the loss (label $-100$ = ignored); padding and special tokens
are not data and are never selected.

**随机性 / Randomness.** 所有随机数都来自 `g = torch.Generator().manual_seed(seed)`：同一个 seed 得到同样的遮盖，实验可以复现。
All randomness comes from `g = torch.Generator().manual_seed(seed)`: the same seed gives the same masking, so
experiments can be reproduced.
"""),
        md("bert_masking_notation", NOTATION + r"""
词元 id 的批是 `(B, T)` 的 `int64` 张量，词表大小为 $V$。A batch of token ids is a `(B, T)` `int64` tensor; the vocabulary has $V$ ids.
"""),
        md("bert_masking_how_to", how_to("bert_masking", total)),
        setup("bert_masking_setup", SETUP),

        md("special_tokens_mask_formula", r"""
## 1. 特殊词元 / Special tokens `special_tokens_mask`

**公式 / Formula.** $\mathcal{S}$ = `special_ids`（填充、[CLS]、[SEP]、[MASK] ……）：

$$s_{b,t} = [\, x_{b,t} \in \mathcal{S} \,]$$

返回 `(B, T)` 的 `bool` 张量。Returns a `(B, T)` `bool` tensor. *提示 / Hint:* `torch.isin`.
"""),
        stub("special_tokens_mask", '''
def special_tokens_mask(input_ids, special_ids):
    """True where input_ids[b, t] is one of special_ids."""
    # input_ids: (B, T) int64, special_ids: list of ints  ->  (B, T) bool
    # 你的代码 / your code
    raise NotImplementedError("special_tokens_mask")
'''),
        md("special_tokens_mask_checks", "### 🔒 自测 / Visible checks: `special_tokens_mask`"),
        check("special_tokens_mask", p["special_tokens_mask"], '''
PAD, CLS, SEP, MASK = 0, 101, 102, 103
ids = torch.tensor([[CLS, 7, 8, SEP, PAD], [CLS, 9, SEP, PAD, PAD]])  # (B, T) = (2, 5)
m = special_tokens_mask(ids, [PAD, CLS, SEP, MASK])
assert isinstance(m, torch.Tensor) and m.dtype == torch.bool and m.shape == (2, 5), "应返回 (B, T) bool / should return (B, T) bool"
assert m.tolist() == [[True, False, False, True, True], [True, False, True, True, True]], f"不对 / wrong:\\n{m}"
print("special_tokens_mask：自测通过 / visible checks passed")
'''),

        md("mlm_mask_formula", r"""
## 2. 选择、替换、标签 / Select, replace, label `mlm_mask`

**公式 / Formula.** 用同一个生成器 $g$ 抽取独立的均匀随机数 $u_{b,t}, v_{b,t} \sim U(0, 1)$：

$$\text{selected}_{b,t} = [\, u_{b,t} < 0.15 \,] \wedge \neg s_{b,t}$$

$$\tilde{x}_{b,t} = \begin{cases}
  \texttt{mask\_id} & \text{selected and } v_{b,t} < 0.8 \quad (80\%)\\
  r_{b,t} \sim U\{0, \dots, V-1\} & \text{selected and } 0.8 \le v_{b,t} < 0.9 \quad (10\%)\\
  x_{b,t} & \text{otherwise (unselected, or the last 10\%)}
\end{cases}
\qquad
\ell_{b,t} = \begin{cases} x_{b,t} & \text{selected} \\ -100 & \text{otherwise} \end{cases}$$

返回 `(inputs, labels)` = $(\tilde{\mathbf{x}}, \boldsymbol\ell)$，都是 `(B, T)` 的 `int64`。
每个随机调用都传 `generator=g`；随机数的形状是整批 `(B, T)`。
Returns `(inputs, labels)` = $(\tilde{\mathbf{x}}, \boldsymbol\ell)$, both `(B, T)` `int64`. Pass `generator=g` to every
random call; draw random numbers of the whole batch's shape `(B, T)`.
"""),
        stub("mlm_mask", '''
def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    """Select 15% of the non-special tokens; 80% -> mask_id, 10% -> random, 10% kept; labels -100 elsewhere."""
    # input_ids: (B, T) int64  ->  inputs (B, T) int64, labels (B, T) int64
    # g = torch.Generator().manual_seed(seed); every torch.rand / torch.randint gets generator=g
    # 你的代码 / your code
    raise NotImplementedError("mlm_mask")
'''),
        md("mlm_mask_by_hand", r"""
### 动手检查 / Check by hand: 期望的个数 / expected counts

一批里有 10000 个普通词元（不算填充和特殊词元）。平均有多少个被选中？其中多少变成 [MASK]、多少变成随机词元、多少不变？
所有词元中有多大比例带着有效标签？一个普通词元最后显示为 [MASK] 的概率是多少？
A batch holds 10000 ordinary tokens (padding and special tokens aside). How many are selected on average? How many of
those become [MASK], a random token, or stay? What share of all tokens carries a real label? What is the
probability that an ordinary token ends up shown as [MASK]?

<details><summary>答案 / Answer</summary>

选中约 1500 个：约 1200 个 [MASK]、150 个随机词元、150 个不变；约 15% 的普通词元有标签；显示为 [MASK] 的概率 $0.15 \times 0.8 = 12\%$。
个数会围绕这些值波动：被选中的个数服从二项分布 $\text{Bin}(10000, 0.15)$，标准差约 $\sqrt{10000 \cdot 0.15 \cdot 0.85} \approx 36$。

About 1500 selected: about 1200 [MASK], 150 random, 150 unchanged; about 15% of the ordinary tokens carry a label;
the chance of being shown as [MASK] is $0.15 \times 0.8 = 12\%$. The counts fluctuate: the number selected is
$\text{Bin}(10000, 0.15)$, with a standard deviation of about 36.
</details>
"""),
        demo("mlm_mask_demo", f"""
PAD, CLS, SEP, MASK, V = 0, 101, 102, 103, 1000
g = torch.Generator().manual_seed(0)
ids = torch.randint(104, V, (100, 102), generator=g)  # (B, T): 100 sequences of 100 ordinary tokens
ids[:, 0], ids[:, -1] = CLS, SEP
try:
    inputs, labels = mlm_mask(ids, [PAD, CLS, SEP, MASK], MASK, V, seed=0)
    sel = labels != -100
    print("selected:", int(sel.sum()), "of", 100 * 100)
    print("[MASK]:", int((inputs[sel] == MASK).sum()), " unchanged:", int((inputs[sel] == ids[sel]).sum()),
          " random:", int(((inputs[sel] != MASK) & (inputs[sel] != ids[sel])).sum()))
except NotImplementedError:
    {not_yet("mlm_mask")}
"""),
        demo("mlm_mask_picture", f"""
# 图 / picture: 0 = 不变 unchanged, 1 = [MASK], 2 = 随机 random, 3 = 被选中但不变 selected but kept, 4 = 特殊 special
try:
    ids_small = ids[:8, :40].clone()  # (B, T) = (8, 40)
    ids_small[:, 30:] = PAD
    ids_small[:, 29] = SEP
    inputs, labels = mlm_mask(ids_small, [PAD, CLS, SEP, MASK], MASK, V, seed=1)
    sel = labels != -100
    kind = torch.zeros_like(ids_small)
    kind[sel & (inputs == MASK)] = 1
    kind[sel & (inputs != MASK) & (inputs != ids_small)] = 2
    kind[sel & (inputs == ids_small)] = 3
    kind[special_tokens_mask(ids_small, [PAD, CLS, SEP, MASK])] = 4
    plt.figure(figsize=(7, 1.8))
    plt.imshow(kind, cmap="tab10", vmin=0, vmax=9)
    plt.xlabel("position t"); plt.ylabel("sequence b"); plt.title("mlm_mask: which tokens were selected, and how")
    plt.show()
except NotImplementedError:
    {not_yet("mlm_mask")}
"""),
        md("mlm_mask_checks", "### 🔒 自测 / Visible checks: `mlm_mask`"),
        check("mlm_mask", p["mlm_mask"], '''
PAD, CLS, SEP, MASK, V = 0, 101, 102, 103, 1000
special = [PAD, CLS, SEP, MASK]
g = torch.Generator().manual_seed(0)
ids = torch.randint(104, V, (100, 130), generator=g)  # (B, T)
ids[:, 0], ids[:, 100], ids[:, 101:] = CLS, SEP, PAD  # 99 ordinary tokens per sequence, then padding
before = ids.clone()
inputs, labels = mlm_mask(ids, special, MASK, V, seed=0)
assert torch.equal(ids, before), "不要原地修改 input_ids / do not modify input_ids in place"
assert inputs.shape == labels.shape == ids.shape and inputs.dtype == labels.dtype == torch.int64, \\
    "inputs、labels 都是 (B, T) int64 / inputs and labels are (B, T) int64"
sel = labels != -100
assert torch.equal(labels[sel], ids[sel]), "标签是原来的词元 / labels are the original tokens"
assert torch.equal(inputs[~sel], ids[~sel]), "没被选中的位置不变 / unselected positions stay unchanged"
assert not sel[special_tokens_mask(ids, special)].any(), "填充和特殊词元从不被选中 / padding and special tokens are never selected"
n = 100 * 99
rate = sel.sum().item() / n
assert abs(rate - 0.15) < 0.025, f"约 15% 被选中，得到 {rate:.3f} / about 15% selected, got {rate:.3f}"
S = sel.sum().item()
masked = (inputs[sel] == MASK).sum().item() / S
kept = (inputs[sel] == ids[sel]).sum().item() / S
assert abs(masked - 0.8) < 0.06 and abs(kept - 0.1) < 0.05, \\
    f"被选中的约 80% [MASK]、10% 不变，得到 {masked:.3f}、{kept:.3f} / about 80% [MASK] and 10% unchanged, got {masked:.3f}, {kept:.3f}"
again = mlm_mask(ids, special, MASK, V, seed=0)
assert torch.equal(again[0], inputs) and torch.equal(again[1], labels), \\
    "同一个 seed 应得到同样的结果（用 torch.Generator）/ the same seed must give the same result (use torch.Generator)"
print("mlm_mask：自测通过 / visible checks passed")
'''),
        closing("bert_masking", r"""
## 小结 / Summary

- 先排除特殊词元和填充，再以 15% 选择。Exclude special tokens and padding first, then select 15%.
- 被选中的 80% [MASK]、10% 随机、10% 不变；标签跟着“被选中”走，其余是 $-100$。
  Of the selected, 80% [MASK], 10% random, 10% unchanged; labels follow "selected", $-100$ elsewhere.
- 随机数来自带 seed 的生成器，整批一起抽。Random numbers come from a seeded generator, drawn for the whole batch.
- 比例是统计量：评分器用精确的二项分布界检查它们，正确的代码几乎不可能被误判。
  The rates are statistics: the grader checks them with exact binomial bounds, so correct code is essentially never rejected.
"""),
    ]


# ================================================================= tiny_lm

_PART_SOURCES = {  # function -> (notebook it comes from, formula reminder, stub)
    "padding_mask": ("masks", r"""
**零件 1 / Part 1: `padding_mask`**（练习 1 / exercise 1）。$m_{b,t} = [\,t < \ell_b\,]$，True = 真实词元 / a real token。
""", '''
def padding_mask(lengths, max_len=None):
    """Paste your padding_mask from the masks notebook: mask[b, t] = (t < lengths[b])."""
    # 粘贴你在练习 1 里的实现 / paste your implementation from exercise 1
    raise NotImplementedError("padding_mask")
'''),
    "causal_mask": ("masks", r"""
**零件 2 / Part 2: `causal_mask`**（练习 1 / exercise 1）。$M_{ij} = [\,j \le i\,]$：查询 $i$ 只看键 $0..i$ / query $i$ sees keys $0..i$ only。
""", '''
def causal_mask(T, device=None):
    """Paste your causal_mask from the masks notebook: mask[i, j] = (j <= i)."""
    # 粘贴你在练习 1 里的实现 / paste your implementation from exercise 1
    raise NotImplementedError("causal_mask")
'''),
    "sinusoidal_encoding": ("positional_encoding", r"""
**零件 3 / Part 3: `sinusoidal_encoding`**（练习 2 / exercise 2）。
$PE_{t,2i} = \sin(t / \text{base}^{2i/d})$，$PE_{t,2i+1} = \cos(t / \text{base}^{2i/d})$，`(T, d)` float32。
""", '''
def sinusoidal_encoding(T, d, base=10000.0):
    """Paste your sinusoidal_encoding from the positional_encoding notebook: a (T, d) float32 table."""
    # 粘贴你在练习 2 里的实现 / paste your implementation from exercise 2
    raise NotImplementedError("sinusoidal_encoding")
'''),
    "scaled_dot_product_attention": ("attention", r"""
**零件 4 / Part 4: `scaled_dot_product_attention`**（练习 3 / exercise 3）。
$\operatorname{softmax}(\mathbf{Q}\mathbf{K}^\top / \sqrt{d_k})$ 按键归一化，被屏蔽的键权重恰好为 0；返回 `(out, weights)`。
Softmax over keys, masked keys get weight exactly 0; returns `(out, weights)`.
""", '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    """Paste your scaled_dot_product_attention from the attention notebook: returns (out, weights)."""
    # 粘贴你在练习 3 里的实现 / paste your implementation from exercise 3
    raise NotImplementedError("scaled_dot_product_attention")
'''),
    "masked_cross_entropy": ("masked_loss", r"""
**零件 5 / Part 5: `masked_cross_entropy`**（练习 5 / exercise 5）。
$L = \sum_{b,t} m_{b,t}\,\ell_{b,t} / \sum_{b,t} m_{b,t}$：只对真实词元取平均 / averaged over real tokens only。
""", '''
def masked_cross_entropy(logits, targets, mask):
    """Paste your masked_cross_entropy from the masked_loss notebook: the mean over valid tokens."""
    # 粘贴你在练习 5 里的实现 / paste your implementation from exercise 5
    raise NotImplementedError("masked_cross_entropy")
'''),
}


def tiny_lm_notebook():
    p = function_points("tiny_lm")
    total = sum(p.values())
    parts = []
    for fn in PARTS["tiny_lm"]:
        _, formula, src = _PART_SOURCES[fn]
        parts += [md(f"{fn}_part", formula), stub(fn, src)]
    return [
        md("tiny_lm_intro", r"""
# 练习 9：一个很小的因果语言模型 / Exercise 9: A tiny causal language model

**目标 / Goal.** 用你自己在前面练习里写的零件——掩码、位置编码、注意力、带掩码的损失——拼出一个只有一层注意力的语言模型，
写出它的 logits、下一个词元的损失和一个很短的训练循环，在一个玩具复制任务上看到损失下降。
Assemble a one-layer language model from the parts you wrote in the earlier exercises — masks, positional encoding,
attention, the masked loss — write its logits, the next-token loss and a short training loop, and watch the loss fall
on a toy copy task.

**信息边界 / The information boundary.** 语言模型在位置 $t$ 预测第 $t+1$ 个词元，所以位置 $t$ 的 logits 只能依赖词元 $0..t$：
改变 $t$ 之后的词元不能改变它们，它们对未来词元的嵌入的梯度也必须恰好是 0。填充同样不是数据：填充位置放什么、补了多少填充，
都不能改变有效位置的 logits 和损失。评分器会检查这两条边界，也会用它自己的参数把你的 logits 和损失与参考实现逐项比较。
A language model predicts token $t+1$ at position $t$, so the logits at $t$ may depend on tokens $0..t$ only: changing
the tokens after $t$ must not change them, and their gradient with respect to the embeddings of future tokens must
be exactly 0. Padding is not data either: neither what the padded positions hold nor how much padding there is may
change the valid logits or the loss. The grader checks both boundaries, and compares your logits and loss entry by
entry with the reference, using its own params.
"""),
        md("tiny_lm_notation", NOTATION),
        md("tiny_lm_how_to", how_to("tiny_lm", total)),
        setup("tiny_lm_setup", SETUP),
        md("tiny_lm_parts_note", r"""
## 0. 你的零件 / Your parts

> **把你自己的实现粘贴到下面五个单元格里**（不要 import 其他笔记本）：`padding_mask` 和 `causal_mask`（练习 1）、
> `sinusoidal_encoding`（练习 2）、`scaled_dot_product_attention`（练习 3）、`masked_cross_entropy`（练习 5）。
> 这个练习不单独给它们打分，但模型的每个测试都通过它们运行：零件里的错误会在这里表现为模型的错误。
> **Paste your own implementations into the five cells below** (do not import other notebooks): `padding_mask` and
> `causal_mask` (exercise 1), `sinusoidal_encoding` (exercise 2), `scaled_dot_product_attention` (exercise 3),
> `masked_cross_entropy` (exercise 5). They are not graded on their own here, but every test of the model runs
> through them: a mistake in a part shows up as a mistake of the model.
"""),
        *parts,

        md("init_tiny_lm_formula", r"""
## 1. 参数 / The params `init_tiny_lm`

**参数元组 / The params tuple**（顺序固定 / in this order），没有 `nn.Module`，只有张量：

$$\text{params} = (\mathbf{E}, \mathbf{W}_q, \mathbf{W}_k, \mathbf{W}_v, \mathbf{W}_o, \mathbf{W}_{out}),\qquad
\mathbf{E}, \mathbf{W}_{out} \in \mathbb{R}^{V \times d},\quad \mathbf{W}_q, \mathbf{W}_k, \mathbf{W}_v, \mathbf{W}_o \in \mathbb{R}^{d \times d}$$

全部 `float32`，从 `torch.Generator().manual_seed(seed)` 抽取（同一个 seed 得到同样的参数，不用全局随机状态）。
建议 / suggested：每个元素 $\sim \mathcal{N}(0, 1/d)$，即 `torch.randn(..., generator=g) / math.sqrt(d)`。
All `float32`, drawn from `torch.Generator().manual_seed(seed)` (the same seed gives the same params; the global
random state is not used). Suggested: entries $\sim \mathcal{N}(0, 1/d)$, i.e. `torch.randn(..., generator=g) / math.sqrt(d)`.
"""),
        stub("init_tiny_lm", '''
def init_tiny_lm(vocab_size, d_model, seed):
    """(E, W_q, W_k, W_v, W_o, W_out) float32, drawn from torch.Generator().manual_seed(seed)."""
    # E (V, d), W_q, W_k, W_v, W_o (d, d), W_out (V, d)
    # 你的代码 / your code
    raise NotImplementedError("init_tiny_lm")
'''),
        md("init_tiny_lm_checks", "### 🔒 自测 / Visible checks: `init_tiny_lm`"),
        check("init_tiny_lm", p["init_tiny_lm"], '''
P = init_tiny_lm(10, 16, seed=0)
assert isinstance(P, tuple) and len(P) == 6, "应返回 6 个张量的元组 / should return a tuple of 6 tensors"
shapes = [(10, 16), (16, 16), (16, 16), (16, 16), (16, 16), (10, 16)]
assert [tuple(x.shape) for x in P] == shapes, f"形状 / shapes: {[tuple(x.shape) for x in P]}, expected {shapes}"
assert all(x.dtype == torch.float32 for x in P), "全部 float32 / all float32"
torch.manual_seed(123)
Q = init_tiny_lm(10, 16, seed=0)
assert all(torch.equal(a, b) for a, b in zip(P, Q)), "同一个 seed 应给出同样的参数 / the same seed must give the same params"
assert not torch.equal(P[0], init_tiny_lm(10, 16, seed=1)[0]), "不同的 seed 应给出不同的参数 / another seed, other params"
print("init_tiny_lm：自测通过 / visible checks passed")
'''),

        md("tiny_lm_logits_formula", r"""
## 2. 前向 / The forward pass `tiny_lm_logits`

**公式 / Formula.** `tokens (B, T)` int64，`lengths (B,)`（每个在 $[1, T]$，右填充 / right padding）：

$$\mathbf{X} = \sqrt{d}\,\mathbf{E}[\text{tokens}] + \mathbf{PE}_{0:T} \qquad (B, T, d)$$
$$\mathbf{A} = \operatorname{Attention}\big(\mathbf{X}\mathbf{W}_q^\top,\ \mathbf{X}\mathbf{W}_k^\top,\ \mathbf{X}\mathbf{W}_v^\top;\ 
  M_{b,i,j} = [\,j \le i\,] \wedge [\,j < \ell_b\,]\big)$$
$$\mathbf{H} = \mathbf{X} + \mathbf{A}\mathbf{W}_o^\top \ \text{（残差 / residual）},\qquad
  \text{logits} = \mathbf{H}\mathbf{W}_{out}^\top \quad (B, T, V)$$

- 嵌入乘 $\sqrt d$ 再加位置编码，都在注意力之前。/ Scale the embedding by $\sqrt d$, add the encoding, both before attention.
- 掩码 `(B, T, T)` = `causal_mask(T)[None] & padding_mask(lengths, T)[:, None, :]`：行是查询，列是键。用 `T = tokens.shape[1]`，不是 `lengths.max()`（批里可能多补了填充）。
  The mask: rows are queries, columns keys. Use `T = tokens.shape[1]`, not `lengths.max()` (a batch may carry extra padding).
- 填充位置的 logits 不评分（但必须能算出来）。/ The logits at padded positions are not graded (but must be computable).
- 代码用行约定：$\mathbf{X}\mathbf{W}^\top$ 就是 `X @ W.T`。/ Row convention: $\mathbf{X}\mathbf{W}^\top$ is `X @ W.T`.
"""),
        stub("tiny_lm_logits", '''
def tiny_lm_logits(tokens, lengths, params):
    """tokens (B, T) int64, lengths (B,) -> logits (B, T, V); position t sees tokens 0..t only."""
    # E, W_q, W_k, W_v, W_o, W_out = params
    # X = sqrt(d) * E[tokens] + PE: (B, T, d);  mask: (B, T, T);  H = X + A @ W_o.T;  logits = H @ W_out.T
    # 你的代码 / your code
    raise NotImplementedError("tiny_lm_logits")
'''),
        md("tiny_lm_logits_by_hand", r"""
### 动手检查 / Check by hand

$V = d = 2$，$\mathbf{E} = \mathbf{I}/\sqrt 2$（所以 $\sqrt d\,\mathbf{E}[v]$ 是第 $v$ 个单位向量），$\mathbf{W}_q = \mathbf{W}_k = \mathbf{0}$（所有允许的键得分相同，权重平均分配），$\mathbf{W}_v = \mathbf{W}_o = \mathbf{W}_{out} = \mathbf{I}$。词元 $(0, 1)$，长度 2。
$d = 2$ 时 $PE_t = (\sin t, \cos t)$：
$V = d = 2$, $\mathbf{E} = \mathbf{I}/\sqrt 2$ (so $\sqrt d\,\mathbf{E}[v]$ is the $v$-th unit vector), $\mathbf{W}_q = \mathbf{W}_k = \mathbf{0}$ (every allowed
key scores the same: equal weights), $\mathbf{W}_v = \mathbf{W}_o = \mathbf{W}_{out} = \mathbf{I}$. Tokens $(0, 1)$, length 2. With $d = 2$,
$PE_t = (\sin t, \cos t)$:

- $\mathbf{x}_0 = (1, 0) + (0, 1) = (1, 1)$，$\mathbf{x}_1 = (0, 1) + (\sin 1, \cos 1) \approx (0.8415, 1.5403)$；
- 位置 0 只看自己 / position 0 sees itself only：$\text{logits}_0 = \mathbf{x}_0 + \mathbf{x}_0 = (2, 2)$；
- 位置 1 平均看 0 和 1 / position 1 averages 0 and 1：$\text{logits}_1 = \mathbf{x}_1 + \tfrac12(\mathbf{x}_0 + \mathbf{x}_1) \approx (1.7622, 2.8105)$。

没有因果掩码时位置 0 也会平均两个位置，得到 $(1.9207, 2.2702)$——看到了未来。
Without the causal mask position 0 would average both positions too, giving $(1.9207, 2.2702)$: it would see the future.
"""),
        demo("tiny_lm_logits_demo", f"""
HAND = (torch.eye(2) / math.sqrt(2), torch.zeros(2, 2), torch.zeros(2, 2), torch.eye(2), torch.eye(2), torch.eye(2))
try:
    print(tiny_lm_logits(torch.tensor([[0, 1]]), torch.tensor([2]), HAND))  # [[2, 2], [1.7622, 2.8105]]
except NotImplementedError:
    {not_yet("tiny_lm_logits")}
"""),
        demo("tiny_lm_logits_picture", f"""
# 图 / picture: |d logits_t / d x_s| —— 下三角说明位置 t 只依赖 s <= t / lower triangular: t depends on s <= t only
try:
    P = init_tiny_lm(12, 8, seed=0)
    tokens = torch.arange(6)[None]  # (1, 6): six different tokens, one embedding row each
    E = P[0].clone().requires_grad_()
    logits = tiny_lm_logits(tokens, torch.tensor([6]), (E,) + P[1:])
    J = torch.zeros(6, 6)
    for t in range(6):
        (g,) = torch.autograd.grad(logits[0, t].sum(), E, retain_graph=True)
        J[t] = g[:6].norm(dim=-1)  # row t: how much logits_t moves with the embedding of each token s
    plt.imshow(J > 1e-7, cmap="Greens"); plt.xlabel("token s"); plt.ylabel("logits at t")
    plt.title("d logits_t / d E[token s] != 0"); plt.show()
except NotImplementedError:
    {not_yet("tiny_lm_logits")}
"""),
        md("tiny_lm_logits_checks", "### 🔒 自测 / Visible checks: `tiny_lm_logits`"),
        check("tiny_lm_logits", p["tiny_lm_logits"], '''
HAND = (torch.eye(2) / math.sqrt(2), torch.zeros(2, 2), torch.zeros(2, 2), torch.eye(2), torch.eye(2), torch.eye(2))
z = tiny_lm_logits(torch.tensor([[0, 1]]), torch.tensor([2]), HAND)
assert isinstance(z, torch.Tensor) and z.shape == (1, 2, 2), f"形状应为 (B, T, V) = (1, 2, 2) / shape should be (1, 2, 2), got {getattr(z, 'shape', z)}"
want = torch.tensor([[[2.0, 2.0], [1.7622, 2.8105]]])
assert torch.allclose(z, want, atol=1e-3), f"手算例子不对 / wrong hand example:\\n{z}\\nexpected\\n{want}"
P = init_tiny_lm(9, 8, seed=1)
tokens = torch.tensor([[1, 2, 3, 4, 5], [6, 7, 8, 0, 0]])
lengths = torch.tensor([5, 3])
z = tiny_lm_logits(tokens, lengths, P)
assert z.shape == (2, 5, 9), f"形状应为 (2, 5, 9) / shape should be (2, 5, 9), got {tuple(z.shape)}"
later = tokens.clone(); later[:, 3:] = 2
assert torch.allclose(tiny_lm_logits(later, lengths, P)[:, :3], z[:, :3], atol=1e-5), \\
    "改变位置 3 之后的词元改变了位置 0..2 的 logits：看到了未来 / changing tokens from position 3 on changed the logits at 0..2: the future leaks"
more = torch.cat([tokens, torch.full((2, 2), 4)], 1)
assert torch.allclose(tiny_lm_logits(more, lengths, P)[0, :5], z[0], atol=1e-5) and \\
    torch.allclose(tiny_lm_logits(more, lengths, P)[1, :3], z[1, :3], atol=1e-5), \\
    "多补两列填充改变了有效位置的 logits / two more padded columns changed the valid logits (use T = tokens.shape[1])"
print("tiny_lm_logits：自测通过 / visible checks passed")
'''),

        md("tiny_lm_loss_formula", r"""
## 3. 下一个词元的损失 / The next-token loss `tiny_lm_loss`

**公式 / Formula.** 位置 $t$ 的 logits 预测下一个词元 $y_{b,t} = \text{tokens}_{b,t+1}$；只有下一个词元是真实词元（$t + 1 < \ell_b$）时才计入：
The logits at $t$ predict the next token $y_{b,t} = \text{tokens}_{b,t+1}$; a position counts only when that next token
is real ($t + 1 < \ell_b$):

$$L = \frac{\sum_{b} \sum_{t=0}^{T-2} [\,t + 1 < \ell_b\,]\ \operatorname{CE}(\text{logits}_{b,t},\ \text{tokens}_{b,t+1})}
           {\sum_{b} \sum_{t=0}^{T-2} [\,t + 1 < \ell_b\,]}$$

也就是 / that is: `masked_cross_entropy(logits[:, :-1], tokens[:, 1:], padding_mask(lengths, T)[:, 1:])`。
每个序列最后一个有效位置没有目标（它后面是填充），所以不计入。`lengths` 每个在 $[2, T]$ 时至少有一个目标。
The last valid position of each sequence has no target (padding follows) and does not count. With every length in
$[2, T]$ there is at least one target.
"""),
        stub("tiny_lm_loss", '''
def tiny_lm_loss(tokens, lengths, params):
    """Next-token cross-entropy: logits[:, t] predict tokens[:, t + 1] for t + 1 < length."""
    # logits (B, T, V) -> logits[:, :-1] (B, T-1, V) against tokens[:, 1:] (B, T-1), mask (B, T-1)  ->  scalar
    # 你的代码 / your code
    raise NotImplementedError("tiny_lm_loss")
'''),
        md("tiny_lm_loss_by_hand", r"""
### 动手检查 / Check by hand

用上面手算的参数，词元 $(0, 1)$、长度 2：只有位置 0 计入，它的 logits $(2, 2)$ 要预测词元 1，$p = \tfrac12$，$L = \ln 2 \approx 0.6931$。
再加一个序列 $(1, 0)$、长度 1：它没有任何目标，损失不变。
With the hand params above, tokens $(0, 1)$ and length 2: only position 0 counts; its logits $(2, 2)$ predict token 1,
$p = \tfrac12$, $L = \ln 2 \approx 0.6931$. Add a sequence $(1, 0)$ of length 1: it has no target, the loss stays.
"""),
        demo("tiny_lm_loss_demo", f"""
try:
    print(tiny_lm_loss(torch.tensor([[0, 1]]), torch.tensor([2]), HAND).item(), math.log(2))
    print(tiny_lm_loss(torch.tensor([[0, 1], [1, 0]]), torch.tensor([2, 1]), HAND).item())
except NotImplementedError:
    {not_yet("tiny_lm_loss")}
"""),
        md("tiny_lm_loss_checks", "### 🔒 自测 / Visible checks: `tiny_lm_loss`"),
        check("tiny_lm_loss", p["tiny_lm_loss"], '''
HAND = (torch.eye(2) / math.sqrt(2), torch.zeros(2, 2), torch.zeros(2, 2), torch.eye(2), torch.eye(2), torch.eye(2))
L = tiny_lm_loss(torch.tensor([[0, 1]]), torch.tensor([2]), HAND)
assert isinstance(L, torch.Tensor) and L.dim() == 0, "损失应是标量张量 / the loss should be a scalar tensor"
assert abs(L.item() - math.log(2)) < 1e-4, f"手算例子应为 ln 2 / the hand example should give ln 2, got {L.item():.4f}"
L2 = tiny_lm_loss(torch.tensor([[0, 1], [1, 0]]), torch.tensor([2, 1]), HAND)
assert abs(L2.item() - math.log(2)) < 1e-4, "长度为 1 的序列没有目标 / a sequence of length 1 has no target"
P = tuple(x.requires_grad_() for x in init_tiny_lm(9, 8, seed=2))
tokens, lengths = torch.tensor([[1, 2, 3, 4, 5], [6, 7, 8, 0, 0]]), torch.tensor([5, 3])
L = tiny_lm_loss(tokens, lengths, P)
L.backward()
assert all(x.grad is not None and torch.isfinite(x.grad).all() for x in P), "损失应对每个参数可微 / the loss must be differentiable in every param"
other = tokens.clone(); other[1, 3:] = 5
assert abs(tiny_lm_loss(other, lengths, P).item() - L.item()) < 1e-5, \\
    "填充位置的词元改变了损失：最后一个有效位置不能计入 / the padded tokens changed the loss: the last valid position must not count"
print("tiny_lm_loss：自测通过 / visible checks passed")
'''),

        md("train_tiny_lm_formula", r"""
## 4. 训练 / Training `train_tiny_lm`

**任务 / The task.** 复制：序列是 $k$ 个随机词元（从 $1..V-1$ 中抽）再重复一遍，$k \in \{2, 3, 4\}$，长度 $\ell = 2k$，右填充 0 到 $T = 8$。
后一半完全由前一半决定，所以注意力学会“往回看 $k$ 个位置”后，后一半的损失可以接近 0。
Copy: a sequence is $k$ random tokens (from $1..V-1$) followed by the same $k$ again, $k \in \{2, 3, 4\}$, length $\ell = 2k$,
right-padded with 0 to $T = 8$. The second half is fixed by the first, so once attention learns to look $k$ positions
back, its loss can get close to 0.

**循环 / The loop.** 建议 / suggested: $V = 10$，$d = 16$，32 个序列的一个固定批，`init_tiny_lm(10, 16, seed)`，`torch.optim.Adam(params, lr=0.02)`；
每一步 / every step: $L \leftarrow$ `tiny_lm_loss`，`zero_grad()`，`backward()`，`step()`，记下 `loss.item()`。

$$\boldsymbol{\theta} \leftarrow \boldsymbol{\theta} - \eta\, \hat{\mathbf{m}} / (\sqrt{\hat{\mathbf{v}}} + \epsilon)\quad\text{(Adam)}$$

返回 `steps` 个 Python 浮点数的列表。数据和参数都只从 `seed` 来（`torch.Generator().manual_seed(seed)`）：同一个 seed 两次训练得到完全相同的损失。
评分：损失有限，30 步后最后一个 < 第一个的 0.75 倍，结果可复现；在 CPU 上几秒钟。
Return a list of `steps` Python floats. Data and params come from `seed` only (`torch.Generator().manual_seed(seed)`): two
runs with the same seed give exactly the same losses. Graded: finite losses, after 30 steps the last below 0.75 times
the first, reproducible; a few seconds on a CPU.
"""),
        stub("train_tiny_lm", '''
def train_tiny_lm(seed, steps):
    """Adam on the copy task, everything seeded by `seed`; returns the `steps` training losses."""
    # tokens (32, 8), lengths (32,) from torch.Generator().manual_seed(seed);  params = init_tiny_lm(10, 16, seed)
    # every step: loss = tiny_lm_loss(...); opt.zero_grad(); loss.backward(); opt.step(); losses.append(loss.item())
    # 你的代码 / your code
    raise NotImplementedError("train_tiny_lm")
'''),
        demo("train_tiny_lm_picture", f"""
# 图 / picture: 训练曲线 / the training curve
try:
    for seed in (0, 1):
        plt.plot(train_tiny_lm(seed, 40), label=f"seed {{seed}}")
    plt.xlabel("step"); plt.ylabel("next-token loss"); plt.legend(); plt.title("copy task")
    plt.show()
except NotImplementedError:
    {not_yet("train_tiny_lm")}
"""),
        md("train_tiny_lm_checks", "### 🔒 自测 / Visible checks: `train_tiny_lm`"),
        check("train_tiny_lm", p["train_tiny_lm"], '''
losses = train_tiny_lm(0, 30)
assert isinstance(losses, list) and len(losses) == 30, "应返回 30 个损失的列表 / should return a list of 30 losses"
assert all(isinstance(v, float) and math.isfinite(v) for v in losses), "损失应是有限的浮点数 / losses should be finite floats"
assert losses[-1] < 0.75 * losses[0], f"损失没有明显下降 / the loss did not clearly fall: {losses[0]:.3f} -> {losses[-1]:.3f}"
torch.manual_seed(99)
assert train_tiny_lm(0, 5) == train_tiny_lm(0, 5), "同一个 seed 应得到同样的损失 / the same seed must give the same losses"
print("train_tiny_lm：自测通过 / visible checks passed")
'''),
        closing("tiny_lm", r"""
## 小结 / Summary

- 语言模型 = 嵌入（乘 $\sqrt d$）+ 位置编码 → 因果自注意力 → 残差 → 输出投影；每一块都是前面练习里的零件。
  A language model = embedding (times $\sqrt d$) + positional encoding → causal self-attention → residual → output
  projection; every block is a part from the earlier exercises.
- 因果掩码是信息边界：位置 $t$ 的 logits 对未来词元的梯度恰好为 0。
  The causal mask is the information boundary: the gradient of the logits at $t$ with respect to future tokens is exactly 0.
- 目标右移一位，最后一个有效位置没有目标；填充不进入损失。
  Targets are shifted by one, the last valid position has no target, padding never enters the loss.
- 数据和参数都由 seed 决定，实验才能复现。Data and params both come from the seed, so the experiment can be reproduced.
"""),
    ]


BUILDERS = {
    "rope": rope_notebook,
    "timeseries": timeseries_notebook,
    "bert_masking": bert_masking_notebook,
    "tiny_lm": tiny_lm_notebook,
}
