"""Hidden properties of the `tiny_lm` exercise: a tiny causal language model built from the
student's own parts (padding_mask, causal_mask, sinusoidal_encoding, scaled_dot_product_attention,
masked_cross_entropy).

    params = (E, W_q, W_k, W_v, W_o, W_out)    E (V, d), W_q..W_o (d, d), W_out (V, d)
    X      = sqrt(d) E[tokens] + PE             (B, T, d)
    H      = X + attention(X W_q^T, X W_k^T, X W_v^T, causal & key is real) W_o^T
    logits = H W_out^T                          (B, T, V)
    loss   = mean over t + 1 < length of CE(logits[b, t], tokens[b, t + 1])

Information boundary: logits at t depend on tokens 0..t only.  It is checked twice: changing the
tokens after t leaves logits[:, :t+1] unchanged, and the gradient of logits[:, :t+1] with respect
to the embedding rows of the tokens after t is exactly 0 (tokens are drawn distinct, one
embedding row per position, so a row's gradient is that position's).  The gradient is a
vector-Jacobian product computed where the student's code runs (judge/remote.py).  Padding:
valid logits and the loss do not change with the padded tokens or the amount of padding.

The properties pass the student judge-made params (not the student's init), so a mistake in
init_tiny_lm costs only init_tiny_lm's tests.  References are computed here in float64;
tolerances are float32 noise (entries of logits are O(10)).
"""
import math

import torch
import torch.nn.functional as F
from hypothesis import example, given
from hypothesis import strategies as st

from ...properties._harness import check_close, check_global_state_untouched, check_tensor, fail, prop, unpack
from ...properties.strategies import sizes

EX = "tiny_lm"
INIT, LOGITS, LOSS, TRAIN = "init_tiny_lm", "tiny_lm_logits", "tiny_lm_loss", "train_tiny_lm"
EXACT = 1e-5  # "unchanged" / "zero gradient", per unit of |logits| (float32 noise of another summation order)
ATOL, RTOL = 2e-4, 2e-4  # logits and loss in float32 against a float64 reference
N_PARAMS = 6
NAMES = ("E", "W_q", "W_k", "W_v", "W_o", "W_out")
seeds = st.integers(0, 2 ** 31 - 1)


# ---------------------------------------------------------------- trusted references


def params_for(V, d, seed):
    """Judge-made params (float32): entries with two decimals, scaled like the reference's init."""
    g = torch.Generator().manual_seed(int(seed))

    def w(*shape):
        return (torch.randint(-100, 101, shape, generator=g).double() / 100 * 1.7 / math.sqrt(d)).float()

    return (w(V, d), w(d, d), w(d, d), w(d, d), w(d, d), w(V, d))


def pe_ref(T, d):
    """The reference sinusoidal encoding (T, d) in float64."""
    t = torch.arange(T, dtype=torch.float64)[:, None]
    angle = t / 10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.empty(T, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = angle.sin(), angle.cos()
    return pe


def logits_ref(tokens, lengths, params):
    """(B, T, V) float64."""
    E, W_q, W_k, W_v, W_o, W_out = (p.detach().double() for p in params)
    B, T = tokens.shape
    d = E.shape[1]
    X = math.sqrt(d) * E[tokens] + pe_ref(T, d)
    keys = torch.arange(T)[None, :] < lengths[:, None]  # (B, T)
    mask = torch.ones(T, T, dtype=torch.bool).tril()[None] & keys[:, None, :]  # (B, T, T)
    scores = (X @ W_q.T) @ (X @ W_k.T).transpose(-2, -1) / math.sqrt(d)
    w = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1).nan_to_num(0.0)
    H = X + (w @ (X @ W_v.T)) @ W_o.T
    return H @ W_out.T


def loss_ref(tokens, lengths, params):
    """float64 scalar: next-token cross-entropy over t + 1 < length."""
    logits = logits_ref(tokens, lengths, params)
    B, T, V = logits.shape
    valid = (torch.arange(T)[None, :] < lengths[:, None])[:, 1:]  # (B, T-1)
    return F.cross_entropy(logits[:, :-1][valid], tokens[:, 1:][valid])


def valid_mask(lengths, T):
    """(B, T) bool: position t of sequence b is valid (t < lengths[b])."""
    return torch.arange(T)[None, :] < lengths[:, None]


