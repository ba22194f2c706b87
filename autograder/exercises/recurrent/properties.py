"""Hidden properties of the `recurrent` exercise: lstm_cell, gru_cell, lstm_sequence.

The weights are laid out as torch's own modules lay them out (torch.nn.LSTMCell: row blocks
i, f, g, o; torch.nn.GRUCell: r, z, n), so every case holds the weights that a seeded torch module
is initialised with (the report says which: `torch.manual_seed(s); torch.nn.LSTMCell(d_in, d_h)`)
and compares with that module.  Gate tests saturate one gate at a time with biases of
+-30 (a gate is then exactly 0 or 1 in float32) and check the one equation that gate controls,
so a gate read from the wrong rows, or a gate formula written another way, fails with a message
that names the gate.  The sequence tests check the two information boundaries of the chapter:
padded steps (after a sequence's length) and future steps (after t) must not leak into what the
network returns.
"""
import itertools
import math

import torch
from hypothesis import example, given
from hypothesis import strategies as st
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ...errors import PropertyFailure
from ...properties._harness import check_tensor, fail, prop, unpack
from ...properties.strategies import padding_mask_ref, sizes

EX = "recurrent"
ATOL, RTOL = 2e-5, 1e-4  # float32 done another way (float64 inside, einsum, 1/(1+exp(-x)), nn.LSTM)
GRAD_ATOL, GRAD_RTOL = 1e-4, 1e-3
BIG = 30.0  # gate bias that saturates a sigmoid; put in b_ih AND b_hh, so +-60 in total
LSTM_GATES = "ifgo"
GRU_GATES = "rzn"

# ---------------------------------------------------------------- cases and strategies


def _grid(g, shape, lo, hi, dtype):
    """Entries in [lo, hi] with two decimals, from generator g: readable counterexamples."""
    n = torch.randint(int(round(lo * 100)), int(round(hi * 100)) + 1, tuple(shape), generator=g)
    return (n.to(torch.float64) / 100).to(dtype)


def _torch_weights(g, shapes, d_h, dtype):
    """What `torch.manual_seed(seed); torch.nn.LSTMCell / GRUCell / LSTM(d_in, d_h)` holds, drawn
    from g = torch.Generator().manual_seed(seed): torch draws every parameter, in order, from
    uniform(-1/sqrt(d_h), 1/sqrt(d_h)), so the `origin()` line of a report rebuilds them exactly.
    Building the module only when a test compares with it keeps the cases cheap."""
    k = 1 / math.sqrt(d_h)
    return tuple(torch.empty(s).uniform_(-k, k, generator=g).to(dtype) for s in shapes)


def _module(cls, W, *args, **kwargs):
    """The torch module (float32 init, then cast like W) holding exactly the weights W."""
    m = cls(*args, **kwargs).to(W[0].dtype)
    with torch.no_grad():
        for p, w in zip(m.parameters(), W):
            p.copy_(w)
    return m


class CellCase:
    """One step of a cell: inputs drawn from `seed`, weights from the seeded torch module.
    (A plain class, not a dataclass: hypothesis would pretty-print every tensor field.)"""

    def __init__(self, kind, seed, x, h, c, W_ih, W_hh, b_ih, b_hh):
        self.kind, self.seed = kind, seed  # "lstm" or "gru"
        self.x, self.h, self.c = x, h, c  # (B, d_in), (B, d_h), (B, d_h) or None for the GRU
        self.W_ih, self.W_hh, self.b_ih, self.b_hh = W_ih, W_hh, b_ih, b_hh

    @property
    def module(self):
        """torch.nn.LSTMCell / GRUCell holding the same weights."""
        cls = torch.nn.LSTMCell if self.kind == "lstm" else torch.nn.GRUCell
        return _module(cls, (self.W_ih, self.W_hh, self.b_ih, self.b_hh), self.x.shape[1], self.d_h)

    @property
    def d_h(self):
        return self.h.shape[1]

    def __repr__(self):  # short: hypothesis may print a case
        return f"cell_case({self.kind!r}, {self.x.shape[0]}, {self.x.shape[1]}, {self.d_h}, seed={self.seed})"

    def origin(self):
        cls = "LSTMCell" if self.kind == "lstm" else "GRUCell"
        d_in = self.x.shape[1]
        return f"torch.manual_seed({self.seed}); torch.nn.{cls}({d_in}, {self.d_h})"

    def show(self, **extra):
        out = {"权重来自 weights from": self.origin(), "x": self.x, "h": self.h}
        if self.c is not None:
            out["c"] = self.c
        out.update(extra)
        return out


def cell_case(kind, B, d_in, d_h, seed, dtype=torch.float32):
    """A cell's inputs on a grid of exact values, seeded: (kind, x, h, c, weights)."""
    gates = 4 if kind == "lstm" else 3
    g = torch.Generator().manual_seed(seed)
    W = _torch_weights(g, [(gates * d_h, d_in), (gates * d_h, d_h), (gates * d_h,), (gates * d_h,)], d_h, dtype)
    x = _grid(g, (B, d_in), -2, 2, dtype)
    h = _grid(g, (B, d_h), -1, 1, dtype)
    c = _grid(g, (B, d_h), -2, 2, dtype) if kind == "lstm" else None
    return CellCase(kind, seed, x, h, c, *W)


def seeds():
    """The strategy of the seeds the cases are drawn from."""
    return st.integers(0, 2**16 - 1)


@st.composite
def cell_inputs(draw, kind, dtypes=(torch.float32,)):
    """B, d_in, d_h, a seed (weights of torch.nn.LSTMCell / GRUCell, inputs) and a dtype."""
    return cell_case(kind, draw(sizes(1, 3)), draw(sizes(1, 4)), draw(sizes(1, 4)), draw(seeds()),
                     draw(st.sampled_from(dtypes)))


class SeqCase:
    """A padded batch for lstm_sequence, weights from a seeded torch.nn.LSTM(batch_first=True)."""

    def __init__(self, seed, X, lengths, state, W, t0=0):
        self.seed = seed
        self.X = X  # (B, T, d_in)
        self.lengths = lengths  # (B,) int64 in [1, T], unsorted
        self.state = state  # None or (h0, c0), each (B, d_h)
        self.W = W  # (W_ih, W_hh, b_ih, b_hh)
        self.t0 = t0  # for the causal test: a step t0 < T - 1
        self._module = None

    @property
    def module(self):
        """torch.nn.LSTM(d_in, d_h, batch_first=True) holding the same weights (built once)."""
        if self._module is None:
            self._module = _module(torch.nn.LSTM, self.W, self.X.shape[2], self.d_h, batch_first=True)
        return self._module

    @property
    def B(self):
        return self.X.shape[0]

    @property
    def T(self):
        return self.X.shape[1]

    @property
    def d_h(self):
        return self.W[1].shape[1]

    def __repr__(self):
        return (f"seq_case({self.B}, {self.T}, {self.X.shape[2]}, {self.d_h}, {self.lengths.tolist()}, "
                f"seed={self.seed}, with_state={self.state is not None}, t0={self.t0})")

    def origin(self):
        return (f"torch.manual_seed({self.seed}); torch.nn.LSTM({self.X.shape[2]}, {self.d_h}, "
                f"batch_first=True)")

    def show(self, **extra):
        out = {"权重来自 weights from": self.origin(), "lengths": self.lengths, "X": self.X}
        if self.state is not None:
            out["state (h0, c0)"] = self.state
        else:
            out["state"] = "None (零初始状态 zeros)"
        out.update(extra)
        return out


def seq_case(B, T, d_in, d_h, lengths, seed, with_state=False, dtype=torch.float32, t0=0):
    """lstm_sequence's inputs on a grid of exact values, seeded (an initial state when `with_state`)."""
    g = torch.Generator().manual_seed(seed)
    W = _torch_weights(g, [(4 * d_h, d_in), (4 * d_h, d_h), (4 * d_h,), (4 * d_h,)], d_h, dtype)
    X = _grid(g, (B, T, d_in), -2, 2, dtype)
    state = (_grid(g, (B, d_h), -1, 1, dtype), _grid(g, (B, d_h), -1, 1, dtype)) if with_state else None
    return SeqCase(seed, X, torch.tensor(lengths, dtype=torch.int64), state, W, t0)


@st.composite
def padded_sequences(draw, min_T=1, padded=False, dtypes=(torch.float32,), causal=False):
    """B, T, d_in, d_h, unsorted lengths in [1, T] (at least one < T if `padded`), a seed, maybe
    an initial state; with `causal` also a step t0 < T - 1 that some sequence reaches."""
    B, T = draw(sizes(1, 3)), draw(sizes(max(min_T, 2 if padded else 1), 6))
    lengths = draw(st.lists(st.integers(1, T), min_size=B, max_size=B))
    if padded and min(lengths) == T:
        lengths[draw(st.integers(0, B - 1))] = draw(st.integers(1, T - 1))
    t0 = draw(st.integers(0, min(max(lengths) - 1, T - 2))) if causal else 0
    return seq_case(B, T, draw(sizes(1, 4)), draw(sizes(1, 4)), lengths, draw(seeds()), draw(st.booleans()),
                    draw(st.sampled_from(dtypes)), t0)


