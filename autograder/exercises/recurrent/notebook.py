# %% recurrent_intro [markdown] nbgrader={"grade": false, "grade_id": "recurrent_intro", "locked": true, "schema_version": 3, "solution": false}
# # 练习 4：循环网络 / Exercise 4: Recurrent networks
#
# **目标 / Goal.** 实现一个 LSTM 单元 `lstm_cell`、一个 GRU 单元 `gru_cell`（权重布局与 `torch.nn.LSTMCell` /
# `torch.nn.GRUCell` 完全相同，所以可以直接传入它们的参数），以及在一批补齐的序列上运行 LSTM 的 `lstm_sequence`。
#
# Implement an LSTM cell, `lstm_cell`, and a GRU cell, `gru_cell` (weights laid out exactly as in `torch.nn.LSTMCell`
# / `torch.nn.GRUCell`, so their parameters can be passed in), and `lstm_sequence`, which runs the LSTM over a batch
# of padded sequences.
#
# **信息边界 / The information boundary.** 循环天然是因果的：$\mathbf{h}_t$ 只依赖 $\mathbf{x}_0, \dots, \mathbf{x}_t$。填充是需要我们处理的：长度为 $\ell_b$ 的序列在第 $\ell_b - 1$ 步结束。之后的填充步既**不能更新状态**，也**不能产生输出**
# （输出恰好为 0）；最终状态是最后一个有效步之后的状态，与 `torch.nn.LSTM` 处理 `pack_padded_sequence` 的结果一致。否则同一个句子补齐得越长，它的最终表示就越不一样。
#
# Recurrence is causal by construction: $\mathbf{h}_t$ depends on $\mathbf{x}_0, \dots, \mathbf{x}_t$ only. Padding is
# ours to handle: a sequence of length $\ell_b$ ends at step $\ell_b - 1$. The padded steps after it must **not update
# the state** and must **not produce outputs** (outputs exactly 0); the final state is the state after the last valid
# step, as `torch.nn.LSTM` returns for a `pack_padded_sequence` input. Otherwise the more padding a sentence gets,
# the more its final representation changes.
#
# 堆叠多层时，第 $l$ 层的输入是第 $l-1$ 层的隐藏状态：$\mathbf{x}^{[l]}_t = \mathbf{h}^{[l-1]}_t$。这里只写一层，省略上标 $[l]$。
#
# When layers are stacked, layer $l$'s input is layer $l-1$'s hidden state: $\mathbf{x}^{[l]}_t = \mathbf{h}^{[l-1]}_t$.
# Here we write one layer and drop the superscript $[l]$.

# %% recurrent_notation [markdown] nbgrader={"grade": false, "grade_id": "recurrent_notation", "locked": true, "schema_version": 3, "solution": false}
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

# %% recurrent_how_to [markdown] nbgrader={"grade": false, "grade_id": "recurrent_how_to", "locked": true, "schema_version": 3, "solution": false}
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

# %% recurrent_setup nbgrader={"grade": false, "grade_id": "recurrent_setup", "locked": true, "schema_version": 3, "solution": false}
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)  # 可复现 / reproducible


