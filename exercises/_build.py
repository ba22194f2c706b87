"""Write the five exercise notebooks from code, so they can be regenerated and reviewed as code.

    .venv/bin/python exercises/_build.py            # rewrite exercises/*.ipynb
    .venv/bin/python exercises/_build.py --check    # exit 1 if a notebook differs from this script

Every notebook follows the same plan (STYLE.md: math right above the code, teach a mask in three
steps): the goal and the information boundary of the topic, the notation, then for each contract
function (docs/contract.md) its formula, a stub to fill in, a check by hand, a picture
where it helps, and visible checks (their nbgrader points add up to the exercise's points in course.yml;
the nbgrader course makes them 0-point self-checks and gives the points to hidden-tests cells, which is
what the how-to text tells students).

Cells carry nbgrader metadata (schema 3):
  instructions (markdown, set-up code)  grade=False solution=False locked=True
  stubs                                 grade=False solution=True  locked=False  grade_id=<function>
  visible checks                        grade=True  solution=False locked=True   grade_id=test_<function>
Check-by-hand and picture cells have none: students may play with them.  They guard against the
stubs' NotImplementedError, so the notebook as released runs down to the visible checks.
The grader (autograder/load) skips the visible checks and runs every other code cell.
"""
import re
import sys
from pathlib import Path

import nbformat
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
COURSE = HERE.parent / "course.yml"

# exercise id -> its contract functions, in data-flow order
EXERCISES = {
    "masks": ["padding_mask", "causal_mask", "attention_mask"],
    "positional_encoding": ["sinusoidal_encoding", "add_positional_encoding"],
    "attention": ["scaled_dot_product_attention", "MultiHeadAttention"],
    "recurrent": ["lstm_cell", "gru_cell", "lstm_sequence"],
    "masked_loss": ["masked_cross_entropy"],
}


def function_points(exercise):
    """Points of each function = the sum of its tests' points in course.yml ("function/property")."""
    tests = yaml.safe_load(COURSE.read_text(encoding="utf-8"))["exercises"][exercise]["tests"]
    points = {}
    for name, cfg in tests.items():
        fn = name.split("/", 1)[0]
        points[fn] = points.get(fn, 0) + cfg["points"]
    return points


# ---------------------------------------------------------------- cells


def _nbgrader(grade_id, *, grade, solution, locked, points=None):
    meta = {"grade": grade, "solution": solution, "locked": locked, "grade_id": grade_id, "schema_version": 3}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def _clean(text):
    return text.strip("\n")


CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef“”‘’]")
BLOCK_START = re.compile(r"^(#|```|\$\$|<|\||[-*] |\d+\. )")  # a line that starts a block
NOT_PROSE = re.compile(r"^(#|```|\$\$|<|\|)")  # a line no paragraph text follows on
CJK_PUNCT = "，。、；：）」”！？"


def _tidy(text):
    """Markdown as it should render: the source is wrapped for review, but a line break inside a
    Chinese sentence would render as a space, so such lines are joined; and a Chinese paragraph
    directly followed by its English twin gets a blank line (or a bare ">" in a quote) between them."""
    out, fence, math = [], False, False
    for line in text.split("\n"):
        s, ps = line.strip(), (out[-1].strip() if out else "")
        plain = not (fence or math) and s and ps and not NOT_PROSE.match(ps) and not BLOCK_START.match(s)
        if plain and CJK.search(ps) and not CJK.search(s):
            out.append(">" if ps.startswith(">") and s.startswith(">") else "")
        elif plain and not s.startswith(">") and CJK.search(s) and (ps[-1] in CJK_PUNCT or CJK.match(ps[-1]) and CJK.match(s[0])):
            out[-1] = out[-1].rstrip() + s
            continue
        out.append(line)
        if s.startswith("```"):
            fence = not fence
        elif not fence and s.count("$$") % 2:
            math = not math
    return "\n".join(out)


def md(grade_id, text):
    """An instruction cell (read-only)."""
    cell = new_markdown_cell(_tidy(_clean(text)), metadata=_nbgrader(grade_id, grade=False, solution=False, locked=True))
    cell.id = grade_id
    return cell


def setup(grade_id, src):
    """Read-only code the student runs but does not edit (imports)."""
    cell = new_code_cell(_clean(src), metadata=_nbgrader(grade_id, grade=False, solution=False, locked=True))
    cell.id = grade_id
    return cell


def stub(function, src):
    """The student's answer cell: one function or class, whose body raises NotImplementedError."""
    cell = new_code_cell(_clean(src), metadata=_nbgrader(function, grade=False, solution=True, locked=False))
    cell.id = function
    return cell


def check(function, points, src):
    """Visible checks of one function (plain asserts on small hand examples)."""
    cell = new_code_cell(_clean(src), metadata=_nbgrader(f"test_{function}", grade=True, solution=False,
                                                         locked=True, points=points))
    cell.id = f"test_{function}"
    return cell


def demo(cell_id, src):
    """A check-by-hand or picture cell: free to edit, no nbgrader metadata."""
    cell = new_code_cell(_clean(src))
    cell.id = cell_id
    return cell


def notebook(cells):
    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    nb.nbformat, nb.nbformat_minor = 4, 5
    return nb


# ---------------------------------------------------------------- shared text

NOTATION = r"""
### 记号与代码约定 / Notation and code convention

标量用小写字母（$t, d, \ell_b$），向量用粗体小写字母，并且是**列向量**（$\mathbf{x}_t \in \mathbb{R}^{d}$），
矩阵用粗体大写字母（$\mathbf{X}, \mathbf{W}$）；上标 $[l]$ 表示第 $l$ 层（$\mathbf{h}^{[l]}_t$），下标 $t$ 表示时间步。
一批数据有 $B$ 个长度为 $T$ 的序列；代码里第 $b$ 个序列第 $t$ 个位置的特征向量存放在 `X[b, t]`，
所以输入的形状是 `(B, T, d)`，位置从 0 开始计数。

Scalars are lower case ($t, d, \ell_b$), vectors bold lower case and **column vectors**
($\mathbf{x}_t \in \mathbb{R}^{d}$), matrices bold upper case ($\mathbf{X}, \mathbf{W}$); the superscript $[l]$ names
the layer ($\mathbf{h}^{[l]}_t$), the subscript $t$ the time step. A batch holds $B$ sequences of length $T$; in code
the feature vector of position $(b, t)$ is stored at `X[b, t]`, so inputs are `(B, T, d)`, positions counted from 0.

> **行约定 / Row convention.** 公式写成列向量形式 $\mathbf{y} = \mathbf{W}\mathbf{x} + \mathbf{b}$；代码沿用 PyTorch 的
> 行约定 `y = x @ W.T + b`（与 `torch.nn.Linear` 相同），所以 $\mathbf{x}_t$ 是矩阵 `X` 的一行。
> Formulas use column vectors, $\mathbf{y} = \mathbf{W}\mathbf{x} + \mathbf{b}$; code follows PyTorch's row convention
> `y = x @ W.T + b`, as `torch.nn.Linear` does, so $\mathbf{x}_t$ is a row of `X`.
"""


def how_to(exercise, points):
    return f"""
### 怎么做 / How to work

1. 从上到下运行单元格。把每个 `raise NotImplementedError` 换成你的代码；不要改函数名和参数。
2. “动手检查”先在纸上算，再运行代码对照；图在函数实现之前只打印提示。
3. 🔒 “自测”单元格本身不计分，但必须全部通过。本练习的 {points:g} 分全部来自隐藏的性质测试：作业评分时，评分器用许多随机的小输入
   检查你的函数，所以自测通过不等于满分。函数不要原地修改输入，也不要依赖其他练习的笔记本。
4. 提交前自查：在这个文件夹里运行 `pytest`，每个函数一行：通过、还没有实现、或没通过以及原因。

1. Run the cells from top to bottom. Replace every `raise NotImplementedError` by your code; keep the names and
   signatures.
2. Work out each "check by hand" on paper first, then run the cell and compare; the pictures only print a hint
   until the function is implemented.
3. The 🔒 "visible checks" score no points themselves, but must all pass. All {points:g} points of this exercise
   come from hidden property tests: when your work is graded, the grader checks your functions on many small random
   inputs, so passing the visible checks does not guarantee full marks. Do not modify inputs in place, and do not
   rely on another exercise's notebook.
4. Before submitting: run `pytest` in this folder, one line per function: passed, not implemented yet, or failed
   and why.
"""


SETUP = """
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)  # 可复现 / reproducible
"""


def not_yet(name):
    return f'print("请先实现 {name}，再运行这个单元格。/ Implement {name} first, then run this cell again.")'


def closing(exercise, text):
    return md(f"{exercise}_summary", text)


# ================================================================= masks


