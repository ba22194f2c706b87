"""Hidden properties of the `positional_encoding` exercise: sinusoidal_encoding, add_positional_encoding.

PE[t, 2i] = sin(t * w_i), PE[t, 2i+1] = cos(t * w_i), w_i = base**(-2i/d), t = 0, 1, ...
Each column pair (2i, 2i+1) is a point on the unit circle turning at speed w_i, so PE[t+k] is
PE[t] rotated by the angles that PE[k] encodes: the relative-position property.

Tolerances: the angle t * w_i is computed in float32 in many correct ways (exp(-log), pow,
division, numpy), each a few float32 roundings of a number up to t; sin and cos pass that error
on, so an entry may be off by about T * eps32 (measured: at most 0.6 T eps).  `pe_atol(T)`
allows 8 T eps32 + 1e-6, i.e. 2.4e-5 at T = 6 and 1e-3 at T = 1000, far below the O(1)
differences every real mistake makes.
"""
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ...checks.elsewhere import ELSEWHERE, put_elsewhere
from ...errors import StudentCrash
from ...properties._harness import check_close, check_elsewhere, check_tensor, fail, prop, same_device_crash
from ...properties.strategies import float_tensors, sizes

EX = "positional_encoding"
EPS32 = torch.finfo(torch.float32).eps
BASES = [None, 10000.0, 100.0, 10.0, 1000.0, 500.0, 100000.0]  # None: the default base 10000


def pe_ref(T, d, base=10000.0):
    """Trusted float64 reference (T, d), interleaved sin/cos, positions from 0."""
    t = torch.arange(T, dtype=torch.float64)[:, None]  # (T, 1)
    w = float(base) ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    angle = t * w  # (T, d/2)
    pe = torch.empty(T, d, dtype=torch.float64)
    pe[:, 0::2] = angle.sin()
    pe[:, 1::2] = angle.cos()
    return pe


def pe_atol(T):
    """Absolute tolerance for float32 angle arithmetic done another way (see module docstring)."""
    return 1e-6 + 8 * max(T, 1) * EPS32


def _call_pe(student, T, d, base=None):
    if base is None:
        return student.call("sinusoidal_encoding", T, d)
    return student.call("sinusoidal_encoding", T, d, base)


def _base(base):
    return 10000.0 if base is None else base


HINT_FORMULA_ZH = ("逐项对照公式：位置 t 从 0 开始；列 2i 放 sin、列 2i+1 放 cos（交错排列，不是前一半 sin 后一半 cos）；"
                   "同一对列用同一个频率 w_i = base**(-2i/d)，指数是 2i/d（i 是列对的编号），是除以 base**(2i/d) 而不是乘。")
HINT_FORMULA_EN = ("Check each part of the formula: positions t start at 0; column 2i holds sin, column 2i+1 cos "
                   "(interleaved, not all sin then all cos); both columns of a pair share the frequency "
                   "w_i = base**(-2i/d), exponent 2i/d with i the pair index, and t is divided by base**(2i/d), "
                   "not multiplied.")


@st.composite
def pe_sizes(draw, min_T=1, max_T=8, max_half_d=4):
    """(T, d, base): d even, base None (the default) or a float."""
    T = draw(sizes(min_T, max_T))
    d = 2 * draw(sizes(1, max_half_d))
    base = draw(st.sampled_from(BASES))
    return T, d, base


# ---------------------------------------------------------------- sinusoidal_encoding


def _args(T, d, base):
    return f"{T}, {d}" + ("" if base is None else f", {base}")