# ---------------------------------------------------------------- helpers


def _leaf(t, grad=False):
    return t.detach().clone().requires_grad_(grad)


def _mismatch(got, expected, atol=ATOL, rtol=RTOL, where=None):
    """Positions where got and expected differ, as (bool mask, readable lines)."""
    g = got.detach().to(torch.float64)
    e = expected.detach().to(torch.float64)
    bad = ~torch.isclose(g, e, atol=atol, rtol=rtol)
    if where is not None:
        bad &= where.expand_as(bad)
    lines = [f"{list(map(int, i))}: expected {e[tuple(i)].item():.6g}, got {g[tuple(i)].item():.6g}"
             for i in bad.nonzero()[:5]]
    return bad, "\n".join(lines)


def _agrees(got, expected, atol=1e-4):
    return got.shape == expected.shape and bool(torch.isclose(
        got.detach().to(torch.float64), expected.detach().to(torch.float64), atol=atol, rtol=1e-3).all())


def _check_gradients(student, fn, outputs, inputs):
    """Gradients of the outputs must reach every input in `inputs` (name -> leaf)."""
    outs = [o for o in outputs if o.requires_grad]
    if not outs:
        fail(f"{fn} 的输出不可微：没有梯度能传回输入和权重。",
             f"The outputs of {fn} are not differentiable: no gradient flows back to the inputs and weights.",
             student=student,
             hint_zh="不要用 torch.no_grad()、.detach()、.item()、.numpy() 或 torch.tensor(...) 重新包装结果；"
                     "循环网络要通过时间反向传播（BPTT）训练。",
             hint_en="Do not use torch.no_grad(), .detach(), .item(), .numpy() or re-wrap results with "
                     "torch.tensor(...): a recurrent network is trained by backpropagation through time.")
    loss = sum(o.sum() for o in outs)
    try:
        grads = torch.autograd.grad(loss, list(inputs.values()), allow_unused=True)
    except RuntimeError as e:
        fail(f"对 {fn} 的输出求梯度时出错。", f"Backpropagating through the outputs of {fn} failed.",
             student=student, show={"异常 exception": f"{type(e).__name__}: {str(e)[:300]}"},
             hint_zh="常见原因：对参与计算的张量做了原地操作（+=、切片赋值）。",
             hint_en="A common cause: an in-place operation (+=, slice assignment) on a tensor the graph needs.")
    missing = [name for name, gr in zip(inputs, grads) if gr is None]
    if missing:
        fail(f"没有梯度传到 {', '.join(missing)}：{fn} 的输出不依赖{'它' if len(missing) == 1 else '它们'}。",
             f"No gradient reaches {', '.join(missing)}: the outputs of {fn} do not depend on "
             f"{'it' if len(missing) == 1 else 'them'}.",
             student=student,
             hint_zh="传进来的每个输入、权重和偏置都要用上，并且通过可微的 torch 运算参与计算"
                     "（不要 .detach()、不要经过 numpy 或 .data）。",
             hint_en="Every input, weight and bias passed in must be used, through differentiable torch "
                     "operations (no .detach(), no detour through numpy or .data).")
    bad = [name for name, gr in zip(inputs, grads) if not bool(torch.isfinite(gr).all())]
    if bad:
        fail(f"{fn} 对 {', '.join(bad)} 的梯度含有 NaN 或 inf。",
             f"The gradient of {fn} with respect to {', '.join(bad)} contains NaN or inf.", student=student)


def _check_cell_gradients(student, fn, outs, ins, ref_fn, case):
    """The gradient of one fixed random weighting of the cell's outputs, with respect to every input,
    weight and bias, against torch's (ref_fn: the same call on float64 leaves, through torch's own
    cell).  Only what `shapes` does not already grade: an output without a graph, a missing gradient
    or a failing backward are its failures, not this test's."""
    outs = list(outs)
    if not any(o.requires_grad for o in outs):
        return
    g = torch.Generator().manual_seed(case.seed + 1)
    R = [_grid(g, o.shape, -1, 1, torch.float64) for o in outs]
    try:
        grads = torch.autograd.grad(sum((o * r.to(o.dtype)).sum() for o, r in zip(outs, R) if o.requires_grad),
                                    list(ins.values()), allow_unused=True)
    except RuntimeError:
        return
    ins_ref = {k: _leaf(v.to(torch.float64), True) for k, v in ins.items()}
    outs_ref = ref_fn(**ins_ref)
    grads_ref = torch.autograd.grad(sum((o * r).sum() for o, r in zip(outs_ref, R)), list(ins_ref.values()))
    for name, got, ref in zip(ins, grads, grads_ref):
        if got is None:
            continue
        bad, lines = _mismatch(got, ref, GRAD_ATOL, GRAD_RTOL)
        if bool(bad.any()):
            what = " + ".join(f"sum({o} * R{i + 1})" for i, o in enumerate(("h_new", "c_new")[:len(outs)]))
            fail(f"{fn} 的数值正确，但对 {name} 的梯度与 torch 不一致：反向传播走的路径不对。",
                 f"The values of {fn} are right but its gradient with respect to {name} differs from torch's: "
                 f"backpropagation does not take the path the formula gives.",
                 show=case.show(**{"损失 loss": f"{what}，R 为固定随机权重 / fixed random weights",
                                   **{f"R{i + 1}": r for i, r in enumerate(R)},
                                   f"期望 expected d loss / d {name}": ref, f"实际 got d loss / d {name}": got,
                                   "不同的元素 differing entries": lines}),
                 student=student,
                 hint_zh="前向结果对了，梯度却不对：通常是某一项被 .detach()（或 .clone().detach()、.data）切断了，"
                         "或者自定义的 autograd.Function 的 backward 写错了。公式中的每一项都要以可微的方式参与计算。",
                 hint_en="The forward values are right but the gradient is not: usually one term is cut off with "
                         ".detach() (or .clone().detach(), .data), or a custom autograd.Function has a wrong backward. "
                         "Every term of the formula must take part in a differentiable way.")


class _context:
    """Adds lines to the counterexample of any failure raised inside (e.g. the dtype of a crash)."""

    def __init__(self, **lines):
        self.lines = lines

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        if isinstance(exc, PropertyFailure):
            exc.details.extend((k.replace("_", " "), v) for k, v in self.lines.items())
        return False


def _check_output(x, what, shape, dtype, student):
    check_tensor(x, what, shape=shape, dtype=dtype, student=student, finite=True)


# ---------------------------------------------------------------- trusted references (float64)


def _lstm64(x, h, c, W_ih, W_hh, b_ih, b_hh, order=LSTM_GATES, mistake=None):
    """An LSTM step in float64; `order` = the gate a student reads from each row block,
    `mistake` one of the formula mistakes below (for the diagnosis only)."""
    x, h, c, W_ih, W_hh, b_ih, b_hh = (t.detach().to(torch.float64) for t in (x, h, c, W_ih, W_hh, b_ih, b_hh))
    pre = x @ W_ih.T + b_ih + h @ W_hh.T + b_hh  # (B, 4 d_h)
    gate = dict(zip(order, pre.chunk(4, dim=-1)))
    i, f, o = torch.sigmoid(gate["i"]), torch.sigmoid(gate["f"]), torch.sigmoid(gate["o"])
    g = torch.sigmoid(gate["g"]) if mistake == "g_sigmoid" else torch.tanh(gate["g"])
    c_new = {"no_input_gate": f * c + g, "coupled": f * c + (1 - f) * g}.get(mistake, f * c + i * g)
    h_new = {"no_tanh": o * c_new, "tanh_outside": torch.tanh(o * c_new)}.get(mistake, o * torch.tanh(c_new))
    return h_new, c_new


LSTM_MISTAKES = {
    "no_input_gate": ("c_new = f * c + g（漏了输入门 i）", "c_new = f * c + g (the input gate i is missing)"),
    "coupled": ("c_new = f * c + (1 - f) * g（用 1 - f 代替了输入门 i）",
                "c_new = f * c + (1 - f) * g (1 - f used instead of the input gate i)"),
    "g_sigmoid": ("候选值 g 用了 sigmoid（应为 tanh）", "the candidate g uses sigmoid (it must be tanh)"),
    "no_tanh": ("h_new = o * c_new（漏了 tanh）", "h_new = o * c_new (the tanh is missing)"),
    "tanh_outside": ("h_new = tanh(o * c_new)（tanh 应只作用于 c_new）",
                     "h_new = tanh(o * c_new) (tanh belongs on c_new alone)"),
}


