"""Hidden properties of the `attention` exercise: scaled_dot_product_attention, MultiHeadAttention.

    weights = softmax(Q K^T / sqrt(dk)) over the keys (a masked key gets exactly 0),  out = weights V.

Values are compared with trusted float64 references: torch's own
``torch.nn.functional.scaled_dot_product_attention`` / ``torch.softmax`` and
``torch.nn.MultiheadAttention`` with the same weights copied in.  The contract leaves the values
of a query with no allowed key free, so such rows are never compared, only checked to be finite
(values and gradient).  A multi-head output row is compared only if every head of that query
has an allowed key.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from hypothesis import example, given
from hypothesis import strategies as st

from ...errors import PropertyFailure, StudentCrash
from ...properties._harness import check_close, check_tensor, fail, prop, unpack
from ...properties.strategies import lengths_for, sizes

EX = "attention"
SDPA = "scaled_dot_product_attention"
MHA = "MultiHeadAttention"
MAX_T, MAX_D = 5, 6  # Tq, Tk <= 5; dk, dv <= 6
EXACT = 1e-6  # "unchanged" / "zero gradient": equal up to float noise from a different summation order


# ---------------------------------------------------------------- strategies


class Gen:
    """Tensors from one drawn seed: entries in [-2, 2] with two decimals, every entry on its own.

    Drawing each entry through hypothesis costs ~50 us an entry (most of the time of these
    properties); a seeded generator keeps examples deterministic and non-degenerate, and
    hypothesis still shrinks the sizes, which is what makes a counterexample readable.
    """

    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(int(seed))

    def tensor(self, shape, dtype=torch.float32):
        x = torch.randint(-200, 201, tuple(shape), generator=self.g, dtype=torch.int64)
        return (x.double() / 100).to(dtype)

    def bools(self, shape, p=0.6):
        return torch.rand(tuple(shape), generator=self.g) < p

    def index(self, shape, n):
        return torch.randint(0, n, tuple(shape), generator=self.g)


seeds = st.integers(0, 2 ** 31 - 1)


def masks_for(draw, gen, lead, Tq, Tk, empty_rows=False, keeps=None):
    """A bool mask broadcastable to lead + (Tq, Tk): (Tq, Tk), (B, 1, 1, Tk), (B, 1, Tq, Tk), full, ...

    `keeps`: how many leading axes the mask may have (default: any number up to len(lead)).
    Unless `empty_rows`, every query row keeps at least one allowed key; with `empty_rows=True`
    any row may be empty; with `empty_rows="some"`, at least one query row has no allowed key.
    """
    full = tuple(lead) + (Tq, Tk)
    keep = draw(st.sampled_from(keeps or range(len(lead) + 1)))  # how many leading axes the mask has
    shape = tuple(n if draw(st.booleans()) else 1 for n in full[len(lead) - keep:-1]) + (Tk,)
    m = gen.bools(shape, p=draw(st.sampled_from([0.5, 0.2, 0.8])))
    if empty_rows in (False, "some"):  # an allowed key in every row
        m.scatter_(-1, gen.index(shape[:-1] + (1,), Tk), True)
    if empty_rows == "some":
        row = tuple(draw(st.integers(0, n - 1)) for n in shape[:-1])
        m[row] = False
    return m


@st.composite
def attention_inputs(draw, mask="maybe", dtype=None, empty_rows=False):
    """(Q, K, V, mask): Q (..., Tq, dk), K (..., Tk, dk), V (..., Tk, dv) with leading axes
    (), (B,) or (B, H); Tq != Tk and dk != dv allowed; float32 or float64; mask None or bool."""
    n_lead = draw(st.integers(0, 2))
    lead = tuple(draw(sizes(1, 3)) for _ in range(n_lead))
    Tq, Tk = draw(sizes(1, MAX_T)), draw(sizes(1, MAX_T))
    dk, dv = draw(sizes(1, MAX_D)), draw(sizes(1, MAX_D))
    dtype = dtype or draw(st.sampled_from([torch.float32, torch.float64]))
    gen = Gen(draw(seeds))
    Q, K, V = gen.tensor(lead + (Tq, dk), dtype), gen.tensor(lead + (Tk, dk), dtype), gen.tensor(lead + (Tk, dv), dtype)
    m = None
    if mask == "always" or (mask == "maybe" and draw(st.booleans())):
        if empty_rows == "maybe":
            empty_rows = draw(st.booleans())
        m = masks_for(draw, gen, lead, Tq, Tk, empty_rows=empty_rows)
    return Q, K, V, m


@dataclass
class Causal:
    """Self-attention inputs of length T with a causal mask, and new values for positions > t."""

    inputs: tuple  # (Q, K, V) or (x_q, x_kv)
    changed: tuple  # the same tensors with positions > t replaced
    mask: torch.Tensor
    t: int


def _change_after(x, new, t):
    """x with the positions (axis -2) after t taken from `new`."""
    y = x.clone()
    y[..., t + 1:, :] = new[..., t + 1:, :]
    return y


def _causal_ref(T, lead):
    """tril (T, T) in a broadcast form: (T, T), (1, ..., T, T) or expanded to lead + (T, T)."""
    return torch.ones(T, T, dtype=torch.bool).tril().reshape((1,) * len(lead) + (T, T)).expand(lead + (T, T))


@st.composite
def causal_attention_inputs(draw):
    """Self-attention Q, K, V of length T >= 2 with a causal mask, a position t and new values after t."""
    n_lead = draw(st.integers(0, 2))
    lead = tuple(draw(sizes(1, 3)) for _ in range(n_lead))
    T = draw(sizes(2, MAX_T))
    dk, dv = draw(sizes(1, MAX_D)), draw(sizes(1, MAX_D))
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    t = draw(st.integers(0, T - 2))
    keep = draw(st.integers(0, n_lead))
    gen = Gen(draw(seeds))
    shapes = (lead + (T, dk), lead + (T, dk), lead + (T, dv))
    xs = tuple(gen.tensor(s, dtype) for s in shapes)
    new = tuple(gen.tensor(s, dtype) for s in shapes)
    mask = _causal_ref(T, lead)[(0,) * (n_lead - keep)].contiguous()  # keep the last `keep` leading axes
    return Causal(xs, tuple(_change_after(x, n, t) for x, n in zip(xs, new)), mask, t)


@dataclass
class MHACase:
    B: int
    H: int
    d: int
    bias: bool
    seed: int  # of the weights W_q, W_k, W_v, W_o (see _params)
    x_q: torch.Tensor
    x_kv: torch.Tensor
    mask: object = None
    again: object = None  # (x_q, x_kv, mask) of a second call of the same module, or None
    mode: str = "train"  # the mode of that second call: "train" or "eval" (module.eval())


@st.composite
def mha_inputs(draw, mask="maybe", empty_rows=False):
    """d_model = H * dh with H, dh <= 3; cross-attention x_q (B, Tq, d), x_kv (B, Tk, d)."""
    B, H, dh = draw(sizes(1, 3)), draw(sizes(1, 3)), draw(sizes(1, 3))
    Tq, Tk = draw(sizes(1, MAX_T)), draw(sizes(1, MAX_T))
    bias, seed = draw(st.booleans()), draw(seeds)
    d, gen = H * dh, Gen(seed)
    x_q, x_kv = gen.tensor((B, Tq, d)), gen.tensor((B, Tk, d))
    m = None
    if mask == "always" or (mask == "maybe" and draw(st.booleans())):
        # 2-D or 4-D only: a 3-D mask is read as (B, Tq, Tk) by some conventions, (H, Tq, Tk) by broadcasting
        m = masks_for(draw, gen, (B, H), Tq, Tk, empty_rows=empty_rows, keeps=(0, 2))
    return MHACase(B, H, d, bias, seed, x_q, x_kv, m)


@dataclass
class Padded:
    case: MHACase  # self-attention: x_q is x_kv, mask on the key axis
    lengths: torch.Tensor
    x2: torch.Tensor  # same real tokens, other padded values and more padding
    mask2: torch.Tensor


def _key_padding(lengths, T, square):
    keys = torch.arange(T)[None, :] < lengths[:, None]  # (B, T)
    m = keys[:, None, None, :]  # (B, 1, 1, T)  on the key axis
    return m.expand(-1, 1, T, T).contiguous() if square else m


def _repad(x, other, lengths):
    """x's real tokens, then `other`'s values at every padded position (more of them if longer)."""
    T, T2 = x.shape[1], other.shape[1]
    valid2 = (torch.arange(T2)[None, :] < lengths[:, None])[..., None]  # (B, T2, 1)
    return torch.where(valid2, torch.cat([x, other[:, T:]], 1), other)


@st.composite
def padded_self_attention(draw):
    """Self-attention inputs of a padded batch, with `extra` padded positions beyond the longest sequence."""
    B, H, dh = draw(sizes(1, 3)), draw(sizes(1, 3)), draw(sizes(1, 3))
    d, T = H * dh, draw(sizes(1, MAX_T))
    extra = draw(st.integers(1, 2))
    lengths = draw(lengths_for(B, T, lo=1))
    square, bias, seed = draw(st.booleans()), draw(st.booleans()), draw(seeds)
    gen = Gen(seed)
    x, other = gen.tensor((B, T, d)), gen.tensor((B, T + extra, d))
    case = MHACase(B, H, d, bias, seed, x, x, _key_padding(lengths, T, square))
    return Padded(case, lengths, _repad(x, other, lengths), _key_padding(lengths, T + extra, square))


@st.composite
def causal_mha_inputs(draw):
    """Causal multi-head self-attention inputs and a position t whose future is changed."""
    B, H, dh = draw(sizes(1, 3)), draw(sizes(1, 3)), draw(sizes(1, 3))
    d, T = H * dh, draw(sizes(2, MAX_T))
    t = draw(st.integers(0, T - 2))
    mask = _causal_ref(T, (B, 1))[(0, 0) if draw(st.booleans()) else ()].contiguous()  # (T, T) or (B, 1, T, T)
    bias, seed = draw(st.booleans()), draw(seeds)
    gen = Gen(seed)
    xs = (gen.tensor((B, T, d)), gen.tensor((B, T, d)))
    new = (gen.tensor((B, T, d)), gen.tensor((B, T, d)))
    case = MHACase(B, H, d, bias, seed, *xs, mask)
    return Causal(xs, tuple(_change_after(x, n, t) for x, n in zip(xs, new)), mask, t), case


# ---------------------------------------------------------------- pinned examples


def _t(shape, seed, dtype=torch.float32):
    """A fixed tensor with entries in [-2, 2], two decimals."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(-200, 201, tuple(shape), generator=g, dtype=torch.int64).double() / 100).to(dtype)


def _mask(shape, Tk, seed, empty_row=False):
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(tuple(shape[:-1]) + (Tk,), generator=g) < 0.5
    m[..., seed % Tk] = True
    if empty_row:
        m[(0,) * (m.dim() - 1)] = False
    return m