def _not_the_earlier_table(student, out, now, earlier):
    """`out`, of sinusoidal_encoding(*now) called right after sinusoidal_encoding(*earlier), must not be (a
    slice of) the earlier call's table when that differs from the right one: a table kept between calls."""
    if not isinstance(out, torch.Tensor) or out.dim() != 2:
        return
    (T, d, base), (T1, d1, base1) = now, earlier
    a, b = out.shape
    if a > T1 or b > d1:
        return
    kept = pe_ref(T1, d1, _base(base1))[:a, :b]
    right = pe_ref(T, d, _base(base))
    if kept.shape == right.shape and torch.allclose(kept, right, atol=pe_atol(T), rtol=0):
        return  # the earlier table is the right one here: nothing to tell apart
    if torch.allclose(out.detach().double(), kept, atol=pe_atol(T1), rtol=0):
        fail(f"sinusoidal_encoding({_args(T, d, base)}) 紧接在 sinusoidal_encoding({_args(T1, d1, base1)}) 之后调用，"
             f"返回的是前一次调用的表（形状 {tuple(out.shape)}）：表在两次调用之间被保留了下来，换了大小或 base 也没有重新计算。",
             f"sinusoidal_encoding({_args(T, d, base)}), called right after sinusoidal_encoding({_args(T1, d1, base1)}), "
             f"returns the earlier call's table (shape {tuple(out.shape)}): a table kept between calls is returned "
             f"for another size or base.",
             show={"期望 expected PE": right, "实际 got PE": out}, student=student,
             hint_zh="每次调用都按这次的 T、d、base 计算。要缓存的话，用全部参数 (T, d, base) 作键"
                     "（例如 functools.lru_cache），或者缓存更大的表时检查它够大、base 相同。",
             hint_en="Compute the table for this call's T, d and base. To cache, key on every argument (T, d, base) "
                     "(functools.lru_cache, for instance), or check that a larger cached table is large enough and "
                     "has the same base.")

@prop(EX, "sinusoidal_encoding", "shape_and_dtype",
      zh="sinusoidal_encoding(T, d) 返回形状 (T, d) 的 float32 张量（在 CPU 上）",
      en="sinusoidal_encoding(T, d) returns a (T, d) float32 tensor (on the CPU)")
@given(case=pe_sizes())
@example(case=(1, 2, None))
@example(case=(5, 8, 100.0))
def pe_shape(student, case):
    T, d, base = case
    out = _call_pe(student, T, d, base)
    check_tensor(out, "PE", shape=(T, d), student=student)
    if out.dtype != torch.float32:
        fail(f"PE 的 dtype 应为 torch.float32，实际为 {out.dtype}。",
             f"PE should have dtype torch.float32, got {out.dtype}.", student=student,
             hint_zh="在 float64 里计算没问题，但返回前要 .float()（或 .to(torch.float32)）；"
                     "注意 numpy 默认是 float64，torch.from_numpy 会保留它。",
             hint_en="Computing in float64 is fine, but return .float() (or .to(torch.float32)); note that "
                     "numpy defaults to float64 and torch.from_numpy keeps it.")
    check_tensor(out, "PE", device="cpu", student=student, finite=True)


HAND_CASES = [(3, 4, None), (2, 2, None), (3, 4, 100.0)]


@prop(EX, "sinusoidal_encoding", "hand_example",
      zh="手算的小例子：位置 0 是 [0, 1, 0, 1, ...]；T=3, d=4 时第二对列的频率是 1/100",
      en="small examples worked by hand: position 0 is [0, 1, 0, 1, ...]; for T=3, d=4 the second "
         "column pair turns at 1/100")
@given(case=st.sampled_from(HAND_CASES))
@example(case=HAND_CASES[0])
@example(case=HAND_CASES[1])
@example(case=HAND_CASES[2])
def pe_hand(student, case):
    T, d, base = case
    b = _base(base)
    out = _call_pe(student, T, d, base)
    check_tensor(out, "PE", shape=(T, d), student=student)
    w2 = b ** (-2 / d) if d > 2 else None
    by_hand_zh = (f"d={d}, base={b:g}: w_0 = 1" + (f", w_1 = base**(-2/{d}) = {w2:g}" if w2 else "")
                  + "；PE[0] = [sin 0, cos 0, ...] = [0, 1, ...]，PE[1] = [sin(w_0), cos(w_0), ...]")
    by_hand_en = (f"d={d}, base={b:g}: w_0 = 1" + (f", w_1 = base**(-2/{d}) = {w2:g}" if w2 else "")
                  + "; PE[0] = [sin 0, cos 0, ...] = [0, 1, ...], PE[1] = [sin(w_0), cos(w_0), ...]")
    check_close(out, pe_ref(T, d, b), "PE", atol=1e-5, rtol=0, student=student,
                show={"手算 by hand": f"{by_hand_zh}\n{by_hand_en}"},
                hint_zh="位置 0 的角度是 0：偶数列 sin 0 = 0，奇数列 cos 0 = 1。" + HINT_FORMULA_ZH,
                hint_en="At position 0 every angle is 0: even columns sin 0 = 0, odd columns cos 0 = 1. "
                        + HINT_FORMULA_EN)


@prop(EX, "sinusoidal_encoding", "matches_formula",
      zh="每个元素都等于 PE[t, 2i] = sin(t / base**(2i/d))、PE[t, 2i+1] = cos(t / base**(2i/d))（包括非默认的 base 和很大的 T）",
      en="every entry equals PE[t, 2i] = sin(t / base**(2i/d)), PE[t, 2i+1] = cos(t / base**(2i/d)) "
         "(also for a non-default base and a large T)")
