"""Held-out submissions for the diagnosis, generated: functions with two defects, and catalogued
mistakes written another way.  tests/test_diagnosis.py grades them in-process.

Written before the diagnosis that explains deviations (autograder/diagnose/), as a student would
write them and never from the matcher's code: each exercise has its own student-style templates
(loops, einsum, F.linear, Python lists, bernoulli chains...) in which a knob swaps one line for a
wrong one.  A knob's wrong line is either a catalogued mistake, written the student's way (the
expected name is its catalogue id, or its group's id), or a defect that is in no catalogue
("uncatalogued", expected to get no name of its own).  Nothing here is read by the diagnosis.

Kinds of case:

* ``pair``   two catalogued mistakes, mostly in one function (wrong value and no ValueError, a
             wrong reduction and NaN at padding...); the diagnosis should name both, and may name
             only one, never a third;
* ``plus``   a catalogued mistake and an uncatalogued defect; the catalogued one should be named
             and nothing else;
* ``other``  one catalogued mistake written another way (-1e9 for -inf, ~tril() for triu(),
             an in-place division under torch.no_grad(), a polar rotation...);
* ``part``   tiny_lm with a mistake in a pasted part (masks, positional_encoding, attention,
             masked_loss): named after the part's own catalogue entry;
* ``correct`` every template with no knob turned: it must get no name (a check of the templates).

CASES: [Case(name, exercise, source, expected ids, kind)].
"""

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    name: str
    exercise: str
    source: str
    expected: frozenset  # catalogue (group) ids that may be named; empty: nothing may be named
    kind: str  # pair | plus | other | part | correct


CASES = []


def fill(template, **slots):
    """The template with each <<SLOT>> replaced (its default, the correct line, when not given)."""
    out = textwrap.dedent(template)
    for key, value in slots.items():
        marker = f"<<{key}>>"
        assert marker in out, (key, template[:60])
        out = out.replace(marker, value.strip("\n"))
    assert "<<" not in out, out
    return out


def swap(src, old, new):
    """src with `old` (which must be there) replaced by `new`."""
    assert old in src, old
    return src.replace(old, new)


def add(name, exercise, kind, expected, source):
    CASES.append(Case(name, exercise, source, frozenset(expected), kind))


HEADER = "import math\n\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"


# ================================================================ masks

MASKS_LOOPS = (
    HEADER
    + """
def padding_mask(lengths, max_len=None):
    lens = [int(v) for v in lengths]
<<VALIDATE>>
    T = <<T>>
    out = torch.zeros(len(lens), T, dtype=torch.bool, device=lengths.device)
    for b, L in enumerate(lens):
        for t in range(T):
            out[b, t] = <<COND>>
    return out<<CAST>>


def causal_mask(T, device=None):
    m = torch.zeros(T, T, dtype=torch.bool, device=device)
    for i in range(T):
        for j in range(T):
            m[i, j] = <<CAUSAL>>
    return m<<CAUSAL_CAST>>


def attention_mask(lengths, max_len=None, causal=False):
    keys = padding_mask(lengths, max_len)
    B, T = keys.shape
    m = <<AM>>
    if causal:
        m = m <<COMBINE>> causal_mask(T, device=lengths.device)
    return m
"""
)
MASKS_LOOPS_DEFAULTS = dict(
    VALIDATE="""
    if any(L < 0 for L in lens):
        raise ValueError("negative length")
    if max_len is not None and any(L > max_len for L in lens):
        raise ValueError("a length is longer than max_len")""",
    T="max(lens) if max_len is None else int(max_len)",
    COND="t < L",
    CAST="",
    CAUSAL="j <= i",
    CAUSAL_CAST="",
    AM="keys[:, None, None, :].expand(B, 1, T, T)",
    COMBINE="&",
)

MASKS_VEC = (
    HEADER
    + """
def padding_mask(lengths, max_len=None):
<<VALIDATE>>
    T = <<T>>
    positions = torch.arange(T, device=lengths.device).unsqueeze(0).expand(lengths.shape[0], T)
    mask = <<CMP>>
    return mask<<CAST>>


def causal_mask(T, device=None):
    return <<CAUSAL>>


def attention_mask(lengths, max_len=None, causal=False):
    valid = padding_mask(lengths, max_len)  # (B, T)
    T = valid.shape[1]
    mask = <<AM>>
    if causal:
        mask = <<COMBINE>>
    return mask
"""
)
MASKS_VEC_DEFAULTS = dict(
    VALIDATE="""
    if bool((lengths < 0).any()):
        raise ValueError("lengths must be >= 0")
    if max_len is not None and bool((lengths > max_len).any()):
        raise ValueError("lengths must be <= max_len")""",
    T="int(lengths.max().item()) if max_len is None else max_len",
    CMP="positions < lengths.unsqueeze(1)",
    CAST="",
    CAUSAL="torch.tril(torch.ones(T, T, device=device)).bool()",
    AM="valid.view(valid.shape[0], 1, 1, T) & torch.ones(1, 1, T, T, dtype=torch.bool, device=valid.device)",
    COMBINE="mask & causal_mask(T, lengths.device)",
)


def masks_loops(**k):
    return fill(MASKS_LOOPS, **{**MASKS_LOOPS_DEFAULTS, **k})


def masks_vec(**k):
    return fill(MASKS_VEC, **{**MASKS_VEC_DEFAULTS, **k})


add("masks_loops_correct", "masks", "correct", [], masks_loops())
add("masks_vec_correct", "masks", "correct", [], masks_vec())
add(
    "masks_inverted_no_checks",
    "masks",
    "pair",
    ["padding_mask_inverted", "padding_mask_no_validation"],
    masks_loops(COND="t >= L", VALIDATE=""),
)
add(
    "masks_off_by_one_no_checks",
    "masks",
    "pair",
    ["padding_mask_off_by_one", "padding_mask_no_validation"],
    masks_vec(CMP="positions <= lengths.unsqueeze(1)", VALIDATE=""),
)
add(
    "masks_ignores_max_len_float",
    "masks",
    "pair",
    ["padding_mask_ignores_max_len", "padding_mask_float"],
    masks_loops(T="max(lens)", CAST=".float()"),
)
add(
    "masks_inverted_float",
    "masks",
    "pair",
    ["padding_mask_inverted", "padding_mask_float"],
    masks_vec(CMP="~(positions < lengths.unsqueeze(1))", CAST=".to(torch.float32)"),
)
add(
    "masks_ignores_max_len_no_checks",
    "masks",
    "pair",
    ["padding_mask_ignores_max_len", "padding_mask_no_validation"],
    masks_vec(T="int(lengths.max())", VALIDATE=""),
)
add(
    "masks_causal_strict_float",
    "masks",
    "pair",
    ["causal_mask_excludes_diagonal", "causal_mask_float_zeros_ones"],
    masks_vec(CAUSAL="torch.tril(torch.ones(T, T, device=device), diagonal=-1)"),
)
add(
    "masks_query_axis_no_head_axis",
    "masks",
    "pair",
    ["attention_mask_padding_on_query_axis", "attention_mask_without_head_axis"],
    masks_loops(AM="keys[:, :, None].expand(B, T, T)"),
)
add(
    "masks_ignores_causal_no_head_axis",
    "masks",
    "pair",
    ["attention_mask_ignores_causal", "attention_mask_without_head_axis"],
    masks_vec(AM="valid[:, None, :].expand(-1, T, T)", COMBINE="mask"),
)
add(
    "masks_or_query_axis",
    "masks",
    "pair",
    ["attention_mask_or_instead_of_and", "attention_mask_padding_on_query_axis"],
    masks_loops(AM="keys[:, None, :, None].expand(B, 1, T, T)", COMBINE="|"),
)
add(
    "masks_upper_triangle_and_no_head_axis",
    "masks",
    "pair",
    ["causal_mask_upper_triangle", "attention_mask_without_head_axis"],
    masks_loops(CAUSAL="j >= i", AM="keys[:, None, :].expand(B, T, T)"),
)
add(
    "masks_off_by_one_plus_causal_one_future",
    "masks",
    "plus",
    ["padding_mask_off_by_one"],
    masks_loops(COND="t <= L", CAUSAL="j <= i + 1"),
)
add(
    "masks_inverted_plus_extra_column",
    "masks",
    "plus",
    ["padding_mask_inverted"],
    masks_vec(
        CMP="positions >= lengths.unsqueeze(1)", T="int(lengths.max().item()) + 1 if max_len is None else max_len"
    ),
)
add(
    "masks_blocks_padded_queries_plus_uint8",
    "masks",
    "plus",
    ["attention_mask_also_blocks_padded_queries"],
    masks_vec(AM="(valid[:, None, :, None] & valid[:, None, None, :]).to(torch.uint8)"),
)
# written another way
add(
    "masks_other_upper_without_diagonal",
    "masks",
    "other",
    ["causal_mask_upper_triangle"],
    masks_vec(CAUSAL="~torch.ones(T, T, dtype=torch.bool, device=device).tril()"),
)
add(
    "masks_other_strict_lower_by_comparison",
    "masks",
    "other",
    ["causal_mask_excludes_diagonal"],
    masks_vec(CAUSAL="torch.arange(T, device=device)[:, None] > torch.arange(T, device=device)[None, :]"),
)
add(
    "masks_other_inverted_eq_false",
    "masks",
    "other",
    ["padding_mask_inverted"],
    masks_vec(CMP="(positions < lengths.unsqueeze(1)) == False"),
)  # noqa: E712 - as students write it
add(
    "masks_other_logical_or",
    "masks",
    "other",
    ["attention_mask_or_instead_of_and"],
    masks_vec(COMBINE="torch.logical_or(mask, causal_mask(T, lengths.device))"),
)


