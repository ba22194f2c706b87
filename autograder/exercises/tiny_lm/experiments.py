"""Experiments for tiny_lm's tiny_lm_loss: the reference loss computed with one part altered.  Same
rules as the package's variants."""

import torch

from ...diagnose.parts.base import Call, Variant, _value

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


# ---------------------------------------------------------------- the interface the engine calls

FUNCTIONS = ("tiny_lm_loss",)


def setup(function, ref_ns):
    """(calls, variants) of `function`, or None."""
    if function == "tiny_lm_loss":
        return _lm_calls(ref_ns), _lm_variants(ref_ns)
    return None
