# %% attention_intro [markdown] nbgrader={"grade": false, "grade_id": "attention_intro", "locked": true, "schema_version": 3, "solution": false}
# # 练习 3：注意力 / Exercise 3: Attention
#
# **目标 / Goal.** 实现缩放点积注意力 `scaled_dot_product_attention`，再用它搭出多头注意力 `MultiHeadAttention`
# （与 `torch.nn.MultiheadAttention` 的计算相同）。
#
# Implement scaled dot-product attention, `scaled_dot_product_attention`, and build multi-head attention,
# `MultiHeadAttention`, from it (computing what `torch.nn.MultiheadAttention` computes).
#
# **信息边界 / The information boundary.** 查询 $i$ 的输出是值向量 $\mathbf{v}_j$ 的加权平均。掩码不允许的键 $j$ 权重必须**恰好为 0**，这样输出（和梯度）就完全不依赖 $\mathbf{x}_j$：用因果掩码时，改变未来的词元不会改变过去的输出；用填充掩码时，改变填充不会改变真实位置的输出。只给一个很小的权重（例如 $10^{-9}$）仍然是泄漏。
#
# The output of query $i$ is a weighted average of value vectors $\mathbf{v}_j$. A key $j$ the mask forbids must get
# weight **exactly 0**, so the output (and its gradient) does not depend on $\mathbf{x}_j$ at all: with a causal mask,
# changing future tokens does not change past outputs; with a padding mask, changing padding does not change the
# outputs at real positions. A tiny weight (say $10^{-9}$) is still a leak.
#
# 掩码的约定与练习 1 相同：`bool`，`True` = 可以关注。这个笔记本不依赖练习 1 的函数，需要掩码时直接用 `torch.tril` 等构造。
#
# Masks follow exercise 1: `bool`, `True` = may attend. This notebook does not depend on exercise 1's functions;
# where a mask is needed it is built directly (e.g. with `torch.tril`).

# %% attention_notation [markdown] nbgrader={"grade": false, "grade_id": "attention_notation", "locked": true, "schema_version": 3, "solution": false}
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

# %% attention_how_to [markdown] nbgrader={"grade": false, "grade_id": "attention_how_to", "locked": true, "schema_version": 3, "solution": false}
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

# %% attention_setup nbgrader={"grade": false, "grade_id": "attention_setup", "locked": true, "schema_version": 3, "solution": false}
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)  # 可复现 / reproducible