def masks_notebook():
    p = function_points("masks")
    total = sum(p.values())
    return [
        md("masks_intro", r"""
# 练习 1：掩码 / Exercise 1: Masks

**目标 / Goal.** 实现本章所有序列模型都要用到的三个布尔掩码：`padding_mask`（哪些位置是真实词元）、
`causal_mask`（不许看未来）和 `attention_mask`（自注意力用的组合掩码）。
Implement the three boolean masks every sequence model of this chapter uses: `padding_mask` (which positions are
real tokens), `causal_mask` (no looking into the future) and `attention_mask` (the combined mask of self-attention).

**信息边界 / The information boundary.** 掩码写下的是“在时刻 $t$ 做预测时，模型可以看到什么”：
- **填充（padding）绝不能泄漏。** 一批序列长短不一，短的在末尾补齐到长度 $T$。补上的位置不是数据：如果它们影响了真实位置的输出，
  同一个句子放进不同的批次（补齐的长度不同）就会得到不同的结果，损失里也会混进假词元。
- **因果模型不能看未来。** 语言模型在位置 $t$ 预测下一个词元，只能用位置 $0,\dots,t$；如果能看到 $t+1$，
  训练时它只需抄答案，而生成时未来根本还不存在。

A mask writes down *what a prediction at time $t$ may see*:
- **Padding must never leak.** Sequences of a batch have different lengths; the short ones are padded at the end
  to length $T$. Padded positions are not data: if they changed the output at a real position, the same sentence
  would get different results in different batches (with different padding), and the loss would count fake tokens.
- **A causal model must not see the future.** A language model predicting the next token at position $t$ may use
  positions $0, \dots, t$ only; if it could see $t+1$ it would learn to copy the answer during training, and at
  generation time the future does not exist yet.

**约定 / Convention.** 本章的掩码里 `True` = 允许（真实词元 / 可以关注），与 `torch.nn.functional.scaled_dot_product_attention`
的布尔掩码一致。注意 `torch.nn.MultiheadAttention` 的 `attn_mask` / `key_padding_mask` 正好相反（`True` = 屏蔽）。
In this chapter `True` = allowed (a real token / may attend), as in the boolean mask of
`torch.nn.functional.scaled_dot_product_attention`. Beware: `torch.nn.MultiheadAttention`'s `attn_mask` /
`key_padding_mask` mean the opposite (`True` = blocked).

**一个掩码分三步教 / A mask in three steps:** 为什么（信息边界）→ 一个小函数 → 一张图。
Why (the information boundary) → a small function → a picture of it.
"""),
        md("masks_notation", NOTATION),
        md("masks_how_to", how_to("masks", total)),
        setup("masks_setup", SETUP),

        # ------------------------------------------------------------ padding_mask
        md("padding_mask_why", r"""
## 1. 填充掩码 / Padding mask `padding_mask`

**为什么 / Why.** 序列 $b$ 有 $\ell_b$ 个真实词元，后面 $T - \ell_b$ 个位置是填充。之后的每一步（注意力的键、循环网络的状态、
损失）都要知道哪些位置是真的。
Sequence $b$ has $\ell_b$ real tokens followed by $T - \ell_b$ padded positions. Every later step (the keys of
attention, the state of a recurrent network, the loss) needs to know which positions are real.
"""),
        md("padding_mask_formula", r"""
**公式 / Formula.** 对 $b = 0,\dots,B-1$，$t = 0,\dots,T-1$：

$$m_{b,t} = [\, t < \ell_b \,] \qquad (\text{True} = \text{真实词元 / real token})$$

其中 $T$ = `max_len`（若给出），否则 $T = \max_b \ell_b$。长度为负或大于 `max_len` 时引发 `ValueError`。
输出是 `(B, T)` 的 `bool` 张量，放在 `lengths` 所在的设备上。

where $T$ = `max_len` if given, else $T = \max_b \ell_b$. A negative length or a length above `max_len` raises
`ValueError`. The output is a `(B, T)` `bool` tensor on `lengths.device`.

*提示 / Hint:* `torch.arange(T)` 的形状是 `(T,)`，`lengths` 是 `(B,)`；用广播比较 `(1, T)` 和 `(B, 1)`。
`torch.arange(T)` is `(T,)` and `lengths` is `(B,)`; compare `(1, T)` with `(B, 1)` by broadcasting.
"""),
        stub("padding_mask", '''
def padding_mask(lengths, max_len=None):
    """mask[b, t] = (t < lengths[b]); True marks a real token."""
    # lengths: (B,) int  ->  mask: (B, T) bool,  T = max_len if given, else lengths.max()
    # ValueError if a length is < 0 or > max_len
    # 你的代码 / your code
    raise NotImplementedError("padding_mask")
'''),
        md("padding_mask_by_hand", r"""
### 动手检查 / Check by hand

`lengths = [3, 1]`：$B = 2$，没有 `max_len`，所以 $T = \max(3, 1) = 3$。先在纸上写出 $2 \times 3$ 的掩码，再运行下面的单元格。
再想一想：`max_len=4` 时多出的一列是什么？
`lengths = [3, 1]`: $B = 2$, no `max_len`, so $T = \max(3, 1) = 3$. Write the $2 \times 3$ mask on paper, then run
the cell below. What does the extra column look like with `max_len=4`?

<details><summary>答案 / Answer</summary>

```
lengths=[3, 1]            lengths=[3, 1], max_len=4
[[True,  True,  True ],   [[True,  True,  True,  False],
 [True,  False, False]]    [True,  False, False, False]]
```
</details>
"""),
        demo("padding_mask_demo", f"""
try:
    print(padding_mask(torch.tensor([3, 1])))  # (B, T) = (2, 3)
    print(padding_mask(torch.tensor([3, 1]), max_len=4))  # (B, T) = (2, 4)
except NotImplementedError:
    {not_yet("padding_mask")}
"""),
        demo("padding_mask_picture", f"""
# 图 / picture: 行 = 序列 b，列 = 位置 t；亮 = True（真实词元）/ rows = sequences b, columns = positions t; bright = True (real)
try:
    lengths = torch.tensor([5, 3, 1, 4])
    m = padding_mask(lengths, max_len=6)  # (B, T) = (4, 6)
    fig, ax = plt.subplots(figsize=(4, 2.8), layout="constrained")
    ax.imshow(m, cmap="Blues", vmin=0, vmax=1)
    ax.set(xlabel="position t", ylabel="sequence b", title=f"padding_mask, lengths={{lengths.tolist()}}")
    ax.set_xticks(range(6))
    ax.set_yticks(range(4))
    plt.show()
except NotImplementedError:
    {not_yet("padding_mask")}
"""),
        md("padding_mask_checks", "### 🔒 自测 / Visible checks: `padding_mask`"),
        check("padding_mask", p["padding_mask"], '''
m = padding_mask(torch.tensor([3, 1]))
assert isinstance(m, torch.Tensor) and m.dtype == torch.bool, "应返回 bool 张量 / should return a bool tensor"
assert m.shape == (2, 3), f"形状应为 (B, T) = (2, 3)，得到 {tuple(m.shape)} / shape should be (B, T) = (2, 3), got {tuple(m.shape)}"
assert m.tolist() == [[True, True, True], [True, False, False]], f"lengths=[3, 1] 的掩码不对 / wrong mask for lengths=[3, 1]:\\n{m}"
m = padding_mask(torch.tensor([3, 1]), max_len=4)
assert m.tolist() == [[True, True, True, False], [True, False, False, False]], \\
    f"给了 max_len=4 时 T 应为 4 / with max_len=4, T should be 4:\\n{m}"
assert padding_mask(torch.tensor([0, 2])).tolist() == [[False, False], [True, True]], \\
    "长度为 0 的序列全是填充 / a sequence of length 0 is all padding"
for lengths, max_len in [([-1, 2], None), ([5, 1], 4)]:
    try:
        padding_mask(torch.tensor(lengths), max_len=max_len)
    except ValueError:
        pass
    else:
        raise AssertionError(f"lengths={lengths}, max_len={max_len} 应引发 ValueError / should raise ValueError")
print("padding_mask：自测通过 / visible checks passed")
'''),

        # ------------------------------------------------------------ causal_mask
        md("causal_mask_why", r"""
## 2. 因果掩码 / Causal mask `causal_mask`

**为什么 / Why.** 在自注意力里，位置 $i$ 的查询（query）可以和任何位置 $j$ 的键（key）做点积。因果模型要求位置 $i$
的输出只依赖 $\mathbf{x}_0, \dots, \mathbf{x}_i$，所以必须挡住所有 $j > i$ 的键。掩码只依赖 $T$，与内容无关。
In self-attention the query at position $i$ can take a dot product with the key of any position $j$. A causal
model needs the output at position $i$ to depend on $\mathbf{x}_0, \dots, \mathbf{x}_i$ only, so every key $j > i$
must be blocked. The mask depends on $T$ only, not on the content.
"""),
        md("causal_mask_formula", r"""
**公式 / Formula.** 行 $i$ = 查询，列 $j$ = 键 / row $i$ = query, column $j$ = key:

$$m_{ij} = [\, j \le i \,], \qquad i, j = 0, \dots, T-1$$

即包含对角线的下三角矩阵：每个位置可以看自己和过去，不能看未来。输出 `(T, T)` 的 `bool` 张量，建在 `device` 上。
A lower-triangular matrix including the diagonal: each position sees itself and the past, never the future. The
output is a `(T, T)` `bool` tensor built on `device`.
"""),
        stub("causal_mask", '''
def causal_mask(T, device=None):
    """mask[i, j] = (j <= i): query i sees keys 0..i, never the future."""
    # T: int  ->  mask: (T, T) bool on `device`
    # 你的代码 / your code
    raise NotImplementedError("causal_mask")
'''),
        md("causal_mask_by_hand", r"""
### 动手检查 / Check by hand

$T = 3$：第 0 行只能看键 0，第 1 行看键 0、1，第 2 行看全部。先写出来，再运行。
$T = 3$: row 0 sees key 0 only, row 1 keys 0 and 1, row 2 all of them. Write it down, then run the cell.

<details><summary>答案 / Answer</summary>

```
[[True,  False, False],
 [True,  True,  False],
 [True,  True,  True ]]
```
</details>
"""),
        demo("causal_mask_demo", f"""
try:
    print(causal_mask(3))  # (T, T) = (3, 3)
except NotImplementedError:
    {not_yet("causal_mask")}
"""),
        demo("causal_mask_picture", f"""
# 图 / picture: 行 = 查询 i，列 = 键 j；亮 = 可以关注 / rows = queries i, columns = keys j; bright = may attend
try:
    m = causal_mask(6)  # (T, T) = (6, 6)
    fig, ax = plt.subplots(figsize=(3, 3), layout="constrained")
    ax.imshow(m, cmap="Blues", vmin=0, vmax=1)
    ax.set(xlabel="key j", ylabel="query i", title="causal_mask(6)")
    plt.show()
except NotImplementedError:
    {not_yet("causal_mask")}
"""),
        md("causal_mask_checks", "### 🔒 自测 / Visible checks: `causal_mask`"),
        check("causal_mask", p["causal_mask"], '''
m = causal_mask(3)
assert isinstance(m, torch.Tensor) and m.dtype == torch.bool, "应返回 bool 张量 / should return a bool tensor"
assert m.shape == (3, 3), f"形状应为 (T, T) = (3, 3)，得到 {tuple(m.shape)} / shape should be (T, T) = (3, 3), got {tuple(m.shape)}"
assert m.tolist() == [[True, False, False], [True, True, False], [True, True, True]], \\
    f"T=3 的掩码不对 / wrong mask for T=3:\\n{m}"
assert causal_mask(1).tolist() == [[True]], "T=1：唯一的位置可以看自己 / T=1: the only position sees itself"
assert causal_mask(2, device="cpu").device.type == "cpu", "应建在 device 上 / should be built on `device`"
m = causal_mask(5)
assert not m.triu(1).any(), "对角线以上（未来）必须全是 False / above the diagonal (the future) must be all False"
assert m[torch.ones(5, 5, dtype=torch.bool).tril()].all(), \\
    "对角线及以下（过去和现在）必须全是 True / on and below the diagonal (past and present) must be all True"
print("causal_mask：自测通过 / visible checks passed")
'''),

        # ------------------------------------------------------------ attention_mask
        md("attention_mask_why", r"""
## 3. 自注意力掩码 / Self-attention mask `attention_mask`

**为什么 / Why.** 自注意力的分数矩阵是每个序列、每个头一张 $T \times T$ 的表（查询 $i$ × 键 $j$）。查询 $i$ 可以关注键 $j$，
当且仅当键 $j$ 是真实词元，并且（因果模型中）$j \le i$。填充只挡**键**这一轴：填充位置上的查询行照样计算，但它的输出之后不会被使用
（损失会把它屏蔽掉，见练习 5），而把整行都挡住会产生没有任何可关注键的行。
Self-attention scores form a $T \times T$ table (query $i$ × key $j$) per sequence and per head. Query $i$ may
attend to key $j$ iff key $j$ is a real token and, for a causal model, $j \le i$. Padding blocks the **key** axis
only: the query rows at padded positions are still computed, but their outputs are never used (the loss masks them
out, see exercise 5), while blocking whole rows would create rows with no key to attend to.
"""),
        md("attention_mask_formula", r"""
**公式 / Formula.**

$$M_{b,i,j} = m_{b,j} \;\wedge\; [\, j \le i \,]$$

第二项只在 `causal=True` 时出现 / the second factor only when `causal=True`.

其中 $m_{b,j} = [\, j < \ell_b \,]$ 是填充掩码。输出形状 `(B, 1, T, T)`：大小为 1 的第二维会在 $H$ 个头上广播成 `(B, H, T, T)`。
$T$ 的规则与 `padding_mask` 相同。可以在这里调用你上面写好的 `padding_mask` 和 `causal_mask`。
where $m_{b,j} = [\, j < \ell_b \,]$ is the padding mask. The output is `(B, 1, T, T)`: the axis of size 1
broadcasts over the $H$ heads to `(B, H, T, T)`. $T$ follows the rule of `padding_mask`. You may call your
`padding_mask` and `causal_mask` from above.
"""),
        stub("attention_mask", '''
def attention_mask(lengths, max_len=None, causal=False):
    """(B, 1, T, T): key j is a real token and, if causal, j <= i; broadcasts over heads."""
    # lengths: (B,) int  ->  mask: (B, 1, T, T) bool,  mask[b, 0, i, j] = query i may attend to key j
    # 你的代码 / your code
    raise NotImplementedError("attention_mask")
'''),
        md("attention_mask_by_hand", r"""
### 动手检查 / Check by hand

`lengths = [3, 1]`，$T = 3$。写出 `mask[b, 0]`（$3 \times 3$）在 `causal=False` 和 `causal=True` 时的样子。
提示：序列 1 只有键 0 是真实的，所以它的**每一行**都一样。
`lengths = [3, 1]`, $T = 3$. Write `mask[b, 0]` ($3 \times 3$) for `causal=False` and `causal=True`.
Hint: in sequence 1 only key 0 is real, so **every row** of it is the same.

<details><summary>答案 / Answer</summary>

```
causal=False   b=0: [[T, T, T],     b=1: [[T, F, F],
                     [T, T, T],           [T, F, F],
                     [T, T, T]]           [T, F, F]]
causal=True    b=0: [[T, F, F],     b=1: [[T, F, F],
                     [T, T, F],           [T, F, F],
                     [T, T, T]]           [T, F, F]]
```
</details>
"""),
        demo("attention_mask_demo", f"""
try:
    m = attention_mask(torch.tensor([3, 1]), causal=True)
    print(m.shape)  # (B, 1, T, T) = (2, 1, 3, 3)
    print(m[:, 0].int())  # (B, T, T), 1 = may attend
except NotImplementedError:
    {not_yet("attention_mask")}
"""),
        demo("attention_mask_picture", f"""
# 图 / picture: 每个序列一张 T×T 的表 / one T×T table per sequence
try:
    lengths = torch.tensor([6, 3])
    fig, axes = plt.subplots(2, 2, figsize=(6, 6), layout="constrained")
    for row, causal in enumerate([False, True]):
        m = attention_mask(lengths, causal=causal)  # (B, 1, T, T) = (2, 1, 6, 6)
        for b in range(2):
            axes[row, b].imshow(m[b, 0], cmap="Blues", vmin=0, vmax=1)
            axes[row, b].set(title=f"b={{b}}, length={{lengths[b].item()}}, causal={{causal}}",
                             xlabel="key j", ylabel="query i")
    plt.show()
except NotImplementedError:
    {not_yet("attention_mask")}
"""),
        md("attention_mask_checks", "### 🔒 自测 / Visible checks: `attention_mask`"),
        check("attention_mask", p["attention_mask"], '''
m = attention_mask(torch.tensor([3, 1]))
assert isinstance(m, torch.Tensor) and m.dtype == torch.bool, "应返回 bool 张量 / should return a bool tensor"
assert m.shape == (2, 1, 3, 3), f"形状应为 (B, 1, T, T) = (2, 1, 3, 3)，得到 {tuple(m.shape)} / shape should be (B, 1, T, T) = (2, 1, 3, 3), got {tuple(m.shape)}"
assert m[0, 0].all(), "序列 0 没有填充：全部为 True / sequence 0 has no padding: all True"
assert m[1, 0].tolist() == [[True, False, False]] * 3, \\
    f"序列 1 只有键 0 是真实词元（每一行都一样）/ in sequence 1 only key 0 is real (every row alike):\\n{m[1, 0]}"
m = attention_mask(torch.tensor([3, 1]), causal=True)
assert m[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, True]], \\
    f"causal=True：序列 0 应是下三角 / causal=True: sequence 0 should be lower triangular:\\n{m[0, 0]}"
assert m[1, 0].tolist() == [[True, False, False]] * 3, \\
    f"causal=True：序列 1 只能看键 0 / causal=True: sequence 1 sees key 0 only:\\n{m[1, 0]}"
m = attention_mask(torch.tensor([2, 4]), max_len=5, causal=True)
assert m.shape == (2, 1, 5, 5), f"max_len=5 时形状应为 (2, 1, 5, 5) / with max_len=5 the shape should be (2, 1, 5, 5), got {tuple(m.shape)}"
H = 4
assert (m & torch.ones(2, H, 5, 5, dtype=torch.bool)).shape == (2, H, 5, 5), "应能在头的维度上广播 / must broadcast over heads"
print("attention_mask：自测通过 / visible checks passed")
'''),
        closing("masks", r"""
## 小结 / Summary

- `True` = 允许：真实词元 / 可以关注。`True` = allowed: a real token / may attend.
- 填充只挡键这一轴；因果掩码挡住 $j > i$。Padding blocks the key axis; the causal mask blocks $j > i$.
- 形状 `(B, 1, T, T)` 在头上广播。The `(B, 1, T, T)` shape broadcasts over heads.

下一步：练习 3 用这些掩码把注意力权重设为 0，练习 5 用填充掩码计算损失。
Next: exercise 3 uses these masks to set attention weights to 0, exercise 5 uses the padding mask in the loss.
"""),
    ]


