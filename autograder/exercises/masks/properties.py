"""Hidden properties of the `masks` exercise: padding_mask, causal_mask, attention_mask.

Information boundary: query i may see key j iff key j is a real token and (causal) j <= i.
"""
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ...checks.elsewhere import ELSEWHERE, put_elsewhere, uses_elsewhere
from ...errors import StudentCrash
from ...properties._harness import check_elsewhere, check_equal, check_tensor, fail, prop, same_device_crash
from ...properties.strategies import lengths_for, padding_mask_ref, sizes

EX = "masks"


@st.composite
def length_batches(draw, lo=0, max_B=4, max_T=6):
    """(lengths, max_len): lengths (B,) in [lo, T]; max_len None or >= lengths.max()."""
    B = draw(sizes(1, max_B))
    T = draw(sizes(1, max_T))
    lengths = draw(lengths_for(B, T, lo=lo))
    max_len = draw(st.one_of(st.none(), st.integers(int(lengths.max()), max_T + 2)))
    if max_len is None and int(lengths.max()) == 0:
        max_len = T
    return lengths, max_len


def _T(lengths, max_len):
    return int(lengths.max()) if max_len is None else int(max_len)


# ---------------------------------------------------------------- sizes of real batches
#
# The draws keep B <= 4 and T <= 8; a batch in training holds dozens of sequences of hundreds of steps.
# A mask built from a fixed block (a 64 x 64 or 128 x 128 triangle computed once and sliced, a table of
# 32 positions) is right at the drawn sizes and wrong beyond them, so every value test pins batches of
# real size, with lengths of every kind (0, 1, T itself, values around 16, 32, 64, 128 and 256):
# padding_mask B = 64, T = 300; causal_mask T = 300; attention_mask, (B, 1, T, T), B = 64 with T = 20
# and B = 3 with T = 130 (a correct mask built with Python loops over b, i, j stays well within the
# time limit there; at B = 64, T = 300 it takes longer than the limit).

BIG_B, BIG_T = 64, 300
SMALL = 16  # the drawn sizes stay at or below this


def _big_lengths(lo=0, B=BIG_B, T=BIG_T):
    """(B,) lengths in [lo, T]: T itself, 1 and lo, values next to 16, 32, 64, 128 and 256, the rest spread."""
    fixed = [T, 1, lo, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, T - 1]
    spread = [(37 * i + 11) % (T + 1) for i in range(B)]
    return torch.tensor([min(T, max(lo, v)) for v in (fixed + spread)[:B]], dtype=torch.int64)


def _check_big_shape(student, out, shape, call):
    """At sizes beyond the drawn ones, a mask of another shape is a size bound in the code: say so."""
    if isinstance(out, torch.Tensor) and tuple(out.shape) != tuple(shape) and max(shape) > SMALL:
        fail(f"{call} 返回的掩码形状为 {tuple(out.shape)}，应为 {tuple(shape)}：在大小超过 {SMALL} 的批次上，"
             f"掩码没有按实际的 T 建出来（例如切片了一块预先算好的固定大小的三角或位置表）。",
             f"{call} returned a mask of shape {tuple(out.shape)}, not {tuple(shape)}: at sizes beyond {SMALL} the "
             f"mask is not built for the actual T (a slice of a fixed-size triangle or position table computed "
             f"in advance, for instance).", student=student,
             hint_zh="每次调用都按给定的 T 现算：torch.arange(T, device=...)、torch.ones(T, T, ...).tril()。"
                     "不要依赖一块固定大小（64、128、512 ...）的预计算表：真实批次的 T 可以是几百上千。",
             hint_en="Build the mask for the given T on every call: torch.arange(T, device=...), torch.ones(T, T, "
                     "...).tril(). Do not rely on a precomputed table of a fixed size (64, 128, 512, ...): real "
                     "batches have T in the hundreds or thousands.")
    return out


# ---------------------------------------------------------------- padding_mask

@prop(EX, "padding_mask", "shape_and_dtype",
      zh="padding_mask 返回形状 (B, T) 的 bool 张量，T = max_len 或 lengths.max()，在 lengths 的设备上（也检查 CPU "
         "以外的设备：有 GPU 就用 GPU，没有就用一个模拟的设备）",
      en="padding_mask returns a (B, T) bool tensor, T = max_len or lengths.max(), on lengths' device (a device "
         "other than the CPU too: the GPU where there is one, else a simulated device)")