@given(case=pe_sizes())
@example(case=(1, 2, None))
@example(case=(4, 6, 10.0))
@example(case=(6, 8, 100.0))
@example(case=(1000, 8, None))
@example(case=(512, 64, 1000.0))
# a second call with other arguments: right after a call of another size, or of another base
@example(case=(200, 8, None, (5, 8, None)))
@example(case=(6, 8, None, (6, 8, 100.0)))
def pe_formula(student, case):
    T, d, base = case[:3]
    if len(case) > 3:  # (T, d, base) of a call made just before, whose table must not come back
        _call_pe(student, *case[3])
        _not_the_earlier_table(student, _call_pe(student, T, d, base), (T, d, base), case[3])
    out = _call_pe(student, T, d, base)
    check_tensor(out, "PE", shape=(T, d), student=student)
    check_close(out, pe_ref(T, d, _base(base)), "PE", atol=pe_atol(T), rtol=0, student=student,
                show={"T, d, base": f"T={T}, d={d}, base={'10000 (default)' if base is None else base}"},
                hint_zh=HINT_FORMULA_ZH + " 如果只在非默认 base 时出错：你是否忽略了参数 base 或默认值不是 10000？",
                hint_en=HINT_FORMULA_EN + " If only a non-default base fails: is the `base` argument ignored, "
                                          "or is its default not 10000?")


@prop(EX, "sinusoidal_encoding", "relative_position_is_a_rotation",
      zh="相对位置：对每一对列 (2i, 2i+1)，PE[t+k] 是 PE[t] 按 PE[k] 所表示的角度旋转得到的（sin/cos 的加法公式）",
      en="relative position: for each column pair (2i, 2i+1), PE[t+k] is PE[t] rotated by the angle that "
         "PE[k] encodes (the sin/cos addition formulas)")
@given(case=pe_sizes(min_T=2, max_T=10))
@example(case=(3, 2, None))
@example(case=(4, 4, 10.0))
def pe_rotation(student, case):
    T, d, base = case
    out = _call_pe(student, T, d, base)
    check_tensor(out, "PE", shape=(T, d), student=student, finite=True)
    pe = out.detach().to(torch.float64)
    s, c = pe[:, 0::2], pe[:, 1::2]  # (T, d/2) each: sin and cos of t * w_i if laid out right
    tol = 3 * pe_atol(T)
    for k in list(range(1, T)) + [0]:  # k = 0 last: it only says PE[0] = (0, 1), the hand example's job
        for t in range(T - k):
            # [sin, cos](t + k) = R(k) [sin, cos](t) with R(k) built from row k:
            # sin(a + b) = sin a cos b + cos a sin b,  cos(a + b) = cos a cos b - sin a sin b
            want_s = s[t] * c[k] + c[t] * s[k]
            want_c = c[t] * c[k] - s[t] * s[k]
            bad = ((s[t + k] - want_s).abs() > tol) | ((c[t + k] - want_c).abs() > tol)
            if bool(bad.any()):
                i = int(bad.nonzero()[0])
                fail(f"列对 ({2 * i}, {2 * i + 1}) 不满足相对位置性质：PE[{t}+{k}] 不是 PE[{t}] 按 PE[{k}] 旋转的结果。",
                     f"column pair ({2 * i}, {2 * i + 1}) breaks the relative-position property: PE[{t}+{k}] is not "
                     f"PE[{t}] rotated by the angle of PE[{k}].",
                     show={"PE": out,
                           f"PE[{t + k}, {2 * i}:{2 * i + 2}]": f"{float(s[t + k, i]):.6g}, {float(c[t + k, i]):.6g}",
                           f"R(PE[{k}]) · PE[{t}, {2 * i}:{2 * i + 2}]": f"{float(want_s[i]):.6g}, {float(want_c[i]):.6g}",
                           "T, d, base": f"T={T}, d={d}, base={'10000 (default)' if base is None else base}"},
                     student=student,
                     hint_zh="正确布局下，列 2i 是 sin(t·w_i)、列 2i+1 是 cos(t·w_i)（同一个 w_i），t 从 0 开始，"
                             "于是 PE[t+k] 由 PE[t] 经一个只依赖 k 的旋转得到——这就是模型能读出相对位置的原因。"
                             "检查 sin/cos 是否交错、是否放在正确的列、两列是否用同一个频率、位置是否从 0 开始。",
                     hint_en="With the right layout column 2i is sin(t·w_i) and column 2i+1 is cos(t·w_i) (the same "
                             "w_i), t from 0, so PE[t+k] is PE[t] turned by a rotation that depends on k only — which "
                             "is why a model can read relative positions. Check that sin and cos are interleaved, in the "
                             "right columns, share one frequency per pair, and that positions start at 0.")