# ================================================================= positional_encoding


def positional_encoding_notebook():
    p = function_points("positional_encoding")
    total = sum(p.values())
    return [
        md("positional_encoding_intro", r"""
# 练习 2：正弦位置编码 / Exercise 2: Sinusoidal positional encoding

**目标 / Goal.** 实现 Vaswani et al. (2017) 的正弦位置编码表 `sinusoidal_encoding`，并把它加到一批输入上
（`add_positional_encoding`）。
Implement the sinusoidal positional-encoding table of Vaswani et al. (2017), `sinusoidal_encoding`, and add it
to a batch of inputs (`add_positional_encoding`).

**为什么需要位置 / Why positions.** 自注意力对位置一无所知：把输入序列打乱，输出只是跟着打乱（置换等变）。
“狗咬人”和“人咬狗”在它看来是同一袋词。把位置向量 $\mathbf{p}_t$ 加到 $\mathbf{x}_t$ 上，模型才能区分顺序。
Self-attention knows nothing about positions: permute the input and the output is just permuted the same way
(permutation equivariance); "dog bites man" and "man bites dog" are the same bag of words to it. Adding a position
vector $\mathbf{p}_t$ to $\mathbf{x}_t$ lets the model tell the order.

**信息边界 / The information boundary.** $\mathbf{p}_t$ 只依赖位置 $t$ 和宽度 $d$：不依赖内容，不依赖序列长度 $T$，
也不依赖其他位置。所以位置 $t$ 在任何序列、任何批次里得到同一个向量；加上位置编码不会把未来或填充的信息带到位置 $t$。
$\mathbf{p}_t$ depends on the position $t$ and the width $d$ only: not on the content, not on the sequence length
$T$, not on other positions. So position $t$ gets the same vector in every sequence and every batch; adding it
carries no information from the future or from padding into position $t$.
"""),
        md("positional_encoding_notation", NOTATION),
        md("positional_encoding_how_to", how_to("positional_encoding", total)),
        setup("positional_encoding_setup", SETUP),

        md("sinusoidal_encoding_formula", r"""
## 1. 位置编码表 / The encoding table `sinusoidal_encoding`

**公式 / Formula.** 对位置 $t = 0, \dots, T-1$ 和 $i = 0, \dots, d/2 - 1$，频率 $\omega_i = \text{base}^{-2i/d}$（base = 10000）：

$$P_{t,\,2i} = \sin(\omega_i\, t) = \sin\!\left(\frac{t}{\text{base}^{2i/d}}\right), \qquad
  P_{t,\,2i+1} = \cos(\omega_i\, t) = \cos\!\left(\frac{t}{\text{base}^{2i/d}}\right)$$

**交错排列**：偶数列是 $\sin$，奇数列是 $\cos$，同一个 $i$ 的两列相邻（不是“前一半 sin、后一半 cos”）。
$\mathbf{p}_t$ 是表 $\mathbf{P}$ 的第 $t$ 行。$d$ 为奇数时引发 `ValueError`。返回 `(T, d)` 的 `float32` 张量。
**Interleaved layout**: even columns hold $\sin$, odd columns $\cos$, the two columns of the same $i$ side by side
(not "first half sin, second half cos"). $\mathbf{p}_t$ is row $t$ of the table $\mathbf{P}$. An odd $d$ raises
`ValueError`. Returns a `(T, d)` `float32` tensor.

*提示 / Hint:* `torch.arange(T)[:, None]` 是 `(T, 1)`，`torch.arange(0, d, 2)`（$=2i$）是 `(d/2,)`；
广播得到 `(T, d/2)` 的角度，再用切片 `pe[:, 0::2]`、`pe[:, 1::2]` 写入。
`torch.arange(T)[:, None]` is `(T, 1)` and `torch.arange(0, d, 2)` ($=2i$) is `(d/2,)`; broadcasting gives the
`(T, d/2)` angles, written with the slices `pe[:, 0::2]` and `pe[:, 1::2]`.
"""),
        stub("sinusoidal_encoding", '''
def sinusoidal_encoding(T, d, base=10000.0):
    """(T, d) float32 table: PE[t, 2i] = sin(t / base**(2i/d)), PE[t, 2i+1] = cos(t / base**(2i/d))."""
    # T, d: int (d even, else ValueError)  ->  pe: (T, d) float32
    # 你的代码 / your code
    raise NotImplementedError("sinusoidal_encoding")
'''),
        md("sinusoidal_encoding_by_hand", r"""
### 动手检查 / Check by hand

$T = 2$，$d = 4$：频率 $\omega_0 = 10000^{0} = 1$，$\omega_1 = 10000^{-2/4} = 0.01$。
第 0 行是 $[\sin 0, \cos 0, \sin 0, \cos 0]$；第 1 行是 $[\sin 1, \cos 1, \sin 0.01, \cos 0.01]$。
$T = 2$, $d = 4$: frequencies $\omega_0 = 10000^{0} = 1$, $\omega_1 = 10000^{-2/4} = 0.01$.
Row 0 is $[\sin 0, \cos 0, \sin 0, \cos 0]$; row 1 is $[\sin 1, \cos 1, \sin 0.01, \cos 0.01]$.

<details><summary>答案 / Answer</summary>

```
[[0.0000, 1.0000, 0.0000, 1.0000],
 [0.8415, 0.5403, 0.0100, 0.99995]]
```
</details>
"""),
        demo("sinusoidal_encoding_demo", f"""
try:
    pe = sinusoidal_encoding(2, 4)  # (T, d) = (2, 4)
    print(pe.dtype, tuple(pe.shape))
    print(pe)
except NotImplementedError:
    {not_yet("sinusoidal_encoding")}
"""),
        md("sinusoidal_encoding_rotation", r"""
### 相对位置是一个旋转 / A relative position is a rotation

同一个频率的两列 $(P_{t,2i}, P_{t,2i+1})$ 是单位圆上角度为 $\omega_i t$ 的点。移动 $k$ 个位置就是把它旋转 $\omega_i k$，
旋转矩阵与 $t$ 无关：
The two columns of one frequency, $(P_{t,2i}, P_{t,2i+1})$, are the point at angle $\omega_i t$ on the unit
circle. Moving $k$ positions rotates it by $\omega_i k$, with a matrix that does not depend on $t$:

$$\begin{pmatrix} P_{t+k,\,2i} \\ P_{t+k,\,2i+1} \end{pmatrix}
 = \begin{pmatrix} \cos \omega_i k & \sin \omega_i k \\ -\sin \omega_i k & \cos \omega_i k \end{pmatrix}
   \begin{pmatrix} P_{t,\,2i} \\ P_{t,\,2i+1} \end{pmatrix}$$

所以 $\mathbf{p}_t^\top \mathbf{p}_{t+k} = \sum_i \cos(\omega_i k)$ 只依赖相对距离 $k$（下面右图沿对角线不变）。
Hence $\mathbf{p}_t^\top \mathbf{p}_{t+k} = \sum_i \cos(\omega_i k)$ depends on the offset $k$ only (constant along
the diagonals of the right-hand picture below).
"""),
        demo("sinusoidal_encoding_picture", f"""
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
    {not_yet("sinusoidal_encoding")}
"""),
        md("sinusoidal_encoding_checks", "### 🔒 自测 / Visible checks: `sinusoidal_encoding`"),
        check("sinusoidal_encoding", p["sinusoidal_encoding"], '''
pe = sinusoidal_encoding(2, 4)
assert isinstance(pe, torch.Tensor) and pe.dtype == torch.float32, "应返回 float32 张量 / should return a float32 tensor"
assert pe.shape == (2, 4), f"形状应为 (T, d) = (2, 4)，得到 {tuple(pe.shape)} / shape should be (T, d) = (2, 4), got {tuple(pe.shape)}"
expected = torch.tensor([[0.0, 1.0, 0.0, 1.0],
                         [0.841471, 0.540302, 0.010000, 0.999950]])  # [sin 1, cos 1, sin 0.01, cos 0.01]
assert torch.allclose(pe, expected, atol=1e-5), \\
    f"T=2, d=4 的手算值不对（位置从 0 开始，偶数列 sin、奇数列 cos）/ wrong hand-example values (positions from 0, sin in even columns, cos in odd):\\n{pe}"
pe = sinusoidal_encoding(2, 4, base=100.0)
assert abs(pe[1, 2].item() - math.sin(0.1)) < 1e-5 and abs(pe[1, 3].item() - math.cos(0.1)) < 1e-5, \\
    "base=100 时 ω_1 = 100^(-2/4) = 0.1 / with base=100, ω_1 = 100^(-2/4) = 0.1"
pe = sinusoidal_encoding(50, 8)
assert pe.shape == (50, 8), f"形状应为 (50, 8) / shape should be (50, 8), got {tuple(pe.shape)}"
assert torch.allclose(pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2, torch.ones(50, 4), atol=1e-5), \\
    "相邻两列是同一频率的 sin 和 cos（sin² + cos² = 1）/ neighbouring columns are sin and cos of one frequency (sin² + cos² = 1)"
try:
    sinusoidal_encoding(3, 5)
except ValueError:
    pass
else:
    raise AssertionError("d=5 是奇数，应引发 ValueError / d=5 is odd and should raise ValueError")
print("sinusoidal_encoding：自测通过 / visible checks passed")
'''),

        md("add_positional_encoding_formula", r"""
## 2. 加到输入上 / Adding it to the input `add_positional_encoding`

**公式 / Formula.** 对批次里的每个序列 $b$ 和位置 $t$ / for every sequence $b$ and position $t$ of the batch:

$$\tilde{\mathbf{x}}_{b,t} = \mathbf{x}_{b,t} + \mathbf{p}_t, \qquad \text{即 / i.e.}\quad
  \tilde{\mathbf{X}}_b = \mathbf{X}_b + \mathbf{P}$$

$\mathbf{P}$ = `sinusoidal_encoding(T, d)` 在批次维度上广播；结果保持 `X` 的 dtype 和设备；不缩放 $\mathbf{X}$
（有的实现先乘 $\sqrt{d}$，这里不要）；不要原地修改 `X`。
$\mathbf{P}$ = `sinusoidal_encoding(T, d)` broadcast over the batch; the result keeps `X`'s dtype and device; no
scaling of $\mathbf{X}$ (some implementations multiply by $\sqrt{d}$ first: not here); do not modify `X` in place.
"""),
        stub("add_positional_encoding", '''
def add_positional_encoding(X):
    """X + PE broadcast over the batch, in X's dtype and device; no scaling of X."""
    # X: (B, T, d)  ->  (B, T, d);  PE: (T, d)
    # 你的代码 / your code
    raise NotImplementedError("add_positional_encoding")
'''),
        md("add_positional_encoding_by_hand", r"""
### 动手检查 / Check by hand

`X = torch.zeros(2, 2, 4)`（$B=2, T=2, d=4$）：结果的两个序列都应该等于上面 $T=2, d=4$ 的表。
`X = torch.zeros(2, 2, 4)` ($B=2, T=2, d=4$): both sequences of the result should equal the $T=2, d=4$ table above.
"""),
        demo("add_positional_encoding_demo", f"""
try:
    X = torch.zeros(2, 2, 4)  # (B, T, d)
    print(add_positional_encoding(X))  # (B, T, d), each X[b] + PE
except NotImplementedError:
    {not_yet("add_positional_encoding")}
"""),
        md("add_positional_encoding_checks", "### 🔒 自测 / Visible checks: `add_positional_encoding`"),
        check("add_positional_encoding", p["add_positional_encoding"], '''
X = torch.zeros(2, 2, 4)
Y = add_positional_encoding(X)
assert Y.shape == (2, 2, 4), f"形状应为 (B, T, d) = (2, 2, 4) / shape should be (B, T, d) = (2, 2, 4), got {tuple(Y.shape)}"
expected = torch.tensor([[0.0, 1.0, 0.0, 1.0],
                         [0.841471, 0.540302, 0.010000, 0.999950]])
assert torch.allclose(Y[0], expected, atol=1e-5) and torch.allclose(Y[1], expected, atol=1e-5), \\
    f"每个序列都加上同一张表 / every sequence gets the same table:\\n{Y}"
assert (X == 0).all(), "不要原地修改 X / do not modify X in place"
X = torch.full((3, 2, 4), 2.0, dtype=torch.float64)
Y = add_positional_encoding(X)
assert Y.dtype == torch.float64, f"应保持 X 的 dtype（float64）/ should keep X's dtype (float64), got {Y.dtype}"
assert torch.allclose(Y - 2.0, expected.double().expand(3, 2, 4), atol=1e-5), \\
    "结果应是 X + PE，不缩放 X / the result should be X + PE, X not scaled"
print("add_positional_encoding：自测通过 / visible checks passed")
'''),
        closing("positional_encoding", r"""
## 小结 / Summary

- $P_{t,2i} = \sin(t/\text{base}^{2i/d})$，$P_{t,2i+1} = \cos(t/\text{base}^{2i/d})$，位置从 0 开始，交错排列。
  Positions from 0, interleaved sin/cos columns.
- 编码只依赖 $t$ 和 $d$，相对位移是旋转。The encoding depends on $t$ and $d$ only; an offset is a rotation.
- 加法在批次上广播，保持 dtype 和设备。The addition broadcasts over the batch and keeps dtype and device.
"""),
    ]