# ---------------------------------------------------------------- strategies


class Case:
    """tokens (B, T) int64, lengths (B,), V, d, seed of the params."""

    def __init__(self, tokens, lengths, V, d, seed):
        self.tokens, self.lengths, self.V, self.d, self.seed = tokens, lengths, V, d, seed
        self.params = params_for(V, d, seed)

    def __repr__(self):
        return (f"Case(tokens={self.tokens.tolist()}, lengths={self.lengths.tolist()}, V={self.V}, d={self.d}, "
                f"seed={self.seed})")


def _tokens(B, T, V, seed, distinct=False):
    g = torch.Generator().manual_seed(int(seed))
    if distinct:  # every token at most once in the whole batch (V >= B*T)
        return torch.randperm(V, generator=g)[: B * T].reshape(B, T)
    return torch.randint(0, V, (B, T), generator=g)


@st.composite
def lm_cases(draw, min_len=1, distinct=False, max_T=6):
    """A tiny model's inputs: tokens, lengths and params (V past B*T when `distinct`: every token its own id)."""
    B, T = draw(sizes(1, 3)), draw(sizes(max(2, min_len), max_T))
    d = 2 * draw(sizes(1, 4))
    V = draw(st.integers(2, 9)) + (B * T if distinct else 0)
    lengths = [draw(st.integers(min_len, T)) for _ in range(B)]
    if draw(st.booleans()):
        lengths[draw(st.integers(0, B - 1))] = T  # often one sequence fills the batch
    return Case(_tokens(B, T, V, draw(seeds), distinct), torch.tensor(lengths), V, d, draw(seeds))


def _case(B, T, V, d, lengths, seed, distinct=False):
    return Case(_tokens(B, T, V, seed, distinct), torch.tensor(lengths), V, d, seed + 1)


# ---------------------------------------------------------------- calls


def _show(case, **more):
    return {"tokens": case.tokens, "lengths": case.lengths, "V, d": f"V={case.V}, d={case.d}", **more}


def _logits(student, case, tokens=None, lengths=None, params=None):
    tokens = case.tokens if tokens is None else tokens
    lengths = case.lengths if lengths is None else lengths
    out = student.call(LOGITS, tokens, lengths, case.params if params is None else params)
    check_tensor(out, "logits", shape=(tokens.shape[0], tokens.shape[1], case.V), student=student)
    return out


def _loss(student, case, tokens=None, lengths=None, params=None):
    tokens = case.tokens if tokens is None else tokens
    lengths = case.lengths if lengths is None else lengths
    out = student.call(LOSS, tokens, lengths, case.params if params is None else params)
    check_tensor(out, "loss", student=student)
    if out.dim() != 0:
        fail(f"损失应是标量（0 维张量），实际形状为 {tuple(out.shape)}。",
             f"the loss should be a scalar (0-dim tensor), got shape {tuple(out.shape)}.", student=student,
             show=_show(case), hint_zh="masked_cross_entropy 返回一个标量；不要再加维度，也不要返回每个位置的损失。",
             hint_en="masked_cross_entropy returns a scalar; do not add axes or return a loss per position.")
    return out


HINT_MODEL_ZH = ("按顺序：X = sqrt(d)·E[tokens] + PE（先缩放嵌入再加位置编码，都在注意力之前）；"
                 "Q, K, V = X W_q^T, X W_k^T, X W_v^T；掩码 = causal_mask(T) 且键是真实词元 (padding_mask(lengths, T)[:, None, :])；"
                 "H = X + A W_o^T（残差）；logits = H W_out^T。")
HINT_MODEL_EN = ("In order: X = sqrt(d)·E[tokens] + PE (scale the embedding, then add the encoding, both before "
                 "attention); Q, K, V = X W_q^T, X W_k^T, X W_v^T; mask = causal_mask(T) and the key is a real token "
                 "(padding_mask(lengths, T)[:, None, :]); H = X + A W_o^T (the residual); logits = H W_out^T.")
FUTURE_HINT_ZH = ("位置 t 只能看到 0..t：把 causal_mask(T) 和键的填充掩码一起传给 scaled_dot_product_attention。"
                  "掩码形状 (B, T, T)，行是查询、列是键。")