@prop(EX, "sinusoidal_encoding", "rejects_odd_d",
      zh="奇数 d 抛出 ValueError（sin/cos 需要成对的列）",
      en="an odd d raises ValueError (sin/cos need columns in pairs)")
@given(T=sizes(1, 5), d=st.sampled_from([1, 3, 5, 7, 9]))
@example(T=2, d=3)
@example(T=1, d=1)
def pe_odd(student, T, d):
    if not student.raises(ValueError, "sinusoidal_encoding", T, d):
        fail(f"sinusoidal_encoding(T={T}, d={d}) 没有抛出 ValueError。",
             f"sinusoidal_encoding(T={T}, d={d}) did not raise ValueError.", student=student,
             hint_zh="先检查输入：if d % 2 != 0: raise ValueError(...)。别的异常（如形状不匹配的 RuntimeError）不算。",
             hint_en="Validate first: if d % 2 != 0: raise ValueError(...). Any other exception (e.g. a shape "
                     "mismatch RuntimeError) does not count.")


# ---------------------------------------------------------------- add_positional_encoding

@st.composite
def x_batches(draw, dtype=torch.float32, max_B=3, max_T=6, max_half_d=4):
    """A (B, T, d) batch of embeddings, d even."""
    B = draw(sizes(1, max_B))
    T = draw(sizes(1, max_T))
    d = 2 * draw(sizes(1, max_half_d))
    return draw(float_tensors((B, T, d), dtype=dtype))


def _x(rows):
    return torch.tensor(rows, dtype=torch.float32)


@prop(EX, "add_positional_encoding", "adds_encoding_to_every_sequence",
      zh="add_positional_encoding(X) == X + PE(T, d)：同一张 (T, d) 表加到批里的每个序列上，X 不缩放",
      en="add_positional_encoding(X) == X + PE(T, d): the same (T, d) table is added to every sequence of "
         "the batch, X is not scaled")
@given(X=x_batches())
@example(X=_x([[[1.0, -1.0], [0.5, 2.0], [0.0, 0.25]]] * 2))  # B=2, T=3, d=2
@example(X=_x([[[1.0, 2.0, -1.0, 0.5]] * 3] * 3))  # B = T = 3, d=4
@example(X=_x([[[0.5, 0.5, 0.5, 0.5]]]))  # B = T = 1
@example(X=_x([[[0.1] * 4] * 4]))  # B = 1, T = 4
@example(X=torch.zeros(1, 1100, 4))  # a long sequence: no fixed-size table of 512 or 1024 rows
# other dtypes: the values here, the dtype in keeps_dtype_device_and_input
@example(X=torch.tensor([[[0.5, -0.5, 1.0, 0.0]] * 3] * 2, dtype=torch.float64))
@example(X=torch.tensor([[[0.5, -0.5, 1.0, 0.0]] * 3] * 2, dtype=torch.float16))
@example(X=torch.tensor([[[0.5, -0.5, 1.0, 0.0]] * 3], dtype=torch.bfloat16))
# a second call with another T and d, right after a first one (X, first): no table kept between calls
@example(X=(torch.zeros(2, 5, 6), torch.zeros(3, 130, 6)))
@example(X=(torch.zeros(1, 40, 8), torch.zeros(2, 7, 4)))
def add_values(student, X):
    first = None
    if isinstance(X, tuple):
        first, X = X
        student.call("add_positional_encoding", first)
    B, T, d = X.shape
    try:
        out = student.call("add_positional_encoding", X)
    except StudentCrash as e:
        if first is None:
            raise
        fail(f"add_positional_encoding 先用形状 {tuple(first.shape)} 的 X 调用，再用形状 {(B, T, d)} 的 X 调用时，"
             f"第二次调用抛出了异常（{str(e.en)[:80]}）。",
             f"add_positional_encoding, called with X of shape {tuple(first.shape)} and then with X of shape "
             f"{(B, T, d)}, raised on the second call ({str(e.en)[:80]}).",
             show={"异常 exception": "\n".join(str(v) for _, v in e.details)}, student=student,
             hint_zh="每次调用都按这次 X 的 T、d 计算编码（sinusoidal_encoding(X.shape[1], X.shape[2])）：不要把第一次"
                     "调用算出的表存下来给之后大小不同的调用用。",
             hint_en="Compute the encoding for this call's T and d (sinusoidal_encoding(X.shape[1], X.shape[2])): do "
                     "not keep the table of the first call for later calls of other sizes.")
    check_tensor(out, "output", shape=(B, T, d), student=student)
    expected = X.to(torch.float64) + pe_ref(T, d)[None]  # (B, T, d)
    check_close(out, expected, "output", atol=_add_atol(X.dtype, T), rtol=0, student=student,
                show={"X": X, "PE(T, d) (float64)": pe_ref(T, d)},
                hint_zh="形状 (B, T, d)：PE 是 (T, d)，取 T = X.shape[1]、d = X.shape[2]，"
                        "直接 X + PE（会沿批维广播，即 PE[None]），不要再乘 sqrt(d) 或别的系数。",
                hint_en="Shapes (B, T, d): PE is (T, d) with T = X.shape[1] and d = X.shape[2]; return X + PE, "
                        "which broadcasts over the batch (PE[None]). Do not multiply X by sqrt(d) or anything else.")


