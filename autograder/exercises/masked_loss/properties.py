"""Hidden properties of the `masked_loss` exercise: masked_cross_entropy.

loss = (sum over valid tokens of -log softmax(logits[b, t])[targets[b, t]]) / (number of valid tokens)

Information boundary: a padded position (mask False) must not reach the loss or its gradient,
whatever it holds — a target that is negative or >= V, a logit that is NaN or inf — and the
amount of padding must not matter.  Masks are drawn both as prefixes (from lengths) and with
holes, since the contract only says "(B, T) bool, True = valid".

The trusted reference replaces padding *before* computing (padded logits -> 0, padded targets ->
ignore_index) and works in float64 with F.cross_entropy(ignore_index=...).
"""
import math
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ...errors import StudentCrash
from ...properties._harness import check_close, check_tensor, fail, fmt, prop
from ...properties.strategies import float_tensors, lengths_for, padding_mask_ref, sizes

EX = "masked_loss"
FN = "masked_cross_entropy"
IGNORE = -100

# ---------------------------------------------------------------- references


def per_token_ref(logits, targets, mask):
    """(B, T) float64 cross-entropy per token, 0 at padded positions (padding never computed)."""
    B, T, V = logits.shape
    x = torch.where(mask[..., None], logits.detach().to(torch.float64), torch.zeros((), dtype=torch.float64))
    y = torch.where(mask, targets, torch.full_like(targets, IGNORE))
    ce = F.cross_entropy(x.reshape(B * T, V), y.reshape(B * T), ignore_index=IGNORE, reduction="none")
    return ce.reshape(B, T)


def ce_ref(logits, targets, mask):
    """Trusted float64 reference: token mean over valid positions (what F.cross_entropy(ignore_index) gives)."""
    B, T, V = logits.shape
    x = torch.where(mask[..., None], logits.detach().to(torch.float64), torch.zeros((), dtype=torch.float64))
    y = torch.where(mask, targets, torch.full_like(targets, IGNORE))
    return F.cross_entropy(x.reshape(B * T, V), y.reshape(B * T), ignore_index=IGNORE)


def _wrong_values(logits, targets, mask):
    """The values the usual mistakes give on clean inputs: [(zh, en, value)]."""
    B, T, V = logits.shape
    tok = per_token_ref(logits, targets, mask)  # (B, T)
    total = float(tok.sum())
    out = [("有效词元损失的总和（没有除以个数）", "the sum over valid tokens (not divided by their number)", total),
           ("除以了 B（批大小）而不是有效词元数", "divided by B (the batch size) instead of the number of valid tokens",
            total / B),
           ("除以了 B*T（把填充位置算进了分母）", "divided by B*T (padding counted in the denominator)", total / (B * T))]
    counts = mask.sum(1)
    rows = counts > 0
    if bool(rows.any()):
        per_seq = tok.sum(1)[rows] / counts[rows]
        out.append(("先对每个序列求平均、再对批求平均（短序列的词元权重更大）",
                    "the mean per sequence, then the mean over the batch (tokens of short sequences weigh more)",
                    float(per_seq.mean())))
    x = logits.detach().to(torch.float64)
    all_ce = F.cross_entropy(x.reshape(B * T, V), targets.reshape(B * T), reduction="none").reshape(B, T)
    out.append(("对所有位置（包括填充）求平均", "the mean over every position, padding included", float(all_ce.mean())))
    if T > 1:
        lp = F.log_softmax(x, dim=1)  # the wrong axis: over time
        wrong = -lp.gather(-1, targets[..., None]).squeeze(-1)
        out.append(("log_softmax 沿着错误的轴（dim=1，时间轴）", "log_softmax over the wrong axis (dim=1, time)",
                    float(wrong[mask].mean())))
    return out


