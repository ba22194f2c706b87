# %% tiny_lm_intro [markdown] nbgrader={"grade": false, "grade_id": "tiny_lm_intro", "locked": true, "schema_version": 3, "solution": false}
# # 练习 9：一个很小的因果语言模型 / Exercise 9: A tiny causal language model
#
# **目标 / Goal.** 用你自己在前面练习里写的零件——掩码、位置编码、注意力、带掩码的损失——拼出一个只有一层注意力的语言模型，写出它的 logits、下一个词元的损失和一个很短的训练循环，在一个玩具复制任务上看到损失下降。
#
# Assemble a one-layer language model from the parts you wrote in the earlier exercises — masks, positional encoding,
# attention, the masked loss — write its logits, the next-token loss and a short training loop, and watch the loss fall
# on a toy copy task.
#
# **信息边界 / The information boundary.** 语言模型在位置 $t$ 预测第 $t+1$ 个词元，所以位置 $t$ 的 logits 只能依赖词元 $0..t$：改变 $t$ 之后的词元不能改变它们，它们对未来词元的嵌入的梯度也必须恰好是 0。填充同样不是数据：填充位置放什么、补了多少填充，都不能改变有效位置的 logits 和损失。评分器会检查这两条边界，也会用它自己的参数把你的 logits 和损失与参考实现逐项比较。
#
# A language model predicts token $t+1$ at position $t$, so the logits at $t$ may depend on tokens $0..t$ only: changing
# the tokens after $t$ must not change them, and their gradient with respect to the embeddings of future tokens must
# be exactly 0. Padding is not data either: neither what the padded positions hold nor how much padding there is may
# change the valid logits or the loss. The grader checks both boundaries, and compares your logits and loss entry by
# entry with the reference, using its own params.

# %% tiny_lm_notation [markdown] nbgrader={"grade": false, "grade_id": "tiny_lm_notation", "locked": true, "schema_version": 3, "solution": false}
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

# %% tiny_lm_how_to [markdown] nbgrader={"grade": false, "grade_id": "tiny_lm_how_to", "locked": true, "schema_version": 3, "solution": false}
# ### 怎么做 / How to work
#
# 1. 从上到下运行单元格。把每个 `raise NotImplementedError` 换成你的代码；不要改函数名和参数。
# 2. “动手检查”先在纸上算，再运行代码对照；图在函数实现之前只打印提示。
# 3. 🔒 “自测”单元格本身不计分，但必须全部通过。本练习的 100 分全部来自隐藏的性质测试：作业评分时，评分器用许多随机的小输入检查你的函数，所以自测通过不等于满分。函数不要原地修改输入，也不要依赖其他练习的笔记本。
# 4. 提交前自查：在这个文件夹里运行 `pytest`，每个函数一行：通过、还没有实现、或没通过以及原因。
#
# 1. Run the cells from top to bottom. Replace every `raise NotImplementedError` by your code; keep the names and
#    signatures.
# 2. Work out each "check by hand" on paper first, then run the cell and compare; the pictures only print a hint
#    until the function is implemented.
# 3. The 🔒 "visible checks" score no points themselves, but must all pass. All 100 points of this exercise
#    come from hidden property tests: when your work is graded, the grader checks your functions on many small random
#    inputs, so passing the visible checks does not guarantee full marks. Do not modify inputs in place, and do not
#    rely on another exercise's notebook.
# 4. Before submitting: run `pytest` in this folder, one line per function: passed, not implemented yet, or failed
#    and why.

# %% tiny_lm_setup nbgrader={"grade": false, "grade_id": "tiny_lm_setup", "locked": true, "schema_version": 3, "solution": false}
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)  # 可复现 / reproducible


