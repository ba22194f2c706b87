"""The explanation by part (autograder/diagnose/parts/, each exercise's experiments.py): where no catalogued mistake is named, an
experiment on the student's function says which part of the computation differs -- and says
nothing when the experiment does not support a claim.

The wrong functions below are in no catalogue (autograder/exercises/*/mistakes.yml); each test checks the
part that is said, in both languages, and the careful tests check that two unrelated defects or
random noise never get a wrong claim.
"""

import pytest

from autograder import diagnose as D
from autograder.catalogue import load_catalogue
from autograder.diagnose import parts as P
from autograder.properties._harness import Student
from autograder.report.feedback import feedback_text
from autograder.report.html import parts_html
from autograder.report.markdown import render_markdown
from autograder.report.model import ExerciseResult, Report, TestResult
from autograder.report.terminal import render_rich_text
from autograder.report.text import render_text

from .conftest import ROOT, Namespace, reference_with
from .heldout_multi import CASES

CORRECT = sorted(p for p in (ROOT / "tests" / "files" / "correct").iterdir() if p.is_dir())


pytestmark = pytest.mark.usefixtures("one_thread")


def _run(exercise, code, functions=None):
    """(named ids per function, explanations by part per function) of the reference with `code`."""
    st = Student(Namespace(reference_with(exercise, code)), (), exercise)
    by_part = {}
    found = D.diagnose(st, exercise, functions or list(D.PROBES[exercise]), by_part=by_part)
    return {f: [d["id"] for d in v] for f, v in found.items() if v}, by_part


def _said(exercise, code, function, zh, en, complete=True):
    named, by_part = _run(exercise, code, [function])
    assert not named, named
    assert list(by_part) == [function], by_part
    [claim] = by_part[function]
    assert zh in claim["zh"] and en in claim["en"], claim
    assert claim["probe"].startswith(function.split("_")[0]) or function in claim["probe"], claim
    assert ("else_en" not in claim) == complete, claim
    return claim


# ---------------------------------------------------------------- cells

LSTM_B_HH_AS_B_IH = """
_ref_lstm = lstm_cell
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    return _ref_lstm(x, state, W_ih, W_hh, b_ih, b_ih)
"""

LSTM_FORGET_BIAS_TWICE = """
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = state
    H = h.shape[1]
    gates = x @ W_ih.T + b_ih + h @ W_hh.T + b_hh
    gates = torch.cat([gates[:, :H], gates[:, H:2 * H] + b_hh[H:2 * H], gates[:, 2 * H:]], dim=1)
    i, f, g, o = gates.chunk(4, dim=-1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c_new), c_new
"""

LSTM_MINUS_RECURRENT = """
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = state
    i, f, g, o = (x @ W_ih.T + b_ih - h @ W_hh.T + b_hh).chunk(4, dim=-1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c_new), c_new
"""

GRU_NO_B_HR = """
_ref_gru = gru_cell
def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    b = b_hh.clone()
    b[:b.shape[0] // 3] = 0
    return _ref_gru(x, h, W_ih, W_hh, b_ih, b)
"""

GRU_NO_CARRY = """
def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    x_r, x_z, x_n = (x @ W_ih.T + b_ih).chunk(3, dim=-1)
    h_r, h_z, h_n = (h @ W_hh.T + b_hh).chunk(3, dim=-1)
    r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
    return (1 - z) * torch.tanh(x_n + r * h_n)
"""


def test_cell_parts_are_said():
    _said(
        "recurrent",
        LSTM_B_HH_AS_B_IH,
        "lstm_cell",
        "把 `b_hh` 换成 `b_ih` 时与参考一致",
        "your cell matches the reference when `b_hh` is replaced by `b_ih`",
    )
    _said(
        "recurrent",
        LSTM_FORGET_BIAS_TWICE,
        "lstm_cell",
        "`b_hh` 的 f 块乘以 2",
        "when the f block of `b_hh` is doubled",
    )
    _said("recurrent", LSTM_MINUS_RECURRENT, "lstm_cell", "`W_hh` 取相反数", "the sign of `W_hh` is flipped")
    _said("recurrent", GRU_NO_B_HR, "gru_cell", "`b_hh` 的 r 块设为 0", "when the r block of `b_hh` is set to 0")
    _said("recurrent", GRU_NO_CARRY, "gru_cell", "z * h", "the carried term z * h is left out of h_new")


# ---------------------------------------------------------------- the sequence

SEQ_IGNORES_C0 = """
_seq = lstm_sequence
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    if state is not None:
        state = (state[0], torch.zeros_like(state[1]))
    return _seq(X, lengths, W_ih, W_hh, b_ih, b_hh, state)
"""

SEQ_C_AT_T = """
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    B, T, _ = X.shape
    d_h = W_hh.shape[1]
    h, c = (X.new_zeros(B, d_h), X.new_zeros(B, d_h)) if state is None else state
    outputs = []
    for t in range(T):
        h_t, c_t = lstm_cell(X[:, t], (h, c), W_ih, W_hh, b_ih, b_hh)
        valid = (t < lengths)[:, None]
        h = torch.where(valid, h_t, h)
        c = c_t  # the cell state runs on through the padding
        outputs.append(torch.where(valid, h_t, torch.zeros_like(h_t)))
    return torch.stack(outputs, dim=1), (h, c)
"""

SEQ_STATE_IN_PLACE = """
_seq = lstm_sequence
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    out, (h, c) = _seq(X, lengths, W_ih, W_hh, b_ih, b_hh, state)
    if state is not None:
        state[0].copy_(h)
        state[1].copy_(c)
    return out, (h, c)
"""