def _ex(lead, Tq, Tk, dk, dv, mask_shape=None, dtype=torch.float32, empty_row=False):
    lead = tuple(lead)
    m = None if mask_shape is None else _mask(mask_shape, Tk, Tq + Tk, empty_row)
    return (_t(lead + (Tq, dk), 1, dtype), _t(lead + (Tk, dk), 2, dtype), _t(lead + (Tk, dv), 3, dtype), m)


def _big_ex(masked, dtype=torch.float32):
    """Scores far from 0 (up to ~230): a softmax without subtracting the row maximum overflows
    (exp(89) is inf in float32).  With `masked`, the last key is masked for every query and has by
    far the largest score: the row maximum must be taken over the allowed keys (or after the fill),
    otherwise every allowed key underflows to 0."""
    Q = torch.tensor([[30.0, 10.0], [10.0, 20.0], [-5.0, 12.0]], dtype=dtype)  # (Tq=3, dk=2)
    K = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.5], [8.0, 8.0]], dtype=dtype)  # (Tk=4, dk=2)
    V = _t((4, 3), 3, dtype)
    mask = torch.tensor([True, True, True, False]).expand(3, 4).clone() if masked else None
    return Q, K, V, mask


def _underflow_ex(center):
    """Every allowed score of every row far below 0 (around `center`, -200 or -3e4), a masked key in every
    row, float32: softmax is shift-invariant, so the weights are those of scores a few units apart.  A
    mask applied by multiplying the scores (a masked score becomes 0, far above the allowed ones) and
    renormalising after the softmax gives rows of zeros (or NaN): exp(center) underflows to 0 in float32
    below about -104.  Q (2, 1), K (4, 1): score = q * k (dk = 1), every product exact in float32."""
    k = torch.tensor([[0.0], [-1.5], [0.75], [-0.75]], dtype=torch.float64) + center  # (Tk=4, dk=1)
    q = torch.tensor([[1.0], [2.0]], dtype=torch.float64)  # (Tq=2, dk=1): rows around center, 2 * center
    V = _t((4, 3), 3)
    mask = torch.tensor([[True, False, True, False], [False, True, False, True]])
    return q.float(), k.float(), V, mask


def _mha_ex(B, H, dh, Tq, Tk, mask_shape=None, bias=True, empty_row=False):
    d = H * dh
    m = None if mask_shape is None else _mask(mask_shape, Tk, Tq + 2 * Tk, empty_row)
    return MHACase(B, H, d, bias, 7, _t((B, Tq, d), 4), _t((B, Tk, d), 5), m)


def _far_mha_ex():
    """MultiHeadAttention with every allowed score far below 0 (about -3e4 and -1.5e4 to -2e4), a 2-D mask:
    the inputs are solved from the head's target q and k (H = 2, dh = 1, no bias, weights of seed 14, well
    conditioned), so that score_h(t, j) = q[t, h] * k[j, h].  Allowed keys lie >= 30 apart (the weights are
    one-hot, whatever the rounding); a finite fill such as -1e4 lies above them and takes the weight."""
    H, d, seed = 2, 2, 14
    P = _params(d, False, seed)
    q = torch.tensor([[300.0, 250.0], [200.0, 150.0]], dtype=torch.float64)  # (Tq, H)
    k = torch.tensor([[-100.0, -100.0], [-100.2, -100.3], [-100.4, -100.6], [-100.6, -100.9]],
                     dtype=torch.float64)  # (Tk, H)
    x_q = torch.linalg.solve(P["W_q"].double(), q.T).T  # x_q @ W_q.T = q
    x_kv = torch.linalg.solve(P["W_k"].double(), k.T).T
    mask = torch.tensor([[True, False, True, False], [False, True, False, True]])
    return MHACase(1, H, d, False, seed, x_q.float()[None], x_kv.float()[None], mask)


def _again_ex(B, H, dh, first, second, mode="train", mask=False):
    """A module called twice: first with x_q (B, Tq, d), x_kv (B, Tk, d) for `first` = (Tq, Tk), then, in
    `mode`, with other values of the sizes `second` (None: the first call's inputs again, with mode="eval")."""
    d = H * dh
    x_q, x_kv = _t((B, first[0], d), 4), _t((B, first[1], d), 5)
    if second is None:
        return MHACase(B, H, d, True, 7, x_q, x_kv, None, (x_q, x_kv, None), mode)
    Tq, Tk = second
    m = _mask((B, 1, Tq, Tk), Tk, Tq + Tk) if mask else None
    return MHACase(B, H, d, True, 7, x_q, x_kv, None, (_t((B, Tq, d), 8), _t((B, Tk, d), 9), m), mode)


def _causal_ex(lead, T, dk, dv, t, dtype=torch.float32):
    lead = tuple(lead)
    xs = (_t(lead + (T, dk), 1, dtype), _t(lead + (T, dk), 2, dtype), _t(lead + (T, dv), 3, dtype))
    new = tuple(_t(x.shape, 10 + i, dtype) for i, x in enumerate(xs))
    return Causal(xs, tuple(_change_after(x, n, t) for x, n in zip(xs, new)), _causal_ref(T, ()), t)


def _padded_ex(lengths, T, extra, H, dh, square=False):
    lengths = torch.tensor(lengths)
    B, d = len(lengths), H * dh
    x, other = _t((B, T, d), 4), _t((B, T + extra, d), 6)
    case = MHACase(B, H, d, True, 7, x, x, _key_padding(lengths, T, square))
    return Padded(case, lengths, _repad(x, other, lengths), _key_padding(lengths, T + extra, square))


def _causal_mha_ex(B, H, dh, T, t):
    d = H * dh
    xs = (_t((B, T, d), 4), _t((B, T, d), 5))
    new = (_t((B, T, d), 8), _t((B, T, d), 9))
    mask = _causal_ref(T, ())
    return (Causal(xs, tuple(_change_after(x, n, t) for x, n in zip(xs, new)), mask, t),
            MHACase(B, H, d, True, 7, *xs, mask))


# ---------------------------------------------------------------- trusted references


def _full_mask(mask, shape):
    """The mask broadcast to `shape` (..., Tq, Tk); all True if None."""
    if mask is None:
        return torch.ones(shape, dtype=torch.bool)
    return torch.broadcast_to(mask, shape)


def _ref_weights(Q, K, mask, *, scale=None, dim=-1):
    """softmax(Q K^T * scale) over `dim` in float64; masked keys 0 (also in a row with no allowed key)."""
    Q, K = Q.detach().double(), K.detach().double()
    s = (Q @ K.transpose(-2, -1)) * (1 / math.sqrt(Q.shape[-1]) if scale is None else scale)
    full = _full_mask(mask, s.shape)
    w = torch.softmax(s.masked_fill(~full, float("-inf")), dim=dim)
    return w.masked_fill(~full, 0.0)


def _ref_sdpa(Q, K, V, mask):
    """(out, weights, rows): out from torch's own scaled_dot_product_attention, in float64;
    rows (..., Tq) is True where the query has at least one allowed key (the graded rows)."""
    Q64, K64, V64 = (x.detach().double() for x in (Q, K, V))
    w = _ref_weights(Q64, K64, mask)
    full = _full_mask(mask, w.shape)
    out = F.scaled_dot_product_attention(Q64, K64, V64, attn_mask=full if mask is not None else None)
    return out, w, full.any(-1)


def _params(d, bias, seed):
    """Seeded float32 weights (and biases) for W_q, W_k, W_v, W_o."""
    g = torch.Generator().manual_seed(seed + 1_000_003)  # not the stream of the inputs
    bound = 2 / math.sqrt(d)
    P = {}
    for name in ("W_q", "W_k", "W_v", "W_o"):
        P[name] = (torch.rand(d, d, generator=g) * 2 - 1) * bound
        P[name + ".bias"] = (torch.rand(d, generator=g) * 2 - 1) * bound if bias else None
    return P


def _torch_mha_module(c, P):
    """torch.nn.MultiheadAttention(batch_first=True) in float64 holding the weights P."""
    with torch.random.fork_rng(devices=[]):  # its initialisation must not touch the global RNG
        ref = torch.nn.MultiheadAttention(c.d, c.H, bias=c.bias, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([P["W_q"], P["W_k"], P["W_v"]]))
        ref.out_proj.weight.copy_(P["W_o"])
        if c.bias:
            ref.in_proj_bias.copy_(torch.cat([P["W_q.bias"], P["W_k.bias"], P["W_v.bias"]]))
            ref.out_proj.bias.copy_(P["W_o.bias"])
    return ref


def _torch_mha(c, P):
    """torch.nn.MultiheadAttention(batch_first=True) in float64 with the weights P:
    (out (B, Tq, d), weights per head (B, H, Tq, Tk), rows (B, H, Tq) with an allowed key)."""
    x_q, x_kv, mask = c.x_q, c.x_kv, c.mask
    B, Tq, Tk = x_q.shape[0], x_q.shape[1], x_kv.shape[1]
    ref = _torch_mha_module(c, P)
    with torch.no_grad():
        full = _full_mask(mask, (B, c.H, Tq, Tk))
        blocked = None if mask is None else ~full.reshape(B * c.H, Tq, Tk)  # torch: True = NOT allowed
        x_q, x_kv = x_q.double(), x_kv.double()
        out, w = ref(x_q, x_kv, x_kv, attn_mask=blocked, need_weights=True, average_attn_weights=False)
    rows = full.any(-1)
    return out, w.masked_fill(~rows[..., None], 0.0), rows


def _mha_weights_variant(c, P, scale):
    """Per-head weights with another scale (for diagnosing a wrong scale), float64."""
    B, Tq, Tk, H = c.x_q.shape[0], c.x_q.shape[1], c.x_kv.shape[1], c.H
    dh = c.d // H
    q = F.linear(c.x_q.double(), P["W_q"].double(), None if P["W_q.bias"] is None else P["W_q.bias"].double())
    k = F.linear(c.x_kv.double(), P["W_k"].double(), None if P["W_k.bias"] is None else P["W_k.bias"].double())
    q = q.view(B, Tq, H, dh).transpose(1, 2)
    k = k.view(B, Tk, H, dh).transpose(1, 2)
    return _ref_weights(q, k, _full_mask(c.mask, (B, H, Tq, Tk)), scale=scale)


# ---------------------------------------------------------------- calling the student


def _call_sdpa(student, Q, K, V, mask):
    args = (Q, K, V) if mask is None else (Q, K, V, mask)
    out, w = unpack(student.call(SDPA, *args), 2, SDPA, student)
    check_tensor(out, "out", student=student)
    check_tensor(w, "weights", student=student)
    return out, w


def _show(Q, K, V, mask=None, **more):
    shown = {"Q": Q, "K": K, "V": V}
    if mask is not None:
        shown["mask"] = mask
    shown.update(more)
    return shown


SHAPE_HINT_ZH = ("只转置 K 的最后两个轴：scores = Q @ K.transpose(-2, -1)，形状 (..., Tq, Tk)；"
                 "weights 在键（最后一个轴）上做 softmax；out = weights @ V，形状 (..., Tq, dv)。"
                 "不要假设 Tq == Tk、dk == dv 或固定的前导轴个数；浮点结果保持输入的 dtype。")
