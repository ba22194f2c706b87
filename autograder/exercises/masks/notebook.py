# %% masks_intro [markdown] nbgrader={"grade": false, "grade_id": "masks_intro", "locked": true, "schema_version": 3, "solution": false}
# # 练习 1：掩码 / Exercise 1: Masks
#
# **目标 / Goal.** 实现本章所有序列模型都要用到的三个布尔掩码：`padding_mask`（哪些位置是真实词元）、`causal_mask`（不许看未来）和 `attention_mask`（自注意力用的组合掩码）。
#
# Implement the three boolean masks every sequence model of this chapter uses: `padding_mask` (which positions are
# real tokens), `causal_mask` (no looking into the future) and `attention_mask` (the combined mask of self-attention).
#
# **信息边界 / The information boundary.** 掩码写下的是“在时刻 $t$ 做预测时，模型可以看到什么”：
# - **填充（padding）绝不能泄漏。** 一批序列长短不一，短的在末尾补齐到长度 $T$。补上的位置不是数据：如果它们影响了真实位置的输出，同一个句子放进不同的批次（补齐的长度不同）就会得到不同的结果，损失里也会混进假词元。
# - **因果模型不能看未来。** 语言模型在位置 $t$ 预测下一个词元，只能用位置 $0,\dots,t$；如果能看到 $t+1$，训练时它只需抄答案，而生成时未来根本还不存在。
#
# A mask writes down *what a prediction at time $t$ may see*:
# - **Padding must never leak.** Sequences of a batch have different lengths; the short ones are padded at the end
#   to length $T$. Padded positions are not data: if they changed the output at a real position, the same sentence
#   would get different results in different batches (with different padding), and the loss would count fake tokens.
# - **A causal model must not see the future.** A language model predicting the next token at position $t$ may use
#   positions $0, \dots, t$ only; if it could see $t+1$ it would learn to copy the answer during training, and at
#   generation time the future does not exist yet.
#
# **约定 / Convention.** 本章的掩码里 `True` = 允许（真实词元 / 可以关注），与 `torch.nn.functional.scaled_dot_product_attention`
# 的布尔掩码一致。注意 `torch.nn.MultiheadAttention` 的 `attn_mask` / `key_padding_mask` 正好相反（`True` = 屏蔽）。
#
# In this chapter `True` = allowed (a real token / may attend), as in the boolean mask of
# `torch.nn.functional.scaled_dot_product_attention`. Beware: `torch.nn.MultiheadAttention`'s `attn_mask` /
# `key_padding_mask` mean the opposite (`True` = blocked).
#
# **一个掩码分三步教 / A mask in three steps:** 为什么（信息边界）→ 一个小函数 → 一张图。
#
# Why (the information boundary) → a small function → a picture of it.

# %% masks_notation [markdown] nbgrader={"grade": false, "grade_id": "masks_notation", "locked": true, "schema_version": 3, "solution": false}
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

# %% masks_how_to [markdown] nbgrader={"grade": false, "grade_id": "masks_how_to", "locked": true, "schema_version": 3, "solution": false}
# ### 怎么做 / How to work
#
# 1. 从上到下运行单元格。把每个 `raise NotImplementedError` 换成你的代码；不要改函数名和参数。
# 2. “动手检查”先在纸上算，再运行代码对照；图在函数实现之前只打印提示。
# 3. 🔒 “自测”单元格本身不计分，但必须全部通过。本练习的 20 分全部来自隐藏的性质测试：作业评分时，评分器用许多随机的小输入检查你的函数，所以自测通过不等于满分。函数不要原地修改输入，也不要依赖其他练习的笔记本。
# 4. 提交前自查：在这个文件夹里运行 `pytest`，每个函数一行：通过、还没有实现、或没通过以及原因。
#
# 1. Run the cells from top to bottom. Replace every `raise NotImplementedError` by your code; keep the names and
#    signatures.
# 2. Work out each "check by hand" on paper first, then run the cell and compare; the pictures only print a hint
#    until the function is implemented.
# 3. The 🔒 "visible checks" score no points themselves, but must all pass. All 20 points of this exercise
#    come from hidden property tests: when your work is graded, the grader checks your functions on many small random
#    inputs, so passing the visible checks does not guarantee full marks. Do not modify inputs in place, and do not
#    rely on another exercise's notebook.
# 4. Before submitting: run `pytest` in this folder, one line per function: passed, not implemented yet, or failed
#    and why.

