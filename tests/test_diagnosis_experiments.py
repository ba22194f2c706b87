"""Explanations found by experiment for mistakes the catalogue does not hold: the simple change of
the reference that reproduces the student's outputs (a scale and what it equals, a constant read off
the outputs, a clamp, a precision, an ignored class), the condition under which the function is
wrong (lengths unsorted, a sequence past some step, a second call of one module, scores far below
0, randomness), which outputs differ, and the part at fault being another function.

Every wrong function below is written for this file and is in no catalogue; the claims are checked
word for word in both languages, and the correct variants get none (tests/test_diagnosis_parts.py).
"""

import pytest

from autograder import diagnose as D
from autograder.diagnose.engine import elsewhere_hint
from autograder.properties._harness import Student

from .conftest import Namespace, reference_with

pytestmark = pytest.mark.usefixtures("one_thread")


def _claims(exercise, code, function):
    st = Student(Namespace(reference_with(exercise, code)), (), exercise)
    by_part = {}
    found = D.diagnose(st, exercise, [function], by_part=by_part)
    assert not any(found.values()), found
    return by_part.get(function, [])


def _said(exercise, code, function, zh, en, probe=None, complete=True):
    claims = _claims(exercise, code, function)
    assert len(claims) == 1, claims
    [claim] = claims
    assert zh in claim["zh"] and en in claim["en"], claim
    assert ("else_en" not in claim) == complete, claim
    if probe is not None:
        assert probe in claim["probe"], claim
    return claim


LOSS = """
import torch.nn.functional as F
def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    return {body}
"""

CASES_LOSS = [
    (
        "F.cross_entropy(logits[mask], targets[mask], label_smoothing=0.2)",
        "label_smoothing=0.2",
        "label_smoothing=0.2: (1 - 0.2)·CE",
    ),
    ("F.cross_entropy(logits[mask].clamp(-20, 20), targets[mask])", "截断到 [-20, 20]", "clamped to [-20, 20] first"),
    ("F.cross_entropy(logits[mask].bfloat16(), targets[mask]).float()", "用 bfloat16 计算", "computed in bfloat16"),
    (
        "F.cross_entropy(logits[mask], targets[mask], ignore_index=1)",
        "目标为类别 1 的词元排除在外（像 ignore_index=1）",
        "target is class 1 left out (as ignore_index=1 does)",
    ),
]


@pytest.mark.parametrize("body, zh, en", CASES_LOSS, ids=["smoothing", "clamp", "bfloat16", "ignore_index"])
def test_a_loss_with_one_constant_changed_is_said_with_the_constant(body, zh, en):
    _said("masked_loss", LOSS.format(body=body), "masked_cross_entropy", zh, en)


SDPA = """
import math
def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / ({scale})
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    if mask is not None:
        w = w.masked_fill(~mask, 0.0)
    return w @ V, w
"""


@pytest.mark.parametrize(
    "scale, zh, en",
    [
        ("math.sqrt(K.shape[-2])", "键的个数的平方根 sqrt(Tk)", "the square root of the number of keys, sqrt(Tk)"),
        ("math.sqrt(Q.shape[-2])", "查询个数的平方根 sqrt(Tq)", "the square root of the number of queries, sqrt(Tq)"),
        ("math.sqrt(Q.shape[-1]) * 1.5", "再除以 1.5", "further divided by 1.5"),
    ],
    ids=["sqrt_Tk", "sqrt_Tq", "temperature"],
)
def test_an_attention_scale_is_said_with_what_it_equals(scale, zh, en):
    _said("attention", SDPA.format(scale=scale), "scaled_dot_product_attention", zh, en)


HAND_SOFTMAX = """
def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5
    {fill}
    e = {exp}
    if mask is not None:
        e = e * mask
    w = e / e.sum(-1, keepdim=True).clamp_min(1e-30)
    return w @ V, w
"""


def test_attention_wrong_only_for_scores_far_below_zero_says_the_condition():
    code = HAND_SOFTMAX.format(
        fill='scores = scores.masked_fill(~mask, float("-inf")) if mask is not None else scores',
        exp="torch.exp(scores.clamp(max=80))  # no max subtracted: exp underflows for rows far below 0",
    )
    _said(
        "attention",
        code,
        "scaled_dot_product_attention",
        "一行里所有分数都远小于 0 时出错（探针里最多 -450",
        "every score of a row is far below 0 (at most -450 in the probe",
    )