# %% scaled_dot_product_attention_formula [markdown] nbgrader={"grade": false, "grade_id": "scaled_dot_product_attention_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 1. 缩放点积注意力 / Scaled dot-product attention `scaled_dot_product_attention`
#
# **公式 / Formula.** 对一个查询 $\mathbf{q}_i \in \mathbb{R}^{d_k}$（列向量）、键 $\mathbf{k}_j$ 和值 $\mathbf{v}_j$：
#
# For one query $\mathbf{q}_i \in \mathbb{R}^{d_k}$ (a column vector), keys $\mathbf{k}_j$ and values $\mathbf{v}_j$:
#
# $$s_{ij} = \frac{\mathbf{q}_i^\top \mathbf{k}_j}{\sqrt{d_k}}, \qquad
#   \alpha_{ij} = \frac{m_{ij}\, \exp(s_{ij})}{\sum_{j'} m_{ij'}\, \exp(s_{ij'})}, \qquad
#   \mathbf{o}_i = \sum_j \alpha_{ij}\, \mathbf{v}_j$$
#
# $m_{ij} \in \{0, 1\}$ 是掩码（没有掩码时全为 1）。按行堆叠（代码里 $\mathbf{q}_i^\top$ 是 `Q` 的一行）就是
#
# $m_{ij} \in \{0, 1\}$ is the mask (all ones without a mask). Stacked as rows ($\mathbf{q}_i^\top$ is a row of `Q` in
# code) this is
#
# $$\mathbf{A} = \operatorname{softmax}_{\text{keys}}\!\left(\frac{\mathbf{Q}\mathbf{K}^\top}{\sqrt{d_k}}\right), \qquad
#   \mathbf{O} = \mathbf{A}\mathbf{V}.$$
#
# - 形状：`Q (..., Tq, dk)`、`K (..., Tk, dk)`、`V (..., Tk, dv)`，前面可以有任意多个轴（如 `(B, H)`）；返回 `out (..., Tq, dv)` 和 `weights (..., Tq, Tk)`。
#
#   Shapes: `Q (..., Tq, dk)`, `K (..., Tk, dk)`, `V (..., Tk, dv)`, with any number of leading axes (e.g. `(B, H)`);
#   returns `out (..., Tq, dv)` and `weights (..., Tq, Tk)`.
# - `mask`：`bool`，可广播到 `(..., Tq, Tk)`，`True` = 可以关注；被挡住的键权重恰好为 0。
#
#   `mask`: `bool`, broadcastable to `(..., Tq, Tk)`, `True` = may attend; blocked keys get weight exactly 0.
# - 一行里所有键都被挡住时（例如长度为 0 的序列），$\operatorname{softmax}$ 会得到 $0/0$ = NaN。这样的行必须给出有限值（输出和梯度里都不能有 NaN 或 inf）；具体取值不评分。
#
#   When every key of a row is blocked (e.g. a sequence of length 0) the softmax gives $0/0$ = NaN. Such a row must
#   give finite values (no NaN or inf in the output or the gradient); their exact values are not graded.
#
# *提示 / Hint:* `scores.masked_fill(~mask, float("-inf"))` 然后 `torch.softmax(..., dim=-1)`；之后再把被挡住的位置设为 0。
#
# `scores.masked_fill(~mask, float("-inf"))`, then `torch.softmax(..., dim=-1)`; afterwards set the blocked entries to 0.

# %% scaled_dot_product_attention nbgrader={"grade": false, "grade_id": "scaled_dot_product_attention", "locked": false, "schema_version": 3, "solution": true}
def scaled_dot_product_attention(Q, K, V, mask=None):
    """softmax(Q K^T / sqrt(dk)) over keys (masked keys get exactly 0), then weights @ V."""
    # Q (..., Tq, dk), K (..., Tk, dk), V (..., Tk, dv), mask bool broadcastable to (..., Tq, Tk)
    # -> out (..., Tq, dv), weights (..., Tq, Tk)
    # 你的代码 / your code
    raise NotImplementedError("scaled_dot_product_attention")


# %% scaled_dot_product_attention_by_hand [markdown] nbgrader={"grade": false, "grade_id": "scaled_dot_product_attention_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand: 2×2
#
# $d_k = 4$（所以 $\sqrt{d_k} = 2$），两个查询、两个键（$\mathbf{K} = \mathbf{Q}$），$d_v = 2$：
#
# $d_k = 4$ (so $\sqrt{d_k} = 2$), two queries, two keys ($\mathbf{K} = \mathbf{Q}$), $d_v = 2$:
#
# $$\mathbf{Q} = \mathbf{K} = \begin{pmatrix} 0 & 0 & 0 & 0 \\ 1 & 1 & 0 & 0 \end{pmatrix}, \qquad
#   \mathbf{V} = \begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}$$
#
# 分数 $\mathbf{Q}\mathbf{K}^\top / 2 = \begin{pmatrix} 0 & 0 \\ 0 & 1 \end{pmatrix}$。第 0 行的权重是 $(\tfrac12, \tfrac12)$；第 1 行是 $\left(\frac{1}{1+e}, \frac{e}{1+e}\right) \approx (0.2689, 0.7311)$。输出 = 权重 × $\mathbf{V}$。加上因果掩码 $\begin{pmatrix} 1 & 0 \\ 1 & 1 \end{pmatrix}$ 后，第 0 行变成 $(1, 0)$，它的输出就是 $\mathbf{v}_0$。
#
# Scores $\mathbf{Q}\mathbf{K}^\top / 2 = \begin{pmatrix} 0 & 0 \\ 0 & 1 \end{pmatrix}$. Row 0's weights are
# $(\tfrac12, \tfrac12)$; row 1's are $\left(\frac{1}{1+e}, \frac{e}{1+e}\right) \approx (0.2689, 0.7311)$. Output =
# weights × $\mathbf{V}$. With the causal mask $\begin{pmatrix} 1 & 0 \\ 1 & 1 \end{pmatrix}$ row 0 becomes $(1, 0)$
# and its output is just $\mathbf{v}_0$.
#
# <details><summary>答案 / Answer</summary>
#
# ```
# weights = [[0.5000, 0.5000],     out = [[2.0000, 3.0000],
#            [0.2689, 0.7311]]            [2.4621, 3.4621]]
# causal:   [[1.0000, 0.0000],     out = [[1.0000, 2.0000],
#            [0.2689, 0.7311]]            [2.4621, 3.4621]]
# ```
# </details>