SEQ_FINAL_ONE_EARLY = """
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    B, T, _ = X.shape
    d_h = W_hh.shape[1]
    h, c = (X.new_zeros(B, d_h), X.new_zeros(B, d_h)) if state is None else state
    hs, cs, outputs = [h], [c], []
    for t in range(T):
        h_t, c_t = lstm_cell(X[:, t], (h, c), W_ih, W_hh, b_ih, b_hh)
        valid = (t < lengths)[:, None]
        h, c = torch.where(valid, h_t, h), torch.where(valid, c_t, c)
        hs.append(h_t)
        cs.append(c_t)
        outputs.append(torch.where(valid, h_t, torch.zeros_like(h_t)))
    idx = torch.arange(B)
    return torch.stack(outputs, 1), (torch.stack(hs, 1)[idx, lengths - 1], torch.stack(cs, 1)[idx, lengths - 1])
"""


def test_sequence_parts_are_said():
    _said(
        "recurrent",
        SEQ_IGNORES_C0,
        "lstm_sequence",
        "初始状态 c0 被忽略",
        "the initial state c0 you are given is ignored",
    )
    _said(
        "recurrent",
        SEQ_C_AT_T,
        "lstm_sequence",
        "c_n 在填充步也被更新",
        "c_n keep updating at padded steps: for the sequences shorter than T",
    )
    _said(
        "recurrent",
        SEQ_STATE_IN_PLACE,
        "lstm_sequence",
        "原地修改了传入的初始状态",
        "you write into the initial state (h0, c0) you are given, in place",
    )
    _said("recurrent", SEQ_FINAL_ONE_EARLY, "lstm_sequence", "h_n, c_n 取早了一步", "h_n, c_n is taken one step early")


# ---------------------------------------------------------------- masks

CAUSAL_NEXT_KEY = """
def causal_mask(T, device=None):
    return torch.ones(T, T, dtype=torch.bool, device=device).tril(1)
"""

CAUSAL_FIRST_COLUMN_BLOCKED = """
def causal_mask(T, device=None):
    m = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    m[:, 0] = False
    return m
"""

PADDING_FIRST_ALWAYS = """
_pm = padding_mask
def padding_mask(lengths, max_len=None):
    m = _pm(lengths, max_len).clone()
    m[:, 0] = True
    return m
"""

ATTENTION_PADDED_SELF = """
_am = attention_mask
def attention_mask(lengths, max_len=None, causal=False):
    m = _am(lengths, max_len, causal).clone()
    T = m.shape[-1]
    eye = torch.eye(T, dtype=torch.bool)
    padded = torch.arange(T)[None, :] >= lengths[:, None]
    return m | (eye & padded[:, :, None])[:, None]
"""


def test_mask_parts_are_said():
    _said(
        "masks",
        CAUSAL_NEXT_KEY,
        "causal_mask",
        "下一个位置 (j == i + 1)全部设为 True",
        "with the next key (j == i + 1) all set to True",
    )
    _said(
        "masks",
        CAUSAL_FIRST_COLUMN_BLOCKED,
        "causal_mask",
        "第一列 (j == 0)全部设为 False",
        "the first column (j == 0) all set to False",
    )
    _said(
        "masks",
        PADDING_FIRST_ALWAYS,
        "padding_mask",
        "第一个位置 (t == 0)全部设为 True",
        "the first position (t == 0) all set to True",
    )
    _said(
        "masks",
        ATTENTION_PADDED_SELF,
        "attention_mask",
        "填充查询行的对角线",
        "the diagonal of the padded query rows (i == j >= lengths[b]) all set to True",
    )


# ---------------------------------------------------------------- the positional encoding

PE_COS_SCALED = """
_se = sinusoidal_encoding
def sinusoidal_encoding(T, d, base=10000.0):
    pe = _se(T, d, base).clone()
    pe[:, 1::2] = pe[:, 1::2] * 1.5
    return pe
"""

PE_FIRST_ROW_ZERO = """
_se = sinusoidal_encoding
def sinusoidal_encoding(T, d, base=10000.0):
    pe = _se(T, d, base).clone()
    pe[0] = 0.0
    return pe
"""

PE_HALF = """
_se = sinusoidal_encoding
def sinusoidal_encoding(T, d, base=10000.0):
    return _se(T, d, base).half()
"""


def test_encoding_parts_are_said():
    _said(
        "positional_encoding",
        PE_COS_SCALED,
        "sinusoidal_encoding",
        "只在奇数列（cos）",
        "your encoding differs from the reference only in the odd columns (cos)",
    )
    named, by_part = _run("positional_encoding", PE_COS_SCALED)
    assert "odd columns (cos)" in by_part["add_positional_encoding"][0]["en"]  # what it adds, through the table
    _said(
        "positional_encoding",
        PE_FIRST_ROW_ZERO,
        "sinusoidal_encoding",
        "奇数列（cos），而且只在位置 0",
        "only in the odd columns (cos), and only at position 0",
    )
    named, by_part = _run("positional_encoding", PE_HALF, ["sinusoidal_encoding"])
    assert not named
    [claim] = by_part["sinusoidal_encoding"]
    assert "只有 dtype 不对" in claim["zh"] and "float16" in claim["en"] and "float32" in claim["en"]


# ---------------------------------------------------------------- the loss

LOSS_COUNT_PLUS_ONE = """
def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    return F.cross_entropy(logits[mask], targets[mask], reduction="sum") / (mask.sum() + 1)
"""

LOSS_DIVIDED_BY_T = """
def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    return F.cross_entropy(logits[mask], targets[mask], reduction="sum") / mask.shape[1]
"""

LOSS_SKIPS_LAST_VALID = """
def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    last = mask & (mask.long().cumsum(1) == mask.sum(1, keepdim=True))
    keep = mask & ~last
    ce = F.cross_entropy(logits[keep], targets[keep], reduction="sum")
    return ce / mask.sum()
"""