def _gru64(x, h, W_ih, W_hh, b_ih, b_hh, order=GRU_GATES, mistake=None):
    """A GRU step in float64, with the same diagnosis knobs as _lstm64."""
    x, h, W_ih, W_hh, b_ih, b_hh = (t.detach().to(torch.float64) for t in (x, h, W_ih, W_hh, b_ih, b_hh))
    gx = dict(zip(order, (x @ W_ih.T + b_ih).chunk(3, dim=-1)))  # W_i? x + b_i?
    gh = dict(zip(order, (h @ W_hh.T + b_hh).chunk(3, dim=-1)))  # W_h? h + b_h?
    r, z = torch.sigmoid(gx["r"] + gh["r"]), torch.sigmoid(gx["z"] + gh["z"])
    d = h.shape[1]
    k = order.index("n")
    W_hn, b_hn = W_hh[k * d:(k + 1) * d], b_hh[k * d:(k + 1) * d]
    if mistake == "reset_before_matmul":
        n = torch.tanh(gx["n"] + (r * h) @ W_hn.T + b_hn)
    elif mistake == "no_b_hn":
        n = torch.tanh(gx["n"] + r * (h @ W_hn.T))
    elif mistake == "reset_on_input":
        n = torch.tanh(r * gx["n"] + gh["n"])
    else:
        n = torch.tanh(gx["n"] + r * gh["n"])
    if mistake == "z_swapped":
        return z * n + (1 - z) * h
    return (1 - z) * n + z * h


GRU_MISTAKES = {
    "z_swapped": ("h_new = z * n + (1 - z) * h（z 和 1 - z 交换了）",
                  "h_new = z * n + (1 - z) * h (z and 1 - z swapped)"),
    "reset_before_matmul": ("n = tanh(W_in x + b_in + W_hn (r * h) + b_hn)：r 作用在 h 上、在乘 W_hn 之前"
                            "（另一种 GRU 变体，不是 torch.nn.GRUCell）",
                            "n = tanh(W_in x + b_in + W_hn (r * h) + b_hn): r applied to h before W_hn "
                            "(the other GRU variant, not torch.nn.GRUCell)"),
    "no_b_hn": ("n = tanh(W_in x + b_in + r * (W_hn h))（漏了 b_hn）",
                "n = tanh(W_in x + b_in + r * (W_hn h)) (b_hn is missing)"),
    "reset_on_input": ("n = tanh(r * (W_in x + b_in) + W_hn h + b_hn)（r 作用在了输入项上）",
                       "n = tanh(r * (W_in x + b_in) + W_hn h + b_hn) (r gates the input term)"),
}


def _diagnose(student_outs, runs, variants):
    """The first variant (name, (zh, en)) that reproduces all of the student's outputs, or None.
    `runs`: one kwargs dict per scenario; `variants`: [(label, fn(**kwargs) -> outputs)]."""
    for label, fn in variants:
        if all(all(_agrees(s, r) for s, r in zip(outs, fn(**kw))) for outs, kw in zip(student_outs, runs)):
            return label
    return None


def _lstm_variants():
    out = []
    for p in itertools.permutations(LSTM_GATES):
        order = "".join(p)
        if order != LSTM_GATES:
            zh = f"按 {', '.join(order)} 的顺序读取门（torch.nn.LSTMCell 的顺序是 i, f, g, o）"
            en = f"reading the gates in the order {', '.join(order)} (torch.nn.LSTMCell uses i, f, g, o)"
            out.append(((zh, en), lambda order=order, **kw: _lstm64(**kw, order=order)))
    for m, label in LSTM_MISTAKES.items():
        out.append((label, lambda m=m, **kw: _lstm64(**kw, mistake=m)))
    return out


def _gru_variants():
    out = []
    for p in itertools.permutations(GRU_GATES):
        order = "".join(p)
        if order != GRU_GATES:
            zh = f"按 {', '.join(order)} 的顺序读取门（torch.nn.GRUCell 的顺序是 r, z, n）"
            en = f"reading the gates in the order {', '.join(order)} (torch.nn.GRUCell uses r, z, n)"
            out.append(((zh, en), lambda order=order, **kw: (_gru64(**kw, order=order),)))
    for m, label in GRU_MISTAKES.items():
        out.append((label, lambda m=m, **kw: (_gru64(**kw, mistake=m),)))
    return out


def _saturate(b, d_h, gates, names, big):
    """A copy of bias `b` with the row block of each gate in `gates` set to +-big (or 0)."""
    b = b.detach().clone()
    for gate, value in gates.items():
        k = names.index(gate)
        b[k * d_h:(k + 1) * d_h] = value * big
    return b


def _rows(names, gate, d_h):
    k = names.index(gate)
    return f"{k * d_h}:{(k + 1) * d_h}"


# ---------------------------------------------------------------- lstm_cell

LSTM_LAYOUT_ZH = "W_ih、W_hh、b_ih、b_hh 的行块依次是 i, f, g, o（与 torch.nn.LSTMCell 相同），每块 d_h 行。"
LSTM_LAYOUT_EN = ("The row blocks of W_ih, W_hh, b_ih, b_hh are i, f, g, o (as in torch.nn.LSTMCell), "
                  "d_h rows each.")


@prop(EX, "lstm_cell", "shapes",
      zh="lstm_cell 返回 (h_new, c_new)，各为 (B, d_h)，保持输入的 dtype（float64 仍是 float64），可微，不修改输入",
      en="lstm_cell returns (h_new, c_new), each (B, d_h), in the input's dtype (float64 stays float64), "
         "differentiable, inputs unchanged")
@given(case=cell_inputs("lstm", dtypes=(torch.float32, torch.float64)))
@example(case=cell_case("lstm", 1, 1, 1, seed=0))
@example(case=cell_case("lstm", 3, 2, 4, seed=1, dtype=torch.float64))
def lstm_cell_shapes(student, case):
    B, d_h, dtype = case.x.shape[0], case.d_h, case.x.dtype
    ins = {k: _leaf(getattr(case, k), True) for k in ("x", "h", "c", "W_ih", "W_hh", "b_ih", "b_hh")}
    with _context(**{"输入的_dtype input dtype": str(dtype).replace("torch.", ""), "requires_grad": "True"}):
        out = student.call("lstm_cell", ins["x"], (ins["h"], ins["c"]),
                           ins["W_ih"], ins["W_hh"], ins["b_ih"], ins["b_hh"])
        h_new, c_new = unpack(out, 2, "lstm_cell", student)
        _check_output(h_new, "h_new", (B, d_h), dtype, student)
        _check_output(c_new, "c_new", (B, d_h), dtype, student)
        _check_gradients(student, "lstm_cell", [h_new, c_new], ins)


@prop(EX, "lstm_cell", "matches_torch_lstm_cell",
      zh="lstm_cell 与 torch.nn.LSTMCell（同样的权重）给出相同的 h_new 和 c_new，梯度也相同",
      en="lstm_cell gives the same h_new and c_new as torch.nn.LSTMCell with the same weights, and the same "
         "gradients")
@given(case=cell_inputs("lstm"))
@example(case=cell_case("lstm", 2, 3, 2, seed=0))
@example(case=cell_case("lstm", 1, 1, 1, seed=7))
def lstm_cell_matches(student, case):
    ins = {k: _leaf(getattr(case, k), True) for k in ("x", "h", "c", "W_ih", "W_hh", "b_ih", "b_hh")}
    out = student.call("lstm_cell", ins["x"], (ins["h"], ins["c"]), ins["W_ih"], ins["W_hh"], ins["b_ih"], ins["b_hh"])
    h_new, c_new = unpack(out, 2, "lstm_cell", student)
    with torch.no_grad():
        h_ref, c_ref = case.module(case.x, (case.h, case.c))
    B, d_h = h_ref.shape
    for what, got, ref in (("c_new", c_new, c_ref), ("h_new", h_new, h_ref)):
        check_tensor(got, what, shape=(B, d_h), student=student)
        bad, lines = _mismatch(got, ref)
        if bool(bad.any()):
            kw = dict(x=case.x, h=case.h, c=case.c, W_ih=case.W_ih, W_hh=case.W_hh, b_ih=case.b_ih, b_hh=case.b_hh)
            label = _diagnose([(h_new, c_new)], [kw], _lstm_variants() + [
                (("只用了 b_ih（漏了 b_hh）", "only b_ih is used (b_hh is missing)"),
                 lambda **k: _lstm64(**{**k, "b_hh": torch.zeros_like(k["b_hh"])})),
                (("只用了 b_hh（漏了 b_ih）", "only b_hh is used (b_ih is missing)"),
                 lambda **k: _lstm64(**{**k, "b_ih": torch.zeros_like(k["b_ih"])})),
            ])
            diag = {"诊断 diagnosis": f"你的输出与这种写法完全一致：{label[0]} / your output is exactly what you get "
                                     f"with: {label[1]}"} if label else {}
            fail(f"{what} 与 torch.nn.LSTMCell 不一致（{int(bad.sum())} 个元素不同）。",
                 f"{what} differs from torch.nn.LSTMCell in {int(bad.sum())} entries.",
                 show=case.show(**{f"期望 expected {what}": ref, f"实际 got {what}": got,
                                   "不同的元素 differing entries": lines}, **diag), student=student,
                 hint_zh="门 = x @ W_ih.T + b_ih + h @ W_hh.T + b_hh（两个偏置都要），按 i, f, g, o 切成 4 块；"
                         "i, f, o 用 sigmoid，g 用 tanh；c_new = f * c + i * g；h_new = o * tanh(c_new)。",
                 hint_en="gates = x @ W_ih.T + b_ih + h @ W_hh.T + b_hh (both biases), split into 4 blocks "
                         "i, f, g, o; sigmoid for i, f, o and tanh for g; c_new = f * c + i * g; "
                         "h_new = o * tanh(c_new).")
    _check_cell_gradients(student, "lstm_cell", (h_new, c_new), ins,
                          lambda x, h, c, **w: torch.lstm_cell(x, (h, c), *w.values()), case)