def _diagnose(got, logits, targets, mask):
    """Name the mistake whose value the student's loss matches, if any: (zh, en) or None."""
    try:
        g = float(got.detach())
    except Exception:  # noqa: BLE001 - a non-scalar: no diagnosis
        return None
    ref = float(ce_ref(logits, targets, mask))
    for zh, en, v in _wrong_values(logits, targets, mask):
        if math.isfinite(v) and abs(v - ref) > 1e-4 * (1 + abs(ref)) and abs(g - v) <= 1e-4 * (1 + abs(v)):
            return zh, en
    return None


HINT_MEAN_ZH = ("损失 = 有效词元的交叉熵之和 / 有效词元的个数（mask.sum()）：每个有效词元权重相同，"
                "填充不进分子也不进分母。log_softmax 沿最后一维（词表 V）。")
HINT_MEAN_EN = ("loss = (sum of cross-entropy over valid tokens) / (number of valid tokens, mask.sum()): every valid "
                "token weighs the same, padding is in neither the sum nor the count. log_softmax runs over the last "
                "axis (the vocabulary V).")

# ---------------------------------------------------------------- strategies


@st.composite
def masks(draw, B, T):
    """(B, T) bool with at least one True: a prefix from lengths, or any pattern (holes)."""
    if draw(st.booleans()):
        lengths = draw(lengths_for(B, T, lo=0))
        if int(lengths.max()) == 0:
            lengths[0] = 1
        return padding_mask_ref(lengths, T)
    m = torch.from_numpy(draw(hnp.arrays(np.bool_, (B, T), elements=st.booleans(), fill=st.nothing())).copy())
    if not bool(m.any()):
        m[0, 0] = True
    return m


@st.composite
def int_tensors(draw, shape, lo, hi):
    """An int64 tensor of `shape`, entries in [lo, hi]."""
    a = draw(hnp.arrays(np.int64, tuple(shape), elements=st.integers(lo, hi), fill=st.nothing()))
    return torch.from_numpy(a.copy())


@st.composite
def loss_inputs(draw, min_B=1, max_B=3, max_T=4, max_V=4, lo=-3.0, hi=3.0):
    """(logits (B, T, V) float32, targets (B, T) int64 all in [0, V), mask (B, T) bool)."""
    B = draw(sizes(min_B, max_B))
    T = draw(sizes(1, max_T))
    V = draw(sizes(2, max_V))
    mask = draw(masks(B, T))
    logits = draw(float_tensors((B, T, V), lo, hi))
    targets = draw(int_tensors((B, T), 0, V - 1))
    return logits, targets, mask


@st.composite
def uneven_inputs(draw):
    """B >= 2 sequences with different numbers of valid tokens (prefix masks), none empty."""
    B = draw(sizes(2, 3))
    T = draw(sizes(2, 4))
    V = draw(sizes(2, 3))
    lengths = draw(lengths_for(B, T, lo=1))
    if bool((lengths == lengths[0]).all()):
        lengths[0] = 1 if int(lengths[0]) != 1 else T
    logits = draw(float_tensors((B, T, V), -3.0, 3.0))
    targets = draw(int_tensors((B, T), 0, V - 1))
    return logits, targets, padding_mask_ref(lengths, T)


def _case(logits, targets, mask):
    return (torch.tensor(logits, dtype=torch.float32), torch.tensor(targets, dtype=torch.int64),
            torch.tensor(mask, dtype=torch.bool))


def _show(logits, targets, mask):
    return {"logits": logits, "targets": targets, "mask": mask}


def _long_case():
    """300 valid tokens (B = 2, T = 160, some padding): more than a uint8 count can hold."""
    g = torch.Generator().manual_seed(11)
    logits = (torch.randint(-300, 301, (2, 160, 3), generator=g).double() / 100).float()
    targets = torch.randint(0, 3, (2, 160), generator=g)
    return logits, targets, padding_mask_ref(torch.tensor([160, 140]), 160)