# %% scaled_dot_product_attention_demo
try:
    Q = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]])  # (Tq, dk) = (2, 4)
    V = torch.tensor([[1.0, 2.0], [3.0, 4.0]])  # (Tk, dv) = (2, 2)
    out, weights = scaled_dot_product_attention(Q, Q, V)
    print("weights", weights, "out", out, sep="\n")
    causal = torch.ones(2, 2, dtype=torch.bool).tril()  # (Tq, Tk)
    out, weights = scaled_dot_product_attention(Q, Q, V, causal)
    print("causal weights", weights, "causal out", out, sep="\n")
except NotImplementedError:
    print("请先实现 scaled_dot_product_attention，再运行这个单元格。/ Implement scaled_dot_product_attention first, then run this cell again.")

# %% scaled_dot_product_attention_picture
# 图 / picture: 因果 + 填充（长度 4）的注意力权重 / attention weights, causal + padding (length 4)
try:
    T, length, dk = 6, 4, 8
    Q, K, V = torch.randn(T, dk), torch.randn(T, dk), torch.randn(T, dk)
    allowed = torch.ones(T, T, dtype=torch.bool).tril() & (torch.arange(T) < length)  # (Tq, Tk)
    out, weights = scaled_dot_product_attention(Q, K, V, allowed)  # (T, dk), (T, T)
    fig, axes = plt.subplots(1, 2, figsize=(7, 3.3), layout="constrained")
    axes[0].imshow(allowed, cmap="Blues", vmin=0, vmax=1)
    axes[0].set(title="mask (True = may attend)", xlabel="key j", ylabel="query i")
    im = axes[1].imshow(weights, cmap="viridis", vmin=0, vmax=1)
    axes[1].set(title="weights", xlabel="key j", ylabel="query i")
    fig.colorbar(im, ax=axes[1])
    plt.show()
except NotImplementedError:
    print("请先实现 scaled_dot_product_attention，再运行这个单元格。/ Implement scaled_dot_product_attention first, then run this cell again.")

# %% scaled_dot_product_attention_checks [markdown] nbgrader={"grade": false, "grade_id": "scaled_dot_product_attention_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `scaled_dot_product_attention`

# %% test_scaled_dot_product_attention nbgrader={"grade": true, "grade_id": "test_scaled_dot_product_attention", "locked": true, "points": 20, "schema_version": 3, "solution": false}
Q = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]])  # (Tq, dk) = (2, 4)
V = torch.tensor([[1.0, 2.0], [3.0, 4.0]])  # (Tk, dv) = (2, 2)
out, w = scaled_dot_product_attention(Q, Q.clone(), V)
assert out.shape == (2, 2) and w.shape == (2, 2), f"形状应为 out (Tq, dv), weights (Tq, Tk) / shapes should be out (Tq, dv), weights (Tq, Tk); got {tuple(out.shape)}, {tuple(w.shape)}"
assert torch.allclose(w, torch.tensor([[0.5, 0.5], [0.268941, 0.731059]]), atol=1e-5), \
    f"手算例子的权重不对（别忘了除以 sqrt(dk) = 2，softmax 沿键的方向）/ wrong hand-example weights (divide by sqrt(dk) = 2, softmax over keys):\n{w}"