def test_loss_parts_are_said():
    _said(
        "masked_loss",
        LOSS_COUNT_PLUS_ONE,
        "masked_cross_entropy",
        "有效词元数 + 1",
        "over the valid tokens, divided by the number of valid tokens + 1",
    )
    _said(
        "masked_loss", LOSS_DIVIDED_BY_T, "masked_cross_entropy", "除以序列长度 T", "divided by the sequence length T"
    )
    _said(
        "masked_loss",
        LOSS_SKIPS_LAST_VALID,
        "masked_cross_entropy",
        "漏掉了每个序列最后一个",
        "over the valid tokens but the last one of each sequence, divided by the number of valid tokens",
    )


# ---------------------------------------------------------------- the form, in any exercise

PADDING_INT64 = """
def padding_mask(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else max_len
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError("length out of range")
    return (torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]).to(torch.int64)
"""

ADD_PE_FLOAT32_TABLE = """
def add_positional_encoding(X):
    B, T, d = X.shape
    return X + sinusoidal_encoding(T, d).to(X.device)
"""

LOSS_FROM_ITEM = """
_mce = masked_cross_entropy
def masked_cross_entropy(logits, targets, mask):
    return torch.tensor(_mce(logits, targets, mask).item())
"""

INIT_FLOAT64 = """
def init_tiny_lm(vocab_size, d_model, seed):
    g = torch.Generator().manual_seed(seed)
    shapes = [(vocab_size, d_model)] + [(d_model, d_model)] * 4 + [(vocab_size, d_model)]
    return tuple(torch.randn(s, generator=g, dtype=torch.float64) / d_model ** 0.5 for s in shapes)
"""

INIT_W_OUT_TRANSPOSED = """
def init_tiny_lm(vocab_size, d_model, seed):
    g = torch.Generator().manual_seed(seed)
    shapes = [(vocab_size, d_model)] + [(d_model, d_model)] * 4 + [(d_model, vocab_size)]
    return tuple(torch.randn(s, generator=g) / d_model ** 0.5 for s in shapes)
"""

MLM_WRITES_INPUT = """
_mm = mlm_mask
def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    inputs, labels = _mm(input_ids, special_ids, mask_id, vocab_size, seed)
    input_ids.copy_(inputs)
    return input_ids, labels
"""

WINDOWS_ACCEPT_HORIZON_0 = """
def sliding_windows(series, window, horizon):
    M = series.shape[0] - window - horizon + 1
    if M < 1:
        raise ValueError("too short")
    X = torch.stack([series[i:i + window] for i in range(M)])
    return X, series[torch.arange(M) + window - 1 + horizon]
"""


def test_the_form_is_said_in_any_exercise():
    _said(
        "masks",
        PADDING_INT64,
        "padding_mask",
        "dtype 是 int64，应为 bool",
        "the dtype of the result of `padding_mask` is int64, expected bool",
    )
    _, by_part = _run("positional_encoding", ADD_PE_FLOAT32_TABLE, ["add_positional_encoding"])
    said = {c["en"] for c in by_part["add_positional_encoding"]}
    assert "the dtype of the result of `add_positional_encoding` is float32, expected float16" in said
    assert any("float16" in c["probe"] for c in by_part["add_positional_encoding"])
    _said("masked_loss", LOSS_FROM_ITEM, "masked_cross_entropy", "没有梯度", "carries no gradient")
    claim = _said("tiny_lm", INIT_FLOAT64, "init_tiny_lm", "`E`、`W_q`", "is float64, expected float32")
    assert "`W_out`" in claim["en"]
    _said(
        "tiny_lm",
        INIT_W_OUT_TRANSPOSED,
        "init_tiny_lm",
        "`W_out`的形状是 (4, 5)，应为 (5, 4)",
        "the shape of `W_out` of `init_tiny_lm` is (4, 5), expected (5, 4)",
    )
    _said(
        "bert_masking",
        MLM_WRITES_INPUT,
        "mlm_mask",
        "原地修改了它的参数 `input_ids`",
        "`mlm_mask` writes into its argument `input_ids` in place",
    )
    named, by_part = _run("timeseries", WINDOWS_ACCEPT_HORIZON_0, ["sliding_windows"])
    if not named:
        [claim] = by_part["sliding_windows"]
        assert "ValueError" in claim["en"] and "ValueError" in claim["zh"] and "sliding_windows(" in claim["en"]


# ---------------------------------------------------------------- cells: activations, copied blocks, b_hn

LSTM_OUTPUT_GATE_TANH = """
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = state
    i, f, g, o = (x @ W_ih.T + b_ih + h @ W_hh.T + b_hh).chunk(4, dim=1)
    c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.tanh(o) * torch.tanh(c2), c2
"""

LSTM_W_HH_F_FROM_I = """
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = state
    Wi, Wf, Wg, Wo = W_hh.split(h.shape[1], 0)
    i, f, g, o = (x @ W_ih.T + b_ih + h @ torch.cat([Wi, Wi, Wg, Wo], 0).T + b_hh).chunk(4, dim=1)
    c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c2), c2
"""

GRU_B_HN_OUTSIDE = """
def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    H = h.shape[1]
    xr, xz, xn = (x @ W_ih.T + b_ih).split(H, 1)
    hr, hz, hn = (h @ W_hh.T).split(H, 1)
    br, bz, bn = b_hh.split(H)
    r, z = torch.sigmoid(xr + hr + br), torch.sigmoid(xz + hz + bz)
    return (1 - z) * torch.tanh(xn + r * hn + bn) + z * h
"""

GRU_UPDATE_GATE_TANH = """
def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    xr, xz, xn = (x @ W_ih.T + b_ih).chunk(3, 1)
    hr, hz, hn = (h @ W_hh.T + b_hh).chunk(3, 1)
    r, z = torch.sigmoid(xr + hr), torch.tanh(xz + hz)
    return (1 - z) * torch.tanh(xn + r * hn) + z * h
"""