# %% tiny_lm_parts_note [markdown] nbgrader={"grade": false, "grade_id": "tiny_lm_parts_note", "locked": true, "schema_version": 3, "solution": false}
# ## 0. 你的零件 / Your parts
#
# > **把你自己的实现粘贴到下面五个单元格里**（不要 import 其他笔记本）：`padding_mask` 和 `causal_mask`（练习 1）、
# > `sinusoidal_encoding`（练习 2）、`scaled_dot_product_attention`（练习 3）、`masked_cross_entropy`（练习 5）。
# > 这个练习不单独给它们打分，但模型的每个测试都通过它们运行：零件里的错误会在这里表现为模型的错误。
# >
# > **Paste your own implementations into the five cells below** (do not import other notebooks): `padding_mask` and
# > `causal_mask` (exercise 1), `sinusoidal_encoding` (exercise 2), `scaled_dot_product_attention` (exercise 3),
# > `masked_cross_entropy` (exercise 5). They are not graded on their own here, but every test of the model runs
# > through them: a mistake in a part shows up as a mistake of the model.

# %% padding_mask_part [markdown] nbgrader={"grade": false, "grade_id": "padding_mask_part", "locked": true, "schema_version": 3, "solution": false}
# **零件 1 / Part 1: `padding_mask`**（练习 1 / exercise 1）。$m_{b,t} = [\,t < \ell_b\,]$，True = 真实词元 / a real token。

# %% padding_mask nbgrader={"grade": false, "grade_id": "padding_mask", "locked": false, "schema_version": 3, "solution": true}
def padding_mask(lengths, max_len=None):
    """Paste your padding_mask from the masks notebook: mask[b, t] = (t < lengths[b])."""
    # 粘贴你在练习 1 里的实现 / paste your implementation from exercise 1
    raise NotImplementedError("padding_mask")


# %% causal_mask_part [markdown] nbgrader={"grade": false, "grade_id": "causal_mask_part", "locked": true, "schema_version": 3, "solution": false}
# **零件 2 / Part 2: `causal_mask`**（练习 1 / exercise 1）。$M_{ij} = [\,j \le i\,]$：查询 $i$ 只看键 $0..i$ / query $i$ sees keys $0..i$ only。

# %% causal_mask nbgrader={"grade": false, "grade_id": "causal_mask", "locked": false, "schema_version": 3, "solution": true}
def causal_mask(T, device=None):
    """Paste your causal_mask from the masks notebook: mask[i, j] = (j <= i)."""
    # 粘贴你在练习 1 里的实现 / paste your implementation from exercise 1
    raise NotImplementedError("causal_mask")


# %% sinusoidal_encoding_part [markdown] nbgrader={"grade": false, "grade_id": "sinusoidal_encoding_part", "locked": true, "schema_version": 3, "solution": false}
# **零件 3 / Part 3: `sinusoidal_encoding`**（练习 2 / exercise 2）。$PE_{t,2i} = \sin(t / \text{base}^{2i/d})$，$PE_{t,2i+1} = \cos(t / \text{base}^{2i/d})$，`(T, d)` float32。

# %% sinusoidal_encoding nbgrader={"grade": false, "grade_id": "sinusoidal_encoding", "locked": false, "schema_version": 3, "solution": true}
def sinusoidal_encoding(T, d, base=10000.0):
    """Paste your sinusoidal_encoding from the positional_encoding notebook: a (T, d) float32 table."""
    # 粘贴你在练习 2 里的实现 / paste your implementation from exercise 2
    raise NotImplementedError("sinusoidal_encoding")


# %% scaled_dot_product_attention_part [markdown] nbgrader={"grade": false, "grade_id": "scaled_dot_product_attention_part", "locked": true, "schema_version": 3, "solution": false}
# **零件 4 / Part 4: `scaled_dot_product_attention`**（练习 3 / exercise 3）。$\operatorname{softmax}(\mathbf{Q}\mathbf{K}^\top / \sqrt{d_k})$ 按键归一化，被屏蔽的键权重恰好为 0；返回 `(out, weights)`。
#
# Softmax over keys, masked keys get weight exactly 0; returns `(out, weights)`.

# %% scaled_dot_product_attention nbgrader={"grade": false, "grade_id": "scaled_dot_product_attention", "locked": false, "schema_version": 3, "solution": true}
def scaled_dot_product_attention(Q, K, V, mask=None):
    """Paste your scaled_dot_product_attention from the attention notebook: returns (out, weights)."""
    # 粘贴你在练习 3 里的实现 / paste your implementation from exercise 3
    raise NotImplementedError("scaled_dot_product_attention")