def _big_vocab_case():
    """A vocabulary of 5000 (a batch of one, T = 3, one padded position): every row of logits is long."""
    g = torch.Generator().manual_seed(12)
    logits = (torch.randint(-300, 301, (1, 3, 5000), generator=g).double() / 100).float()
    return logits, torch.tensor([[4999, 0, 2500]]), torch.tensor([[True, True, False]])


# Pinned inputs: uneven lengths, a hole in the middle, a fully padded sequence, T = 1.
PINNED = [
    _case([[[1.0, 0.0, -1.0], [0.5, 0.5, 0.0], [2.0, -2.0, 0.0]],
           [[0.0, 1.0, 0.0], [1.5, -0.5, 0.25], [0.0, 0.0, 3.0]]],
          [[0, 2, 1], [1, 0, 2]], [[True, True, True], [True, False, False]]),
    _case([[[0.5, -0.5], [1.0, 2.0], [-1.0, 0.0], [0.0, 0.25]]], [[1, 0, 1, 0]], [[True, False, True, False]]),
    _case([[[0.3, -0.2, 0.1]], [[1.0, 1.0, -1.0]]], [[2], [0]], [[True], [False]]),
]

# ---------------------------------------------------------------- calling the student


def _loss(student, logits, targets, mask):
    out = student.call(FN, logits, targets, mask)
    check_tensor(out, "loss", student=student)
    if out.dim() != 0:
        fail(f"loss 应该是 0 维标量张量（形状 ()），实际形状为 {tuple(out.shape)}。",
             f"loss should be a 0-dim scalar tensor (shape ()), got shape {tuple(out.shape)}.", student=student,
             show={"loss": out},
             hint_zh="最后用 .sum() / 个数 或 .mean() 归约成一个数；不要返回每个词元的损失，也不要 keepdim。",
             hint_en="Reduce to one number at the end with .sum() / count or .mean(); do not return per-token "
                     "losses, and no keepdim.")
    return out


def _grad(student, logits, targets, mask):
    """(loss, d loss / d logits) of the student's function; logits is copied into a leaf."""
    x = logits.detach().clone().requires_grad_(True)
    out = _loss(student, x, targets, mask)
    if not out.requires_grad:
        fail("loss 不可求导（没有连到 logits 的计算图）。",
             "loss is not differentiable (it is not connected to logits in the autograd graph).", student=student,
             hint_zh="全程用 torch 运算：不要 .item()、float(...)、.detach()、.numpy() 或 torch.tensor(数值) 重新包装结果。",
             hint_en="Stay in torch operations: no .item(), float(...), .detach(), .numpy(), and do not re-wrap the "
                     "result with torch.tensor(value).")
    try:
        out.backward()
    except Exception as e:  # noqa: BLE001 - the student's graph failed to backpropagate
        fail("对 loss 调用 backward() 失败。", "loss.backward() failed.", student=student,
             show={"异常 exception": f"{type(e).__name__}: {str(e)[:300]}"},
             hint_zh="常见原因：对需要梯度的张量做了原地修改（masked_fill_、切片赋值）。用不带下划线的版本。",
             hint_en="A usual cause: an in-place change (masked_fill_, slice assignment) of a tensor autograd "
                     "needs. Use the out-of-place versions.")
    if x.grad is None:
        fail("backward() 之后 logits 没有梯度。", "logits has no gradient after backward().", student=student,
             hint_zh="损失必须由传入的 logits 计算出来（不要先 detach 或复制成新的叶子张量）。",
             hint_en="The loss must be computed from the logits passed in (do not detach them or copy them into "
                     "a new leaf tensor).")
    return out, x.grad


# ---------------------------------------------------------------- properties

@prop(EX, FN, "scalar_and_differentiable",
      zh="返回 0 维标量张量，dtype 与 logits 相同，可以对 logits 求导（梯度有限）",
      en="returns a 0-dim scalar tensor with logits' dtype, differentiable w.r.t. logits (finite gradient)")