# %% masks_setup nbgrader={"grade": false, "grade_id": "masks_setup", "locked": true, "schema_version": 3, "solution": false}
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)  # 可复现 / reproducible


# %% padding_mask_why [markdown] nbgrader={"grade": false, "grade_id": "padding_mask_why", "locked": true, "schema_version": 3, "solution": false}
# ## 1. 填充掩码 / Padding mask `padding_mask`
#
# **为什么 / Why.** 序列 $b$ 有 $\ell_b$ 个真实词元，后面 $T - \ell_b$ 个位置是填充。之后的每一步（注意力的键、循环网络的状态、损失）都要知道哪些位置是真的。
#
# Sequence $b$ has $\ell_b$ real tokens followed by $T - \ell_b$ padded positions. Every later step (the keys of
# attention, the state of a recurrent network, the loss) needs to know which positions are real.

# %% padding_mask_formula [markdown] nbgrader={"grade": false, "grade_id": "padding_mask_formula", "locked": true, "schema_version": 3, "solution": false}
# **公式 / Formula.** 对 $b = 0,\dots,B-1$，$t = 0,\dots,T-1$：
#
# $$m_{b,t} = [\, t < \ell_b \,] \qquad (\text{True} = \text{真实词元 / real token})$$
#
# 其中 $T$ = `max_len`（若给出），否则 $T = \max_b \ell_b$。长度为负或大于 `max_len` 时引发 `ValueError`。输出是 `(B, T)` 的 `bool` 张量，放在 `lengths` 所在的设备上。
#
# where $T$ = `max_len` if given, else $T = \max_b \ell_b$. A negative length or a length above `max_len` raises
# `ValueError`. The output is a `(B, T)` `bool` tensor on `lengths.device`.
#
# *提示 / Hint:* `torch.arange(T)` 的形状是 `(T,)`，`lengths` 是 `(B,)`；用广播比较 `(1, T)` 和 `(B, 1)`。
#
# `torch.arange(T)` is `(T,)` and `lengths` is `(B,)`; compare `(1, T)` with `(B, 1)` by broadcasting.

# %% padding_mask nbgrader={"grade": false, "grade_id": "padding_mask", "locked": false, "schema_version": 3, "solution": true}
def padding_mask(lengths, max_len=None):
    """mask[b, t] = (t < lengths[b]); True marks a real token."""
    # lengths: (B,) int  ->  mask: (B, T) bool,  T = max_len if given, else lengths.max()
    # ValueError if a length is < 0 or > max_len
    # 你的代码 / your code
    raise NotImplementedError("padding_mask")


# %% padding_mask_by_hand [markdown] nbgrader={"grade": false, "grade_id": "padding_mask_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand
#
# `lengths = [3, 1]`：$B = 2$，没有 `max_len`，所以 $T = \max(3, 1) = 3$。先在纸上写出 $2 \times 3$ 的掩码，再运行下面的单元格。再想一想：`max_len=4` 时多出的一列是什么？
#
# `lengths = [3, 1]`: $B = 2$, no `max_len`, so $T = \max(3, 1) = 3$. Write the $2 \times 3$ mask on paper, then run
# the cell below. What does the extra column look like with `max_len=4`?
#
# <details><summary>答案 / Answer</summary>
#
# ```
# lengths=[3, 1]            lengths=[3, 1], max_len=4
# [[True,  True,  True ],   [[True,  True,  True,  False],
#  [True,  False, False]]    [True,  False, False, False]]
# ```
# </details>