assert torch.allclose(out, torch.tensor([[2.0, 3.0], [2.462117, 3.462117]]), atol=1e-5), f"out = weights @ V 不对 / wrong out:\n{out}"
causal = torch.tensor([[True, False], [True, True]])
out, w = scaled_dot_product_attention(Q, Q.clone(), V, causal)
assert w[0, 1].item() == 0.0 and abs(w[0, 0].item() - 1.0) < 1e-6, f"被挡住的键权重必须恰好为 0 / a blocked key must get weight exactly 0:\n{w}"
assert torch.allclose(out[0], V[0]), "查询 0 只能看键 0，输出就是 v_0 / query 0 sees key 0 only, its output is v_0"

torch.manual_seed(0)
Q, K, V = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 6, 4), torch.randn(2, 3, 6, 7)  # (B, H, T, d)
out, w = scaled_dot_product_attention(Q, K, V)
assert out.shape == (2, 3, 5, 7) and w.shape == (2, 3, 5, 6), f"前面的轴 (B, H) 应保留 / leading axes (B, H) should be kept; got {tuple(out.shape)}, {tuple(w.shape)}"
assert torch.allclose(w.sum(-1), torch.ones(2, 3, 5), atol=1e-5), "每个查询的权重在键上和为 1 / each query's weights sum to 1 over keys"
keys_real = torch.tensor([[True] * 4 + [False] * 2, [True] * 6]).view(2, 1, 1, 6)  # (B, 1, 1, Tk): lengths 4 and 6
out, w = scaled_dot_product_attention(Q, K, V, keys_real)
assert (w[0, :, :, 4:] == 0).all(), "填充的键权重必须恰好为 0 / padded keys must get weight exactly 0"
assert torch.allclose(w.sum(-1), torch.ones(2, 3, 5), atol=1e-5), "屏蔽后权重仍和为 1 / weights still sum to 1 after masking"
assert keys_real[0, 0, 0].tolist() == [True] * 4 + [False] * 2, "不要原地修改 mask / do not modify the mask in place"
out, w = scaled_dot_product_attention(Q.double(), K.double(), V.double())
assert out.dtype == torch.float64 and w.dtype == torch.float64, f"应保持输入的 dtype（float64）/ should keep the inputs' dtype (float64), got {out.dtype}"

Q.requires_grad_(True)
none_allowed = torch.ones(5, 6, dtype=torch.bool)
none_allowed[0] = False  # query 0 may attend to no key at all
out, w = scaled_dot_product_attention(Q, K, V, none_allowed)
assert torch.isfinite(out).all() and torch.isfinite(w).all(), "没有可关注键的行也必须是有限值（不能有 NaN）/ a row with no allowed key must stay finite (no NaN)"
out.sum().backward()
assert torch.isfinite(Q.grad).all(), "梯度里也不能有 NaN / no NaN in the gradient either"
print("scaled_dot_product_attention：自测通过 / visible checks passed")


