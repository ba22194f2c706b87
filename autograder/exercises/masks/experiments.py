"""The explanation by part of the `masks` exercise (the engine: autograder/diagnose/parts/): a
mask's variants, one condition of the reference's mask (the diagonal, the future, the first padded
position...) set, cleared or flipped, and the calls past the small cases' positions and batch sizes."""

import torch

from ...diagnose.parts.base import (
    Call,
    Variant,
    _gen,
    _value,
    first_wrong,
)

PAD_CASES = [([3, 0, 2], None), ([1, 4, 2], 6), ([2, 2], 2), ([5], None), ([4, 1, 3, 2], 5), ([2, 0], 3)]
CAUSAL_CASES = [1, 2, 3, 4, 6]
ATT_CASES = [
    ([3, 1, 2], None, False),
    ([3, 1, 2], None, True),
    ([2, 4], 5, True),
    ([1, 3], 4, False),
    ([4, 2, 3], 5, False),
    ([2, 3, 1], 4, True),
]


def _causal_grid(a):
    T = a[0]
    return torch.arange(T)[:, None], torch.arange(T)[None, :], T


def _padding_grid(a):
    L = torch.as_tensor(a[0])[:, None]
    T = int(L.max()) if a[1] is None else a[1]
    return torch.arange(T)[None, :], L, T


def _attention_grid(a):
    L = torch.as_tensor(a[0])[:, None, None, None]
    T = int(L.max()) if a[1] is None else a[1]
    return torch.arange(T)[None, None, :, None], torch.arange(T)[None, None, None, :], L, a[2]


CONDITIONS = {  # function -> [(id, (grid's values) -> bool tensor)], the more specific first
    "causal_mask": (
        _causal_grid,
        [
            ("diagonal", lambda i, j, T: i == j),
            ("future", lambda i, j, T: j > i),
            ("next key", lambda i, j, T: j == i + 1),
            ("previous key", lambda i, j, T: j == i - 1),
            ("first row", lambda i, j, T: (i == 0) & (j >= 0)),
            ("last row", lambda i, j, T: (i == T - 1) & (j >= 0)),
            ("first column", lambda i, j, T: (j == 0) & (i >= 0)),
            ("last column", lambda i, j, T: (j == T - 1) & (i >= 0)),
        ],
    ),
    "padding_mask": (
        _padding_grid,
        [
            ("first padded", lambda t, L, T: t == L),
            ("last valid", lambda t, L, T: t == L - 1),
            ("first position", lambda t, L, T: (t == 0) & (L >= 0)),
            ("last position", lambda t, L, T: (t == T - 1) & (L >= 0)),
            ("empty rows", lambda t, L, T: (L == 0) & (t >= 0)),
            ("full rows", lambda t, L, T: (L == T) & (t >= 0)),
        ],
    ),
    "attention_mask": (
        _attention_grid,
        [
            ("padded queries", lambda i, j, L, c: (i >= L) & (j >= 0)),
            ("padded keys", lambda i, j, L, c: (j >= L) & (i >= 0)),
            ("padded diagonal", lambda i, j, L, c: (i == j) & (i >= L)),
            ("diagonal", lambda i, j, L, c: (i == j) & (L >= 0)),
            ("first key", lambda i, j, L, c: (j == 0) & (i >= 0) & (L >= 0)),
            ("future", lambda i, j, L, c: (j > i) & (L >= 0) & c),
            ("last valid key", lambda i, j, L, c: (j == L - 1) & (i >= 0)),
        ],
    ),
}


def _mask_conditions(function):
    """[(id, cond(case) -> bool tensor of the mask's shape)] for a mask function."""
    grid, conditions = CONDITIONS[function]
    return [(cid, lambda a, f=f: f(*grid(a))) for cid, f in conditions]


COND_WORDS = {  # condition id -> (zh, en)
    "diagonal": ("对角线 (i == j)", "the diagonal (i == j)"),
    "future": ("未来的位置 (j > i)", "the future (j > i)"),
    "next key": ("下一个位置 (j == i + 1)", "the next key (j == i + 1)"),
    "previous key": ("上一个位置 (j == i - 1)", "the previous key (j == i - 1)"),
    "first row": ("第一行 (i == 0)", "the first row (i == 0)"),
    "last row": ("最后一行 (i == T - 1)", "the last row (i == T - 1)"),
    "first column": ("第一列 (j == 0)", "the first column (j == 0)"),
    "last column": ("最后一列 (j == T - 1)", "the last column (j == T - 1)"),
    "first padded": ("每行第一个填充位置 (t == lengths[b])", "the first padded position of each row (t == lengths[b])"),
    "last valid": (
        "每行最后一个有效位置 (t == lengths[b] - 1)",
        "the last valid position of each row (t == lengths[b] - 1)",
    ),
    "first position": ("第一个位置 (t == 0)", "the first position (t == 0)"),
    "last position": ("最后一个位置 (t == T - 1)", "the last position (t == T - 1)"),
    "empty rows": ("长度为 0 的行", "the rows of length 0"),
    "full rows": ("没有填充的行 (lengths[b] == T)", "the rows without padding (lengths[b] == T)"),
    "padded queries": ("填充的查询行 (i >= lengths[b])", "the padded query rows (i >= lengths[b])"),
    "padded keys": ("填充的键列 (j >= lengths[b])", "the padded key columns (j >= lengths[b])"),
    "padded diagonal": (
        "填充查询行的对角线 (i == j >= lengths[b])",
        "the diagonal of the padded query rows (i == j >= lengths[b])",
    ),
    "first key": ("第一个键 (j == 0)", "the first key (j == 0)"),
    "last valid key": ("最后一个有效的键 (j == lengths[b] - 1)", "the last valid key (j == lengths[b] - 1)"),
}


