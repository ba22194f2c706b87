"""Hidden properties of the `bert_masking` exercise: special_tokens_mask, mlm_mask.

    selectable = not one of special_ids (padding, [CLS], [SEP], [MASK], ...)
    selected   ~ Bernoulli(0.15), each selectable token on its own
    a selected token becomes mask_id (80%), a uniform random id in [0, V) (10%) or stays (10%)
    labels     = the original token where selected, -100 everywhere else
    randomness = torch.Generator().manual_seed(seed): the same seed gives the same result, and the
                 global random state (torch's, numpy's, random's) is left alone

Two kinds of properties.  Structural ones hold for every draw and are checked exactly on small
batches (a shrunk counterexample is readable): labels are -100 or the original token, an
unselected token is never changed, special tokens are never selected, the same seed gives the
same output.  Statistical ones are checked on large batches (>= 12288 tokens) against exact
binomial bounds:

* The bound.  For X ~ Binomial(n, p) the grader computes, from the exact binomial distribution
  (log-pmf through lgamma, summed in float64 from the small end), the interval [lo, hi] with
  P(X < lo) <= DELTA / 2 and P(X > hi) <= DELTA / 2, DELTA = 1e-9 (`binomial_interval`), and
  fails the check only outside it.  Counts taken conditionally (replacements among the S
  selected tokens) are Binomial(S, p) given S, because the replacement of a token is drawn
  independently of which tokens were selected; the interval is computed for the observed S.
* Lower bounds too.  Upper bounds alone let a distribution with a hole pass (randint(0, V - 1)
  never draws V - 1): `random_tokens_reach_every_id` gives every non-special id v a lower bound.
  Given the selection, a selected token whose original is not v becomes v exactly when its fate is
  "random" and the draw is v, probability 0.1 / V (0.1 / (V - #special) for code that draws the
  ordinary ids only: the bound is computed at the smaller one), independently: Binomial(S_v, p_v).
  The check fails only below the lower end with P <= DELTA / #ids per id.  It needs a small
  vocabulary (V <= 8) in a large batch (32768 tokens): each id is then expected ~40 times and the
  bound sits at ~9, while a hole gives 0.
* False rejection.  Correct code fails one check with probability <= DELTA = 1e-9.  A grading
  runs each statistical property on 20 generated + 4 pinned examples at most with at most 3 checks each
  (the uniformity checks use DELTA / V per token id, a union bound over the V ids), so at most
  4 x 24 x 3 = 288 checks: a correct submission loses points with probability < 2.9e-7.  The
  bounds allow for a random replacement that happens to draw mask_id or the original token
  (each with probability 1/V), and for code that draws random ids from the non-special ids only.
* Power.  With >= 9800 selectable tokens (S ~ 1470 selected) the catalogued mistakes sit 8 to
  100 standard deviations outside the interval (e.g. 2% random replacements instead of 10%:
  ~29 of them where the bound starts near 80).
"""
import math

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ...properties._harness import check_equal, check_global_state_untouched, check_tensor, fail, prop, unpack
from ...properties.strategies import sizes

EX = "bert_masking"
SPECIAL, MLM = "special_tokens_mask", "mlm_mask"
IGNORE = -100
P_SELECT, P_MASK, P_RANDOM, P_KEEP = 0.15, 0.8, 0.1, 0.1
DELTA = 1e-9  # false-rejection probability of one statistical check (see the module docstring)
seeds = st.integers(0, 2 ** 31 - 1)


# ---------------------------------------------------------------- the binomial bound


