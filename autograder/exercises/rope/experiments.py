"""Experiments for rope's apply_rope: the reference computed with one argument or one index altered
(the offset taken as 0, positions counted along another axis, the rotation the other way).  Same rules
as the package's variants."""

import torch

from ...diagnose.parts.base import CRASHED, Call, Variant, _rnd, _value, first_wrong

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


# ---------------------------------------------------------------- the interface the engine calls

FUNCTIONS = ("apply_rope",)


def setup(function, ref_ns):
    """(calls, variants) of `function`, or None."""
    if function == "apply_rope":
        return _rope_calls(ref_ns), _rope_variants(ref_ns)
    return None
