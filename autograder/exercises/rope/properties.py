"""Hidden properties of the `rope` exercise: rope_angles, apply_rope (rotary position embedding).

    theta[t, i] = (offset + t) * w_i,  w_i = base**(-2i/d)
    out[2i]   = x[2i] cos(theta) - x[2i+1] sin(theta)
    out[2i+1] = x[2i] sin(theta) + x[2i+1] cos(theta)

Each interleaved pair (2i, 2i+1) of row t is turned by theta[t, i].  Rotations keep norms,
R(0) is the identity, R(m)^T R(n) = R(n - m) so <R(m) q, R(n) k> depends on m - n only, and
turning rows offset..offset+T-1 is the same as cutting those rows out of the full sequence (a
KV cache).  The other layout in use (GPT-NeoX / Llama's "rotate_half": pairs (i, i + d/2)) has
every one of these invariances too, so only `matches_reference` tells the two apart.

Tolerances: the angle p * w_i is a float32 number up to p (rope_angles returns float32), and
correct code computes it in several ways (pow, exp(-log), division, numpy); each is a few float32
roundings of p, so cos and sin, and an entry of out, may be off by about p * eps32 * |x|.
`rope_atol(P)` allows 16 (P + 1) eps32 * 3 + 1e-5 for positions up to P and |x| <= 2 per entry:
3e-5 at P = 6, 6e-4 at P = 300; every catalogued mistake is off by O(1).
"""
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ...errors import PropertyFailure, StudentCrash
from ...properties._harness import check_close, check_tensor, fail, prop
from ...properties.strategies import sizes

EX = "rope"
ANGLES, APPLY = "rope_angles", "apply_rope"
EPS32 = torch.finfo(torch.float32).eps
BASES = [None, 10000.0, 100.0, 10.0, 1000.0]  # None: the default base 10000
seeds = st.integers(0, 2 ** 31 - 1)


def rope_atol(max_pos):
    """Absolute tolerance for entries of out at positions <= max_pos (see module docstring)."""
    return 1e-5 + 16 * (max_pos + 1) * EPS32 * 3


def _base(base):
    return 10000.0 if base is None else float(base)


# ---------------------------------------------------------------- trusted references


def angles_ref(T, d, offset=0, base=None):
    """(T, d/2) float64: (offset + t) * base**(-2i/d)."""
    p = torch.arange(offset, offset + T, dtype=torch.float64)[:, None]
    w = _base(base) ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    return p * w


def rope_ref(x, offset=0, base=None):
    """Interleaved RoPE in float64."""
    x = x.detach().double()
    T, d = x.shape[-2], x.shape[-1]
    a = angles_ref(T, d, offset, base)
    c, s = a.cos(), a.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * c - x2 * s, x1 * s + x2 * c], -1).flatten(-2)


def _half_split_ref(x, offset=0, base=None):
    """The other layout (pairs (i, i + d/2)), only to name the mistake in feedback."""
    x = x.detach().double()
    T, d = x.shape[-2], x.shape[-1]
    a = angles_ref(T, d, offset, base)
    c, s = a.cos(), a.sin()
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], -1)


# ---------------------------------------------------------------- strategies


def _tensor(shape, seed, dtype=torch.float32):
    """Entries in [-2, 2] with two decimals, each on its own, from a seeded generator."""
    g = torch.Generator().manual_seed(int(seed))
    return (torch.randint(-200, 201, tuple(shape), generator=g, dtype=torch.int64).double() / 100).to(dtype)


@st.composite
def angle_sizes(draw, max_T=8, max_half_d=4):
    """(T, d, offset, base): d even, offset 0 half of the time, base None (the default) or a float."""
    T = draw(sizes(1, max_T))
    d = 2 * draw(sizes(1, max_half_d))
    offset = draw(st.one_of(st.just(0), st.integers(1, 100)))
    return T, d, offset, draw(st.sampled_from(BASES))