# ================================================================= attention


def attention_notebook():
    p = function_points("attention")
    total = sum(p.values())
    return [
        md("attention_intro", r"""
# 练习 3：注意力 / Exercise 3: Attention

**目标 / Goal.** 实现缩放点积注意力 `scaled_dot_product_attention`，再用它搭出多头注意力 `MultiHeadAttention`
（与 `torch.nn.MultiheadAttention` 的计算相同）。
Implement scaled dot-product attention, `scaled_dot_product_attention`, and build multi-head attention,
`MultiHeadAttention`, from it (computing what `torch.nn.MultiheadAttention` computes).

**信息边界 / The information boundary.** 查询 $i$ 的输出是值向量 $\mathbf{v}_j$ 的加权平均。掩码不允许的键 $j$ 权重必须**恰好为 0**，
这样输出（和梯度）就完全不依赖 $\mathbf{x}_j$：用因果掩码时，改变未来的词元不会改变过去的输出；用填充掩码时，改变填充不会改变真实位置的输出。
只给一个很小的权重（例如 $10^{-9}$）仍然是泄漏。
The output of query $i$ is a weighted average of value vectors $\mathbf{v}_j$. A key $j$ the mask forbids must get
weight **exactly 0**, so the output (and its gradient) does not depend on $\mathbf{x}_j$ at all: with a causal mask,
changing future tokens does not change past outputs; with a padding mask, changing padding does not change the
outputs at real positions. A tiny weight (say $10^{-9}$) is still a leak.

掩码的约定与练习 1 相同：`bool`，`True` = 可以关注。这个笔记本不依赖练习 1 的函数，需要掩码时直接用 `torch.tril` 等构造。
Masks follow exercise 1: `bool`, `True` = may attend. This notebook does not depend on exercise 1's functions;
where a mask is needed it is built directly (e.g. with `torch.tril`).
"""),
        md("attention_notation", NOTATION),
        md("attention_how_to", how_to("attention", total)),
        setup("attention_setup", SETUP),

        md("scaled_dot_product_attention_formula", r"""
## 1. 缩放点积注意力 / Scaled dot-product attention `scaled_dot_product_attention`

**公式 / Formula.** 对一个查询 $\mathbf{q}_i \in \mathbb{R}^{d_k}$（列向量）、键 $\mathbf{k}_j$ 和值 $\mathbf{v}_j$：
For one query $\mathbf{q}_i \in \mathbb{R}^{d_k}$ (a column vector), keys $\mathbf{k}_j$ and values $\mathbf{v}_j$:

$$s_{ij} = \frac{\mathbf{q}_i^\top \mathbf{k}_j}{\sqrt{d_k}}, \qquad
  \alpha_{ij} = \frac{m_{ij}\, \exp(s_{ij})}{\sum_{j'} m_{ij'}\, \exp(s_{ij'})}, \qquad
  \mathbf{o}_i = \sum_j \alpha_{ij}\, \mathbf{v}_j$$

$m_{ij} \in \{0, 1\}$ 是掩码（没有掩码时全为 1）。按行堆叠（代码里 $\mathbf{q}_i^\top$ 是 `Q` 的一行）就是
$m_{ij} \in \{0, 1\}$ is the mask (all ones without a mask). Stacked as rows ($\mathbf{q}_i^\top$ is a row of `Q` in
code) this is

$$\mathbf{A} = \operatorname{softmax}_{\text{keys}}\!\left(\frac{\mathbf{Q}\mathbf{K}^\top}{\sqrt{d_k}}\right), \qquad
  \mathbf{O} = \mathbf{A}\mathbf{V}.$$

- 形状：`Q (..., Tq, dk)`、`K (..., Tk, dk)`、`V (..., Tk, dv)`，前面可以有任意多个轴（如 `(B, H)`）；
  返回 `out (..., Tq, dv)` 和 `weights (..., Tq, Tk)`。
  Shapes: `Q (..., Tq, dk)`, `K (..., Tk, dk)`, `V (..., Tk, dv)`, with any number of leading axes (e.g. `(B, H)`);
  returns `out (..., Tq, dv)` and `weights (..., Tq, Tk)`.
- `mask`：`bool`，可广播到 `(..., Tq, Tk)`，`True` = 可以关注；被挡住的键权重恰好为 0。
  `mask`: `bool`, broadcastable to `(..., Tq, Tk)`, `True` = may attend; blocked keys get weight exactly 0.
- 一行里所有键都被挡住时（例如长度为 0 的序列），$\operatorname{softmax}$ 会得到 $0/0$ = NaN。这样的行必须给出有限值
  （输出和梯度里都不能有 NaN 或 inf）；具体取值不评分。
  When every key of a row is blocked (e.g. a sequence of length 0) the softmax gives $0/0$ = NaN. Such a row must
  give finite values (no NaN or inf in the output or the gradient); their exact values are not graded.

*提示 / Hint:* `scores.masked_fill(~mask, float("-inf"))` 然后 `torch.softmax(..., dim=-1)`；之后再把被挡住的位置设为 0。
`scores.masked_fill(~mask, float("-inf"))`, then `torch.softmax(..., dim=-1)`; afterwards set the blocked entries to 0.
"""),
        stub("scaled_dot_product_attention", '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    """softmax(Q K^T / sqrt(dk)) over keys (masked keys get exactly 0), then weights @ V."""
    # Q (..., Tq, dk), K (..., Tk, dk), V (..., Tk, dv), mask bool broadcastable to (..., Tq, Tk)
    # -> out (..., Tq, dv), weights (..., Tq, Tk)
    # 你的代码 / your code
    raise NotImplementedError("scaled_dot_product_attention")
'''),
        md("scaled_dot_product_attention_by_hand", r"""
### 动手检查 / Check by hand: 2×2

$d_k = 4$（所以 $\sqrt{d_k} = 2$），两个查询、两个键（$\mathbf{K} = \mathbf{Q}$），$d_v = 2$：
$d_k = 4$ (so $\sqrt{d_k} = 2$), two queries, two keys ($\mathbf{K} = \mathbf{Q}$), $d_v = 2$:

$$\mathbf{Q} = \mathbf{K} = \begin{pmatrix} 0 & 0 & 0 & 0 \\ 1 & 1 & 0 & 0 \end{pmatrix}, \qquad
  \mathbf{V} = \begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}$$

分数 $\mathbf{Q}\mathbf{K}^\top / 2 = \begin{pmatrix} 0 & 0 \\ 0 & 1 \end{pmatrix}$。第 0 行的权重是 $(\tfrac12, \tfrac12)$；
第 1 行是 $\left(\frac{1}{1+e}, \frac{e}{1+e}\right) \approx (0.2689, 0.7311)$。输出 = 权重 × $\mathbf{V}$。
加上因果掩码 $\begin{pmatrix} 1 & 0 \\ 1 & 1 \end{pmatrix}$ 后，第 0 行变成 $(1, 0)$，它的输出就是 $\mathbf{v}_0$。
Scores $\mathbf{Q}\mathbf{K}^\top / 2 = \begin{pmatrix} 0 & 0 \\ 0 & 1 \end{pmatrix}$. Row 0's weights are
$(\tfrac12, \tfrac12)$; row 1's are $\left(\frac{1}{1+e}, \frac{e}{1+e}\right) \approx (0.2689, 0.7311)$. Output =
weights × $\mathbf{V}$. With the causal mask $\begin{pmatrix} 1 & 0 \\ 1 & 1 \end{pmatrix}$ row 0 becomes $(1, 0)$
and its output is just $\mathbf{v}_0$.

<details><summary>答案 / Answer</summary>

```
weights = [[0.5000, 0.5000],     out = [[2.0000, 3.0000],
           [0.2689, 0.7311]]            [2.4621, 3.4621]]
causal:   [[1.0000, 0.0000],     out = [[1.0000, 2.0000],
           [0.2689, 0.7311]]            [2.4621, 3.4621]]
```
</details>
"""),
        demo("scaled_dot_product_attention_demo", f"""
try:
    Q = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]])  # (Tq, dk) = (2, 4)
    V = torch.tensor([[1.0, 2.0], [3.0, 4.0]])  # (Tk, dv) = (2, 2)
    out, weights = scaled_dot_product_attention(Q, Q, V)
    print("weights", weights, "out", out, sep="\\n")
    causal = torch.ones(2, 2, dtype=torch.bool).tril()  # (Tq, Tk)
    out, weights = scaled_dot_product_attention(Q, Q, V, causal)
    print("causal weights", weights, "causal out", out, sep="\\n")
except NotImplementedError:
    {not_yet("scaled_dot_product_attention")}
"""),
        demo("scaled_dot_product_attention_picture", f"""
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
    {not_yet("scaled_dot_product_attention")}
"""),
        md("scaled_dot_product_attention_checks", "### 🔒 自测 / Visible checks: `scaled_dot_product_attention`"),
        check("scaled_dot_product_attention", p["scaled_dot_product_attention"], '''
Q = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]])  # (Tq, dk) = (2, 4)
V = torch.tensor([[1.0, 2.0], [3.0, 4.0]])  # (Tk, dv) = (2, 2)
out, w = scaled_dot_product_attention(Q, Q.clone(), V)
assert out.shape == (2, 2) and w.shape == (2, 2), f"形状应为 out (Tq, dv), weights (Tq, Tk) / shapes should be out (Tq, dv), weights (Tq, Tk); got {tuple(out.shape)}, {tuple(w.shape)}"
assert torch.allclose(w, torch.tensor([[0.5, 0.5], [0.268941, 0.731059]]), atol=1e-5), \\
    f"手算例子的权重不对（别忘了除以 sqrt(dk) = 2，softmax 沿键的方向）/ wrong hand-example weights (divide by sqrt(dk) = 2, softmax over keys):\\n{w}"