# ================================================================ positional_encoding

PE_LOOPS = (
    HEADER
    + """
def sinusoidal_encoding(T, d, base=<<BASE_DEFAULT>>):
<<CHECK>>
    pe = torch.zeros(T, d<<DTYPE>>)
    for pos in range(T):
        for i in range(0, d, 2):
            angle = <<ANGLE>>
            pe[pos, i] = math.<<SIN>>(angle)
            if i + 1 < d:
                pe[pos, i + 1] = math.<<COS>>(angle)
    return pe<<RESHAPE>>


def add_positional_encoding(X):
    B, T, d = X.shape
    return <<ADD>>
"""
)
PE_LOOPS_DEFAULTS = dict(
    BASE_DEFAULT="10000.0",
    CHECK="""
    if d % 2 == 1:
        raise ValueError("d must be even")""",
    DTYPE="",
    ANGLE="pos / base ** (i / d)",
    SIN="sin",
    COS="cos",
    RESHAPE="",
    ADD="X + sinusoidal_encoding(T, d).to(dtype=X.dtype, device=X.device)",
)

PE_VEC = (
    HEADER
    + """
def sinusoidal_encoding(T, d, base=<<BASE_DEFAULT>>):
<<CHECK>>
    position = torch.arange(T).unsqueeze(1).double()
    div_term = torch.exp(torch.arange(0, d, 2).double() * <<LOGBASE>>)
<<BODY>>
    return pe.float()


def add_positional_encoding(X):
<<ADD>>
"""
)
PE_VEC_DEFAULTS = dict(
    BASE_DEFAULT="10000.0",
    CHECK="""
    if d % 2:
        raise ValueError(f"odd d = {d}")""",
    LOGBASE="(-math.log(base) / d)",
    BODY="""
    pe = torch.zeros(T, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)""",
    ADD="""
    pe = sinusoidal_encoding(X.size(1), X.size(2))
    return X + pe.unsqueeze(0).to(dtype=X.dtype, device=X.device)""",
)


def pe_loops(**k):
    return fill(PE_LOOPS, **{**PE_LOOPS_DEFAULTS, **k})


def pe_vec(**k):
    return fill(PE_VEC, **{**PE_VEC_DEFAULTS, **k})


add("pe_loops_correct", "positional_encoding", "correct", [], pe_loops())
add("pe_vec_correct", "positional_encoding", "correct", [], pe_vec())
add(
    "pe_swapped_no_odd_check",
    "positional_encoding",
    "pair",
    ["pe_sin_cos_swapped", "pe_odd_d_not_rejected"],
    pe_loops(SIN="cos", COS="sin", CHECK=""),
)
add(
    "pe_i_over_d_float64",
    "positional_encoding",
    "pair",
    ["pe_exponent_i_over_d", "pe_returns_float64"],
    pe_loops(ANGLE="pos / base ** ((i // 2) / d)", DTYPE=", dtype=torch.float64"),
)
add(
    "pe_from_one_base_ignored",
    "positional_encoding",
    "pair",
    ["pe_positions_from_one", "pe_base_ignored"],
    pe_loops(ANGLE="(pos + 1) / 10000 ** (i / d)"),
)
add(
    "pe_concatenated_no_odd_check",
    "positional_encoding",
    "pair",
    ["pe_concatenated_layout", "pe_odd_d_not_rejected"],
    pe_vec(
        CHECK="",
        BODY="""
    ang = position * div_term
    pe = torch.cat([torch.sin(ang), torch.cos(ang)], dim=1)[:, :d]""",
    ),
)
add(
    "pe_multiplied_default_base",
    "positional_encoding",
    "pair",
    ["pe_frequency_multiplied", "pe_default_base_wrong"],
    pe_vec(BASE_DEFAULT="1000.0", LOGBASE="(math.log(base) / d)"),
)
add(
    "pe_add_scaled_float32",
    "positional_encoding",
    "pair",
    ["add_pe_scales_x_by_sqrt_d", "add_pe_casts_to_float32"],
    pe_vec(
        ADD="""
    B, T, d = X.shape
    return X.float() * math.sqrt(d) + sinusoidal_encoding(T, d)"""
    ),
)
add(
    "pe_swapped_and_add_float32",
    "positional_encoding",
    "pair",
    ["pe_sin_cos_swapped", "add_pe_casts_to_float32"],
    pe_loops(
        SIN="cos", COS="sin", ADD="(X + sinusoidal_encoding(T, d).to(dtype=X.dtype, device=X.device)).to(torch.float32)"
    ),
)
add(
    "pe_float64_and_add_scaled",
    "positional_encoding",
    "pair",
    ["pe_returns_float64", "add_pe_scales_x_by_sqrt_d"],
    pe_loops(
        DTYPE=", dtype=torch.float64", ADD="X * d ** 0.5 + sinusoidal_encoding(T, d).to(dtype=X.dtype, device=X.device)"
    ),
)
add(
    "pe_base_ignored_plus_batch_axis",
    "positional_encoding",
    "plus",
    ["pe_base_ignored"],
    pe_loops(ANGLE="pos / 10000.0 ** (i / d)", RESHAPE=".unsqueeze(0)"),
)
add(
    "pe_add_T_from_batch_plus_half_pe",
    "positional_encoding",
    "plus",
    ["add_pe_T_from_batch_axis"],
    pe_vec(
        ADD="""
    T, d = X.size(0), X.size(-1)
    return X + 0.5 * sinusoidal_encoding(T, d).to(dtype=X.dtype, device=X.device)"""
    ),
)
add(
    "pe_from_one_plus_add_half",
    "positional_encoding",
    "plus",
    ["pe_positions_from_one"],
    pe_loops(
        ANGLE="(pos + 1) / base ** (i / d)",
        ADD="X + 0.5 * sinusoidal_encoding(T, d).to(dtype=X.dtype, device=X.device)",
    ),
)
# written another way
add(
    "pe_other_batch_axis_any_B",
    "positional_encoding",
    "other",
    ["add_pe_along_batch_axis"],
    pe_loops(ADD="X + sinusoidal_encoding(B, d).to(dtype=X.dtype, device=X.device)[:, None, :]"),
)
add(
    "pe_other_in_place_no_grad",
    "positional_encoding",
    "other",
    ["add_pe_in_place"],
    pe_vec(
        ADD="""
    with torch.no_grad():
        X.add_(sinusoidal_encoding(X.shape[1], X.shape[2]).to(dtype=X.dtype, device=X.device))
    return X"""
    ),
)
add(
    "pe_other_concatenated_loop",
    "positional_encoding",
    "other",
    ["pe_concatenated_layout"],
    pe_loops().replace(
        "            pe[pos, i] = math.sin(angle)\n            if i + 1 < d:\n"
        "                pe[pos, i + 1] = math.cos(angle)\n",
        "            pe[pos, i // 2] = math.sin(angle)\n            pe[pos, d // 2 + i // 2] = math.cos(angle)\n",
    ),
)


# ================================================================ attention

ATT = (
    HEADER
    + """
def scaled_dot_product_attention(Q, K, V, mask=None):
    d_k = Q.size(-1)
    scores = torch.einsum("...qd,...kd->...qk", Q, K)<<SCALE>>
<<PREMASK>>
    weights = <<SOFTMAX>>
<<POSTFILL>>
    return torch.einsum("...qk,...kv->...qv", weights, <<VALUES>>), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
<<CHECK>>
        self.h = num_heads
        self.d_head = d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=<<BIAS>>)
        self.W_k = nn.Linear(d_model, d_model, bias=<<BIAS>>)
        self.W_v = nn.Linear(d_model, d_model, bias=<<BIAS>>)
        self.W_o = nn.Linear(d_model, d_model, bias=<<BIAS>>)

    def forward(self, x_q, x_kv, mask=None):
        B, Tq, D = x_q.shape
        Tk = <<KV>>.shape[1]
        q = self.W_q(x_q).reshape(B, Tq, self.h, self.d_head).permute(0, 2, 1, 3)
        k = self.W_k(<<KV>>).reshape(B, Tk, self.h, self.d_head).permute(0, 2, 1, 3)
        v = self.<<WV>>(<<KV>>).reshape(B, Tk, self.h, self.d_head).permute(0, 2, 1, 3)
        out, w = scaled_dot_product_attention(q, k, v, <<MASKARG>>)
        out = <<MERGE>>
        return <<OUT>>, <<WOUT>>
"""
)
ATT_DEFAULTS = dict(
    SCALE=" / math.sqrt(d_k)",
    PREMASK="",
    SOFTMAX="torch.softmax(scores, dim=-1)",
    POSTFILL="""
    if mask is not None:
        weights = weights.masked_fill(mask == 0, 0.0)""",
    VALUES="V",
    CHECK="""
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")""",
    BIAS="bias",
    KV="x_kv",
    WV="W_v",
    MASKARG="mask",
    MERGE="out.permute(0, 2, 1, 3).reshape(B, Tq, D)",
    OUT="self.W_o(out)",
    WOUT="w",
)


def att(MASKCOND="mask == 0", FILL='float("-inf")', **k):
    """MASKCOND, FILL: the masked_fill before the softmax (PREMASK="" for none at all)."""
    premask = f"""
    if mask is not None:
        scores = scores.masked_fill({MASKCOND}, {FILL})"""
    return fill(ATT, **{**ATT_DEFAULTS, "PREMASK": premask, **k})