# %% masked_cross_entropy_part [markdown] nbgrader={"grade": false, "grade_id": "masked_cross_entropy_part", "locked": true, "schema_version": 3, "solution": false}
# **零件 5 / Part 5: `masked_cross_entropy`**（练习 5 / exercise 5）。$L = \sum_{b,t} m_{b,t}\,\ell_{b,t} / \sum_{b,t} m_{b,t}$：只对真实词元取平均 / averaged over real tokens only。

# %% masked_cross_entropy nbgrader={"grade": false, "grade_id": "masked_cross_entropy", "locked": false, "schema_version": 3, "solution": true}
def masked_cross_entropy(logits, targets, mask):
    """Paste your masked_cross_entropy from the masked_loss notebook: the mean over valid tokens."""
    # 粘贴你在练习 5 里的实现 / paste your implementation from exercise 5
    raise NotImplementedError("masked_cross_entropy")


# %% init_tiny_lm_formula [markdown] nbgrader={"grade": false, "grade_id": "init_tiny_lm_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 1. 参数 / The params `init_tiny_lm`
#
# **参数元组 / The params tuple**（顺序固定 / in this order），没有 `nn.Module`，只有张量：
#
# $$\text{params} = (\mathbf{E}, \mathbf{W}_q, \mathbf{W}_k, \mathbf{W}_v, \mathbf{W}_o, \mathbf{W}_{out}),\qquad
# \mathbf{E}, \mathbf{W}_{out} \in \mathbb{R}^{V \times d},\quad \mathbf{W}_q, \mathbf{W}_k, \mathbf{W}_v, \mathbf{W}_o \in \mathbb{R}^{d \times d}$$
#
# 全部 `float32`，从 `torch.Generator().manual_seed(seed)` 抽取（同一个 seed 得到同样的参数，不用全局随机状态）。建议 / suggested：每个元素 $\sim \mathcal{N}(0, 1/d)$，即 `torch.randn(..., generator=g) / math.sqrt(d)`。
#
# All `float32`, drawn from `torch.Generator().manual_seed(seed)` (the same seed gives the same params; the global
# random state is not used). Suggested: entries $\sim \mathcal{N}(0, 1/d)$, i.e. `torch.randn(..., generator=g) / math.sqrt(d)`.

# %% init_tiny_lm nbgrader={"grade": false, "grade_id": "init_tiny_lm", "locked": false, "schema_version": 3, "solution": true}
def init_tiny_lm(vocab_size, d_model, seed):
    """(E, W_q, W_k, W_v, W_o, W_out) float32, drawn from torch.Generator().manual_seed(seed)."""
    # E (V, d), W_q, W_k, W_v, W_o (d, d), W_out (V, d)
    # 你的代码 / your code
    raise NotImplementedError("init_tiny_lm")


# %% init_tiny_lm_checks [markdown] nbgrader={"grade": false, "grade_id": "init_tiny_lm_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `init_tiny_lm`

# %% test_init_tiny_lm nbgrader={"grade": true, "grade_id": "test_init_tiny_lm", "locked": true, "points": 10, "schema_version": 3, "solution": false}
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