assert torch.allclose(out, torch.tensor([[2.0, 3.0], [2.462117, 3.462117]]), atol=1e-5), f"out = weights @ V 不对 / wrong out:\\n{out}"
causal = torch.tensor([[True, False], [True, True]])
out, w = scaled_dot_product_attention(Q, Q.clone(), V, causal)
assert w[0, 1].item() == 0.0 and abs(w[0, 0].item() - 1.0) < 1e-6, f"被挡住的键权重必须恰好为 0 / a blocked key must get weight exactly 0:\\n{w}"
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
'''),

        md("MultiHeadAttention_formula", r"""
## 2. 多头注意力 / Multi-head attention `MultiHeadAttention`

**公式 / Formula.** $H$ 个头，每个头宽 $d_h = d_{\text{model}} / H$。四个投影 $\mathbf{W}_q, \mathbf{W}_k, \mathbf{W}_v, \mathbf{W}_o
\in \mathbb{R}^{d_{\text{model}} \times d_{\text{model}}}$（带偏置）。头 $h$ 用投影结果的第 $h d_h$ 到 $(h+1) d_h - 1$ 个分量：
$H$ heads of width $d_h = d_{\text{model}} / H$. Four projections $\mathbf{W}_q, \mathbf{W}_k, \mathbf{W}_v,
\mathbf{W}_o \in \mathbb{R}^{d_{\text{model}} \times d_{\text{model}}}$ (with biases). Head $h$ uses components
$h d_h$ to $(h+1) d_h - 1$ of each projection:

$$\mathbf{q}_i = \mathbf{W}_q \mathbf{x}_i + \mathbf{b}_q, \quad
  \mathbf{k}_j = \mathbf{W}_k \mathbf{x}'_j + \mathbf{b}_k, \quad
  \mathbf{v}_j = \mathbf{W}_v \mathbf{x}'_j + \mathbf{b}_v, \qquad
  \mathbf{q}^{(h)}_i = \mathbf{q}_i[h d_h : (h+1) d_h], \ \dots$$

$$\mathbf{o}^{(h)}_i = \operatorname{Attention}\big(\mathbf{q}^{(h)}_i, \{\mathbf{k}^{(h)}_j\}, \{\mathbf{v}^{(h)}_j\}\big), \qquad
  \mathbf{y}_i = \mathbf{W}_o \begin{pmatrix} \mathbf{o}^{(1)}_i \\ \vdots \\ \mathbf{o}^{(H)}_i \end{pmatrix} + \mathbf{b}_o$$

$\mathbf{x}_i$ 来自 `x_q`（查询），$\mathbf{x}'_j$ 来自 `x_kv`（键和值；自注意力时两者相同）。
$\mathbf{x}_i$ comes from `x_q` (queries), $\mathbf{x}'_j$ from `x_kv` (keys and values; the same tensor in self-attention).

- `__init__(d_model, num_heads, bias=True)`：子模块 `W_q, W_k, W_v, W_o`，每个都是 `nn.Linear(d_model, d_model, bias=bias)`；
  `d_model % num_heads != 0` 时引发 `ValueError`。
  Sub-modules `W_q, W_k, W_v, W_o`, each `nn.Linear(d_model, d_model, bias=bias)`; `d_model % num_heads != 0`
  raises `ValueError`.
- `forward(x_q, x_kv, mask=None)`：`x_q (B, Tq, d_model)`，`x_kv (B, Tk, d_model)`，`mask` 可广播到 `(B, H, Tq, Tk)`
  （例如练习 1 的 `(B, 1, T, T)`）；返回 `out (B, Tq, d_model)` 和每个头的 `weights (B, H, Tq, Tk)`（不要在头上取平均）。
  `x_q (B, Tq, d_model)`, `x_kv (B, Tk, d_model)`, `mask` broadcastable to `(B, H, Tq, Tk)` (e.g. exercise 1's
  `(B, 1, T, T)`); returns `out (B, Tq, d_model)` and the per-head `weights (B, H, Tq, Tk)` (not averaged over heads).
- 拆头和 `torch.nn.MultiheadAttention` 一样：`(B, T, d_model)` → `view` → `(B, T, H, dh)` → `transpose` → `(B, H, T, dh)`；合并时反过来。
  Split heads as `torch.nn.MultiheadAttention` does: `(B, T, d_model)` → `view` → `(B, T, H, dh)` → `transpose` →
  `(B, H, T, dh)`; merge them back the reverse way.
"""),
        stub("MultiHeadAttention", '''
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
'''),
        md("MultiHeadAttention_by_hand", r"""
### 动手检查 / Check by hand

把四个投影都设成单位矩阵、没有偏置。若 $H = 1$，多头注意力就是 $\mathbf{x}$ 对自己的注意力：
$\operatorname{softmax}(\mathbf{X}\mathbf{X}^\top / \sqrt{d_{\text{model}}})\,\mathbf{X}$。若 $H = 2$、$d_{\text{model}} = 4$，
头 0 只看第 0、1 列，头 1 只看第 2、3 列，每个头除以 $\sqrt{d_h} = \sqrt{2}$。下面的单元格打印形状和与手算公式的差。
Set all four projections to the identity, without biases. With $H = 1$, multi-head attention is the attention of
$\mathbf{x}$ on itself: $\operatorname{softmax}(\mathbf{X}\mathbf{X}^\top / \sqrt{d_{\text{model}}})\,\mathbf{X}$.
With $H = 2$ and $d_{\text{model}} = 4$, head 0 sees columns 0 and 1 only, head 1 columns 2 and 3, each divided by
$\sqrt{d_h} = \sqrt{2}$. The cell below prints the shapes and the difference from the formula by hand.
"""),
        demo("MultiHeadAttention_demo", f"""
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
        print(f"H={{H}}: out {{tuple(out.shape)}}, weights {{tuple(weights.shape)}}, "
              f"max |out - by hand| = {{(out - by_hand).abs().max().item():.2e}}")
except NotImplementedError:
    {not_yet("MultiHeadAttention")}
"""),
        demo("MultiHeadAttention_picture", f"""
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
        axes[h].set(title=f"head {{h}}", xlabel="key j", ylabel="query i")
    plt.show()
except NotImplementedError:
    {not_yet("MultiHeadAttention")}
"""),
        md("MultiHeadAttention_checks", "### 🔒 自测 / Visible checks: `MultiHeadAttention`"),
        check("MultiHeadAttention", p["MultiHeadAttention"], '''