add("att_correct", "attention", "correct", [], att())
add(
    "att_no_scaling_softmax_queries",
    "attention",
    "pair",
    ["sdpa_no_scaling", "sdpa_softmax_over_queries"],
    att(SCALE="", SOFTMAX="torch.softmax(scores, dim=-2)"),
)
add(
    "att_scale_dk_mask_inverted",
    "attention",
    "pair",
    ["sdpa_scale_by_dk", "sdpa_mask_inverted"],
    att(
        SCALE=" / d_k",
        MASKCOND="mask",
        POSTFILL="""
    if mask is not None:
        weights = weights.masked_fill(mask, 0.0)""",
    ),
)
add(
    "att_inverted_nan_rows",
    "attention",
    "pair",
    ["sdpa_mask_inverted", "sdpa_nan_for_fully_masked_query"],
    att(MASKCOND="mask", POSTFILL=""),
)
add(
    "att_scale_dv_mask_after_softmax",
    "attention",
    "pair",
    ["sdpa_scale_by_sqrt_dv", "sdpa_mask_after_softmax_not_renormalised"],
    att(
        SCALE=" / math.sqrt(V.size(-1))",
        PREMASK="",
        POSTFILL="""
    if mask is not None:
        weights = weights * mask""",
    ),
)
add(
    "att_no_scaling_nan_rows",
    "attention",
    "pair",
    ["sdpa_no_scaling", "sdpa_nan_for_fully_masked_query"],
    att(SCALE="", POSTFILL=""),
)
add(
    "att_mha_no_check_no_output_projection",
    "attention",
    "pair",
    ["mha_no_value_error", "mha_missing_output_projection"],
    att(CHECK="", OUT="out"),
)
add(
    "att_mha_values_wk_weights_averaged",
    "attention",
    "pair",
    ["mha_values_with_w_k", "mha_weights_averaged_over_heads"],
    att(WV="W_k", WOUT="w.mean(dim=1)"),
)
add(
    "att_mha_mask_not_passed_bias_ignored",
    "attention",
    "pair",
    ["mha_mask_not_passed", "mha_bias_argument_ignored"],
    att(MASKARG="None", BIAS="True"),
)
add(
    "att_mha_merge_no_transpose_no_check",
    "attention",
    "pair",
    ["mha_merge_heads_without_transpose", "mha_no_value_error"],
    att(MERGE="out.reshape(B, Tq, D)", CHECK=""),
)
add(
    "att_mha_self_only_mask_transposed",
    "attention",
    "pair",
    ["mha_keys_and_values_from_x_q", "mha_mask_transposed"],
    att(KV="x_q", MASKARG="None if mask is None else mask.transpose(-1, -2)"),
)
add(
    "att_sdpa_no_scaling_and_mha_no_output_projection",
    "attention",
    "pair",
    ["sdpa_no_scaling", "mha_missing_output_projection"],
    att(SCALE="", OUT="out"),
)
add("att_scale_dk_plus_values_from_keys", "attention", "plus", ["sdpa_scale_by_dk"], att(SCALE=" / d_k", VALUES="K"))
add(
    "att_softmax_queries_plus_last_head_weights",
    "attention",
    "plus",
    ["sdpa_softmax_over_queries"],
    att(SOFTMAX="torch.softmax(scores, dim=-2)", WOUT="w[:, -1]"),
)
add(
    "att_mha_values_wk_plus_residual",
    "attention",
    "plus",
    ["mha_values_with_w_k"],
    att(WV="W_k", OUT="x_q + self.W_o(out)"),
)
# written another way
add(
    "att_other_inverted_minus_1e9",
    "attention",
    "other",
    ["sdpa_mask_inverted"],
    att(MASKCOND="mask", FILL="-1e9", POSTFILL=""),
)
add(
    "att_other_queries_minus_1e9",
    "attention",
    "other",
    ["sdpa_softmax_over_queries"],
    att(FILL="-1e9", SOFTMAX="torch.softmax(scores, dim=-2)", POSTFILL=""),
)
add(
    "att_other_queries_finfo_min",
    "attention",
    "other",
    ["sdpa_softmax_over_queries"],
    att(FILL="torch.finfo(scores.dtype).min", SOFTMAX="scores.softmax(-2)"),
)
add(
    "att_other_q_divided_in_place_no_grad",
    "attention",
    "other",
    ["sdpa_scales_q_in_place"],
    att(SCALE="").replace(
        "    d_k = Q.size(-1)\n", "    d_k = Q.size(-1)\n    with torch.no_grad():\n        Q.div_(math.sqrt(d_k))\n"
    ),
)
add(
    "att_other_assert_instead_of_value_error",
    "attention",
    "other",
    ["mha_no_value_error"],
    att(CHECK='        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"'),
)


# ================================================================ recurrent

REC = (
    HEADER
    + """
def lstm_cell(x, state, W_ih, W_hh, b_ih, b_hh):
    h_prev, c_prev = state
    H = h_prev.shape[1]
    z = <<Z>>
    i_g = <<I>>
    f_g = torch.sigmoid(z[:, H:2 * H])
    g_g = <<G>>
    o_g = <<O>>
    c_next = <<C>>
    h_next = <<H>>
    return h_next, <<C_RET>>


def gru_cell(x, h, W_ih, W_hh, b_ih, b_hh):
    H = h.shape[-1]
    gi = F.linear(x, W_ih, b_ih)
    gh = <<GH>>
    r = torch.sigmoid(gi[:, <<R>>] + gh[:, <<R>>])
    u = torch.sigmoid(gi[:, <<U>>] + gh[:, <<U>>])
    n = <<N>>
    return <<GRU_OUT>>


def lstm_sequence(X, lengths, W_ih, W_hh, b_ih, b_hh, state=None):
    B, T, _ = X.shape
    H = W_hh.shape[1]
    if <<STATE_COND>>:
        h = <<ZEROS>>
        c = <<ZEROS>>
    else:
        h, c = state
    outs = []
    for t in range(T):
        h_new, c_new = lstm_cell(X[:, t, :], (<<CARRY>>), W_ih, W_hh, b_ih, b_hh)
        alive = (lengths <<ALIVE>> t).unsqueeze(1).to(X.dtype)
        h = <<H_UPDATE>>
        c = <<C_UPDATE>>
        outs.<<APPEND>>
    outputs = torch.stack(outs, 1)
    return outputs, (<<H_FINAL>>, c)
"""
)
REC_DEFAULTS = dict(
    Z="x @ W_ih.t() + h_prev @ W_hh.t() + b_ih + b_hh",
    I="torch.sigmoid(z[:, 0:H])",
    G="torch.tanh(z[:, 2 * H:3 * H])",
    O="torch.sigmoid(z[:, 3 * H:4 * H])",
    C="f_g * c_prev + i_g * g_g",
    H="o_g * torch.tanh(c_next)",
    C_RET="c_next",
    GH="F.linear(h, W_hh, b_hh)",
    R=":H",
    U="H:2 * H",
    N="torch.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])",
    GRU_OUT="(1 - u) * n + u * h",
    STATE_COND="state is None",
    ZEROS="X.new_zeros(B, H)",
    CARRY="h, c",
    ALIVE=">",
    H_UPDATE="alive * h_new + (1 - alive) * h",
    C_UPDATE="alive * c_new + (1 - alive) * c",
    APPEND="append(alive * h_new)",
    H_FINAL="h",
)


def rec(**k):
    return fill(REC, **{**REC_DEFAULTS, **k})


