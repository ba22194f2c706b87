# %% bert_masking_intro [markdown] nbgrader={"grade": false, "grade_id": "bert_masking_intro", "locked": true, "schema_version": 3, "solution": false}
# # 练习 8：BERT 的掩码语言模型 / Exercise 8: BERT's masked-language-model masking
#
# **目标 / Goal.** 实现 BERT（Devlin et al., 2019）预训练的遮盖步骤：找出特殊词元（`special_tokens_mask`），然后选出 15% 的普通词元并按 80/10/10 替换，给出只在被选中位置有效的标签（`mlm_mask`）。
#
# Implement the masking step of BERT's pretraining (Devlin et al., 2019): find the special tokens
# (`special_tokens_mask`), then select 15% of the ordinary tokens, replace them 80/10/10 and build labels that
# count at the selected positions only (`mlm_mask`).
#
# **信息边界 / The information boundary.** 双向编码器在每个位置都能看到整个句子，所以如果不遮住，预测一个词元只需抄输入。遮盖画出了边界：被选中的位置，模型看不到原词（或不能信任它看到的词），也只有这些位置进入损失（标签 $-100$ 表示忽略）；填充和特殊词元不是数据，从不被选中。
#
# A bidirectional encoder sees the whole sentence at every position, so without masking, predicting a token is
# copying the input. Masking draws the boundary: at a selected position the model cannot see the original (or cannot
# trust what it sees), and only those positions enter the loss (label $-100$ = ignored); padding and special tokens
# are not data and are never selected.
#
# **随机性 / Randomness.** 所有随机数都来自 `g = torch.Generator().manual_seed(seed)`：同一个 seed 得到同样的遮盖，实验可以复现。
#
# All randomness comes from `g = torch.Generator().manual_seed(seed)`: the same seed gives the same masking, so
# experiments can be reproduced.

# %% bert_masking_notation [markdown] nbgrader={"grade": false, "grade_id": "bert_masking_notation", "locked": true, "schema_version": 3, "solution": false}
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
# 词元 id 的批是 `(B, T)` 的 `int64` 张量，词表大小为 $V$。A batch of token ids is a `(B, T)` `int64` tensor; the vocabulary has $V$ ids.

# %% bert_masking_how_to [markdown] nbgrader={"grade": false, "grade_id": "bert_masking_how_to", "locked": true, "schema_version": 3, "solution": false}
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

# %% bert_masking_setup nbgrader={"grade": false, "grade_id": "bert_masking_setup", "locked": true, "schema_version": 3, "solution": false}
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)  # 可复现 / reproducible


# %% special_tokens_mask_formula [markdown] nbgrader={"grade": false, "grade_id": "special_tokens_mask_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 1. 特殊词元 / Special tokens `special_tokens_mask`
#
# **公式 / Formula.** $\mathcal{S}$ = `special_ids`（填充、[CLS]、[SEP]、[MASK] ……）：
#
# $$s_{b,t} = [\, x_{b,t} \in \mathcal{S} \,]$$
#
# 返回 `(B, T)` 的 `bool` 张量。Returns a `(B, T)` `bool` tensor. *提示 / Hint:* `torch.isin`.

# %% special_tokens_mask nbgrader={"grade": false, "grade_id": "special_tokens_mask", "locked": false, "schema_version": 3, "solution": true}
def special_tokens_mask(input_ids, special_ids):
    """True where input_ids[b, t] is one of special_ids."""
    # input_ids: (B, T) int64, special_ids: list of ints  ->  (B, T) bool
    # 你的代码 / your code
    raise NotImplementedError("special_tokens_mask")


# %% special_tokens_mask_checks [markdown] nbgrader={"grade": false, "grade_id": "special_tokens_mask_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `special_tokens_mask`

# %% test_special_tokens_mask nbgrader={"grade": true, "grade_id": "test_special_tokens_mask", "locked": true, "points": 3, "schema_version": 3, "solution": false}
PAD, CLS, SEP, MASK = 0, 101, 102, 103
ids = torch.tensor([[CLS, 7, 8, SEP, PAD], [CLS, 9, SEP, PAD, PAD]])  # (B, T) = (2, 5)
m = special_tokens_mask(ids, [PAD, CLS, SEP, MASK])
assert isinstance(m, torch.Tensor) and m.dtype == torch.bool and m.shape == (2, 5), "应返回 (B, T) bool / should return (B, T) bool"
assert m.tolist() == [[True, False, False, True, True], [True, False, True, True, True]], f"不对 / wrong:\n{m}"
print("special_tokens_mask：自测通过 / visible checks passed")


# %% mlm_mask_formula [markdown] nbgrader={"grade": false, "grade_id": "mlm_mask_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 2. 选择、替换、标签 / Select, replace, label `mlm_mask`
#
# **公式 / Formula.** 用同一个生成器 $g$ 抽取独立的均匀随机数 $u_{b,t}, v_{b,t} \sim U(0, 1)$：
#
# $$\text{selected}_{b,t} = [\, u_{b,t} < 0.15 \,] \wedge \neg s_{b,t}$$
#
# $$\tilde{x}_{b,t} = \begin{cases}
#   \texttt{mask\_id} & \text{selected and } v_{b,t} < 0.8 \quad (80\%)\\
#   r_{b,t} \sim U\{0, \dots, V-1\} & \text{selected and } 0.8 \le v_{b,t} < 0.9 \quad (10\%)\\
#   x_{b,t} & \text{otherwise (unselected, or the last 10\%)}
# \end{cases}
# \qquad
# \ell_{b,t} = \begin{cases} x_{b,t} & \text{selected} \\ -100 & \text{otherwise} \end{cases}$$
#
# 返回 `(inputs, labels)` = $(\tilde{\mathbf{x}}, \boldsymbol\ell)$，都是 `(B, T)` 的 `int64`。每个随机调用都传 `generator=g`；随机数的形状是整批 `(B, T)`。
#
# Returns `(inputs, labels)` = $(\tilde{\mathbf{x}}, \boldsymbol\ell)$, both `(B, T)` `int64`. Pass `generator=g` to every
# random call; draw random numbers of the whole batch's shape `(B, T)`.

