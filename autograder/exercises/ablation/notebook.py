# %% ablation_intro [markdown] nbgrader={"grade": false, "grade_id": "ablation_intro", "locked": true, "schema_version": 3, "solution": false}
# # 练习 10：单因素消融实验 / Exercise 10: A one-factor ablation
#
# **目标 / Goal.** 做一个干净的消融实验：问“位置编码对这个模型有用吗？”，就只去掉位置编码，其余一切——数据、初始化、训练步数、学习率、随机种子——保持不变。你要写三个函数：`make_ablation` 造出只差一个因素的配置，`run_experiment`
# 用一个配置跑一次完全由 seed 决定的小实验，`run_ablation` 让每个配置都用同一组 seed 各跑一遍。最后用文字分析结果。
#
# Run a clean ablation: to ask "does positional encoding help this model?", remove the encoding and nothing else —
# data, initialisation, number of steps, learning rate and random seeds stay the same. You write three functions:
# `make_ablation` builds configurations that differ in one factor, `run_experiment` runs one small experiment fully
# determined by its seed, `run_ablation` runs every configuration with the same seeds. Then you analyse the result in
# writing.
#
# **信息边界 / The information boundary.** 这里有两条边界。第一条在因素之间：两组之间唯一的差别必须是被消融的因素，否则结果的差别可能来自别的东西（另一组数据、另一个初始化、运气）。第二条在训练集和测试集之间：测试集是模型没见过的数据，训练时用到的一切（训练数据、初始参数、每一步的损失）都不能依赖它——改变测试集的大小，训练一个数都不变。
#
# Two boundaries here. The first lies between factors: the only difference between the arms must be the ablated
# factor, or a difference in the results may come from something else (other data, another init, luck). The second
# lies between training and test data: the test set is data the model never saw, and nothing training uses (the
# training data, the initial params, each step's loss) may depend on it — change the size of the test set and
# training does not change by a single number.
#
# **评分 / Grading.** 三个函数由隐藏的性质测试自动评分（90 分）；最后的书面分析由助教手工评分（10 分）。
#
# The three functions are graded automatically by hidden property tests (90 points); the written analysis at
# the end is graded by hand (10 points).

# %% ablation_notation [markdown] nbgrader={"grade": false, "grade_id": "ablation_notation", "locked": true, "schema_version": 3, "solution": false}
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
# **配置 / Configurations.** 一个配置是普通的嵌套字典（只有 str 键、数、布尔、字符串、列表和字典）。嵌套的项用点号路径指明：`"model.d_model"` 是 `config["model"]["d_model"]`；键里不会有点号。
#
# A configuration is a plain nested dict (str keys; numbers, bools, strings, lists and dicts). A nested entry is named
# by a dotted path: `"model.d_model"` is `config["model"]["d_model"]`; keys never contain a dot.

# %% ablation_how_to [markdown] nbgrader={"grade": false, "grade_id": "ablation_how_to", "locked": true, "schema_version": 3, "solution": false}
# ### 怎么做 / How to work
#
# 1. 从上到下运行单元格。把每个 `raise NotImplementedError` 换成你的代码；不要改函数名和参数。
# 2. “动手检查”先在纸上算，再运行代码对照；图在函数实现之前只打印提示。
# 3. 🔒 “自测”单元格本身不计分，但必须全部通过。本练习的 90 分全部来自隐藏的性质测试：作业评分时，评分器用许多随机的小输入检查你的函数，所以自测通过不等于满分。函数不要原地修改输入，也不要依赖其他练习的笔记本。
# 4. 提交前自查：在这个文件夹里运行 `pytest`，每个函数一行：通过、还没有实现、或没通过以及原因。
#
# 1. Run the cells from top to bottom. Replace every `raise NotImplementedError` by your code; keep the names and
#    signatures.
# 2. Work out each "check by hand" on paper first, then run the cell and compare; the pictures only print a hint
#    until the function is implemented.
# 3. The 🔒 "visible checks" score no points themselves, but must all pass. All 90 points of this exercise
#    come from hidden property tests: when your work is graded, the grader checks your functions on many small random
#    inputs, so passing the visible checks does not guarantee full marks. Do not modify inputs in place, and do not
#    rely on another exercise's notebook.
# 4. Before submitting: run `pytest` in this folder, one line per function: passed, not implemented yet, or failed
#    and why.