# %% padding_mask_demo
try:
    print(padding_mask(torch.tensor([3, 1])))  # (B, T) = (2, 3)
    print(padding_mask(torch.tensor([3, 1]), max_len=4))  # (B, T) = (2, 4)
except NotImplementedError:
    print("请先实现 padding_mask，再运行这个单元格。/ Implement padding_mask first, then run this cell again.")

# %% padding_mask_picture
# 图 / picture: 行 = 序列 b，列 = 位置 t；亮 = True（真实词元）/ rows = sequences b, columns = positions t; bright = True (real)
try:
    lengths = torch.tensor([5, 3, 1, 4])
    m = padding_mask(lengths, max_len=6)  # (B, T) = (4, 6)
    fig, ax = plt.subplots(figsize=(4, 2.8), layout="constrained")
    ax.imshow(m, cmap="Blues", vmin=0, vmax=1)
    ax.set(xlabel="position t", ylabel="sequence b", title=f"padding_mask, lengths={lengths.tolist()}")
    ax.set_xticks(range(6))
    ax.set_yticks(range(4))
    plt.show()
except NotImplementedError:
    print("请先实现 padding_mask，再运行这个单元格。/ Implement padding_mask first, then run this cell again.")

# %% padding_mask_checks [markdown] nbgrader={"grade": false, "grade_id": "padding_mask_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `padding_mask`

# %% test_padding_mask nbgrader={"grade": true, "grade_id": "test_padding_mask", "locked": true, "points": 8, "schema_version": 3, "solution": false}
m = padding_mask(torch.tensor([3, 1]))
assert isinstance(m, torch.Tensor) and m.dtype == torch.bool, "应返回 bool 张量 / should return a bool tensor"
assert m.shape == (2, 3), f"形状应为 (B, T) = (2, 3)，得到 {tuple(m.shape)} / shape should be (B, T) = (2, 3), got {tuple(m.shape)}"
assert m.tolist() == [[True, True, True], [True, False, False]], f"lengths=[3, 1] 的掩码不对 / wrong mask for lengths=[3, 1]:\n{m}"
m = padding_mask(torch.tensor([3, 1]), max_len=4)
assert m.tolist() == [[True, True, True, False], [True, False, False, False]], \
    f"给了 max_len=4 时 T 应为 4 / with max_len=4, T should be 4:\n{m}"
assert padding_mask(torch.tensor([0, 2])).tolist() == [[False, False], [True, True]], \
    "长度为 0 的序列全是填充 / a sequence of length 0 is all padding"
for lengths, max_len in [([-1, 2], None), ([5, 1], 4)]:
    try:
        padding_mask(torch.tensor(lengths), max_len=max_len)
    except ValueError:
        pass
    else:
        raise AssertionError(f"lengths={lengths}, max_len={max_len} 应引发 ValueError / should raise ValueError")
print("padding_mask：自测通过 / visible checks passed")


# %% causal_mask_why [markdown] nbgrader={"grade": false, "grade_id": "causal_mask_why", "locked": true, "schema_version": 3, "solution": false}
# ## 2. 因果掩码 / Causal mask `causal_mask`
#
# **为什么 / Why.** 在自注意力里，位置 $i$ 的查询（query）可以和任何位置 $j$ 的键（key）做点积。因果模型要求位置 $i$
# 的输出只依赖 $\mathbf{x}_0, \dots, \mathbf{x}_i$，所以必须挡住所有 $j > i$ 的键。掩码只依赖 $T$，与内容无关。
#
# In self-attention the query at position $i$ can take a dot product with the key of any position $j$. A causal
# model needs the output at position $i$ to depend on $\mathbf{x}_0, \dots, \mathbf{x}_i$ only, so every key $j > i$
# must be blocked. The mask depends on $T$ only, not on the content.