@given(case=length_batches())
@example(case=(torch.tensor([3, 1]), None))
@example(case=(torch.tensor([1]), 1))
@example(case=(put_elsewhere(torch.tensor([3, 1, 2])), None))  # lengths on another device (elsewhere.py)
@example(case=(put_elsewhere(torch.tensor([2, 0])), 4))
def padding_shape(student, case):
    lengths, max_len = case
    call = (lambda: student.call("padding_mask", lengths, max_len)) if max_len is not None else \
        (lambda: student.call("padding_mask", lengths))
    _mask_on_lengths_device(
        student, call, lengths, (len(lengths), _T(lengths, max_len)),
        "lengths 在另一个设备上时，padding_mask 把它和 CPU 上的张量混在一起算，报错了（多半是 torch.arange(T) "
        "没有传 device）。", "With lengths on another device, padding_mask mixed it with a tensor on the CPU and "
        "raised (torch.arange(T) without device=, most likely).", PADDING_DEVICE_HINT_ZH, PADDING_DEVICE_HINT_EN)


def _mask_on_lengths_device(student, call, lengths, shape, crashed_zh, crashed_en, hint_zh, hint_en):
    """The mask `call()` returns: `shape`, bool, on lengths' device; with lengths on another device, a
    crash from mixing devices fails with `crashed_*` and a mask left on the CPU with the hint."""
    on_device = uses_elsewhere(lengths)
    try:
        out = call()
    except StudentCrash as e:
        if on_device and same_device_crash(e):
            fail(crashed_zh, crashed_en, student=student, hint_zh=hint_zh, hint_en=hint_en)
        raise
    check_tensor(out, "mask", shape=shape, dtype=torch.bool, device=None if on_device else lengths.device,
                 student=student)
    if on_device:
        check_elsewhere(out, "mask", student=student, asked_zh="lengths 在 CPU 以外的设备上",
                        asked_en="lengths was on a device other than the CPU", hint_zh=hint_zh, hint_en=hint_en)
    return out


PADDING_DEVICE_HINT_ZH = ("掩码建在 lengths 所在的设备上：torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]。"
                          "模型在 GPU 上训练时 lengths 在 GPU 上，CPU 上的掩码会让 masked_fill 报错。")
PADDING_DEVICE_HINT_EN = ("Build the mask on lengths' device: torch.arange(T, device=lengths.device)[None, :] < "
                          "lengths[:, None]. When the model trains on a GPU, lengths is on the GPU, and a mask on the CPU "
                          "makes masked_fill raise.")


@prop(EX, "padding_mask", "marks_real_tokens",
      zh="mask[b, t] == (t < lengths[b])：True 表示真实词元，填充位置为 False",
      en="mask[b, t] == (t < lengths[b]): True marks a real token, padding is False")
@given(case=length_batches())
@example(case=(torch.tensor([2, 0, 3]), 4))
@example(case=(torch.tensor([1, 3]), None))
@example(case=(torch.tensor([2, 0, 3], dtype=torch.int32), 4))  # "a 1-D int tensor": int32 too
@example(case=(torch.tensor([1, 3], dtype=torch.int32), None))
@example(case=(_big_lengths(), BIG_T))  # a batch of real size: B = 64, T = 300
@example(case=(_big_lengths(lo=1), None))  # T = lengths.max() = 300
def padding_values(student, case):
    lengths, max_len = case
    T = _T(lengths, max_len)
    out = student.call("padding_mask", lengths, max_len) if max_len is not None else student.call("padding_mask", lengths)
    _check_big_shape(student, out, (len(lengths), T), f"padding_mask(<({len(lengths)},)>, max_len={max_len})")
    check_equal(out, padding_mask_ref(lengths, T), "mask", student=student,
                show={"lengths": lengths, "max_len": max_len},
                hint_zh="位置从 0 开始计数：长度为 L 的序列真实位置是 0..L-1。True = 真实词元，不是填充。",
                hint_en="Positions count from 0: a sequence of length L has real positions 0..L-1. "
                        "True = real token, not padding.")


@prop(EX, "padding_mask", "rejects_bad_lengths",
      zh="负长度或超过 max_len 的长度抛出 ValueError",
      en="a negative length, or one above max_len, raises ValueError")