def binomial_interval(n, p, delta=DELTA, upper_only=False):
    """[lo, hi] with P(X < lo) <= delta/2 and P(X > hi) <= delta/2 for X ~ Binomial(n, p), exactly.

    With `upper_only`, lo = 0 and P(X > hi) <= delta."""
    n = int(n)
    if n == 0 or p <= 0:
        return 0, 0
    if p >= 1:
        return n, n
    k = torch.arange(n + 1, dtype=torch.float64)
    logpmf = (math.lgamma(n + 1) - torch.lgamma(k + 1) - torch.lgamma(n - k + 1)
              + k * math.log(p) + (n - k) * math.log1p(-p))
    pmf = logpmf.exp()
    side = delta if upper_only else delta / 2
    below = torch.cumsum(pmf, 0)  # below[k] = P(X <= k), small terms first
    above = torch.flip(torch.cumsum(torch.flip(pmf, [0]), 0), [0])  # above[k] = P(X >= k)
    lo = 0 if upper_only else int((below <= side).sum())  # P(X < lo) = below[lo - 1] <= side
    gt = torch.cat([above[1:], above.new_zeros(1)])  # gt[k] = P(X > k)
    hi = int((gt > side).sum())  # the smallest k with P(X > k) <= side
    return lo, hi


# ---------------------------------------------------------------- inputs


def _batch(B, T, V, special_ids, seed, min_len=None):
    """(B, T) int64 BERT-like rows: [CLS] tokens ... [SEP] then padding; lengths in [min_len, T].

    special_ids = (pad, cls, sep, mask, ...); ordinary tokens are uniform over the other ids."""
    g = torch.Generator().manual_seed(int(seed))
    pad, cls, sep = special_ids[0], special_ids[1], special_ids[2]
    ordinary = torch.tensor([i for i in range(V) if i not in set(special_ids)])
    ids = ordinary[torch.randint(0, len(ordinary), (B, T), generator=g)]
    lo = T if min_len is None else min(min_len, T)
    lengths = torch.randint(lo, T + 1, (B,), generator=g)
    t = torch.arange(T)[None, :]
    ids = torch.where(t == 0, torch.full_like(ids, cls), ids)
    ids = torch.where(t == lengths[:, None] - 1, torch.full_like(ids, sep), ids)
    ids = torch.where(t >= lengths[:, None], torch.full_like(ids, pad), ids)
    return ids


class Case:
    """One call of mlm_mask: input_ids (B, T), special_ids, mask_id, V, seed."""

    def __init__(self, input_ids, special_ids, mask_id, V, seed):
        self.input_ids, self.special_ids, self.mask_id, self.V, self.seed = \
            input_ids, list(special_ids), mask_id, V, seed

    def args(self):
        return self.input_ids, self.special_ids, self.mask_id, self.V, self.seed

    def show(self, **more):
        return {"input_ids": self.input_ids, "special_ids": self.special_ids, "mask_id": self.mask_id,
                "vocab_size": self.V, "seed": self.seed, **more}

    def __repr__(self):
        B, T = self.input_ids.shape
        return f"Case(B={B}, T={T}, special_ids={self.special_ids}, mask_id={self.mask_id}, V={self.V}, seed={self.seed})"


@st.composite
def special_id_sets(draw, V):
    """(pad, cls, sep, mask) distinct ids in [0, V), as BERT's 0, 101, 102, 103 or anywhere."""
    if draw(st.booleans()) and V > 103:
        return [0, 101, 102, 103]
    return draw(st.lists(st.integers(0, V - 1), min_size=4, max_size=4, unique=True))


@st.composite
def small_cases(draw):
    """Small batches (B <= 6, T <= 24) with padding: for the exact, structural properties."""
    V = draw(st.sampled_from([8, 30, 200, 30522]))
    special = draw(special_id_sets(V))
    B, T = draw(sizes(1, 6)), draw(sizes(1, 24))
    ids = _batch(B, T, V, special, draw(seeds), min_len=draw(st.integers(0, T)))
    return Case(ids, special, special[3], V, draw(seeds))