# %% ablation_setup nbgrader={"grade": false, "grade_id": "ablation_setup", "locked": true, "schema_version": 3, "solution": false}
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)  # 可复现 / reproducible

# %% ablation_task [markdown] nbgrader={"grade": false, "grade_id": "ablation_task", "locked": true, "schema_version": 3, "solution": false}
# ## 0. 给定的任务和模型 / The given task and model
#
# **顺序任务 / The order task.** 每个序列有 $T$ 个词元：词元 A $= 1$ 和 B $= 2$ 各出现一次，位置随机，其余是 $3..V-1$ 的填充词元。标签 $y = [\,\text{pos}(A) < \text{pos}(B)\,]$：A 是否在 B 前面。只有**顺序**决定标签。
#
# Each sequence has $T$ tokens: A $= 1$ and B $= 2$ once each at random positions, the rest fillers from $3..V-1$.
# The label $y = [\,\text{pos}(A) < \text{pos}(B)\,]$: does A come before B. Only the **order** decides the label.
#
# **模型 / The model**（单层双向注意力 + 平均池化 / one bidirectional attention layer + mean pooling），行约定 / row convention：
#
# $$\mathbf{X} = \mathbf{E}[\text{tokens}]\ (+\ \mathbf{PE}_{0:T}) \qquad (n, T, d)$$
# $$\mathbf{H} = \mathbf{X} + \operatorname{softmax}\!\Big(\frac{(\mathbf{X}\mathbf{W}_q^\top)(\mathbf{X}\mathbf{W}_k^\top)^\top}{\sqrt d}\Big)\,\mathbf{X}\mathbf{W}_v^\top,
# \qquad \text{logits} = \Big(\frac1T\sum_{t} \operatorname{GELU}(\mathbf{H}_t\mathbf{W}_1^\top)\Big)\mathbf{W}_2^\top \quad (n, 2)$$
#
# **没有位置编码时模型看不到顺序。** 打乱位置只会同样地打乱 $\mathbf{X}$ 的行、注意力的行和列、$\mathbf{H}$ 的行，而对 $t$ 取平均不在乎顺序：logits 只取决于词元的**多重集合**。交换 A 和 B 的位置，多重集合不变、标签相反，所以在独立的测试集上，不带位置编码的模型只能猜：正确个数恰好服从 $\text{Binomial}(n_{\text{test}}, \tfrac12)$。
#
# **Without positional encoding the model cannot see the order.** Permuting the positions permutes the rows of $\mathbf{X}$, the rows
# and columns of the attention and the rows of $\mathbf{H}$ alike, and the mean over $t$ ignores the order: the logits depend on
# the **multiset** of tokens only. Swapping A and B keeps the multiset and flips the label, so on an independent test set
# the model without the encoding can only guess: its number of correct answers is exactly $\text{Binomial}(n_{\text{test}}, \tfrac12)$.
#
# 下面锁定的单元格给出这些代码和实验的基础配置 `BASE`（不要修改）。`generator=None` 表示全局随机状态，和 torch 自己的函数一样。
#
# The locked cell below gives this code and the experiment's base configuration `BASE` (do not edit it).
# `generator=None` means the global random state, as in torch's own functions.

# %% ablation_given nbgrader={"grade": false, "grade_id": "ablation_given", "locked": true, "schema_version": 3, "solution": false}
import copy

torch.set_num_threads(1)  # tiny tensors: one thread is much faster (and the same thread count gives the same floats)

# ---- 给定的代码 / given code: the toy task and the model (do not edit) ----


def order_task(n, T, V, generator=None):
    """n sequences of T tokens: A = 1 and B = 2 once each, fillers in 3..V-1; label 1 iff A comes first."""
    tokens = torch.randint(3, V, (n, T), generator=generator)  # (n, T)  fillers
    pos = torch.rand(n, T, generator=generator).argsort(dim=1)[:, :2]  # (n, 2)  two distinct positions
    rows = torch.arange(n)
    tokens[rows, pos[:, 0]] = 1  # A
    tokens[rows, pos[:, 1]] = 2  # B
    return tokens, (pos[:, 0] < pos[:, 1]).long()  # (n, T), (n,)