SHAPE_HINT_EN = ("Transpose only the last two axes of K: scores = Q @ K.transpose(-2, -1), shape (..., Tq, Tk); "
                 "softmax over the keys (last axis); out = weights @ V, shape (..., Tq, dv). Do not assume "
                 "Tq == Tk, dk == dv or a fixed number of leading axes; keep the input's float dtype.")


def _check_shape(x, what, shape, dtype, student, show, hint_zh=SHAPE_HINT_ZH, hint_en=SHAPE_HINT_EN):
    if tuple(x.shape) != tuple(shape):
        fail(f"{what} 的形状应为 {tuple(shape)}，实际为 {tuple(x.shape)}。",
             f"{what} should have shape {tuple(shape)}, got {tuple(x.shape)}.",
             show=show, student=student, hint_zh=hint_zh, hint_en=hint_en)
    if dtype is not None and x.dtype != dtype:
        fail(f"{what} 的 dtype 应为 {dtype}（与输入相同），实际为 {x.dtype}。",
             f"{what} should have dtype {dtype} (the inputs' dtype), got {x.dtype}.",
             show=show, student=student,
             hint_zh="不要把输入转成 float32（.float()、torch.tensor(...)、softmax(..., dtype=...)）；"
                     "新建的张量用 dtype=Q.dtype。",
             hint_en="Do not cast to float32 (.float(), torch.tensor(...), softmax(..., dtype=...)); "
                     "create new tensors with dtype=Q.dtype.")


def _check_unchanged(after, before, what, change_zh, change_en, *, student, show, hint_zh, hint_en,
                     where=None, atol=EXACT):
    """`after` (the student's output on changed inputs) must equal `before` (on the original ones)."""
    check_tensor(after, what, shape=before.shape, student=student)
    a, b = after.detach().double(), before.detach().double()
    bad = ~torch.isclose(a, b, atol=atol, rtol=atol)
    if where is not None:
        bad &= where.expand_as(bad)
    if bool(bad.any()):
        lines = [f"{what}{[int(v) for v in i]}: before {b[tuple(i)].item():.6g}, after {a[tuple(i)].item():.6g}"
                 for i in bad.nonzero()[:5]]
        fail(f"{change_zh}之后，{what} 变了（{int(bad.sum())} 个元素）。",
             f"{what} changed in {int(bad.sum())} entries after {change_en}.",
             show={**show, f"之前 before {what}": before, f"之后 after {what}": after,
                   "不同的元素 differing entries": "\n".join(lines)},
             student=student, hint_zh=hint_zh, hint_en=hint_en)


def _sdpa_checked(student, Q, K, V, mask, show, dtype=False):
    """Call the student's function; out and weights must have the contract's shapes (and dtype:
    graded by `shapes` only, so that one cast does not cost every test)."""
    out, w = _call_sdpa(student, Q, K, V, mask)
    lead, Tq, Tk, dv = Q.shape[:-2], Q.shape[-2], K.shape[-2], V.shape[-1]
    _check_shape(w, "weights", lead + (Tq, Tk), Q.dtype if dtype else None, student, show)
    _check_shape(out, "out", lead + (Tq, dv), Q.dtype if dtype else None, student, show)
    return out, w


def _diagnose_sdpa(w, Q, K, mask, rows):
    """(zh, en) hint naming the classic mistake that reproduces the student's weights, if any."""
    dk, right = Q.shape[-1], _ref_weights(Q, K, mask)
    full = _full_mask(mask, right.shape)
    after = torch.softmax((Q.double() @ K.double().transpose(-2, -1)) / math.sqrt(dk), -1) * full
    variants = [
        (_ref_weights(Q, K, mask, dim=-2),
         "softmax 用在了查询轴（dim=-2）上。每个查询对所有键的权重之和应为 1：softmax(scores, dim=-1)。",
         "softmax is taken over the query axis (dim=-2). Each query's weights over the keys must sum to 1: "
         "softmax(scores, dim=-1)."),
        (_ref_weights(Q, K, mask, scale=1.0),
         "分数没有缩放。除以 sqrt(dk)，让分数的方差不随 dk 增大。",
         "The scores are not scaled. Divide by sqrt(dk) so their variance does not grow with dk."),
        (_ref_weights(Q, K, mask, scale=1 / dk),
         "分数除以了 dk，应除以 sqrt(dk)：math.sqrt(Q.shape[-1])。",
         "The scores are divided by dk; divide by sqrt(dk): math.sqrt(Q.shape[-1])."),
        (after,
         "掩码是在 softmax 之后乘上去的，没有重新归一化：被屏蔽的键仍然占用了分母。在 softmax 之前把被屏蔽的分数设为 -inf。",
         "The mask is applied after softmax without renormalising: masked keys still take part in the "
         "denominator. Set masked scores to -inf before the softmax."),
    ]
    if mask is not None:
        variants.append((_ref_weights(Q, K, ~mask),
                         "掩码用反了：True 表示可以看。用 scores.masked_fill(~mask, float('-inf'))。",
                         "The mask is inverted: True = may attend. Use scores.masked_fill(~mask, float('-inf'))."))
        variants.append((_ref_weights(Q, K, None),
                         "掩码没有起作用：被屏蔽的键也得到了权重。",
                         "The mask has no effect: masked keys get weight too."))
    got = w.detach().double()
    r = rows[..., None].expand_as(got)
    for v, zh, en in variants:
        differs = not torch.allclose(v[r], right[r], atol=1e-4, rtol=1e-4)
        if differs and torch.allclose(got[r], v[r], atol=1e-4, rtol=1e-4):
            return zh, en
    return None


# ---------------------------------------------------------------- scaled_dot_product_attention

@prop(EX, SDPA, "shapes",
      zh="out 的形状为 (..., Tq, dv)，weights 为 (..., Tq, Tk)，dtype 与输入相同（任意前导轴，Tq ≠ Tk，dk ≠ dv）",
      en="out has shape (..., Tq, dv) and weights (..., Tq, Tk), in the inputs' dtype "
         "(any leading axes, Tq != Tk, dk != dv)")
@given(case=attention_inputs())
@example(case=_ex((), 1, 1, 1, 1))
@example(case=_ex((), 2, 3, 4, 5))
@example(case=_ex((2,), 3, 4, 2, 3, mask_shape=(3, 4)))
@example(case=_ex((2, 3), 4, 2, 5, 3, mask_shape=(2, 1, 1, 2)))
@example(case=_ex((2, 2), 3, 5, 2, 4, dtype=torch.float64))
@example(case=_ex((2, 1, 2), 2, 3, 2, 3, mask_shape=(2, 1, 1, 1, 3)))
def sdpa_shapes(student, case):
    Q, K, V, mask = case
    _sdpa_checked(student, Q, K, V, mask, _show(Q, K, V, mask), dtype=True)


@prop(EX, SDPA, "matches_torch",
      zh="不带掩码时 out 与 torch.nn.functional.scaled_dot_product_attention 一致，weights = softmax(Q K^T / sqrt(dk))"
         "（任意前导轴，分数很大时也一致）",
      en="without a mask, out matches torch.nn.functional.scaled_dot_product_attention and "
         "weights = softmax(Q K^T / sqrt(dk)) (any leading axes, also for scores far from 0)")
@given(case=attention_inputs(mask="never"))
@example(case=_ex((), 3, 4, 4, 2))
@example(case=_ex((2, 2), 3, 2, 4, 5))
@example(case=_ex((3,), 2, 2, 3, 3, dtype=torch.float64))
@example(case=_ex((2, 1, 2), 2, 3, 2, 3))
@example(case=_big_ex(masked=False))
def sdpa_matches_torch(student, case):
    _compare_sdpa(student, *case)


MULTIPLIED_MASK = (
    "有的查询行的可看键的分数都远小于 0（低于约 -104），而权重全是 0 或 NaN：可看键的 exp 在 float32 里下溢成了 0。"
    "常见的原因：掩码乘到了分数上（scores * mask，被屏蔽的分数变成 0，比可看的分数大得多），softmax 之后再乘掩码、"
    "按行和重新归一化；或者 exp 之前没有减去可看键里的最大值。softmax 与整体平移无关：在 softmax 之前用 "
    "scores.masked_fill(~mask, float('-inf'))（或 -1e9）屏蔽，再用 torch.softmax，它会先减去每行的最大值。",
    "In some query rows every allowed score is far below 0 (under about -104) and the weights are all 0 or NaN: the "
    "allowed keys' exp underflowed to 0 in float32. The usual causes: the mask multiplied into the scores (scores * "
    "mask: a masked score becomes 0, far above the allowed ones), then the softmax multiplied by the mask and "
    "renormalised by its row sum; or exp taken without first subtracting the maximum over the allowed keys. "
    "Softmax does not change when the scores are shifted: mask with scores.masked_fill(~mask, float('-inf')) (or "
    "-1e9) before the softmax, then use torch.softmax, which subtracts each row's maximum first.")


def _multiplied_mask_underflows(w, Q, K, mask, rows):
    """True if some graded row has every allowed score below exp's underflow in Q's dtype and the student's
    weights there are all 0 or not finite (softmax(scores * mask) * mask, renormalised by its row sum)."""
    s = (Q.detach().double() @ K.detach().double().transpose(-2, -1)) / math.sqrt(Q.shape[-1])
    full = _full_mask(mask, s.shape)
    low = -math.log(torch.finfo(Q.dtype).tiny) * 1.2  # ~105 in float32, ~850 in float64
    far = rows & ~full.all(-1) & (s.masked_fill(~full, float("-inf")).amax(-1) < -low)
    g = w.detach().double()
    dead = ~torch.isfinite(g).all(-1) | (g.abs().sum(-1) == 0)
    return bool((far & dead).any())