FUTURE_HINT_EN = ("Position t may only see 0..t: pass causal_mask(T) together with the keys' padding mask to "
                  "scaled_dot_product_attention. The mask is (B, T, T), rows are queries, columns keys.")
PAD_HINT_ZH = ("填充位置的词元是什么、序列后面补了多少填充，都不能影响有效位置：掩码和位置编码的长度用 "
               "tokens.shape[1]（T），不是 lengths.max()；padding_mask(lengths, T) 要传 T。")
PAD_HINT_EN = ("Neither what the padded positions hold nor how much padding follows may change valid positions: "
               "size the masks and the encoding with tokens.shape[1] (T), not lengths.max(); pass T to "
               "padding_mask(lengths, T).")
LOSS_HINT_ZH = ("位置 t 的 logits 预测下一个词元 tokens[:, t+1]：用 logits[:, :-1] 和 tokens[:, 1:]；"
                "只有下一个词元是真实词元时才计入（掩码 padding_mask(lengths, T)[:, 1:]），"
                "所以每个序列最后一个有效位置不计入；最后用 masked_cross_entropy 对所有计入的位置取平均。")
LOSS_HINT_EN = ("The logits at t predict the next token tokens[:, t+1]: use logits[:, :-1] against tokens[:, 1:]; "
                "a position counts only when the next token is real (mask padding_mask(lengths, T)[:, 1:]), so the "
                "last valid position of each sequence does not; masked_cross_entropy then averages over every "
                "counted position.")


# ---------------------------------------------------------------- init_tiny_lm


def _init(student, V, d, seed):
    out = unpack(student.call(INIT, V, d, seed), N_PARAMS, f"{INIT}({V}, {d}, {seed})", student)
    shapes = [(V, d), (d, d), (d, d), (d, d), (d, d), (V, d)]
    for p, name, shape in zip(out, NAMES, shapes):
        check_tensor(p, name, shape=shape, dtype=torch.float32, student=student, finite=True)
    return out


@prop(EX, INIT, "shapes_and_dtypes",
      zh="init_tiny_lm(V, d, seed) 返回 6 个 float32 张量 (E, W_q, W_k, W_v, W_o, W_out)，形状 (V, d), (d, d) ×4, (V, d)",
      en="init_tiny_lm(V, d, seed) returns 6 float32 tensors (E, W_q, W_k, W_v, W_o, W_out) of shapes (V, d), "
         "(d, d) x4, (V, d)")
@given(V=st.integers(2, 12), d=st.sampled_from([2, 4, 6, 8, 16]), seed=seeds)
@example(V=10, d=16, seed=0)
@example(V=3, d=2, seed=7)
def init_shapes(student, V, d, seed):
    out = _init(student, V, d, seed)
    if all(bool((p == 0).all()) for p in out[1:5]):
        fail("W_q、W_k、W_v、W_o 全是 0：模型学不动。", "W_q, W_k, W_v and W_o are all zero: the model cannot learn.",
             student=student, hint_zh="用带 seed 的生成器随机初始化，例如 torch.randn(d, d, generator=g) / sqrt(d)。",
             hint_en="Initialise them at random from the seeded generator, e.g. torch.randn(d, d, generator=g) / sqrt(d).")


@prop(EX, INIT, "deterministic_given_seed",
      zh="同一个 seed 给出完全相同的参数，不同的 seed 给出不同的参数（不用全局随机状态）",
      en="the same seed gives exactly the same params, another seed different ones (the global random state is "
         "not used)")
@given(V=st.integers(2, 8), d=st.sampled_from([2, 4, 8]), seed=st.integers(0, 2 ** 30))
@example(V=5, d=4, seed=0)
def init_deterministic(student, V, d, seed):
    torch.manual_seed(12345)
    a = _init(student, V, d, seed)
    torch.manual_seed(54321)  # a student drawing from the global state sees another state
    b = _init(student, V, d, seed)
    for x, y, name in zip(a, b, NAMES):
        if not torch.equal(x, y):
            fail(f"同一个 seed={seed} 调用两次，{name} 不同。", f"two calls with the same seed={seed} give different {name}.",
                 student=student, hint_zh="所有随机数都从 g = torch.Generator().manual_seed(seed) 抽取（generator=g），不要用全局的 torch.randn。",
                 hint_en="Draw every random number from g = torch.Generator().manual_seed(seed) (generator=g), not "
                         "from the global torch.randn.")
    c = _init(student, V, d, seed + 1)
    if all(torch.equal(x, y) for x, y in zip(a, c)):
        fail(f"seed={seed} 和 seed={seed + 1} 给出完全相同的参数。", f"seed={seed} and seed={seed + 1} give exactly "
             f"the same params.", student=student, hint_zh="参数要从 seed 抽取，而不是固定的常数。",
             hint_en="Draw the params from the seed, not from fixed constants.")