# %% MultiHeadAttention_formula [markdown] nbgrader={"grade": false, "grade_id": "MultiHeadAttention_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 2. 多头注意力 / Multi-head attention `MultiHeadAttention`
#
# **公式 / Formula.** $H$ 个头，每个头宽 $d_h = d_{\text{model}} / H$。四个投影 $\mathbf{W}_q, \mathbf{W}_k, \mathbf{W}_v, \mathbf{W}_o
# \in \mathbb{R}^{d_{\text{model}} \times d_{\text{model}}}$（带偏置）。头 $h$ 用投影结果的第 $h d_h$ 到 $(h+1) d_h - 1$ 个分量：
#
# $H$ heads of width $d_h = d_{\text{model}} / H$. Four projections $\mathbf{W}_q, \mathbf{W}_k, \mathbf{W}_v,
# \mathbf{W}_o \in \mathbb{R}^{d_{\text{model}} \times d_{\text{model}}}$ (with biases). Head $h$ uses components
# $h d_h$ to $(h+1) d_h - 1$ of each projection:
#
# $$\mathbf{q}_i = \mathbf{W}_q \mathbf{x}_i + \mathbf{b}_q, \quad
#   \mathbf{k}_j = \mathbf{W}_k \mathbf{x}'_j + \mathbf{b}_k, \quad
#   \mathbf{v}_j = \mathbf{W}_v \mathbf{x}'_j + \mathbf{b}_v, \qquad
#   \mathbf{q}^{(h)}_i = \mathbf{q}_i[h d_h : (h+1) d_h], \ \dots$$
#
# $$\mathbf{o}^{(h)}_i = \operatorname{Attention}\big(\mathbf{q}^{(h)}_i, \{\mathbf{k}^{(h)}_j\}, \{\mathbf{v}^{(h)}_j\}\big), \qquad
#   \mathbf{y}_i = \mathbf{W}_o \begin{pmatrix} \mathbf{o}^{(1)}_i \\ \vdots \\ \mathbf{o}^{(H)}_i \end{pmatrix} + \mathbf{b}_o$$
#
# $\mathbf{x}_i$ 来自 `x_q`（查询），$\mathbf{x}'_j$ 来自 `x_kv`（键和值；自注意力时两者相同）。
#
# $\mathbf{x}_i$ comes from `x_q` (queries), $\mathbf{x}'_j$ from `x_kv` (keys and values; the same tensor in self-attention).
#
# - `__init__(d_model, num_heads, bias=True)`：子模块 `W_q, W_k, W_v, W_o`，每个都是 `nn.Linear(d_model, d_model, bias=bias)`；`d_model % num_heads != 0` 时引发 `ValueError`。
#
#   Sub-modules `W_q, W_k, W_v, W_o`, each `nn.Linear(d_model, d_model, bias=bias)`; `d_model % num_heads != 0`
#   raises `ValueError`.
# - `forward(x_q, x_kv, mask=None)`：`x_q (B, Tq, d_model)`，`x_kv (B, Tk, d_model)`，`mask` 可广播到 `(B, H, Tq, Tk)`
#   （例如练习 1 的 `(B, 1, T, T)`）；返回 `out (B, Tq, d_model)` 和每个头的 `weights (B, H, Tq, Tk)`（不要在头上取平均）。
#
#   `x_q (B, Tq, d_model)`, `x_kv (B, Tk, d_model)`, `mask` broadcastable to `(B, H, Tq, Tk)` (e.g. exercise 1's
#   `(B, 1, T, T)`); returns `out (B, Tq, d_model)` and the per-head `weights (B, H, Tq, Tk)` (not averaged over heads).
# - 拆头和 `torch.nn.MultiheadAttention` 一样：`(B, T, d_model)` → `view` → `(B, T, H, dh)` → `transpose` → `(B, H, T, dh)`；合并时反过来。
#
#   Split heads as `torch.nn.MultiheadAttention` does: `(B, T, d_model)` → `view` → `(B, T, H, dh)` → `transpose` →
#   `(B, H, T, dh)`; merge them back the reverse way.

# %% MultiHeadAttention nbgrader={"grade": false, "grade_id": "MultiHeadAttention", "locked": false, "schema_version": 3, "solution": true}
class MultiHeadAttention(nn.Module):
    """H heads of width dh = d_model / H over scaled_dot_product_attention, as torch.nn.MultiheadAttention."""

    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        # ValueError if d_model % num_heads != 0
        # self.W_q, self.W_k, self.W_v, self.W_o: nn.Linear(d_model, d_model, bias=bias) each
        # 你的代码 / your code
        raise NotImplementedError("MultiHeadAttention.__init__")

    def forward(self, x_q, x_kv, mask=None):
        """x_q (B, Tq, d_model), x_kv (B, Tk, d_model) -> out (B, Tq, d_model), weights (B, H, Tq, Tk)."""
        # q: (B, Tq, d_model) -> (B, H, Tq, dh);  k, v: (B, Tk, d_model) -> (B, H, Tk, dh)
        # attention per head: (B, H, Tq, dh);  heads side by side: (B, Tq, d_model);  then W_o
        # 你的代码 / your code
        raise NotImplementedError("MultiHeadAttention.forward")