# (i, f, o) saturated; what c_new and h_new must then be, and what to say if they are not
LSTM_SCENARIOS = [
    ((0, 1, 1), "c", "h_tanh_c",
     ("遗忘门打开（f = 1）、输入门关闭（i = 0）时，记忆单元必须原样保留：c_new == c。",
      "With the forget gate open (f = 1) and the input gate closed (i = 0) the cell must keep its "
      "memory: c_new == c.")),
    ((1, 0, 1), "g", "h_tanh_c",
     ("输入门打开（i = 1）、遗忘门关闭（f = 0）时，c_new 必须等于候选值 g = tanh(W_ig x + b_ig + W_hg h + b_hg)"
      "（第 3 个行块）。",
      "With the input gate open (i = 1) and the forget gate closed (f = 0), c_new must be the candidate "
      "g = tanh(W_ig x + b_ig + W_hg h + b_hg) (the 3rd row block).")),
    ((1, 1, 0), "c+g", "zero",
     ("输入门和遗忘门都打开（i = f = 1）时，c_new == c + g。",
      "With both the input and the forget gate open (i = f = 1), c_new == c + g.")),
    ((0, 0, 1), "zero", "zero",
     ("输入门和遗忘门都关闭（i = f = 0）时，c_new == 0：什么都不保留，也不写入。i 和 f 是两个独立的门（不是 1 - f）。",
      "With both the input and the forget gate closed (i = f = 0), c_new == 0: nothing is kept and "
      "nothing written. i and f are two separate gates (i is not 1 - f).")),
]


@prop(EX, "lstm_cell", "gates_in_order_i_f_g_o",
      zh="每个门各司其职：把某个门的偏置设为 ±30 使它饱和为 0 或 1，c_new = f * c + i * g、h_new = o * tanh(c_new) "
         "按 i, f, g, o 的行块成立",
      en="each gate does its own job: with a gate's biases at +-30 (so it is 0 or 1), c_new = f * c + i * g "
         "and h_new = o * tanh(c_new) hold with the row blocks i, f, g, o")
@given(case=cell_inputs("lstm"))
@example(case=cell_case("lstm", 2, 2, 3, seed=0))
@example(case=cell_case("lstm", 1, 1, 1, seed=3))
def lstm_cell_gates(student, case):
    d_h = case.d_h
    x, h, c = case.x / 2, case.h, case.c  # |x| <= 1: the gates' other terms stay far below 30
    runs, outs = [], []
    for (i, f, o), *_ in LSTM_SCENARIOS:
        gates = {"i": 2 * i - 1, "f": 2 * f - 1, "o": 2 * o - 1, "g": 0}  # g: no bias, so one bias is enough
        b_ih, b_hh = (_saturate(b, d_h, gates, LSTM_GATES, BIG) for b in (case.b_ih, case.b_hh))
        kw = dict(x=x, h=h, c=c, W_ih=case.W_ih, W_hh=case.W_hh, b_ih=b_ih, b_hh=b_hh)
        out = student.call("lstm_cell", x.clone(), (h.clone(), c.clone()), case.W_ih.clone(), case.W_hh.clone(),
                           b_ih.clone(), b_hh.clone())
        h_new, c_new = unpack(out, 2, "lstm_cell", student)
        check_tensor(h_new, "h_new", shape=h.shape, student=student)
        check_tensor(c_new, "c_new", shape=c.shape, student=student)
        runs.append(kw)
        outs.append((h_new, c_new))

    k = LSTM_GATES.index("g")
    g = torch.tanh((x @ case.W_ih.T + h @ case.W_hh.T)[:, k * d_h:(k + 1) * d_h].to(torch.float64))
    for ((i, f, o), c_rule, h_rule, (zh, en)), kw, (h_new, c_new) in zip(LSTM_SCENARIOS, runs, outs):
        c_exp = {"c": c.to(torch.float64), "g": g, "c+g": c + g, "zero": torch.zeros_like(g)}[c_rule]
        h_exp = torch.tanh(c_exp) if h_rule == "h_tanh_c" else torch.zeros_like(g)
        setting = (f"b_ih 和 b_hh 中 i 的行 [{_rows(LSTM_GATES, 'i', d_h)}] = {(2 * i - 1) * BIG:+g}，"
                   f"f 的行 [{_rows(LSTM_GATES, 'f', d_h)}] = {(2 * f - 1) * BIG:+g}，"
                   f"o 的行 [{_rows(LSTM_GATES, 'o', d_h)}] = {(2 * o - 1) * BIG:+g}，g 的行 = 0 / "
                   f"in b_ih and b_hh: rows of i = {(2 * i - 1) * BIG:+g}, f = {(2 * f - 1) * BIG:+g}, "
                   f"o = {(2 * o - 1) * BIG:+g}, g = 0  =>  i = {i}, f = {f}, o = {o}")
        checks = [("c_new", c_new, c_exp, zh, en,
                   "记忆单元由输入门 i 和遗忘门 f 控制：c_new = f * c + i * g。",
                   "The cell is controlled by the input gate i and the forget gate f: c_new = f * c + i * g."),
                  ("h_new", h_new, h_exp,
                   f"输出门 o = {o}（行块 {_rows(LSTM_GATES, 'o', d_h)}）时 h_new 应为 "
                   + ("tanh(c_new)。" if o else "0：输出门关闭时什么都不输出。"),
                   f"With the output gate o = {o} (row block {_rows(LSTM_GATES, 'o', d_h)}) h_new must be "
                   + ("tanh(c_new)." if o else "0: a closed output gate lets nothing out."),
                   "输出门 o 控制 h：h_new = o * tanh(c_new)。",
                   "The output gate o controls h: h_new = o * tanh(c_new).")]
        for what, got, exp, mzh, men, hzh, hen in checks:
            bad, lines = _mismatch(got, exp)
            if bool(bad.any()):
                label = _diagnose(outs, runs, _lstm_variants())
                diag = {"诊断 diagnosis": f"你的输出与这种写法完全一致：{label[0]} / your outputs are exactly what "
                                         f"you get with: {label[1]}"} if label else {}
                fail(mzh, men, show=case.show(**{"x": x, "门的设置 gate setting": setting,
                                                 "b_ih (饱和后 saturated)": kw["b_ih"],
                                                 "b_hh (饱和后 saturated)": kw["b_hh"],
                                                 f"期望 expected {what}": exp, f"实际 got {what}": got,
                                                 "不同的元素 differing entries": lines}, **diag),
                     student=student, hint_zh=hzh + LSTM_LAYOUT_ZH, hint_en=hen + " " + LSTM_LAYOUT_EN)


# ---------------------------------------------------------------- gru_cell

GRU_LAYOUT_ZH = "W_ih、W_hh、b_ih、b_hh 的行块依次是 r, z, n（与 torch.nn.GRUCell 相同），每块 d_h 行。"
GRU_LAYOUT_EN = ("The row blocks of W_ih, W_hh, b_ih, b_hh are r, z, n (as in torch.nn.GRUCell), "
                 "d_h rows each.")


@prop(EX, "gru_cell", "shapes",
      zh="gru_cell 返回 (B, d_h) 的 h_new，保持输入的 dtype（float64 仍是 float64），可微，不修改输入",
      en="gru_cell returns h_new of shape (B, d_h) in the input's dtype (float64 stays float64), "
         "differentiable, inputs unchanged")