@prop(EX, INIT, "leaves_global_random_state_alone",
      zh="init_tiny_lm 不使用也不改变全局随机状态（不调用 torch.manual_seed；随机数只来自 torch.Generator().manual_seed(seed)）",
      en="init_tiny_lm neither uses nor changes the global random state (no torch.manual_seed; random numbers come "
         "only from torch.Generator().manual_seed(seed))")
@given(V=st.integers(2, 8), d=st.sampled_from([2, 4, 8]), seed=st.integers(0, 2 ** 30))
@example(V=5, d=4, seed=0)
def init_global_state(student, V, d, seed):
    check_global_state_untouched(student, INIT,
                                 [lambda: _init(student, V, d, seed), lambda: _init(student, V, d, seed + 1)])


# ---------------------------------------------------------------- tiny_lm_logits


@prop(EX, LOGITS, "shape_and_dtype",
      zh="tiny_lm_logits(tokens, lengths, params) 返回形状 (B, T, V)、dtype 与 params 相同的张量（float32 或 float64）",
      en="tiny_lm_logits(tokens, lengths, params) returns a (B, T, V) tensor in the params' dtype (float32 or float64)")
@given(case=lm_cases(), dtype=st.sampled_from([torch.float32, torch.float64]))
@example(case=_case(1, 2, 3, 2, [2], 1), dtype=torch.float32)
@example(case=_case(2, 5, 7, 4, [5, 2], 2), dtype=torch.float32)
@example(case=_case(2, 4, 6, 4, [4, 3], 3), dtype=torch.float64)
def logits_shape(student, case, dtype):
    params = tuple(p.to(dtype) for p in case.params)
    out = _logits(student, case, params=params)
    if out.dtype != dtype:
        fail(f"params 是 {dtype}，logits 的 dtype 却是 {out.dtype}。", f"the params are {dtype} but the logits are "
             f"{out.dtype}.", student=student, show=_show(case),
             hint_zh="模型的计算跟随参数的 dtype：sinusoidal_encoding 返回 float32，要把它转成 X 的 dtype"
                     "（.to(E.dtype)），而不是把 X 转成 float32。",
             hint_en="The model computes in the params' dtype: sinusoidal_encoding returns float32, so convert it to "
                     "X's dtype (.to(E.dtype)) rather than X to float32.")


@prop(EX, LOGITS, "matches_reference",
      zh="有效位置的 logits 与参考实现一致（sqrt(d)·E[tokens] + PE → 因果注意力 → 残差 → W_out）",
      en="logits at valid positions match the reference (sqrt(d)·E[tokens] + PE -> causal attention -> residual "
         "-> W_out)")
@given(case=lm_cases())
@example(case=_case(1, 3, 4, 2, [3], 3))
@example(case=_case(2, 4, 6, 4, [4, 2], 4))
@example(case=_case(3, 5, 5, 6, [1, 5, 3], 5))
@example(case=_case(1, 4, 2000, 4, [4], 19))  # a vocabulary in the thousands, a batch of one
def logits_reference(student, case):
    out = _logits(student, case)
    ref = logits_ref(case.tokens, case.lengths, case.params)
    where = valid_mask(case.lengths, case.tokens.shape[1])[..., None]
    check_close(out, ref, "logits", atol=ATOL * 10, rtol=RTOL, where=where, student=student, show=_show(case),
                hint_zh=HINT_MODEL_ZH + "（只比较有效位置 t < lengths[b]。）",
                hint_en=HINT_MODEL_EN + " (Only valid positions t < lengths[b] are compared.)")