@prop(EX, "add_positional_encoding", "keeps_dtype_device_and_input",
      zh="输出保持 X 的 dtype（float64 得到 float64，float16 / bfloat16 也一样）和设备（也检查 CPU 以外的设备：有 GPU "
         "就用 GPU，没有就用一个模拟的设备），对 X 可微，X 本身不被修改，T = 1 也可以",
      en="the output keeps X's dtype (a float64 input gives float64, float16 / bfloat16 too) and device (a device "
         "other than the CPU too: the GPU where there is one, else a simulated device), is differentiable in X, X "
         "itself is not modified, T = 1 works")
@given(X=x_batches(dtype=torch.float64), dtype=st.sampled_from([torch.float64, torch.float32]), where=st.just("cpu"))
@example(X=torch.tensor([[[0.5, -0.5]]], dtype=torch.float64), dtype=torch.float64, where="cpu")
@example(X=torch.tensor([[[0.5, -0.5, 1.0, 0.0]]] * 2, dtype=torch.float64), dtype=torch.float32, where="cpu")
@example(X=torch.tensor([[[0.5, -0.5, 1.0, 0.0]] * 3] * 2, dtype=torch.float64), dtype=torch.float16, where="cpu")
@example(X=torch.tensor([[[0.5, -0.5, 1.0, 0.0]] * 3], dtype=torch.float64), dtype=torch.bfloat16, where="cpu")
# X on a device other than the CPU (the GPU where there is one, else a simulated one: checks/elsewhere.py)
@example(X=torch.tensor([[[0.5, -0.5, 1.0, 0.0, 2.0, 1.5]] * 3] * 2, dtype=torch.float64), dtype=torch.float32,
         where=ELSEWHERE.name)