def _compare_sdpa(student, Q, K, V, mask):
    show = _show(Q, K, V, mask)
    out, w = _sdpa_checked(student, Q, K, V, mask, show)
    ref_out, ref_w, rows = _ref_sdpa(Q, K, V, mask)
    diag = None
    if not torch.allclose(w.detach().double()[rows], ref_w[rows], atol=1e-4, rtol=1e-4):
        diag = _diagnose_sdpa(w, Q, K, mask, rows)
        gw = w.detach().double()[rows]
        if diag is None and not bool(torch.isfinite(gw).all()):
            diag = ("weights 里出现了 NaN 或 inf：分数很大时 exp(scores) 溢出了（float32 里 exp(89) 已是 inf）。"
                    "用 torch.softmax(scores, dim=-1)，或先减去每行的最大值：exp(s - s.max(-1, keepdim=True))。",
                    "The weights hold NaN or inf: exp(scores) overflows when the scores are large (exp(89) is "
                    "already inf in float32). Use torch.softmax(scores, dim=-1), or subtract each row's maximum "
                    "first: exp(s - s.max(-1, keepdim=True)).")
        elif diag is None and mask is not None and _multiplied_mask_underflows(w, Q, K, mask, rows):
            diag = MULTIPLIED_MASK
        elif diag is None and mask is not None and bool((gw.sum(-1) == 0).any()):
            diag = ("有的查询行的权重全是 0，尽管它有可看的键：每行的最大值是在包括被屏蔽键在内的所有键上取的，"
                    "被屏蔽的键分数最大时，可看的键 exp(s - max) 全部下溢为 0。先把被屏蔽的分数设为 -inf（masked_fill），"
                    "再做 softmax。",
                    "Some query rows have all-zero weights although they have allowed keys: the row maximum was "
                    "taken over every key, masked ones included, and when a masked key has the largest score, "
                    "exp(s - max) underflows to 0 for every allowed key. Set the masked scores to -inf "
                    "(masked_fill) first, then take the softmax.")
    zh, en = diag or (
        "weights[..., i, j] = exp(s_ij) / sum_j' exp(s_ij')，s = Q K^T / sqrt(dk)，只对可以看的键求和；"
        "被屏蔽的键（mask 为 False）在 softmax 之前设为 -inf。",
        "weights[..., i, j] = exp(s_ij) / sum_j' exp(s_ij') with s = Q K^T / sqrt(dk), summing over the "
        "allowed keys only; set masked keys (mask False) to -inf before the softmax.")
    ex = "（没有任何可看键的查询行不比较。）" if mask is not None else ""
    exen = " (Query rows with no allowed key are not compared.)" if mask is not None else ""
    check_close(w, ref_w, "weights", where=rows[..., None], student=student, show=show,
                hint_zh=zh + ex, hint_en=en + exen)
    check_close(out, ref_out, "out", where=rows[..., None], student=student, show=show,
                hint_zh="weights 是对的，out 不对：out = weights @ V（形状 (..., Tq, dv)），不是 V @ weights，也不是 weights @ K。" + ex,
                hint_en="The weights are right but out is not: out = weights @ V (shape (..., Tq, dv)), "
                        "not V @ weights nor weights @ K." + exen)


@prop(EX, SDPA, "matches_torch_with_mask",
      zh="带掩码时（(Tk,)、(Tq, Tk)、(B, 1, 1, Tk)、(B, 1, Tq, Tk)、完整形状等可广播形状）与 torch 一致，"
         "分数很大时也一致；至少有一个可看键的查询行才比较",
      en="with a mask of any broadcastable shape ((Tk,), (Tq, Tk), (B, 1, 1, Tk), (B, 1, Tq, Tk), full, ...) "
         "the result matches torch, also for scores far from 0; only query rows with an allowed key are compared")
@given(case=attention_inputs(mask="always", empty_rows="maybe"))
@example(case=_ex((), 3, 4, 2, 2, mask_shape=(3, 4)))
@example(case=_ex((2, 2), 3, 4, 3, 2, mask_shape=(3, 4)))
@example(case=_ex((2, 3), 3, 4, 3, 2, mask_shape=(2, 1, 1, 4)))
@example(case=_ex((2, 3), 3, 4, 3, 2, mask_shape=(2, 1, 3, 4)))
@example(case=_ex((2, 2), 3, 4, 3, 2, mask_shape=(2, 2, 3, 4)))
@example(case=_ex((2,), 3, 4, 3, 2, mask_shape=(2, 3, 4), empty_row=True))
@example(case=_ex((2,), 3, 4, 2, 2, mask_shape=(4,)))
@example(case=_big_ex(masked=True))
@example(case=_underflow_ex(-200.0))  # every allowed score below exp's underflow in float32 (about -104)
@example(case=_underflow_ex(-3e4))
def sdpa_matches_torch_with_mask(student, case):
    _compare_sdpa(student, *case)


@prop(EX, SDPA, "weights_sum_to_one_over_keys",
      zh="每个（至少有一个可看键的）查询的权重非负，对键求和为 1",
      en="each query's weights (if it has an allowed key) are non-negative and sum to 1 over the keys")
@given(case=attention_inputs())
@example(case=_ex((), 2, 4, 3, 3))
@example(case=_ex((2,), 4, 3, 2, 2, mask_shape=(4, 3)))
@example(case=_ex((2, 2), 3, 5, 2, 2, mask_shape=(2, 1, 1, 5)))
@example(case=_underflow_ex(-200.0))  # allowed scores far below 0: still weights that sum to 1
def sdpa_weights_sum_to_one(student, case):
    Q, K, V, mask = case
    show = _show(Q, K, V, mask)
    _, w = _sdpa_checked(student, Q, K, V, mask, show)
    rows = _full_mask(mask, w.shape).any(-1)
    g = w.detach().double()
    multiplied = mask is not None and _multiplied_mask_underflows(w, Q, K, mask, rows)
    if bool((g[rows] < 0).any()) or not bool(torch.isfinite(g[rows]).all()):
        hint_zh, hint_en = MULTIPLIED_MASK if multiplied else ("softmax 的结果都在 [0, 1] 内。", "softmax values lie in [0, 1].")
        fail("有查询的权重为负数或不是有限值。", "some weights are negative or not finite.",
             show={**show, "weights": w}, student=student, hint_zh=hint_zh, hint_en=hint_en)
    sums = g.sum(-1)
    hint_zh, hint_en = ("softmax 要在键的轴上做（dim=-1），不是查询的轴（dim=-2）；如果在 softmax 之后才用掩码，"
                        "就要重新归一化。最好在 softmax 之前把被屏蔽的分数设为 -inf。",
                        "Take the softmax over the key axis (dim=-1), not the query axis (dim=-2); if you apply "
                        "the mask after the softmax you must renormalise. Better: set masked scores to -inf "
                        "before the softmax.")
    if multiplied:
        hint_zh, hint_en = MULTIPLIED_MASK
    check_close(sums, torch.ones_like(sums), "weights.sum(-1)", atol=1e-4, rtol=0, where=rows,
                student=student, show={**show, "weights": w}, hint_zh=hint_zh, hint_en=hint_en)


def _far_scores_ex(center, dtype=torch.float32):
    """Allowed scores far below 0, around `center` (e.g. -3e4), a few units apart: a finite fill such as
    -1e4 lies above them, so the masked keys win the softmax; -1e9, finfo.min or -inf lie far below.
    Q (2, 1), K (4, 1): score = q * k (dk = 1); q0 * k is `center`-ish, q1 * k two thirds of it."""
    k = torch.tensor([[-100.0], [-100.01], [-99.99], [-100.02]], dtype=torch.float64)  # (Tk=4, dk=1)
    q = torch.tensor([[-center / 100], [-center / 150]], dtype=torch.float64)  # (Tq=2, dk=1)
    V = _t((4, 3), 3, dtype)
    mask = torch.tensor([[True, False, True, False], [False, True, False, True]])
    return q.to(dtype), k.to(dtype), V, mask


# Scores the properties use: |score| <= 1e6; a finite fill of masked scores must lie below every
# allowed score by more than exp's underflow (~104 in float32, ~745 in float64), so -1e7 and lower (-1e9,
# finfo(dtype).min, -inf) always pass, while -1e4 and -1e5 are rejected (docs/contract-coverage.md, C32).
@prop(EX, SDPA, "masked_weights_are_exactly_zero",
      zh="被屏蔽的键（mask 为 False）的权重恰好为 0（在至少有一个可看键的查询行里；也检查可看键的分数远小于 0 的情况，"
         "例如 -3e4：有限的填充值如 -1e4 这时比它们大）",
      en="a masked key (mask False) gets weight exactly 0 (in query rows with an allowed key; also when the allowed "
         "scores are far below 0, e.g. -3e4, where a finite fill such as -1e4 is larger than them)")
@given(case=attention_inputs(mask="always"))
@example(case=_ex((), 3, 4, 2, 2, mask_shape=(3, 4)))
@example(case=_ex((2, 2), 3, 4, 3, 2, mask_shape=(2, 1, 1, 4)))
@example(case=_far_scores_ex(-3e4))  # allowed scores ~ -3e4 and -2e4: a -1e4 fill takes the weight
@example(case=_far_scores_ex(-5e5, torch.float64))  # ~ -5e5 and -3.3e5: a -1e5 fill takes the weight
def sdpa_masked_weights_zero(student, case):
    Q, K, V, mask = case
    show = _show(Q, K, V, mask)
    _, w = _sdpa_checked(student, Q, K, V, mask, show)
    full = _full_mask(mask, w.shape)
    bad = ~full & full.any(-1, keepdim=True) & (w.detach() != 0)
    scores = Q.detach().double() @ K.detach().double().transpose(-2, -1) / math.sqrt(Q.shape[-1])
    far = float(scores.abs().max()) > 1000
    if far:  # a row that is not finite here is the softmax's overflow (matches_torch), not a masked key's weight
        bad &= torch.isfinite(w.detach()).all(-1, keepdim=True)
        show = {**show, "分数 scores = Q K^T / sqrt(dk)": scores}
    if bool(bad.any()):
        i = [int(v) for v in bad.nonzero()[0]]
        fail(f"被屏蔽的键得到了非零权重：weights{i} = {w[tuple(i)].item():.6g}（mask 为 False，应恰好为 0）。",
             f"a masked key got a non-zero weight: weights{i} = {w[tuple(i)].item():.6g} (mask is False, "
             f"it must be exactly 0).",
             show={**show, "weights": w}, student=student, what="weights", got=w, differs=bad, picture="weights",
             hint_zh=("可看键的分数都在 -1e4 以下：有限的填充值（-1e4、-1e5）比它们还大，被屏蔽的键反而拿走了权重。"
                      "用 float('-inf')、torch.finfo(scores.dtype).min 或 -1e9 填充。" if far else
                      "在 softmax 之前用 scores.masked_fill(~mask, float('-inf'))（或 -1e9）屏蔽；"
                      "把分数乘以掩码或设为 0、-1e-9 都只是让被屏蔽的键变成普通的键。True = 可以看。"),
             hint_en=("The allowed scores are all below -1e4: a finite fill (-1e4, -1e5) is larger than them, so the "
                      "masked keys take the weight. Fill with float('-inf'), torch.finfo(scores.dtype).min or -1e9."
                      if far else
                      "Before the softmax use scores.masked_fill(~mask, float('-inf')) (or -1e9); multiplying "
                      "the scores by the mask or setting them to 0 or -1e-9 leaves the masked keys as ordinary "
                      "keys. True = may attend."))


@prop(EX, SDPA, "fully_masked_query_stays_finite",
      zh="一个没有任何可看键的查询：out、weights 和梯度里都没有 NaN 或 inf",
      en="a query with no allowed key gives no NaN or inf in out, weights or the gradient")