@st.composite
def future_cases(draw):
    """(case, t, seed): a case whose tokens after position t are changed."""
    case = draw(lm_cases(distinct=True))
    T = case.tokens.shape[1]
    t = draw(st.integers(0, T - 2))
    return case, t, draw(seeds)


def _future_ex(B, T, V, d, lengths, seed, t):
    return _case(B, T, V, d, lengths, seed, distinct=True), t, seed + 2


@prop(EX, LOGITS, "future_does_not_change_past",
      zh="位置 t 的 logits 不依赖 t 之后的词元：改变它们不改变 logits[:, :t+1]，"
         "logits[:, :t+1] 对这些词元的嵌入的梯度为 0",
      en="logits at t do not depend on tokens after t: changing them leaves logits[:, :t+1] unchanged, and the "
         "gradient of logits[:, :t+1] with respect to their embeddings is 0")
@given(case=future_cases())
@example(case=_future_ex(1, 3, 5, 2, [3], 6, 0))
@example(case=_future_ex(2, 4, 10, 4, [4, 4], 7, 1))
@example(case=_future_ex(2, 5, 12, 4, [5, 3], 8, 2))
def logits_future(student, case):
    case, t, seed = case
    B, T = case.tokens.shape
    show = _show(case, t=t)
    out = _logits(student, case)
    g = torch.Generator().manual_seed(int(seed))
    changed = case.tokens.clone()
    changed[:, t + 1:] = torch.randint(0, case.V, (B, T - t - 1), generator=g)
    out2 = _logits(student, case, tokens=changed)
    valid = valid_mask(case.lengths, T)[:, :t + 1, None]
    before = out.detach()[:, :t + 1]
    diff = ((out2.detach()[:, :t + 1] - before).abs() > EXACT * (1 + before.abs())) & valid
    if bool(diff.any()):
        b, s, _ = (int(v) for v in diff.nonzero()[0])
        fail(f"只改变位置 > {t} 的词元，logits[{b}, {s}] 就变了：位置 {s} 看到了未来。",
             f"changing only the tokens after position {t} changed logits[{b}, {s}]: position {s} sees the future.",
             show={**show, "改变后 changed tokens": changed, "原来的 before logits": out[:, :t + 1],
                   "改变后的 after logits": out2[:, :t + 1]},
             student=student, hint_zh=FUTURE_HINT_ZH, hint_en=FUTURE_HINT_EN)
    E = case.params[0].clone().requires_grad_()
    params = (E,) + tuple(case.params[1:])
    out = _logits(student, case, params=params)
    if not out.requires_grad:
        fail("logits 对嵌入 E 不可微（计算图被切断了）。", "logits are not differentiable with respect to the embedding E "
             "(the graph was cut).", show=show, student=student,
             hint_zh="不要用 .detach()、.item()、.numpy() 或 torch.no_grad()；E[tokens] 就是可微的查表。",
             hint_en="Do not use .detach(), .item(), .numpy() or torch.no_grad(); E[tokens] is a differentiable lookup.")
    w = torch.randn(out[:, :t + 1].shape, generator=g, dtype=out.dtype) * valid
    try:
        (grad,) = torch.autograd.grad((out[:, :t + 1] * w).sum(), [E], allow_unused=True)
    except Exception as e:  # noqa: BLE001
        fail("对 logits 反向传播失败。", "backpropagating through logits failed.",
             show={**show, "异常 exception": f"{type(e).__name__}: {str(e)[:300]}"}, student=student)
    if grad is None:
        return
    unused = torch.ones(case.V, dtype=torch.bool)
    unused[case.tokens.flatten()] = False  # rows of E no token of the batch looks up (V > B*T)
    if bool(unused.any()) and float(grad[unused].abs().max()) > EXACT:
        return  # E is used beyond the lookup (e.g. as the output layer): matches_reference grades that
    for b in range(B):
        for s in range(t + 1, T):
            row = int(case.tokens[b, s])
            if float(grad[row].abs().max()) > EXACT:
                fail(f"梯度泄露了未来：logits[:, :{t + 1}] 对位置 ({b}, {s}) 的词元 {row} 的嵌入 E[{row}] 的梯度不为 0"
                     f"（最大 {float(grad[row].abs().max()):.3g}）。",
                     f"the gradient leaks the future: logits[:, :{t + 1}] have a non-zero gradient with respect to "
                     f"E[{row}], the embedding of token {row} at position ({b}, {s}) > {t} "
                     f"(largest {float(grad[row].abs().max()):.3g}).",
                     show={**show, "E.grad": grad}, student=student, hint_zh=FUTURE_HINT_ZH, hint_en=FUTURE_HINT_EN)


