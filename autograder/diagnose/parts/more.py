"""Experiments for rope and timeseries: the reference computed with one argument or one index
altered (the offset taken as 0, positions counted along another axis, the horizon taken as 1,
windows taken across the boundary between the periods).  Same rules as the package's variants."""

import torch

from . import CRASHED, Call, Variant, _rnd, _value, first_wrong

# ---------------------------------------------------------------- rope

ROPE_CASES = [
    ((2, 5, 4), 3),
    ((1, 2, 4, 6), 2),
    ((2, 3, 6), 0),
    ((2, 1, 4, 4), 1),
    ((3, 4, 2), 5),
    ((1, 3, 3, 4), 4),
    ((2, 2, 3, 4), 0),
]


def _rotate(x, theta):
    """x (..., d) rotated pairwise by theta broadcast to (..., d/2)."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    c, s = torch.cos(theta), torch.sin(theta)
    return torch.stack([x1 * c - x2 * s, x1 * s + x2 * c], -1).flatten(-2)


def _rope_calls(ref_ns):
    calls = []
    for j, (shape, offset) in enumerate(ROPE_CASES):
        x = _rnd(shape, 9800 + j, 2.0).double()

        def run(g, x=x, offset=offset):
            kw = {"offset": offset} if offset else {}
            return [_value(g.call("apply_rope", x.clone(), **kw))]

        call = Call(
            f"apply_rope(x {'×'.join(map(str, shape))}" + (f", offset={offset})" if offset else ")"),
            run,
            (lambda x=x, offset=offset: [_value(ref_ns["apply_rope"](x, offset=offset))]),
        )
        call.inputs = (x, offset)
        calls.append(call)
    # past some position (a cos / sin table of fixed length), and a second call of another size (a kept table)
    for j, (shape, offset, before) in enumerate(ROPE_CONDITIONS):
        x = _rnd(shape, 9850 + j, 2.0).double()
        b = None if before is None else _rnd(before, 9870 + j, 2.0).double()

        def run(g, x=x, offset=offset, b=b):
            if b is not None:
                g.call("apply_rope", b.clone())
            kw = {"offset": offset} if offset else {}
            return [_value(g.call("apply_rope", x.clone(), **kw))]

        pre = "" if b is None else f"after apply_rope(x {'×'.join(map(str, before))}): "
        call = Call(
            pre + f"apply_rope(x {'×'.join(map(str, shape))}" + (f", offset={offset})" if offset else ")"),
            run,
            (lambda x=x, offset=offset: [_value(ref_ns["apply_rope"](x, offset=offset))]),
        )
        call.inputs = (x, offset)
        if b is None:
            call.condition, call.where = "long_positions", first_wrong(-2)
        else:
            call.condition = "second"
        calls.append(call)
    return calls


ROPE_CONDITIONS = [
    ((1, 200, 4), 0, None),
    ((2, 150, 6), 0, None),
    ((2, 9, 4), 0, (2, 3, 4)),
    ((1, 4, 6), 0, (1, 12, 6)),
    ((2, 5, 8), 0, (2, 5, 2)),
]


def _rope_variants(ref_ns):
    angles = ref_ns["rope_angles"]

    def offset_zero(i, call):
        x, offset = call.inputs
        return None if offset == 0 else [_value(ref_ns["apply_rope"](x, offset=0))]

    def along(axis):
        def outs(i, call):
            x, offset = call.inputs
            a = axis % x.dim()
            if a >= x.dim() - 2:
                return None
            shape = [1] * (x.dim() - 1) + [x.shape[-1] // 2]
            shape[a] = x.shape[a]
            theta = angles(x.shape[a], x.shape[-1], offset).double().reshape(shape)
            return [_value(_rotate(x, theta))]

        return outs

    def t_from(axis):  # rope_angles(x.shape[axis]) broadcast against the (T, d/2) axes
        def outs(i, call):
            x, offset = call.inputs
            a = axis % x.dim()
            if a == x.dim() - 2:
                return None
            theta = angles(x.shape[a], x.shape[-1], offset).double()
            try:
                return [_value(_rotate(x, theta))]
            except RuntimeError:
                return [CRASHED]

        return outs

    out = [Variant("offset ignored", "part.rope_offset_ignored", offset_zero)]
    for axis in (0, 1, -3):
        out.append(Variant(f"positions along axis {axis}", "part.rope_positions_axis", along(axis), axis=axis))
        out.append(Variant(f"T from axis {axis}", "part.rope_T_from_axis", t_from(axis), axis=axis))
    return out


# ---------------------------------------------------------------- timeseries

WINDOW_CASES = [(9, 2, 3, 2), (10, 1, 2, 3), (8, 2, 3, 1), (12, 1, 4, 4), (7, 3, 2, 2)]  # (N, F, window, horizon)
DATASET_CASES = [(16, 2, 10, 3, 2), (14, 1, 8, 2, 1), (18, 1, 11, 3, 3), (15, 2, 9, 2, 2)]  # (N, F, n_train, w, h)


def _series(N, F, seed):
    return _rnd((N, F), seed, 3.0).double() + torch.arange(N, dtype=torch.float64)[:, None] * 0.1


def _window_calls(ref_ns):
    calls = []
    for j, (N, F, w, h) in enumerate(WINDOW_CASES):
        s = _series(N, F, 9900 + j)

        def run(g, s=s, w=w, h=h):
            out = g.call("sliding_windows", s.clone(), w, h)
            return [_value(o) for o in out] if isinstance(out, (tuple, list)) and len(out) == 2 else [_value(out), None]

        call = Call(
            f"sliding_windows(series {N}×{F}, window={w}, horizon={h})",
            run,
            (lambda s=s, w=w, h=h: [_value(o) for o in ref_ns["sliding_windows"](s, w, h)]),
        )
        call.inputs = (s, w, h)
        calls.append(call)
    return calls


def _window_variants(ref_ns):
    def next_step(keep_m):
        def outs(i, call):
            s, w, h = call.inputs
            if h == 1:
                return None
            X, y = ref_ns["sliding_windows"](s, w, 1)
            if keep_m:  # the reference's number of windows, each target the next step
                M = s.shape[0] - w - h + 1
                X, y = X[:M], y[:M]
            return [_value(X), _value(y)]

        return outs

    return [
        Variant("horizon ignored", "part.ts_horizon_ignored", next_step(True)),
        Variant("horizon 1", "part.ts_horizon_one", next_step(False)),
    ]


def _dataset_calls(ref_ns):
    calls = []
    for j, (N, F, n, w, h) in enumerate(DATASET_CASES):
        s = _series(N, F, 9950 + j)

        def run(g, s=s, n=n, w=w, h=h):
            out = g.call("make_datasets", s.clone(), n, w, h)
            if isinstance(out, (tuple, list)) and len(out) == 6:
                return [_value(o) for o in out]
            return [_value(out)] + [None] * 5

        call = Call(
            f"make_datasets(series {N}×{F}, n_train={n}, window={w}, horizon={h})",
            run,
            (lambda s=s, n=n, w=w, h=h: [_value(o) for o in ref_ns["make_datasets"](s, n, w, h)]),
        )
        call.inputs = (s, n, w, h)
        calls.append(call)
    return calls


def _dataset_variants(ref_ns):
    def across(which):
        def outs(i, call):
            s, n, w, h = call.inputs
            ref = ref_ns["make_datasets"](s, n, w, h)
            mean, std = ref[4], ref[5]
            X, y = ref_ns["sliding_windows"]((s - mean) / std, w, h)
            target = torch.arange(X.shape[0]) + w - 1 + h  # the index of each window's target
            test = target >= n  # every window whose target lies in the test period, inputs in training too
            train = target < n  # (the reference's training windows)
            return [_value(X[train]), _value(y[train]), _value(X[test]), _value(y[test]), _value(mean), _value(std)]

        return outs

    return [Variant("test windows across the boundary", "part.ts_across_boundary", across("test by target"))]


# ---------------------------------------------------------------- tiny_lm

LM_CASES = [
    (3, 6, 7, 4, [6, 3, 4]),
    (2, 5, 6, 4, [2, 5]),
    (2, 7, 5, 2, [4, 7]),
    (3, 4, 6, 2, [3, 2, 4]),
]  # B, T, V, d, lengths


def _lm_calls(ref_ns):
    calls = []
    for j, (B, T, V, d, lengths) in enumerate(LM_CASES):
        g = torch.Generator().manual_seed(9990 + j)
        tokens = torch.randint(1, V, (B, T), generator=g)
        tokens[0, 1] = 0  # a valid token 0: padding is not "token 0"
        L = torch.tensor(lengths)
        params = ref_ns["init_tiny_lm"](V, d, 70 + j)

        def run(g, tokens=tokens, L=L, params=params):
            return [_value(g.call("tiny_lm_loss", tokens.clone(), L.clone(), tuple(p.clone() for p in params)))]

        call = Call(
            f"tiny_lm_loss(tokens {B}×{T}, lengths={lengths}, params)",
            run,
            (lambda tokens=tokens, L=L, params=params: [_value(ref_ns["tiny_lm_loss"](tokens, L, params))]),
        )
        call.inputs = (tokens, L, params)
        calls.append(call)
    return calls


def _lm_variants(ref_ns):
    def by_token_zero(lengths_too):
        def outs(i, call):
            tokens, L, params = call.inputs
            nonzero = tokens != 0
            with torch.no_grad():
                logits = ref_ns["tiny_lm_logits"](tokens, nonzero.sum(1) if lengths_too else L, params)
                return [_value(ref_ns["masked_cross_entropy"](logits[:, :-1], tokens[:, 1:], nonzero[:, 1:]))]

        return outs

    return [
        Variant("padding by token 0", "part.lm_padding_by_token", by_token_zero(False)),
        Variant("padding by token 0, lengths too", "part.lm_padding_by_token", by_token_zero(True)),
    ]


FUNCTIONS = {"rope": ("apply_rope",), "timeseries": ("sliding_windows", "make_datasets"), "tiny_lm": ("tiny_lm_loss",)}


def setup(exercise, function, ref_ns):
    if function == "apply_rope":
        return _rope_calls(ref_ns), _rope_variants(ref_ns)
    if function == "sliding_windows":
        return _window_calls(ref_ns), _window_variants(ref_ns)
    if function == "tiny_lm_loss":
        return _lm_calls(ref_ns), _lm_variants(ref_ns)
    if function == "make_datasets":
        return _dataset_calls(ref_ns), _dataset_variants(ref_ns)
    return None