torch.manual_seed(0)
mha = MultiHeadAttention(8, 2)
assert isinstance(mha, nn.Module), "MultiHeadAttention 应继承 nn.Module / should subclass nn.Module"
for name in ["W_q", "W_k", "W_v", "W_o"]:
    layer = getattr(mha, name, None)
    assert isinstance(layer, nn.Linear) and tuple(layer.weight.shape) == (8, 8) and layer.bias is not None, \\
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
        assert torch.allclose(w[:, h], ref, atol=1e-5), \\
            f"H={H}：头 {h} 应使用第 {h * dh}..{(h + 1) * dh - 1} 列并除以 sqrt(dh) / H={H}: head {h} should use columns {h * dh}..{(h + 1) * dh - 1} and divide by sqrt(dh)"
        assert torch.allclose(out[..., h * dh:(h + 1) * dh], 6 * ref @ xh, atol=1e-4), \\
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
'''),
        closing("attention", r"""
## 小结 / Summary

- $\mathbf{A} = \operatorname{softmax}(\mathbf{Q}\mathbf{K}^\top/\sqrt{d_k})$ 沿键归一化，被挡住的键权重恰好为 0，没有可关注键的行保持有限。
  Softmax over keys, blocked keys get exactly 0, rows with no allowed key stay finite.
- 多头 = 把投影按列切成 $H$ 份，各自做注意力，再并排拼回去乘 $\mathbf{W}_o$。
  Multi-head = split the projections' columns into $H$ parts, attend in each, put them side by side, apply $\mathbf{W}_o$.
"""),
    ]


# ================================================================= recurrent


def recurrent_notebook():
    p = function_points("recurrent")
    total = sum(p.values())
    return [
        md("recurrent_intro", r"""
# 练习 4：循环网络 / Exercise 4: Recurrent networks

**目标 / Goal.** 实现一个 LSTM 单元 `lstm_cell`、一个 GRU 单元 `gru_cell`（权重布局与 `torch.nn.LSTMCell` /
`torch.nn.GRUCell` 完全相同，所以可以直接传入它们的参数），以及在一批补齐的序列上运行 LSTM 的 `lstm_sequence`。
Implement an LSTM cell, `lstm_cell`, and a GRU cell, `gru_cell` (weights laid out exactly as in `torch.nn.LSTMCell`
/ `torch.nn.GRUCell`, so their parameters can be passed in), and `lstm_sequence`, which runs the LSTM over a batch
of padded sequences.

**信息边界 / The information boundary.** 循环天然是因果的：$\mathbf{h}_t$ 只依赖 $\mathbf{x}_0, \dots, \mathbf{x}_t$。
填充是需要我们处理的：长度为 $\ell_b$ 的序列在第 $\ell_b - 1$ 步结束。之后的填充步既**不能更新状态**，也**不能产生输出**
（输出恰好为 0）；最终状态是最后一个有效步之后的状态，与 `torch.nn.LSTM` 处理 `pack_padded_sequence` 的结果一致。
否则同一个句子补齐得越长，它的最终表示就越不一样。
Recurrence is causal by construction: $\mathbf{h}_t$ depends on $\mathbf{x}_0, \dots, \mathbf{x}_t$ only. Padding is
ours to handle: a sequence of length $\ell_b$ ends at step $\ell_b - 1$. The padded steps after it must **not update
the state** and must **not produce outputs** (outputs exactly 0); the final state is the state after the last valid
step, as `torch.nn.LSTM` returns for a `pack_padded_sequence` input. Otherwise the more padding a sentence gets,
the more its final representation changes.

堆叠多层时，第 $l$ 层的输入是第 $l-1$ 层的隐藏状态：$\mathbf{x}^{[l]}_t = \mathbf{h}^{[l-1]}_t$。这里只写一层，省略上标 $[l]$。
When layers are stacked, layer $l$'s input is layer $l-1$'s hidden state: $\mathbf{x}^{[l]}_t = \mathbf{h}^{[l-1]}_t$.
Here we write one layer and drop the superscript $[l]$.
"""),
        md("recurrent_notation", NOTATION),
        md("recurrent_how_to", how_to("recurrent", total)),
        setup("recurrent_setup", SETUP),

        md("lstm_cell_formula", r"""
## 1. LSTM 单元 / LSTM cell `lstm_cell`

**公式 / Formula.** $\sigma$ 是 sigmoid，$\odot$ 是逐元素乘法 / $\sigma$ is the sigmoid, $\odot$ the element-wise product:

$$\begin{aligned}
\mathbf{i}_t &= \sigma(\mathbf{W}_{ii}\mathbf{x}_t + \mathbf{b}_{ii} + \mathbf{W}_{hi}\mathbf{h}_{t-1} + \mathbf{b}_{hi}) &\text{输入门 / input gate}\\
\mathbf{f}_t &= \sigma(\mathbf{W}_{if}\mathbf{x}_t + \mathbf{b}_{if} + \mathbf{W}_{hf}\mathbf{h}_{t-1} + \mathbf{b}_{hf}) &\text{遗忘门 / forget gate}\\
\mathbf{g}_t &= \tanh(\mathbf{W}_{ig}\mathbf{x}_t + \mathbf{b}_{ig} + \mathbf{W}_{hg}\mathbf{h}_{t-1} + \mathbf{b}_{hg}) &\text{候选 / candidate}\\
\mathbf{o}_t &= \sigma(\mathbf{W}_{io}\mathbf{x}_t + \mathbf{b}_{io} + \mathbf{W}_{ho}\mathbf{h}_{t-1} + \mathbf{b}_{ho}) &\text{输出门 / output gate}\\
\mathbf{c}_t &= \mathbf{f}_t \odot \mathbf{c}_{t-1} + \mathbf{i}_t \odot \mathbf{g}_t, \qquad
\mathbf{h}_t = \mathbf{o}_t \odot \tanh(\mathbf{c}_t)
\end{aligned}$$

**权重布局 / Weight layout** (as `torch.nn.LSTMCell`): `W_ih` $= \begin{pmatrix}\mathbf{W}_{ii}\\ \mathbf{W}_{if}\\ \mathbf{W}_{ig}\\ \mathbf{W}_{io}\end{pmatrix}$
是 `(4 d_h, d_in)`，`W_hh` 是 `(4 d_h, d_h)`，`b_ih`、`b_hh` 是 `(4 d_h,)`；门的顺序 **i, f, g, o**。
按行约定，四个门一次算出：`x @ W_ih.T + b_ih + h @ W_hh.T + b_hh` 是 `(B, 4 d_h)`，再切成四块。
is `(4 d_h, d_in)`, `W_hh` is `(4 d_h, d_h)`, `b_ih`, `b_hh` are `(4 d_h,)`; gate order **i, f, g, o**. In the row
convention all four gates come at once: `x @ W_ih.T + b_ih + h @ W_hh.T + b_hh` is `(B, 4 d_h)`, then cut it into
four blocks.
"""),
        stub("lstm_cell", '''
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    """One LSTM step, gates i, f, g, o as torch.nn.LSTMCell: (h, c) -> (h_new, c_new)."""
    # x (B, d_in); state = (h, c), each (B, d_h); W_ih (4 d_h, d_in), W_hh (4 d_h, d_h), b_ih, b_hh (4 d_h,)
    # -> h_new (B, d_h), c_new (B, d_h)
    # 你的代码 / your code
    raise NotImplementedError("lstm_cell")
'''),
        md("lstm_cell_by_hand", r"""
### 动手检查 / Check by hand: $d_{\text{in}} = d_h = 1$

$x = 1$，$h = 0$，$c = 2$；$\mathbf{W}_{ih} = (0, 0, 1, 0)^\top$（只有候选 $g$ 看到输入），$\mathbf{W}_{hh} = \mathbf{0}$，偏置为 0。
于是 $i = f = o = \sigma(0) = 0.5$，$g = \tanh 1 \approx 0.7616$；
$c' = 0.5 \cdot 2 + 0.5 \cdot 0.7616 \approx 1.3808$，$h' = 0.5 \cdot \tanh(1.3808) \approx 0.4406$。
$x = 1$, $h = 0$, $c = 2$; $\mathbf{W}_{ih} = (0, 0, 1, 0)^\top$ (only the candidate $g$ sees the input),
$\mathbf{W}_{hh} = \mathbf{0}$, zero biases. Then $i = f = o = \sigma(0) = 0.5$, $g = \tanh 1 \approx 0.7616$;
$c' = 0.5 \cdot 2 + 0.5 \cdot 0.7616 \approx 1.3808$, $h' = 0.5 \cdot \tanh(1.3808) \approx 0.4406$.
"""),
        demo("lstm_cell_demo", f"""
try:
    x, h, c = torch.tensor([[1.0]]), torch.tensor([[0.0]]), torch.tensor([[2.0]])  # (B, d) = (1, 1)
    W_ih = torch.tensor([[0.0], [0.0], [1.0], [0.0]])  # (4 d_h, d_in): rows i, f, g, o
    h_new, c_new = lstm_cell(x, (h, c), W_ih, torch.zeros(4, 1), torch.zeros(4), torch.zeros(4))
    print(f"c' = {{c_new.item():.4f}} (1.3808),  h' = {{h_new.item():.4f}} (0.4406)")
except NotImplementedError:
    {not_yet("lstm_cell")}
"""),
        md("lstm_cell_checks", "### 🔒 自测 / Visible checks: `lstm_cell`"),
        check("lstm_cell", p["lstm_cell"], '''
x, h, c = torch.tensor([[1.0]]), torch.tensor([[0.0]]), torch.tensor([[2.0]])  # (B, d) = (1, 1)
zeros4 = torch.zeros(4)
h1, c1 = lstm_cell(x, (h, c), torch.tensor([[0.0], [0.0], [1.0], [0.0]]), torch.zeros(4, 1), zeros4, zeros4)
assert h1.shape == (1, 1) and c1.shape == (1, 1), f"h_new, c_new 应为 (B, d_h) = (1, 1) / should be (B, d_h) = (1, 1); got {tuple(h1.shape)}, {tuple(c1.shape)}"
assert abs(c1.item() - 1.380797) < 1e-4, f"手算例子：c' = 0.5·2 + 0.5·tanh(1) ≈ 1.3808 / hand example: c' ≈ 1.3808, got {c1.item():.4f}"
assert abs(h1.item() - 0.440565) < 1e-4, f"手算例子：h' = 0.5·tanh(c') ≈ 0.4406 / hand example: h' ≈ 0.4406, got {h1.item():.4f}"
# pre-activations i=1, f=2, g=3, o=4: c' = σ(2)·2 + σ(1)·tanh(3), h' = σ(4)·tanh(c')
h1, c1 = lstm_cell(x, (h, c), torch.tensor([[1.0], [2.0], [3.0], [4.0]]), torch.zeros(4, 1), zeros4, zeros4)
assert abs(c1.item() - 2.489037) < 1e-4 and abs(h1.item() - 0.968579) < 1e-4, \\
    f"门的顺序应为 i, f, g, o / the gate order should be i, f, g, o (c' = {c1.item():.4f}, expected 2.4890; h' = {h1.item():.4f}, expected 0.9686)"