@given(case=loss_inputs(max_B=2, max_T=3, max_V=3), dtype=st.sampled_from([torch.float32, torch.float64]))
@example(case=PINNED[0], dtype=torch.float32)
@example(case=PINNED[2], dtype=torch.float64)
def loss_scalar(student, case, dtype):
    logits, targets, mask = case
    logits = logits.to(dtype)
    out, grad = _grad(student, logits, targets, mask)
    if out.dtype != dtype:
        fail(f"logits 是 {dtype}，loss 却是 {out.dtype}。", f"logits are {dtype} but the loss is {out.dtype}.",
             student=student,
             hint_zh="保持 logits 的 dtype：如果在 float64 里计算，返回前 .to(logits.dtype)。",
             hint_en="Keep logits' dtype: if you compute in float64, return .to(logits.dtype).")
    check_tensor(out, "loss", student=student, finite=True)
    check_tensor(grad, "logits.grad", shape=logits.shape, student=student, finite=True)


@prop(EX, FN, "matches_torch_cross_entropy",
      zh="等于 F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=...)（填充目标设为 ignore_index），"
         "包括中间有空洞的掩码和几百个词元的批；有效位置的梯度也相同",
      en="equals F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=...) with padded targets "
         "set to ignore_index, also for masks with holes and hundreds of tokens; so does its gradient at valid "
         "positions")
@given(case=loss_inputs())
@example(case=PINNED[0])
@example(case=PINNED[1])
@example(case=PINNED[2])
@example(case=_case([[[2.0, 0.0]]], [[0]], [[True]]))
@example(case=_long_case())
@example(case=_big_vocab_case())
def loss_matches(student, case):
    logits, targets, mask = case
    x = logits.detach().clone().requires_grad_(True)
    out = _loss(student, x, targets, mask)
    _check_value(student, out, logits, targets, mask)
    # the gradient at valid positions (padded ones: padded_gradient_is_exactly_zero; no graph at all:
    # scalar_and_differentiable)
    if not out.requires_grad:
        return
    try:
        out.backward()
    except Exception:  # noqa: BLE001 - graded by scalar_and_differentiable
        return
    if x.grad is None:
        return
    x64 = logits.detach().to(torch.float64).requires_grad_(True)
    B, T, V = logits.shape
    y = torch.where(mask, targets, torch.full_like(targets, IGNORE))
    F.cross_entropy(torch.where(mask[..., None], x64, 0.0).reshape(B * T, V), y.reshape(B * T),
                    ignore_index=IGNORE).backward()
    check_close(x.grad, x64.grad, "logits.grad", atol=1e-5, rtol=1e-3, where=mask[..., None], student=student,
                show={**_show(logits, targets, mask), "loss": out},
                hint_zh="loss 的值是对的，对 logits 的梯度却不对（只比较有效位置）：某一项被 .detach() 切断了，"
                        "或者在计算图外面算的。有效位置的梯度应是 (softmax(logits) - onehot(target)) / 有效词元数。",
                hint_en="The value of the loss is right but its gradient with respect to logits is not (valid "
                        "positions only): a term is cut off with .detach() or computed outside the graph. At a "
                        "valid position the gradient is (softmax(logits) - onehot(target)) / number of valid tokens.")


def _check_value(student, out, logits, targets, mask, show_extra=None):
    ref = ce_ref(logits, targets, mask)
    if bool(torch.isclose(out.detach().to(torch.float64), ref, atol=2e-5, rtol=2e-5)):
        return  # the diagnosis below is only worth computing for a wrong value
    diag = _diagnose(out, logits, targets, mask)
    hint_zh, hint_en = HINT_MEAN_ZH, HINT_MEAN_EN
    if diag:
        hint_zh = f"你的值正好等于「{diag[0]}」。" + hint_zh
        hint_en = f"Your value is exactly {diag[1]}. " + hint_en
    show = {**_show(logits, targets, mask), "每个词元的交叉熵 per-token cross-entropy (0 = padded)":
            per_token_ref(logits, targets, mask)}
    show.update(show_extra or {})
    check_close(out, ref, "loss", atol=2e-5, rtol=2e-5, student=student, show=show, hint_zh=hint_zh, hint_en=hint_en)