@given(case=cell_inputs("gru", dtypes=(torch.float32, torch.float64)))
@example(case=cell_case("gru", 1, 1, 1, seed=0))
@example(case=cell_case("gru", 3, 2, 4, seed=1, dtype=torch.float64))
def gru_cell_shapes(student, case):
    B, d_h, dtype = case.x.shape[0], case.d_h, case.x.dtype
    ins = {k: _leaf(getattr(case, k), True) for k in ("x", "h", "W_ih", "W_hh", "b_ih", "b_hh")}
    with _context(**{"输入的_dtype input dtype": str(dtype).replace("torch.", ""), "requires_grad": "True"}):
        h_new = student.call("gru_cell", *ins.values())
        _check_output(h_new, "h_new", (B, d_h), dtype, student)
        _check_gradients(student, "gru_cell", [h_new], ins)


@prop(EX, "gru_cell", "matches_torch_gru_cell",
      zh="gru_cell 与 torch.nn.GRUCell（同样的权重）给出相同的 h_new，梯度也相同",
      en="gru_cell gives the same h_new as torch.nn.GRUCell with the same weights, and the same gradients")
@given(case=cell_inputs("gru"))
@example(case=cell_case("gru", 2, 3, 2, seed=0))
@example(case=cell_case("gru", 1, 1, 1, seed=7))
def gru_cell_matches(student, case):
    ins = {k: _leaf(getattr(case, k), True) for k in ("x", "h", "W_ih", "W_hh", "b_ih", "b_hh")}
    h_new = student.call("gru_cell", *ins.values())
    with torch.no_grad():
        ref = case.module(case.x, case.h)
    check_tensor(h_new, "h_new", shape=ref.shape, student=student)
    bad, lines = _mismatch(h_new, ref)
    if bool(bad.any()):
        kw = dict(x=case.x, h=case.h, W_ih=case.W_ih, W_hh=case.W_hh, b_ih=case.b_ih, b_hh=case.b_hh)
        label = _diagnose([(h_new,)], [kw], _gru_variants())
        diag = {"诊断 diagnosis": f"你的输出与这种写法完全一致：{label[0]} / your output is exactly what you get "
                                 f"with: {label[1]}"} if label else {}
        fail(f"h_new 与 torch.nn.GRUCell 不一致（{int(bad.sum())} 个元素不同）。",
             f"h_new differs from torch.nn.GRUCell in {int(bad.sum())} entries.",
             show=case.show(**{"期望 expected h_new": ref, "实际 got h_new": h_new,
                               "不同的元素 differing entries": lines}, **diag), student=student,
             hint_zh="r = σ(W_ir x + b_ir + W_hr h + b_hr)，z = σ(W_iz x + b_iz + W_hz h + b_hz)，"
                     "n = tanh(W_in x + b_in + r * (W_hn h + b_hn))，h_new = (1 - z) * n + z * h。",
             hint_en="r = σ(W_ir x + b_ir + W_hr h + b_hr), z = σ(W_iz x + b_iz + W_hz h + b_hz), "
                     "n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h_new = (1 - z) * n + z * h.")
    _check_cell_gradients(student, "gru_cell", (h_new,), ins,
                          lambda x, h, **w: (torch.gru_cell(x, h, *w.values()),), case)


# (r, z) saturated (None: left as drawn); the rule h_new must follow; what to say
GRU_SCENARIOS = [
    ((None, 1), "h",
     ("更新门 z = 1（第 2 个行块）时 GRU 必须保留旧状态：h_new == h，因为 h_new = (1 - z) * n + z * h。",
      "With the update gate z = 1 (the 2nd row block) the GRU must keep its state: h_new == h, "
      "since h_new = (1 - z) * n + z * h."),
     ("z 是“保留旧状态”的比例：z = 1 时完全保留 h。", "z is the share of the old state that is kept: z = 1 keeps h.")),
    ((1, 0), "n_full",
     ("z = 0、重置门 r = 1 时 h_new 必须等于候选状态 n = tanh(W_in x + b_in + W_hn h + b_hn)（第 3 个行块，"
      "两个偏置都在内）。",
      "With z = 0 and the reset gate r = 1, h_new must be the candidate n = tanh(W_in x + b_in + W_hn h + b_hn) "
      "(the 3rd row block, both biases included)."),
     ("z = 0 时 h_new = n；n 用 tanh，并包含 b_in 和 b_hn。", "With z = 0, h_new = n; n uses tanh and includes b_in and b_hn.")),
    ((0, 0), "n_input",
     ("z = 0、重置门 r = 0（第 1 个行块）时，整个循环项 r * (W_hn h + b_hn)（包括 b_hn）都被清除："
      "h_new == tanh(W_in x + b_in)。",
      "With z = 0 and the reset gate r = 0 (the 1st row block), the whole recurrent term "
      "r * (W_hn h + b_hn), b_hn included, is cleared: h_new == tanh(W_in x + b_in)."),
     ("torch.nn.GRUCell 里 r 乘的是 (W_hn h + b_hn)，不是先乘 h 再乘 W_hn（那是另一种 GRU 变体）。",
      "In torch.nn.GRUCell r multiplies (W_hn h + b_hn); it is not applied to h before W_hn (that is another "
      "GRU variant).")),
]


@prop(EX, "gru_cell", "gates_in_order_r_z_n",
      zh="每个门各司其职：偏置设为 ±30 使 r 或 z 饱和为 0 或 1 时，n = tanh(W_in x + b_in + r * (W_hn h + b_hn))、"
         "h_new = (1 - z) * n + z * h 按 r, z, n 的行块成立",
      en="each gate does its own job: with biases at +-30 (r or z is 0 or 1), "
         "n = tanh(W_in x + b_in + r * (W_hn h + b_hn)) and h_new = (1 - z) * n + z * h hold with the row "
         "blocks r, z, n")
@given(case=cell_inputs("gru"))
@example(case=cell_case("gru", 2, 2, 3, seed=0))
@example(case=cell_case("gru", 1, 1, 1, seed=3))
def gru_cell_gates(student, case):
    d_h = case.d_h
    x, h = case.x / 2, case.h
    runs, outs = [], []
    for (r, z), *_ in GRU_SCENARIOS:
        gates = {"z": 2 * z - 1} if r is None else {"r": 2 * r - 1, "z": 2 * z - 1}
        b_ih, b_hh = (_saturate(b, d_h, gates, GRU_GATES, BIG) for b in (case.b_ih, case.b_hh))
        kw = dict(x=x, h=h, W_ih=case.W_ih, W_hh=case.W_hh, b_ih=b_ih, b_hh=b_hh)
        h_new = student.call("gru_cell", x.clone(), h.clone(), case.W_ih.clone(), case.W_hh.clone(),
                             b_ih.clone(), b_hh.clone())
        check_tensor(h_new, "h_new", shape=h.shape, student=student)
        runs.append(kw)
        outs.append((h_new,))

    k = GRU_GATES.index("n")
    rows = slice(k * d_h, (k + 1) * d_h)
    x_n = (x @ case.W_ih.T + case.b_ih)[:, rows].to(torch.float64)  # W_in x + b_in
    h_n = (h @ case.W_hh.T + case.b_hh)[:, rows].to(torch.float64)  # W_hn h + b_hn
    for ((r, z), rule, (zh, en), (hzh, hen)), kw, (h_new,) in zip(GRU_SCENARIOS, runs, outs):
        exp = {"h": h.to(torch.float64), "n_full": torch.tanh(x_n + h_n), "n_input": torch.tanh(x_n)}[rule]
        bad, lines = _mismatch(h_new, exp)
        if bool(bad.any()):
            setting = (f"b_ih 和 b_hh 中 z 的行 [{_rows(GRU_GATES, 'z', d_h)}] = {(2 * z - 1) * BIG:+g}"
                       + ("" if r is None else f"，r 的行 [{_rows(GRU_GATES, 'r', d_h)}] = {(2 * r - 1) * BIG:+g}")
                       + f" / in b_ih and b_hh: rows of z = {(2 * z - 1) * BIG:+g}"
                       + ("" if r is None else f", r = {(2 * r - 1) * BIG:+g}")
                       + f"  =>  z = {z}" + ("" if r is None else f", r = {r}"))
            label = _diagnose(outs, runs, _gru_variants())
            diag = {"诊断 diagnosis": f"你的输出与这种写法完全一致：{label[0]} / your outputs are exactly what "
                                     f"you get with: {label[1]}"} if label else {}
            fail(zh, en, show=case.show(**{"x": x, "门的设置 gate setting": setting,
                                           "b_ih (饱和后 saturated)": kw["b_ih"], "b_hh (饱和后 saturated)": kw["b_hh"],
                                           "期望 expected h_new": exp, "实际 got h_new": h_new,
                                           "不同的元素 differing entries": lines}, **diag),
                 student=student, hint_zh=hzh + GRU_LAYOUT_ZH, hint_en=hen + " " + GRU_LAYOUT_EN)