@given(case=attention_inputs(mask="always", empty_rows="some"))
@example(case=_ex((), 2, 3, 2, 2, mask_shape=(2, 3), empty_row=True))
@example(case=_ex((2, 2), 3, 3, 2, 2, mask_shape=(2, 1, 1, 3), empty_row=True))
@example(case=_ex((2,), 1, 2, 2, 3, mask_shape=(1, 2), empty_row=True))
def sdpa_fully_masked_finite(student, case):
    Q, K, V, mask = case
    Qg, Kg, Vg = (x.clone().requires_grad_() for x in (Q, K, V))
    show = _show(Q, K, V, mask)
    out, w = _sdpa_checked(student, Qg, Kg, Vg, mask, show)
    hint_zh = ("全被屏蔽的一行在 softmax 里是 exp(-inf) / 0 = NaN。softmax 之后把被屏蔽的位置设为 0"
               "（weights.masked_fill(~mask, 0.0)），或者用 -1e9 代替 -inf。这一行的具体数值不评分，只要求有限。")
    hint_en = ("A fully masked row is exp(-inf) / 0 = NaN in the softmax. After the softmax set the masked "
               "entries to 0 (weights.masked_fill(~mask, 0.0)), or fill with -1e9 instead of -inf. The values "
               "of that row are not graded, only that they are finite.")
    for x, what in ((w, "weights"), (out, "out")):
        if not bool(torch.isfinite(x.detach()).all()):
            fail(f"{what} 含有 NaN 或 inf（mask 里有一个查询没有任何可看的键）。",
                 f"{what} contains NaN or inf (the mask has a query with no allowed key).",
                 show={**show, what: x}, student=student, hint_zh=hint_zh, hint_en=hint_en,
                 what=what, got=x, differs=~torch.isfinite(x.detach()))
    if not (out.requires_grad or w.requires_grad):
        return  # differentiability is graded by differentiable_and_inputs_untouched
    g = torch.Generator().manual_seed(0)
    loss = (out * torch.randn(out.shape, generator=g, dtype=out.dtype)).sum() \
        + (w * torch.randn(w.shape, generator=g, dtype=w.dtype)).sum()
    try:
        loss.backward()
    except Exception as e:  # noqa: BLE001 - the student's graph
        fail("对 out 和 weights 反向传播失败。", "backpropagating through out and weights failed.",
             show={**show, "异常 exception": f"{type(e).__name__}: {str(e)[:300]}"}, student=student)
    for x, what in ((Qg, "Q.grad"), (Kg, "K.grad"), (Vg, "V.grad")):
        if x.grad is not None and not bool(torch.isfinite(x.grad).all()):
            fail(f"{what} 含有 NaN 或 inf（mask 里有一个查询没有任何可看的键）。",
                 f"{what} contains NaN or inf (the mask has a query with no allowed key).",
                 show={**show, what: x.grad}, student=student,
                 hint_zh=hint_zh + " 注意：先得到 NaN 再修补（例如加性 -inf 掩码之后用 nan_to_num）只修好了前向，"
                                   "梯度里还是 NaN。用 scores.masked_fill(~mask, ...) 屏蔽分数（它的反向会把被屏蔽位置的"
                                   "梯度清零），或者在 softmax 之前就避免 NaN。",
                 hint_en=hint_en + " Note: repairing a NaN afterwards (e.g. nan_to_num after an additive -inf "
                                   "mask) fixes only the forward value; the gradient still holds NaN. Mask the scores "
                                   "with scores.masked_fill(~mask, ...) (its backward zeroes the gradient at masked "
                                   "entries), or avoid the NaN before the softmax.")


@prop(EX, SDPA, "permutation_equivariant",
      zh="不带掩码时：同时打乱键和值不改变 out；打乱查询只会同样打乱 out 的行",
      en="without a mask: permuting keys and values together leaves out unchanged; permuting the queries "
         "permutes the rows of out the same way")
@given(case=attention_inputs(mask="never"), data=st.data())
@example(case=_ex((), 3, 4, 2, 2), data=None)
@example(case=_ex((2, 2), 4, 3, 3, 2), data=None)
def sdpa_permutation(student, case, data):
    Q, K, V, _ = case
    Tq, Tk = Q.shape[-2], K.shape[-2]
    if data is None:
        kp, qp = list(range(Tk))[::-1], list(range(Tq))[::-1]
    else:
        kp = data.draw(st.permutations(range(Tk)), label="key permutation")
        qp = data.draw(st.permutations(range(Tq)), label="query permutation")
    kp, qp = torch.tensor(kp, dtype=torch.long), torch.tensor(qp, dtype=torch.long)
    show = _show(Q, K, V)
    out, w = _sdpa_checked(student, Q, K, V, None, show)
    Kp, Vp = K[..., kp, :], V[..., kp, :]
    out_k, w_k = _sdpa_checked(student, Q, Kp, Vp, None, show)
    show_k = {**show, "键的排列 key permutation": kp.tolist()}
    hint_zh = ("注意力把键当作一个集合：没有掩码时，结果不应依赖键的顺序或查询的位置。"
               "是不是默认加了因果掩码、按位置截断，或者只用了某一个键？")
    hint_en = ("Attention treats the keys as a set: without a mask the result must not depend on the order of "
               "the keys or the position of a query. Is a causal mask applied by default, something cut by "
               "position, or only one key used?")
    kzh, ken = "同时打乱键和值", "permuting the keys and values together"
    _check_unchanged(out_k, out.detach(), "out", kzh, ken, student=student, show=show_k,
                     hint_zh=hint_zh, hint_en=hint_en, atol=1e-5)
    _check_unchanged(w_k, w.detach()[..., kp], "weights[..., perm]", kzh, ken, student=student, show=show_k,
                     hint_zh=hint_zh, hint_en=hint_en, atol=1e-5)
    out_q, w_q = _sdpa_checked(student, Q[..., qp, :], K, V, None, show)
    show_q = {**show, "查询的排列 query permutation": qp.tolist()}
    qzh, qen = "打乱查询", "permuting the queries"
    _check_unchanged(out_q, out.detach()[..., qp, :], "out[..., perm, :]", qzh, qen, student=student, show=show_q,
                     hint_zh=hint_zh, hint_en=hint_en, atol=1e-5)
    _check_unchanged(w_q, w.detach()[..., qp, :], "weights[..., perm, :]", qzh, qen, student=student,
                     show=show_q, hint_zh=hint_zh, hint_en=hint_en, atol=1e-5)


FUTURE_HINT_ZH = ("信息边界：带因果掩码时，位置 t 的输出只能依赖位置 <= t 的 Q、K、V。"
                  "被屏蔽的键必须在 softmax 之前去掉（设为 -inf），否则它们仍然出现在 softmax 的分母里；"
                  "softmax 也必须在键的轴上（dim=-1）。")
FUTURE_HINT_EN = ("The information boundary: with a causal mask the output at position t may depend only on "
                  "Q, K, V at positions <= t. Masked keys must be removed before the softmax (set to -inf), "
                  "otherwise they still appear in its denominator; the softmax must run over the keys (dim=-1).")


def _check_future_grads(student, leaves, names, t, show, hint_zh, hint_en):
    for x, what in zip(leaves, names):
        if x.grad is None:
            continue
        leak = x.grad[..., t + 1:, :].abs()
        if bool((leak > EXACT).any()):
            i = [int(v) for v in (leak > EXACT).nonzero()[0]]
            i[-2] += t + 1
            fail(f"梯度泄露了未来：位置 <= {t} 的输出对 {what} 在位置 {i[-2]} > {t} 的梯度不为 0"
                 f"（{what}.grad{i} = {x.grad[tuple(i)].item():.3g}）。",
                 f"the gradient leaks the future: the outputs at positions <= {t} have a non-zero gradient "
                 f"with respect to {what} at position {i[-2]} > {t} ({what}.grad{i} = {x.grad[tuple(i)].item():.3g}).",
                 show=show, student=student, hint_zh=hint_zh, hint_en=hint_en)


@prop(EX, SDPA, "future_does_not_change_past",
      zh="带因果掩码时，改变位置 > t 的 Q、K、V 不改变位置 <= t 的 out 和 weights，"
         "它们对未来位置的梯度为 0",
      en="with a causal mask, changing Q, K, V at positions > t leaves out and weights at positions <= t "
         "unchanged, and their gradient with respect to future positions is 0")
@given(case=causal_attention_inputs())
@example(case=_causal_ex((), 3, 2, 2, 0))
@example(case=_causal_ex((2, 2), 4, 3, 2, 1))
@example(case=_causal_ex((2,), 5, 2, 3, 2, dtype=torch.float64))
def sdpa_future(student, case):
    (Q, K, V), (Q2, K2, V2), mask, t = case.inputs, case.changed, case.mask, case.t
    show = {**_show(Q, K, V, mask), "t": t, "改变后 changed Q": Q2, "改变后 changed K": K2, "改变后 changed V": V2}
    out, w = _sdpa_checked(student, Q, K, V, mask, show)
    out2, w2 = _sdpa_checked(student, Q2, K2, V2, mask, show)
    czh, cen = f"只改变位置 > {t} 的 Q、K、V", f"changing Q, K, V at positions > {t} only"
    _check_unchanged(out2[..., :t + 1, :], out.detach()[..., :t + 1, :], f"out[..., :{t + 1}, :]", czh, cen,
                     student=student, show=show, hint_zh=FUTURE_HINT_ZH, hint_en=FUTURE_HINT_EN)
    _check_unchanged(w2[..., :t + 1, :], w.detach()[..., :t + 1, :], f"weights[..., :{t + 1}, :]", czh, cen,
                     student=student, show=show, hint_zh=FUTURE_HINT_ZH, hint_en=FUTURE_HINT_EN)
    leaves = tuple(x.clone().requires_grad_() for x in (Q, K, V))
    out, w = _sdpa_checked(student, *leaves, mask, show)
    if not (out.requires_grad or w.requires_grad):
        return  # graded by differentiable_and_inputs_untouched
    g = torch.Generator().manual_seed(1)
    loss = (out[..., :t + 1, :] * torch.randn(out[..., :t + 1, :].shape, generator=g, dtype=out.dtype)).sum() \
        + (w[..., :t + 1, :] * torch.randn(w[..., :t + 1, :].shape, generator=g, dtype=w.dtype)).sum()
    try:
        loss.backward()
    except Exception as e:  # noqa: BLE001
        fail("对 out 和 weights 反向传播失败。", "backpropagating through out and weights failed.",
             show={**show, "异常 exception": f"{type(e).__name__}: {str(e)[:300]}"}, student=student)
    _check_future_grads(student, leaves, ("Q", "K", "V"), t, show, FUTURE_HINT_ZH, FUTURE_HINT_EN)


@prop(EX, SDPA, "differentiable_and_inputs_untouched",
      zh="out 和 weights 对 Q、K、V 可微（backward 可用，梯度有限且正确），输入不被原地修改",
      en="out and weights are differentiable in Q, K, V (backward works, gradients finite and right); "
         "inputs are not modified in place")