# %% MultiHeadAttention_by_hand [markdown] nbgrader={"grade": false, "grade_id": "MultiHeadAttention_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand
#
# 把四个投影都设成单位矩阵、没有偏置。若 $H = 1$，多头注意力就是 $\mathbf{x}$ 对自己的注意力：$\operatorname{softmax}(\mathbf{X}\mathbf{X}^\top / \sqrt{d_{\text{model}}})\,\mathbf{X}$。若 $H = 2$、$d_{\text{model}} = 4$，头 0 只看第 0、1 列，头 1 只看第 2、3 列，每个头除以 $\sqrt{d_h} = \sqrt{2}$。下面的单元格打印形状和与手算公式的差。
#
# Set all four projections to the identity, without biases. With $H = 1$, multi-head attention is the attention of
# $\mathbf{x}$ on itself: $\operatorname{softmax}(\mathbf{X}\mathbf{X}^\top / \sqrt{d_{\text{model}}})\,\mathbf{X}$.
# With $H = 2$ and $d_{\text{model}} = 4$, head 0 sees columns 0 and 1 only, head 1 columns 2 and 3, each divided by
# $\sqrt{d_h} = \sqrt{2}$. The cell below prints the shapes and the difference from the formula by hand.

# %% MultiHeadAttention_demo
try:
    x = torch.randn(1, 3, 4)  # (B, T, d_model)
    for H in (1, 2):
        mha = MultiHeadAttention(4, H, bias=False)
        with torch.no_grad():
            for layer in (mha.W_q, mha.W_k, mha.W_v, mha.W_o):
                layer.weight.copy_(torch.eye(4))
            out, weights = mha(x, x)  # (B, T, d_model), (B, H, T, T)
        dh = 4 // H
        heads = []
        for h in range(H):
            xh = x[..., h * dh:(h + 1) * dh]  # (B, T, dh)
            heads.append(torch.softmax(xh @ xh.transpose(1, 2) / math.sqrt(dh), dim=-1) @ xh)
        by_hand = torch.cat(heads, dim=-1)  # (B, T, d_model)
        print(f"H={H}: out {tuple(out.shape)}, weights {tuple(weights.shape)}, "
              f"max |out - by hand| = {(out - by_hand).abs().max().item():.2e}")
except NotImplementedError:
    print("请先实现 MultiHeadAttention，再运行这个单元格。/ Implement MultiHeadAttention first, then run this cell again.")

# %% MultiHeadAttention_picture
# 图 / picture: 因果自注意力，每个头一张权重图 / causal self-attention, one weight map per head
try:
    B, T, d_model, H = 1, 6, 8, 2
    mha = MultiHeadAttention(d_model, H)
    x = torch.randn(B, T, d_model)
    causal = torch.ones(T, T, dtype=torch.bool).tril()[None, None]  # (1, 1, T, T), broadcasts to (B, H, T, T)
    with torch.no_grad():
        out, weights = mha(x, x, causal)  # (B, T, d_model), (B, H, T, T)
    fig, axes = plt.subplots(1, H, figsize=(3.2 * H, 3), layout="constrained")
    for h in range(H):
        axes[h].imshow(weights[0, h], cmap="viridis", vmin=0, vmax=1)
        axes[h].set(title=f"head {h}", xlabel="key j", ylabel="query i")
    plt.show()
except NotImplementedError:
    print("请先实现 MultiHeadAttention，再运行这个单元格。/ Implement MultiHeadAttention first, then run this cell again.")

# %% MultiHeadAttention_checks [markdown] nbgrader={"grade": false, "grade_id": "MultiHeadAttention_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `MultiHeadAttention`

# %% test_MultiHeadAttention nbgrader={"grade": true, "grade_id": "test_MultiHeadAttention", "locked": true, "points": 10, "schema_version": 3, "solution": false}
torch.manual_seed(0)
mha = MultiHeadAttention(8, 2)
assert isinstance(mha, nn.Module), "MultiHeadAttention 应继承 nn.Module / should subclass nn.Module"
for name in ["W_q", "W_k", "W_v", "W_o"]:
    layer = getattr(mha, name, None)
    assert isinstance(layer, nn.Linear) and tuple(layer.weight.shape) == (8, 8) and layer.bias is not None, \
        f"{name} 应是 nn.Linear(d_model, d_model) / {name} should be nn.Linear(d_model, d_model)"