# %% mlm_mask nbgrader={"grade": false, "grade_id": "mlm_mask", "locked": false, "schema_version": 3, "solution": true}
def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    """Select 15% of the non-special tokens; 80% -> mask_id, 10% -> random, 10% kept; labels -100 elsewhere."""
    # input_ids: (B, T) int64  ->  inputs (B, T) int64, labels (B, T) int64
    # g = torch.Generator().manual_seed(seed); every torch.rand / torch.randint gets generator=g
    # 你的代码 / your code
    raise NotImplementedError("mlm_mask")


# %% mlm_mask_by_hand [markdown] nbgrader={"grade": false, "grade_id": "mlm_mask_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand: 期望的个数 / expected counts
#
# 一批里有 10000 个普通词元（不算填充和特殊词元）。平均有多少个被选中？其中多少变成 [MASK]、多少变成随机词元、多少不变？所有词元中有多大比例带着有效标签？一个普通词元最后显示为 [MASK] 的概率是多少？
#
# A batch holds 10000 ordinary tokens (padding and special tokens aside). How many are selected on average? How many of
# those become [MASK], a random token, or stay? What share of all tokens carries a real label? What is the
# probability that an ordinary token ends up shown as [MASK]?
#
# <details><summary>答案 / Answer</summary>
#
# 选中约 1500 个：约 1200 个 [MASK]、150 个随机词元、150 个不变；约 15% 的普通词元有标签；显示为 [MASK] 的概率 $0.15 \times 0.8 = 12\%$。个数会围绕这些值波动：被选中的个数服从二项分布 $\text{Bin}(10000, 0.15)$，标准差约 $\sqrt{10000 \cdot 0.15 \cdot 0.85} \approx 36$。
#
# About 1500 selected: about 1200 [MASK], 150 random, 150 unchanged; about 15% of the ordinary tokens carry a label;
# the chance of being shown as [MASK] is $0.15 \times 0.8 = 12\%$. The counts fluctuate: the number selected is
# $\text{Bin}(10000, 0.15)$, with a standard deviation of about 36.
# </details>

# %% mlm_mask_demo
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
    print("请先实现 mlm_mask，再运行这个单元格。/ Implement mlm_mask first, then run this cell again.")

# %% mlm_mask_picture
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
    print("请先实现 mlm_mask，再运行这个单元格。/ Implement mlm_mask first, then run this cell again.")

# %% mlm_mask_checks [markdown] nbgrader={"grade": false, "grade_id": "mlm_mask_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `mlm_mask`

# %% test_mlm_mask nbgrader={"grade": true, "grade_id": "test_mlm_mask", "locked": true, "points": 32, "schema_version": 3, "solution": false}
PAD, CLS, SEP, MASK, V = 0, 101, 102, 103, 1000
special = [PAD, CLS, SEP, MASK]
g = torch.Generator().manual_seed(0)
ids = torch.randint(104, V, (100, 130), generator=g)  # (B, T)
ids[:, 0], ids[:, 100], ids[:, 101:] = CLS, SEP, PAD  # 99 ordinary tokens per sequence, then padding
before = ids.clone()
inputs, labels = mlm_mask(ids, special, MASK, V, seed=0)
assert torch.equal(ids, before), "不要原地修改 input_ids / do not modify input_ids in place"
assert inputs.shape == labels.shape == ids.shape and inputs.dtype == labels.dtype == torch.int64, \
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
assert abs(masked - 0.8) < 0.06 and abs(kept - 0.1) < 0.05, \
    f"被选中的约 80% [MASK]、10% 不变，得到 {masked:.3f}、{kept:.3f} / about 80% [MASK] and 10% unchanged, got {masked:.3f}, {kept:.3f}"
again = mlm_mask(ids, special, MASK, V, seed=0)
assert torch.equal(again[0], inputs) and torch.equal(again[1], labels), \
    "同一个 seed 应得到同样的结果（用 torch.Generator）/ the same seed must give the same result (use torch.Generator)"
print("mlm_mask：自测通过 / visible checks passed")

# %% bert_masking_summary [markdown] nbgrader={"grade": false, "grade_id": "bert_masking_summary", "locked": true, "schema_version": 3, "solution": false}
# ## 小结 / Summary
#
# - 先排除特殊词元和填充，再以 15% 选择。Exclude special tokens and padding first, then select 15%.
# - 被选中的 80% [MASK]、10% 随机、10% 不变；标签跟着“被选中”走，其余是 $-100$。
#
#   Of the selected, 80% [MASK], 10% random, 10% unchanged; labels follow "selected", $-100$ elsewhere.
# - 随机数来自带 seed 的生成器，整批一起抽。Random numbers come from a seeded generator, drawn for the whole batch.
# - 比例是统计量：评分器用精确的二项分布界检查它们，正确的代码几乎不可能被误判。
#
#   The rates are statistics: the grader checks them with exact binomial bounds, so correct code is essentially never rejected.