@st.composite
def padding_cases(draw, min_len=1):
    """(case, extra, seed): a case whose padding is changed, `extra` positions added."""
    case = draw(lm_cases(min_len=min_len))
    return case, draw(st.integers(0, 3)), draw(seeds)


@prop(EX, LOGITS, "padding_does_not_change_valid_logits",
      zh="改变填充位置的词元、在末尾多补几个填充，有效位置的 logits 都不变",
      en="changing the padded tokens or adding more padding at the end leaves the logits at valid positions "
         "unchanged")
@given(case=padding_cases())
@example(case=(_case(2, 3, 4, 2, [3, 1], 9), 2, 1))
@example(case=(_case(2, 4, 5, 4, [2, 3], 10), 0, 2))
@example(case=(_case(1, 2, 3, 2, [2], 11), 3, 3))
def logits_padding(student, case):
    case, extra, seed = case
    B, T = case.tokens.shape
    g = torch.Generator().manual_seed(int(seed))
    padded = torch.cat([case.tokens, torch.zeros(B, extra, dtype=torch.int64)], 1)
    pad = ~valid_mask(case.lengths, T + extra)
    other = torch.randint(0, case.V, padded.shape, generator=g)
    changed = torch.where(pad, other, padded)
    out = _logits(student, case)
    out2 = _logits(student, case, tokens=changed)
    valid = valid_mask(case.lengths, T)[..., None]
    diff = ((out2.detach()[:, :T] - out.detach()).abs() > EXACT * (1 + out.detach().abs())) & valid
    if bool(diff.any()):
        b, s, _ = (int(v) for v in diff.nonzero()[0])
        fail(f"改变填充（{extra} 个额外的填充位置，填充位置换成别的词元）后，有效位置 logits[{b}, {s}] 变了。",
             f"changing the padding ({extra} more padded positions, other tokens at padded positions) changed "
             f"the valid logits[{b}, {s}].",
             show=_show(case, **{"改变后 changed tokens": changed, "原来的 before logits": out,
                                 "改变后的 after logits": out2[:, :T]}),
             student=student, hint_zh=PAD_HINT_ZH, hint_en=PAD_HINT_EN)


# ---------------------------------------------------------------- tiny_lm_loss


@prop(EX, LOSS, "scalar_and_differentiable",
      zh="tiny_lm_loss 返回一个有限的标量，对每个参数都可微（梯度有限）",
      en="tiny_lm_loss returns a finite scalar, differentiable with respect to every param (finite gradients)")
@given(case=lm_cases(min_len=2))
@example(case=_case(1, 2, 3, 2, [2], 12))
@example(case=_case(2, 4, 5, 4, [4, 2], 13))
def loss_scalar(student, case):
    params = tuple(p.clone().requires_grad_() for p in case.params)
    loss = _loss(student, case, params=params)
    check_tensor(loss, "loss", finite=True, student=student)
    if not loss.requires_grad:
        fail("损失对参数不可微（计算图被切断了）。", "the loss is not differentiable with respect to the params (the "
             "graph was cut).", show=_show(case), student=student,
             hint_zh="不要用 .item()、.detach() 或 torch.no_grad()：训练要对损失求梯度。",
             hint_en="Do not use .item(), .detach() or torch.no_grad(): training needs the loss's gradient.")
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    for gr, name in zip(grads, NAMES):
        if gr is not None and not bool(torch.isfinite(gr).all()):
            fail(f"{name} 的梯度含有 NaN 或 inf。", f"the gradient of {name} contains NaN or inf.", show=_show(case),
                 student=student, hint_zh="全被屏蔽的行要得到有限值；填充位置不要进入损失。",
                 hint_en="Fully masked rows must stay finite; padded positions must not enter the loss.")