torch.manual_seed(0)
cell = nn.LSTMCell(3, 5)
x, h, c = torch.randn(2, 3), torch.randn(2, 5), torch.randn(2, 5)
with torch.no_grad():
    h1, c1 = lstm_cell(x, (h, c), cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
    h_ref, c_ref = cell(x, (h, c))
assert h1.shape == (2, 5) and c1.shape == (2, 5), "形状应为 (B, d_h) = (2, 5) / shapes should be (B, d_h) = (2, 5)"
assert torch.allclose(h1, h_ref, atol=1e-5) and torch.allclose(c1, c_ref, atol=1e-5), \\
    "与 torch.nn.LSTMCell 的结果不同 / differs from torch.nn.LSTMCell"
h1, c1 = lstm_cell(x.double(), (h.double(), c.double()), *(p.detach().double() for p in cell.parameters()))
assert h1.dtype == torch.float64 and c1.dtype == torch.float64, f"应保持输入的 dtype（float64）/ should keep the inputs' dtype (float64), got {h1.dtype}"
print("lstm_cell：自测通过 / visible checks passed")
'''),

        md("gru_cell_formula", r"""
## 2. GRU 单元 / GRU cell `gru_cell`

**公式 / Formula** (as `torch.nn.GRUCell`):

$$\begin{aligned}
\mathbf{r}_t &= \sigma(\mathbf{W}_{ir}\mathbf{x}_t + \mathbf{b}_{ir} + \mathbf{W}_{hr}\mathbf{h}_{t-1} + \mathbf{b}_{hr}) &\text{重置门 / reset gate}\\
\mathbf{z}_t &= \sigma(\mathbf{W}_{iz}\mathbf{x}_t + \mathbf{b}_{iz} + \mathbf{W}_{hz}\mathbf{h}_{t-1} + \mathbf{b}_{hz}) &\text{更新门 / update gate}\\
\mathbf{n}_t &= \tanh\big(\mathbf{W}_{in}\mathbf{x}_t + \mathbf{b}_{in} + \mathbf{r}_t \odot (\mathbf{W}_{hn}\mathbf{h}_{t-1} + \mathbf{b}_{hn})\big) &\text{候选 / candidate}\\
\mathbf{h}_t &= (1 - \mathbf{z}_t) \odot \mathbf{n}_t + \mathbf{z}_t \odot \mathbf{h}_{t-1}
\end{aligned}$$

`W_ih` 是 `(3 d_h, d_in)`，`W_hh` 是 `(3 d_h, d_h)`，偏置 `(3 d_h,)`，门的顺序 **r, z, n**。注意 $\mathbf{r}_t$ 乘的是
$\mathbf{W}_{hn}\mathbf{h}_{t-1} + \mathbf{b}_{hn}$（包括偏置 $\mathbf{b}_{hn}$）——这是 PyTorch 的写法，与 Cho et al. (2014) 中先算
$\mathbf{r}_t \odot \mathbf{h}_{t-1}$ 再乘矩阵的写法不同。所以隐藏部分要和输入部分分开算，不能像 LSTM 那样先相加。
`W_ih` is `(3 d_h, d_in)`, `W_hh` is `(3 d_h, d_h)`, biases `(3 d_h,)`, gate order **r, z, n**. Note that
$\mathbf{r}_t$ multiplies $\mathbf{W}_{hn}\mathbf{h}_{t-1} + \mathbf{b}_{hn}$ (bias $\mathbf{b}_{hn}$ included): this
is PyTorch's variant, unlike Cho et al. (2014), who apply $\mathbf{r}_t \odot \mathbf{h}_{t-1}$ before the matrix.
So keep the hidden part apart from the input part instead of adding them first as in the LSTM.
"""),
        stub("gru_cell", '''
def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    """One GRU step, gates r, z, n as torch.nn.GRUCell: h -> h_new."""
    # x (B, d_in), h (B, d_h); W_ih (3 d_h, d_in), W_hh (3 d_h, d_h), b_ih, b_hh (3 d_h,)  ->  h_new (B, d_h)
    # 你的代码 / your code
    raise NotImplementedError("gru_cell")
'''),
        md("gru_cell_by_hand", r"""
### 动手检查 / Check by hand: $d_{\text{in}} = d_h = 1$

$x = 1$，$h = 1$；$\mathbf{W}_{ih} = (0, 0, 1)^\top$，$\mathbf{W}_{hh} = (0, 0, 2)^\top$，偏置为 0。
$r = z = \sigma(0) = 0.5$，$n = \tanh(1 + 0.5 \cdot 2) = \tanh 2 \approx 0.9640$，
$h' = 0.5 \cdot 0.9640 + 0.5 \cdot 1 \approx 0.9820$。
$x = 1$, $h = 1$; $\mathbf{W}_{ih} = (0, 0, 1)^\top$, $\mathbf{W}_{hh} = (0, 0, 2)^\top$, zero biases.
$r = z = \sigma(0) = 0.5$, $n = \tanh(1 + 0.5 \cdot 2) = \tanh 2 \approx 0.9640$,
$h' = 0.5 \cdot 0.9640 + 0.5 \cdot 1 \approx 0.9820$.
"""),
        demo("gru_cell_demo", f"""
try:
    x, h = torch.tensor([[1.0]]), torch.tensor([[1.0]])  # (B, d) = (1, 1)
    W_ih, W_hh = torch.tensor([[0.0], [0.0], [1.0]]), torch.tensor([[0.0], [0.0], [2.0]])  # (3 d_h, d): rows r, z, n
    h_new = gru_cell(x, h, W_ih, W_hh, torch.zeros(3), torch.zeros(3))
    print(f"h' = {{h_new.item():.4f}} (0.9820)")
except NotImplementedError:
    {not_yet("gru_cell")}
"""),
        md("gru_cell_checks", "### 🔒 自测 / Visible checks: `gru_cell`"),
        check("gru_cell", p["gru_cell"], '''
x, h = torch.tensor([[1.0]]), torch.tensor([[1.0]])  # (B, d) = (1, 1)
W_ih, W_hh = torch.tensor([[0.0], [0.0], [1.0]]), torch.tensor([[0.0], [0.0], [2.0]])
h1 = gru_cell(x, h, W_ih, W_hh, torch.zeros(3), torch.zeros(3))
assert h1.shape == (1, 1), f"h_new 应为 (B, d_h) = (1, 1) / h_new should be (B, d_h) = (1, 1), got {tuple(h1.shape)}"
assert abs(h1.item() - 0.982014) < 1e-4, \\
    f"手算例子：n = tanh(1 + r·2) = tanh 2，h' ≈ 0.9820 / hand example: n = tanh(1 + r·2), h' ≈ 0.9820; got {h1.item():.4f}"
# update gate z = σ(2): h' = (1 - z)·n + z·h
h1 = gru_cell(x, h, W_ih, W_hh, torch.tensor([0.0, 2.0, 0.0]), torch.zeros(3))
assert abs(h1.item() - 0.995712) < 1e-4, \\
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
'''),

        md("lstm_sequence_formula", r"""
## 3. 补齐序列上的 LSTM / LSTM over padded sequences `lstm_sequence`

**公式 / Formula.** 设 $m_{b,t} = [\, t < \ell_b \,]$（$\ell_b \ge 1$）。初始状态 $(\mathbf{h}_{b,-1}, \mathbf{c}_{b,-1})$ 是 `state`，
没有给出时为 0。对 $t = 0, \dots, T-1$：
Let $m_{b,t} = [\, t < \ell_b \,]$ ($\ell_b \ge 1$). The initial state $(\mathbf{h}_{b,-1}, \mathbf{c}_{b,-1})$ is
`state`, zeros if not given. For $t = 0, \dots, T-1$:

$$\begin{aligned}
(\tilde{\mathbf{h}}_{b,t}, \tilde{\mathbf{c}}_{b,t}) &= \mathrm{LSTM}\big(\mathbf{x}_{b,t}, (\mathbf{h}_{b,t-1}, \mathbf{c}_{b,t-1})\big)\\
\mathbf{h}_{b,t} &= m_{b,t}\, \tilde{\mathbf{h}}_{b,t} + (1 - m_{b,t})\, \mathbf{h}_{b,t-1}, \qquad
\mathbf{c}_{b,t} = m_{b,t}\, \tilde{\mathbf{c}}_{b,t} + (1 - m_{b,t})\, \mathbf{c}_{b,t-1}\\
\text{outputs}_{b,t} &= m_{b,t}\, \tilde{\mathbf{h}}_{b,t} \qquad (\text{填充步恰好为 0 / exactly 0 at padded steps})
\end{aligned}$$

返回 `outputs (B, T, d_h)` 和 `(h_n, c_n)`，各为 `(B, d_h)`：每个序列在**自己的**最后一个有效步 $\ell_b - 1$ 之后的状态。
Returns `outputs (B, T, d_h)` and `(h_n, c_n)`, each `(B, d_h)`: the state after each sequence's **own** last valid
step $\ell_b - 1$.

*提示 / Hint:* 在时间上循环，每步对整批调用你的 `lstm_cell`，再用 `torch.where(valid, new, old)` 选择，`valid` 是
`(B, 1)` 的 `bool`。用 `torch.where` 而不是乘法：$0 \cdot \infty$ 是 NaN。
Loop over time, call your `lstm_cell` on the whole batch at each step, then choose with
`torch.where(valid, new, old)`, `valid` a `(B, 1)` `bool`. Prefer `torch.where` to multiplication: $0 \cdot \infty$ is NaN.
"""),
        stub("lstm_sequence", '''
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    """Run lstm_cell over (B, T, d_in); padded steps keep the state and output exactly 0."""
    # X (B, T, d_in), lengths (B,) in [1, T], state = (h0, c0) each (B, d_h) or None (zeros)
    # -> outputs (B, T, d_h), (h_n, c_n) each (B, d_h)
    # 你的代码 / your code
    raise NotImplementedError("lstm_sequence")
'''),
        md("lstm_sequence_by_hand", r"""
### 动手检查 / Check by hand

用上面 LSTM 手算例子的权重（$d_{\text{in}} = d_h = 1$），`X = [[1, 1], [1, 5]]`（$B = 2, T = 2$），`lengths = [2, 1]`。
序列 1 只有一步，所以 `outputs[1, 1]` 必须是 0，且 `h_n[1] = outputs[1, 0]`；第 0 步两个序列的输入相同，所以
`outputs[0, 0] = outputs[1, 0]`。初始 $c = 0$ 时第 0 步：$c' = 0.5 \tanh 1 \approx 0.3808$，$h' = 0.5 \tanh(0.3808) \approx 0.1817$。
Use the weights of the LSTM hand example ($d_{\text{in}} = d_h = 1$), `X = [[1, 1], [1, 5]]` ($B = 2, T = 2$),
`lengths = [2, 1]`. Sequence 1 has one step only, so `outputs[1, 1]` must be 0 and `h_n[1] = outputs[1, 0]`; both
sequences have the same input at step 0, so `outputs[0, 0] = outputs[1, 0]`. From $c = 0$, step 0 gives
$c' = 0.5 \tanh 1 \approx 0.3808$, $h' = 0.5 \tanh(0.3808) \approx 0.1817$.
"""),
        demo("lstm_sequence_demo", f"""
try:
    X = torch.tensor([[[1.0], [1.0]], [[1.0], [5.0]]])  # (B, T, d_in) = (2, 2, 1); X[1, 1] is padding
    W_ih = torch.tensor([[0.0], [0.0], [1.0], [0.0]])  # (4 d_h, d_in)
    outputs, (h_n, c_n) = lstm_sequence(X, torch.tensor([2, 1]), W_ih, torch.zeros(4, 1), torch.zeros(4), torch.zeros(4))
    print("outputs[..., 0] =", outputs[..., 0])  # (B, T)
    print("h_n[:, 0] =", h_n[:, 0], " c_n[:, 0] =", c_n[:, 0])  # (B,)
except NotImplementedError:
    {not_yet("lstm_sequence")}
"""),
        demo("lstm_sequence_picture", f"""
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
    for b, l in enumerate(lengths.tolist()):
        ax.plot([l - 0.5, l - 0.5], [b - 0.5, b + 0.5], color="red", linewidth=2)
    ax.set(xlabel="step t", ylabel="sequence b", title=f"lstm_sequence, lengths={{lengths.tolist()}}")
    fig.colorbar(im, ax=ax)
    plt.show()
except NotImplementedError:
    {not_yet("lstm_sequence")}
"""),
        md("lstm_sequence_checks", "### 🔒 自测 / Visible checks: `lstm_sequence`"),
        check("lstm_sequence", p["lstm_sequence"], '''
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
        assert torch.allclose(h_n[b], h[0], atol=1e-5) and torch.allclose(c_n[b], c[0], atol=1e-5), \\
            f"序列 {b} 的最终状态应是第 {int(lengths[b]) - 1} 步之后的状态 / sequence {b}'s final state should be the state after step {int(lengths[b]) - 1}"
    X2 = X.clone()
    X2[1, 2:] = 100.0  # change the padding only
    outputs2, (h_n2, c_n2) = lstm_sequence(X2, lengths, *W)
    assert torch.allclose(outputs2, outputs) and torch.allclose(h_n2, h_n) and torch.allclose(c_n2, c_n), \\
        "改变填充不应改变任何结果 / changing the padding must not change anything"
    h0, c0 = torch.randn(2, 4), torch.randn(2, 4)
    outputs3, _ = lstm_sequence(X, lengths, *W, state=(h0, c0))
    assert torch.allclose(outputs3[:, 0], cell(X[:, 0], (h0, c0))[0], atol=1e-5), "应从给定的 state 开始 / should start from the given state"
    outputs64, (h_n64, _) = lstm_sequence(X.double(), lengths, *(p.double() for p in W))
    assert outputs64.dtype == torch.float64 and h_n64.dtype == torch.float64, \\
        f"应保持 X 的 dtype（float64，初始状态也是）/ should keep X's dtype (float64, the initial state too), got {outputs64.dtype}"
X.requires_grad_(True)
outputs, (h_n, c_n) = lstm_sequence(X, lengths, *W)
h_n[0].sum().backward()
assert X.grad[0, 0].abs().sum() > 0, "梯度要能沿时间传回第 0 步（不要 detach 状态）/ the gradient must flow back to step 0 (do not detach the state)"
print("lstm_sequence：自测通过 / visible checks passed")
'''),
        closing("recurrent", r"""
## 小结 / Summary

- LSTM 门的顺序 i, f, g, o；GRU 门的顺序 r, z, n，$\mathbf{r}_t$ 乘 $\mathbf{W}_{hn}\mathbf{h}_{t-1} + \mathbf{b}_{hn}$。
  LSTM gates i, f, g, o; GRU gates r, z, n, with $\mathbf{r}_t$ multiplying $\mathbf{W}_{hn}\mathbf{h}_{t-1} + \mathbf{b}_{hn}$.
- 填充步不更新状态、输出恰好为 0；最终状态取每个序列自己的最后一个有效步。
  Padded steps keep the state and output exactly 0; the final state is taken at each sequence's own last valid step.
"""),
    ]


# ================================================================= masked_loss


def masked_loss_notebook():
    p = function_points("masked_loss")
    total = sum(p.values())
    return [
        md("masked_loss_intro", r"""
# 练习 5：带掩码的损失 / Exercise 5: Masked loss

**目标 / Goal.** 实现 `masked_cross_entropy`：只在真实词元上取平均的交叉熵。
Implement `masked_cross_entropy`: the cross-entropy averaged over real tokens only.

**信息边界 / The information boundary.** 填充位置不是数据。它们的目标（target）可以是任意整数（常见的是 -100、0 或填充符号的编号，
甚至 $\ge V$），它们的 logits 可以是任意值——甚至是 NaN 或 inf（例如来自一个没有可关注键的注意力行）。
填充也不一定在末尾（左填充、中间被屏蔽的词元），只有 `mask` 说了算。损失和它的梯度都不能受它们影响；每个真实词元的权重相同，所以除以**真实词元的个数**，而不是 $B \cdot T$，也不是先对每个序列求平均。
Padded positions are not data. Their targets may hold any integer (often -100, 0 or the pad id, even $\ge V$) and
their logits any value, even NaN or inf (from an attention row with no allowed key, say). Neither the loss nor its
gradient may depend on them. Padding need not be at the end (left padding, tokens masked in the middle): only `mask` decides. Every real token counts the same, so divide by the **number of real tokens**, not by
$B \cdot T$, and do not average each sequence first.
"""),
        md("masked_loss_notation", NOTATION),
        md("masked_loss_how_to", how_to("masked_loss", total)),
        setup("masked_loss_setup", SETUP),

        md("masked_cross_entropy_formula", r"""
## 带掩码的交叉熵 / Masked cross-entropy `masked_cross_entropy`

**公式 / Formula.** 位置 $(b, t)$ 的 logits 是 $\mathbf{z}_{b,t} \in \mathbb{R}^V$（原始分数，**没有**经过 softmax），目标是
$y_{b,t}$，掩码 $m_{b,t}$（True = 真实词元）：
The logits of position $(b, t)$ are $\mathbf{z}_{b,t} \in \mathbb{R}^V$ (raw scores, **no** softmax applied), the
target is $y_{b,t}$ and the mask $m_{b,t}$ (True = real token):

$$\ell_{b,t} = -\log \frac{\exp(z_{b,t,y_{b,t}})}{\sum_{v} \exp(z_{b,t,v})}
            = \log \sum_v \exp(z_{b,t,v}) - z_{b,t,y_{b,t}}, \qquad
  L = \frac{\sum_{b,t} m_{b,t}\, \ell_{b,t}}{\sum_{b,t} m_{b,t}}$$

- 形状 / shapes: `logits (B, T, V)`, `targets (B, T)` int64, `mask (B, T)` bool → 标量 / a scalar `()`.
- **数值稳定 / Stable:** $|z| \approx 10^4$ 时 $\exp$ 会溢出。用 $\log\sum\exp$ 的稳定写法（先减去最大值），例如 `torch.logsumexp`、
  `F.log_softmax` 或直接把 logits 交给 `F.cross_entropy`。不要先做 softmax 再取 log。
  With $|z| \approx 10^4$, $\exp$ overflows. Use a stable $\log\sum\exp$ (subtract the maximum first), e.g.
  `torch.logsumexp`, `F.log_softmax`, or hand the logits to `F.cross_entropy`. Do not take a softmax and then a log.
- **先选再算 / Select first:** 公式里的 $m_{b,t}\,\ell_{b,t}$ 不能照字面用乘法实现：$0 \cdot \text{NaN} = \text{NaN}$，
  而越界的目标会让索引出错。先取出真实位置，再计算。
  Do not implement $m_{b,t}\,\ell_{b,t}$ literally as a product: $0 \cdot \text{NaN} = \text{NaN}$, and an
  out-of-range target breaks the indexing. Take out the real positions first, then compute.
- 没有任何真实词元时（$\sum m = 0$）引发 `ValueError`。/ No real token at all ($\sum m = 0$) raises `ValueError`.
"""),
        stub("masked_cross_entropy", '''
def masked_cross_entropy(logits, targets, mask):
    """Cross-entropy of raw logits, summed over valid tokens and divided by their number."""
    # logits (B, T, V) raw scores, targets (B, T) int64, mask (B, T) bool (True = valid)  ->  scalar ()
    # ValueError if mask has no True
    # 你的代码 / your code
    raise NotImplementedError("masked_cross_entropy")
'''),
        md("masked_cross_entropy_by_hand", r"""
### 动手检查 / Check by hand: 两个词元 / two tokens

$B = 1$，$T = 3$，$V = 2$，掩码 $(1, 1, 0)$：
- 词元 0：logits $(0, 0)$，目标 0 → $p = \tfrac12$，$\ell = \ln 2 \approx 0.6931$；
- 词元 1：logits $(\ln 3, 0)$，目标 0 → $p = \tfrac{3}{3+1} = \tfrac34$，$\ell = \ln \tfrac43 \approx 0.2877$；
- 位置 2 是填充：logits 是 NaN，目标是 -100——都不能产生影响。

$L = (0.6931 + 0.2877) / 2 \approx 0.4904$。

$B = 1$, $T = 3$, $V = 2$, mask $(1, 1, 0)$:
- token 0: logits $(0, 0)$, target 0 → $p = \tfrac12$, $\ell = \ln 2 \approx 0.6931$;
- token 1: logits $(\ln 3, 0)$, target 0 → $p = \tfrac{3}{3+1} = \tfrac34$, $\ell = \ln \tfrac43 \approx 0.2877$;
- position 2 is padding: NaN logits, target -100, neither may matter.

$L = (0.6931 + 0.2877) / 2 \approx 0.4904$.
"""),
        demo("masked_cross_entropy_demo", f"""
nan = float("nan")
logits = torch.tensor([[[0.0, 0.0], [math.log(3.0), 0.0], [nan, nan]]])  # (B, T, V) = (1, 3, 2)
targets = torch.tensor([[0, 0, -100]])  # (B, T)
mask = torch.tensor([[True, True, False]])  # (B, T)
try:
    print(f"loss = {{masked_cross_entropy(logits, targets, mask).item():.4f}} (0.4904)")
except NotImplementedError:
    {not_yet("masked_cross_entropy")}
"""),
        md("masked_cross_entropy_pitfall", r"""
### 为什么不能先算再乘掩码 / Why not compute everything and multiply by the mask

下面的单元格不用你的函数：它对所有位置计算交叉熵（把 -100 换成 0 以免索引出错），再乘以掩码。填充位置的 NaN 穿过了乘法。
The cell below does not use your function: it computes the cross-entropy at every position (replacing -100 by 0 so
the indexing works), then multiplies by the mask. The NaN of the padded position goes straight through the product.
"""),
        demo("masked_cross_entropy_pitfall_code", """
every = F.cross_entropy(logits.reshape(-1, 2), targets.clamp(min=0).reshape(-1), reduction="none")  # (B*T,)
print("per-token loss:", every)
print("multiplied by the mask:", (every * mask.reshape(-1)).sum() / mask.sum())  # nan: 0 * nan = nan
"""),
        md("masked_cross_entropy_checks", "### 🔒 自测 / Visible checks: `masked_cross_entropy`"),
        check("masked_cross_entropy", p["masked_cross_entropy"], '''
nan = float("nan")
logits = torch.tensor([[[0.0, 0.0], [math.log(3.0), 0.0], [nan, nan]]])  # (B, T, V) = (1, 3, 2)
targets = torch.tensor([[0, 0, -100]])
mask = torch.tensor([[True, True, False]])
loss = masked_cross_entropy(logits, targets, mask)
assert isinstance(loss, torch.Tensor) and loss.shape == (), f"应返回标量张量 / should return a scalar tensor, got {loss!r}"
assert abs(loss.item() - 0.490415) < 1e-5, \\
    f"手算例子：(ln 2 + ln 4/3) / 2 ≈ 0.4904（填充不能参与）/ hand example: (ln 2 + ln 4/3) / 2 ≈ 0.4904 (padding must not count); got {loss.item():.4f}"

left = masked_cross_entropy(logits.flip(1), targets.flip(1), mask.flip(1))  # left padding: mask [False, True, True]
assert abs(left.item() - 0.490415) < 1e-5, \\
    f"mask 可以是任意形状（例如左填充），直接用 mask 选位置 / the mask may be any pattern (e.g. left padding): select with the mask itself; got {left.item():.4f}"

logits.requires_grad_(True)
masked_cross_entropy(logits, torch.tensor([[0, 0, 99]]), mask).backward()
assert torch.isfinite(logits.grad).all() and (logits.grad[0, 2] == 0).all(), \\
    f"填充位置的梯度必须恰好为 0 且不能有 NaN / the gradient at padded positions must be exactly 0, no NaN:\\n{logits.grad}"

logits = torch.zeros(2, 3, 4)  # (B, T, V)
logits[1, :, 0] = 10.0
targets = torch.zeros(2, 3, dtype=torch.long)
mask = torch.tensor([[True, False, False], [True, True, True]])  # lengths 1 and 3
expected = (math.log(4.0) + 3 * math.log(1 + 3 * math.exp(-10.0))) / 4  # 4 valid tokens, each counts once
loss = masked_cross_entropy(logits, targets, mask)
assert abs(loss.item() - expected) < 1e-5, \\
    f"除以真实词元的个数（4），不是 B·T，也不是按序列平均 / divide by the number of valid tokens (4), not B·T, not per sequence; got {loss.item():.4f}, expected {expected:.4f}"

loss = masked_cross_entropy(torch.tensor([[[1e4, 0.0, -1e4]]]), torch.tensor([[1]]), torch.tensor([[True]]))
assert torch.isfinite(loss) and abs(loss.item() - 1e4) < 1e-2, \\
    f"logits 很大时也要稳定（logsumexp）/ must stay stable for large logits (logsumexp); got {loss.item()}, expected 10000"
try:
    masked_cross_entropy(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 2, dtype=torch.bool))