# %% tiny_lm_logits_formula [markdown] nbgrader={"grade": false, "grade_id": "tiny_lm_logits_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 2. 前向 / The forward pass `tiny_lm_logits`
#
# **公式 / Formula.** `tokens (B, T)` int64，`lengths (B,)`（每个在 $[1, T]$，右填充 / right padding）：
#
# $$\mathbf{X} = \sqrt{d}\,\mathbf{E}[\text{tokens}] + \mathbf{PE}_{0:T} \qquad (B, T, d)$$
# $$\mathbf{A} = \operatorname{Attention}\big(\mathbf{X}\mathbf{W}_q^\top,\ \mathbf{X}\mathbf{W}_k^\top,\ \mathbf{X}\mathbf{W}_v^\top;\
#   M_{b,i,j} = [\,j \le i\,] \wedge [\,j < \ell_b\,]\big)$$
# $$\mathbf{H} = \mathbf{X} + \mathbf{A}\mathbf{W}_o^\top \ \text{（残差 / residual）},\qquad
#   \text{logits} = \mathbf{H}\mathbf{W}_{out}^\top \quad (B, T, V)$$
#
# - 嵌入乘 $\sqrt d$ 再加位置编码，都在注意力之前。/ Scale the embedding by $\sqrt d$, add the encoding, both before attention.
# - 掩码 `(B, T, T)` = `causal_mask(T)[None] & padding_mask(lengths, T)[:, None, :]`：行是查询，列是键。用 `T = tokens.shape[1]`，不是 `lengths.max()`（批里可能多补了填充）。
#
#   The mask: rows are queries, columns keys. Use `T = tokens.shape[1]`, not `lengths.max()` (a batch may carry extra padding).
# - 填充位置的 logits 不评分（但必须能算出来）。/ The logits at padded positions are not graded (but must be computable).
# - 代码用行约定：$\mathbf{X}\mathbf{W}^\top$ 就是 `X @ W.T`。/ Row convention: $\mathbf{X}\mathbf{W}^\top$ is `X @ W.T`.

# %% tiny_lm_logits nbgrader={"grade": false, "grade_id": "tiny_lm_logits", "locked": false, "schema_version": 3, "solution": true}
def tiny_lm_logits(tokens, lengths, params):
    """tokens (B, T) int64, lengths (B,) -> logits (B, T, V); position t sees tokens 0..t only."""
    # E, W_q, W_k, W_v, W_o, W_out = params
    # X = sqrt(d) * E[tokens] + PE: (B, T, d);  mask: (B, T, T);  H = X + A @ W_o.T;  logits = H @ W_out.T
    # 你的代码 / your code
    raise NotImplementedError("tiny_lm_logits")


# %% tiny_lm_logits_by_hand [markdown] nbgrader={"grade": false, "grade_id": "tiny_lm_logits_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand
#
# $V = d = 2$，$\mathbf{E} = \mathbf{I}/\sqrt 2$（所以 $\sqrt d\,\mathbf{E}[v]$ 是第 $v$ 个单位向量），$\mathbf{W}_q = \mathbf{W}_k = \mathbf{0}$（所有允许的键得分相同，权重平均分配），$\mathbf{W}_v = \mathbf{W}_o = \mathbf{W}_{out} = \mathbf{I}$。词元 $(0, 1)$，长度 2。$d = 2$ 时 $PE_t = (\sin t, \cos t)$：
#
# $V = d = 2$, $\mathbf{E} = \mathbf{I}/\sqrt 2$ (so $\sqrt d\,\mathbf{E}[v]$ is the $v$-th unit vector), $\mathbf{W}_q = \mathbf{W}_k = \mathbf{0}$ (every allowed
# key scores the same: equal weights), $\mathbf{W}_v = \mathbf{W}_o = \mathbf{W}_{out} = \mathbf{I}$. Tokens $(0, 1)$, length 2. With $d = 2$,
# $PE_t = (\sin t, \cos t)$:
#
# - $\mathbf{x}_0 = (1, 0) + (0, 1) = (1, 1)$，$\mathbf{x}_1 = (0, 1) + (\sin 1, \cos 1) \approx (0.8415, 1.5403)$；
# - 位置 0 只看自己 / position 0 sees itself only：$\text{logits}_0 = \mathbf{x}_0 + \mathbf{x}_0 = (2, 2)$；
# - 位置 1 平均看 0 和 1 / position 1 averages 0 and 1：$\text{logits}_1 = \mathbf{x}_1 + \tfrac12(\mathbf{x}_0 + \mathbf{x}_1) \approx (1.7622, 2.8105)$。
#
# 没有因果掩码时位置 0 也会平均两个位置，得到 $(1.9207, 2.2702)$——看到了未来。
#
# Without the causal mask position 0 would average both positions too, giving $(1.9207, 2.2702)$: it would see the future.