@prop(EX, LOSS, "matches_reference",
      zh="损失等于参考值：logits[:, t] 预测 tokens[:, t+1]，只计 t+1 < lengths[b] 的位置，对它们取平均",
      en="the loss equals the reference: logits[:, t] predict tokens[:, t+1], averaged over the positions with "
         "t+1 < lengths[b]")
@given(case=lm_cases(min_len=2))
@example(case=_case(1, 3, 4, 2, [3], 14))
@example(case=_case(2, 5, 6, 4, [5, 2], 15))
@example(case=_case(3, 4, 5, 2, [2, 4, 3], 16))
@example(case=_case(2, 4, 3000, 4, [4, 2], 20))  # a vocabulary in the thousands
def loss_reference(student, case):
    loss = _loss(student, case)
    ref = loss_ref(case.tokens, case.lengths, case.params)
    check_close(loss, ref, "loss", atol=ATOL, rtol=RTOL, student=student, show=_show(case),
                hint_zh=LOSS_HINT_ZH, hint_en=LOSS_HINT_EN)


@prop(EX, LOSS, "padding_does_not_change_loss",
      zh="改变填充位置的词元、在末尾多补几个填充，损失不变",
      en="changing the padded tokens or adding more padding at the end leaves the loss unchanged")
@given(case=padding_cases(min_len=2))
@example(case=(_case(2, 4, 4, 2, [4, 2], 17), 0, 4))
@example(case=(_case(2, 3, 5, 4, [2, 3], 18), 2, 5))
def loss_padding(student, case):
    case, extra, seed = case
    B, T = case.tokens.shape
    g = torch.Generator().manual_seed(int(seed))
    padded = torch.cat([case.tokens, torch.zeros(B, extra, dtype=torch.int64)], 1)
    pad = ~valid_mask(case.lengths, T + extra)
    changed = torch.where(pad, torch.randint(0, case.V, padded.shape, generator=g), padded)
    a = float(_loss(student, case))
    b = float(_loss(student, case, tokens=changed))
    if not math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-5):
        fail(f"改变填充（{extra} 个额外的填充位置，填充位置换成别的词元）后，损失从 {a:.6g} 变成 {b:.6g}。",
             f"changing the padding ({extra} more padded positions, other tokens at padded positions) changed the "
             f"loss from {a:.6g} to {b:.6g}.", show=_show(case, **{"改变后 changed tokens": changed}),
             student=student, hint_zh=LOSS_HINT_ZH + PAD_HINT_ZH, hint_en=LOSS_HINT_EN + " " + PAD_HINT_EN)


# ---------------------------------------------------------------- train_tiny_lm

TRAIN_STEPS = 30


def _train(student, seed, steps):
    out = student.call(TRAIN, seed, steps)
    if isinstance(out, torch.Tensor) and out.dim() == 1:
        out = out.tolist()
    if not isinstance(out, (list, tuple)) or len(out) != steps:
        fail(f"train_tiny_lm(seed, steps={steps}) 应返回 {steps} 个损失的列表。",
             f"train_tiny_lm(seed, steps={steps}) should return a list of {steps} losses.", student=student,
             hint_zh="每一步 append(loss.item())，返回这个列表。", hint_en="Append loss.item() at every step and return the list.")
    try:
        vals = [float(v) for v in out]
    except (TypeError, ValueError):
        fail("train_tiny_lm 返回的列表里有不是数的东西。", "train_tiny_lm returned a list holding something that is "
             "not a number.", student=student, hint_zh="用 loss.item() 得到 Python 浮点数。",
             hint_en="Use loss.item() to get a Python float.")
    return vals


TRAIN_HINT_ZH = ("每一步：loss = tiny_lm_loss(...)；optimizer.zero_grad()；loss.backward()；optimizer.step()；"
                 "参数要 requires_grad_()，并且交给优化器。学习率 0.01–0.05 的 Adam 足够。")
TRAIN_HINT_EN = ("At each step: loss = tiny_lm_loss(...); optimizer.zero_grad(); loss.backward(); optimizer.step(); "
                 "the params need requires_grad_() and must be given to the optimizer. Adam with a learning rate "
                 "of 0.01-0.05 is enough.")