@st.composite
def large_cases(draw):
    """Large batches (>= 12288 tokens, >= 9800 selectable) for the statistical properties."""
    V = draw(st.sampled_from([60, 200, 1000, 30522]))
    special = draw(special_id_sets(V))
    B, T = draw(st.sampled_from([64, 96, 128])), draw(st.sampled_from([192, 256]))
    ids = _batch(B, T, V, special, draw(seeds), min_len=T * 7 // 8)
    return Case(ids, special, special[3], V, draw(seeds))


def _large(B, T, V, special, seed, data_seed=1, min_len=None):
    min_len = T * 7 // 8 if min_len is None else min_len
    return Case(_batch(B, T, V, special, data_seed, min_len=min_len), special, special[3], V, seed)


def _small(rows, special=(0, 1, 2, 3), V=30, seed=0):
    return Case(torch.tensor(rows, dtype=torch.int64), special, special[3], V, seed)


BERT = [0, 101, 102, 103]


# ---------------------------------------------------------------- calls


def _special_ref(ids, special_ids):
    return torch.isin(ids, torch.tensor(special_ids, dtype=ids.dtype))


def _call_mlm(student, c):
    inputs, labels = unpack(student.call(MLM, *c.args()), 2, MLM, student)
    shape = tuple(c.input_ids.shape)
    for x, what in ((inputs, "inputs"), (labels, "labels")):
        check_tensor(x, what, shape=shape, student=student)
        if x.dtype != torch.int64:
            fail(f"{what} 的 dtype 应为 torch.int64（与 input_ids 相同），实际为 {x.dtype}。",
                 f"{what} should have dtype torch.int64 (as input_ids), got {x.dtype}.", student=student,
                 show=c.show(), hint_zh="用 torch.where / torch.full_like(input_ids, ...) 组装，不要经过浮点。",
                 hint_en="Build them with torch.where / torch.full_like(input_ids, ...), never through floats.")
    return inputs.detach(), labels.detach()


def _selected(labels):
    return labels != IGNORE


# ---------------------------------------------------------------- special_tokens_mask

@prop(EX, SPECIAL, "marks_special_tokens",
      zh="special_tokens_mask(input_ids, special_ids)[b, t] 为 True 当且仅当 input_ids[b, t] 是 special_ids 之一；形状 (B, T)，bool",
      en="special_tokens_mask(input_ids, special_ids)[b, t] is True exactly when input_ids[b, t] is one of "
         "special_ids; shape (B, T), bool")
@given(c=small_cases())
@example(c=_small([[1, 7, 8, 2, 0, 0]]))
@example(c=_small([[0]], special=(0, 5, 6, 7)))
@example(c=_small([[1, 9, 2], [1, 2, 0]], special=(0, 1, 2, 3, 4)))
def special_marks(student, c):
    got = student.call(SPECIAL, c.input_ids, c.special_ids)
    check_tensor(got, "special", shape=tuple(c.input_ids.shape), dtype=torch.bool, student=student)
    check_equal(got, _special_ref(c.input_ids, c.special_ids), "special", student=student,
                show={"input_ids": c.input_ids, "special_ids": c.special_ids},
                hint_zh="torch.isin(input_ids, torch.tensor(special_ids))：每个位置都和所有特殊 id 比较（不只是第一个，也不是按下标）。",
                hint_en="torch.isin(input_ids, torch.tensor(special_ids)): compare every position with every special "
                        "id (not only the first, and not by position).")


# ---------------------------------------------------------------- mlm_mask: structure

@prop(EX, MLM, "shapes_and_dtypes",
      zh="返回 (inputs, labels)，两者都是 (B, T) 的 int64 张量，input_ids 不被修改",
      en="returns (inputs, labels), both (B, T) int64 tensors; input_ids is not modified")
@given(c=small_cases())
@example(c=_small([[1, 5, 2]]))
@example(c=_small([[0]]))
def mlm_shapes(student, c):
    _call_mlm(student, c)


@prop(EX, MLM, "labels_hold_originals_only_where_selected",
      zh="labels 在被选中的位置是原来的词元，其余位置都是 -100；没被选中的位置 inputs 与 input_ids 相同",
      en="labels hold the original token at selected positions and -100 everywhere else; at unselected "
         "positions inputs equal input_ids")
@given(c=small_cases())
@example(c=_small([[1, 5, 6, 7, 8, 9, 10, 11, 12, 2]] * 4, seed=3))
@example(c=_large(64, 192, 200, [0, 1, 2, 3], seed=5))
def mlm_labels(student, c):
    inputs, labels = _call_mlm(student, c)
    sel = _selected(labels)
    ids = c.input_ids
    wrong = sel & (labels != ids)
    if bool(wrong.any()):
        b, t = (int(v) for v in wrong.nonzero()[0])
        fail(f"labels[{b}, {t}] = {int(labels[b, t])}，既不是 -100 也不是原来的词元 input_ids[{b}, {t}] = {int(ids[b, t])}。",
             f"labels[{b}, {t}] = {int(labels[b, t])} is neither -100 nor the original token input_ids[{b}, {t}] = "
             f"{int(ids[b, t])}.", student=student, show=c.show(inputs=inputs, labels=labels),
             hint_zh="标签是模型要还原的原词元：labels = torch.where(selected, input_ids, -100)。不要用替换之后的 inputs，"
                     "也不要用 0 表示“忽略”（0 是一个真实的词元 id）。",
             hint_en="A label is the original token the model must recover: labels = torch.where(selected, input_ids, "
                     "-100). Not the replaced inputs, and not 0 for 'ignore' (0 is a real token id).")
    changed = ~sel & (inputs != ids)
    if bool(changed.any()):
        b, t = (int(v) for v in changed.nonzero()[0])
        fail(f"位置 [{b}, {t}] 没有被选中（labels = -100），inputs 却从 {int(ids[b, t])} 变成了 {int(inputs[b, t])}。",
             f"position [{b}, {t}] is not selected (labels = -100), yet inputs changed from {int(ids[b, t])} to "
             f"{int(inputs[b, t])}.", student=student, show=c.show(inputs=inputs, labels=labels),
             hint_zh="80/10/10 只作用于被选中的 15%：to_mask = selected & ...，to_random = selected & ...。"
                     "一个被替换却没有标签的词元，模型既看不到原词，也学不到它。标签要覆盖每一个被选中的位置（包括保持不变的 10%）。",
             hint_en="The 80/10/10 split applies to the selected 15% only: to_mask = selected & ..., to_random = "
                     "selected & .... A token replaced without a label is lost: the model neither sees nor learns it. "
                     "Labels cover every selected position (the unchanged 10% included).")


@prop(EX, MLM, "never_selects_special_or_padding",
      zh="填充和特殊词元（special_ids 中的任何一个）从不被选中：那里的 labels 是 -100，inputs 不变",
      en="padding and special tokens (any of special_ids) are never selected: their labels are -100 and their "
         "inputs unchanged")
@given(c=small_cases())
@example(c=_small([[1, 2, 0, 0, 0, 0, 0, 0]] * 6, seed=1))
@example(c=_small([[0, 0, 0], [1, 4, 2]], seed=2))
@example(c=_large(64, 256, 1000, BERT, seed=7))
def mlm_specials(student, c):
    inputs, labels = _call_mlm(student, c)
    special = _special_ref(c.input_ids, c.special_ids)
    bad = special & (_selected(labels) | (inputs != c.input_ids))
    if bool(bad.any()):
        b, t = (int(v) for v in bad.nonzero()[0])
        fail(f"特殊词元 input_ids[{b}, {t}] = {int(c.input_ids[b, t])} 被选中或被改动了"
             f"（labels = {int(labels[b, t])}，inputs = {int(inputs[b, t])}）。",
             f"the special token input_ids[{b}, {t}] = {int(c.input_ids[b, t])} was selected or changed "
             f"(labels = {int(labels[b, t])}, inputs = {int(inputs[b, t])}).", student=student,
             show=c.show(inputs=inputs, labels=labels),
             hint_zh="先算 special = special_tokens_mask(input_ids, special_ids)，再 selected = (rand < 0.15) & ~special。"
                     "填充不是数据：在填充上算损失会让模型学着预测 [PAD]。",
             hint_en="Compute special = special_tokens_mask(input_ids, special_ids) first, then selected = "
                     "(rand < 0.15) & ~special. Padding is not data: a loss on padding teaches the model to predict [PAD].")


@prop(EX, MLM, "deterministic_given_seed",
      zh="同一个 seed 给出完全相同的 (inputs, labels)；换一个 seed 结果不同（所有随机数都来自 torch.Generator().manual_seed(seed)）",
      en="the same seed gives exactly the same (inputs, labels); another seed gives another result (all randomness "
         "from torch.Generator().manual_seed(seed))")
@given(c=large_cases())
@example(c=_large(64, 192, 60, [0, 1, 2, 3], seed=0))
def mlm_deterministic(student, c):
    a = _call_mlm(student, c)
    b = _call_mlm(student, c)
    hint_zh = ("用 g = torch.Generator().manual_seed(seed)，并把 generator=g 传给每一个 torch.rand / torch.randint。"
               "不带 generator 的调用用的是全局随机状态，每次都不一样，实验就无法复现。")
    hint_en = ("Use g = torch.Generator().manual_seed(seed) and pass generator=g to every torch.rand / torch.randint. "
               "A call without generator uses the global random state, different every time, so the experiment "
               "cannot be reproduced.")
    for x, y, what in ((a[0], b[0], "inputs"), (a[1], b[1], "labels")):
        if not torch.equal(x, y):
            n = int((x != y).sum())
            fail(f"同一个 seed = {c.seed} 调用两次，{what} 有 {n} 个位置不同。",
                 f"called twice with the same seed = {c.seed}, {what} differs in {n} positions.",
                 student=student, show=c.show(), hint_zh=hint_zh, hint_en=hint_en)
    other = Case(c.input_ids, c.special_ids, c.mask_id, c.V, c.seed + 1)
    o = _call_mlm(student, other)
    if torch.equal(o[1], a[1]) and torch.equal(o[0], a[0]):
        fail(f"seed = {c.seed} 和 seed = {c.seed + 1} 给出了完全相同的结果：seed 没有被使用。",
             f"seed = {c.seed} and seed = {c.seed + 1} give exactly the same result: the seed is not used.",
             student=student, show=c.show(), hint_zh=hint_zh, hint_en=hint_en)


@prop(EX, MLM, "each_sequence_masked_independently",
      zh="批里相同的序列各自独立地选择位置（不是把一个 (T,) 的随机掩码广播到整个批）",
      en="identical sequences of a batch get their own selections (not one (T,) random mask broadcast over the "
         "batch)")
@given(seed=seeds, V=st.sampled_from([200, 30522]))
@example(seed=0, V=200)
def mlm_rows_independent(student, seed, V):
    # 16 identical rows with 126 selectable tokens: two correct rows select the same positions with
    # probability (0.15^2 + 0.85^2)^126 < 1e-16, i.e. < 1.2e-14 for the 120 pairs
    row = _batch(1, 128, V, BERT, seed + 17)
    c = Case(row.expand(16, 128).contiguous(), BERT, 103, V, seed)
    inputs, labels = _call_mlm(student, c)
    sel = _selected(labels)
    for i in range(16):
        same = (sel == sel[i]).all(1)
        same[i] = False
        if bool(same.any()):
            j = int(same.nonzero()[0])
            fail(f"序列 {i} 和序列 {j} 内容相同，选中的位置也完全相同（{int(sel[i].sum())} 个）。",
                 f"sequences {i} and {j} are identical and so are their selected positions ({int(sel[i].sum())} of them).",
                 student=student, show=c.show(inputs=inputs, labels=labels),
                 hint_zh="随机数要有整个批的形状：torch.rand(input_ids.shape, generator=g)，不是 torch.rand(T)。",
                 hint_en="Draw random numbers of the whole batch's shape: torch.rand(input_ids.shape, generator=g), not "
                         "torch.rand(T).")


# ---------------------------------------------------------------- mlm_mask: statistics


def _check_count(student, c, count, n, p, what_zh, what_en, hint_zh, hint_en, **show):
    lo, hi = binomial_interval(n, p)
    if not lo <= count <= hi:
        fail(f"{what_zh}：{count} / {n} = {count / max(n, 1):.4f}，期望约 {p:.4f}"
             f"（正确的代码以至少 1 - 1e-9 的概率落在 [{lo}, {hi}] 内）。",
             f"{what_en}: {count} / {n} = {count / max(n, 1):.4f}, expected about {p:.4f} (correct code lands in "
             f"[{lo}, {hi}] with probability at least 1 - 1e-9).", student=student, show=c.show(**show),
             hint_zh=hint_zh, hint_en=hint_en)


@prop(EX, MLM, "selects_15_percent",
      zh="可选词元中被选中的比例约为 15%（按真实的、非特殊的词元计，也在填充很多的批次上；精确二项分布界，错误拒绝概率 <= 1e-9）",
      en="about 15% of the selectable tokens are selected (counted over the real, non-special tokens, also in "
         "heavily padded batches; exact binomial bound, false rejection <= 1e-9)")
@given(c=large_cases())
@example(c=_large(64, 192, 200, BERT, seed=0))
@example(c=_large(128, 256, 30522, BERT, seed=1))
@example(c=_large(96, 192, 60, [5, 6, 7, 8], seed=2))
# rows padded to a quarter of T and more (~40% padding): the rate is per real, selectable token, so
# round(0.15 T) tokens per row counted from the padded length T selects ~25% of them
@example(c=_large(128, 256, 1000, BERT, seed=6, min_len=256 // 4))
def mlm_rate(student, c):
    inputs, labels = _call_mlm(student, c)
    can = ~_special_ref(c.input_ids, c.special_ids)
    n, count = int(can.sum()), int((_selected(labels) & can).sum())
    _check_count(student, c, count, n, P_SELECT, "被选中的可选词元比例", "the share of selectable tokens selected",
                 "每个非特殊词元独立地以 0.15 的概率被选中：selected = (torch.rand(shape, generator=g) < 0.15) & ~special。"
                 "被选中 = labels 不是 -100：保持不变的 10% 和随机替换的 10% 也必须有标签。"
                 "如果每行选固定个数 round(0.15 n)，n 是这一行可选的真实词元数，不是填充后的长度 T。",
                 "Each non-special token is selected on its own with probability 0.15: selected = (torch.rand(shape, "
                 "generator=g) < 0.15) & ~special. Selected = labels not -100: the unchanged 10% and the random 10% "
                 "need labels too. A fixed count per sequence, round(0.15 n), takes n = that row's selectable real tokens, "
                 "not the padded length T.")


@prop(EX, MLM, "replaces_80_10_10",
      zh="被选中的词元中约 80% 变成 mask_id、约 10% 变成其他随机词元、约 10% 保持不变（给定被选中的个数，各自服从二项分布）",
      en="of the selected tokens about 80% become mask_id, about 10% another random token and about 10% stay "
         "unchanged (each binomial given the number selected)")
@given(c=large_cases())
@example(c=_large(64, 192, 200, BERT, seed=3))
@example(c=_large(128, 256, 30522, BERT, seed=4))
@example(c=_large(96, 256, 60, [7, 8, 9, 10], seed=5))
def mlm_split(student, c):
    inputs, labels = _call_mlm(student, c)
    sel = _selected(labels)
    S = int(sel.sum())
    ids, x = c.input_ids[sel], inputs[sel]
    n_mask = int((x == c.mask_id).sum())
    n_keep = int((x == ids).sum())
    n_other = S - n_mask - n_keep
    V = c.V
    # a random replacement is mask_id or the original token with probability 1/V each
    hint_zh = ("一个均匀随机数 u 决定被选中词元的命运：u < 0.8 → mask_id；0.8 <= u < 0.9 → 随机词元；其余不变。"
               "常见错误：第二次抽签写成 bernoulli(0.1) & ~masked（只有 0.2 × 0.1 = 2%），或者忘了保持不变的 10%。")
    hint_en = ("One uniform number u decides a selected token's fate: u < 0.8 -> mask_id; 0.8 <= u < 0.9 -> a random "
               "token; otherwise unchanged. Usual mistakes: a second draw bernoulli(0.1) & ~masked (only 0.2 x 0.1 = "
               "2%), or forgetting the unchanged 10%.")
    show = {"被选中的个数 selected S": S, "mask_id": n_mask, "unchanged": n_keep, "random other": n_other}
    _check_count(student, c, n_mask, S, P_MASK + P_RANDOM / V, "被选中后变成 mask_id 的比例",
                 "the share of selected tokens replaced by mask_id", hint_zh, hint_en, **show)
    _check_count(student, c, n_other, S, P_RANDOM * (1 - 2 / V), "被选中后变成其他随机词元的比例",
                 "the share of selected tokens replaced by another random token", hint_zh, hint_en, **show)
    # unchanged: 10%, plus a random draw that hits the original (1/V, or 1/(V - #special) for code that
    # draws from the ordinary ids only): test against the larger bound's interval union
    lo1, hi1 = binomial_interval(S, P_KEEP + P_RANDOM / V)
    lo2, hi2 = binomial_interval(S, P_KEEP + P_RANDOM / max(V - len(c.special_ids), 1))
    if not min(lo1, lo2) <= n_keep <= max(hi1, hi2):
        _check_count(student, c, n_keep, S, P_KEEP + P_RANDOM / V, "被选中后保持不变的比例",
                     "the share of selected tokens left unchanged", hint_zh, hint_en, **show)


@prop(EX, MLM, "random_tokens_are_uniform",
      zh="随机替换的词元在 [0, V) 内，且没有哪个 id 出现得比均匀抽样多得多（每个 id 的二项上界，对 V 个 id 取并集界）",
      en="random replacements lie in [0, V) and no id comes up far more often than uniform sampling allows (a "
         "binomial upper bound per id, union bound over the V ids)")
@given(c=large_cases())
@example(c=_large(64, 192, 60, [0, 1, 2, 3], seed=6))
@example(c=_large(128, 256, 1000, BERT, seed=7))
def mlm_uniform(student, c):
    inputs, labels = _call_mlm(student, c)
    if bool(((inputs < 0) | (inputs >= c.V)).any()):
        b, t = (int(v) for v in ((inputs < 0) | (inputs >= c.V)).nonzero()[0])
        fail(f"inputs[{b}, {t}] = {int(inputs[b, t])} 不在 [0, V) = [0, {c.V}) 内。",
             f"inputs[{b}, {t}] = {int(inputs[b, t])} is outside [0, V) = [0, {c.V}).", student=student,
             show=c.show(), hint_zh="torch.randint(0, vocab_size, shape, generator=g)：上界不含 vocab_size。",
             hint_en="torch.randint(0, vocab_size, shape, generator=g): the upper bound vocab_size is excluded.")
    sel = _selected(labels)
    other = sel & (inputs != c.mask_id) & (inputs != c.input_ids)
    R = int(other.sum())
    if R == 0:
        return  # nothing to test here; replaces_80_10_10 grades how many there are
    counts = torch.bincount(inputs[other], minlength=c.V)
    top = int(counts.argmax())
    # R draws, each id with probability <= 1/(V - 2) given "neither mask_id nor the original" (the
    # conditional law of a uniform draw), <= 1/(V - 2 - #special) for code that draws ordinary ids only
    p = 1 / max(c.V - 2 - len(c.special_ids), 1)
    _, hi = binomial_interval(R, p, DELTA / c.V, upper_only=True)
    if int(counts[top]) > hi:
        fail(f"{R} 个随机替换里，id {top} 出现了 {int(counts[top])} 次；均匀抽样时超过 {hi} 次的概率小于 1e-9。",
             f"of {R} random replacements, id {top} came up {int(counts[top])} times; uniform sampling exceeds {hi} "
             f"with probability below 1e-9.", student=student, show=c.show(),
             hint_zh="每个随机替换都要独立地从整个词表 [0, V) 均匀抽取：torch.randint(0, vocab_size, input_ids.shape, generator=g)；"
                     "不要只抽一个数给所有位置用，也不要只从很小的范围里抽。",
             hint_en="Draw every random replacement on its own, uniformly from the whole vocabulary [0, V): "
                     "torch.randint(0, vocab_size, input_ids.shape, generator=g); not one number for every position, "
                     "not from a small range.")



# ---------------------------------------------------------------- mlm_mask: lower bounds and the global state


@st.composite
def reach_cases(draw):
    """A small vocabulary (V <= 8, four special ids) in a large batch (32768 tokens): every id of the
    vocabulary comes up often enough among the random replacements for a lower bound to mean something."""
    V = draw(st.sampled_from([6, 7, 8]))
    special = draw(st.lists(st.integers(0, V - 1), min_size=4, max_size=4, unique=True))
    return _large(128, 256, V, special, draw(seeds), data_seed=draw(seeds))


@prop(EX, MLM, "random_tokens_reach_every_id",
      zh="随机替换能抽到词表里的每一个非特殊 id（包括 0 和 V-1）：每个 id 出现的次数不少于精确二项下界"
         "（对 V 个 id 取并集界，错误拒绝概率 <= 1e-9）",
      en="random replacements reach every non-special id of the vocabulary (0 and V-1 included): each id comes up "
         "at least as often as an exact binomial lower bound allows (union bound over the V ids, false rejection "
         "<= 1e-9)")
@given(c=reach_cases())
@example(c=_large(128, 256, 8, [0, 1, 2, 3], seed=8))
@example(c=_large(128, 256, 8, [4, 5, 6, 7], seed=9))
@example(c=_large(128, 256, 6, [1, 2, 5, 3], seed=10))
def mlm_reach(student, c):
    # Given the selection, a selected token whose original is not v becomes v exactly when its fate is
    # "random" (0.1) and the draw is v: probability 0.1 / V for a draw from [0, V), 0.1 / (V - #special)
    # for code that draws from the ordinary ids only; the fates are independent, so the count of v is
    # Binomial(S_v, p_v) with p_v >= 0.1 / V.  The bound is computed at 0.1 / V (the smaller p: a lower
    # bound for both schemes), P(count < lo) <= DELTA / #ids for each id.
    inputs, labels = _call_mlm(student, c)
    sel = _selected(labels)
    ids = [v for v in range(c.V) if v not in set(c.special_ids)]
    for v in ids:
        n = int((sel & (c.input_ids != v)).sum())
        count = int((sel & (c.input_ids != v) & (inputs == v)).sum())
        lo, _ = binomial_interval(n, P_RANDOM / c.V, 2 * DELTA / len(ids))
        if count < lo:
            fail(f"id {v} 在随机替换里只出现了 {count} 次（{n} 个原词不是 {v} 的被选中词元）；从 [0, V) = [0, {c.V}) 均匀抽样时"
                 f"少于 {lo} 次的概率小于 1e-9。",
                 f"id {v} came up only {count} times as a random replacement (of {n} selected tokens whose original is "
                 f"not {v}); uniform draws from [0, V) = [0, {c.V}) give fewer than {lo} with probability below 1e-9.",
                 student=student, show=c.show(),
                 hint_zh="torch.randint(0, vocab_size, shape, generator=g)：上界 vocab_size 本身不会被抽到，所以不要写成 "
                         "randint(0, vocab_size - 1)（那样 V-1 永远抽不到），下界是 0 不是 1。",
                 hint_en="torch.randint(0, vocab_size, shape, generator=g): the upper bound vocab_size itself is never "
                         "drawn, so do not write randint(0, vocab_size - 1) (V-1 would never come up); the lower bound "
                         "is 0, not 1.")


@prop(EX, MLM, "leaves_global_random_state_alone",
      zh="mlm_mask 不使用也不改变全局随机状态（不调用 torch.manual_seed；随机数只来自 torch.Generator().manual_seed(seed)）",
      en="mlm_mask neither uses nor changes the global random state (no torch.manual_seed; random numbers come only "
         "from torch.Generator().manual_seed(seed))")
@given(c=small_cases())
@example(c=_small([[1, 5, 6, 7, 8, 9, 10, 11, 12, 2]] * 4, seed=3))
@example(c=_small([[1, 4, 2]], seed=0))
def mlm_global_state(student, c):
    other = Case(c.input_ids, c.special_ids, c.mask_id, c.V, c.seed + 1)
    check_global_state_untouched(student, MLM, [lambda: _call_mlm(student, c), lambda: _call_mlm(student, other)],
                                 show=c.show())