# %% tiny_lm_logits_demo
HAND = (torch.eye(2) / math.sqrt(2), torch.zeros(2, 2), torch.zeros(2, 2), torch.eye(2), torch.eye(2), torch.eye(2))
try:
    print(tiny_lm_logits(torch.tensor([[0, 1]]), torch.tensor([2]), HAND))  # [[2, 2], [1.7622, 2.8105]]
except NotImplementedError:
    print("请先实现 tiny_lm_logits，再运行这个单元格。/ Implement tiny_lm_logits first, then run this cell again.")

# %% tiny_lm_logits_picture
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
    print("请先实现 tiny_lm_logits，再运行这个单元格。/ Implement tiny_lm_logits first, then run this cell again.")

# %% tiny_lm_logits_checks [markdown] nbgrader={"grade": false, "grade_id": "tiny_lm_logits_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `tiny_lm_logits`

# %% test_tiny_lm_logits nbgrader={"grade": true, "grade_id": "test_tiny_lm_logits", "locked": true, "points": 48, "schema_version": 3, "solution": false}
HAND = (torch.eye(2) / math.sqrt(2), torch.zeros(2, 2), torch.zeros(2, 2), torch.eye(2), torch.eye(2), torch.eye(2))
z = tiny_lm_logits(torch.tensor([[0, 1]]), torch.tensor([2]), HAND)
assert isinstance(z, torch.Tensor) and z.shape == (1, 2, 2), f"形状应为 (B, T, V) = (1, 2, 2) / shape should be (1, 2, 2), got {getattr(z, 'shape', z)}"
want = torch.tensor([[[2.0, 2.0], [1.7622, 2.8105]]])
assert torch.allclose(z, want, atol=1e-3), f"手算例子不对 / wrong hand example:\n{z}\nexpected\n{want}"
P = init_tiny_lm(9, 8, seed=1)
tokens = torch.tensor([[1, 2, 3, 4, 5], [6, 7, 8, 0, 0]])
lengths = torch.tensor([5, 3])
z = tiny_lm_logits(tokens, lengths, P)
assert z.shape == (2, 5, 9), f"形状应为 (2, 5, 9) / shape should be (2, 5, 9), got {tuple(z.shape)}"
later = tokens.clone(); later[:, 3:] = 2
assert torch.allclose(tiny_lm_logits(later, lengths, P)[:, :3], z[:, :3], atol=1e-5), \
    "改变位置 3 之后的词元改变了位置 0..2 的 logits：看到了未来 / changing tokens from position 3 on changed the logits at 0..2: the future leaks"
more = torch.cat([tokens, torch.full((2, 2), 4)], 1)
assert torch.allclose(tiny_lm_logits(more, lengths, P)[0, :5], z[0], atol=1e-5) and \
    torch.allclose(tiny_lm_logits(more, lengths, P)[1, :3], z[1, :3], atol=1e-5), \
    "多补两列填充改变了有效位置的 logits / two more padded columns changed the valid logits (use T = tokens.shape[1])"
print("tiny_lm_logits：自测通过 / visible checks passed")


# %% tiny_lm_loss_formula [markdown] nbgrader={"grade": false, "grade_id": "tiny_lm_loss_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 3. 下一个词元的损失 / The next-token loss `tiny_lm_loss`
#
# **公式 / Formula.** 位置 $t$ 的 logits 预测下一个词元 $y_{b,t} = \text{tokens}_{b,t+1}$；只有下一个词元是真实词元（$t + 1 < \ell_b$）时才计入：
#
# The logits at $t$ predict the next token $y_{b,t} = \text{tokens}_{b,t+1}$; a position counts only when that next token
# is real ($t + 1 < \ell_b$):
#
# $$L = \frac{\sum_{b} \sum_{t=0}^{T-2} [\,t + 1 < \ell_b\,]\ \operatorname{CE}(\text{logits}_{b,t},\ \text{tokens}_{b,t+1})}
#            {\sum_{b} \sum_{t=0}^{T-2} [\,t + 1 < \ell_b\,]}$$
#
# 也就是 / that is: `masked_cross_entropy(logits[:, :-1], tokens[:, 1:], padding_mask(lengths, T)[:, 1:])`。每个序列最后一个有效位置没有目标（它后面是填充），所以不计入。`lengths` 每个在 $[2, T]$ 时至少有一个目标。
#
# The last valid position of each sequence has no target (padding follows) and does not count. With every length in
# $[2, T]$ there is at least one target.