# %% lstm_cell_formula [markdown] nbgrader={"grade": false, "grade_id": "lstm_cell_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 1. LSTM 单元 / LSTM cell `lstm_cell`
#
# **公式 / Formula.** $\sigma$ 是 sigmoid，$\odot$ 是逐元素乘法 / $\sigma$ is the sigmoid, $\odot$ the element-wise product:
#
# $$\begin{aligned}
# \mathbf{i}_t &= \sigma(\mathbf{W}_{ii}\mathbf{x}_t + \mathbf{b}_{ii} + \mathbf{W}_{hi}\mathbf{h}_{t-1} + \mathbf{b}_{hi}) &\text{输入门 / input gate}\\
# \mathbf{f}_t &= \sigma(\mathbf{W}_{if}\mathbf{x}_t + \mathbf{b}_{if} + \mathbf{W}_{hf}\mathbf{h}_{t-1} + \mathbf{b}_{hf}) &\text{遗忘门 / forget gate}\\
# \mathbf{g}_t &= \tanh(\mathbf{W}_{ig}\mathbf{x}_t + \mathbf{b}_{ig} + \mathbf{W}_{hg}\mathbf{h}_{t-1} + \mathbf{b}_{hg}) &\text{候选 / candidate}\\
# \mathbf{o}_t &= \sigma(\mathbf{W}_{io}\mathbf{x}_t + \mathbf{b}_{io} + \mathbf{W}_{ho}\mathbf{h}_{t-1} + \mathbf{b}_{ho}) &\text{输出门 / output gate}\\
# \mathbf{c}_t &= \mathbf{f}_t \odot \mathbf{c}_{t-1} + \mathbf{i}_t \odot \mathbf{g}_t, \qquad
# \mathbf{h}_t = \mathbf{o}_t \odot \tanh(\mathbf{c}_t)
# \end{aligned}$$
#
# **权重布局 / Weight layout** (as `torch.nn.LSTMCell`): `W_ih` $= \begin{pmatrix}\mathbf{W}_{ii}\\ \mathbf{W}_{if}\\ \mathbf{W}_{ig}\\ \mathbf{W}_{io}\end{pmatrix}$
# 是 `(4 d_h, d_in)`，`W_hh` 是 `(4 d_h, d_h)`，`b_ih`、`b_hh` 是 `(4 d_h,)`；门的顺序 **i, f, g, o**。按行约定，四个门一次算出：`x @ W_ih.T + b_ih + h @ W_hh.T + b_hh` 是 `(B, 4 d_h)`，再切成四块。
#
# is `(4 d_h, d_in)`, `W_hh` is `(4 d_h, d_h)`, `b_ih`, `b_hh` are `(4 d_h,)`; gate order **i, f, g, o**. In the row
# convention all four gates come at once: `x @ W_ih.T + b_ih + h @ W_hh.T + b_hh` is `(B, 4 d_h)`, then cut it into
# four blocks.

# %% lstm_cell nbgrader={"grade": false, "grade_id": "lstm_cell", "locked": false, "schema_version": 3, "solution": true}
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    """One LSTM step, gates i, f, g, o as torch.nn.LSTMCell: (h, c) -> (h_new, c_new)."""
    # x (B, d_in); state = (h, c), each (B, d_h); W_ih (4 d_h, d_in), W_hh (4 d_h, d_h), b_ih, b_hh (4 d_h,)
    # -> h_new (B, d_h), c_new (B, d_h)
    # 你的代码 / your code
    raise NotImplementedError("lstm_cell")


# %% lstm_cell_by_hand [markdown] nbgrader={"grade": false, "grade_id": "lstm_cell_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand: $d_{\text{in}} = d_h = 1$
#
# $x = 1$，$h = 0$，$c = 2$；$\mathbf{W}_{ih} = (0, 0, 1, 0)^\top$（只有候选 $g$ 看到输入），$\mathbf{W}_{hh} = \mathbf{0}$，偏置为 0。于是 $i = f = o = \sigma(0) = 0.5$，$g = \tanh 1 \approx 0.7616$；$c' = 0.5 \cdot 2 + 0.5 \cdot 0.7616 \approx 1.3808$，$h' = 0.5 \cdot \tanh(1.3808) \approx 0.4406$。
#
# $x = 1$, $h = 0$, $c = 2$; $\mathbf{W}_{ih} = (0, 0, 1, 0)^\top$ (only the candidate $g$ sees the input),
# $\mathbf{W}_{hh} = \mathbf{0}$, zero biases. Then $i = f = o = \sigma(0) = 0.5$, $g = \tanh 1 \approx 0.7616$;
# $c' = 0.5 \cdot 2 + 0.5 \cdot 0.7616 \approx 1.3808$, $h' = 0.5 \cdot \tanh(1.3808) \approx 0.4406$.

# %% lstm_cell_demo
try:
    x, h, c = torch.tensor([[1.0]]), torch.tensor([[0.0]]), torch.tensor([[2.0]])  # (B, d) = (1, 1)
    W_ih = torch.tensor([[0.0], [0.0], [1.0], [0.0]])  # (4 d_h, d_in): rows i, f, g, o
    h_new, c_new = lstm_cell(x, (h, c), W_ih, torch.zeros(4, 1), torch.zeros(4), torch.zeros(4))
    print(f"c' = {c_new.item():.4f} (1.3808),  h' = {h_new.item():.4f} (0.4406)")
except NotImplementedError:
    print("请先实现 lstm_cell，再运行这个单元格。/ Implement lstm_cell first, then run this cell again.")