def test_a_module_that_keeps_state_between_calls_is_said_so():
    code = """
_Ref = MultiHeadAttention
class MultiHeadAttention(_Ref):
    def forward(self, x_q, x_kv, mask=None):
        self.seen = getattr(self, "seen", 0) + 1
        out, w = super().forward(x_q, x_kv, mask)
        return out * (1.0 if self.seen == 1 else 0.5), w  # a running statistic left in from training code
"""
    _said(
        "attention",
        code,
        "MultiHeadAttention",
        "之后用别的输入再调用时出错（3 / 3 个探针）",
        "a wrong one on a later call with other inputs (3 of 3 probes)",
        probe="after .forward(",
    )


def test_a_module_answering_one_call_two_ways_is_said_so():
    code = """
_Ref = MultiHeadAttention
class MultiHeadAttention(_Ref):
    def forward(self, x_q, x_kv, mask=None):
        out, w = super().forward(x_q, x_kv, mask)
        return torch.nn.functional.dropout(out, 0.2, training=True), w
"""
    _said(
        "attention",
        code,
        "MultiHeadAttention",
        "用同样的输入、同样的权重调用两次，结果不同",
        "gives different results when called twice with the same inputs and weights",
    )


def _module_test(code):
    st = Student(Namespace(reference_with("attention", code)), (), "attention")
    outcomes = {"t": {"status": "failed", "hint_zh": "检查 W_q", "hint_en": "check W_q and W_k, the head split"}}
    D.diagnose_outcomes(st, "attention", outcomes, lambda n: "MultiHeadAttention")
    o = outcomes["t"]
    assert "scaled_dot_product_attention" in o["hint_en"] and "W_q and W_k" not in o["hint_en"], o
    assert "scaled_dot_product_attention" in o["hint_zh"] and "检查 W_q" not in o["hint_zh"], o
    return o


def test_a_wrong_attention_function_inside_the_module_points_there_and_replaces_the_hint():
    code = SDPA.format(scale="math.sqrt(K.shape[-2])")  # a mistake of the attention function alone
    claim = _said(
        "attention",
        code,
        "MultiHeadAttention",
        "差别来自 `scaled_dot_product_attention`",
        "the difference comes from `scaled_dot_product_attention`; W_q, W_k, W_v, W_o and the heads are right",
    )
    assert _module_test(code)["explained_by_part"] == [claim]


def test_a_catalogued_attention_mistake_named_on_the_module_replaces_its_hint_too():
    o = _module_test(SDPA.format(scale="Q.shape[-1]"))  # scaled by dk: catalogued
    assert [d["function"] for d in o["diagnosis"]] == ["scaled_dot_product_attention"]


def test_a_hint_stays_when_the_part_at_fault_is_the_tests_own_function():
    assert elsewhere_hint("MultiHeadAttention", [{"function": "MultiHeadAttention"}], []) == {}
    assert elsewhere_hint("lstm_sequence", [], [{"function": "lstm_sequence", "en": "x", "zh": "x"}]) == {}
    assert elsewhere_hint("attention_mask", [{"function": "padding_mask"}], [])["hint_elsewhere"]


SEQ = """
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    B, T, _ = X.shape
    d_h = W_hh.shape[1]
    h0 = X.new_zeros(B, d_h) if state is None else state[0]
    c0 = X.new_zeros(B, d_h) if state is None else state[1]
    h, c = h0, c0
    outs = []
    for t in range(T):
        {reset}
        hn, cn = lstm_cell(X[:, t], (h, c), W_ih, W_hh, b_ih, b_hh)
        v = (t < lengths)[:, None]
        h, c = torch.where(v, hn, h), torch.where(v, cn, c)
        outs.append(torch.where(v, hn, torch.zeros_like(hn)))
    {final}
    return torch.stack(outs, 1), (h, c)
"""


def test_a_sequence_wrong_past_some_step_says_the_step():
    code = SEQ.format(reset="if t == 100: h = h * 0.5", final="")
    _said(
        "recurrent",
        code,
        "lstm_sequence",
        "在第 100 步第一次出错",
        "the first 100 steps (0 to 100 - 1) are right and it first goes wrong at step 100",
        probe="lstm_sequence(X 2×150×2",
    )


def test_a_sequence_right_only_for_sorted_lengths_says_so():
    code = SEQ.format(
        reset="",
        final="""
    if bool((lengths[1:] > lengths[:-1]).any()):  # an unsorted batch: the states come back in sorted order
        order = torch.argsort(lengths, descending=True)
        h, c = h[order], c[order]""",
    )
    _said(
        "recurrent",
        code,
        "lstm_sequence",
        "从长到短排好序的批次上都是对的，在没排序的批次上出错（4 / 4 个探针）",
        "right on every batch whose lengths come sorted from longest to shortest and wrong on batches whose "
        "lengths do not (4 of 4 probes)",
    )