def test_gate_activations_copied_blocks_and_b_hn_are_said():
    _said(
        "recurrent",
        LSTM_OUTPUT_GATE_TANH,
        "lstm_cell",
        "o 门用 tanh 而不是 sigmoid",
        "gate o goes through tanh instead of sigmoid",
    )
    _said(
        "recurrent",
        LSTM_W_HH_F_FROM_I,
        "lstm_cell",
        "`W_hh` 的 f 块换成 i 块的副本",
        "the f block of `W_hh` is replaced by a copy of its i block",
    )
    _said("recurrent", GRU_B_HN_OUTSIDE, "gru_cell", "b_hn 放到重置门 r 外面", "r * (W_hn h) + b_hn instead of")
    _said("recurrent", GRU_UPDATE_GATE_TANH, "gru_cell", "z 门用 tanh", "gate z goes through tanh instead of sigmoid")


LOSS_SOFTMAX_FIRST = """
def masked_cross_entropy(logits, targets, mask):
    if not mask.any():
        raise ValueError("no valid token")
    return F.cross_entropy(torch.softmax(logits[mask], dim=-1), targets[mask])
"""


def test_softmax_before_the_loss_is_said():
    _said(
        "masked_loss", LOSS_SOFTMAX_FIRST, "masked_cross_entropy", "softmax 被做了两次", "the softmax is applied twice"
    )


# ---------------------------------------------------------------- rope, timeseries, tiny_lm

ROPE_OFFSET_IGNORED = """
def apply_rope(x, offset=0, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError("odd d")
    th = rope_angles(T, d, 0, base).to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * th.cos() - b * th.sin(), a * th.sin() + b * th.cos()], -1).flatten(-2)
"""

ROPE_T_FROM_AXIS_1 = """
def apply_rope(x, offset=0, base=10000.0):
    T, d = x.shape[1], x.shape[-1]
    if d % 2:
        raise ValueError("odd d")
    th = rope_angles(T, d, offset, base).to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * th.cos() - b * th.sin(), a * th.sin() + b * th.cos()], -1).flatten(-2)
"""

WINDOWS_NEXT_STEP = """
def sliding_windows(series, window, horizon):
    M = series.shape[0] - window - horizon + 1
    if window < 1 or horizon < 1 or M < 1:
        raise ValueError("bad window")
    return (torch.stack([series[i:i + window] for i in range(M)]),
            torch.stack([series[i + window] for i in range(M)]))
"""

DATASETS_ACROSS_BOUNDARY = """
def make_datasets(series, n_train, window, horizon):
    train, test = chronological_split(series, n_train)
    mean, std = fit_standardizer(train)
    sliding_windows(test, window, horizon)
    X, y = sliding_windows((series - mean) / std, window, horizon)
    t = torch.arange(X.shape[0]) + window - 1 + horizon
    return X[t < n_train], y[t < n_train], X[t >= n_train], y[t >= n_train], mean, std
"""

LM_LOSS_PADDING_BY_ID = """
def tiny_lm_loss(tokens, lengths, params):
    logits = tiny_lm_logits(tokens, lengths, params)
    return masked_cross_entropy(logits[:, :-1], tokens[:, 1:], tokens[:, 1:] != 0)
"""


def test_rope_timeseries_and_tiny_lm_parts_are_said():
    _said("rope", ROPE_OFFSET_IGNORED, "apply_rope", "offset 被忽略了", "the offset argument is ignored")
    _said("rope", ROPE_T_FROM_AXIS_1, "apply_rope", "x.shape[1] 当作 T", "T taken from x.shape[1]")
    _said(
        "timeseries",
        WINDOWS_NEXT_STEP,
        "sliding_windows",
        "horizon 被忽略了",
        "each window's target is always the next step, the horizon is ignored",
    )
    _said(
        "timeseries",
        DATASETS_ACROSS_BOUNDARY,
        "make_datasets",
        "跨过了训练和测试的分界",
        "your test windows cross the boundary between the periods",
    )
    _said("tiny_lm", LM_LOSS_PADDING_BY_ID, "tiny_lm_loss", "id 为 0 的词元当作填充", "it does not use the lengths")


# ---------------------------------------------------------------- one mistake, not two

MLM_GENERATOR_PER_ROW = """
def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    B, T = input_ids.shape
    inputs, labels = input_ids.clone(), torch.full_like(input_ids, -100)
    for b in range(B):
        g = torch.Generator().manual_seed(seed)  # every row draws the same numbers
        for t in range(T):
            tok = int(input_ids[b, t])
            if torch.rand(1, generator=g).item() >= 0.15 or tok in special_ids:
                continue
            labels[b, t] = tok
            u = torch.rand(1, generator=g).item()
            if u < 0.8:
                inputs[b, t] = mask_id
            elif u < 0.9:
                inputs[b, t] = int(torch.randint(0, vocab_size, (1,), generator=g))
    return inputs, labels
"""


def test_rows_drawn_alike_name_one_mistake_not_a_second():
    """A generator re-seeded in every row draws one pattern for the batch (rightly named); the probe
    counting random ids over its 128 alike rows sees too few draws for id V-1 to come up, which is
    no evidence of randint(0, V - 1)."""
    named, _ = _run("bert_masking", MLM_GENERATOR_PER_ROW, ["mlm_mask"])
    assert named == {"mlm_mask": ["bm_one_mask_for_the_batch"]}, named


# ---------------------------------------------------------------- careful


def test_catalogued_mistakes_keep_their_names_and_get_no_part():
    """Every catalogued mistake of the four exercises named alone is still named, with no part
    claim next to it (the explanation by part is for what nothing catalogued explains)."""
    for ex, e in load_catalogue():
        if ex not in P.FUNCTIONS or not e.get("diagnosis", True):
            continue
        named, by_part = _run(ex, e["code"], [e["function"]])
        if named.get(e["function"]):
            assert not by_part, (e["id"], by_part)