add("rec_correct", "recurrent", "correct", [], rec())
add(
    "rec_ifog_single_bias",
    "recurrent",
    "pair",
    ["lstm_gate_order_ifog", "lstm_single_bias"],
    rec(
        G="torch.tanh(z[:, 3 * H:4 * H])",
        O="torch.sigmoid(z[:, 2 * H:3 * H])",
        Z="x @ W_ih.t() + h_prev @ W_hh.t() + b_ih",
    ),
)
add(
    "rec_no_tanh_whh_on_x",
    "recurrent",
    "pair",
    ["lstm_h_without_tanh", "lstm_whh_applied_to_x"],
    rec(H="o_g * c_next", Z="x @ W_hh.t() + h_prev @ W_ih.t() + b_ih + b_hh"),
)
add(
    "rec_candidate_sigmoid_no_input_gate",
    "recurrent",
    "pair",
    ["lstm_candidate_sigmoid", "lstm_missing_input_gate"],
    rec(G="torch.sigmoid(z[:, 2 * H:3 * H])", C="f_g * c_prev + g_g"),
)
add(
    "rec_figo_cell_in_place",
    "recurrent",
    "pair",
    ["lstm_gate_order_figo", "lstm_cell_state_updated_in_place"],
    rec(I="torch.sigmoid(z[:, H:2 * H])", C="c_prev.mul_(f_g).add_(i_g * g_g)").replace(
        "    f_g = torch.sigmoid(z[:, H:2 * H])\n", "    f_g = torch.sigmoid(z[:, 0:H])\n"
    ),
)
add(
    "rec_tanh_outside_cell_state_recurrence",
    "recurrent",
    "pair",
    ["lstm_tanh_outside_output_gate", "lstm_recurrent_term_uses_cell_state"],
    rec(H="torch.tanh(o_g * c_next)", Z="x @ W_ih.t() + c_prev @ W_hh.t() + b_ih + b_hh"),
)
add(
    "rec_gru_zrn_no_bhn",
    "recurrent",
    "pair",
    ["gru_gate_order_zrn", "gru_missing_b_hn"],
    rec(R="H:2 * H", U=":H", GH="F.linear(h, W_hh, torch.cat([b_hh[:2 * H], torch.zeros_like(b_hh[2 * H:])]))"),
)
add(
    "rec_gru_swapped_no_reset",
    "recurrent",
    "pair",
    ["gru_update_gate_swapped", "gru_without_reset_gate"],
    rec(N="torch.tanh(gi[:, 2 * H:] + gh[:, 2 * H:])", GRU_OUT="u * n + (1 - u) * h"),
)
add(
    "rec_seq_ignores_state_holds_state",
    "recurrent",
    "pair",
    ["seq_ignores_initial_state", "seq_padded_outputs_hold_state"],
    rec(STATE_COND="True", APPEND="append(h)"),
)
add(
    "rec_seq_off_by_one_ignores_state",
    "recurrent",
    "pair",
    ["seq_lengths_off_by_one", "seq_ignores_initial_state"],
    rec(ALIVE=">=", STATE_COND="True"),
)
add(
    "rec_seq_unmasked_detached",
    "recurrent",
    "pair",
    ["seq_padded_outputs_not_masked", "seq_detaches_state_between_steps"],
    rec(APPEND="append(h_new)", CARRY="h.detach(), c.detach()"),
)
add(
    "rec_seq_reverse_final_from_output",
    "recurrent",
    "pair",
    ["seq_outputs_in_reverse_order", "seq_final_state_from_last_output"],
    rec(APPEND="insert(0, alive * h_new)", H_FINAL="outputs[:, 0]"),
)
add(
    "rec_cell_tanh_outside_and_seq_padding_updates",
    "recurrent",
    "pair",
    ["lstm_tanh_outside_output_gate", "seq_state_updated_on_padding"],
    rec(H="torch.tanh(o_g * c_next)", H_UPDATE="h_new", C_UPDATE="c_new"),
)
add(
    "rec_gru_reset_input_plus_relu",
    "recurrent",
    "plus",
    ["gru_reset_gates_input_term"],
    rec(N="torch.relu(r * gi[:, 2 * H:] + gh[:, 2 * H:])"),
)
add(
    "rec_single_bias_plus_old_cell_returned",
    "recurrent",
    "plus",
    ["lstm_single_bias"],
    rec(Z="x @ W_ih.t() + h_prev @ W_hh.t() + b_ih", C_RET="c_prev"),
)
add(
    "rec_seq_unmasked_plus_final_c_zero",
    "recurrent",
    "plus",
    ["seq_padded_outputs_not_masked"],
    rec(APPEND="append(h_new)").replace(
        "    return outputs, (h, c)\n", "    return outputs, (h, torch.zeros_like(c))\n"
    ),
)
# written another way
add(
    "rec_other_ifog_weight_chunks",
    "recurrent",
    "other",
    ["lstm_gate_order_ifog"],
    rec().replace(
        """    z = x @ W_ih.t() + h_prev @ W_hh.t() + b_ih + b_hh
    i_g = torch.sigmoid(z[:, 0:H])
    f_g = torch.sigmoid(z[:, H:2 * H])
    g_g = torch.tanh(z[:, 2 * H:3 * H])
    o_g = torch.sigmoid(z[:, 3 * H:4 * H])
""",
        """    Wi, Wf, Wo, Wg = W_ih.chunk(4)
    Ui, Uf, Uo, Ug = W_hh.chunk(4)
    bi, bf, bo, bg = (b_ih + b_hh).chunk(4)
    i_g = torch.sigmoid(x @ Wi.t() + h_prev @ Ui.t() + bi)
    f_g = torch.sigmoid(x @ Wf.t() + h_prev @ Uf.t() + bf)
    g_g = torch.tanh(x @ Wg.t() + h_prev @ Ug.t() + bg)
    o_g = torch.sigmoid(x @ Wo.t() + h_prev @ Uo.t() + bo)
""",
    ),
)
add("rec_other_gru_interpolation", "recurrent", "other", ["gru_update_gate_swapped"], rec(GRU_OUT="h + u * (n - h)"))
add(
    "rec_other_seq_unmasked_gather_final",
    "recurrent",
    "other",
    ["seq_padded_outputs_not_masked"],
    rec(APPEND="append(h_new)", H_FINAL="h", H_UPDATE="h_new", C_UPDATE="c_new").replace(
        "    return outputs, (h, c)\n",
        "    idx = torch.arange(B)\n"
        "    return outputs, (outputs[idx, lengths - 1], _final_c(X, lengths, W_ih, W_hh, b_ih, b_hh, state))\n"
        "\n\n"
        "def _final_c(X, lengths, W_ih, W_hh, b_ih, b_hh, state):\n"
        "    B, T, _ = X.shape\n"
        "    H = W_hh.shape[1]\n"
        "    h, c = (X.new_zeros(B, H), X.new_zeros(B, H)) if state is None else state\n"
        "    last = []\n"
        "    for t in range(T):\n"
        "        h, c = lstm_cell(X[:, t], (h, c), W_ih, W_hh, b_ih, b_hh)\n"
        "        last.append(c)\n"
        "    cs = torch.stack(last, 1)\n"
        "    return cs[torch.arange(B), lengths - 1]\n",
    ),
)


# ================================================================ masked_loss

ML = (
    HEADER
    + """
def masked_cross_entropy(logits, targets, mask):
<<CHECK>>
    B, T, V = logits.shape
<<PREP>>
    logp = <<LOGP>>
    nll = -logp.gather(-1, tg.unsqueeze(-1)).squeeze(-1)
<<REDUCE>>
    return loss<<RET>>
"""
)
ML_DEFAULTS = dict(
    CHECK="""
    if not bool(mask.any()):
        raise ValueError("no valid token in the batch")""",
    PREP="""
    lg = torch.where(mask.unsqueeze(-1), logits, torch.zeros_like(logits))
    tg = torch.where(mask, targets, torch.zeros_like(targets))""",
    LOGP="F.log_softmax(lg, dim=-1)",
    REDUCE="""
    m = mask.to(nll.dtype)
    loss = (nll * m).sum() / m.sum()""",
    RET="",
)

# the ways padding is (not) removed, as students write them
ML_PREP_NAN_LOGITS = """
    lg = logits
    tg = targets.clamp(0, V - 1)"""  # logits raw, padded targets made legal: NaN * 0 = NaN
ML_PREP_RAW_TARGETS = """
    lg = torch.where(mask.unsqueeze(-1), logits, torch.zeros_like(logits))
    tg = targets"""  # logits cleaned, targets not: -1 or V breaks the gather
ML_REDUCE_WHERE = """
    nll = torch.where(mask, nll, torch.zeros_like(nll))
    loss = nll.sum() / mask.sum()"""  # a where after computing: the value is right, the gradient NaN
ML_REDUCE_SUM = """
    loss = (nll * mask).sum()"""
ML_REDUCE_BY_B = """
    loss = (nll * mask).sum() / B"""
ML_REDUCE_ALL = """
    loss = (nll * mask).mean()"""
ML_REDUCE_PER_SEQ = """
    per_seq = (nll * mask).sum(dim=1) / mask.sum(dim=1)
    loss = per_seq.mean()"""


def ml(**k):
    return fill(ML, **{**ML_DEFAULTS, **k})


add("ml_correct", "masked_loss", "correct", [], ml())
add(
    "ml_sum_no_check",
    "masked_loss",
    "pair",
    ["ml_sum_instead_of_mean", "ml_no_error_on_empty_mask"],
    ml(REDUCE=ML_REDUCE_SUM, CHECK=""),
)
add(
    "ml_per_sequence_nan_logits",
    "masked_loss",
    "pair",
    ["ml_per_sequence_mean", "ml_float_mask_after_nan_logits"],
    ml(REDUCE=ML_REDUCE_PER_SEQ, PREP=ML_PREP_NAN_LOGITS),
)
add(
    "ml_all_positions_no_check_where",
    "masked_loss",
    "pair",
    ["ml_mean_over_all_positions", "ml_no_error_on_empty_mask", "ml_padded_logits_through_log_softmax"],
    ml(
        CHECK="",
        PREP="""
    lg = logits
    tg = targets.masked_fill(~mask, 0)""",
        REDUCE="""
    nll = torch.where(mask, nll, torch.zeros_like(nll))
    loss = nll.sum() / (B * T)""",
    ),
)
add(
    "ml_by_batch_softmax_log",
    "masked_loss",
    "pair",
    ["ml_divide_by_batch_size", "ml_softmax_then_log"],
    ml(REDUCE=ML_REDUCE_BY_B, LOGP="torch.log(torch.exp(lg) / torch.exp(lg).sum(-1, keepdim=True))"),
)
add(
    "ml_wrong_axis_no_check",
    "masked_loss",
    "pair",
    ["ml_log_softmax_wrong_axis", "ml_no_error_on_empty_mask"],
    ml(LOGP="F.log_softmax(lg, dim=1)", CHECK=""),
)
add(
    "ml_sum_where",
    "masked_loss",
    "pair",
    ["ml_sum_instead_of_mean", "ml_padded_logits_through_log_softmax"],
    ml(
        PREP="""
    lg = logits
    tg = torch.where(mask, targets, 0)""",
        REDUCE="""
    nll = torch.where(mask, nll, 0.0)
    loss = nll.sum()""",
    ),
)
add(
    "ml_per_sequence_no_check",
    "masked_loss",
    "pair",
    ["ml_per_sequence_mean", "ml_no_error_on_empty_mask"],
    ml(REDUCE=ML_REDUCE_PER_SEQ, CHECK=""),
)
add(
    "ml_sum_item",
    "masked_loss",
    "pair",
    ["ml_sum_instead_of_mean", "ml_returns_python_float"],
    ml(REDUCE=ML_REDUCE_SUM, RET=".item()"),
)
add(
    "ml_softmax_log_no_check",
    "masked_loss",
    "pair",
    ["ml_softmax_then_log", "ml_no_error_on_empty_mask"],
    ml(LOGP="torch.log(torch.softmax(lg, dim=-1))", CHECK=""),
)
add(
    "ml_by_batch_raw_targets",
    "masked_loss",
    "pair",
    ["ml_divide_by_batch_size", "ml_float_mask_after_invalid_targets"],
    ml(REDUCE=ML_REDUCE_BY_B, PREP=ML_PREP_RAW_TARGETS),
)
add(
    "ml_all_positions_nan_logits",
    "masked_loss",
    "pair",
    ["ml_mean_over_all_positions", "ml_float_mask_after_nan_logits"],
    ml(REDUCE=ML_REDUCE_ALL, PREP=ML_PREP_NAN_LOGITS),
)
add(
    "ml_by_batch_plus_label_smoothing",
    "masked_loss",
    "plus",
    ["ml_divide_by_batch_size"],
    ml(
        REDUCE=ML_REDUCE_BY_B,
        LOGP="0.9 * F.log_softmax(lg, dim=-1) + 0.1 * F.log_softmax(lg, dim=-1).mean(-1, keepdim=True)",
    ),
)
add(
    "ml_per_sequence_plus_count_plus_one",
    "masked_loss",
    "plus",
    ["ml_per_sequence_mean"],
    ml(
        REDUCE="""
    per_seq = (nll * mask).sum(dim=1) / (mask.sum(dim=1) + 1)
    loss = per_seq.mean()"""
    ),
)
add(
    "ml_no_check_plus_count_plus_one",
    "masked_loss",
    "plus",
    ["ml_no_error_on_empty_mask"],
    ml(
        CHECK="",
        REDUCE="""
    loss = (nll * mask).sum() / (mask.sum() + 1)""",
    ),
)
# written another way
add(
    "ml_other_sum_of_selected",
    "masked_loss",
    "other",
    ["ml_sum_instead_of_mean"],
    ml(
        REDUCE="""
    loss = nll[mask].sum()"""
    ),
)
add(
    "ml_other_per_sequence_loop",
    "masked_loss",
    "other",
    ["ml_per_sequence_mean"],
    HEADER
    + """
def masked_cross_entropy(logits, targets, mask):
    if mask.sum() == 0:
        raise ValueError("all positions are padding")
    losses = []
    for b in range(logits.shape[0]):
        keep = mask[b]
        losses.append(F.cross_entropy(logits[b][keep], targets[b][keep]))
    return torch.stack(losses).mean()
""",
)
add(
    "ml_other_nll_on_everything",
    "masked_loss",
    "other",
    ["ml_padded_targets_fed_to_loss"],
    HEADER
    + """
def masked_cross_entropy(logits, targets, mask):
    if not mask.any():
        raise ValueError("empty mask")
    return F.nll_loss(F.log_softmax(logits, -1).flatten(0, 1), targets.flatten())
""",
)
add("ml_other_log_of_softmax", "masked_loss", "other", ["ml_softmax_then_log"], ml(LOGP="torch.log(F.softmax(lg, -1))"))


