"""The explanation by part (autograder/diagnose/parts.py): where no catalogued mistake is named, an
experiment on the student's function says which part of the computation differs -- and says
nothing when the experiment does not support a claim.

The wrong functions below are in no catalogue (autograder/catalogue/*.yml); each test checks the
part that is said, in both languages, and the careful tests check that two unrelated defects or
random noise never get a wrong claim.
"""
import pytest
import torch

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


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


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

LSTM_B_HH_AS_B_IH = '''
_ref_lstm = lstm_cell
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    return _ref_lstm(x, state, W_ih, W_hh, b_ih, b_ih)
'''

LSTM_FORGET_BIAS_TWICE = '''
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = state
    H = h.shape[1]
    gates = x @ W_ih.T + b_ih + h @ W_hh.T + b_hh
    gates = torch.cat([gates[:, :H], gates[:, H:2 * H] + b_hh[H:2 * H], gates[:, 2 * H:]], dim=1)
    i, f, g, o = gates.chunk(4, dim=-1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c_new), c_new
'''

LSTM_MINUS_RECURRENT = '''
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = state
    i, f, g, o = (x @ W_ih.T + b_ih - h @ W_hh.T + b_hh).chunk(4, dim=-1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c_new), c_new
'''

GRU_NO_B_HR = '''
_ref_gru = gru_cell
def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    b = b_hh.clone()
    b[:b.shape[0] // 3] = 0
    return _ref_gru(x, h, W_ih, W_hh, b_ih, b)
'''

GRU_NO_CARRY = '''
def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    x_r, x_z, x_n = (x @ W_ih.T + b_ih).chunk(3, dim=-1)
    h_r, h_z, h_n = (h @ W_hh.T + b_hh).chunk(3, dim=-1)
    r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
    return (1 - z) * torch.tanh(x_n + r * h_n)
'''


def test_cell_parts_are_said():
    _said("recurrent", LSTM_B_HH_AS_B_IH, "lstm_cell", "把 `b_hh` 换成 `b_ih` 时与参考一致",
          "your cell matches the reference when `b_hh` is replaced by `b_ih`")
    _said("recurrent", LSTM_FORGET_BIAS_TWICE, "lstm_cell", "`b_hh` 的 f 块乘以 2",
          "when the f block of `b_hh` is doubled")
    _said("recurrent", LSTM_MINUS_RECURRENT, "lstm_cell", "`W_hh` 取相反数", "the sign of `W_hh` is flipped")
    _said("recurrent", GRU_NO_B_HR, "gru_cell", "`b_hh` 的 r 块设为 0", "when the r block of `b_hh` is set to 0")
    _said("recurrent", GRU_NO_CARRY, "gru_cell", "z * h", "the carried term z * h is left out of h_new")


# ---------------------------------------------------------------- the sequence

SEQ_IGNORES_C0 = '''
_seq = lstm_sequence
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    if state is not None:
        state = (state[0], torch.zeros_like(state[1]))
    return _seq(X, lengths, W_ih, W_hh, b_ih, b_hh, state)
'''

SEQ_C_AT_T = '''
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
'''

SEQ_STATE_IN_PLACE = '''
_seq = lstm_sequence
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    out, (h, c) = _seq(X, lengths, W_ih, W_hh, b_ih, b_hh, state)
    if state is not None:
        state[0].copy_(h)
        state[1].copy_(c)
    return out, (h, c)
'''

SEQ_FINAL_ONE_EARLY = '''
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
'''


def test_sequence_parts_are_said():
    _said("recurrent", SEQ_IGNORES_C0, "lstm_sequence", "初始状态 c0 被忽略", "the initial state c0 you are given is ignored")
    _said("recurrent", SEQ_C_AT_T, "lstm_sequence", "c_n 在填充步也被更新",
          "c_n keep updating at padded steps: for the sequences shorter than T")
    _said("recurrent", SEQ_STATE_IN_PLACE, "lstm_sequence", "原地修改了传入的初始状态",
          "you write into the initial state (h0, c0) you are given, in place")
    _said("recurrent", SEQ_FINAL_ONE_EARLY, "lstm_sequence", "h_n, c_n 取早了一步", "h_n, c_n is taken one step early")