@given(B=sizes(1, 3), T=sizes(1, 5), bad=st.sampled_from(["negative", "too_long"]), data=st.data())
@example(B=2, T=3, bad="negative", data=None)
@example(B=2, T=3, bad="too_long", data=None)
@example(B=2, T=0, bad="too_long", data=None)  # max_len=0 is a max_len too (not "no max_len")
def padding_rejects(student, B, T, bad, data):
    lengths = torch.full((B,), T, dtype=torch.int64)
    k = data.draw(st.integers(0, B - 1)) if data is not None else 0
    if bad == "negative":
        lengths[k] = -1
        args = (lengths, T)
    else:
        lengths[k] = T + 1
        args = (lengths, T)
    if not student.raises(ValueError, "padding_mask", *args):
        fail(f"padding_mask 对非法长度（{bad}）没有抛出 ValueError。",
             f"padding_mask did not raise ValueError for an invalid length ({bad}).",
             show={"lengths": lengths, "max_len": T}, student=student,
             hint_zh="先检查输入：if (lengths < 0).any() or (lengths > T).any(): raise ValueError(...)。"
                     "判断有没有给 max_len 要用 max_len is not None（max_len=0 也是给了）。",
             hint_en="Validate first: if (lengths < 0).any() or (lengths > T).any(): raise ValueError(...). "
                     "Test whether max_len was given with `max_len is not None` (max_len=0 is given too).")


# ---------------------------------------------------------------- causal_mask

# "Built on `device`" cannot show on the CPU alone: every tensor is on the CPU whether or not the
# function used `device`.  So the properties also ask for a device that is not the CPU, ELSEWHERE
# (checks/elsewhere.py): the GPU on a machine that has one, else a simulated device that holds its
# values on the CPU.  Code that uses `device` (a factory's device=, .to(device) afterwards) builds
# there; code that ignores it returns a mask on the CPU, or raises when it mixes the two.


@prop(EX, "causal_mask", "shape_dtype_device",
      zh="causal_mask(T, device) 返回 (T, T) 的 bool 张量，建在 device 上（也检查 CPU 以外的设备：有 GPU 就用 GPU，"
         "没有就用一个模拟的设备；忽略 device 的代码会返回 CPU 上的掩码）",
      en="causal_mask(T, device) returns a (T, T) bool tensor built on device (a device other than the CPU too: the "
         "GPU where there is one, else a simulated device; code that ignores device returns a mask on the CPU)")
@given(T=sizes(1, 8), device=st.sampled_from([None, "cpu", torch.device("cpu"), ELSEWHERE]))
@example(T=1, device=None)
@example(T=3, device=ELSEWHERE)
def causal_shape(student, T, device):
    if device is ELSEWHERE:
        return _causal_elsewhere(student, T)
    out = student.call("causal_mask", T, device=device) if device is not None else student.call("causal_mask", T)
    check_tensor(out, "mask", shape=(T, T), dtype=torch.bool, device=device or "cpu", student=student)


DEVICE_HINT_ZH = ("把 device 传给创建张量的函数：torch.ones(T, T, dtype=torch.bool, device=device).tril()；在 CPU 上建好再 "
                  ".to(device) 也可以。模型在 GPU 上训练时，注意力分数在 GPU 上，建在 CPU 上的掩码会让 masked_fill 报错。")
DEVICE_HINT_EN = ("Pass device to the function that creates the tensor: torch.ones(T, T, dtype=torch.bool, "
                  "device=device).tril(); building on the CPU and calling .to(device) works too. When the model trains "
                  "on a GPU the attention scores are on the GPU, and a mask left on the CPU makes masked_fill raise.")


def _causal_elsewhere(student, T):
    out = student.call("causal_mask", T, device=ELSEWHERE)
    check_tensor(out, "mask", shape=(T, T), dtype=torch.bool, student=student)
    check_elsewhere(out, "mask", student=student,
                    asked_zh=f"causal_mask({T}, device) 要求建在 CPU 以外的设备上", asked_en=f"causal_mask({T}, device) "
                    f"was asked for a device other than the CPU", hint_zh=DEVICE_HINT_ZH, hint_en=DEVICE_HINT_EN)