def test_no_variant_is_a_catalogued_mistake_claimed_instead():
    """A catalogued mistake whose diagnosis is turned off, or that the diagnosis leaves unnamed, is
    never described as a part: the catalogue check drops every variant a mistake reproduces."""
    for ex, e in load_catalogue():
        if ex not in P.FUNCTIONS or e["function"] not in P.FUNCTIONS[ex]:
            continue
        named, by_part = _run(ex, e["code"], [e["function"]])
        if not named and by_part:  # then the claim must not be the mistake itself
            ns = reference_with(ex, e["code"])
            calls, variants = P._setup(ex, e["function"], reference_with(ex)) or (None, None)
            if calls is None:
                continue
            for claim in by_part[e["function"]]:
                if claim["part"].startswith(("form:", "when ")) or claim["part"] == "random":
                    continue  # a fact of the calls (a dtype, a shape, a condition...), no variant
                mistake = Student(Namespace(ns), (), ex)
                got = P._student_outputs(mistake, calls, None)
                fitted = P.FITS[e["function"]](got, calls) if e["function"] in P.FITS else []
                v = next(v for v in variants + fitted if v.id == claim["part"])
                tested = [
                    (i, k)
                    for i, c in enumerate(calls)
                    for k, r in enumerate(c.ref())
                    if v.outs(i, c) is not None and not P._close(v.outs(i, c)[k], r)
                ]
                assert not all(P._close(got[i][k], v.outs(i, calls[i])[k]) for i, k in tested), (e["id"], claim)


@pytest.mark.parametrize("folder", CORRECT, ids=lambda p: p.name)
def test_correct_variants_get_nothing(folder):
    from autograder.load import find_files, load_submission

    sub = load_submission(folder)
    for ex in D.PROBES:  # every exercise: the form of the calls is compared in all of them
        st = Student(sub, [str(p) for p in find_files(folder)], ex)
        by_part = {}
        try:
            D.diagnose(st, ex, list(D.PROBES[ex]), by_part=by_part)
        except Exception:  # noqa: BLE001 - a folder without this exercise's functions
            continue
        assert not by_part, (folder.name, ex, by_part)


TWO_DEFECTS = [
    (
        "recurrent",
        """
_ref_lstm = lstm_cell
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = _ref_lstm(x, state, W_ih, W_hh, b_ih, b_ih)
    return h * 1.01, c
""",
        {"b_hh<-b_ih"},
    ),
    (
        "recurrent",
        """
_ref_gru = gru_cell
def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    b = b_hh.clone()
    b[:b.shape[0] // 3] = 0
    return _ref_gru(x, h, W_ih * 0.9, W_hh, b_ih, b)
""",
        set(),
    ),
    (
        "masks",
        """
def causal_mask(T, device=None):
    m = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    m[:, -1] = True
    m[-1, :] = False
    return m
""",
        set(),
    ),
    (
        "masked_loss",
        """
def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    return F.cross_entropy(logits[mask] * 1.1, targets[mask], reduction="sum") / (mask.sum() + 1)
""",
        set(),
    ),
    (
        "recurrent",
        """
_seq = lstm_sequence
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    if state is not None:
        state = (state[0], torch.zeros_like(state[1]))
    out, (h, c) = _seq(X, lengths, W_ih, W_hh, b_ih, b_hh, state)
    return out, (h, c + 0.01)
""",
        set(),
    ),
]


def _noise(function, exercise):
    """The reference's `function` with seeded noise added to what it returns (flipped entries of a mask)."""
    if function == "MultiHeadAttention":
        return """
_Orig = MultiHeadAttention
def _n(t):
    return 0.01 * torch.randn(t.shape, dtype=t.dtype)
class MultiHeadAttention(_Orig):
    def forward(self, *args, **kwargs):
        torch.manual_seed(0)
        o, w = super().forward(*args, **kwargs)
        return o + _n(o), w + _n(w)
"""
    wrap = {
        "lstm_cell": "h, c = out\n    return h + _n(h), c + _n(c)",
        "gru_cell": "return out + _n(out)",
        "lstm_sequence": "o, (h, c) = out\n    return o + _n(o), (h + _n(h), c)",
        "masked_cross_entropy": "return out + 0.01 * torch.rand(()).item()",
        "sinusoidal_encoding": "return out + _n(out)",
        "causal_mask": "return out ^ (torch.rand(out.shape) < 0.2)",
        "padding_mask": "return out ^ (torch.rand(out.shape) < 0.2)",
        "attention_mask": "return out ^ (torch.rand(out.shape) < 0.2)",
        "apply_rope": "return out + _n(out)",
        "scaled_dot_product_attention": "o, w = out\n    return o + _n(o), w + _n(w)",
        "sliding_windows": "X, y = out\n    return X + _n(X), y + _n(y)",
        "make_datasets": "return tuple(o + _n(o) for o in out)",
        "tiny_lm_loss": "return out + 0.01 * torch.rand(()).item()",
        "mlm_mask": "i, l = out\n    r = torch.rand(i.shape) < 0.01\n"
        "    return torch.where(r, torch.randint(0, 200, i.shape), i), "
        "torch.where(torch.rand(l.shape) < 0.01, torch.randint(0, 200, l.shape), l)",
        "make_ablation": "for c in out:\n        c['train']['lr'] += 0.01 * torch.rand(()).item()\n    return out",
        "run_ablation": "for row in out:\n        for r in row:\n"
        "            r['test_accuracy'] += 0.01 * torch.rand(()).item()\n    return out",
    }[function]
    return f"""
_orig = {function}
def _n(t):
    return 0.01 * torch.randn(t.shape, dtype=t.dtype)
def {function}(*args, **kwargs):
    torch.manual_seed(0)
    out = _orig(*args, **kwargs)
    {wrap}
"""