# ================================================================ rope

ROPE = (
    HEADER
    + """
def rope_angles(T, d, offset=0, base=10000.0):
<<CHECK>>
    pos = <<POS>>
    inv = <<INV>>
    return torch.outer(pos, inv).float()


def apply_rope(x, offset=0, base=10000.0):
    T, d = x.shape[-2:]
    theta = rope_angles(T, d, offset, <<BASE_ARG>>).to(<<THETA_DTYPE>>)
    c, s = theta.cos(), theta.sin()
<<ROTATE>>
    return out<<OUT_CAST>>
"""
)
ROPE_DEFAULTS = dict(
    CHECK="""
    if d % 2:
        raise ValueError("d must be even")""",
    POS="torch.arange(offset, offset + T, dtype=torch.float64)",
    INV="1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))",
    BASE_ARG="base",
    THETA_DTYPE="x.dtype",
    ROTATE="""
    xe, xo = x[..., ::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., ::2] = xe * c - xo * s
    out[..., 1::2] = xe * s + xo * c""",
    OUT_CAST="",
)
ROPE_BACKWARDS = """
    xe, xo = x[..., ::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., ::2] = xe * c + xo * s
    out[..., 1::2] = xo * c - xe * s"""


def rope(**k):
    return fill(ROPE, **{**ROPE_DEFAULTS, **k})


add("rope_correct", "rope", "correct", [], rope())
add(
    "rope_from_one_no_check",
    "rope",
    "pair",
    ["rope_positions_from_one", "rope_odd_d_truncated"],
    rope(
        POS="torch.arange(offset + 1, offset + T + 1, dtype=torch.float64)",
        CHECK="",
        INV="1.0 / (base ** (torch.arange(0, d - d % 2, 2, dtype=torch.float64) / d))",
    ),
)
add(
    "rope_i_over_d_no_offset",
    "rope",
    "pair",
    ["rope_exponent_i_over_d", "rope_ignores_offset"],
    rope(
        POS="torch.arange(T, dtype=torch.float64)",
        INV="1.0 / (base ** (torch.arange(d // 2, dtype=torch.float64) / d))",
    ),
)
add(
    "rope_backwards_float32",
    "rope",
    "pair",
    ["rope_rotates_backwards", "rope_casts_to_float32"],
    rope(ROTATE=ROPE_BACKWARDS, THETA_DTYPE="torch.float32", OUT_CAST=".float()"),
)
add(
    "rope_half_split_backwards",
    "rope",
    "pair",
    ["rope_half_split_layout", "rope_rotates_backwards"],
    rope(
        ROTATE="""
    h = d // 2
    x1, x2 = x[..., :h], x[..., h:]
    out = torch.cat([x1 * c + x2 * s, x2 * c - x1 * s], dim=-1)"""
    ),
)
add(
    "rope_backwards_and_offset_subtracted",
    "rope",
    "pair",
    ["rope_rotates_backwards", "rope_offset_subtracted"],
    rope(ROTATE=ROPE_BACKWARDS, POS="torch.arange(T, dtype=torch.float64) - offset"),
)
add(
    "rope_divides_by_frequency_no_check",
    "rope",
    "pair",
    ["rope_divides_by_frequency", "rope_odd_d_truncated"],
    rope(INV="base ** (torch.arange(0, d - 1 if d % 2 else d, 2, dtype=torch.float64) / d)", CHECK=""),
)
add(
    "rope_not_rotation_float32",
    "rope",
    "pair",
    ["rope_not_a_rotation", "rope_casts_to_float32"],
    rope(
        THETA_DTYPE="torch.float32",
        ROTATE="""
    c2, s2 = c.repeat_interleave(2, -1), s.repeat_interleave(2, -1)
    out = x.float() * c2 + x.float() * s2""",
    ),
)
add(
    "rope_divides_plus_base_not_passed",
    "rope",
    "plus",
    ["rope_divides_by_frequency"],
    rope(INV="base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)", BASE_ARG="10000.0"),
)
add(
    "rope_half_split_plus_base_not_passed",
    "rope",
    "plus",
    ["rope_half_split_layout"],
    rope(
        BASE_ARG="10000.0",
        ROTATE="""
    h = d // 2
    x1, x2 = x[..., :h], x[..., h:]
    out = torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1)""",
    ),
)
# written another way
add(
    "rope_other_polar_backwards",
    "rope",
    "other",
    ["rope_rotates_backwards"],
    rope(
        ROTATE="""
    pairs = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    rot = torch.polar(torch.ones_like(theta, dtype=torch.float64), -theta.double())
    out = torch.view_as_real(pairs * rot).reshape(x.shape).to(x.dtype)"""
    ),
)


# ================================================================ timeseries

TS = (
    HEADER
    + """
def chronological_split(series, n_train):
    N = len(series)
    if n_train < 1 or n_train >= N:
        raise ValueError("n_train must leave both periods non-empty")
<<SPLIT>>


def fit_standardizer(train):
    mu = <<MEAN>>
    sd = <<STD>>
<<ZERO>>
    return mu, sd


def sliding_windows(series, window, horizon):
<<WCHECK>>
    N = series.shape[0]
    M = <<M>>
<<MCHECK>>
    xs, ys = [], []
    for s in range(<<RANGE>>):
        xs.append(series[<<XSLICE>>])
        ys.append(series[<<YIDX>>])
    return torch.stack(xs), torch.stack(ys)


def make_datasets(series, n_train, window, horizon):
<<MAKE>>
    return Xtr, ytr, Xte, yte, <<STATS>>
"""
)
TS_DEFAULTS = dict(
    SPLIT="    return series[:n_train].clone(), series[n_train:].clone()",
    MEAN="train.mean(0)",
    STD="((train - mu) ** 2).mean(0).sqrt()",
    ZERO="""
    sd = torch.where(sd == 0, torch.ones_like(sd), sd)""",
    WCHECK="""
    if window < 1 or horizon < 1:
        raise ValueError("window and horizon must be positive")""",
    M="N - window - horizon + 1",
    MCHECK="""
    if M < 1:
        raise ValueError("the series is too short for one window")""",
    RANGE="M",
    XSLICE="s:s + window",
    YIDX="s + window - 1 + horizon",
    MAKE="""
    tr, te = chronological_split(series, n_train)
    mu, sd = fit_standardizer(tr)
    Xtr, ytr = sliding_windows((tr - mu) / sd, window, horizon)
    Xte, yte = sliding_windows((te - mu) / sd, window, horizon)""",
    STATS="mu, sd",
)


def ts(**k):
    return fill(TS, **{**TS_DEFAULTS, **k})