LN3 = math.log(3.0)
HAND = _case([[[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
              [[0.0, LN3], [5.0, -5.0], [-5.0, 5.0]]],
             [[0, 0, 0], [0, 1, 1]], [[True, True, True], [True, False, False]])


@prop(EX, FN, "each_valid_token_counts_equally",
      zh="按词元平均而不是按序列平均：长度不同的序列中，每个有效词元的权重相同（手算例子：(3·ln2 + ln4) / 4）",
      en="a mean over tokens, not over sequences: with uneven lengths every valid token weighs the same "
         "(by hand: (3·ln2 + ln4) / 4)")
@given(case=uneven_inputs())
@example(case=HAND)
def loss_token_mean(student, case):
    logits, targets, mask = case
    out = _loss(student, logits, targets, mask)
    extra = {}
    if logits.shape == HAND[0].shape and torch.equal(logits, HAND[0]) and torch.equal(mask, HAND[2]):
        extra = {"手算 by hand": "序列 0 的 3 个词元 logits [0, 0]、目标 0：各 ln2；序列 1 的 1 个词元 logits [0, ln3]、目标 0："
                                 "ln(1 + 3) = ln4 = 2·ln2。\n按词元平均 (3·ln2 + 2·ln2) / 4 = 0.8664；"
                                 "按序列平均 (ln2 + 2·ln2) / 2 = 1.0397。\n"
                                 "sequence 0: 3 tokens, logits [0, 0], target 0: ln2 each; sequence 1: 1 token, logits "
                                 "[0, ln3], target 0: ln(1 + 3) = ln4 = 2·ln2.\ntoken mean (3·ln2 + 2·ln2) / 4 = 0.8664; "
                                 "per-sequence mean (ln2 + 2·ln2) / 2 = 1.0397."}
    _check_value(student, out, logits, targets, mask, show_extra=extra)


def _pad_variants(logits, targets, mask):
    """[(zh, en, logits', targets', mask')]: the same valid tokens with other padding."""
    B, T, V = logits.shape
    pad = ~mask
    pad3 = pad[..., None]

    def fill_logits(v):
        return torch.where(pad3, torch.full_like(logits, v), logits)

    def fill_targets(v):
        return torch.where(pad, torch.full_like(targets, v), targets)

    def more_steps(k, logit, target):
        return (torch.cat([logits, torch.full((B, k, V), logit)], dim=1),
                torch.cat([targets, torch.full((B, k), target, dtype=torch.int64)], dim=1),
                torch.cat([mask, torch.zeros(B, k, dtype=torch.bool)], dim=1))

    nan = float("nan")
    return [
        ("填充目标为 -1", "padded targets set to -1", logits, fill_targets(-1), mask),
        (f"填充目标为 V = {V}", f"padded targets set to V = {V}", logits, fill_targets(V), mask),
        ("填充目标为 -100", "padded targets set to -100", logits, fill_targets(-100), mask),
        ("填充 logits 为 NaN", "padded logits set to NaN", fill_logits(nan), targets, mask),
        ("填充 logits 为 +inf", "padded logits set to +inf", fill_logits(float("inf")), targets, mask),
        ("填充 logits 为 -inf", "padded logits set to -inf", fill_logits(float("-inf")), targets, mask),
        ("填充 logits 为 NaN 且目标为 -1", "padded logits NaN and padded targets -1", fill_logits(nan),
         fill_targets(-1), mask),
        ("在末尾追加 2 个填充步（普通数值）", "2 padded steps appended (ordinary values)", *more_steps(2, 0.5, 0)),
        ("在末尾追加 3 个填充步（logits NaN，目标 -1）", "3 padded steps appended (NaN logits, target -1)",
         *more_steps(3, nan, -1)),
        ("批里追加一个全是填充的序列", "a sequence with no valid token appended to the batch",
         torch.cat([logits, torch.full((1, T, V), 1.5)]), torch.cat([targets, torch.full((1, T), V + 1)]),
         torch.cat([mask, torch.zeros(1, T, dtype=torch.bool)])),
    ]


@contextmanager
def _padding_context(zh, en, inputs):
    """A crash on a padding variant says which padding caused it, with the padding hint."""
    try:
        yield
    except StudentCrash as e:
        if e.kind == "error":
            e.zh = f"只改变填充（{zh}）后，" + e.zh
            e.en = f"After changing only the padding ({en}): " + e.en[:1].lower() + e.en[1:]
            for name, value in zip(("logits", "targets", "mask"), inputs):
                e.details.append((f"{name}（改变填充后 with that padding）", fmt(value)))
            e.hint_zh, e.hint_en = HINT_PAD_ZH, HINT_PAD_EN
        raise


HINT_PAD_ZH = ("先用 mask 去掉填充，再做任何计算：logits[mask] (N, V)、targets[mask] (N,)。"
               "先算完再乘 0/1 掩码不行：NaN * 0 = NaN，越界的目标在算的时候就会出错；"
               "分母是 mask.sum()，不是 B*T。")
HINT_PAD_EN = ("Remove padding with the mask before computing anything: logits[mask] (N, V), targets[mask] (N,). "
               "Computing first and multiplying by a 0/1 mask afterwards fails: NaN * 0 = NaN, and an out-of-range "
               "target breaks the computation itself; the count is mask.sum(), not B*T.")


@prop(EX, FN, "padding_does_not_change_loss",
      zh="填充位置不影响损失：填充目标可以是任意整数（负数、>= V），填充 logits 可以是 NaN/inf，填充多少也无所谓——损失不变且有限",
      en="padding does not change the loss: padded targets may be any integer (negative, >= V), padded logits "
         "NaN or inf, and the amount of padding does not matter — the loss stays the same and finite")
@given(case=loss_inputs())
@example(case=PINNED[0])
@example(case=PINNED[1])
@example(case=PINNED[2])
def loss_padding(student, case):
    logits, targets, mask = case
    clean = _loss(student, logits, targets, mask)
    if not bool(torch.isfinite(clean.detach())):
        fail("普通输入（填充位置是普通数值）上 loss 就不是有限数。", "the loss is not finite even on ordinary inputs "
             "(padded positions hold ordinary values).", student=student,
             show={**_show(logits, targets, mask), "loss": clean}, hint_zh=HINT_PAD_ZH, hint_en=HINT_PAD_EN)
    for zh, en, lg, tg, mk in _pad_variants(logits, targets, mask):
        with _padding_context(zh, en, (lg, tg, mk)):
            got = _loss(student, lg, tg, mk)
        g, c = got.detach().to(torch.float64), clean.detach().to(torch.float64)
        if not bool(torch.isfinite(g)) or not bool(torch.isclose(g, c, rtol=1e-5, atol=1e-6)):
            fail(f"只改变填充（{zh}）后，loss 从 {float(c):.6g} 变成了 {float(g):.6g}。",
                 f"changing only the padding ({en}) changed the loss from {float(c):.6g} to {float(g):.6g}.",
                 student=student,
                 show={"logits（原始 original）": logits, "targets（原始 original）": targets,
                       "mask（原始 original）": mask, "logits（改变填充后 with other padding）": lg,
                       "targets（改变填充后 with other padding）": tg, "mask（改变填充后 with other padding）": mk},
                 hint_zh=HINT_PAD_ZH, hint_en=HINT_PAD_EN)


@prop(EX, FN, "padded_gradient_is_exactly_zero",
      zh="对 logits 的梯度在填充位置上恰好为 0（即使那里是 NaN/inf、目标越界），在有效位置上有限且不受填充影响",
      en="the gradient w.r.t. logits is exactly 0 at padded positions (even when they hold NaN/inf and "
         "out-of-range targets), finite at valid positions and unaffected by the padding")
@given(case=loss_inputs())
@example(case=PINNED[0])
@example(case=PINNED[1])
@example(case=PINNED[2])
def loss_padded_grad(student, case):
    logits, targets, mask = case
    pad = ~mask
    _, g_clean = _grad(student, logits, targets, mask)
    variants = [("普通数值", "ordinary values", logits, targets)]
    for zh, en, v, t in [("NaN, 目标 -1", "NaN, target -1", float("nan"), -1),
                         ("+inf, 目标 V", "+inf, target V", float("inf"), logits.shape[-1])]:
        variants.append((f"填充位置为 {zh}", f"padded positions hold {en}",
                         torch.where(pad[..., None], torch.full_like(logits, v), logits),
                         torch.where(pad, torch.full_like(targets, t), targets)))
    for zh, en, lg, tg in variants:
        with _padding_context(zh, en, (lg, tg, mask)):
            grad = g_clean if lg is logits else _grad(student, lg, tg, mask)[1]
        check_tensor(grad, "logits.grad", shape=logits.shape, student=student)
        show = {"logits": lg, "targets": tg, "mask": mask, "logits.grad": grad}
        if not bool((grad[pad] == 0).all()):
            fail(f"填充位置的梯度不是 0（{zh}）。", f"the gradient at padded positions is not 0 ({en}).",
                 student=student, show=show,
                 hint_zh="填充位置必须在任何计算之前就被去掉（logits[mask]，或先 torch.where(mask[..., None], logits, 0) 再算）。"
                         "先算再乘掩码或 torch.where 选结果都不够：反向传播时 0 * NaN = NaN 会流回填充位置。",
                 hint_en="Padding must be removed before any computation (logits[mask], or "
                         "torch.where(mask[..., None], logits, 0) first). Computing first and masking the result (a product or torch.where) is not enough: "
                         "backpropagation still sends 0 * NaN = NaN into the padded positions.")
        if not bool(torch.isfinite(grad[mask]).all()):
            fail(f"有效位置的梯度含有 NaN 或 inf（{zh}）。", f"the gradient at valid positions has NaN or inf ({en}).",
                 student=student, show=show, hint_zh=HINT_PAD_ZH, hint_en=HINT_PAD_EN)
        if not bool(torch.allclose(grad[mask].double(), g_clean[mask].double(), rtol=1e-4, atol=1e-6)):
            fail(f"只改变填充（{zh}）就改变了有效位置的梯度。",
                 f"changing only the padding ({en}) changed the gradient at valid positions.",
                 student=student, show={**show, "普通填充时的梯度 gradient with ordinary padding": g_clean},
                 hint_zh=HINT_PAD_ZH, hint_en=HINT_PAD_EN)


OVERFLOW = 80.0  # |logit| beyond which exp overflows (float32: exp(89) = inf) or a softmax underflows to 0


def _large(logits, mask):
    """Does the counterexample hold a logit large enough to overflow exp (at a valid position)?"""
    valid = logits.detach()[mask]
    return valid.numel() > 0 and bool((valid.abs() >= OVERFLOW).any())


@st.composite
def large_inputs(draw):
    """Loss inputs with logits up to 1e4 in size: where a naive softmax overflows."""
    logits, targets, mask = draw(loss_inputs(max_B=2, max_T=3, lo=-2.0, hi=2.0))
    return logits * 5000.0, targets, mask  # |logit| up to 1e4, in steps of 50


@prop(EX, FN, "stable_for_large_logits",
      zh="logits 很大（|logit| ~ 1e4）时损失和梯度仍然有限，并与参考值一致（相对误差）",
      en="for large logits (|logit| ~ 1e4) the loss and its gradient stay finite and match the reference "
         "(relative tolerance)")
@given(case=large_inputs())
@example(case=_case([[[1e4, -1e4, 0.0]]], [[1]], [[True]]))
@example(case=_case([[[1e4, -1e4, 0.0], [-5000.0, 5000.0, 100.0]]], [[0, 1]], [[True, True]]))
def loss_large(student, case):
    logits, targets, mask = case
    out, grad = _grad(student, logits, targets, mask)
    large = _large(logits, mask)
    # a hint never blames a cause its counterexample does not show: overflow only for large logits
    # (shrinking may leave all-zero logits, where the same failure is a wrong formula)
    if large:
        hint_zh = ("不要先算 softmax 再取 log：exp(1e4) = inf，exp(-1e4) = 0，log 0 = -inf。"
                   "用 F.log_softmax / F.cross_entropy，或手写 logsumexp 时先减去每行的最大值。")
        hint_en = ("Do not take softmax and then log: exp(1e4) = inf, exp(-1e4) = 0, log 0 = -inf. Use F.log_softmax / "
                   "F.cross_entropy, or subtract each row's max first when you write logsumexp by hand.")
    else:
        hint_zh = f"这里的 logits 都很小（|logit| < {OVERFLOW:g}）：错的是公式本身。" + HINT_MEAN_ZH
        hint_en = f"These logits are all small (|logit| < {OVERFLOW:g}): the formula itself is wrong. " + HINT_MEAN_EN
    ref = ce_ref(logits, targets, mask)
    size_zh, size_en = ("logits 很大时", "with large logits ") if large else ("", "")
    if not bool(torch.isfinite(out.detach())):
        fail(f"{size_zh}loss 是 {float(out.detach())}（期望 {float(ref):.6g}）。",
             f"{size_en}the loss is {float(out.detach())} (expected {float(ref):.6g}).",
             student=student, show=_show(logits, targets, mask), hint_zh=hint_zh, hint_en=hint_en)
    check_close(out, ref, "loss", atol=1e-3, rtol=1e-4, student=student, show=_show(logits, targets, mask),
                hint_zh=hint_zh, hint_en=hint_en)
    if not bool(torch.isfinite(grad).all()):
        fail(f"{size_zh}梯度含有 NaN 或 inf。", f"{size_en}the gradient has NaN or inf.",
             student=student, show={**_show(logits, targets, mask), "logits.grad": grad},
             hint_zh=hint_zh, hint_en=hint_en)


@prop(EX, FN, "rejects_empty_mask",
      zh="没有任何有效词元（mask 全为 False）时抛出 ValueError（否则是 0/0）",
      en="a mask with no valid token (all False) raises ValueError (the loss would be 0/0)")
@given(B=sizes(1, 3), T=sizes(1, 4), V=sizes(2, 4))
@example(B=1, T=1, V=2)
@example(B=2, T=3, V=3)
def loss_empty(student, B, T, V):
    logits = torch.linspace(-1.0, 1.0, B * T * V).reshape(B, T, V)
    targets = torch.arange(B * T).reshape(B, T) % V
    mask = torch.zeros(B, T, dtype=torch.bool)
    if not student.raises(ValueError, FN, logits, targets, mask):
        fail("mask 全为 False 时没有抛出 ValueError。", "an all-False mask did not raise ValueError.",
             student=student, show={"mask": mask},
             hint_zh="先检查：if mask.sum() == 0: raise ValueError(...)。返回 NaN（0/0）或 0 都会悄悄地毁掉训练。",
             hint_en="Check first: if mask.sum() == 0: raise ValueError(...). Returning NaN (0/0) or 0 silently "
                     "spoils training.")