@prop(EX, TRAIN, "losses_finite_and_decreasing",
      zh=f"train_tiny_lm(seed, {TRAIN_STEPS}) 返回 {TRAIN_STEPS} 个有限的损失，最后一个明显低于第一个（< 0.75 倍）",
      en=f"train_tiny_lm(seed, {TRAIN_STEPS}) returns {TRAIN_STEPS} finite losses, the last clearly below the first "
         f"(< 0.75 times)")
def train_decreases(student):
    for seed in (0, 1):
        losses = _train(student, seed, TRAIN_STEPS)
        show = {"seed": seed, "losses": [round(v, 4) for v in losses]}
        if not all(math.isfinite(v) for v in losses):
            fail(f"seed={seed} 时损失出现 NaN 或 inf。", f"with seed={seed} a loss is NaN or inf.", show=show,
                 student=student, hint_zh=TRAIN_HINT_ZH + "学习率太大也会发散。",
                 hint_en=TRAIN_HINT_EN + " Too large a learning rate diverges too.")
        if not losses[-1] < 0.75 * losses[0]:
            fail(f"seed={seed} 训练 {TRAIN_STEPS} 步后损失没有明显下降：第一个 {losses[0]:.4g}，最后一个 {losses[-1]:.4g}。",
                 f"with seed={seed} the loss did not clearly fall in {TRAIN_STEPS} steps: first {losses[0]:.4g}, "
                 f"last {losses[-1]:.4g}.", show=show, student=student, hint_zh=TRAIN_HINT_ZH, hint_en=TRAIN_HINT_EN)


@prop(EX, TRAIN, "deterministic_given_seed",
      zh="同一个 seed 训练两次，损失完全相同；不同的 seed 给出不同的损失",
      en="training twice with the same seed gives exactly the same losses; another seed gives different ones")
def train_deterministic(student):
    steps = 5
    torch.manual_seed(111)
    a = _train(student, 3, steps)
    torch.manual_seed(222)  # a student drawing from the global state sees another state
    b = _train(student, 3, steps)
    if a != b:
        fail("同一个 seed=3 训练两次，损失不同。", "two runs with the same seed=3 give different losses.",
             show={"第一次 first": a, "第二次 second": b}, student=student,
             hint_zh="数据和初始参数都从 seed 抽取（torch.Generator().manual_seed(seed)），不要用全局随机状态。",
             hint_en="Draw both the data and the initial params from the seed (torch.Generator().manual_seed(seed)), "
                     "not from the global random state.")
    c = _train(student, 4, steps)
    if a == c:
        fail("seed=3 和 seed=4 给出完全相同的损失：seed 没有用上。", "seed=3 and seed=4 give exactly the same losses: the "
             "seed is not used.", show={"seed=3": a, "seed=4": c}, student=student,
             hint_zh="把 seed 传给数据和 init_tiny_lm。", hint_en="Pass the seed to the data and to init_tiny_lm.")



@prop(EX, TRAIN, "returns_a_list_of_floats",
      zh="train_tiny_lm(seed, steps) 返回 steps 个 Python 浮点数的列表（loss.item()），不是张量",
      en="train_tiny_lm(seed, steps) returns a list of steps Python floats (loss.item()), not tensors")
def train_types(student):
    steps = 3
    out = student.call(TRAIN, 5, steps)
    kinds = [type(v).__name__ for v in out] if isinstance(out, (list, tuple)) else None
    if kinds is None or len(out) != steps or not all(isinstance(v, float) for v in out):
        fail(f"train_tiny_lm(5, {steps}) 应返回 {steps} 个 float 的列表，实际返回 {type(out).__name__}"
             + (f"（元素类型 {kinds}）" if kinds else "") + "。",
             f"train_tiny_lm(5, {steps}) should return a list of {steps} floats, got {type(out).__name__}"
             + (f" (of {kinds})" if kinds else "") + ".", student=student,
             hint_zh="每一步 losses.append(loss.item())：.item() 得到 Python 浮点数。append(loss) 会把整张计算图留在列表里"
                     "（内存越用越多），append(loss.detach()) 得到的是 0 维张量，不是数。",
             hint_en="At each step losses.append(loss.item()): .item() gives a Python float. append(loss) keeps the whole "
                     "graph alive in the list (memory grows), append(loss.detach()) gives 0-dim tensors, not numbers.")
