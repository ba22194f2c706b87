# %% masked_loss_intro [markdown] nbgrader={"grade": false, "grade_id": "masked_loss_intro", "locked": true, "schema_version": 3, "solution": false}
# # 练习 5：带掩码的损失 / Exercise 5: Masked loss
#
# **目标 / Goal.** 实现 `masked_cross_entropy`：只在真实词元上取平均的交叉熵。
#
# Implement `masked_cross_entropy`: the cross-entropy averaged over real tokens only.
#
# **信息边界 / The information boundary.** 填充位置不是数据。它们的目标（target）可以是任意整数（常见的是 -100、0 或填充符号的编号，甚至 $\ge V$），它们的 logits 可以是任意值——甚至是 NaN 或 inf（例如来自一个没有可关注键的注意力行）。填充也不一定在末尾（左填充、中间被屏蔽的词元），只有 `mask` 说了算。损失和它的梯度都不能受它们影响；每个真实词元的权重相同，所以除以**真实词元的个数**，而不是 $B \cdot T$，也不是先对每个序列求平均。
#
# Padded positions are not data. Their targets may hold any integer (often -100, 0 or the pad id, even $\ge V$) and
# their logits any value, even NaN or inf (from an attention row with no allowed key, say). Neither the loss nor its
# gradient may depend on them. Padding need not be at the end (left padding, tokens masked in the middle): only `mask` decides. Every real token counts the same, so divide by the **number of real tokens**, not by
# $B \cdot T$, and do not average each sequence first.

# %% masked_loss_notation [markdown] nbgrader={"grade": false, "grade_id": "masked_loss_notation", "locked": true, "schema_version": 3, "solution": false}
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

# %% masked_loss_how_to [markdown] nbgrader={"grade": false, "grade_id": "masked_loss_how_to", "locked": true, "schema_version": 3, "solution": false}
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

# %% masked_loss_setup nbgrader={"grade": false, "grade_id": "masked_loss_setup", "locked": true, "schema_version": 3, "solution": false}
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)  # 可复现 / reproducible


# %% masked_cross_entropy_formula [markdown] nbgrader={"grade": false, "grade_id": "masked_cross_entropy_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 带掩码的交叉熵 / Masked cross-entropy `masked_cross_entropy`
#
# **公式 / Formula.** 位置 $(b, t)$ 的 logits 是 $\mathbf{z}_{b,t} \in \mathbb{R}^V$（原始分数，**没有**经过 softmax），目标是
# $y_{b,t}$，掩码 $m_{b,t}$（True = 真实词元）：
#
# The logits of position $(b, t)$ are $\mathbf{z}_{b,t} \in \mathbb{R}^V$ (raw scores, **no** softmax applied), the
# target is $y_{b,t}$ and the mask $m_{b,t}$ (True = real token):
#
# $$\ell_{b,t} = -\log \frac{\exp(z_{b,t,y_{b,t}})}{\sum_{v} \exp(z_{b,t,v})}
#             = \log \sum_v \exp(z_{b,t,v}) - z_{b,t,y_{b,t}}, \qquad
#   L = \frac{\sum_{b,t} m_{b,t}\, \ell_{b,t}}{\sum_{b,t} m_{b,t}}$$
#
# - 形状 / shapes: `logits (B, T, V)`, `targets (B, T)` int64, `mask (B, T)` bool → 标量 / a scalar `()`.
# - **数值稳定 / Stable:** $|z| \approx 10^4$ 时 $\exp$ 会溢出。用 $\log\sum\exp$ 的稳定写法（先减去最大值），例如 `torch.logsumexp`、`F.log_softmax` 或直接把 logits 交给 `F.cross_entropy`。不要先做 softmax 再取 log。
#
#   With $|z| \approx 10^4$, $\exp$ overflows. Use a stable $\log\sum\exp$ (subtract the maximum first), e.g.
#   `torch.logsumexp`, `F.log_softmax`, or hand the logits to `F.cross_entropy`. Do not take a softmax and then a log.
# - **先选再算 / Select first:** 公式里的 $m_{b,t}\,\ell_{b,t}$ 不能照字面用乘法实现：$0 \cdot \text{NaN} = \text{NaN}$，而越界的目标会让索引出错。先取出真实位置，再计算。
#
#   Do not implement $m_{b,t}\,\ell_{b,t}$ literally as a product: $0 \cdot \text{NaN} = \text{NaN}$, and an
#   out-of-range target breaks the indexing. Take out the real positions first, then compute.
# - 没有任何真实词元时（$\sum m = 0$）引发 `ValueError`。/ No real token at all ($\sum m = 0$) raises `ValueError`.