# ---------------------------------------------------------------- masks

CAUSAL_NEXT_KEY = '''
def causal_mask(T, device=None):
    return torch.ones(T, T, dtype=torch.bool, device=device).tril(1)
'''

CAUSAL_FIRST_COLUMN_BLOCKED = '''
def causal_mask(T, device=None):
    m = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    m[:, 0] = False
    return m
'''

PADDING_FIRST_ALWAYS = '''
_pm = padding_mask
def padding_mask(lengths, max_len=None):
    m = _pm(lengths, max_len).clone()
    m[:, 0] = True
    return m
'''

ATTENTION_PADDED_SELF = '''
_am = attention_mask
def attention_mask(lengths, max_len=None, causal=False):
    m = _am(lengths, max_len, causal).clone()
    T = m.shape[-1]
    eye = torch.eye(T, dtype=torch.bool)
    padded = torch.arange(T)[None, :] >= lengths[:, None]
    return m | (eye & padded[:, :, None])[:, None]
'''


def test_mask_parts_are_said():
    _said("masks", CAUSAL_NEXT_KEY, "causal_mask", "下一个位置 (j == i + 1)全部设为 True",
          "with the next key (j == i + 1) all set to True")
    _said("masks", CAUSAL_FIRST_COLUMN_BLOCKED, "causal_mask", "第一列 (j == 0)全部设为 False",
          "the first column (j == 0) all set to False")
    _said("masks", PADDING_FIRST_ALWAYS, "padding_mask", "第一个位置 (t == 0)全部设为 True",
          "the first position (t == 0) all set to True")
    _said("masks", ATTENTION_PADDED_SELF, "attention_mask", "填充查询行的对角线",
          "the diagonal of the padded query rows (i == j >= lengths[b]) all set to True")


# ---------------------------------------------------------------- the positional encoding

PE_COS_SCALED = '''
_se = sinusoidal_encoding
def sinusoidal_encoding(T, d, base=10000.0):
    pe = _se(T, d, base).clone()
    pe[:, 1::2] = pe[:, 1::2] * 1.5
    return pe
'''

PE_FIRST_ROW_ZERO = '''
_se = sinusoidal_encoding
def sinusoidal_encoding(T, d, base=10000.0):
    pe = _se(T, d, base).clone()
    pe[0] = 0.0
    return pe
'''

PE_HALF = '''
_se = sinusoidal_encoding
def sinusoidal_encoding(T, d, base=10000.0):
    return _se(T, d, base).half()
'''


def test_encoding_parts_are_said():
    _said("positional_encoding", PE_COS_SCALED, "sinusoidal_encoding", "只在奇数列（cos）",
          "your encoding differs from the reference only in the odd columns (cos)")
    named, by_part = _run("positional_encoding", PE_COS_SCALED)
    assert "odd columns (cos)" in by_part["add_positional_encoding"][0]["en"]  # what it adds, through the table
    _said("positional_encoding", PE_FIRST_ROW_ZERO, "sinusoidal_encoding", "奇数列（cos），而且只在位置 0",
          "only in the odd columns (cos), and only at position 0")
    named, by_part = _run("positional_encoding", PE_HALF, ["sinusoidal_encoding"])
    assert not named
    [claim] = by_part["sinusoidal_encoding"]
    assert "只有 dtype 不对" in claim["zh"] and "float16" in claim["en"] and "float32" in claim["en"]


# ---------------------------------------------------------------- the loss

LOSS_COUNT_PLUS_ONE = '''
def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    return F.cross_entropy(logits[mask], targets[mask], reduction="sum") / (mask.sum() + 1)
'''