# %% causal_mask_formula [markdown] nbgrader={"grade": false, "grade_id": "causal_mask_formula", "locked": true, "schema_version": 3, "solution": false}
# **公式 / Formula.** 行 $i$ = 查询，列 $j$ = 键 / row $i$ = query, column $j$ = key:
#
# $$m_{ij} = [\, j \le i \,], \qquad i, j = 0, \dots, T-1$$
#
# 即包含对角线的下三角矩阵：每个位置可以看自己和过去，不能看未来。输出 `(T, T)` 的 `bool` 张量，建在 `device` 上。
#
# A lower-triangular matrix including the diagonal: each position sees itself and the past, never the future. The
# output is a `(T, T)` `bool` tensor built on `device`.

# %% causal_mask nbgrader={"grade": false, "grade_id": "causal_mask", "locked": false, "schema_version": 3, "solution": true}
def causal_mask(T, device=None):
    """mask[i, j] = (j <= i): query i sees keys 0..i, never the future."""
    # T: int  ->  mask: (T, T) bool on `device`
    # 你的代码 / your code
    raise NotImplementedError("causal_mask")


# %% causal_mask_by_hand [markdown] nbgrader={"grade": false, "grade_id": "causal_mask_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand
#
# $T = 3$：第 0 行只能看键 0，第 1 行看键 0、1，第 2 行看全部。先写出来，再运行。
#
# $T = 3$: row 0 sees key 0 only, row 1 keys 0 and 1, row 2 all of them. Write it down, then run the cell.
#
# <details><summary>答案 / Answer</summary>
#
# ```
# [[True,  False, False],
#  [True,  True,  False],
#  [True,  True,  True ]]
# ```
# </details>

# %% causal_mask_demo
try:
    print(causal_mask(3))  # (T, T) = (3, 3)
except NotImplementedError:
    print("请先实现 causal_mask，再运行这个单元格。/ Implement causal_mask first, then run this cell again.")

# %% causal_mask_picture
# 图 / picture: 行 = 查询 i，列 = 键 j；亮 = 可以关注 / rows = queries i, columns = keys j; bright = may attend
try:
    m = causal_mask(6)  # (T, T) = (6, 6)
    fig, ax = plt.subplots(figsize=(3, 3), layout="constrained")
    ax.imshow(m, cmap="Blues", vmin=0, vmax=1)
    ax.set(xlabel="key j", ylabel="query i", title="causal_mask(6)")
    plt.show()
except NotImplementedError:
    print("请先实现 causal_mask，再运行这个单元格。/ Implement causal_mask first, then run this cell again.")

# %% causal_mask_checks [markdown] nbgrader={"grade": false, "grade_id": "causal_mask_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `causal_mask`

# %% test_causal_mask nbgrader={"grade": true, "grade_id": "test_causal_mask", "locked": true, "points": 5, "schema_version": 3, "solution": false}
m = causal_mask(3)
assert isinstance(m, torch.Tensor) and m.dtype == torch.bool, "应返回 bool 张量 / should return a bool tensor"
assert m.shape == (3, 3), f"形状应为 (T, T) = (3, 3)，得到 {tuple(m.shape)} / shape should be (T, T) = (3, 3), got {tuple(m.shape)}"
assert m.tolist() == [[True, False, False], [True, True, False], [True, True, True]], \
    f"T=3 的掩码不对 / wrong mask for T=3:\n{m}"
assert causal_mask(1).tolist() == [[True]], "T=1：唯一的位置可以看自己 / T=1: the only position sees itself"
assert causal_mask(2, device="cpu").device.type == "cpu", "应建在 device 上 / should be built on `device`"
m = causal_mask(5)
assert not m.triu(1).any(), "对角线以上（未来）必须全是 False / above the diagonal (the future) must be all False"
assert m[torch.ones(5, 5, dtype=torch.bool).tril()].all(), \
    "对角线及以下（过去和现在）必须全是 True / on and below the diagonal (past and present) must be all True"
print("causal_mask：自测通过 / visible checks passed")