# ---------------------------------------------------------------- lstm_sequence


def _call_sequence(student, X, lengths, W, state=None):
    args = (X, lengths.clone(), *W)
    if state is None:
        out = student.call("lstm_sequence", *args)
    else:
        out = student.call("lstm_sequence", *args, state=state)
    outputs, final = unpack(out, 2, "lstm_sequence", student)
    h_n, c_n = unpack(final, 2, "lstm_sequence 的第二个返回值 (h_n, c_n) / second return value (h_n, c_n)", student)
    B, T = X.shape[:2]
    d_h = W[1].shape[1]
    check_tensor(outputs, "outputs", shape=(B, T, d_h), student=student)
    check_tensor(h_n, "h_n", shape=(B, d_h), student=student)
    check_tensor(c_n, "c_n", shape=(B, d_h), student=student)
    return outputs, h_n, c_n


def _torch_lstm(case, X, state):
    """torch.nn.LSTM on pack_padded_sequence(..., enforce_sorted=False): (outputs, h_n, c_n).
    Its weights are case.W; gradients reach them as case.module's parameters."""
    packed = pack_padded_sequence(X, case.lengths, batch_first=True, enforce_sorted=False)
    if state is None:
        state = (X.new_zeros(case.B, case.d_h), X.new_zeros(case.B, case.d_h))
    hx = (state[0][None], state[1][None])  # (1, B, d_h): one layer
    out, (h_n, c_n) = case.module(packed, hx)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=case.T)
    return out, h_n[0], c_n[0]


SEQ_HINT_ZH = ("从初始状态（state 为 None 时是零）开始，对每个时间步 t 调用 lstm_cell；"
               "t >= lengths[b] 的填充步：状态 (h, c) 保持不变，输出为 0。")
SEQ_HINT_EN = ("Start from the initial state (zeros when state is None) and call lstm_cell at every step t; "
               "at a padded step (t >= lengths[b]) keep the state (h, c) unchanged and output 0.")


@prop(EX, "lstm_sequence", "shapes",
      zh="lstm_sequence 返回 outputs (B, T, d_h) 和 (h_n, c_n)（各 (B, d_h)），保持 dtype（float64 仍是 float64），"
         "对 X、权重和初始状态可微，不修改输入",
      en="lstm_sequence returns outputs (B, T, d_h) and (h_n, c_n), each (B, d_h), in the input's dtype "
         "(float64 stays float64), differentiable w.r.t. X, the weights and the initial state, inputs unchanged")
@given(case=padded_sequences(dtypes=(torch.float32, torch.float64)))
@example(case=seq_case(1, 1, 1, 1, [1], seed=0))
@example(case=seq_case(3, 4, 2, 3, [2, 4, 1], seed=1, with_state=True, dtype=torch.float64))
@example(case=seq_case(2, 3, 2, 3, [3, 1], seed=2, dtype=torch.float64))  # float64, default zero state
def lstm_sequence_shapes(student, case):
    X = _leaf(case.X, True)
    W = tuple(_leaf(w, True) for w in case.W)
    state = None if case.state is None else tuple(_leaf(s, True) for s in case.state)
    dtype = case.X.dtype
    with _context(**{"输入的_dtype input dtype": str(dtype).replace("torch.", ""), "requires_grad": "True",
                     "lengths": case.lengths.tolist()}):
        outputs, h_n, c_n = _call_sequence(student, X, case.lengths, W, state)
        for what, t in (("outputs", outputs), ("h_n", h_n), ("c_n", c_n)):
            _check_output(t, what, t.shape, dtype, student)
        ins = {"X": X, "W_ih": W[0], "W_hh": W[1], "b_ih": W[2], "b_hh": W[3]}
        if state is not None:
            ins.update({"h0": state[0], "c0": state[1]})
        _check_gradients(student, "lstm_sequence", [outputs, h_n, c_n], ins)


LONG = 16  # steps that a drawn sequence never reaches (T <= 6; the pinned ones, T = 22, 61, 150, 200)


def _restarted(case, t, start):
    """torch.nn.LSTM run on X[:, t:] from `start` (h, c) or zeros: the outputs (B, T - t, d_h) of a network
    whose state was reset at step t.  Padded steps come after the valid ones, so no packing is needed
    for the valid outputs."""
    h0, c0 = start if start is not None else (case.X.new_zeros(case.B, case.d_h),) * 2
    with torch.no_grad():
        out, _ = case.module(case.X[:, t:].detach(), (h0.detach()[None], c0.detach()[None]))
    return out


def _long_sequence_failure(student, case, bad, outputs, out_ref, lines):
    """Valid outputs that agree with torch.nn.LSTM for the first LONG steps or more, and from the first
    wrong step t on are those of the network restarted at t (from the initial state, or from zeros): the
    state is reset after a fixed number of steps (chunks of 64, ...).  Fails with that, or returns."""
    steps = bad.any(-1).any(0).nonzero()  # (k, 1): the time steps with a wrong output
    t = int(steps[0]) if len(steps) else 0
    if t < LONG:
        return
    n = min(t, case.T - t)  # the steps of one more chunk
    valid = padding_mask_ref(case.lengths, case.T)[:, t:t + n, None]  # (B, n, 1)
    got = outputs.detach()[:, t:t + n]
    starts = [("初始状态 the initial state", case.state)] if case.state is not None else []
    starts.append(("零状态 zeros", None))
    for name, start in starts:  # noqa: B007 - name: read when the loop ends
        again = _restarted(case, t, start)[:, :n]
        if bool(valid.any()) and not bool(_mismatch(got, again, where=valid)[0].any()):
            break
    else:
        return
    fail(f"在 T = {case.T} 的序列上，有效步的 outputs 在前 {t} 步（t = 0..{t - 1}）与 torch.nn.LSTM 一致，"
         f"从第 t = {t} 步起正是在第 {t} 步把状态重置为{name.split()[0]}、重新开始的结果：状态没有贯穿整个序列"
         f"（例如每 {t} 步一块、每块从头开始）。",
         f"On a sequence of T = {case.T} steps, the outputs at valid steps agree with torch.nn.LSTM for the first "
         f"{t} steps (t = 0..{t - 1}), and from step t = {t} on they are those of a network restarted at step {t} "
         f"from {name.split(' ', 1)[1]}: the state is not carried through the whole sequence (chunks of {t} steps, "
         f"each starting afresh, for instance).",
         show=case.show(**{"第一个不同的时间步 first differing step": t, "期望 expected outputs": out_ref,
                           "实际 got outputs": outputs, "不同的元素 differing entries": lines}),
         student=student,
         hint_zh="对 t = 0..T-1 的每一步都从上一步的 (h, c) 继续，不要分块、不要在固定步数后重置状态；"
                 "T 可以是几百。",
         hint_en="Continue every step t = 0..T-1 from the previous step's (h, c): no chunks, no reset of the state "
                 "after a fixed number of steps; T may be in the hundreds.")


@prop(EX, "lstm_sequence", "matches_torch_lstm_packed",
      zh="lstm_sequence 与 torch.nn.LSTM(batch_first=True) 在 pack_padded_sequence(..., enforce_sorted=False) "
         "上的结果一致：outputs（填充步为 0）、h_n、c_n，以及它们的梯度",
      en="lstm_sequence agrees with torch.nn.LSTM(batch_first=True) on pack_padded_sequence(..., "
         "enforce_sorted=False): outputs (0 at padded steps), h_n, c_n, and their gradients")