# %% masked_cross_entropy nbgrader={"grade": false, "grade_id": "masked_cross_entropy", "locked": false, "schema_version": 3, "solution": true}
def masked_cross_entropy(logits, targets, mask):
    """Cross-entropy of raw logits, summed over valid tokens and divided by their number."""
    # logits (B, T, V) raw scores, targets (B, T) int64, mask (B, T) bool (True = valid)  ->  scalar ()
    # ValueError if mask has no True
    # 你的代码 / your code
    raise NotImplementedError("masked_cross_entropy")


# %% masked_cross_entropy_by_hand [markdown] nbgrader={"grade": false, "grade_id": "masked_cross_entropy_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand: 两个词元 / two tokens
#
# $B = 1$，$T = 3$，$V = 2$，掩码 $(1, 1, 0)$：
# - 词元 0：logits $(0, 0)$，目标 0 → $p = \tfrac12$，$\ell = \ln 2 \approx 0.6931$；
# - 词元 1：logits $(\ln 3, 0)$，目标 0 → $p = \tfrac{3}{3+1} = \tfrac34$，$\ell = \ln \tfrac43 \approx 0.2877$；
# - 位置 2 是填充：logits 是 NaN，目标是 -100——都不能产生影响。
#
# $L = (0.6931 + 0.2877) / 2 \approx 0.4904$。
#
# $B = 1$, $T = 3$, $V = 2$, mask $(1, 1, 0)$:
# - token 0: logits $(0, 0)$, target 0 → $p = \tfrac12$, $\ell = \ln 2 \approx 0.6931$;
# - token 1: logits $(\ln 3, 0)$, target 0 → $p = \tfrac{3}{3+1} = \tfrac34$, $\ell = \ln \tfrac43 \approx 0.2877$;
# - position 2 is padding: NaN logits, target -100, neither may matter.
#
# $L = (0.6931 + 0.2877) / 2 \approx 0.4904$.

# %% masked_cross_entropy_demo
nan = float("nan")
logits = torch.tensor([[[0.0, 0.0], [math.log(3.0), 0.0], [nan, nan]]])  # (B, T, V) = (1, 3, 2)
targets = torch.tensor([[0, 0, -100]])  # (B, T)
mask = torch.tensor([[True, True, False]])  # (B, T)
try:
    print(f"loss = {masked_cross_entropy(logits, targets, mask).item():.4f} (0.4904)")
except NotImplementedError:
    print("请先实现 masked_cross_entropy，再运行这个单元格。/ Implement masked_cross_entropy first, then run this cell again.")

# %% masked_cross_entropy_pitfall [markdown] nbgrader={"grade": false, "grade_id": "masked_cross_entropy_pitfall", "locked": true, "schema_version": 3, "solution": false}
# ### 为什么不能先算再乘掩码 / Why not compute everything and multiply by the mask
#
# 下面的单元格不用你的函数：它对所有位置计算交叉熵（把 -100 换成 0 以免索引出错），再乘以掩码。填充位置的 NaN 穿过了乘法。
#
# The cell below does not use your function: it computes the cross-entropy at every position (replacing -100 by 0 so
# the indexing works), then multiplies by the mask. The NaN of the padded position goes straight through the product.

# %% masked_cross_entropy_pitfall_code
every = F.cross_entropy(logits.reshape(-1, 2), targets.clamp(min=0).reshape(-1), reduction="none")  # (B*T,)
print("per-token loss:", every)
print("multiplied by the mask:", (every * mask.reshape(-1)).sum() / mask.sum())  # nan: 0 * nan = nan