# %% attention_mask_why [markdown] nbgrader={"grade": false, "grade_id": "attention_mask_why", "locked": true, "schema_version": 3, "solution": false}
# ## 3. 自注意力掩码 / Self-attention mask `attention_mask`
#
# **为什么 / Why.** 自注意力的分数矩阵是每个序列、每个头一张 $T \times T$ 的表（查询 $i$ × 键 $j$）。查询 $i$ 可以关注键 $j$，当且仅当键 $j$ 是真实词元，并且（因果模型中）$j \le i$。填充只挡**键**这一轴：填充位置上的查询行照样计算，但它的输出之后不会被使用（损失会把它屏蔽掉，见练习 5），而把整行都挡住会产生没有任何可关注键的行。
#
# Self-attention scores form a $T \times T$ table (query $i$ × key $j$) per sequence and per head. Query $i$ may
# attend to key $j$ iff key $j$ is a real token and, for a causal model, $j \le i$. Padding blocks the **key** axis
# only: the query rows at padded positions are still computed, but their outputs are never used (the loss masks them
# out, see exercise 5), while blocking whole rows would create rows with no key to attend to.

# %% attention_mask_formula [markdown] nbgrader={"grade": false, "grade_id": "attention_mask_formula", "locked": true, "schema_version": 3, "solution": false}
# **公式 / Formula.**
#
# $$M_{b,i,j} = m_{b,j} \;\wedge\; [\, j \le i \,]$$
#
# 第二项只在 `causal=True` 时出现 / the second factor only when `causal=True`.
#
# 其中 $m_{b,j} = [\, j < \ell_b \,]$ 是填充掩码。输出形状 `(B, 1, T, T)`：大小为 1 的第二维会在 $H$ 个头上广播成 `(B, H, T, T)`。$T$ 的规则与 `padding_mask` 相同。可以在这里调用你上面写好的 `padding_mask` 和 `causal_mask`。
#
# where $m_{b,j} = [\, j < \ell_b \,]$ is the padding mask. The output is `(B, 1, T, T)`: the axis of size 1
# broadcasts over the $H$ heads to `(B, H, T, T)`. $T$ follows the rule of `padding_mask`. You may call your
# `padding_mask` and `causal_mask` from above.

# %% attention_mask nbgrader={"grade": false, "grade_id": "attention_mask", "locked": false, "schema_version": 3, "solution": true}
def attention_mask(lengths, max_len=None, causal=False):
    """(B, 1, T, T): key j is a real token and, if causal, j <= i; broadcasts over heads."""
    # lengths: (B,) int  ->  mask: (B, 1, T, T) bool,  mask[b, 0, i, j] = query i may attend to key j
    # 你的代码 / your code
    raise NotImplementedError("attention_mask")


# %% attention_mask_by_hand [markdown] nbgrader={"grade": false, "grade_id": "attention_mask_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand
#
# `lengths = [3, 1]`，$T = 3$。写出 `mask[b, 0]`（$3 \times 3$）在 `causal=False` 和 `causal=True` 时的样子。提示：序列 1 只有键 0 是真实的，所以它的**每一行**都一样。
#
# `lengths = [3, 1]`, $T = 3$. Write `mask[b, 0]` ($3 \times 3$) for `causal=False` and `causal=True`.
# Hint: in sequence 1 only key 0 is real, so **every row** of it is the same.
#
# <details><summary>答案 / Answer</summary>
#
# ```
# causal=False   b=0: [[T, T, T],     b=1: [[T, F, F],
#                      [T, T, T],           [T, F, F],
#                      [T, T, T]]           [T, F, F]]
# causal=True    b=0: [[T, F, F],     b=1: [[T, F, F],
#                      [T, T, F],           [T, F, F],
#                      [T, T, T]]           [T, F, F]]
# ```
# </details>

# %% attention_mask_demo
try:
    m = attention_mask(torch.tensor([3, 1]), causal=True)
    print(m.shape)  # (B, 1, T, T) = (2, 1, 3, 3)
    print(m[:, 0].int())  # (B, T, T), 1 = may attend