def _causal_values(student, T, part):
    out = student.call("causal_mask", T)
    ref = torch.ones(T, T, dtype=torch.bool).tril()
    _check_big_shape(student, out, (T, T), f"causal_mask({T})")
    check_tensor(out, "mask", shape=(T, T), dtype=torch.bool, student=student)
    i, j = torch.meshgrid(torch.arange(T), torch.arange(T), indexing="ij")
    region = (j > i) if part == "future" else (j <= i)
    bad = (out != ref) & region
    if bool(bad.any()):
        q, k = (int(v) for v in bad.nonzero()[0])
        if part == "future":
            fail(f"查询 i={q} 可以看到未来的键 j={k}（j > i 必须为 False）。",
                 f"query i={q} may attend to the future key j={k} (j > i must be False).",
                 show={"期望 expected mask": ref, "实际 got mask": out}, student=student,
                 hint_zh="行是查询 i，列是键 j；下三角（含对角线）为 True：torch.tril。注意 True = 可以看。",
                 hint_en="Rows are queries i, columns keys j; the lower triangle incl. the diagonal is True "
                         "(torch.tril). True = may attend.")
        fail(f"查询 i={q} 不能看到键 j={k}，但 j <= i 应该可见（包括自己 j = i）。",
             f"query i={q} is blocked from key j={k}, but j <= i must be allowed (itself included, j = i).",
             show={"期望 expected mask": ref, "实际 got mask": out}, student=student,
             hint_zh="对角线必须为 True：位置 t 的预测可以看到 t 本身。triu(1) 取反或 tril() 都对，tril(-1) 不对。",
             hint_en="The diagonal must be True: the prediction at t may see t itself. "
                     "tril() is right, tril(-1) is off by one.")


@prop(EX, "causal_mask", "future_is_blocked",
      zh="未来的键被屏蔽：j > i 时 mask[i, j] 为 False",
      en="future keys are blocked: mask[i, j] is False for j > i")
@given(T=sizes(1, 8))
@example(T=1)
@example(T=3)
@example(T=BIG_T)  # beyond a precomputed 64 x 64, 128 x 128 or 256 x 256 triangle
def causal_future(student, T):
    _causal_values(student, T, "future")


@prop(EX, "causal_mask", "past_and_present_allowed",
      zh="过去和当前的键可见：j <= i 时 mask[i, j] 为 True",
      en="past and present keys are allowed: mask[i, j] is True for j <= i")
@given(T=sizes(1, 8))
@example(T=1)
@example(T=3)
@example(T=BIG_T)
def causal_past(student, T):
    _causal_values(student, T, "past")


# ---------------------------------------------------------------- attention_mask

def _attention_ref(lengths, T, causal):
    keys = padding_mask_ref(lengths, T)[:, None, None, :]  # (B, 1, 1, T)
    m = keys.expand(-1, 1, T, T)
    if causal:
        m = m & torch.ones(T, T, dtype=torch.bool).tril()
    return m


def _call_attention_mask(student, lengths, max_len, causal):
    kw = {"causal": causal}
    if max_len is not None:
        kw["max_len"] = max_len
    return student.call("attention_mask", lengths, **kw)


@prop(EX, "attention_mask", "shape_broadcasts_over_heads",
      zh="attention_mask 返回 (B, 1, T, T) 的 bool 张量，可广播到 (B, H, T, T)，在 lengths 的设备上（也检查 CPU 以外的设备）",
      en="attention_mask returns a (B, 1, T, T) bool tensor that broadcasts to (B, H, T, T), on lengths' device (a "
         "device other than the CPU too)")
@given(case=length_batches(), causal=st.booleans())
@example(case=(torch.tensor([1]), None), causal=True)
@example(case=(torch.tensor([0, 2]), None), causal=False)  # a sequence of length 0 (lengths in [0, T])
@example(case=(put_elsewhere(torch.tensor([3, 1])), None), causal=True)  # lengths on another device (elsewhere.py)
@example(case=(put_elsewhere(torch.tensor([2, 0, 1])), 4), causal=False)
def attention_shape(student, case, causal):
    lengths, max_len = case
    T = _T(lengths, max_len)
    _mask_on_lengths_device(
        student, lambda: _call_attention_mask(student, lengths, max_len, causal), lengths, (len(lengths), 1, T, T),
        "lengths 在另一个设备上时，attention_mask 把它和 CPU 上的张量混在一起算，报错了（多半是 causal_mask(T) "
        "或 torch.arange(T) 没有传 device）。", "With lengths on another device, attention_mask mixed it with a "
        "tensor on the CPU and raised (causal_mask(T) or torch.arange(T) without device=, most likely).",
        ATTENTION_DEVICE_HINT_ZH, ATTENTION_DEVICE_HINT_EN)