add("ts_correct", "timeseries", "correct", [], ts())
add(
    "ts_sample_std_zero_std",
    "timeseries",
    "pair",
    ["ts_sample_std", "ts_zero_std_not_handled"],
    ts(STD="((train - mu) ** 2).sum(0).div(train.shape[0] - 1).sqrt()", ZERO=""),
)
add(
    "ts_horizon_off_by_one_no_check",
    "timeseries",
    "pair",
    ["ts_horizon_off_by_one", "ts_zero_horizon_accepted"],
    ts(M="N - window - horizon", YIDX="s + window + horizon", WCHECK="", MCHECK=""),
)
add(
    "ts_last_dropped_no_check",
    "timeseries",
    "pair",
    ["ts_last_window_dropped", "ts_zero_horizon_accepted"],
    ts(RANGE="M - 1", WCHECK="", MCHECK=""),
)
add(
    "ts_all_data_stats_across_boundary",
    "timeseries",
    "pair",
    ["ts_statistics_over_all_data", "ts_windows_across_the_boundary"],
    ts(
        MAKE="""
    mu, sd = fit_standardizer(series)
    X, y = sliding_windows((series - mu) / sd, window, horizon)
    n_tr = n_train - window + 1
    Xtr, ytr = X[:n_tr], y[:n_tr]
    Xte, yte = sliding_windows((series[n_train:] - mu) / sd, window, horizon)"""
    ),
)
add(
    "ts_split_overlap_sample_std",
    "timeseries",
    "pair",
    ["ts_split_off_by_one", "ts_sample_std"],
    ts(SPLIT="    return series[:n_train].clone(), series[n_train - 1:].clone()", STD="train.std(0, unbiased=True)"),
)
add(
    "ts_starts_late_no_check",
    "timeseries",
    "pair",
    ["ts_window_starts_late", "ts_zero_horizon_accepted"],
    ts(XSLICE="s + 1:s + 1 + window", YIDX="s + window + horizon", RANGE="max(M - 1, 1)", WCHECK="", MCHECK=""),
)
add(
    "ts_target_inside_random_split",
    "timeseries",
    "pair",
    ["ts_window_includes_its_target", "ts_random_split"],
    ts(
        YIDX="s + window - 2 + horizon",
        SPLIT="    idx = torch.randperm(N)\n    return series[idx[:n_train]], series[idx[n_train:]]",
    ),
)
add(
    "ts_features_axis_and_own_test_stats",
    "timeseries",
    "pair",
    ["ts_statistics_over_features", "ts_test_uses_its_own_statistics"],
    ts(
        MEAN="train.mean(1)",
        STD="((train - mu[:, None]) ** 2).mean(1).sqrt()",
        MAKE="""
    tr, te = chronological_split(series, n_train)
    mu, sd = tr.mean(0), tr.std(0, correction=0)
    sd = torch.where(sd == 0, torch.ones_like(sd), sd)
    m2, s2 = te.mean(0), te.std(0, correction=0)
    s2 = torch.where(s2 == 0, torch.ones_like(s2), s2)
    Xtr, ytr = sliding_windows((tr - mu) / sd, window, horizon)
    Xte, yte = sliding_windows((te - m2) / s2, window, horizon)""",
    ),
)
add(
    "ts_own_test_stats_plus_swapped_outputs",
    "timeseries",
    "plus",
    ["ts_test_uses_its_own_statistics"],
    ts(
        MAKE="""
    tr, te = chronological_split(series, n_train)
    mu, sd = fit_standardizer(tr)
    m2, s2 = fit_standardizer(te)
    Xtr, ytr = sliding_windows((tr - mu) / sd, window, horizon)
    Xte, yte = sliding_windows((te - m2) / s2, window, horizon)""",
        STATS="sd, mu",
    ),
)
add(
    "ts_features_plus_variance",
    "timeseries",
    "plus",
    ["ts_statistics_over_features"],
    ts(MEAN="train.mean(dim=1)", STD="((train - mu[:, None]) ** 2).mean(dim=1)"),
)
add(
    "ts_last_dropped_plus_unscaled_test",
    "timeseries",
    "plus",
    ["ts_last_window_dropped"],
    ts(
        RANGE="M - 1",
        MCHECK="""
    if M < 2:
        raise ValueError("the series is too short")""",
        MAKE="""
    tr, te = chronological_split(series, n_train)
    mu, sd = fit_standardizer(tr)
    Xtr, ytr = sliding_windows((tr - mu) / sd, window, horizon)
    Xte, yte = sliding_windows(te - mu, window, horizon)""",
    ),
)
# written another way
add(
    "ts_other_windows_kept_by_start",
    "timeseries",
    "other",
    ["ts_windows_across_the_boundary"],
    ts(
        MAKE="""
    tr, te = chronological_split(series, n_train)
    mu, sd = fit_standardizer(tr)
    X, y = sliding_windows((series - mu) / sd, window, horizon)
    Xtr, ytr = X[:n_train - window], y[:n_train - window]
    Xte, yte = sliding_windows((te - mu) / sd, window, horizon)"""
    ),
)
add(
    "ts_other_sample_variance_by_hand",
    "timeseries",
    "other",
    ["ts_sample_std"],
    ts(STD="torch.var(train, dim=0).sqrt()"),
)


# ================================================================ bert_masking

BM = (
    HEADER
    + """
def special_tokens_mask(input_ids, special_ids):
<<SPECIAL>>


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    gen = <<GEN>>
    labels = input_ids.clone()
    probs = torch.full(<<SEL_SHAPE>>, <<P_SEL>>)
<<EXCLUDE>>
    chosen = torch.bernoulli(probs, generator=gen).bool()<<EXPAND>>
<<LABELS>>
    inputs = input_ids.clone()
    replace = torch.bernoulli(torch.full(input_ids.shape, <<P_MASK>>), generator=gen).bool() & chosen
    inputs[replace] = mask_id
    rand = torch.bernoulli(torch.full(input_ids.shape, <<P_RAND>>), generator=gen).bool() & chosen & ~replace
    words = <<WORDS>>
    inputs[rand] = words[rand]
<<LABELS_LATE>>
    return inputs, labels
"""
)
BM_DEFAULTS = dict(
    SPECIAL="""
    out = torch.zeros_like(input_ids, dtype=torch.bool)
    for s in special_ids:
        out |= input_ids == s
    return out""",
    GEN="torch.Generator().manual_seed(seed)",
    SEL_SHAPE="input_ids.shape",
    P_SEL="0.15",
    EXCLUDE="    probs.masked_fill_(special_tokens_mask(input_ids, special_ids), 0.0)",
    EXPAND="",
    LABELS="    labels[~chosen] = -100",
    P_MASK="0.8",
    P_RAND="0.5",
    WORDS="torch.randint(vocab_size, input_ids.shape, generator=gen)",
    LABELS_LATE="",
)


def bm(**k):
    return fill(BM, **{**BM_DEFAULTS, **k})


GLOBAL = dict(GEN="None")

add("bm_correct", "bert_masking", "correct", [], bm())
add(
    "bm_global_all_masked",
    "bert_masking",
    "pair",
    ["bm_global_rng", "bm_all_selected_masked"],
    bm(**GLOBAL, P_MASK="1.0"),
)
add(
    "bm_zero_ignore_two_percent",
    "bert_masking",
    "pair",
    ["bm_ignore_label_zero", "bm_random_two_percent"],
    bm(LABELS="    labels[~chosen] = 0", P_RAND="0.1"),
)
add(
    "bm_padding_selected_one_random_word",
    "bert_masking",
    "pair",
    ["bm_padding_selected", "bm_one_random_token"],
    bm(EXCLUDE="", WORDS="torch.randint(vocab_size, (1,), generator=gen).expand(input_ids.shape)"),
)
add(
    "bm_labels_at_mask_global",
    "bert_masking",
    "pair",
    ["bm_labels_only_at_mask", "bm_global_rng"],
    bm(**GLOBAL, LABELS="", LABELS_LATE="    labels[~replace] = -100"),
)
add(
    "bm_one_mask_two_percent",
    "bert_masking",
    "pair",
    ["bm_one_mask_for_the_batch", "bm_random_two_percent"],
    bm(
        SEL_SHAPE="input_ids.shape[1:]",
        EXCLUDE="",
        EXPAND=".expand(input_ids.shape) & ~special_tokens_mask(input_ids, special_ids)",
        P_RAND="0.1",
    ),
)
add(
    "bm_first_id_only_labels_everywhere",
    "bert_masking",
    "pair",
    ["bm_special_only_first_id", "bm_labels_everywhere"],
    bm(SPECIAL="    return input_ids == special_ids[0]", LABELS=""),
)
add(
    "bm_labels_corrupted_one_random_word",
    "bert_masking",
    "pair",
    ["bm_labels_are_corrupted_inputs", "bm_one_random_token"],
    bm(
        LABELS="",
        LABELS_LATE="    labels = torch.where(chosen, inputs, torch.full_like(inputs, -100))",
        WORDS="torch.randint(vocab_size, (), generator=gen).repeat(input_ids.shape)",
    ),
)
add(
    "bm_labels_corrupted_plus_small_range",
    "bert_masking",
    "plus",
    ["bm_labels_are_corrupted_inputs"],
    bm(
        LABELS="",
        LABELS_LATE="    labels = torch.where(chosen, inputs, torch.full_like(inputs, -100))",
        WORDS="torch.randint(10, input_ids.shape, generator=gen)",
    ),
)
add("bm_global_plus_rate_twenty", "bert_masking", "plus", ["bm_global_rng"], bm(**GLOBAL, P_SEL="0.2"))
add(
    "bm_all_masked_plus_int32_inputs",
    "bert_masking",
    "plus",
    ["bm_all_selected_masked"],
    swap(bm(P_MASK="1.0"), "    return inputs, labels\n", "    return inputs.int(), labels\n"),
)
# written another way
add(
    "bm_other_python_random",
    "bert_masking",
    "other",
    ["bm_global_rng"],
    HEADER
    + """
import random


def special_tokens_mask(input_ids, special_ids):
    return torch.isin(input_ids, torch.tensor(special_ids))


def mlm_mask(input_ids, special_ids, mask_id, vocab_size, seed):
    inputs, labels = input_ids.clone(), torch.full_like(input_ids, -100)
    special = special_tokens_mask(input_ids, special_ids)
    B, T = input_ids.shape
    for b in range(B):
        for t in range(T):
            if special[b, t] or random.random() >= 0.15:
                continue
            labels[b, t] = input_ids[b, t]
            u = random.random()
            if u < 0.8:
                inputs[b, t] = mask_id
            elif u < 0.9:
                inputs[b, t] = random.randrange(vocab_size)
    return inputs, labels
""",
)