LOSS_DIVIDED_BY_T = '''
def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    return F.cross_entropy(logits[mask], targets[mask], reduction="sum") / mask.shape[1]
'''

LOSS_SKIPS_LAST_VALID = '''
def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    last = mask & (mask.long().cumsum(1) == mask.sum(1, keepdim=True))
    keep = mask & ~last
    ce = F.cross_entropy(logits[keep], targets[keep], reduction="sum")
    return ce / mask.sum()
'''


def test_loss_parts_are_said():
    _said("masked_loss", LOSS_COUNT_PLUS_ONE, "masked_cross_entropy", "有效词元数 + 1",
          "over the valid tokens, divided by the number of valid tokens + 1")
    _said("masked_loss", LOSS_DIVIDED_BY_T, "masked_cross_entropy", "除以序列长度 T",
          "divided by the sequence length T")
    _said("masked_loss", LOSS_SKIPS_LAST_VALID, "masked_cross_entropy", "漏掉了每个序列最后一个",
          "over the valid tokens but the last one of each sequence, divided by the number of valid tokens")


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
                v = next(v for v in variants if v.id == claim["part"])
                mistake = Student(Namespace(ns), (), ex)
                got = P._student_outputs(mistake, calls, None)
                tested = [(i, k) for i, c in enumerate(calls) for k, r in enumerate(c.ref())
                          if v.outs(i, c) is not None and not P._close(v.outs(i, c)[k], r)]
                assert not all(P._close(got[i][k], v.outs(i, calls[i])[k]) for i, k in tested), (e["id"], claim)


@pytest.mark.parametrize("folder", CORRECT, ids=lambda p: p.name)
def test_correct_variants_get_nothing(folder):
    from autograder.load import find_files, load_submission

    sub = load_submission(folder)
    for ex in P.FUNCTIONS:
        st = Student(sub, [str(p) for p in find_files(folder)], ex)
        by_part = {}
        D.diagnose(st, ex, list(P.FUNCTIONS[ex]), by_part=by_part)
        assert not by_part, (folder.name, ex, by_part)


TWO_DEFECTS = [
    ("recurrent", '''
_ref_lstm = lstm_cell
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h, c = _ref_lstm(x, state, W_ih, W_hh, b_ih, b_ih)
    return h * 1.01, c
''', {"b_hh<-b_ih"}),
    ("recurrent", '''
_ref_gru = gru_cell
def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    b = b_hh.clone()
    b[:b.shape[0] // 3] = 0
    return _ref_gru(x, h, W_ih * 0.9, W_hh, b_ih, b)
''', set()),
    ("masks", '''
def causal_mask(T, device=None):
    m = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    m[:, -1] = True
    m[-1, :] = False
    return m
''', set()),
    ("masked_loss", '''
def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("no valid token")
    return F.cross_entropy(logits[mask] * 1.1, targets[mask], reduction="sum") / (mask.sum() + 1)
''', set()),
    ("recurrent", '''
_seq = lstm_sequence
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    if state is not None:
        state = (state[0], torch.zeros_like(state[1]))
    out, (h, c) = _seq(X, lengths, W_ih, W_hh, b_ih, b_hh, state)
    return out, (h, c + 0.01)
''', set()),
]


def _noise(function, exercise):
    """The reference's `function` with seeded noise added to what it returns (flipped entries of a mask)."""
    wrap = {"lstm_cell": "h, c = out\n    return h + _n(h), c + _n(c)",
            "gru_cell": "return out + _n(out)",
            "lstm_sequence": "o, (h, c) = out\n    return o + _n(o), (h + _n(h), c)",
            "masked_cross_entropy": "return out + 0.01 * torch.rand(()).item()",
            "sinusoidal_encoding": "return out + _n(out)",
            "causal_mask": "return out ^ (torch.rand(out.shape) < 0.2)",
            "padding_mask": "return out ^ (torch.rand(out.shape) < 0.2)",
            "attention_mask": "return out ^ (torch.rand(out.shape) < 0.2)"}[function]
    return f'''
_orig = {function}
def _n(t):
    return 0.01 * torch.randn(t.shape, dtype=t.dtype)
def {function}(*args, **kwargs):
    torch.manual_seed(0)
    out = _orig(*args, **kwargs)
    {wrap}
'''


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
            # noise on every column and position leaves nothing narrower to say
            assert not claims, (f, claims)