ATTENTION_DEVICE_HINT_ZH = ("掩码的每一部分都建在 lengths 所在的设备上：padding_mask(lengths, T) 已经在那里，因果部分用 "
                            "causal_mask(T, device=lengths.device)。合同：输出保持输入的设备。")
ATTENTION_DEVICE_HINT_EN = ("Build every part of the mask on lengths' device: padding_mask(lengths, T) is already there, "
                            "and the causal part is causal_mask(T, device=lengths.device). The contract: outputs keep "
                            "the device of the inputs.")


@prop(EX, "attention_mask", "blocks_padded_keys_only",
      zh="不带因果时：mask[b, 0, i, j] == (j < lengths[b])，屏蔽的是填充的键（列），不是查询（行）；长度为 0 的序列没有可看的键",
      en="without causal: mask[b, 0, i, j] == (j < lengths[b]); padded keys (columns) are blocked, not queries (rows); "
         "a sequence of length 0 has no key to attend to")
@given(case=length_batches())
@example(case=(torch.tensor([3, 1]), None))
@example(case=(torch.tensor([2]), 3))
@example(case=(torch.tensor([2, 0, 3]), None))  # length 0: no key of that sequence may be attended to
@example(case=(_big_lengths(T=20), 20))  # batches of real size: B = 64, T = 20
@example(case=(torch.tensor([130, 1, 65, 0]), None))  # T = 130, past a 64 x 64 or 128 x 128 block
def attention_padding(student, case):
    lengths, max_len = case
    T = _T(lengths, max_len)
    out = _call_attention_mask(student, lengths, max_len, False)
    _check_big_shape(student, out, (len(lengths), 1, T, T), f"attention_mask(<({len(lengths)},)>, max_len={max_len})")
    check_tensor(out, "mask", shape=(len(lengths), 1, T, T), dtype=torch.bool, student=student)
    check_equal(out, _attention_ref(lengths, T, False), "mask", student=student, show={"lengths": lengths},
                hint_zh="填充掩码 (B, T) 要放在键的轴上：mask[:, None, None, :]，形状 (B, 1, 1, T)。"
                        "放在查询轴上（[:, None, :, None]）会让真实查询去看填充的键。",
                hint_en="Put the (B, T) padding mask on the key axis: mask[:, None, None, :], shape (B, 1, 1, T). "
                        "On the query axis ([:, None, :, None]) real queries still attend to padded keys.")


@prop(EX, "attention_mask", "causal_and_padding_combined",
      zh="带因果时：mask[b, 0, i, j] == (j < lengths[b]) 且 (j <= i)",
      en="with causal: mask[b, 0, i, j] == (j < lengths[b]) and (j <= i)")
@given(case=length_batches())
@example(case=(torch.tensor([3, 1]), None))
@example(case=(torch.tensor([2]), 3))
@example(case=(torch.tensor([0, 3]), 4))  # length 0: every row of that sequence is False
@example(case=(_big_lengths(lo=1, T=20), None))  # batches of real size: B = 64, T = lengths.max() = 20
@example(case=(torch.tensor([129, 130, 1]), None))  # T = 130, past a 64 x 64 or 128 x 128 block
def attention_causal(student, case):
    lengths, max_len = case
    T = _T(lengths, max_len)
    out = _call_attention_mask(student, lengths, max_len, True)
    _check_big_shape(student, out, (len(lengths), 1, T, T),
                     f"attention_mask(<({len(lengths)},)>, max_len={max_len}, causal=True)")
    check_tensor(out, "mask", shape=(len(lengths), 1, T, T), dtype=torch.bool, student=student)
    check_equal(out, _attention_ref(lengths, T, True), "mask", student=student, show={"lengths": lengths},
                hint_zh="两个条件都要满足：用 & 合并填充掩码（键轴）和因果掩码（下三角，含对角线）。",
                hint_en="Both conditions must hold: combine the padding mask (key axis) and the causal mask "
                        "(lower triangle incl. the diagonal) with &.")