except ValueError:
    pass
else:
    raise AssertionError("没有真实词元时应引发 ValueError / no valid token should raise ValueError")
print("masked_cross_entropy：自测通过 / visible checks passed")
'''),
        closing("masked_loss", r"""
## 小结 / Summary

- 直接用 logits，稳定地算 $\log\sum\exp$。Use raw logits and a stable $\log\sum\exp$.
- 先选出真实词元再计算；除以真实词元的个数。Select the real tokens first; divide by their number.
- 填充的目标、logits（哪怕是 NaN）都不影响损失和梯度。Padded targets and logits (even NaN) affect neither the loss nor the gradient.
"""),
    ]


BUILDERS = {
    "masks": masks_notebook,
    "positional_encoding": positional_encoding_notebook,
    "attention": attention_notebook,
    "recurrent": recurrent_notebook,
    "masked_loss": masked_loss_notebook,
}


def _load_extra(filename="_build_extra.py"):
    """The rest of the chapter (issue 6): its builders live in _build_extra.py (and the ablation's in
    _build_ablation.py) and use the helpers above."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"exercises{filename[:-3]}", HERE / filename)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.bind(globals())
    return mod


_EXTRA = _load_extra()
_ABLATION = _load_extra("_build_ablation.py")
for _mod in (_EXTRA, _ABLATION):
    EXERCISES.update(_mod.EXERCISES)
    BUILDERS.update(_mod.BUILDERS)


def build(exercise):
    """The notebook of one exercise (validated)."""
    nb = notebook(BUILDERS[exercise]())
    nbformat.validate(nb)
    return nb


def render(exercise):
    return nbformat.writes(build(exercise)) + "\n"


def main(argv):
    check_only = "--check" in argv
    stale = []
    for ex in EXERCISES:
        path = HERE / f"{ex}.ipynb"
        text = render(ex)
        if check_only:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(HERE.parent)}")
    if stale:
        print(f"out of date (run .venv/bin/python exercises/_build.py): {', '.join(stale)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