def test_two_defects_or_noise_never_get_a_wrong_part():
    for ex, code, allowed in TWO_DEFECTS:
        _, by_part = _run(ex, code)
        said = {c["part"] for v in by_part.values() for c in v}
        assert said <= allowed, (code, by_part)
        for v in by_part.values():
            for c in v:
                assert "else_en" in c  # the second defect is said to be there too
    for ex, functions in P.FUNCTIONS.items():
        for f in functions:
            if f == "add_positional_encoding":
                continue
            _, by_part = _run(ex, _noise(f, ex), [f])
            claims = by_part.get(f, [])
            if f == "lstm_sequence":  # the noise spares c_n: that much is true, and all that is said
                assert [c["part"] for c in claims] == ["outputs outputs, h_n"], claims
                continue
            claims = [c for c in claims if c["part"] != "near"]  # a small difference, said as its size: true
            # noise on every column and position leaves nothing narrower to say
            assert not claims, (f, claims)


def test_a_second_defect_elsewhere_is_said_too():
    """A claimed part whose calls the second defect leaves alone is said, and so is the rest:
    something else differs as well (here in calls given no initial state, which the part's
    experiment does not test)."""
    code = (
        SEQ_IGNORES_C0
        + """
_seq2 = lstm_sequence
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    out, (h, c) = _seq2(X, lengths, W_ih, W_hh, b_ih, b_hh, state)
    return (out, (h + 1.0, c)) if state is None else (out, (h, c))
"""
    )
    claim = _said("recurrent", code, "lstm_sequence", "c0 被忽略", "c0 you are given is ignored", complete=False)
    assert claim["else_zh"] == "另外还有别的不同之处。" and claim["else_en"] == "Something else differs as well."
    code = (
        PADDING_FIRST_ALWAYS
        + """
_pm2 = padding_mask
def padding_mask(lengths, max_len=None):
    m = _pm2(lengths, max_len)
    return ~m if len(lengths) == 1 else m
"""
    )
    _said(
        "masks",
        code,
        "padding_mask",
        "第一个位置 (t == 0)",
        "the first position (t == 0) all set to True",
        complete=False,
    )


def test_never_runs_when_everything_passes():
    st = Student(Namespace(reference_with("recurrent")), (), "recurrent")
    outcomes = {"a": {"status": "passed"}}
    assert D.diagnose_outcomes(st, "recurrent", outcomes, lambda n: "lstm_cell") == {}
    assert "explained_by_part" not in outcomes["a"]


def test_diagnose_outcomes_attaches_the_part_to_failed_tests():
    st = Student(Namespace(reference_with("masked_loss", LOSS_COUNT_PLUS_ONE)), (), "masked_loss")
    outcomes = {"x": {"status": "failed"}, "y": {"status": "passed"}}
    D.diagnose_outcomes(st, "masked_loss", outcomes, lambda n: "masked_cross_entropy")
    assert "number of valid tokens + 1" in outcomes["x"]["explained_by_part"][0]["en"]
    assert "explained_by_part" not in outcomes["y"] and "diagnosis" not in outcomes["x"]


def test_heldout_functions_named_nothing_now_get_a_part():
    """Of tests/heldout_multi.py's functions the diagnosis names nothing in, those in the four
    exercises explained by part get a part where it is supported: at least two of them."""
    n = 0
    for case in CASES:
        if case.kind == "correct" or case.exercise not in P.FUNCTIONS:
            continue
        ns = {"__name__": f"heldout_{case.name}"}
        exec(compile(case.source, f"<{case.name}>", "exec"), ns)  # noqa: S102 - the repository's own test data
        by_part = {}
        found = D.diagnose(
            Student(Namespace(ns), (), case.exercise), case.exercise, list(D.PROBES[case.exercise]), by_part=by_part
        )
        if not any(found.values()):
            n += bool(by_part)
    assert n >= 2


# ---------------------------------------------------------------- the reports


def _report():
    claim = {
        "function": "masked_cross_entropy",
        "part": "valid/valid+1",
        "zh": "你的损失等于有效词元的交叉熵之和除以有效词元数 + 1",
        "en": "your loss equals the sum of the cross-entropy over the valid tokens, divided by the number of "
        "valid tokens + 1",
        "probe": "masked_cross_entropy(logits 2×4×5, targets, mask=[[1, 1, 1, 0]])",
    }
    t = TestResult(
        name="masked_loss/masked_cross_entropy/matches",
        function="masked_cross_entropy",
        score=0.0,
        max_score=2.0,
        passed=False,
        feedback="",
        status="failed",
        property_zh="等于参考",
        property_en="equals the reference",
        explained_by_part=[claim],
    )
    return Report(
        submission="s.py", score=0.0, max_score=2.0, exercises=[ExerciseResult("masked_loss", 0.0, 2.0, [t])]
    ), claim


def test_every_renderer_says_the_part_in_both_languages():
    report, claim = _report()
    assert report.to_dict()["exercises"][0]["tests"][0]["explained_by_part"] == [claim]
    for text in (
        render_text(report, "both"),
        render_markdown(report, "both"),
        render_rich_text(report, "both", 200),
        feedback_text(report.exercises[0].tests[0], "both"),
        parts_html(report.exercises[0].tests[0].explained_by_part, "both"),
    ):
        assert "哪一部分不同" in text and "Which part differs" in text, text
        assert "有效词元数 + 1" in text and "number of valid tokens + 1" in text
        assert "masked_cross_entropy(logits 2×4×5" in text
    zh = render_text(report, "zh")
    assert "有效词元数 + 1" in zh and "valid tokens + 1" not in zh
    en = render_text(report, "en")
    assert "valid tokens + 1" in en and "有效" not in en