except NotImplementedError:
    print("请先实现 attention_mask，再运行这个单元格。/ Implement attention_mask first, then run this cell again.")

# %% attention_mask_picture
# 图 / picture: 每个序列一张 T×T 的表 / one T×T table per sequence
try:
    lengths = torch.tensor([6, 3])
    fig, axes = plt.subplots(2, 2, figsize=(6, 6), layout="constrained")
    for row, causal in enumerate([False, True]):
        m = attention_mask(lengths, causal=causal)  # (B, 1, T, T) = (2, 1, 6, 6)
        for b in range(2):
            axes[row, b].imshow(m[b, 0], cmap="Blues", vmin=0, vmax=1)
            axes[row, b].set(title=f"b={b}, length={lengths[b].item()}, causal={causal}",
                             xlabel="key j", ylabel="query i")
    plt.show()
except NotImplementedError:
    print("请先实现 attention_mask，再运行这个单元格。/ Implement attention_mask first, then run this cell again.")

# %% attention_mask_checks [markdown] nbgrader={"grade": false, "grade_id": "attention_mask_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `attention_mask`

# %% test_attention_mask nbgrader={"grade": true, "grade_id": "test_attention_mask", "locked": true, "points": 7, "schema_version": 3, "solution": false}
m = attention_mask(torch.tensor([3, 1]))
assert isinstance(m, torch.Tensor) and m.dtype == torch.bool, "应返回 bool 张量 / should return a bool tensor"
assert m.shape == (2, 1, 3, 3), f"形状应为 (B, 1, T, T) = (2, 1, 3, 3)，得到 {tuple(m.shape)} / shape should be (B, 1, T, T) = (2, 1, 3, 3), got {tuple(m.shape)}"
assert m[0, 0].all(), "序列 0 没有填充：全部为 True / sequence 0 has no padding: all True"
assert m[1, 0].tolist() == [[True, False, False]] * 3, \
    f"序列 1 只有键 0 是真实词元（每一行都一样）/ in sequence 1 only key 0 is real (every row alike):\n{m[1, 0]}"
m = attention_mask(torch.tensor([3, 1]), causal=True)
assert m[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, True]], \
    f"causal=True：序列 0 应是下三角 / causal=True: sequence 0 should be lower triangular:\n{m[0, 0]}"
assert m[1, 0].tolist() == [[True, False, False]] * 3, \
    f"causal=True：序列 1 只能看键 0 / causal=True: sequence 1 sees key 0 only:\n{m[1, 0]}"
m = attention_mask(torch.tensor([2, 4]), max_len=5, causal=True)
assert m.shape == (2, 1, 5, 5), f"max_len=5 时形状应为 (2, 1, 5, 5) / with max_len=5 the shape should be (2, 1, 5, 5), got {tuple(m.shape)}"
H = 4
assert (m & torch.ones(2, H, 5, 5, dtype=torch.bool)).shape == (2, H, 5, 5), "应能在头的维度上广播 / must broadcast over heads"
print("attention_mask：自测通过 / visible checks passed")

# %% masks_summary [markdown] nbgrader={"grade": false, "grade_id": "masks_summary", "locked": true, "schema_version": 3, "solution": false}
# ## 小结 / Summary
#
# - `True` = 允许：真实词元 / 可以关注。`True` = allowed: a real token / may attend.
# - 填充只挡键这一轴；因果掩码挡住 $j > i$。Padding blocks the key axis; the causal mask blocks $j > i$.
# - 形状 `(B, 1, T, T)` 在头上广播。The `(B, 1, T, T)` shape broadcasts over heads.
#
# 下一步：练习 3 用这些掩码把注意力权重设为 0，练习 5 用填充掩码计算损失。
#
# Next: exercise 3 uses these masks to set attention weights to 0, exercise 5 uses the padding mask in the loss.