@given(case=attention_inputs())
@example(case=_ex((), 2, 3, 4, 2))
@example(case=_ex((2, 2), 3, 3, 2, 2, mask_shape=(2, 1, 1, 3)))
@example(case=_ex((2,), 2, 4, 3, 2, dtype=torch.float64))
def sdpa_differentiable(student, case):
    Q, K, V, mask = case
    show = _show(Q, K, V, mask)
    leaves = tuple(x.clone().requires_grad_() for x in (Q, K, V))
    out, w = _sdpa_checked(student, *leaves, mask, show)
    hint_zh = ("整个计算都要留在 torch 里：不要用 .detach()、.item()、.numpy()、torch.tensor(...) 重新包装，"
               "也不要在 torch.no_grad() 里计算；不要原地修改输入（Q /= ...、masked_fill_）。")
    hint_en = ("Keep the whole computation in torch: no .detach(), .item(), .numpy(), re-wrapping with "
               "torch.tensor(...) or torch.no_grad(); do not modify the inputs in place (Q /= ..., masked_fill_).")
    for x, what in ((out, "out"), (w, "weights")):
        if not x.requires_grad:
            fail(f"{what} 与 Q、K、V 断开了（requires_grad=False），无法反向传播。",
                 f"{what} is cut off from Q, K, V (requires_grad=False): nothing can be learned through it.",
                 show=show, student=student, hint_zh=hint_zh, hint_en=hint_en)
    g = torch.Generator().manual_seed(2)
    G_out = torch.randn(out.shape, generator=g, dtype=torch.float64)
    G_w = torch.randn(w.shape, generator=g, dtype=torch.float64)
    try:
        ((out * G_out.to(out.dtype)).sum() + (w * G_w.to(w.dtype)).sum()).backward()
    except Exception as e:  # noqa: BLE001
        fail("对 out 和 weights 反向传播失败。", "backpropagating through out and weights failed.",
             show={**show, "异常 exception": f"{type(e).__name__}: {str(e)[:300]}"}, student=student,
             hint_zh=hint_zh, hint_en=hint_en)
    # the trusted gradient, in float64; compared only where the forward values are right
    ref = tuple(x.detach().double().requires_grad_() for x in (Q, K, V))
    full = _full_mask(mask, Q.shape[:-1] + (K.shape[-2],))
    s = (ref[0] @ ref[1].transpose(-2, -1) / math.sqrt(Q.shape[-1])).masked_fill(~full, float("-inf"))
    rw = torch.softmax(s, -1).masked_fill(~full, 0.0)
    rows = full.any(-1)
    ((rw @ ref[2] * G_out).sum() + (rw * G_w).sum()).backward()
    for x, r, what in zip(leaves, ref, ("Q", "K", "V")):  # noqa: B007 - r: the reference beside x
        if x.grad is None:
            fail(f"{what}.grad 是 None：out 和 weights 不依赖 {what}（计算图断开了）。",
                 f"{what}.grad is None: out and weights do not depend on {what} (the graph is cut).",
                 show=show, student=student, hint_zh=hint_zh, hint_en=hint_en)
        check_tensor(x.grad, f"{what}.grad", finite=True, student=student)
    values_right = torch.allclose(out.detach().double()[rows], (rw @ ref[2]).detach()[rows], atol=1e-4, rtol=1e-4) \
        and torch.allclose(w.detach().double()[rows], rw.detach()[rows], atol=1e-4, rtol=1e-4)
    if values_right and bool(rows.all()):
        for x, r, what in zip(leaves, ref, ("Q", "K", "V")):
            check_close(x.grad, r.grad, f"{what}.grad", atol=1e-4, rtol=1e-3, student=student, show=show,
                        hint_zh="前向的数值是对的，梯度却不对：计算图的某一段被断开或替换了。" + hint_zh,
                        hint_en="The forward values are right but the gradient is not: part of the graph is cut "
                                "or replaced. " + hint_en)


# ---------------------------------------------------------------- MultiHeadAttention


def _student_mha(student, c, P):
    """The student's module with the seeded weights P copied in."""
    mha = student.new(MHA, c.d, c.H, bias=c.bias)
    hint_zh = ("合同要求四个子模块 W_q、W_k、W_v、W_o，每个都是 torch.nn.Linear(d_model, d_model, bias=bias)，"
               "评分器会把自己的权重复制进去。")
    hint_en = ("The contract asks for four sub-modules W_q, W_k, W_v, W_o, each "
               "torch.nn.Linear(d_model, d_model, bias=bias); the grader copies its own weights into them.")
    with torch.no_grad():
        for name in ("W_q", "W_k", "W_v", "W_o"):
            lin = getattr(mha, name, None)
            w = getattr(lin, "weight", None)
            b = getattr(lin, "bias", None)
            if not isinstance(w, torch.Tensor) or tuple(w.shape) != (c.d, c.d):
                fail(f"{MHA}({c.d}, {c.H}, bias={c.bias}) 没有形状为 ({c.d}, {c.d}) 的 {name}.weight。",
                     f"{MHA}({c.d}, {c.H}, bias={c.bias}) has no {name}.weight of shape ({c.d}, {c.d}).",
                     student=student, hint_zh=hint_zh, hint_en=hint_en)
            if c.bias != isinstance(b, torch.Tensor) or (c.bias and tuple(b.shape) != (c.d,)):
                fail(f"{MHA}(..., bias={c.bias})：{name}.bias 应该" + ("是形状 (d_model,) 的张量。" if c.bias else "是 None。"),
                     f"{MHA}(..., bias={c.bias}): {name}.bias should be "
                     + ("a tensor of shape (d_model,)." if c.bias else "None."),
                     student=student, hint_zh=hint_zh + "把 bias 参数传给每个 nn.Linear。",
                     hint_en=hint_en + " Pass the bias argument on to every nn.Linear.")
            w.copy_(P[name])
            if c.bias:
                b.copy_(P[name + ".bias"])
    return mha


def _forward(student, mha, c, x_q=None, x_kv=None, mask="case"):
    x_q = c.x_q if x_q is None else x_q
    x_kv = c.x_kv if x_kv is None else x_kv
    mask = c.mask if isinstance(mask, str) else mask
    args = (x_q, x_kv) if mask is None else (x_q, x_kv, mask)
    res = student.invoke(f"{MHA}({c.d}, {c.H}, bias={c.bias}).forward", mha, *args)
    out, w = unpack(res, 2, f"{MHA}.forward", student)
    check_tensor(out, "out", student=student)
    check_tensor(w, "weights", student=student)
    B, Tq, Tk = x_q.shape[0], x_q.shape[1], x_kv.shape[1]
    show = _mha_show(c, x_q, x_kv, mask)
    _check_shape(w, "weights", (B, c.H, Tq, Tk), x_q.dtype, student, show,
                 hint_zh="weights 是每个头各自的注意力权重，形状 (B, H, Tq, Tk)，不要对头取平均。"
                         "拆头：view(B, T, H, dh).transpose(1, 2)。",
                 hint_en="weights are each head's own attention weights, shape (B, H, Tq, Tk); do not average "
                         "over the heads. Split the heads with view(B, T, H, dh).transpose(1, 2).")
    _check_shape(out, "out", (B, Tq, c.d), x_q.dtype, student, show,
                 hint_zh="合并头：out.transpose(1, 2).reshape(B, Tq, d_model)，再经过 W_o。",
                 hint_en="Merge the heads: out.transpose(1, 2).reshape(B, Tq, d_model), then apply W_o.")
    return out, w


def _mha_show(c, x_q, x_kv, mask, **more):
    shown = {"d_model, num_heads, bias": (c.d, c.H, c.bias)}
    shown.update({"x_q = x_kv": x_q} if x_q is x_kv else {"x_q": x_q, "x_kv": x_kv})
    if mask is not None:
        shown["mask"] = mask
    shown.update(more)
    return shown


@prop(EX, MHA, "shapes",
      zh="MultiHeadAttention(d_model, H) 有 W_q、W_k、W_v、W_o；forward 返回 out (B, Tq, d_model) 和每个头的 weights (B, H, Tq, Tk)",
      en="MultiHeadAttention(d_model, H) has W_q, W_k, W_v, W_o; forward returns out (B, Tq, d_model) and "
         "per-head weights (B, H, Tq, Tk)")
@given(c=mha_inputs())
@example(c=_mha_ex(1, 1, 1, 1, 1))
@example(c=_mha_ex(2, 3, 2, 2, 4, mask_shape=(2, 1, 1, 4)))
@example(c=_mha_ex(2, 2, 3, 4, 3, bias=False))
def mha_shapes(student, c):
    mha = _student_mha(student, c, _params(c.d, c.bias, c.seed))
    _forward(student, mha, c)


@prop(EX, MHA, "matches_torch_multihead_attention",
      zh="与权重相同的 torch.nn.MultiheadAttention(batch_first=True) 一致（out 和每个头的 weights，带或不带掩码、偏置）",
      en="matches torch.nn.MultiheadAttention(batch_first=True) with the same weights (out and per-head "
         "weights, with or without mask and bias)")
@given(c=mha_inputs())
@example(c=_mha_ex(2, 2, 2, 3, 4))
@example(c=_mha_ex(2, 3, 2, 3, 4, mask_shape=(3, 4), bias=False))
@example(c=_mha_ex(2, 2, 3, 3, 4, mask_shape=(2, 1, 1, 4)))
@example(c=_mha_ex(2, 2, 2, 3, 3, mask_shape=(2, 1, 3, 3)))
@example(c=_mha_ex(2, 3, 1, 3, 2, mask_shape=(2, 3, 3, 2), empty_row=True))
@example(c=_mha_ex(1, 8, 2, 3, 4, mask_shape=(1, 1, 1, 4)))  # many heads, a batch of one
@example(c=_mha_ex(2, 16, 1, 2, 3, mask_shape=(2, 3)))
@example(c=_far_mha_ex())  # allowed scores ~ -3e4: a -1e4 fill inside the module takes the weight
# one module called twice: other sizes (Tq 3 -> 5, Tk 4 -> 2) and a mask, then the same sizes with other values
# (keys and values kept from the first call, a cache of anything, must not change the second call's result)
@example(c=_again_ex(2, 2, 2, (3, 4), (5, 2), mask=True))
@example(c=_again_ex(1, 2, 3, (4, 4), (4, 4)))
@example(c=_again_ex(2, 2, 2, (3, 4), None, mode="eval"))  # train mode, then module.eval() on the same inputs
def mha_matches_torch(student, c):
    P = _params(c.d, c.bias, c.seed)
    mha = _student_mha(student, c, P)
    if c.again is not None:
        _set_training(student, mha, True)
    out, w = _forward(student, mha, c)
    ref_out, ref_w, rows = _torch_mha(c, P)
    if not _mha_agrees(out, w, ref_out, ref_w, rows):
        _random_in_train_mode(student, mha, c, out, w, ref_out, ref_w)
    _compare_mha(student, c, P, out, w, ref_out, ref_w, rows)
    if c.again is not None:
        _check_again(student, mha, c, P)