# %% lstm_cell_checks [markdown] nbgrader={"grade": false, "grade_id": "lstm_cell_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `lstm_cell`

# %% test_lstm_cell nbgrader={"grade": true, "grade_id": "test_lstm_cell", "locked": true, "points": 6, "schema_version": 3, "solution": false}
x, h, c = torch.tensor([[1.0]]), torch.tensor([[0.0]]), torch.tensor([[2.0]])  # (B, d) = (1, 1)
zeros4 = torch.zeros(4)
h1, c1 = lstm_cell(x, (h, c), torch.tensor([[0.0], [0.0], [1.0], [0.0]]), torch.zeros(4, 1), zeros4, zeros4)
assert h1.shape == (1, 1) and c1.shape == (1, 1), f"h_new, c_new 应为 (B, d_h) = (1, 1) / should be (B, d_h) = (1, 1); got {tuple(h1.shape)}, {tuple(c1.shape)}"
assert abs(c1.item() - 1.380797) < 1e-4, f"手算例子：c' = 0.5·2 + 0.5·tanh(1) ≈ 1.3808 / hand example: c' ≈ 1.3808, got {c1.item():.4f}"
assert abs(h1.item() - 0.440565) < 1e-4, f"手算例子：h' = 0.5·tanh(c') ≈ 0.4406 / hand example: h' ≈ 0.4406, got {h1.item():.4f}"
# pre-activations i=1, f=2, g=3, o=4: c' = σ(2)·2 + σ(1)·tanh(3), h' = σ(4)·tanh(c')
h1, c1 = lstm_cell(x, (h, c), torch.tensor([[1.0], [2.0], [3.0], [4.0]]), torch.zeros(4, 1), zeros4, zeros4)
assert abs(c1.item() - 2.489037) < 1e-4 and abs(h1.item() - 0.968579) < 1e-4, \
    f"门的顺序应为 i, f, g, o / the gate order should be i, f, g, o (c' = {c1.item():.4f}, expected 2.4890; h' = {h1.item():.4f}, expected 0.9686)"