@given(case=padded_sequences())
@example(case=seq_case(3, 4, 2, 3, [2, 4, 1], seed=0, with_state=True))
@example(case=seq_case(2, 3, 3, 2, [3, 1], seed=5))
@example(case=seq_case(1, 1, 2, 2, [1], seed=2, with_state=True))
# long batches (lengths kept as float32 fractions of T and turned back with int() lose a step: at T = 22 the
# length 13, at T = 61 the lengths 1, 2, 4, 8, 16 and 32; at T <= 21 none): T = 22 with every length 1..22
# once, unsorted, and T = 61 with those lengths (few sequences: code that runs each one alone stays fast)
@example(case=seq_case(22, 22, 1, 2, [(5 * i) % 22 + 1 for i in range(22)], seed=6))
@example(case=seq_case(8, 61, 1, 2, [32, 1, 61, 16, 2, 8, 4, 45], seed=7))
# a sequence of real length: T = 200 (a state reset or truncated every K <= 199 steps, e.g. chunks of 64 or 128
# restarting from the initial state or from zeros, shows at step K)
@example(case=seq_case(3, 200, 2, 3, [200, 1, 131], seed=8, with_state=True))
def lstm_sequence_matches(student, case):
    X = _leaf(case.X, True)
    W = tuple(_leaf(w, True) for w in case.W)
    state = None if case.state is None else tuple(_leaf(s, True) for s in case.state)
    outputs, h_n, c_n = _call_sequence(student, X, case.lengths, W, state)
    X_ref = _leaf(case.X, True)
    W_ref = [getattr(case.module, n) for n in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")]
    state_ref = None if case.state is None else tuple(_leaf(s, True) for s in case.state)
    out_ref, h_ref, c_ref = _torch_lstm(case, X_ref, state_ref)
    valid = padding_mask_ref(case.lengths, case.T)[:, :, None]  # (B, T, 1)

    checks = [
        ("outputs", outputs, out_ref, valid,
         "有效步的 outputs 与 torch.nn.LSTM 不一致。", "outputs at valid steps differ from torch.nn.LSTM.",
         SEQ_HINT_ZH, SEQ_HINT_EN),
        ("outputs", outputs, out_ref, ~valid,
         "填充步的 outputs 应为 0（pad_packed_sequence 在那里填 0）。",
         "outputs at padded steps must be 0 (pad_packed_sequence puts 0 there).",
         "t >= lengths[b] 的位置输出 0：例如 torch.where(valid, h_t, 0)。",
         "Output 0 where t >= lengths[b], e.g. torch.where(valid, h_t, 0)."),
        ("h_n", h_n, h_ref, None,
         "h_n 与 torch.nn.LSTM 不一致：它应是每个序列最后一个有效步（t = lengths[b] - 1）之后的隐藏状态。",
         "h_n differs from torch.nn.LSTM: it must be the hidden state after each sequence's last valid step "
         "(t = lengths[b] - 1).", SEQ_HINT_ZH, SEQ_HINT_EN),
        ("c_n", c_n, c_ref, None,
         "c_n 与 torch.nn.LSTM 不一致：它应是每个序列最后一个有效步之后的记忆单元。",
         "c_n differs from torch.nn.LSTM: it must be the cell state after each sequence's last valid step.",
         SEQ_HINT_ZH, SEQ_HINT_EN),
    ]
    for what, got, ref, where, zh, en, hzh, hen in checks:
        bad, lines = _mismatch(got, ref, where=where)
        if bool(bad.any()):
            if what == "outputs" and where is valid:
                _long_sequence_failure(student, case, bad, outputs, out_ref, lines)
            diag = {}
            if case.state is not None:
                with torch.no_grad():
                    zero = _torch_lstm(case, case.X, None)
                if all(_agrees(a, b) for a, b in zip((outputs, h_n, c_n), zero)):
                    diag = {"诊断 diagnosis": "你的结果与忽略 state、从零状态开始时完全一致：给定的初始状态没有用上。 / "
                                             "Your results are exactly those of starting from zeros: the given "
                                             "initial state is ignored."}
            fail(f"{zh}（{int(bad.sum())} 个元素不同）", f"{en} ({int(bad.sum())} entries differ)",
                 show=case.show(**{f"期望 expected {what}": ref, f"实际 got {what}": got,
                                   "不同的元素 differing entries": lines}, **diag),
                 student=student, hint_zh=hzh, hint_en=hen)

    # gradients of one random weighting of everything returned
    g = torch.Generator().manual_seed(case.seed + 1)
    R = [_grid(g, t.shape, -1, 1, case.X.dtype) for t in (out_ref, h_ref, c_ref)]
    names = ["X", "W_ih", "W_hh", "b_ih", "b_hh"] + ([] if state is None else ["h0", "c0"])
    leaves = [X, *W] + ([] if state is None else list(state))
    leaves_ref = [X_ref, *W_ref] + ([] if state_ref is None else list(state_ref))
    loss_ref = sum((t * r).sum() for t, r in zip((out_ref, h_ref, c_ref), R))
    grads_ref = torch.autograd.grad(loss_ref, leaves_ref)
    outs = [(t, r) for t, r in zip((outputs, h_n, c_n), R) if t.requires_grad]
    if outs:
        try:
            grads = torch.autograd.grad(sum((t * r).sum() for t, r in outs), leaves, allow_unused=True)
        except RuntimeError:
            grads = [None] * len(leaves)
    else:
        grads = [None] * len(leaves)
    for name, got, ref in zip(names, grads, grads_ref):
        got = torch.zeros_like(ref) if got is None else got
        bad, lines = _mismatch(got, ref, GRAD_ATOL, GRAD_RTOL)
        if bool(bad.any()):
            fail(f"数值与 torch.nn.LSTM 一致，但对 {name} 的梯度不一致：梯度没有完整地穿过时间传回去。",
                 f"The values agree with torch.nn.LSTM but the gradient with respect to {name} does not: the "
                 f"gradient does not flow back through time in full.",
                 show=case.show(**{"损失 loss": "sum(outputs * R1) + sum(h_n * R2) + sum(c_n * R3), R 为固定随机权重 "
                                                "/ fixed random weights",
                                   f"期望 expected d loss / d {name}": ref, f"实际 got d loss / d {name}": got,
                                   "不同的元素 differing entries": lines}),
                 student=student,
                 hint_zh="不要在时间步之间 .detach() 状态（那是训练时截断 BPTT 的做法，不属于这个函数），"
                         "也不要用 .data 或 torch.no_grad()。",
                 hint_en="Do not .detach() the state between steps (truncated BPTT belongs in a training loop, "
                         "not in this function), and do not use .data or torch.no_grad().")


@prop(EX, "lstm_sequence", "padded_outputs_are_zero",
      zh="填充步（t >= lengths[b]）的 outputs 恰好为 0",
      en="outputs at padded steps (t >= lengths[b]) are exactly 0")
@given(case=padded_sequences(padded=True))
@example(case=seq_case(3, 4, 2, 3, [2, 4, 1], seed=0))
@example(case=seq_case(1, 2, 1, 1, [1], seed=1, with_state=True))
def lstm_sequence_padded_zero(student, case):
    outputs, _, _ = _call_sequence(student, case.X.clone(), case.lengths, [w.clone() for w in case.W],
                                   None if case.state is None else tuple(s.clone() for s in case.state))
    padded = ~padding_mask_ref(case.lengths, case.T)[:, :, None]  # (B, T, 1)
    bad = (outputs.detach() != 0) & padded
    if bool(bad.any()):
        lines = "\n".join(f"outputs{list(map(int, i))} = {outputs[tuple(i)].item():.6g}" for i in bad.nonzero()[:5])
        b, t, _ = (int(v) for v in bad.nonzero()[0])
        L = int(case.lengths[b])
        held = bool((outputs[b, t].detach() == outputs[b, L - 1].detach()).all())
        diag = {"诊断 diagnosis": f"outputs[{b}, {t}] 重复了最后一个有效步的 outputs[{b}, {L - 1}]。 / "
                                 f"outputs[{b}, {t}] repeats the last valid step's outputs[{b}, {L - 1}]."
                } if held else {}
        fail(f"填充步的 outputs 不是 0（{int(bad.sum())} 个元素）：序列 b={b} 长度为 {L}，步 t={t} 是填充。",
             f"outputs at padded steps are not 0 ({int(bad.sum())} entries): sequence b={b} has length {L}, "
             f"step t={t} is padding.",
             show=case.show(**{"实际 got outputs": outputs, "非零的填充输出 non-zero padded outputs": lines}, **diag),
             student=student,
             hint_zh="填充位置不是真实词元，不应有输出：用 valid = t < lengths 做掩码，torch.where(valid, h_t, 0)。"
                     "保持状态不变是对的，但输出必须是 0，而不是上一个隐藏状态。",
             hint_en="A padded position is not a real token and has no output: mask with valid = t < lengths, "
                     "torch.where(valid, h_t, 0). Keeping the state is right, but the output must be 0, not "
                     "the last hidden state.")


@prop(EX, "lstm_sequence", "final_state_at_each_length",
      zh="(h_n[b], c_n[b]) 是序列 b 在自己的长度 lengths[b] 处的状态：与把它单独截断到 lengths[b] 再运行的结果相同",
      en="(h_n[b], c_n[b]) is sequence b's state at its own length lengths[b]: the same as running it alone, "
         "cut to lengths[b]")
@given(case=padded_sequences(padded=True))
@example(case=seq_case(3, 4, 2, 3, [2, 4, 1], seed=0))
@example(case=seq_case(2, 3, 1, 2, [1, 2], seed=4, with_state=True))
def lstm_sequence_final_state(student, case):
    W = [w.clone() for w in case.W]
    st_ = None if case.state is None else tuple(s.clone() for s in case.state)
    outputs, h_n, c_n = _call_sequence(student, case.X.clone(), case.lengths, W, st_)
    batch_call = student.last_call
    for b in range(case.B):
        L = int(case.lengths[b])
        one = None if case.state is None else (case.state[0][b:b + 1].clone(), case.state[1][b:b + 1].clone())
        _, h_one, c_one = _call_sequence(student, case.X[b:b + 1, :L].clone(), torch.tensor([L]), W, one)
        for what, got, exp in (("h_n", h_n[b:b + 1], h_one), ("c_n", c_n[b:b + 1], c_one)):
            bad, lines = _mismatch(got, exp)
            if not bool(bad.any()):
                continue
            diag = ""
            if bool((got.detach() == 0).all()) and what == "h_n":
                diag = (f"h_n[{b}] 全是 0：看起来取的是 outputs[:, -1]（填充步的输出是 0）。 / h_n[{b}] is all 0: it "
                        f"looks like outputs[:, -1] (the output at a padded step is 0).")
            else:
                for steps, zh_, en_ in ((case.T, "全部 T 步（包括填充步）", "all T steps (padded steps included)"),
                                        (min(L + 1, case.T), "多了一步（lengths[b] + 1 步，t <= lengths？）",
                                         "one step too many (lengths[b] + 1 steps; t <= lengths?)")):
                    if steps == L:
                        continue
                    _, h_s, c_s = _call_sequence(student, case.X[b:b + 1, :steps].clone(), torch.tensor([steps]),
                                                 W, one)
                    if _agrees(got, h_s if what == "h_n" else c_s):
                        diag = (f"{what}[{b}] 等于运行了{zh_}之后的状态。 / {what}[{b}] is the state after {en_}.")
                        break
            student.last_call = batch_call
            fail(f"{what}[{b}] 不是序列 b={b} 在其长度 {L} 处的状态（T = {case.T}）。",
                 f"{what}[{b}] is not sequence b={b}'s state at its length {L} (T = {case.T}).",
                 show=case.show(**{f"期望 expected {what}[{b}]（单独运行 X[{b}, :{L}] / X[{b}, :{L}] run alone）": exp,
                                   f"实际 got {what}[{b}]": got, "不同的元素 differing entries": lines},
                                **({"诊断 diagnosis": diag} if diag else {})),
                 student=student,
                 hint_zh="每个序列在自己的最后一个有效步 t = lengths[b] - 1 结束；之后的填充步不能再更新 (h, c)："
                         "h = torch.where(valid, h_t, h)，c 同理。最终状态不是 outputs[:, -1]。",
                 hint_en="Each sequence ends at its own last valid step t = lengths[b] - 1; the padded steps after it "
                         "must not update (h, c): h = torch.where(valid, h_t, h), same for c. The final state is "
                         "not outputs[:, -1].")


@st.composite
def padding_changes(draw):
    """A padded batch, how many padded steps to append (0..2) and a seed for the new padded values."""
    case = draw(padded_sequences())
    extra = draw(st.integers(0, 2))
    if extra == 0 and int(case.lengths.min()) == case.T:
        extra = 1
    return case, extra, draw(seeds())


@prop(EX, "lstm_sequence", "padding_does_not_change_valid_outputs",
      zh="改变填充步上的 X（数值和填充的长度）不改变任何有效输出和最终状态",
      en="changing X at padded steps (their values and how much padding there is) changes no valid output "
         "and not the final state")
@given(change=padding_changes())
@example(change=(seq_case(3, 4, 2, 3, [2, 4, 1], seed=0), 1, 1))
@example(change=(seq_case(2, 3, 1, 2, [1, 3], seed=3, with_state=True), 0, 2))
def lstm_sequence_padding_invariance(student, change):
    case, extra, seed = change
    W = [w.clone() for w in case.W]
    st_ = None if case.state is None else tuple(s.clone() for s in case.state)
    T2 = case.T + extra
    X2 = _grid(torch.Generator().manual_seed(seed), (case.B, T2, case.X.shape[2]), -3, 3, case.X.dtype)
    valid2 = padding_mask_ref(case.lengths, T2)[:, :, None]
    X2 = torch.where(valid2, torch.cat([case.X, X2[:, case.T:]], dim=1), X2)  # same real tokens, new padding
    out1, h1, c1 = _call_sequence(student, case.X.clone(), case.lengths, W, st_)
    out2, h2, c2 = _call_sequence(student, X2.clone(), case.lengths, W, st_)
    valid = padding_mask_ref(case.lengths, case.T)[:, :, None]
    for what, a, b, where in (("outputs", out2[:, :case.T], out1, valid), ("h_n", h2, h1, None), ("c_n", c2, c1, None)):
        bad, lines = _mismatch(a, b, where=where)
        if bool(bad.any()):
            fail(f"只改变了填充步的 X（并把 T 从 {case.T} 变为 {T2}），{what} 的有效部分却变了。",
                 f"Only X at padded steps changed (and T went from {case.T} to {T2}), yet the valid part of "
                 f"{what} changed.",
                 show=case.show(**{"改变后的 X X with new padding": X2, f"原来的 before {what}": b,
                                   f"改变后的 after {what}": a, "不同的元素 differing entries": lines}),
                 student=student,
                 hint_zh="填充是信息边界：t >= lengths[b] 的步不能影响 (h, c)。在填充步保持状态不变："
                         "h = torch.where(valid, h_t, h)；注意 valid = t < lengths（不是 <=）。",
                 hint_en="Padding is an information boundary: steps with t >= lengths[b] must not touch (h, c). "
                         "Keep the state at padded steps: h = torch.where(valid, h_t, h); note valid = t < lengths "
                         "(not <=).")


@prop(EX, "lstm_sequence", "future_does_not_change_past",
      zh="因果性：改变 t 之后的 X 不改变 t 及之前的 outputs，并且 d outputs[:, t] / d X[:, s] = 0（s > t）",
      en="causality: changing X after step t leaves outputs up to t unchanged, and d outputs[:, t] / d X[:, s] = 0 "
         "for s > t")
@given(case=padded_sequences(min_T=2, causal=True))
@example(case=seq_case(2, 4, 2, 3, [4, 3], seed=0, t0=1))
@example(case=seq_case(1, 2, 1, 1, [2], seed=1, t0=0))
def lstm_sequence_causal(student, case):
    t0, T = case.t0, case.T
    W = [w.clone() for w in case.W]
    st_ = None if case.state is None else tuple(s.clone() for s in case.state)
    X = _leaf(case.X, True)
    out1, _, _ = _call_sequence(student, X, case.lengths, W, st_)
    future = _grid(torch.Generator().manual_seed(case.seed + 2), case.X.shape, -3, 3, case.X.dtype)
    X2 = case.X.clone()
    X2[:, t0 + 1:] = future[:, t0 + 1:]
    out2, _, _ = _call_sequence(student, X2, case.lengths, W, st_)
    valid = padding_mask_ref(case.lengths, T)[:, :t0 + 1, None]
    bad, lines = _mismatch(out2[:, :t0 + 1], out1[:, :t0 + 1], atol=1e-6, rtol=1e-6, where=valid)
    hint_zh = ("循环网络是因果的：t 步的输出只能依赖 X[:, :t+1]。按 t = 0, 1, ..., T-1 的顺序处理，"
               "并按同样的顺序把 h_t 放进 outputs（不要反转）。")
    hint_en = ("A recurrent network is causal: the output at step t may depend on X[:, :t+1] only. Process "
               "t = 0, 1, ..., T-1 in that order and put h_t into outputs in the same order (no reversal).")
    if bool(bad.any()):
        fail(f"只改变了 t > {t0} 的 X，t <= {t0} 的 outputs 却变了。",
             f"Only X at steps t > {t0} changed, yet outputs at steps t <= {t0} changed.",
             show=case.show(**{"改变后的 X X with a new future": X2, "原来的 before outputs": out1,
                               "改变后的 after outputs": out2, "不同的元素 differing entries": lines}),
             student=student, hint_zh=hint_zh, hint_en=hint_en)
    rows = case.lengths > t0  # sequences for which step t0 is real
    if not out1.requires_grad:
        return  # not differentiable: lstm_sequence/shapes reports it
    grad, = torch.autograd.grad(out1[rows, t0].sum(), X, allow_unused=True)
    if grad is None:
        return
    leak = grad[:, t0 + 1:].abs().sum(dim=-1)  # (B, T - t0 - 1)
    if bool((leak != 0).any()):
        b, s = (int(v) for v in leak.nonzero()[0])
        fail(f"outputs[:, {t0}] 的梯度流到了未来的输入 X[:, {t0 + 1 + s}]：d outputs[{b}, {t0}] / d X[{b}, {t0 + 1 + s}] ≠ 0。",
             f"The gradient of outputs[:, {t0}] reaches the future input X[:, {t0 + 1 + s}]: "
             f"d outputs[{b}, {t0}] / d X[{b}, {t0 + 1 + s}] != 0.",
             show=case.show(**{f"d sum(outputs[:, {t0}]) / d X": grad}),
             student=student, hint_zh=hint_zh, hint_en=hint_en)