def _mask_calls(ref_ns, function):
    if function == "causal_mask":
        cases = [(T,) for T in CAUSAL_CASES]
    elif function == "padding_mask":
        cases = PAD_CASES
    else:
        cases = ATT_CASES
    tags = [None] * len(cases)
    for cond, more in MASK_CONDITIONS[function]:
        cases, tags = cases + more, tags + [cond] * len(more)
    calls = []
    for a, tag in zip(cases, tags):

        def args(a=a):
            if function == "causal_mask":
                return (a[0],), {}
            kw = {} if a[1] is None else {"max_len": a[1]}
            if function == "attention_mask" and a[2]:
                kw["causal"] = True
            return (torch.tensor(a[0]),), kw

        def run(g, args=args):
            p, kw = args()
            return [_value(g.call(function, *p, **kw))]

        def reference(args=args):
            p, kw = args()
            return [_value(ref_ns[function](*p, **kw))]

        p, kw = args()
        shown = ", ".join(
            [
                repr(x)
                if not isinstance(x, torch.Tensor)
                else f"tensor({x.tolist()})"
                if x.numel() <= 8
                else f"lengths of {x.numel()} sequences {x.tolist()[:6]}…"
                for x in p
            ]
            + [f"{k}={v!r}" for k, v in kw.items()]
        )
        call = Call(f"{function}({shown})", run, reference)
        call.case = a
        if tag is not None:
            call.condition = tag
            call.where = (
                first_wrong(0)
                if tag == "big_batch"
                else first_wrong(-1)
                if function == "padding_mask"
                else _first_wrong_square
            )
        calls.append(call)
    return calls


def _first_wrong_square(S, R, calls):
    """first_wrong over a (query, key) square: the first position t whose row or column is wrong (the
    t×t block before it is right)."""
    a, b = first_wrong(-2)(S, R, calls), first_wrong(-1)(S, R, calls)
    return {"skip": True} if "skip" in a or "skip" in b else {"t": min(a["t"], b["t"])}


def _lengths(n, T, seed):
    return torch.randint(1, T + 1, (n,), generator=_gen(seed)).tolist()


MASK_CONDITIONS = {  # function -> [(condition, [case])]: past the positions and batch sizes of the cases above
    "causal_mask": [("long_positions", [(100,), (150,)])],
    "padding_mask": [
        ("long_positions", [([150, 3, 97], None), ([130, 130, 1], 140)]),
        ("big_batch", [(_lengths(40, 6, 1), 6), (_lengths(33, 5, 2), None)]),
    ],
    "attention_mask": [
        ("long_positions", [([130, 70], None, True), ([100, 100, 5], 120, False)]),
        ("big_batch", [(_lengths(40, 4, 3), 4, False), (_lengths(24, 3, 4) + [3], None, True)]),
    ],
}


def _mask_variants(function):
    out = []
    for cid, cond in _mask_conditions(function):
        for op in ("on", "off", "flip"):

            def outs(i, call, cond=cond, op=op):
                r = call.ref()[0]
                if r is None:
                    return None
                m = cond(call.case).expand(r.shape) if cond(call.case).dim() == r.dim() else None
                if m is None or m.shape != r.shape:
                    return None
                rb = r != 0
                v = rb | m if op == "on" else rb & ~m if op == "off" else rb ^ m
                return [v.to(torch.float64)]

            zh, en = COND_WORDS[cid]
            out.append(Variant(f"{cid}:{op}", f"part.mask_{op}", outs, where_zh=zh, where_en=en))
    return out


# ---------------------------------------------------------------- the interface the engine calls

FUNCTIONS = ("padding_mask", "causal_mask", "attention_mask")


def setup(function, ref_ns):
    """(calls, variants) of `function`, or None."""
    if function in FUNCTIONS:
        return _mask_calls(ref_ns, function), _mask_variants(function)
    return None