def _mha_agrees(out, w, ref_out, ref_w, rows):
    """The student's (out, weights) agree with the reference where graded (as _compare_mha checks them)."""
    if tuple(out.shape) != tuple(ref_out.shape) or tuple(w.shape) != tuple(ref_w.shape):
        return False
    g_w, g_out = w.detach().double(), out.detach().double()
    r = rows.all(1)
    return (torch.allclose(g_w[rows], ref_w[rows], atol=1e-4, rtol=1e-4)
            and torch.allclose(g_out[r], ref_out[r], atol=1e-4, rtol=1e-4))


def _set_training(student, mha, mode):
    """module.train(mode) / module.eval() on the student's module (in the worker: done with the next call)."""
    try:
        type(mha).train(mha, mode)
    except Exception as e:  # noqa: BLE001 - the student's own train()
        fail(f"{MHA}.train({mode}) 抛出了异常 {type(e).__name__}。", f"{MHA}.train({mode}) raised {type(e).__name__}.",
             show={"异常 exception": f"{type(e).__name__}: {str(e)[:300]}"}, student=student,
             hint_zh="不要改写 nn.Module 的 train()/eval()：训练和推理都会调用它们。",
             hint_en="Do not override nn.Module's train() / eval(): training and inference both call them.")


MODE_HINT_ZH = ("合同里的多头注意力没有 dropout，也没有任何随模式（module.train() / module.eval()）变化的部分："
                "去掉 nn.Dropout / F.dropout（要用 dropout 的话放在模型里这一层之外）。")
MODE_HINT_EN = ("The contract's multi-head attention has no dropout, and nothing that depends on the mode "
                "(module.train() / module.eval()): remove nn.Dropout / F.dropout (a model that wants dropout puts it "
                "outside this layer).")


def _random_in_train_mode(student, mha, c, out, w, ref_out, ref_w):
    """The first call differs from the reference: if a second call on the same inputs gives other values, the
    module is random in train mode (the mode a new module starts in): dropout.  Fails with that, or returns."""
    try:
        out2, w2 = _forward(student, mha, c)
    except Exception:  # noqa: BLE001 - a failure of the second call is not this diagnosis
        return
    same = tuple(out2.shape) == tuple(out.shape) and tuple(w2.shape) == tuple(w.shape) \
        and torch.equal(out2.detach(), out.detach()) and torch.equal(w2.detach(), w.detach())
    if same:
        return
    fail("训练模式下（module.train()，新建的模块默认就是这个模式）输出与参考答案不一致，而且同样的输入调用两次结果不同："
         "模块里有随机的部分（dropout）。合同里没有 dropout，两种模式下输出都必须等于参考答案。",
         "In train mode (module.train(), the mode a new module starts in) the output differs from the reference, and "
         "two calls with the same inputs give different results: something random (dropout) acts in the module. "
         "The contract has no dropout: the output must equal the reference in both modes.",
         show=_mha_show(c, c.x_q, c.x_kv, c.mask, **{"期望 expected out": ref_out, "第一次 first call out": out,
                                                     "第二次 second call out": out2}),
         student=student, hint_zh=MODE_HINT_ZH, hint_en=MODE_HINT_EN)


def _check_again(student, mha, c, P):
    """The second call of the same module (c.again, in c.mode) must match the reference on its own inputs."""
    x_q, x_kv, mask = c.again
    c2 = MHACase(c.B, c.H, c.d, c.bias, c.seed, x_q, x_kv, mask)
    ref_out, ref_w, rows = _torch_mha(c2, P)
    if c.mode == "eval":
        _set_training(student, mha, False)
    problem = None
    try:
        out, w = _forward(student, mha, c2)
        if _mha_agrees(out, w, ref_out, ref_w, rows):
            return
    except (PropertyFailure, StudentCrash) as e:
        problem = e
    first = {"第一次调用 first call: x_q": c.x_q, "第一次调用 first call: x_kv": c.x_kv}
    show = _mha_show(c2, x_q, x_kv, mask, **first, **{"期望 expected out": ref_out, "期望 expected weights": ref_w})
    if problem is not None:
        show["第二次调用的问题 the second call's problem"] = problem.en
    if c.mode == "eval":
        fail("训练模式下（module.train()）输出与参考答案一致，切换到推理模式（module.eval()）后，同样的输入得到的输出与参考答案"
             "不一致。合同里没有 dropout，也没有随模式变化的部分：两种模式下输出都必须等于参考答案。",
             "In train mode (module.train()) the output equals the reference; after module.eval(), the same inputs give "
             "an output that differs from the reference. The contract has no dropout and nothing that depends on the "
             "mode: the output must equal the reference in both modes.",
             show=show, student=student, hint_zh=MODE_HINT_ZH + "也不要在推理模式下走另一条路径（例如生成时用的 KV 缓存）。",
             hint_en=MODE_HINT_EN + " Nor take another path in eval mode (e.g. the KV cache of generation code).")
    fresh = _student_mha(student, c2, P)
    _set_training(student, fresh, True)
    try:
        f_out, f_w = _forward(student, fresh, c2)
        fresh_ok = _mha_agrees(f_out, f_w, ref_out, ref_w, rows)
    except (PropertyFailure, StudentCrash):
        fresh_ok = False
    if not fresh_ok:  # wrong on these inputs whatever came before: the ordinary comparison says how
        if problem is not None:
            raise problem
        _compare_mha(student, c2, P, out, w, ref_out, ref_w, rows)
        return
    Tq, Tk = x_q.shape[1], x_kv.shape[1]
    fail(f"同一个模块第二次调用（其他输入：Tq = {c.x_q.shape[1]} -> {Tq}，Tk = {c.x_kv.shape[1]} -> {Tk}）的结果，与权重相同的"
         f"新模块在这些输入上的结果（它与参考答案一致）不同：有东西在两次调用之间被保留了下来（例如第一次调用的键和值）。",
         f"The second call of the same module, with other inputs (Tq {c.x_q.shape[1]} -> {Tq}, Tk {c.x_kv.shape[1]} -> "
         f"{Tk}), differs from a fresh module with the same weights on those inputs (which matches the reference): "
         f"something is kept between calls (the first call's keys and values, for instance).",
         show=show, student=student,
         hint_zh="forward 每次都只用这次传入的 x_q、x_kv 和 mask 计算 q、k、v：不要把它们（或任何中间结果）存到 self 上"
                 "留给下一次调用。生成时的 KV 缓存不属于这个模块的合同。",
         hint_en="Compute q, k and v from this call's x_q, x_kv and mask on every call: do not keep them (or anything "
                 "computed from them) on self for the next call. A generation-time KV cache is not part of this "
                 "module's contract.")


def _compare_mha(student, c, P, out, w, ref_out, ref_w, rows):
    show = _mha_show(c, c.x_q, c.x_kv, c.mask)
    excl_zh = "（有某个头没有任何可看键的查询行不比较。）" if c.mask is not None else ""
    excl_en = " (Query rows where some head has no allowed key are not compared.)" if c.mask is not None else ""
    where = rows[..., None]
    if not torch.allclose(w.detach().double()[rows], ref_w[rows], atol=1e-4, rtol=1e-4):
        zh = ("每个头的注意力权重就不对。检查：q 用 W_q、k 用 W_k；头 h 用投影的第 h*dh:(h+1)*dh 列："
              "view(B, T, H, dh).transpose(1, 2)（直接 view(B, H, T, dh) 会把不同时间步混在一个头里）；"
              "除以 sqrt(dh)（头的宽度），不是 sqrt(d_model)；掩码要广播到所有头。")
        en = ("Each head's attention weights are already wrong. Check: q uses W_q and k uses W_k; head h uses "
              "columns h*dh:(h+1)*dh of the projections: view(B, T, H, dh).transpose(1, 2) (a plain "
              "view(B, H, T, dh) mixes time steps inside a head); divide by sqrt(dh), the head width, not "
              "sqrt(d_model); the mask must reach every head.")
        d_scale = _mha_weights_variant(c, P, 1 / math.sqrt(c.d))
        if c.H > 1 and torch.allclose(w.detach().double()[rows], d_scale[rows], atol=1e-4, rtol=1e-4):
            zh = "分数除以了 sqrt(d_model)。每个头的点积只有 dh = d_model / H 维：除以 sqrt(dh)。"
            en = "The scores are divided by sqrt(d_model). Each head's dot product has only dh = d_model / H " \
                 "dimensions: divide by sqrt(dh)."
        check_close(w, ref_w, "weights", where=where, student=student, show=show,
                    hint_zh=zh + excl_zh, hint_en=en + excl_en)
    check_close(out, ref_out, "out", where=rows.all(1)[..., None], student=student, show=show,
                hint_zh="每个头的权重是对的，错在之后：v 要用 W_v；合并头要先 transpose(1, 2) 再 "
                        "reshape(B, Tq, d_model)；最后还要经过输出投影 W_o。" + excl_zh,
                hint_en="Each head's weights are right; the mistake comes after them: v uses W_v; merge the heads "
                        "with transpose(1, 2) before reshape(B, Tq, d_model); finish with the output projection "
                        "W_o." + excl_en)


@prop(EX, MHA, "padding_does_not_change_valid_outputs",
      zh="自注意力带键的填充掩码（不带因果）：改变填充位置的值和填充的长度，不改变真实位置的 out 和 weights",
      en="self-attention with a key padding mask (not causal): changing the padded positions' values and the "
         "amount of padding leaves out and weights at real positions unchanged")
@given(p=padded_self_attention())
@example(p=_padded_ex([3, 1], 3, 2, 2, 2))
@example(p=_padded_ex([2, 4, 1], 4, 1, 3, 1, square=True))
def mha_padding(student, p):
    c = p.case
    P = _params(c.d, c.bias, c.seed)
    mha = _student_mha(student, c, P)
    out, w = _forward(student, mha, c)
    x2 = p.x2
    out2, w2 = _forward(student, mha, c, x2, x2, p.mask2)
    T = c.x_q.shape[1]
    valid = torch.arange(T)[None, :] < p.lengths[:, None]  # (B, T)
    show = _mha_show(c, c.x_q, c.x_kv, c.mask, lengths=p.lengths,
                     **{"改变填充后 x with other padding": x2, "新的掩码 new mask": p.mask2})
    hint_zh = ("填充位置不是真实词元：真实查询看不到它们，它们的值和个数都不能影响真实位置。掩码 (B, 1, 1, T) "
               "在键的轴上，要原样传给每个头（广播到 (B, H, Tq, Tk)），不要转置、不要只给某一个头。")
    hint_en = ("Padded positions are not tokens: real queries cannot see them, so neither their values nor "
               "their number may change the real positions. The (B, 1, 1, T) mask is on the key axis; pass it "
               "on to every head as it is (it broadcasts to (B, H, Tq, Tk)); do not transpose it or give it "
               "to one head only.")
    czh = "改变填充位置的值并加长填充（只比较真实位置）"
    cen = "changing the padded positions' values and adding padding (only real positions are compared)"
    _check_unchanged(out2[:, :T], out.detach(), "out[:, :T]", czh, cen,
                     where=valid[..., None], atol=1e-5, student=student, show=show, hint_zh=hint_zh, hint_en=hint_en)
    _check_unchanged(w2[:, :, :T, :T], w.detach(), "weights[:, :, :T, :T]", czh, cen,
                     where=valid[:, None, :, None], atol=1e-5, student=student, show=show,
                     hint_zh=hint_zh, hint_en=hint_en)