def test_end_to_end_through_the_sandbox(tmp_path):
    """Graded through the real runner (a forked judge, the student's code in its worker): the
    explanation comes back with the failed tests, in the JSON and in the report's text."""
    from autograder.config import load_course
    from autograder.grading import grade
    from autograder.judge import ForkRunner

    course = load_course()
    sub = tmp_path / "masked_loss.py"
    sub.write_text((ROOT / "solutions" / "masked_loss.py").read_text(encoding="utf-8") + "\n" + LOSS_COUNT_PLUS_ONE)
    report = grade(sub, course, ForkRunner(course), exercises=["masked_loss"])
    failed = [t for ex in report.exercises for t in ex.tests if not t.passed]
    assert failed and not any(t.diagnosis for t in failed)
    said = [t.explained_by_part for t in failed if t.explained_by_part]
    assert said and "number of valid tokens + 1" in said[0][0]["en"]
    assert "有效词元数 + 1" in render_text(report) and "Which part differs" in render_text(report)


# ---------------------------------------------------------------- an input written in place: which one

LOSS_WRITES_TARGETS = """
def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    V = logits.shape[-1]
    targets[~mask] = 0
    per_token = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), reduction="none")
    return (per_token.reshape(mask.shape) * mask).sum() / mask.sum()
"""

LOSS_FILLS_TARGETS = """
def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    t = targets.masked_fill_(~mask, -100)
    return F.cross_entropy(logits.flatten(0, 1), t.flatten(), ignore_index=-100)
"""

SDPA_SCALES_K_IN_PLACE = """
def scaled_dot_product_attention(Q, K, V, mask=None):
    K.div_(math.sqrt(K.shape[-1]))
    scores = Q @ K.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ V, weights
"""

LSTM_UPDATES_H_IN_PLACE = """
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = state
    i, f, g, o = (x @ W_ih.T + b_ih + h @ W_hh.T + b_hh).chunk(4, dim=-1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return h.copy_(torch.sigmoid(o) * torch.tanh(c_new)), c_new
"""

SEQ_WRITES_X = """
_seq_right = lstm_sequence
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    X.add_(0.0).mul_(2.0)
    return _seq_right(X / 2, lengths, W_ih, W_hh, b_ih, b_hh, state)
"""


@pytest.mark.parametrize(
    "exercise, code, function, arg",
    [
        ("masked_loss", LOSS_WRITES_TARGETS, "masked_cross_entropy", "targets"),
        ("masked_loss", LOSS_FILLS_TARGETS, "masked_cross_entropy", "targets"),
        ("attention", SDPA_SCALES_K_IN_PLACE, "scaled_dot_product_attention", "K"),
        ("recurrent", LSTM_UPDATES_H_IN_PLACE, "lstm_cell", "state[0]"),
        ("recurrent", SEQ_WRITES_X, "lstm_sequence", "X"),
    ],
)
def test_an_input_written_in_place_is_not_named_after_another_argument(exercise, code, function, arg):
    """A catalogued in-place mistake writes into one argument (logits, Q, the mask, c, base); a
    function writing into another one is not that mistake: the argument it wrote into is said."""
    named, by_part = _run(exercise, code, [function])
    assert not named, named
    said = [c for c in by_part[function] if c["part"] == f"form:inplace:{arg}"]
    assert said and f"原地修改了它的参数 `{arg}`" in said[0]["zh"], by_part
    assert f"writes into its argument `{arg}` in place" in said[0]["en"], by_part


def test_catalogued_in_place_mistakes_keep_their_names():
    for exercise in ("masked_loss", "attention", "recurrent", "positional_encoding", "ablation"):
        for _, entry in load_catalogue(exercise):
            if "in_place" in entry["id"] and entry.get("diagnosis", True):
                named, _ = _run(exercise, entry["code"], [entry["function"]])
                assert named == {entry["function"]: [entry["id"]]}, (entry["id"], named)


def test_the_argument_written_is_known_through_the_sandbox(tmp_path):
    from .conftest import remote_student

    src = (ROOT / "solutions" / "masked_loss.py").read_text(encoding="utf-8") + LOSS_WRITES_TARGETS
    zygote, st = remote_student(tmp_path / "sub.py", src, "masked_loss")
    try:
        by_part = {}
        found = D.diagnose(st, "masked_loss", ["masked_cross_entropy"], by_part=by_part)
    finally:
        zygote.close()
    assert not found["masked_cross_entropy"], found
    [claim] = by_part["masked_cross_entropy"]
    assert "writes into its argument `targets` in place" in claim["en"], claim


# ---------------------------------------------------------------- mlm_mask: facts of a random function

MLM_LAST_SPECIAL_ONLY = """
def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    selected = (torch.rand(input_ids.shape, generator=g) < 0.15) & (input_ids != special_ids[-1])
    u = torch.rand(input_ids.shape, generator=g)
    other = torch.randint(0, vocab_size, input_ids.shape, generator=g)
    inputs = input_ids.clone()
    inputs[selected & (u < 0.8)] = mask_id
    swap = selected & (u >= 0.8) & (u < 0.9)
    inputs[swap] = other[swap]
    return inputs, torch.where(selected, input_ids, torch.full_like(input_ids, -100))
"""

MLM_SPECIALS_BUT_PAD = """
def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    labels = torch.full_like(input_ids, -100)
    inputs = input_ids.clone()
    pick = (torch.rand(input_ids.shape, generator=g) < 0.15) & (input_ids != 0)
    for b, t in pick.nonzero().tolist():
        labels[b, t] = input_ids[b, t]
        u = torch.rand((), generator=g).item()
        if u < 0.8:
            inputs[b, t] = mask_id
        elif u < 0.9:
            inputs[b, t] = int(torch.randint(vocab_size, (), generator=g))
    return inputs, labels
"""

MLM_UNSELECTED_MINUS_ONE = """
def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    special = torch.isin(input_ids, torch.tensor(special_ids))
    draw = torch.rand(input_ids.shape, generator=g)
    kind = torch.rand(input_ids.shape, generator=g)
    rand_tok = torch.randint(vocab_size, input_ids.shape, generator=g)
    chosen = (draw < 0.15) & ~special
    inputs = torch.where(chosen & (kind < 0.8), mask_id, input_ids)
    inputs = torch.where(chosen & (kind >= 0.8) & (kind < 0.9), rand_tok, inputs)
    return inputs, torch.where(chosen, input_ids, -1)
"""