torch.manual_seed(0)
cell = nn.LSTMCell(3, 5)
x, h, c = torch.randn(2, 3), torch.randn(2, 5), torch.randn(2, 5)
with torch.no_grad():
    h1, c1 = lstm_cell(x, (h, c), cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
    h_ref, c_ref = cell(x, (h, c))
assert h1.shape == (2, 5) and c1.shape == (2, 5), "形状应为 (B, d_h) = (2, 5) / shapes should be (B, d_h) = (2, 5)"
assert torch.allclose(h1, h_ref, atol=1e-5) and torch.allclose(c1, c_ref, atol=1e-5), \
    "与 torch.nn.LSTMCell 的结果不同 / differs from torch.nn.LSTMCell"
h1, c1 = lstm_cell(x.double(), (h.double(), c.double()), *(p.detach().double() for p in cell.parameters()))
assert h1.dtype == torch.float64 and c1.dtype == torch.float64, f"应保持输入的 dtype（float64）/ should keep the inputs' dtype (float64), got {h1.dtype}"
print("lstm_cell：自测通过 / visible checks passed")


# %% gru_cell_formula [markdown] nbgrader={"grade": false, "grade_id": "gru_cell_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 2. GRU 单元 / GRU cell `gru_cell`
#
# **公式 / Formula** (as `torch.nn.GRUCell`):
#
# $$\begin{aligned}
# \mathbf{r}_t &= \sigma(\mathbf{W}_{ir}\mathbf{x}_t + \mathbf{b}_{ir} + \mathbf{W}_{hr}\mathbf{h}_{t-1} + \mathbf{b}_{hr}) &\text{重置门 / reset gate}\\
# \mathbf{z}_t &= \sigma(\mathbf{W}_{iz}\mathbf{x}_t + \mathbf{b}_{iz} + \mathbf{W}_{hz}\mathbf{h}_{t-1} + \mathbf{b}_{hz}) &\text{更新门 / update gate}\\
# \mathbf{n}_t &= \tanh\big(\mathbf{W}_{in}\mathbf{x}_t + \mathbf{b}_{in} + \mathbf{r}_t \odot (\mathbf{W}_{hn}\mathbf{h}_{t-1} + \mathbf{b}_{hn})\big) &\text{候选 / candidate}\\
# \mathbf{h}_t &= (1 - \mathbf{z}_t) \odot \mathbf{n}_t + \mathbf{z}_t \odot \mathbf{h}_{t-1}
# \end{aligned}$$
#
# `W_ih` 是 `(3 d_h, d_in)`，`W_hh` 是 `(3 d_h, d_h)`，偏置 `(3 d_h,)`，门的顺序 **r, z, n**。注意 $\mathbf{r}_t$ 乘的是
# $\mathbf{W}_{hn}\mathbf{h}_{t-1} + \mathbf{b}_{hn}$（包括偏置 $\mathbf{b}_{hn}$）——这是 PyTorch 的写法，与 Cho et al. (2014) 中先算
# $\mathbf{r}_t \odot \mathbf{h}_{t-1}$ 再乘矩阵的写法不同。所以隐藏部分要和输入部分分开算，不能像 LSTM 那样先相加。
#
# `W_ih` is `(3 d_h, d_in)`, `W_hh` is `(3 d_h, d_h)`, biases `(3 d_h,)`, gate order **r, z, n**. Note that
# $\mathbf{r}_t$ multiplies $\mathbf{W}_{hn}\mathbf{h}_{t-1} + \mathbf{b}_{hn}$ (bias $\mathbf{b}_{hn}$ included): this
# is PyTorch's variant, unlike Cho et al. (2014), who apply $\mathbf{r}_t \odot \mathbf{h}_{t-1}$ before the matrix.
# So keep the hidden part apart from the input part instead of adding them first as in the LSTM.

# %% gru_cell nbgrader={"grade": false, "grade_id": "gru_cell", "locked": false, "schema_version": 3, "solution": true}
def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    """One GRU step, gates r, z, n as torch.nn.GRUCell: h -> h_new."""
    # x (B, d_in), h (B, d_h); W_ih (3 d_h, d_in), W_hh (3 d_h, d_h), b_ih, b_hh (3 d_h,)  ->  h_new (B, d_h)
    # 你的代码 / your code
    raise NotImplementedError("gru_cell")


# %% gru_cell_by_hand [markdown] nbgrader={"grade": false, "grade_id": "gru_cell_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand: $d_{\text{in}} = d_h = 1$
#
# $x = 1$，$h = 1$；$\mathbf{W}_{ih} = (0, 0, 1)^\top$，$\mathbf{W}_{hh} = (0, 0, 2)^\top$，偏置为 0。$r = z = \sigma(0) = 0.5$，$n = \tanh(1 + 0.5 \cdot 2) = \tanh 2 \approx 0.9640$，$h' = 0.5 \cdot 0.9640 + 0.5 \cdot 1 \approx 0.9820$。
#
# $x = 1$, $h = 1$; $\mathbf{W}_{ih} = (0, 0, 1)^\top$, $\mathbf{W}_{hh} = (0, 0, 2)^\top$, zero biases.
# $r = z = \sigma(0) = 0.5$, $n = \tanh(1 + 0.5 \cdot 2) = \tanh 2 \approx 0.9640$,
# $h' = 0.5 \cdot 0.9640 + 0.5 \cdot 1 \approx 0.9820$.

# %% gru_cell_demo
try:
    x, h = torch.tensor([[1.0]]), torch.tensor([[1.0]])  # (B, d) = (1, 1)
    W_ih, W_hh = torch.tensor([[0.0], [0.0], [1.0]]), torch.tensor([[0.0], [0.0], [2.0]])  # (3 d_h, d): rows r, z, n
    h_new = gru_cell(x, h, W_ih, W_hh, torch.zeros(3), torch.zeros(3))
    print(f"h' = {h_new.item():.4f} (0.9820)")
except NotImplementedError:
    print("请先实现 gru_cell，再运行这个单元格。/ Implement gru_cell first, then run this cell again.")

# %% gru_cell_checks [markdown] nbgrader={"grade": false, "grade_id": "gru_cell_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `gru_cell`

# %% test_gru_cell nbgrader={"grade": true, "grade_id": "test_gru_cell", "locked": true, "points": 6, "schema_version": 3, "solution": false}
x, h = torch.tensor([[1.0]]), torch.tensor([[1.0]])  # (B, d) = (1, 1)
W_ih, W_hh = torch.tensor([[0.0], [0.0], [1.0]]), torch.tensor([[0.0], [0.0], [2.0]])
h1 = gru_cell(x, h, W_ih, W_hh, torch.zeros(3), torch.zeros(3))
assert h1.shape == (1, 1), f"h_new 应为 (B, d_h) = (1, 1) / h_new should be (B, d_h) = (1, 1), got {tuple(h1.shape)}"
assert abs(h1.item() - 0.982014) < 1e-4, \
    f"手算例子：n = tanh(1 + r·2) = tanh 2，h' ≈ 0.9820 / hand example: n = tanh(1 + r·2), h' ≈ 0.9820; got {h1.item():.4f}"
# update gate z = σ(2): h' = (1 - z)·n + z·h
h1 = gru_cell(x, h, W_ih, W_hh, torch.tensor([0.0, 2.0, 0.0]), torch.zeros(3))
assert abs(h1.item() - 0.995712) < 1e-4, \
    f"h' = (1 - z)·n + z·h，z = σ(2)，门的顺序 r, z, n / h' = (1 - z)·n + z·h with z = σ(2), gate order r, z, n; got {h1.item():.4f}, expected 0.9957"

torch.manual_seed(0)
cell = nn.GRUCell(3, 5)
x, h = torch.randn(2, 3), torch.randn(2, 5)
with torch.no_grad():
    h1 = gru_cell(x, h, cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
    h_ref = cell(x, h)
assert h1.shape == (2, 5), "形状应为 (B, d_h) = (2, 5) / shape should be (B, d_h) = (2, 5)"
assert torch.allclose(h1, h_ref, atol=1e-5), "与 torch.nn.GRUCell 的结果不同（r 要乘 W_hn h + b_hn）/ differs from torch.nn.GRUCell (r multiplies W_hn h + b_hn)"
print("gru_cell：自测通过 / visible checks passed")


# %% lstm_sequence_formula [markdown] nbgrader={"grade": false, "grade_id": "lstm_sequence_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 3. 补齐序列上的 LSTM / LSTM over padded sequences `lstm_sequence`
#
# **公式 / Formula.** 设 $m_{b,t} = [\, t < \ell_b \,]$（$\ell_b \ge 1$）。初始状态 $(\mathbf{h}_{b,-1}, \mathbf{c}_{b,-1})$ 是 `state`，没有给出时为 0。对 $t = 0, \dots, T-1$：
#
# Let $m_{b,t} = [\, t < \ell_b \,]$ ($\ell_b \ge 1$). The initial state $(\mathbf{h}_{b,-1}, \mathbf{c}_{b,-1})$ is
# `state`, zeros if not given. For $t = 0, \dots, T-1$:
#
# $$\begin{aligned}
# (\tilde{\mathbf{h}}_{b,t}, \tilde{\mathbf{c}}_{b,t}) &= \mathrm{LSTM}\big(\mathbf{x}_{b,t}, (\mathbf{h}_{b,t-1}, \mathbf{c}_{b,t-1})\big)\\
# \mathbf{h}_{b,t} &= m_{b,t}\, \tilde{\mathbf{h}}_{b,t} + (1 - m_{b,t})\, \mathbf{h}_{b,t-1}, \qquad
# \mathbf{c}_{b,t} = m_{b,t}\, \tilde{\mathbf{c}}_{b,t} + (1 - m_{b,t})\, \mathbf{c}_{b,t-1}\\
# \text{outputs}_{b,t} &= m_{b,t}\, \tilde{\mathbf{h}}_{b,t} \qquad (\text{填充步恰好为 0 / exactly 0 at padded steps})
# \end{aligned}$$
#
# 返回 `outputs (B, T, d_h)` 和 `(h_n, c_n)`，各为 `(B, d_h)`：每个序列在**自己的**最后一个有效步 $\ell_b - 1$ 之后的状态。
#
# Returns `outputs (B, T, d_h)` and `(h_n, c_n)`, each `(B, d_h)`: the state after each sequence's **own** last valid
# step $\ell_b - 1$.
#
# *提示 / Hint:* 在时间上循环，每步对整批调用你的 `lstm_cell`，再用 `torch.where(valid, new, old)` 选择，`valid` 是
# `(B, 1)` 的 `bool`。用 `torch.where` 而不是乘法：$0 \cdot \infty$ 是 NaN。
#
# Loop over time, call your `lstm_cell` on the whole batch at each step, then choose with
# `torch.where(valid, new, old)`, `valid` a `(B, 1)` `bool`. Prefer `torch.where` to multiplication: $0 \cdot \infty$ is NaN.

# %% lstm_sequence nbgrader={"grade": false, "grade_id": "lstm_sequence", "locked": false, "schema_version": 3, "solution": true}
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    """Run lstm_cell over (B, T, d_in); padded steps keep the state and output exactly 0."""
    # X (B, T, d_in), lengths (B,) in [1, T], state = (h0, c0) each (B, d_h) or None (zeros)
    # -> outputs (B, T, d_h), (h_n, c_n) each (B, d_h)
    # 你的代码 / your code
    raise NotImplementedError("lstm_sequence")


# %% lstm_sequence_by_hand [markdown] nbgrader={"grade": false, "grade_id": "lstm_sequence_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand
#
# 用上面 LSTM 手算例子的权重（$d_{\text{in}} = d_h = 1$），`X = [[1, 1], [1, 5]]`（$B = 2, T = 2$），`lengths = [2, 1]`。序列 1 只有一步，所以 `outputs[1, 1]` 必须是 0，且 `h_n[1] = outputs[1, 0]`；第 0 步两个序列的输入相同，所以
# `outputs[0, 0] = outputs[1, 0]`。初始 $c = 0$ 时第 0 步：$c' = 0.5 \tanh 1 \approx 0.3808$，$h' = 0.5 \tanh(0.3808) \approx 0.1817$。
#
# Use the weights of the LSTM hand example ($d_{\text{in}} = d_h = 1$), `X = [[1, 1], [1, 5]]` ($B = 2, T = 2$),
# `lengths = [2, 1]`. Sequence 1 has one step only, so `outputs[1, 1]` must be 0 and `h_n[1] = outputs[1, 0]`; both
# sequences have the same input at step 0, so `outputs[0, 0] = outputs[1, 0]`. From $c = 0$, step 0 gives
# $c' = 0.5 \tanh 1 \approx 0.3808$, $h' = 0.5 \tanh(0.3808) \approx 0.1817$.

# %% lstm_sequence_demo
try:
    X = torch.tensor([[[1.0], [1.0]], [[1.0], [5.0]]])  # (B, T, d_in) = (2, 2, 1); X[1, 1] is padding
    W_ih = torch.tensor([[0.0], [0.0], [1.0], [0.0]])  # (4 d_h, d_in)
    outputs, (h_n, c_n) = lstm_sequence(X, torch.tensor([2, 1]), W_ih, torch.zeros(4, 1), torch.zeros(4), torch.zeros(4))
    print("outputs[..., 0] =", outputs[..., 0])  # (B, T)
    print("h_n[:, 0] =", h_n[:, 0], " c_n[:, 0] =", c_n[:, 0])  # (B,)
except NotImplementedError:
    print("请先实现 lstm_sequence，再运行这个单元格。/ Implement lstm_sequence first, then run this cell again.")

# %% lstm_sequence_picture
# 图 / picture: outputs[b, t, 0]，红线之后是填充（应为 0）/ outputs[b, t, 0]; right of the red line is padding (must be 0)
try:
    B, T, d_in, d_h = 4, 8, 3, 2
    cell = nn.LSTMCell(d_in, d_h)
    X = torch.randn(B, T, d_in)
    lengths = torch.tensor([8, 5, 2, 6])
    with torch.no_grad():
        outputs, _ = lstm_sequence(X, lengths, cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)  # (B, T, d_h)
    fig, ax = plt.subplots(figsize=(5, 2.8), layout="constrained")
    im = ax.imshow(outputs[..., 0], cmap="RdBu", vmin=-0.5, vmax=0.5)
    for b, n in enumerate(lengths.tolist()):
        ax.plot([n - 0.5, n - 0.5], [b - 0.5, b + 0.5], color="red", linewidth=2)
    ax.set(xlabel="step t", ylabel="sequence b", title=f"lstm_sequence, lengths={lengths.tolist()}")
    fig.colorbar(im, ax=ax)
    plt.show()
except NotImplementedError:
    print("请先实现 lstm_sequence，再运行这个单元格。/ Implement lstm_sequence first, then run this cell again.")

# %% lstm_sequence_checks [markdown] nbgrader={"grade": false, "grade_id": "lstm_sequence_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `lstm_sequence`

# %% test_lstm_sequence nbgrader={"grade": true, "grade_id": "test_lstm_sequence", "locked": true, "points": 8, "schema_version": 3, "solution": false}
torch.manual_seed(0)
cell = nn.LSTMCell(3, 4)
W = (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
X, lengths = torch.randn(2, 5, 3), torch.tensor([5, 2])  # (B, T, d_in), (B,)
with torch.no_grad():
    outputs, (h_n, c_n) = lstm_sequence(X, lengths, *W)
assert outputs.shape == (2, 5, 4), f"outputs 应为 (B, T, d_h) = (2, 5, 4) / outputs should be (2, 5, 4), got {tuple(outputs.shape)}"
assert h_n.shape == (2, 4) and c_n.shape == (2, 4), "h_n, c_n 应为 (B, d_h) = (2, 4) / h_n, c_n should be (B, d_h) = (2, 4)"
assert (outputs[1, 2:] == 0).all(), "填充步的输出必须恰好为 0 / outputs at padded steps must be exactly 0"
with torch.no_grad():
    for b in range(2):  # each sequence alone, its own valid steps only
        h = c = torch.zeros(1, 4)
        for t in range(int(lengths[b])):
            h, c = cell(X[b:b + 1, t], (h, c))
            assert torch.allclose(outputs[b, t], h[0], atol=1e-5), f"序列 {b} 第 {t} 步的输出不对 / wrong output of sequence {b} at step {t}"
        assert torch.allclose(h_n[b], h[0], atol=1e-5) and torch.allclose(c_n[b], c[0], atol=1e-5), \
            f"序列 {b} 的最终状态应是第 {int(lengths[b]) - 1} 步之后的状态 / sequence {b}'s final state should be the state after step {int(lengths[b]) - 1}"
    X2 = X.clone()
    X2[1, 2:] = 100.0  # change the padding only
    outputs2, (h_n2, c_n2) = lstm_sequence(X2, lengths, *W)
    assert torch.allclose(outputs2, outputs) and torch.allclose(h_n2, h_n) and torch.allclose(c_n2, c_n), \
        "改变填充不应改变任何结果 / changing the padding must not change anything"
    h0, c0 = torch.randn(2, 4), torch.randn(2, 4)
    outputs3, _ = lstm_sequence(X, lengths, *W, state=(h0, c0))
    assert torch.allclose(outputs3[:, 0], cell(X[:, 0], (h0, c0))[0], atol=1e-5), "应从给定的 state 开始 / should start from the given state"
    outputs64, (h_n64, _) = lstm_sequence(X.double(), lengths, *(p.double() for p in W))
    assert outputs64.dtype == torch.float64 and h_n64.dtype == torch.float64, \
        f"应保持 X 的 dtype（float64，初始状态也是）/ should keep X's dtype (float64, the initial state too), got {outputs64.dtype}"
X.requires_grad_(True)
outputs, (h_n, c_n) = lstm_sequence(X, lengths, *W)
h_n[0].sum().backward()
assert X.grad[0, 0].abs().sum() > 0, "梯度要能沿时间传回第 0 步（不要 detach 状态）/ the gradient must flow back to step 0 (do not detach the state)"
print("lstm_sequence：自测通过 / visible checks passed")

# %% recurrent_summary [markdown] nbgrader={"grade": false, "grade_id": "recurrent_summary", "locked": true, "schema_version": 3, "solution": false}
# ## 小结 / Summary
#
# - LSTM 门的顺序 i, f, g, o；GRU 门的顺序 r, z, n，$\mathbf{r}_t$ 乘 $\mathbf{W}_{hn}\mathbf{h}_{t-1} + \mathbf{b}_{hn}$。
#
#   LSTM gates i, f, g, o; GRU gates r, z, n, with $\mathbf{r}_t$ multiplying $\mathbf{W}_{hn}\mathbf{h}_{t-1} + \mathbf{b}_{hn}$.
# - 填充步不更新状态、输出恰好为 0；最终状态取每个序列自己的最后一个有效步。
#
#   Padded steps keep the state and output exactly 0; the final state is taken at each sequence's own last valid step.