# ================================================================ tiny_lm (the parts are pasted, as in the notebook)

TLM = (
    HEADER
    + """
def padding_mask(lengths, max_len=None):
    if (lengths < 0).any():
        raise ValueError("negative length")
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths > T).any():
        raise ValueError("a length is above max_len")
    return <<PAD>>


def causal_mask(T, device=None):
    return <<CAUSAL>>


def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2:
        raise ValueError("d must be even")
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    ang = pos * base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    return <<PE>>


def scaled_dot_product_attention(Q, K, V, mask=None):
    s = Q @ K.transpose(-2, -1)<<SDPA_SCALE>>
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = torch.softmax(s, <<SDPA_DIM>>)
    if mask is not None:
        w = torch.nan_to_num(w, nan=0.0).masked_fill(~mask, 0.0)
    return w @ V, w


def masked_cross_entropy(logits, targets, mask):
    if not mask.any():
        raise ValueError("empty mask")
    return <<MCE>>


def init_tiny_lm(vocab_size, d_model, seed):
    g = <<INIT_GEN>>
    std = 1 / math.sqrt(d_model)
    shapes = [(vocab_size, d_model)] + [(d_model, d_model)] * 4 + [(vocab_size, d_model)]
    return tuple(torch.randn(*s, generator=g) * std for s in shapes)


def tiny_lm_logits(tokens, lengths, params):
    E, Wq, Wk, Wv, Wo, Wout = params
    B, T = tokens.shape
    d = E.shape[-1]
    x = <<EMBED>> + <<PE_ADD>>
    m = <<MASK>>
    a, _ = scaled_dot_product_attention(x @ Wq.T, x @ Wk.T, x @ Wv.T, m)
    h = <<RESID>><<PE_LATE>>
    return h @ <<OUT_W>>.T


def tiny_lm_loss(tokens, lengths, params):
    logits = tiny_lm_logits(tokens, lengths, params)
    T = tokens.shape[1]
    valid = padding_mask(lengths, T)
<<LOSS>>


def train_tiny_lm(seed, steps):
    g = torch.Generator().manual_seed(seed)
    B, T, V = 32, 8, 10
    k = torch.randint(2, 5, (B,), generator=g)
    first = torch.randint(1, V, (B, 4), generator=g)
    tokens = torch.zeros(B, T, dtype=torch.long)
    for b in range(B):
        kb = int(k[b])
        tokens[b, :kb] = first[b, :kb]
        tokens[b, kb:2 * kb] = first[b, :kb]
    lengths = 2 * k
    params = [p.clone().requires_grad_() for p in init_tiny_lm(V, 16, seed)]
    opt = torch.optim.Adam(params, lr=0.02)
    losses = []
    for _ in range(steps):
        loss = tiny_lm_loss(tokens, lengths, params)
        opt.zero_grad()
        loss.backward()
<<STEP>>
        losses.append(float(loss))
    return losses
"""
)
TLM_DEFAULTS = dict(
    PAD="torch.arange(T).expand(len(lengths), T) < lengths.unsqueeze(1)",
    CAUSAL="torch.ones(T, T, dtype=torch.bool, device=device).tril()",
    PE="torch.stack((ang.sin(), ang.cos()), -1).flatten(1).float()",
    SDPA_SCALE=" / math.sqrt(Q.shape[-1])",
    SDPA_DIM="-1",
    MCE='F.cross_entropy(logits[mask], targets[mask], reduction="sum") / mask.sum()',
    INIT_GEN="torch.Generator().manual_seed(seed)",
    EMBED="E[tokens] * d ** 0.5",
    PE_ADD="sinusoidal_encoding(T, d).to(E.dtype)",
    MASK="causal_mask(T).unsqueeze(0) & padding_mask(lengths, T).unsqueeze(1)",
    RESID="x + a @ Wo.T",
    PE_LATE="",
    OUT_W="Wout",
    LOSS="    return masked_cross_entropy(logits[:, :-1], tokens[:, 1:], valid[:, 1:])",
    STEP="        opt.step()",
)


def tlm(**k):
    return fill(TLM, **{**TLM_DEFAULTS, **k})


add("tlm_correct", "tiny_lm", "correct", [], tlm())
add(
    "tlm_no_residual_no_scale",
    "tiny_lm",
    "pair",
    ["tiny_lm_no_residual", "tiny_lm_no_embedding_scale"],
    tlm(RESID="a @ Wo.T", EMBED="E[tokens]"),
)
add(
    "tlm_pe_late_output_E",
    "tiny_lm",
    "pair",
    ["tiny_lm_pe_after_attention", "tiny_lm_output_tied_to_embedding"],
    tlm(PE_ADD="0", PE_LATE=" + sinusoidal_encoding(T, d).to(E.dtype)", OUT_W="E"),
)
add(
    "tlm_loss_unshifted_per_sequence",
    "tiny_lm",
    "pair",
    ["tiny_lm_loss_targets_not_shifted", "tiny_lm_loss_mean_of_sequence_means"],
    tlm(
        LOSS="""
    per = [masked_cross_entropy(logits[b:b + 1], tokens[b:b + 1], valid[b:b + 1]) for b in range(len(tokens))]
    return torch.stack(per).mean()"""
    ),
)
add(
    "tlm_global_init_loss_backwards",
    "tiny_lm",
    "pair",
    ["tiny_lm_init_global_rng", "tiny_lm_loss_shifted_the_wrong_way"],
    tlm(INIT_GEN="None", LOSS="    return masked_cross_entropy(logits[:, 1:], tokens[:, :-1], valid[:, 1:])"),
)
add(
    "tlm_no_causal_no_scale",
    "tiny_lm",
    "pair",
    ["tiny_lm_no_causal_mask", "tiny_lm_no_embedding_scale"],
    tlm(MASK="padding_mask(lengths, T).unsqueeze(1)", EMBED="E[tokens]"),
)
add(
    "tlm_fixed_seed_output_E",
    "tiny_lm",
    "pair",
    ["tiny_lm_init_fixed_seed", "tiny_lm_output_tied_to_embedding"],
    tlm(INIT_GEN="torch.Generator().manual_seed(1234)", OUT_W="E"),
)
add(
    "tlm_no_residual_plus_logits_scaled",
    "tiny_lm",
    "plus",
    ["tiny_lm_no_residual"],
    tlm(RESID="a @ Wo.T", OUT_W="(Wout / math.sqrt(d))"),
)
add(
    "tlm_last_position_plus_half_loss",
    "tiny_lm",
    "plus",
    ["tiny_lm_loss_includes_last_position"],
    tlm(LOSS="    return masked_cross_entropy(logits[:, :-1], tokens[:, 1:], valid[:, :-1]) * 0.5"),
)
# a mistake in a pasted part (and sometimes a second one in the model)
add(
    "tlm_part_padding_off_by_one",
    "tiny_lm",
    "part",
    ["padding_mask_off_by_one"],
    tlm(PAD="torch.arange(T).expand(len(lengths), T) <= lengths.unsqueeze(1)"),
)
add(
    "tlm_part_padding_off_by_one_no_residual",
    "tiny_lm",
    "part",
    ["padding_mask_off_by_one", "tiny_lm_no_residual"],
    tlm(PAD="torch.arange(T).expand(len(lengths), T) <= lengths.unsqueeze(1)", RESID="a @ Wo.T"),
)
add(
    "tlm_part_causal_strict_loss_last",
    "tiny_lm",
    "part",
    ["causal_mask_excludes_diagonal", "tiny_lm_loss_includes_last_position"],
    tlm(
        CAUSAL="torch.ones(T, T, dtype=torch.bool, device=device).tril(-1)",
        LOSS="    return masked_cross_entropy(logits[:, :-1], tokens[:, 1:], valid[:, :-1])",
    ),
)
add(
    "tlm_part_sdpa_unscaled_fixed_seed",
    "tiny_lm",
    "part",
    ["sdpa_no_scaling", "tiny_lm_init_fixed_seed"],
    tlm(SDPA_SCALE="", INIT_GEN="torch.Generator().manual_seed(0)"),
)
add(
    "tlm_part_loss_sum_no_scale",
    "tiny_lm",
    "part",
    ["ml_sum_instead_of_mean", "tiny_lm_no_embedding_scale"],
    tlm(MCE='F.cross_entropy(logits[mask], targets[mask], reduction="sum")', EMBED="E[tokens]"),
)
add(
    "tlm_part_pe_swapped",
    "tiny_lm",
    "part",
    ["pe_sin_cos_swapped"],
    tlm(PE="torch.stack((ang.cos(), ang.sin()), -1).flatten(1).float()"),
)
add("tlm_part_sdpa_queries", "tiny_lm", "part", ["sdpa_softmax_over_queries"], tlm(SDPA_DIM="-2"))
add(
    "tlm_part_causal_upper",
    "tiny_lm",
    "part",
    ["tiny_lm_causal_mask_upper_triangle", "causal_mask_upper_triangle"],
    tlm(CAUSAL="torch.ones(T, T, dtype=torch.bool, device=device).triu()"),
)
add(
    "tlm_part_loss_per_sequence",
    "tiny_lm",
    "part",
    ["ml_per_sequence_mean"],
    tlm(MCE="torch.stack([F.cross_entropy(logits[b][mask[b]], targets[b][mask[b]]) for b in range(len(mask))]).mean()"),
)
# written another way
add(
    "tlm_other_inline_padding_only",
    "tiny_lm",
    "other",
    ["tiny_lm_no_causal_mask"],
    tlm(MASK="(torch.arange(T)[None, :] < lengths[:, None])[:, None, :]"),
)