def test_which_outputs_differ_is_said_when_nothing_else_fits():
    code = SEQ.format(reset="", final="c = torch.tanh(c)")
    _said(
        "recurrent",
        code,
        "lstm_sequence",
        "返回的 outputs, h_n 是对的，只有 c_n 与参考不同",
        "returns outputs, h_n right; only c_n differ",
    )


def test_a_table_of_fixed_length_says_where_it_ends():
    pe = """
_ref_pe = sinusoidal_encoding
def sinusoidal_encoding(T, d, base=10000.0):
    table = _ref_pe(max(T, 120), d, base)
    table[120:] = 0  # a table of 120 positions, padded with zeros
    return table[:T]
"""
    _said(
        "positional_encoding",
        pe,
        "sinusoidal_encoding",
        "在 T = 120 时是对的，在 T = 121",
        "right at T = 120 and wrong, or failing, at T = 121",
    )
    rope = """
def apply_rope(x, offset=0, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    angle = rope_angles(T, d, offset, base).double()
    if T > 90:
        angle[90:] = angle[89]  # the angles stop growing after 90 positions
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)
"""
    _said("rope", rope, "apply_rope", "在位置 90 第一次出错", "first goes wrong at position 90")


def test_masks_right_only_up_to_some_size_say_the_size():
    causal = """
_BLOCK = torch.ones(80, 80, dtype=torch.bool).tril()
def causal_mask(T, device=None):
    if T <= 80:
        return _BLOCK[:T, :T].to(device)
    m = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    m[80:, :] = True  # past the block: every key allowed
    return m
"""
    _said("masks", causal, "causal_mask", "在位置 80 第一次出错", "first goes wrong at position 80")
    padding = """
_ref_padding = padding_mask
def padding_mask(lengths, max_len=None):
    m = _ref_padding(lengths, max_len)
    m[20:] = True  # the rows past a batch of 20: taken as full
    return m
"""
    _said("masks", padding, "padding_mask", "在第 20 个序列（从 0 数）第一次出错", "first goes wrong at sequence 20")


def test_a_swapped_pair_is_said():
    _said(
        "recurrent",
        SEQ.format(reset="", final="h, c = c, h"),
        "lstm_sequence",
        "把 h_n 和 c_n 对调",
        "h_n and c_n returned in each other's place",
    )
    module = """
_Ref = MultiHeadAttention
class MultiHeadAttention(_Ref):
    def forward(self, x_q, x_kv, mask=None):
        return super().forward(x_kv, x_q, mask)
"""
    # with a mask of (Tq, Tk) the swapped call fails too: something else is said to differ
    _said(
        "attention",
        module,
        "MultiHeadAttention",
        "输入 x_q 和 x_kv 对调",
        "the inputs x_q and x_kv swapped",
        complete=False,
    )


def test_a_small_difference_everywhere_is_said_with_its_size():
    code = LOSS.format(
        body="""(-F.log_softmax(logits[mask].half(), -1).gather(-1, targets[mask][:, None])).sum().float() \\
        / mask.sum()"""
    )
    claim = _said("masked_loss", code, "masked_cross_entropy", "最大的相对差是", "the largest relative difference is")
    size = float(claim["en"].split("difference is ")[1].split(" ")[0])
    assert 1e-4 < size < 1e-2, claim


def test_a_table_too_short_for_an_add_is_bisected_to_its_length():
    code = """
_ref_pe = sinusoidal_encoding
def add_positional_encoding(X):
    B, T, d = X.shape
    return X + _ref_pe(111, d)[:T].to(X)  # fails past 111 positions
"""
    _said(
        "positional_encoding",
        code,
        "add_positional_encoding",
        "在 T = 111 时是对的，在 T = 112",
        "right at T = 111 and wrong, or failing, at T = 112",
    )


def test_masked_keys_far_above_the_allowed_ones_say_the_condition():
    code = HAND_SOFTMAX.format(
        fill="", exp="torch.exp(scores - scores.amax(-1, keepdim=True))  # the maximum over every key"
    )
    _said(
        "attention",
        code,
        "scaled_dot_product_attention",
        "当被屏蔽键的分数远高于可看键时出错",
        "wrong when they are (2 of 2 probes)",
    )