# %% tiny_lm_loss nbgrader={"grade": false, "grade_id": "tiny_lm_loss", "locked": false, "schema_version": 3, "solution": true}
def tiny_lm_loss(tokens, lengths, params):
    """Next-token cross-entropy: logits[:, t] predict tokens[:, t + 1] for t + 1 < length."""
    # logits (B, T, V) -> logits[:, :-1] (B, T-1, V) against tokens[:, 1:] (B, T-1), mask (B, T-1)  ->  scalar
    # 你的代码 / your code
    raise NotImplementedError("tiny_lm_loss")


# %% tiny_lm_loss_by_hand [markdown] nbgrader={"grade": false, "grade_id": "tiny_lm_loss_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand
#
# 用上面手算的参数，词元 $(0, 1)$、长度 2：只有位置 0 计入，它的 logits $(2, 2)$ 要预测词元 1，$p = \tfrac12$，$L = \ln 2 \approx 0.6931$。再加一个序列 $(1, 0)$、长度 1：它没有任何目标，损失不变。
#
# With the hand params above, tokens $(0, 1)$ and length 2: only position 0 counts; its logits $(2, 2)$ predict token 1,
# $p = \tfrac12$, $L = \ln 2 \approx 0.6931$. Add a sequence $(1, 0)$ of length 1: it has no target, the loss stays.

# %% tiny_lm_loss_demo
try:
    print(tiny_lm_loss(torch.tensor([[0, 1]]), torch.tensor([2]), HAND).item(), math.log(2))
    print(tiny_lm_loss(torch.tensor([[0, 1], [1, 0]]), torch.tensor([2, 1]), HAND).item())
except NotImplementedError:
    print("请先实现 tiny_lm_loss，再运行这个单元格。/ Implement tiny_lm_loss first, then run this cell again.")

# %% tiny_lm_loss_checks [markdown] nbgrader={"grade": false, "grade_id": "tiny_lm_loss_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `tiny_lm_loss`

# %% test_tiny_lm_loss nbgrader={"grade": true, "grade_id": "test_tiny_lm_loss", "locked": true, "points": 25, "schema_version": 3, "solution": false}
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
assert abs(tiny_lm_loss(other, lengths, P).item() - L.item()) < 1e-5, \
    "填充位置的词元改变了损失：最后一个有效位置不能计入 / the padded tokens changed the loss: the last valid position must not count"
print("tiny_lm_loss：自测通过 / visible checks passed")


# %% train_tiny_lm_formula [markdown] nbgrader={"grade": false, "grade_id": "train_tiny_lm_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 4. 训练 / Training `train_tiny_lm`
#
# **任务 / The task.** 复制：序列是 $k$ 个随机词元（从 $1..V-1$ 中抽）再重复一遍，$k \in \{2, 3, 4\}$，长度 $\ell = 2k$，右填充 0 到 $T = 8$。后一半完全由前一半决定，所以注意力学会“往回看 $k$ 个位置”后，后一半的损失可以接近 0。
#
# Copy: a sequence is $k$ random tokens (from $1..V-1$) followed by the same $k$ again, $k \in \{2, 3, 4\}$, length $\ell = 2k$,
# right-padded with 0 to $T = 8$. The second half is fixed by the first, so once attention learns to look $k$ positions
# back, its loss can get close to 0.
#
# **循环 / The loop.** 建议 / suggested: $V = 10$，$d = 16$，32 个序列的一个固定批，`init_tiny_lm(10, 16, seed)`，`torch.optim.Adam(params, lr=0.02)`；每一步 / every step: $L \leftarrow$ `tiny_lm_loss`，`zero_grad()`，`backward()`，`step()`，记下 `loss.item()`。
#
# $$\boldsymbol{\theta} \leftarrow \boldsymbol{\theta} - \eta\, \hat{\mathbf{m}} / (\sqrt{\hat{\mathbf{v}}} + \epsilon)\quad\text{(Adam)}$$
#
# 返回 `steps` 个 Python 浮点数的列表。数据和参数都只从 `seed` 来（`torch.Generator().manual_seed(seed)`）：同一个 seed 两次训练得到完全相同的损失。评分：损失有限，30 步后最后一个 < 第一个的 0.75 倍，结果可复现；在 CPU 上几秒钟。
#
# Return a list of `steps` Python floats. Data and params come from `seed` only (`torch.Generator().manual_seed(seed)`): two
# runs with the same seed give exactly the same losses. Graded: finite losses, after 30 steps the last below 0.75 times
# the first, reproducible; a few seconds on a CPU.