# ================================================================ ablation

ABL = """import copy
import math

import torch
import torch.nn.functional as F


def order_task(n, T, V, generator=None):
    tokens = torch.randint(3, V, (n, T), generator=generator)
    pos = torch.rand(n, T, generator=generator).argsort(dim=1)[:, :2]
    rows = torch.arange(n)
    tokens[rows, pos[:, 0]] = 1
    tokens[rows, pos[:, 1]] = 2
    return tokens, (pos[:, 0] < pos[:, 1]).long()


def init_classifier(V, d, generator=None):
    E = torch.randn(V, d, generator=generator)
    W = [torch.randn(d, d, generator=generator) / math.sqrt(d) for _ in range(4)]
    W_2 = torch.randn(2, d, generator=generator) / math.sqrt(d)
    return [p.requires_grad_() for p in [E, *W, W_2]]


def sinusoidal_encoding(T, d, base=10000.0):
    t = torch.arange(T, dtype=torch.float64)[:, None]
    angle = t / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.empty(T, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = angle.sin(), angle.cos()
    return pe.float()


def classifier_logits(tokens, params, positional_encoding):
    E, W_q, W_k, W_v, W_1, W_2 = params
    n, T = tokens.shape
    d = E.shape[1]
    X = E[tokens]
    if positional_encoding:
        X = X + sinusoidal_encoding(T, d)
    scores = (X @ W_q.T) @ (X @ W_k.T).transpose(1, 2) / math.sqrt(d)
    H = X + torch.softmax(scores, dim=-1) @ (X @ W_v.T)
    return F.gelu(H @ W_1.T).mean(dim=1) @ W_2.T


def _walk(cfg, factor):
    keys = factor.split(".")
    node = cfg
    for k in keys[:-1]:
        if not isinstance(node, dict) or k not in node:
            raise ValueError(f"no entry {factor!r}")
        node = node[k]
    if not isinstance(node, dict) or keys[-1] not in node:
        raise ValueError(f"no entry {factor!r}")
    return node, keys[-1]


<<MAKE>>


def run_experiment(config):
    T, V = config["data"]["seq_len"], config["data"]["vocab_size"]
    d, pe = config["model"]["d_model"], config["model"]["positional_encoding"]
    steps, lr = config["train"]["steps"], config["train"]["lr"]
    gen = <<GEN>>
<<DRAWS>>
    opt = torch.optim.Adam(params, lr=<<LR>>)
    losses = <<LOSSES0>>
    for _ in range(steps):
        loss = F.cross_entropy(classifier_logits(<<TRAIN_X>>, params, <<PE_FLAG>>), <<TRAIN_Y>>)
<<UPDATE>>
        losses.append(loss.item())
    with torch.no_grad():
        pred = classifier_logits(<<EVAL_X>>, params, <<PE_FLAG>>).argmax(-1)
    return {"train_losses": losses, "test_accuracy": (pred == <<EVAL_Y>>).float().mean().item()}


def run_ablation(base, factor, values, seeds):
<<ABL_CHECK>>
    configs = make_ablation(base, factor, values)
<<ABL_LOOP>>
"""
MAKE_TEMPLATE = """def make_ablation(base, factor, values):
    _walk(base, factor)
    if len(values) < 2:
        raise ValueError("need at least two values")
    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            if values[i] == values[j]:
                raise ValueError("repeated value")
    out = []
    for {enum} in {values}:
        cfg = {copy}
        node, key = _walk(cfg, factor)
        node[key] = v
{seed}
        out.append(cfg)
    return out"""
MAKE_DEFAULT = MAKE_TEMPLATE.format(enum="v", values="values", copy="copy.deepcopy(base)", seed="")
ABL_DEFAULTS = dict(
    MAKE=MAKE_DEFAULT,
    GEN='torch.Generator().manual_seed(config["seed"])',
    DRAWS="""
    Xtr, ytr = order_task(config["data"]["n_train"], T, V, generator=gen)
    params = init_classifier(V, d, generator=gen)
    Xte, yte = order_task(config["data"]["n_test"], T, V, generator=gen)""",
    LR="lr",
    LOSSES0="[]",
    TRAIN_X="Xtr",
    TRAIN_Y="ytr",
    PE_FLAG="pe",
    UPDATE="""
        opt.zero_grad()
        loss.backward()
        opt.step()""",
    EVAL_X="Xte",
    EVAL_Y="yte",
    ABL_CHECK="""
    if factor == "seed":
        raise ValueError("the seed is not a factor")
    if not seeds or len(set(seeds)) < len(seeds):
        raise ValueError("seeds must be distinct and non-empty")""",
    ABL_LOOP="""
    results = []
    for cfg in configs:
        row = []
        for s in seeds:
            c = copy.deepcopy(cfg)
            c["seed"] = s
            row.append(run_experiment(c))
        results.append(row)
    return results""",
)


def make(enum="v", values="values", copy="copy.deepcopy(base)", seed=""):
    return MAKE_TEMPLATE.format(enum=enum, values=values, copy=copy, seed=seed)


def abl(**k):
    return fill(ABL, **{**ABL_DEFAULTS, **k})


add("abl_correct", "ablation", "correct", [], abl())
add(
    "abl_shallow_sorted",
    "ablation",
    "pair",
    ["ablation_shallow_copy", "ablation_values_sorted"],
    abl(MAKE=make(copy="dict(base)", values="sorted(values)")),
)
add(
    "abl_seed_per_config_adds_missing",
    "ablation",
    "pair",
    ["ablation_seed_per_config", "ablation_missing_factor_added"],
    abl(
        MAKE="""def make_ablation(base, factor, values):
    if len(values) < 2 or len(set(map(repr, values))) < len(values):
        raise ValueError("need at least two distinct values")
    configs = []
    for i, v in enumerate(values):
        cfg = copy.deepcopy(base)
        *path, last = factor.split(".")
        node = cfg
        for k in path:
            node = node.setdefault(k, {})
        node[last] = v
        cfg["seed"] = cfg["seed"] + i
        configs.append(cfg)
    return configs"""
    ),
)
add(
    "abl_train_accuracy_extra_loss",
    "ablation",
    "pair",
    ["ablation_accuracy_on_training_set", "ablation_extra_initial_loss"],
    abl(EVAL_X="Xtr", EVAL_Y="ytr", LOSSES0="[F.cross_entropy(classifier_logits(Xtr, params, pe), ytr).item()]"),
)
add(
    "abl_pe_ignored_test_first",
    "ablation",
    "pair",
    ["ablation_pe_flag_ignored", "ablation_test_set_drawn_before_params"],
    abl(
        PE_FLAG="True",
        DRAWS="""
    Xtr, ytr = order_task(config["data"]["n_train"], T, V, generator=gen)
    Xte, yte = order_task(config["data"]["n_test"], T, V, generator=gen)
    params = init_classifier(V, d, generator=gen)""",
    ),
)
add(
    "abl_unseeded_zero_grad_late",
    "ablation",
    "pair",
    ["ablation_generator_not_seeded", "ablation_zero_grad_after_backward"],
    abl(
        GEN="torch.Generator()",
        UPDATE="""
        loss.backward()
        opt.zero_grad()
        opt.step()""",
    ),
)
add(
    "abl_seeds_outer_no_checks",
    "ablation",
    "pair",
    ["ablation_seeds_outer_loop", "ablation_seed_factor_accepted"],
    abl(
        ABL_CHECK="",
        ABL_LOOP="""
    return [[run_experiment({**cfg, "seed": s}) for cfg in configs] for s in seeds]""",
    ),
)
add(
    "abl_no_copy_sorted",
    "ablation",
    "pair",
    ["ablation_config_is_base", "ablation_values_sorted"],
    abl(MAKE=make(copy="base", values="sorted(values)")),
)
add(
    "abl_global_data_extra_loss",
    "ablation",
    "pair",
    ["ablation_training_data_from_global_rng", "ablation_extra_initial_loss"],
    abl(
        DRAWS="""
    Xtr, ytr = order_task(config["data"]["n_train"], T, V)
    params = init_classifier(V, d, generator=gen)
    Xte, yte = order_task(config["data"]["n_test"], T, V, generator=gen)""",
        LOSSES0="[F.cross_entropy(classifier_logits(Xtr, params, pe), ytr).item()]",
    ),
)
add(
    "abl_trains_on_test_plus_fixed_lr",
    "ablation",
    "plus",
    ["ablation_trains_on_test_set"],
    abl(TRAIN_X="torch.cat([Xtr, Xte])", TRAIN_Y="torch.cat([ytr, yte])", LR="0.01"),
)
add(
    "abl_seed_offset_plus_sorted_seeds",
    "ablation",
    "plus",
    ["ablation_seed_offset_per_arm"],
    abl(
        ABL_LOOP="""
    results = []
    for i, cfg in enumerate(configs):
        results.append([run_experiment({**cfg, "seed": s + i}) for s in sorted(seeds)])
    return results"""
    ),
)
# written another way
add("abl_other_copy_copy", "ablation", "other", ["ablation_shallow_copy"], abl(MAKE=make(copy="copy.copy(base)")))