def add_dtype(student, X, dtype, where):
    # every entry at least 0.25 away from 0: a scaled X then shows in the values (and is theirs to report)
    X = X.detach().abs() + 0.25
    if where == ELSEWHERE.name:
        return _add_elsewhere(student, put_elsewhere(X.to(dtype)))
    # a fresh leaf: the pinned example's own tensor must not collect .grad from run to run
    X = X.detach().to(dtype).clone().requires_grad_(dtype in (torch.float32, torch.float64))
    B, T, d = X.shape
    try:
        out = student.call("add_positional_encoding", X)
    except StudentCrash:
        if _fails_in_float32(student, X):
            return
        raise
    if tuple(out.shape) != (B, T, d) and _fails_in_float32(student, X):
        return
    check_tensor(out, "output", shape=(B, T, d), student=student)
    if out.dtype != dtype:
        fail(f"输入 X 是 {dtype}，输出却是 {out.dtype}。",
             f"X is {dtype} but the output is {out.dtype}.", student=student, show={"X": X},
             hint_zh="相加前把 PE 转成 X 的类型和设备：pe.to(dtype=X.dtype, device=X.device)。"
                     "不要把 X 转成 float32。",
             hint_en="Convert PE to X's type and device before adding: pe.to(dtype=X.dtype, device=X.device). "
                     "Do not cast X to float32.")
    check_tensor(out, "output", device=X.device, student=student)
    # the values are adds_encoding_to_every_sequence's: a wrong value costs points there only
    if X.requires_grad:  # the embeddings below are learned: the gradient must reach X, unchanged
        hint_zh = "直接返回 X + pe：不要 X.detach()、X.data、torch.no_grad() 或 torch.tensor(...) 重新包装。"
        hint_en = "Return X + pe: no X.detach(), X.data, torch.no_grad() or re-wrapping with torch.tensor(...)."
        if not out.requires_grad:
            fail("输出与 X 断开了（requires_grad=False）：梯度传不回词嵌入。",
                 "The output is cut off from X (requires_grad=False): no gradient reaches the embeddings.",
                 student=student, show={"X": X}, hint_zh=hint_zh, hint_en=hint_en)
        values_right = torch.allclose(out.detach().double(), X.detach().double() + pe_ref(T, d)[None],
                                      atol=_add_atol(dtype, T), rtol=0)
        if not values_right:  # a scaled X has a scaled gradient too: the values test reports it
            return
        G = torch.linspace(-1, 1, out.numel(), dtype=torch.float64).reshape(out.shape)
        (out * G.to(out.dtype)).sum().backward()
        check_tensor(X.grad, "X.grad", shape=X.shape, student=student)
        check_close(X.grad, G, "X.grad", atol=1e-6, rtol=0, student=student,
                    show={"X": X, "损失 loss": "sum(output * G)", "G": G}, hint_zh="加法对 X 的梯度就是上游梯度本身。"
                    + hint_zh, hint_en="The gradient of a sum with respect to X is the upstream gradient itself. "
                    + hint_en)


ADD_DEVICE_HINT_ZH = ("PE 要放到 X 所在的设备上再相加：pe = sinusoidal_encoding(T, d).to(dtype=X.dtype, device=X.device)。"
                      "模型在 GPU 上训练时 X 在 GPU 上，CPU 上的 PE 加不上去。")
ADD_DEVICE_HINT_EN = ("Put PE on X's device before adding: pe = sinusoidal_encoding(T, d).to(dtype=X.dtype, "
                      "device=X.device). When the model trains on a GPU, X is on the GPU, and a PE on the CPU cannot be "
                      "added to it.")


def _add_elsewhere(student, X):
    """X on another device: the output is on it too, in X's dtype, with the right values."""
    B, T, d = X.shape
    try:
        out = student.call("add_positional_encoding", X)
    except StudentCrash as e:
        if not same_device_crash(e) and _fails_in_float32(student, X):
            return
        if same_device_crash(e):
            fail("X 在另一个设备上时，add_positional_encoding 把它和 CPU 上的 PE 相加，报错了。",
                 "With X on another device, add_positional_encoding added a PE that is on the CPU to it, and raised.",
                 student=student, show={"X": X}, hint_zh=ADD_DEVICE_HINT_ZH, hint_en=ADD_DEVICE_HINT_EN)
        raise
    check_tensor(out, "output", shape=(B, T, d), dtype=X.dtype, student=student)
    check_elsewhere(out, "output", student=student, asked_zh="X 在 CPU 以外的设备上",
                    asked_en="X was on a device other than the CPU", hint_zh=ADD_DEVICE_HINT_ZH,
                    hint_en=ADD_DEVICE_HINT_EN)


def _fails_in_float32(student, X):
    """True if the function also crashes, or returns the wrong shape, for the same X in float32 on the
    CPU, and yet adds an encoding of the right shape to a batch with as many sequences as positions
    (code that confuses the batch and time axes works there): then the fault is not the dtype's or
    the device's, and adds_encoding_to_every_sequence reports it.  A function that works nowhere (a
    stub, code that always raises) is not left to it: it keeps no dtype at all."""
    X32 = X.detach().to(torch.float32).clone()
    try:
        out = student.call("add_positional_encoding", X32)
    except StudentCrash:
        pass
    else:
        if isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(X32.shape):
            return False
    square = torch.full((2, 2, X.shape[-1]), 0.5)  # B = T = 2
    try:
        out = student.call("add_positional_encoding", square)
    except StudentCrash:
        return False
    return isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(square.shape)


def _add_atol(dtype, T):
    """Tolerance of X + PE: half precision rounds the sum itself (values up to ~3: float16 to 2e-3,
    bfloat16 to 1.6e-2); float32 and float64 as the encoding's angles (pe_atol)."""
    return {torch.float16: 1e-2, torch.bfloat16: 5e-2}.get(dtype, pe_atol(T) + 1e-5)