MLM_RATES_70_20_10 = """
def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    g = torch.Generator().manual_seed(seed)
    sel = (torch.rand(input_ids.shape, generator=g) < 0.15) & ~special_tokens_mask(input_ids, special_ids)
    u = torch.rand(input_ids.shape, generator=g)
    rnd = torch.randint(0, vocab_size, input_ids.shape, generator=g)
    out = torch.where(sel & (u < 0.7), torch.full_like(input_ids, mask_id), input_ids)
    out = torch.where(sel & (u >= 0.7) & (u < 0.9), rnd, out)
    return out, torch.where(sel, input_ids, torch.full_like(input_ids, -100))
"""


@pytest.mark.parametrize(
    "code, zh, en",
    [
        (
            MLM_LAST_SPECIAL_ONLY,
            "特殊词元 [PAD] 0, [CLS] 101, [SEP] 102 会被选中或被替换",
            "the special tokens [PAD] 0, [CLS] 101, [SEP] 102 get selected or replaced",
        ),
        (
            MLM_SPECIALS_BUT_PAD,
            "特殊词元 [CLS] 101, [SEP] 102, [MASK] 103 会被选中或被替换",
            "still protected: [PAD] 0",
        ),
        (
            MLM_UNSELECTED_MINUS_ONE,
            "没有被选中的位置标签是 -1，应为 -100",
            "the positions not selected get the label -1, expected -100",
        ),
        (
            MLM_RATES_70_20_10,
            "约 70% 换成 [MASK]、19% 换成随机词元、10% 不变",
            "about 70% become [MASK], 19% a random token and 10% stay unchanged, expected 80% / 10% / 10%",
        ),
    ],
)
def test_mlm_mask_facts(code, zh, en):
    _said("bert_masking", code, "mlm_mask", zh, en)


def test_mlm_mask_catalogued_mistakes_keep_their_names_and_get_no_fact():
    for _, entry in load_catalogue("bert_masking"):
        if entry["function"] != "mlm_mask" or not entry.get("diagnosis", True):
            continue
        named, by_part = _run("bert_masking", entry["code"], ["mlm_mask"])
        if named:
            assert named == {"mlm_mask": [entry["id"]]}, (entry["id"], named)
        assert not by_part, (entry["id"], by_part)


# ---------------------------------------------------------------- ablation: shared configs, seeds

ABL_ONE_COPY_FOR_ALL = """
_make_right = make_ablation
def make_ablation(base, factor, values):
    _make_right(base, factor, values)  # its checks
    config = copy.deepcopy(base)
    *path, key = factor.split(".")
    node = config
    for k in path:
        node = node[k]
    out = []
    for v in values:
        node[key] = v
        out.append(config)
    return out
"""

ABL_NESTED_COPIED_ONCE = """
_make_right = make_ablation
def make_ablation(base, factor, values):
    _make_right(base, factor, values)
    *path, key = factor.split(".")
    inner = copy.deepcopy(base)
    out = []
    for v in values:
        config = dict(inner)
        node = config
        for k in path:
            node = node[k]
        node[key] = v
        out.append(config)
    return out
"""

ABL_SEED_NOT_SET = """
def run_ablation(base, factor, values, seeds):
    if factor == "seed" or not seeds or len(set(seeds)) != len(seeds):
        raise ValueError("bad arguments")
    return [[run_experiment(cfg) for _ in seeds] for cfg in make_ablation(base, factor, values)]
"""

ABL_SEED_PER_ARM_100 = """
def run_ablation(base, factor, values, seeds):
    if factor == "seed" or not seeds or len(set(seeds)) != len(seeds):
        raise ValueError("bad arguments")
    grid = []
    for arm, cfg in enumerate(make_ablation(base, factor, values)):
        grid.append([run_experiment(dict(cfg, seed=s + 100 * arm)) for s in seeds])
    return grid
"""


@pytest.mark.parametrize(
    "code, function, zh, en",
    [
        (ABL_ONE_COPY_FOR_ALL, "make_ablation", "返回的配置是同一个字典", "the configs returned are one dict"),
        (
            ABL_NESTED_COPIED_ONCE,
            "make_ablation",
            "配置之间共享放着 factor 的嵌套字典",
            "the configs share the nested dict holding the factor",
        ),
        (ABL_SEED_NOT_SET, "run_ablation", "每次重复都用了 base 的 seed 7", "every repeat runs with base's seed 7"),
        (ABL_SEED_PER_ARM_100, "run_ablation", "0.1: [102, 105]", "the arms run with different seeds"),
    ],
)
def test_ablation_facts(code, function, zh, en):
    _said("ablation", code, function, zh, en)


def test_ablation_identity_of_a_shared_nested_dict():
    """Configs whose values are each right but that hold one nested dict: the change made to one
    is seen in the other (the returned objects' identity, in this process)."""
    code = """
_make_right = make_ablation
def make_ablation(base, factor, values):
    configs = _make_right(base, factor, values)
    for c in configs[1:]:
        c["data"] = configs[0]["data"]
    return configs
"""
    _said(
        "ablation",
        code,
        "make_ablation",
        "两个返回的配置共用嵌套字典 `data`",
        "two configs returned share the nested dict `data`: a change to one shows in the other",
    )


def test_ablation_catalogued_mistakes_keep_their_names_and_get_no_fact():
    for _, entry in load_catalogue("ablation"):
        if entry["function"] not in ("make_ablation", "run_ablation") or not entry.get("diagnosis", True):
            continue
        named, by_part = _run("ablation", entry["code"], [entry["function"]])
        assert named == {entry["function"]: [entry["id"]]}, (entry["id"], named)
        assert not by_part, (entry["id"], by_part)