# %% masked_cross_entropy_checks [markdown] nbgrader={"grade": false, "grade_id": "masked_cross_entropy_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `masked_cross_entropy`

# %% test_masked_cross_entropy nbgrader={"grade": true, "grade_id": "test_masked_cross_entropy", "locked": true, "points": 15, "schema_version": 3, "solution": false}
nan = float("nan")
logits = torch.tensor([[[0.0, 0.0], [math.log(3.0), 0.0], [nan, nan]]])  # (B, T, V) = (1, 3, 2)
targets = torch.tensor([[0, 0, -100]])
mask = torch.tensor([[True, True, False]])
loss = masked_cross_entropy(logits, targets, mask)
assert isinstance(loss, torch.Tensor) and loss.shape == (), f"应返回标量张量 / should return a scalar tensor, got {loss!r}"
assert abs(loss.item() - 0.490415) < 1e-5, \
    f"手算例子：(ln 2 + ln 4/3) / 2 ≈ 0.4904（填充不能参与）/ hand example: (ln 2 + ln 4/3) / 2 ≈ 0.4904 (padding must not count); got {loss.item():.4f}"

left = masked_cross_entropy(logits.flip(1), targets.flip(1), mask.flip(1))  # left padding: mask [False, True, True]
assert abs(left.item() - 0.490415) < 1e-5, \
    f"mask 可以是任意形状（例如左填充），直接用 mask 选位置 / the mask may be any pattern (e.g. left padding): select with the mask itself; got {left.item():.4f}"

logits.requires_grad_(True)
masked_cross_entropy(logits, torch.tensor([[0, 0, 99]]), mask).backward()
assert torch.isfinite(logits.grad).all() and (logits.grad[0, 2] == 0).all(), \
    f"填充位置的梯度必须恰好为 0 且不能有 NaN / the gradient at padded positions must be exactly 0, no NaN:\n{logits.grad}"

logits = torch.zeros(2, 3, 4)  # (B, T, V)
logits[1, :, 0] = 10.0
targets = torch.zeros(2, 3, dtype=torch.long)
mask = torch.tensor([[True, False, False], [True, True, True]])  # lengths 1 and 3
expected = (math.log(4.0) + 3 * math.log(1 + 3 * math.exp(-10.0))) / 4  # 4 valid tokens, each counts once
loss = masked_cross_entropy(logits, targets, mask)
assert abs(loss.item() - expected) < 1e-5, \
    f"除以真实词元的个数（4），不是 B·T，也不是按序列平均 / divide by the number of valid tokens (4), not B·T, not per sequence; got {loss.item():.4f}, expected {expected:.4f}"

loss = masked_cross_entropy(torch.tensor([[[1e4, 0.0, -1e4]]]), torch.tensor([[1]]), torch.tensor([[True]]))
assert torch.isfinite(loss) and abs(loss.item() - 1e4) < 1e-2, \
    f"logits 很大时也要稳定（logsumexp）/ must stay stable for large logits (logsumexp); got {loss.item()}, expected 10000"
try:
    masked_cross_entropy(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 2, dtype=torch.bool))
except ValueError:
    pass
else:
    raise AssertionError("没有真实词元时应引发 ValueError / no valid token should raise ValueError")
print("masked_cross_entropy：自测通过 / visible checks passed")

# %% masked_loss_summary [markdown] nbgrader={"grade": false, "grade_id": "masked_loss_summary", "locked": true, "schema_version": 3, "solution": false}
# ## 小结 / Summary
#
# - 直接用 logits，稳定地算 $\log\sum\exp$。Use raw logits and a stable $\log\sum\exp$.
# - 先选出真实词元再计算；除以真实词元的个数。Select the real tokens first; divide by their number.
# - 填充的目标、logits（哪怕是 NaN）都不影响损失和梯度。Padded targets and logits (even NaN) affect neither the loss nor the gradient.