@prop(EX, MHA, "future_does_not_change_past",
      zh="带因果掩码时，改变位置 > t 的 x_q 和 x_kv 不改变位置 <= t 的输出，它们对未来位置的梯度为 0",
      en="with a causal mask, changing x_q and x_kv at positions > t leaves the outputs at positions <= t "
         "unchanged, and their gradient with respect to future positions is 0")
@given(case=causal_mha_inputs())
@example(case=_causal_mha_ex(2, 2, 2, 3, 0))
@example(case=_causal_mha_ex(1, 3, 1, 5, 2))
def mha_future(student, case):
    cz, c = case
    (x_q, x_kv), (x_q2, x_kv2), mask, t = cz.inputs, cz.changed, cz.mask, cz.t
    P = _params(c.d, c.bias, c.seed)
    mha = _student_mha(student, c, P)
    show = _mha_show(c, x_q, x_kv, mask, t=t, **{"改变后 changed x_q": x_q2, "改变后 changed x_kv": x_kv2})
    out, w = _forward(student, mha, c, x_q, x_kv, mask)
    out2, w2 = _forward(student, mha, c, x_q2, x_kv2, mask)
    hint_zh = (FUTURE_HINT_ZH + " 在多头注意力里，拆头必须保持时间轴：view(B, T, H, dh).transpose(1, 2)；"
               "合并时先 transpose(1, 2) 再 reshape，否则一个头里会混入其他时间步；掩码要传给 "
               "scaled_dot_product_attention 并作用于所有头。")
    hint_en = (FUTURE_HINT_EN + " In multi-head attention, splitting the heads must keep the time axis: "
               "view(B, T, H, dh).transpose(1, 2); merge with transpose(1, 2) before reshape, otherwise a head "
               "mixes other time steps; the mask must be passed to scaled_dot_product_attention and reach "
               "every head.")
    czh, cen = f"只改变位置 > {t} 的 x_q 和 x_kv", f"changing x_q and x_kv at positions > {t} only"
    _check_unchanged(out2[:, :t + 1], out.detach()[:, :t + 1], f"out[:, :{t + 1}]", czh, cen, atol=1e-5,
                     student=student, show=show, hint_zh=hint_zh, hint_en=hint_en)
    _check_unchanged(w2[:, :, :t + 1], w.detach()[:, :, :t + 1], f"weights[:, :, :{t + 1}]", czh, cen, atol=1e-5,
                     student=student, show=show, hint_zh=hint_zh, hint_en=hint_en)
    leaves = (x_q.clone().requires_grad_(), x_kv.clone().requires_grad_())
    out, w = _forward(student, mha, c, *leaves, mask)
    if not (out.requires_grad or w.requires_grad):
        return
    g = torch.Generator().manual_seed(3)
    loss = (out[:, :t + 1] * torch.randn(out[:, :t + 1].shape, generator=g)).sum() \
        + (w[:, :, :t + 1] * torch.randn(w[:, :, :t + 1].shape, generator=g)).sum()
    try:
        loss.backward()
    except Exception as e:  # noqa: BLE001
        fail("对 out 和 weights 反向传播失败。", "backpropagating through out and weights failed.",
             show={**show, "异常 exception": f"{type(e).__name__}: {str(e)[:300]}"}, student=student)
    _check_future_grads(student, leaves, ("x_q", "x_kv"), t, show, hint_zh, hint_en)


def _torch_mha_grads(c, P, G_out, G_w):
    """d/d(x_q, x_kv, every weight and bias) of sum(out * G_out) + sum(weights * G_w) through
    torch.nn.MultiheadAttention(batch_first=True) in float64 with the weights P (x_q and x_kv
    are separate leaves even when equal)."""
    B, Tq, Tk = c.x_q.shape[0], c.x_q.shape[1], c.x_kv.shape[1]
    ref = _torch_mha_module(c, P)
    x_q, x_kv = (x.detach().double().clone().requires_grad_() for x in (c.x_q, c.x_kv))
    blocked = None if c.mask is None else ~_full_mask(c.mask, (B, c.H, Tq, Tk)).reshape(B * c.H, Tq, Tk)
    out, w = ref(x_q, x_kv, x_kv, attn_mask=blocked, need_weights=True, average_attn_weights=False)
    ((out * G_out).sum() + (w * G_w).sum()).backward()
    grads = {"x_q": x_q.grad, "x_kv": x_kv.grad}
    for name, i in (("W_q", 0), ("W_k", 1), ("W_v", 2)):
        grads[f"{name}.weight"] = ref.in_proj_weight.grad[i * c.d:(i + 1) * c.d]
        if c.bias:
            grads[f"{name}.bias"] = ref.in_proj_bias.grad[i * c.d:(i + 1) * c.d]
    grads["W_o.weight"] = ref.out_proj.weight.grad
    if c.bias:
        grads["W_o.bias"] = ref.out_proj.bias.grad
    return grads


@prop(EX, MHA, "differentiable",
      zh="out 和 weights 对 x_q、x_kv 以及 W_q、W_k、W_v、W_o 的每个权重和偏置都可微，梯度与 torch.nn.MultiheadAttention 相同",
      en="out and weights are differentiable with respect to x_q, x_kv and every weight and bias of W_q, W_k, W_v, "
         "W_o, with the gradients of torch.nn.MultiheadAttention")
@given(c=mha_inputs())
@example(c=_mha_ex(2, 2, 2, 3, 4, mask_shape=(2, 1, 1, 4)))
@example(c=_mha_ex(1, 3, 1, 2, 3, bias=False))
def mha_differentiable(student, c):
    P = _params(c.d, c.bias, c.seed)
    mha = _student_mha(student, c, P)
    names = [f"{n}.{p}" for n in ("W_q", "W_k", "W_v", "W_o") for p in (("weight", "bias") if c.bias else ("weight",))]
    params = {}
    for name in names:
        n, _, p = name.partition(".")
        params[name] = getattr(getattr(mha, n), p)
        params[name].requires_grad_(True)
        params[name].grad = None
    x_q, x_kv = c.x_q.clone().requires_grad_(), c.x_kv.clone().requires_grad_()
    out, w = _forward(student, mha, c, x_q, x_kv)
    show = _mha_show(c, c.x_q, c.x_kv, c.mask)
    hint_zh = ("forward 整个都要留在 torch 的计算图里：不要用 torch.no_grad()（包括装饰器 @torch.no_grad()）、"
               ".detach()、.data（例如 F.linear(x, self.W_q.weight.data)）或 torch.tensor(...) 重新包装；"
               "直接调用 self.W_q(x) 等子模块。")
    hint_en = ("Keep the whole forward in torch's graph: no torch.no_grad() (the @torch.no_grad() decorator "
               "included), .detach(), .data (e.g. F.linear(x, self.W_q.weight.data)) or re-wrapping with "
               "torch.tensor(...); call the sub-modules, self.W_q(x) and so on.")
    if not (out.requires_grad or w.requires_grad):
        fail("out 和 weights 都不可微（requires_grad=False）：多头注意力的参数无法训练。",
             "Neither out nor weights is differentiable (requires_grad=False): the attention's parameters "
             "cannot be trained.", show=show, student=student, hint_zh=hint_zh, hint_en=hint_en)
    g = torch.Generator().manual_seed(c.seed % 1000 + 5)
    G_out = torch.randn(out.shape, generator=g, dtype=torch.float64)
    G_w = torch.randn(w.shape, generator=g, dtype=torch.float64)
    loss = sum((t * G.to(t.dtype)).sum() for t, G in ((out, G_out), (w, G_w)) if t.requires_grad)
    try:
        loss.backward()
    except Exception as e:  # noqa: BLE001
        fail("对 out 和 weights 反向传播失败。", "backpropagating through out and weights failed.",
             show={**show, "异常 exception": f"{type(e).__name__}: {str(e)[:300]}"}, student=student,
             hint_zh="常见原因：原地操作（+=、masked_fill_、切片赋值）改写了计算图还需要的张量。",
             hint_en="A common cause: an in-place operation (+=, masked_fill_, slice assignment) on a tensor "
                     "the graph still needs.")
    ref = _torch_mha_grads(c, P, G_out, G_w)
    got = {"x_q": x_q.grad, "x_kv": x_kv.grad, **{name: params[name].grad for name in names}}
    ref_out, ref_w, rows = _torch_mha(c, P)
    values_right = torch.allclose(out.detach().double(), ref_out, atol=1e-4, rtol=1e-4) \
        and torch.allclose(w.detach().double(), ref_w, atol=1e-4, rtol=1e-4)
    lzh = "sum(out * G_out) + sum(weights * G_w)，G 为固定随机权重 / fixed random weights"
    for name, r in ref.items():
        if got[name] is None:
            fail(f"没有梯度传到 {name}：out 和 weights 与它断开了。",
                 f"No gradient reaches {name}: out and weights are cut off from it.",
                 show={**show, "损失 loss": lzh}, student=student, hint_zh=hint_zh, hint_en=hint_en)
        if values_right:  # gradient values are graded only where the forward values are right
            check_close(got[name], r, f"d loss / d {name}", atol=1e-4, rtol=1e-3, student=student,
                        show={**show, "损失 loss": lzh},
                        hint_zh="前向的数值是对的，梯度却不对：计算图的某一段被 .detach()、.data 断开或替换了。" + hint_zh,
                        hint_en="The forward values are right but the gradient is not: part of the graph is cut "
                                "or replaced with .detach() or .data. " + hint_en)


@prop(EX, MHA, "rejects_indivisible_heads",
      zh="d_model 不能被 num_heads 整除时，构造 MultiHeadAttention 抛出 ValueError",
      en="MultiHeadAttention raises ValueError when d_model is not divisible by num_heads")
@given(H=st.integers(2, 4), k=st.integers(0, 2), r=st.integers(1, 3))
@example(H=4, k=1, r=2)
@example(H=3, k=0, r=2)
def mha_rejects(student, H, k, r):
    d = H * k + min(r, H - 1)
    if not student.raises(ValueError, MHA, d, H):
        fail(f"MultiHeadAttention(d_model={d}, num_heads={H}) 没有抛出 ValueError（{d} 不能被 {H} 整除）。",
             f"MultiHeadAttention(d_model={d}, num_heads={H}) did not raise ValueError ({d} is not divisible "
             f"by {H}).", student=student,
             hint_zh="每个头的宽度 dh = d_model / H 必须是整数。在 __init__ 开头检查："
                     "if d_model % num_heads != 0: raise ValueError(...)。",
             hint_en="Each head has width dh = d_model / H, which must be a whole number. Check at the top of "
                     "__init__: if d_model % num_heads != 0: raise ValueError(...).")