@st.composite
def rope_inputs(draw, dtype=None, offset="maybe", max_T=6):
    """(x, offset, base): x (..., T, d) with leading axes (), (B,) or (B, H); d even."""
    lead = tuple(draw(sizes(1, 3)) for _ in range(draw(st.integers(0, 2))))
    T, d = draw(sizes(1, max_T)), 2 * draw(sizes(1, 4))
    dtype = dtype or draw(st.sampled_from([torch.float32, torch.float64]))
    off = 0 if offset == "never" else draw(st.one_of(st.just(0), st.integers(1, 100)))
    base = draw(st.sampled_from(BASES))
    return _tensor(lead + (T, d), draw(seeds), dtype), off, base


@st.composite
def relative_cases(draw):
    """(q, k, m, n, s, base): two vectors (d,), positions m, n and a shift s for both."""
    d = 2 * draw(sizes(1, 4))
    seed = draw(seeds)
    m, n, s = draw(st.integers(0, 40)), draw(st.integers(0, 40)), draw(st.integers(1, 40))
    return _tensor((d,), seed), _tensor((d,), seed + 1), m, n, s, draw(st.sampled_from(BASES))


@st.composite
def cache_cases(draw):
    """(x, cut, base): a full sequence x (..., T, d) and the number of rows already in the cache."""
    x, _, base = draw(rope_inputs(offset="never", max_T=8))
    cut = draw(st.integers(0, x.shape[-2] - 1))
    return x, cut, base


# ---------------------------------------------------------------- calls


def _call_angles(student, T, d, offset=0, base=None):
    kw = {}
    if offset:
        kw["offset"] = offset
    if base is not None:
        kw["base"] = base
    return student.call(ANGLES, T, d, **kw)


def _call_rope(student, x, offset=0, base=None):
    kw = {}
    if offset:
        kw["offset"] = offset
    if base is not None:
        kw["base"] = base
    out = student.call(APPLY, x, **kw)
    check_tensor(out, "out", shape=x.shape, student=student)
    return out


def _show(x, offset, base, **more):
    return {"x": x, "offset": offset, "base": "10000 (default)" if base is None else base, **more}


HINT_LAYOUT_ZH = ("本章用交错的列对：第 i 对是列 (2i, 2i+1)，即 x[..., 0::2] 和 x[..., 1::2]；"
                  "out[2i] = x[2i]·cos − x[2i+1]·sin，out[2i+1] = x[2i]·sin + x[2i+1]·cos，角度 (offset + t)·base**(−2i/d)。"
                  "前一半/后一半配对（rotate_half，Llama 的写法）满足所有不变性，但不是这里约定的布局。")
HINT_LAYOUT_EN = ("This chapter pairs interleaved columns: pair i is columns (2i, 2i+1), i.e. x[..., 0::2] and "
                  "x[..., 1::2]; out[2i] = x[2i]·cos − x[2i+1]·sin, out[2i+1] = x[2i]·sin + x[2i+1]·cos, with the angle "
                  "(offset + t)·base**(−2i/d). Pairing the first half with the second half (rotate_half, as in Llama) "
                  "has every invariance but is not the layout of the contract.")


# ---------------------------------------------------------------- rope_angles

@prop(EX, ANGLES, "shape_and_dtype",
      zh="rope_angles(T, d) 返回形状 (T, d/2) 的 float32 张量",
      en="rope_angles(T, d) returns a (T, d/2) float32 tensor")