assert MultiHeadAttention(8, 2, bias=False).W_q.bias is None, "bias=False 时没有偏置 / bias=False means no bias"
x_q, x_kv = torch.randn(3, 4, 8), torch.randn(3, 5, 8)  # (B, Tq, d_model), (B, Tk, d_model)
out, w = mha(x_q, x_kv)
assert out.shape == (3, 4, 8), f"out 应为 (B, Tq, d_model) = (3, 4, 8) / out should be (3, 4, 8), got {tuple(out.shape)}"
assert w.shape == (3, 2, 4, 5), f"weights 应为 (B, H, Tq, Tk) = (3, 2, 4, 5)，不在头上平均 / weights should be (3, 2, 4, 5), not averaged over heads; got {tuple(w.shape)}"
assert torch.allclose(w.sum(-1), torch.ones(3, 2, 4), atol=1e-5), "每个头的权重在键上和为 1 / each head's weights sum to 1 over keys"

x = torch.randn(2, 3, 4)  # (B, T, d_model)
for H in (1, 2):
    eye = MultiHeadAttention(4, H, bias=False)
    with torch.no_grad():  # W_q = W_k = I, W_v = 2 I, W_o = 3 I: out = 6 · attention of x on itself
        for layer, scale in ((eye.W_q, 1.0), (eye.W_k, 1.0), (eye.W_v, 2.0), (eye.W_o, 3.0)):
            layer.weight.copy_(scale * torch.eye(4))
    out, w = eye(x, x)
    dh = 4 // H
    for h in range(H):
        xh = x[..., h * dh:(h + 1) * dh]  # (B, T, dh): head h's columns
        ref = torch.softmax(xh @ xh.transpose(1, 2) / math.sqrt(dh), dim=-1)  # (B, T, T)
        assert torch.allclose(w[:, h], ref, atol=1e-5), \
            f"H={H}：头 {h} 应使用第 {h * dh}..{(h + 1) * dh - 1} 列并除以 sqrt(dh) / H={H}: head {h} should use columns {h * dh}..{(h + 1) * dh - 1} and divide by sqrt(dh)"
        assert torch.allclose(out[..., h * dh:(h + 1) * dh], 6 * ref @ xh, atol=1e-4), \
            f"H={H}：头 {h} 的输出应是 W_o(权重 @ W_v x)，放在第 {h * dh}..{(h + 1) * dh - 1} 列 / H={H}: head {h}'s output should be W_o(weights @ W_v x), in columns {h * dh}..{(h + 1) * dh - 1}"

causal = torch.ones(4, 4, dtype=torch.bool).tril()  # (Tq, Tk), broadcasts to (B, H, Tq, Tk)
out, w = mha(x_q, x_q, causal)
assert (w.masked_select(~causal) == 0).all(), "未来的键权重必须恰好为 0 / future keys must get weight exactly 0"
try:
    MultiHeadAttention(6, 4)
except ValueError:
    pass
else:
    raise AssertionError("d_model=6 不能被 num_heads=4 整除，应引发 ValueError / 6 is not divisible by 4: should raise ValueError")
print("MultiHeadAttention：自测通过 / visible checks passed")

# %% attention_summary [markdown] nbgrader={"grade": false, "grade_id": "attention_summary", "locked": true, "schema_version": 3, "solution": false}
# ## 小结 / Summary
#
# - $\mathbf{A} = \operatorname{softmax}(\mathbf{Q}\mathbf{K}^\top/\sqrt{d_k})$ 沿键归一化，被挡住的键权重恰好为 0，没有可关注键的行保持有限。
#
#   Softmax over keys, blocked keys get exactly 0, rows with no allowed key stay finite.
# - 多头 = 把投影按列切成 $H$ 份，各自做注意力，再并排拼回去乘 $\mathbf{W}_o$。
#
#   Multi-head = split the projections' columns into $H$ parts, attend in each, put them side by side, apply $\mathbf{W}_o$.