def init_classifier(V, d, generator=None):
    """[E, W_q, W_k, W_v, W_1, W_2]: E (V, d), W_q..W_1 (d, d), W_2 (2, d); float32, requires grad."""
    E = torch.randn(V, d, generator=generator)  # (V, d)
    W = [torch.randn(d, d, generator=generator) / math.sqrt(d) for _ in range(4)]  # (d, d) each
    W_2 = torch.randn(2, d, generator=generator) / math.sqrt(d)  # (2, d)
    return [p.requires_grad_() for p in [E, *W, W_2]]


def sinusoidal_encoding(T, d, base=10000.0):
    """(T, d) float32 table, interleaved sin (even columns) / cos (odd columns)."""
    t = torch.arange(T, dtype=torch.float64)[:, None]  # (T, 1)
    angle = t / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)  # (T, d/2)
    pe = torch.empty(T, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = angle.sin(), angle.cos()
    return pe.float()  # (T, d)


def classifier_logits(tokens, params, positional_encoding):
    """tokens (n, T) -> logits (n, 2): embedding (+ PE), bidirectional attention, mean over positions."""
    E, W_q, W_k, W_v, W_1, W_2 = params
    n, T = tokens.shape
    d = E.shape[1]
    X = E[tokens]  # (n, T, d)
    if positional_encoding:
        X = X + sinusoidal_encoding(T, d)  # (n, T, d)  the only place where position enters
    scores = (X @ W_q.T) @ (X @ W_k.T).transpose(1, 2) / math.sqrt(d)  # (n, T, T)  no mask: bidirectional
    H = X + torch.softmax(scores, dim=-1) @ (X @ W_v.T)  # (n, T, d)  residual
    return F.gelu(H @ W_1.T).mean(dim=1) @ W_2.T  # (n, 2)  GELU never dies; the mean forgets the order


# the experiment's base configuration (the notebook's full run: 2 arms x 5 seeds, a few seconds on a CPU)
BASE = {
    "seed": 0,
    "data": {"n_train": 256, "n_test": 512, "seq_len": 8, "vocab_size": 8},
    "model": {"d_model": 16, "positional_encoding": True},
    "train": {"steps": 100, "lr": 0.02},
}

# %% ablation_task_demo
tokens, labels = order_task(4, 6, 8, generator=torch.Generator().manual_seed(0))  # (n, T) = (4, 6), (n,)
for row, y in zip(tokens.tolist(), labels.tolist()):
    print(row, "A before B" if y else "B before A")  # 1 = A, 2 = B


# %% make_ablation_formula [markdown] nbgrader={"grade": false, "grade_id": "make_ablation_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 1. 只差一个因素的配置 / Configurations that differ in one factor `make_ablation`
#
# **公式 / Formula.** 因素 $f$（一个键，或点号路径）和取值 $v_0, \dots, v_{m-1}$（$m \ge 2$，互不相同）：
#
# $$c_i = \text{base}\ \text{with}\ c_i[f] := v_i, \qquad c_i[k] = \text{base}[k] \quad \text{for every other entry } k$$
#
# 返回 $[c_0, \dots, c_{m-1}]$，顺序与 `values` 相同。每个 $c_i$ 是 `base` 的**深拷贝**：改动一个配置（哪怕是嵌套字典里的一项）不会影响别的配置，也不会影响 `base`；`base` 本身不被修改。$f$ 不在 `base` 里（路径的某一段不存在）、少于 2 个值、或有重复的值时引发 `ValueError`。
#
# Returns $[c_0, \dots, c_{m-1}]$ in the order of `values`. Each $c_i$ is a **deep copy** of `base`: changing one config
# (even an entry of a nested dict) changes no other config and not `base`; `base` itself is never modified.
# A factor not in `base` (a part of the path missing), fewer than 2 values or a repeated value raises `ValueError`.

# %% make_ablation nbgrader={"grade": false, "grade_id": "make_ablation", "locked": false, "schema_version": 3, "solution": true}
def make_ablation(base, factor, values):
    """One deep copy of base per value, with only `factor` (a key, or a dotted path "model.d_model") changed."""
    # factor "model.d_model" -> config["model"]["d_model"];  ValueError if the path is not in base
    # ValueError if len(values) < 2 or a value repeats;  returns len(values) dicts, in the order of values
    # 你的代码 / your code
    raise NotImplementedError("make_ablation")


# %% make_ablation_by_hand [markdown] nbgrader={"grade": false, "grade_id": "make_ablation_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand
#
# `base = {"seed": 0, "model": {"d_model": 16, "positional_encoding": True}}`，`factor = "model.d_model"`，`values = [8, 32]`。写出两个配置。然后想一想：如果用 `config = dict(base)`（浅拷贝）代替深拷贝，依次设置 8 和 32 之后，两个配置和 `base` 各是什么？
#
# Write the two configs. Then think: with `config = dict(base)` (a shallow copy) instead of a deep copy, what do the two
# configs and `base` hold after setting 8, then 32?
#
# <details><summary>答案 / Answer</summary>
#
# ```
# 深拷贝 / deep copy:   [{"seed": 0, "model": {"d_model": 8,  "positional_encoding": True}},
#                        {"seed": 0, "model": {"d_model": 32, "positional_encoding": True}}]    base unchanged (16)
# 浅拷贝 / shallow copy: both configs share base["model"]: d_model is 32 in both, and in base
# ```
# </details>

# %% make_ablation_pitfall
# 浅拷贝的陷阱（不用你的函数）/ the shallow-copy pitfall (not your function)
base = {"seed": 0, "model": {"d_model": 16, "positional_encoding": True}}
shallow = []
for v in [8, 32]:
    config = dict(base)  # copies the top level only: config["model"] IS base["model"]
    config["model"]["d_model"] = v
    shallow.append(config)
print([c["model"]["d_model"] for c in shallow], "base:", base["model"]["d_model"])  # [32, 32] base: 32

# %% make_ablation_demo
try:
    for c in make_ablation(BASE, "model.d_model", [8, 32]):
        print(c["model"])
    print("BASE unchanged:", BASE["model"]["d_model"] == 16)
except NotImplementedError:
    print("请先实现 make_ablation，再运行这个单元格。/ Implement make_ablation first, then run this cell again.")

# %% make_ablation_checks [markdown] nbgrader={"grade": false, "grade_id": "make_ablation_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `make_ablation`

# %% test_make_ablation nbgrader={"grade": true, "grade_id": "test_make_ablation", "locked": true, "points": 20, "schema_version": 3, "solution": false}
base = {"seed": 0, "model": {"d_model": 16, "positional_encoding": True}, "train": {"lr": 0.01}}
before = copy.deepcopy(base)
configs = make_ablation(base, "model.d_model", [8, 32])
assert isinstance(configs, list) and len(configs) == 2, "每个值一个配置 / one config per value"
assert [c["model"]["d_model"] for c in configs] == [8, 32], "第 i 个配置取 values[i]，顺序不变 / config i holds values[i], in order"
assert base == before, "base 被修改了 / base was modified"
for c, v in zip(configs, [8, 32]):
    assert c == {"seed": 0, "model": {"d_model": v, "positional_encoding": True}, "train": {"lr": 0.01}}, \
        f"只能改 factor 这一项 / only the factor may change: {c}"
configs[0]["model"]["positional_encoding"] = False
configs[0]["train"]["lr"] = 1.0
assert configs[1]["model"]["positional_encoding"] is True and configs[1]["train"]["lr"] == 0.01 and base == before, \
    "配置之间或与 base 共享了嵌套字典：用 copy.deepcopy / configs share nested dicts with each other or base: use copy.deepcopy"
assert [c["seed"] for c in make_ablation(base, "seed", [3, 1, 2])] == [3, 1, 2], "顶层的键也可以 / top-level keys work too"
for bad in [("model.width", [1, 2]), ("lr", [1, 2]), ("seed.x", [1, 2]), ("model.d_model", [8]), ("model.d_model", [8, 8])]:
    try:
        make_ablation(base, *bad)
    except ValueError:
        pass
    else:
        raise AssertionError(f"make_ablation(base, {bad[0]!r}, {bad[1]}) 应引发 ValueError / should raise ValueError")
print("make_ablation：自测通过 / visible checks passed")


# %% run_experiment_formula [markdown] nbgrader={"grade": false, "grade_id": "run_experiment_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 2. 一次可复现的实验 / One reproducible experiment `run_experiment`
#
# **流程 / Recipe.** 所有随机数来自 $g$ = `torch.Generator().manual_seed(config["seed"])`（不用全局随机状态）：
#
# $$\mathcal{D}_{\text{train}} \sim \text{order\_task}(n_{\text{train}}, T, V; g),\quad
#   \boldsymbol\theta_0 \sim \text{init\_classifier}(V, d; g),\quad
#   \mathcal{D}_{\text{test}} \sim \text{order\_task}(n_{\text{test}}, T, V; g)\ \text{（最后抽 / drawn last）}$$
# $$L_k = \operatorname{CE}\big(\text{logits}(\mathcal{D}_{\text{train}}; \boldsymbol\theta_k), y\big),\quad
#   \boldsymbol\theta_{k+1} = \operatorname{Adam}(\boldsymbol\theta_k, \nabla L_k;\ \text{lr}),\quad k = 0, \dots, \text{steps}-1$$
# $$\text{test\_accuracy} = \frac{1}{n_{\text{test}}} \sum_{(x, y) \in \mathcal{D}_{\text{test}}} [\,\arg\max \text{logits}(x; \boldsymbol\theta_{\text{steps}}) = y\,]$$
#
# - 配置的键 / config keys：`seed`；`data`: `n_train`, `n_test`, `seq_len` ($T$), `vocab_size` ($V$)；`model`: `d_model` ($d$), `positional_encoding`（bool）；`train`: `steps`, `lr`。
# - 每一步用整个训练集（full batch）：`zero_grad()`、`backward()`、`step()`；`train_losses[k]` 是第 $k$ 步更新**之前**的 `loss.item()`。
#
#   Every step uses the whole training set; `train_losses[k]` is `loss.item()` **before** update $k$.
# - 测试集最后抽（或用另一个生成器）：改变 `n_test`，`train_losses` 一个数都不变。训练和测试用同一个 `positional_encoding` 开关。
#
#   Draw the test set last (or from another generator): changing `n_test` leaves `train_losses` unchanged. Training and test use the same flag.
# - 返回 / returns `{"train_losses": [steps floats], "test_accuracy": float in [0, 1]}`；不修改 `config`。Does not modify `config`.

# %% run_experiment nbgrader={"grade": false, "grade_id": "run_experiment", "locked": false, "schema_version": 3, "solution": true}
def run_experiment(config):
    """Train the classifier on the order task, everything drawn from config["seed"]; test set drawn last."""
    # g = torch.Generator().manual_seed(config["seed"]);  X_train (n_train, T), params, then X_test (n_test, T)
    # Adam(params, lr), `steps` full-batch steps;  returns {"train_losses": [...], "test_accuracy": float}
    # 你的代码 / your code
    raise NotImplementedError("run_experiment")


# %% run_experiment_by_hand [markdown] nbgrader={"grade": false, "grade_id": "run_experiment_by_hand", "locked": true, "schema_version": 3, "solution": false}
# ### 动手检查 / Check by hand: 没有位置编码的模型能分开这两个序列吗？/ can the model without positional encoding tell these apart?
#
# $T = 4$：$x = (1, 3, 2, 4)$（A 在前，$y = 1$）和 $x' = (2, 3, 1, 4)$（B 在前，$y = 0$）。写出两者的词元多重集合。不带位置编码的模型对这两个序列给出什么 logits？在只有这两个序列的测试集上，它最多能答对几个？
#
# $x = (1, 3, 2, 4)$ (A first, $y = 1$) and $x' = (2, 3, 1, 4)$ (B first, $y = 0$). Write the multiset of each. Which logits
# does the model without positional encoding give them? On a test set of these two sequences, how many can it get right at most?
#
# <details><summary>答案 / Answer</summary>
#
# 两者的多重集合都是 $\{1, 2, 3, 4\}$，所以 logits 完全相同，预测也相同：两个里恰好对一个（准确率 0.5），无论怎么训练。加上位置编码后，$\mathbf{x}_t = \mathbf{E}[x_t] + \mathbf{PE}_t$ 依赖位置，两个序列才可能得到不同的预测。
#
# Both multisets are $\{1, 2, 3, 4\}$, so the logits are identical and so are the predictions: exactly one of the two is
# right (accuracy 0.5), however the model is trained. With positional encoding, $\mathbf{x}_t = \mathbf{E}[x_t] + \mathbf{PE}_t$
# depends on the position, and only then can the two get different predictions.
# </details>

# %% run_experiment_demo
# 检查上面的答案（不用你的函数）/ check the answer above (not your function)
P = init_classifier(8, 16, generator=torch.Generator().manual_seed(0))
pair = torch.tensor([[1, 3, 2, 4], [2, 3, 1, 4]])  # (n, T) = (2, 4)
with torch.no_grad():
    print("without PE:", classifier_logits(pair, P, False))  # two identical rows
    print("with PE:   ", classifier_logits(pair, P, True))  # two different rows

# %% run_experiment_picture
# 图 / picture: 一次运行的训练曲线 / the training curves of one run per arm
try:
    for pe in (True, False):
        config = copy.deepcopy(BASE)
        config["model"]["positional_encoding"] = pe
        out = run_experiment(config)
        plt.plot(out["train_losses"], label=f"PE={pe}: test accuracy {out['test_accuracy']:.3f}")
    plt.xlabel("step"); plt.ylabel("training loss"); plt.legend(); plt.title("seed 0")
    plt.show()
except NotImplementedError:
    print("请先实现 run_experiment，再运行这个单元格。/ Implement run_experiment first, then run this cell again.")

# %% run_experiment_checks [markdown] nbgrader={"grade": false, "grade_id": "run_experiment_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `run_experiment`

# %% test_run_experiment nbgrader={"grade": true, "grade_id": "test_run_experiment", "locked": true, "points": 50, "schema_version": 3, "solution": false}
small = {"seed": 0, "data": {"n_train": 32, "n_test": 21, "seq_len": 5, "vocab_size": 6},
         "model": {"d_model": 8, "positional_encoding": True}, "train": {"steps": 4, "lr": 0.05}}
before = copy.deepcopy(small)
out = run_experiment(small)
assert isinstance(out, dict) and set(out) >= {"train_losses", "test_accuracy"}, "返回带两个键的 dict / return a dict with both keys"
assert small == before, "config 被修改了 / config was modified"
losses, acc = out["train_losses"], out["test_accuracy"]
assert isinstance(losses, list) and len(losses) == 4 and all(isinstance(v, float) and math.isfinite(v) for v in losses), \
    f"train_losses 应是 steps = 4 个有限的浮点数 / train_losses should be steps = 4 finite floats: {losses}"
assert isinstance(acc, float) and 0 <= acc <= 1 and abs(acc * 21 - round(acc * 21)) < 1e-4, \
    f"test_accuracy 是 n_test = 21 个测试序列上的比例 / test_accuracy is a fraction of the n_test = 21 test sequences: {acc}"
torch.manual_seed(123)
state = torch.get_rng_state()
assert run_experiment(small) == out, "同一个配置应给出同样的结果（不用全局随机状态）/ the same config must give the same result (no global RNG)"
assert torch.equal(torch.get_rng_state(), state),     "run_experiment 改变了全局随机状态（torch.manual_seed 或不带 generator 的抽样）/ run_experiment changed the global random state"
assert run_experiment({**small, "seed": 1})["train_losses"] != losses, "seed 应改变运行 / the seed must change the run"
bigger_test = {**small, "data": {**small["data"], "n_test": 50}}
assert run_experiment(bigger_test)["train_losses"] == losses, \
    "改变 n_test 改变了训练：测试集要最后抽 / changing n_test changed training: draw the test set last"
no_pe = {**small, "model": {**small["model"], "positional_encoding": False}}
assert run_experiment(no_pe)["train_losses"] != losses, "positional_encoding 开关应改变模型 / the flag must change the model"
print("run_experiment：自测通过 / visible checks passed")


# %% run_ablation_formula [markdown] nbgrader={"grade": false, "grade_id": "run_ablation_formula", "locked": true, "schema_version": 3, "solution": false}
# ## 3. 每组都用同一组 seed / Every arm with the same seeds `run_ablation`
#
# **公式 / Formula.** $c_0, \dots, c_{m-1}$ = `make_ablation(base, factor, values)`，seeds $s_0, \dots, s_{S-1}$：
#
# $$r_{ij} = \text{run\_experiment}(c_i \text{ with } \texttt{seed} := s_j), \qquad
#   \bar a_i = \frac1S \sum_j a_{ij}, \quad \text{sd}_i = \sqrt{\frac{1}{S-1}\sum_j (a_{ij} - \bar a_i)^2}$$
#
# 返回 `results`，`results[i][j]` $= r_{ij}$（外层按值，内层按 seed）。同一个 $s_j$ 下，各组的数据和初始化完全相同，所以 $a_{0j} - a_{1j}$ 只来自被消融的因素；对 $j$ 取平均和标准差，看这个差别是否大于 seed 之间的波动。`factor == "seed"`、`seeds` 为空或有重复时引发 `ValueError`（还有 `make_ablation` 的 `ValueError`）。不修改 `base`。
#
# Returns `results` with `results[i][j]` $= r_{ij}$ (values outside, seeds inside). Under the same $s_j$ every arm sees the
# same data and init, so $a_{0j} - a_{1j}$ comes from the ablated factor alone; the mean and sd over $j$ tell whether that
# difference is larger than the spread between seeds. `factor == "seed"`, empty or repeated `seeds` raise `ValueError`
# (as does anything `make_ablation` rejects). Does not modify `base`.

# %% run_ablation nbgrader={"grade": false, "grade_id": "run_ablation", "locked": false, "schema_version": 3, "solution": true}
def run_ablation(base, factor, values, seeds):
    """results[i][j] = run_experiment(config for values[i], with seed seeds[j]): every arm, every seed."""
    # ValueError if factor == "seed" or seeds is empty or repeats;  configs = make_ablation(base, factor, values)
    # returns len(values) lists of len(seeds) result dicts
    # 你的代码 / your code
    raise NotImplementedError("run_ablation")


# %% run_ablation_checks [markdown] nbgrader={"grade": false, "grade_id": "run_ablation_checks", "locked": true, "schema_version": 3, "solution": false}
# ### 🔒 自测 / Visible checks: `run_ablation`

# %% test_run_ablation nbgrader={"grade": true, "grade_id": "test_run_ablation", "locked": true, "points": 20, "schema_version": 3, "solution": false}
small = {"seed": 0, "data": {"n_train": 24, "n_test": 20, "seq_len": 4, "vocab_size": 6},
         "model": {"d_model": 4, "positional_encoding": True}, "train": {"steps": 2, "lr": 0.05}}
before = copy.deepcopy(small)
results = run_ablation(small, "model.positional_encoding", [True, False], [3, 4, 5])
assert small == before, "base 被修改了 / base was modified"
assert len(results) == 2 and all(len(row) == 3 for row in results), \
    "results[i][j]：2 个值 × 3 个 seed / results[i][j]: 2 values x 3 seeds"
for i, pe in enumerate([True, False]):
    for j, s in enumerate([3, 4, 5]):
        want = run_experiment({**small, "seed": s, "model": {"d_model": 4, "positional_encoding": pe}})
        assert results[i][j] == want, f"results[{i}][{j}] 应是 value {pe}、seed {s} 的运行 / should be the run of value {pe} with seed {s}"
for bad in [("seed", [1, 2], [0]), ("model.positional_encoding", [True, False], []),
            ("model.positional_encoding", [True, False], [1, 1])]:
    try:
        run_ablation(small, *bad)
    except ValueError:
        pass
    else:
        raise AssertionError(f"run_ablation(base, {bad[0]!r}, {bad[1]}, {bad[2]}) 应引发 ValueError / should raise ValueError")
print("run_ablation：自测通过 / visible checks passed")

# %% ablation_experiment [markdown] nbgrader={"grade": false, "grade_id": "ablation_experiment", "locked": true, "schema_version": 3, "solution": false}
# ## 4. 实验 / The experiment
#
# 下面的单元格用 `BASE` 做一次消融：因素 `"model.positional_encoding"`，取值 `[True, False]`，5 个 seed（CPU 上几秒钟）。它打印每组每个 seed 的测试准确率、平均值和标准差，并画出来。运行它，然后回答下面的问题。
#
# The cell below runs the ablation on `BASE`: factor `"model.positional_encoding"`, values `[True, False]`, 5 seeds (a few
# seconds on a CPU). It prints each arm's test accuracy per seed, the mean and the sd, and draws them. Run it, then
# answer the questions below.

# %% ablation_experiment_run
# 完整实验约需几秒：只在你运行笔记本时执行；评分器加载笔记本时跳过它（__name__ 不是 "__main__"）。
# The full experiment takes a few seconds: it runs when you run the notebook, and is skipped when the
# grader loads the notebook (there __name__ is not "__main__").
SEEDS = [0, 1, 2, 3, 4]
if __name__ == "__main__":
    try:
        results = run_ablation(BASE, "model.positional_encoding", [True, False], SEEDS)
        for pe, row in zip([True, False], results):
            acc = torch.tensor([r["test_accuracy"] for r in row])  # (S,)
            print(f"positional_encoding={pe!s:5}  accuracy per seed {[round(a, 3) for a in acc.tolist()]}  "
                  f"mean {acc.mean():.3f}  sd {acc.std():.3f}")
            plt.scatter([str(pe)] * len(SEEDS), acc.tolist(), alpha=0.6)
            plt.errorbar([str(pe)], [acc.mean().item()], yerr=[acc.std().item()], fmt="k_", capsize=8, ms=20)
        plt.axhline(0.5, color="gray", ls=":", label="chance")
        plt.xlabel("positional_encoding"); plt.ylabel("test accuracy"); plt.legend(); plt.title("one factor, five seeds")
        plt.show()
        print("seed 0 only:", [round(row[0]["test_accuracy"], 3) for row in results])
    except NotImplementedError:
        print("请先实现 run_ablation，再运行这个单元格。/ Implement run_ablation first, then run this cell again.")

# %% ablation_analysis_prompt [markdown] nbgrader={"grade": false, "grade_id": "ablation_analysis_prompt", "locked": true, "schema_version": 3, "solution": false}
# ## 5. 书面分析 / Written analysis（10 分，手工评分 / 10 points, graded by hand）
#
# 在下面的单元格里用几段话回答（中文或英文均可），引用你的实验打印出的数字：
#
# Answer in a few paragraphs in the cell below (Chinese or English), quoting the numbers your experiment printed:
#
# 1. **改变了什么，保持了什么？** 两组之间唯一的差别是什么？哪些东西被刻意保持相同（数据、初始化、步数、学习率、seed），为什么这很重要？
#
#    **What changed, what was held fixed?** What is the only difference between the arms? What was deliberately kept the
#    same (data, init, steps, learning rate, seeds), and why does that matter?
# 2. **结果说明了什么？** 给出两组的平均准确率和 seed 之间的波动（标准差）；差别是否远大于波动？没有位置编码的那组为什么在 0.5 附近？
#
#    **What does the result show?** Give both arms' mean accuracy and the spread between seeds (sd); is the difference far
#    larger than the spread? Why is the arm without positional encoding near 0.5?
# 3. **结果不能说明什么？** 例如：只用一个 seed 够吗（看看 seed 0 一行）？这个结论能推广到别的任务、别的模型大小、别的训练预算、别的位置编码吗？
#
#    **What does it not show?** For instance: would one seed be enough (look at the seed-0 line)? Does the conclusion
#    carry over to other tasks, model sizes, training budgets, other positional encodings?
#
# 评分 / Rubric：第 1 问 3 分，第 2 问 3 分（要有数字），第 3 问 3 分，清楚、准确 1 分。
#
# Question 1: 3 points, question 2: 3 points (with numbers), question 3: 3 points, clarity and accuracy: 1 point.

# %% ablation_analysis [markdown] nbgrader={"grade": true, "grade_id": "ablation_analysis", "locked": false, "points": 10, "schema_version": 3, "solution": true}
# 在这里写你的分析（中文或英文均可）。/ Write your analysis here (in Chinese or English).

# %% ablation_summary [markdown] nbgrader={"grade": false, "grade_id": "ablation_summary", "locked": true, "schema_version": 3, "solution": false}
# ## 小结 / Summary
#
# - 消融只改一个因素：每个配置是 `base` 的深拷贝，只有 `factor` 不同；浅拷贝会让嵌套字典在配置之间共享。
#
#   An ablation changes one factor: each config is a deep copy of `base` differing at `factor` only; a shallow copy shares nested dicts.
# - 一次运行完全由 seed 决定：私有的 `torch.Generator`，不用全局随机状态；同一个配置给出同样的数。
#
#   A run is fully determined by its seed: a private `torch.Generator`, no global random state; the same config gives the same numbers.
# - 测试集最后抽、只用来评估：它的大小和内容都改变不了训练。The test set is drawn last and only evaluated: neither its size nor its content can change training.
# - 每组用同一组 seed，报告平均值和 seed 之间的波动；一个 seed 不够。
#
#   Every arm uses the same seeds; report the mean and the spread between seeds — one seed is not enough.