# %% train_tiny_lm nbgrader={"grade": false, "grade_id": "train_tiny_lm", "locked": false, "schema_version": 3, "solution": true}
def train_tiny_lm(seed, steps):
    """Adam on the copy task, everything seeded by `seed`; returns the `steps` training losses."""
    # tokens (32, 8), lengths (32,) from torch.Generator().manual_seed(seed);  params = init_tiny_lm(10, 16, seed)
    # every step: loss = tiny_lm_loss(...); opt.zero_grad(); loss.backward(); opt.step(); losses.append(loss.item())
    # 你的代码 / your code
    raise NotImplementedError("train_tiny_lm")


# %% train_tiny_lm_picture
# 图 / picture: 训练曲线 / the training curve
try:
    for seed in (0, 1):
        plt.plot(train_tiny_lm(seed, 40), label=f"seed {seed}")
    plt.xlabel("step"); plt.ylabel("next-token loss"); plt.legend(); plt.title("copy task")
    plt.show()
except NotImplementedError:
    print("请先实现 train_tiny_lm，再运行这个单元格。/ Implement train_tiny_lm first, then run this cell again.")

# %% train_tiny_lm_checks [markdown] nbgrader={"grade": false, "grade_id": "train_tiny_lm_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `train_tiny_lm`

# %% test_train_tiny_lm nbgrader={"grade": true, "grade_id": "test_train_tiny_lm", "locked": true, "points": 17, "schema_version": 3, "solution": false}
losses = train_tiny_lm(0, 30)
assert isinstance(losses, list) and len(losses) == 30, "应返回 30 个损失的列表 / should return a list of 30 losses"
assert all(isinstance(v, float) and math.isfinite(v) for v in losses), "损失应是有限的浮点数 / losses should be finite floats"
assert losses[-1] < 0.75 * losses[0], f"损失没有明显下降 / the loss did not clearly fall: {losses[0]:.3f} -> {losses[-1]:.3f}"
torch.manual_seed(99)
assert train_tiny_lm(0, 5) == train_tiny_lm(0, 5), "同一个 seed 应得到同样的损失 / the same seed must give the same losses"
print("train_tiny_lm：自测通过 / visible checks passed")

# %% tiny_lm_summary [markdown] nbgrader={"grade": false, "grade_id": "tiny_lm_summary", "locked": true, "schema_version": 3, "solution": false}
# ## 小结 / Summary
#
# - 语言模型 = 嵌入（乘 $\sqrt d$）+ 位置编码 → 因果自注意力 → 残差 → 输出投影；每一块都是前面练习里的零件。
#
#   A language model = embedding (times $\sqrt d$) + positional encoding → causal self-attention → residual → output
#   projection; every block is a part from the earlier exercises.
# - 因果掩码是信息边界：位置 $t$ 的 logits 对未来词元的梯度恰好为 0。
#
#   The causal mask is the information boundary: the gradient of the logits at $t$ with respect to future tokens is exactly 0.
# - 目标右移一位，最后一个有效位置没有目标；填充不进入损失。
#
#   Targets are shifted by one, the last valid position has no target, padding never enters the loss.
# - 数据和参数都由 seed 决定，实验才能复现。Data and params both come from the seed, so the experiment can be reproduced.