def test_a_second_defect_elsewhere_is_said_too():
    """A claimed part whose calls the second defect leaves alone is said, and so is the rest:
    something else differs as well (here in calls given no initial state, which the part's
    experiment does not test)."""
    code = SEQ_IGNORES_C0 + '''
_seq2 = lstm_sequence
def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    out, (h, c) = _seq2(X, lengths, W_ih, W_hh, b_ih, b_hh, state)
    return (out, (h + 1.0, c)) if state is None else (out, (h, c))
'''
    claim = _said("recurrent", code, "lstm_sequence", "c0 被忽略", "c0 you are given is ignored", complete=False)
    assert claim["else_zh"] == "另外还有别的不同之处。" and claim["else_en"] == "Something else differs as well."
    code = PADDING_FIRST_ALWAYS + '''
_pm2 = padding_mask
def padding_mask(lengths, max_len=None):
    m = _pm2(lengths, max_len)
    return ~m if len(lengths) == 1 else m
'''
    _said("masks", code, "padding_mask", "第一个位置 (t == 0)", "the first position (t == 0) all set to True",
          complete=False)


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
        found = D.diagnose(Student(Namespace(ns), (), case.exercise), case.exercise,
                           list(D.PROBES[case.exercise]), by_part=by_part)
        if not any(found.values()):
            n += bool(by_part)
    assert n >= 2


# ---------------------------------------------------------------- the reports


def _report():
    claim = {"function": "masked_cross_entropy", "part": "valid/valid+1",
             "zh": "你的损失等于有效词元的交叉熵之和除以有效词元数 + 1",
             "en": "your loss equals the sum of the cross-entropy over the valid tokens, divided by the number of "
                   "valid tokens + 1", "probe": "masked_cross_entropy(logits 2×4×5, targets, mask=[[1, 1, 1, 0]])"}
    t = TestResult(name="masked_loss/masked_cross_entropy/matches", function="masked_cross_entropy", score=0.0,
                   max_score=2.0, passed=False, feedback="", status="failed", property_zh="等于参考",
                   property_en="equals the reference", explained_by_part=[claim])
    return Report(submission="s.py", score=0.0, max_score=2.0,
                  exercises=[ExerciseResult("masked_loss", 0.0, 2.0, [t])]), claim


def test_every_renderer_says_the_part_in_both_languages():
    report, claim = _report()
    assert report.to_dict()["exercises"][0]["tests"][0]["explained_by_part"] == [claim]
    for text in (render_text(report, "both"), render_markdown(report, "both"), render_rich_text(report, "both", 200),
                 feedback_text(report.exercises[0].tests[0], "both"),
                 parts_html(report.exercises[0].tests[0].explained_by_part, "both")):
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
    from autograder.sandbox import ForkRunner

    course = load_course()
    sub = tmp_path / "masked_loss.py"
    sub.write_text((ROOT / "solutions" / "masked_loss.py").read_text(encoding="utf-8") + "\n" + LOSS_COUNT_PLUS_ONE)
    report = grade(sub, course, ForkRunner(course), exercises=["masked_loss"])
    failed = [t for ex in report.exercises for t in ex.tests if not t.passed]
    assert failed and not any(t.diagnosis for t in failed)
    said = [t.explained_by_part for t in failed if t.explained_by_part]
    assert said and "number of valid tokens + 1" in said[0][0]["en"]
    assert "有效词元数 + 1" in render_text(report) and "Which part differs" in render_text(report)