@given(case=angle_sizes())
@example(case=(1, 2, 0, None))
@example(case=(5, 8, 3, 100.0))
def angles_shape(student, case):
    T, d, offset, base = case
    out = _call_angles(student, T, d, offset, base)
    check_tensor(out, "theta", shape=(T, d // 2), student=student)
    if out.dtype != torch.float32:
        fail(f"theta 的 dtype 应为 torch.float32，实际为 {out.dtype}。",
             f"theta should have dtype torch.float32, got {out.dtype}.", student=student,
             hint_zh="可以在 float64 里算，返回前 .float()。", hint_en="Compute in float64 if you like, return .float().")


@prop(EX, ANGLES, "matches_formula",
      zh="theta[t, i] = (offset + t) · base**(-2i/d)（手算例子：T=2, d=4, base=100 时 theta = [[0, 0], [1, 0.1]]）",
      en="theta[t, i] = (offset + t) · base**(-2i/d) (by hand: T=2, d=4, base=100 gives theta = [[0, 0], [1, 0.1]])")
@given(case=angle_sizes())
@example(case=(2, 4, 0, 100.0))
@example(case=(3, 4, 0, None))
@example(case=(2, 2, 5, None))
@example(case=(4, 6, 7, 10.0))
@example(case=(300, 8, 1000, None))
def angles_formula(student, case):
    T, d, offset, base = case
    out = _call_angles(student, T, d, offset, base)
    check_tensor(out, "theta", shape=(T, d // 2), student=student)
    check_close(out, angles_ref(T, d, offset, base), "theta", atol=1e-6, rtol=1e-5, student=student,
                show={"T, d, offset, base": f"T={T}, d={d}, offset={offset}, base={_base(base):g}"},
                hint_zh="行 t 的位置是 offset + t（从 offset 开始，不是从 0 或 1）；列 i 是第 i 对，频率 w_i = base**(-2i/d)："
                        "指数用 2i/d（torch.arange(0, d, 2) / d），不是 i/d；是乘以 w_i，不是除以。",
                hint_en="Row t is position offset + t (starting at offset, not at 0 or 1); column i is pair i with "
                        "frequency w_i = base**(-2i/d): the exponent is 2i/d (torch.arange(0, d, 2) / d), not i/d; "
                        "multiply by w_i, do not divide.")


@prop(EX, ANGLES, "rejects_odd_d",
      zh="奇数 d 抛出 ValueError（旋转需要成对的列）",
      en="an odd d raises ValueError (rotations need columns in pairs)")
@given(T=sizes(1, 5), d=st.sampled_from([1, 3, 5, 7]))
@example(T=2, d=3)
@example(T=1, d=1)
def angles_odd(student, T, d):
    if not student.raises(ValueError, ANGLES, T, d):
        fail(f"rope_angles(T={T}, d={d}) 没有抛出 ValueError。", f"rope_angles(T={T}, d={d}) did not raise ValueError.",
             student=student, hint_zh="先检查：if d % 2 != 0: raise ValueError(...)。",
             hint_en="Validate first: if d % 2 != 0: raise ValueError(...).")


# ---------------------------------------------------------------- apply_rope

# float16 and bfloat16 x (a model trained in half precision): rope_angles is float32, and float32 cos and
# sin times a half x promote to float32 unless they are cast to x's dtype first.  Their values are compared
# with the float64 reference at HALF_ATOL (16 eps of the dtype for |x| <= 2, few positions): code that
# computes in float32 inside and casts back, or in the half dtype itself, is well within it.
HALF_ATOL = {torch.float16: 16 * torch.finfo(torch.float16).eps, torch.bfloat16: 16 * torch.finfo(torch.bfloat16).eps}


@prop(EX, APPLY, "shape_and_dtype",
      zh="apply_rope(x) 的形状与 x 相同 (..., T, d)，dtype 也相同（任意前导轴；float32、float64，也有 float16 和 bfloat16）",
      en="apply_rope(x) has x's shape (..., T, d) and dtype (any leading axes; float32, float64, and float16 and "
         "bfloat16 too)")
@given(case=rope_inputs())
@example(case=(_tensor((1, 2), 1), 0, None))
@example(case=(_tensor((2, 3, 4, 6), 2, torch.float64), 3, 100.0))
@example(case=(_tensor((2, 3, 4), 16, torch.float16), 0, None))  # half precision: cos and sin cast to x's dtype
@example(case=(_tensor((1, 2, 4, 6), 17, torch.bfloat16), 2, 100.0))
def rope_shape(student, case):
    x, offset, base = case
    if x.dtype in HALF_ATOL:
        try:
            out = _call_rope(student, x, offset, base)
        except StudentCrash:
            # some of torch's operations have no half-precision kernel on the CPU (view_as_complex has
            # none for bfloat16): code that works in float32 cannot be asked for that dtype here
            _call_rope(student, x.float(), offset, base)
            return
    else:
        out = _call_rope(student, x, offset, base)
    if out.dtype != x.dtype:
        fail(f"out 的 dtype 应为 {x.dtype}（与 x 相同），实际为 {out.dtype}。",
             f"out should have dtype {x.dtype} (x's dtype), got {out.dtype}.", student=student,
             show=_show(x, offset, base),
             hint_zh="rope_angles 返回 float32；cos、sin 要 .to(x.dtype) 之后再和 x 相乘，结果才保持 x 的类型。",
             hint_en="rope_angles returns float32; convert cos and sin with .to(x.dtype) before multiplying, so the "
                     "result keeps x's dtype.")
    if x.dtype in HALF_ATOL:  # matches_reference draws float32 and float64 only
        check_close(out.float(), rope_ref(x, offset, base), "out", atol=HALF_ATOL[x.dtype], rtol=0, student=student,
                    show=_show(x, offset, base), hint_zh=HINT_LAYOUT_ZH, hint_en=HINT_LAYOUT_EN)


@prop(EX, APPLY, "matches_reference",
      zh="每个元素都与参考实现（交错列对 (2i, 2i+1)，行 t 的角度 (offset + t)·base**(-2i/d)）一致",
      en="every entry matches the reference (interleaved pairs (2i, 2i+1), row t turned by "
         "(offset + t)·base**(-2i/d))")
@given(case=rope_inputs())
@example(case=(_tensor((3, 4), 3), 0, None))
@example(case=(_tensor((2, 4, 8), 4), 0, 100.0))
@example(case=(_tensor((2, 2, 3, 4), 5, torch.float64), 7, 10.0))
@example(case=(_tensor((1, 6), 6), 300, None))
# long sequences: positions 0..1099, and 1800..2099 (beyond a cos / sin table of 512, 1024 or 2048 positions)
@example(case=(_tensor((1100, 4), 19), 0, None))
@example(case=(_tensor((2, 300, 4), 20), 1800, None))
# a second call right after a first one of other sizes (x, offset, base, (x, offset, base) of the first call)
@example(case=(_tensor((2, 70, 6), 21), 0, None, (_tensor((3, 6), 22), 0, None)))
@example(case=(_tensor((4, 4), 23), 5, 100.0, (_tensor((2, 6, 8), 24), 0, None)))
def rope_reference(student, case):
    x, offset, base = case[:3]
    hint_zh, hint_en = HINT_LAYOUT_ZH, HINT_LAYOUT_EN
    if len(case) > 3:  # a call made just before, with other sizes: nothing of it may be kept
        x1, offset1, base1 = case[3]
        _call_rope(student, x1, offset1, base1)
        hint_zh = (f"这次调用紧接在 apply_rope(x 形状 {tuple(x1.shape)}, offset={offset1}, base={_base(base1)}) 之后："
                   f"如果单独调用是对的，就是有东西（例如 cos / sin 表）在两次调用之间被保留了下来。每次调用都按这次的 T、d、"
                   f"offset、base 计算，或者以它们全部为缓存的键。")
        hint_en = (f"This call came right after apply_rope(x of shape {tuple(x1.shape)}, offset={offset1}, "
                   f"base={_base(base1)}): if the same call alone is right, something (a cos / sin table, for "
                   f"instance) is kept between calls. Compute for this call's T, d, offset and base, or key a cache "
                   f"on all of them.")
    try:
        out = _call_rope(student, x, offset, base)
    except PropertyFailure as e:  # a crash, or out of another shape
        if len(case) == 3:
            raise
        e.hint_zh, e.hint_en = hint_zh, hint_en
        raise
    ref = rope_ref(x, offset, base)
    got = out.detach().double()
    atol = rope_atol(offset + x.shape[-2])
    if x.shape[-1] > 2 and torch.allclose(got, _half_split_ref(x, offset, base), atol=atol, rtol=0) \
            and not torch.allclose(got, ref, atol=atol, rtol=0):
        hint_zh = "你的结果正是“前一半/后一半”配对（rotate_half）的布局。" + HINT_LAYOUT_ZH
        hint_en = "Your result is exactly the half-split (rotate_half) layout. " + HINT_LAYOUT_EN
    check_close(out, ref, "out", atol=atol, rtol=0, student=student, show=_show(x, offset, base),
                hint_zh=hint_zh, hint_en=hint_en)


@prop(EX, APPLY, "keeps_norms",
      zh="旋转不改变长度：每个位置的向量范数 ||out[..., t, :]|| = ||x[..., t, :]||",
      en="a rotation keeps lengths: ||out[..., t, :]|| = ||x[..., t, :]|| at every position")
@given(case=rope_inputs())
@example(case=(_tensor((3, 4), 8), 0, None))
@example(case=(_tensor((2, 5, 6), 9), 11, 10.0))
def rope_norms(student, case):
    x, offset, base = case
    out = _call_rope(student, x, offset, base)
    got = out.detach().double().norm(dim=-1)
    want = x.double().norm(dim=-1)
    check_close(got, want, "||out[..., t, :]||", atol=rope_atol(offset + x.shape[-2]), rtol=1e-5, student=student,
                show=_show(x, offset, base, out=out),
                hint_zh="每一对 (x[2i], x[2i+1]) 都要乘同一个旋转矩阵 [[cos, -sin], [sin, cos]]：同一对的两个分量用同一个角度，"
                        "并且符号是一负一正。不要把 x·cos 和 x·sin 直接相加。",
                hint_en="Each pair (x[2i], x[2i+1]) is multiplied by one rotation matrix [[cos, -sin], [sin, cos]]: both "
                        "entries of a pair use the same angle, with one minus and one plus sign. Do not just add "
                        "x·cos and x·sin.")


@prop(EX, APPLY, "position_zero_is_identity",
      zh="R(0) 是恒等变换：offset = 0 时第 0 行原样不变",
      en="R(0) is the identity: with offset = 0, row 0 is returned unchanged")
@given(case=rope_inputs(offset="never"))
@example(case=(_tensor((1, 2), 10), 0, None))
@example(case=(_tensor((2, 3, 8), 11), 0, 100.0))
def rope_identity(student, case):
    x, _, base = case
    out = _call_rope(student, x, 0, base)
    check_close(out[..., 0, :], x[..., 0, :], "out[..., 0, :]", atol=1e-6, rtol=1e-6, student=student,
                show=_show(x, 0, base, out=out),
                hint_zh="位置从 0 开始：第 0 行的角度全是 0，cos 0 = 1、sin 0 = 0，所以不变。位置是 offset + t，t = 0, 1, ...",
                hint_en="Positions start at 0: row 0 has angle 0 everywhere, cos 0 = 1 and sin 0 = 0, so it is unchanged. "
                        "The position is offset + t with t = 0, 1, ...")


@prop(EX, APPLY, "dot_product_depends_only_on_distance",
      zh="<R(m)q, R(n)k> 只依赖 m - n：两个位置同时平移 s，点积不变",
      en="<R(m)q, R(n)k> depends on m - n only: shifting both positions by s leaves the dot product unchanged")
@given(case=relative_cases())
@example(case=(_tensor((2,), 12), _tensor((2,), 13), 0, 1, 5, None))
@example(case=(_tensor((8,), 14), _tensor((8,), 15), 3, 7, 20, 100.0))
def rope_relative(student, case):
    q, k, m, n, s, base = case

    def dot(mq, nk):
        rq = _call_rope(student, q[None], mq, base)[0]  # (d,)  q at position mq
        rk = _call_rope(student, k[None], nk, base)[0]  # (d,)  k at position nk
        return float((rq.detach().double() * rk.detach().double()).sum())

    before, after = dot(m, n), dot(m + s, n + s)
    tol = 4 * rope_atol(max(m, n) + s) * 4  # two vectors of norm <= 4 (d <= 8, |x| <= 2)
    if abs(before - after) > tol:
        fail(f"点积随绝对位置变化：<R({m})q, R({n})k> = {before:.6g}，但 <R({m + s})q, R({n + s})k> = {after:.6g}。",
             f"the dot product changes with the absolute position: <R({m})q, R({n})k> = {before:.6g} but "
             f"<R({m + s})q, R({n + s})k> = {after:.6g}.",
             show={"q": q, "k": k, "m, n, s": f"m={m}, n={n}, s={s}", "base": _base(base)}, student=student,
             hint_zh="R(m) 必须是纯旋转（每对用同一个角度 m·w_i，矩阵 [[cos, -sin], [sin, cos]]），这样 R(m)^T R(n) = R(n - m)。"
                     "角度要和位置成正比（m·w_i），不能加常数或用位置的非线性函数。",
             hint_en="R(m) must be a pure rotation (one angle m·w_i per pair, matrix [[cos, -sin], [sin, cos]]) so that "
                     "R(m)^T R(n) = R(n - m). The angle must be proportional to the position (m·w_i): no constant "
                     "added, no non-linear function of the position.")


@prop(EX, APPLY, "offset_matches_full_sequence",
      zh="KV 缓存：对最后 T - c 行用 offset = c 旋转，与对整个序列旋转后取这些行的结果相同",
      en="KV cache: rotating the last T - c rows with offset = c gives the same rows as rotating the whole "
         "sequence")
@given(case=cache_cases())
@example(case=(_tensor((4, 4), 16), 2, None))
@example(case=(_tensor((2, 6, 6), 17), 5, 10.0))
@example(case=(_tensor((3, 2), 18), 1, None))
def rope_offset(student, case):
    x, c, base = case
    full = _call_rope(student, x, 0, base)
    tail = x[..., c:, :].contiguous()
    part = _call_rope(student, tail, c, base)
    check_close(part, full.detach()[..., c:, :], f"apply_rope(x[..., {c}:, :], offset={c})",
                atol=rope_atol(x.shape[-2]), rtol=0, student=student,
                show={**_show(x, 0, base), "c": c, f"apply_rope(x)[..., {c}:, :]": full[..., c:, :]},
                hint_zh="生成时新词元排在缓存之后：第 t 行的位置是 offset + t。offset 要加到位置上（不是减，也不能忽略）。",
                hint_en="During generation the new tokens come after the cache: row t is at position offset + t. Add "
                        "offset to the positions (do not subtract or ignore it).")


@prop(EX, APPLY, "rejects_odd_d",
      zh="x 的最后一维 d 为奇数时 apply_rope 抛出 ValueError（旋转需要成对的列），不返回任何结果",
      en="apply_rope raises ValueError when x's last axis d is odd (rotations need columns in pairs) instead of "
         "returning anything")
@given(lead=st.lists(sizes(1, 3), max_size=2), T=sizes(1, 5), d=st.sampled_from([1, 3, 5, 7]),
       offset=st.sampled_from([0, 3]), seed=seeds)
@example(lead=[], T=2, d=3, offset=0, seed=0)
@example(lead=[2, 2], T=3, d=5, offset=3, seed=1)
@example(lead=[1], T=1, d=1, offset=0, seed=2)
def rope_odd(student, lead, T, d, offset, seed):
    x = _tensor(tuple(lead) + (T, d), seed)
    if not student.raises(ValueError, APPLY, x, **({"offset": offset} if offset else {})):
        fail(f"apply_rope(x 形状 {tuple(x.shape)}) 没有抛出 ValueError：d = {d} 是奇数，最后一列没有配对的列。",
             f"apply_rope(x of shape {tuple(x.shape)}) did not raise ValueError: d = {d} is odd, the last column has "
             f"no partner.", student=student,
             hint_zh="先检查：if x.shape[-1] % 2 != 0: raise ValueError(...)；或者直接调用会检查 d 的 rope_angles(T, d, ...)。"
                     "不要悄悄跳过、截掉或原样保留最后一列：那样得到的不是旋转，错误要到很后面才会出现。",
             hint_en="Validate first: if x.shape[-1] % 2 != 0: raise ValueError(...); or call rope_angles(T, d, ...), "
                     "which checks d. Do not silently skip, drop or pass through the last column: the result is not "
                     "a rotation, and the error shows up only much later.")
