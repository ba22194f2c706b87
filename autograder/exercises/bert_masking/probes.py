"""Probes of the `bert_masking` exercise: special_tokens_mask, mlm_mask.

mlm_mask is random: its probes compare only what the contract fixes (structure, rates read through
exact binomial bounds, seeding), never the draws."""

import torch

from ...diagnose.inputs import generator, global_state_moves
from ...diagnose.registry import probe

EX = "bert_masking"
MLM = "mlm_mask"
BERT_IDS = [0, 101, 102, 103]  # [PAD], [CLS], [SEP], [MASK]
IGNORE = -100


@probe(EX, "special_tokens_mask")
def _bm_special(s):
    return [
        s.call("special_tokens_mask", torch.tensor([[1, 7, 8, 2, 0, 0]]), [0, 1, 2, 3]),
        s.call("special_tokens_mask", torch.tensor([[101, 2003, 103, 102, 0], [101, 100, 104, 102, 0]]), BERT_IDS),
        s.call("special_tokens_mask", torch.tensor([[5, 0, 9, 5], [3, 9, 9, 4]]), [9, 5, 3]),
        s.call("special_tokens_mask", torch.tensor([[0, 6, 7, 6]]), [6]),
    ]


def bert_rows(B, T, V, seed, min_len, with_mask_token=False):
    """(B, T) BERT-like rows: [CLS] ordinary tokens [SEP], then [PAD]; lengths in [min_len, T];
    with_mask_token: a [MASK] token at position 1 (so that every special id occurs often)."""
    g = generator(seed)
    ordinary = torch.tensor([i for i in range(V) if i not in BERT_IDS])
    ids = ordinary[torch.randint(0, len(ordinary), (B, T), generator=g)]
    lengths = torch.randint(min_len, T + 1, (B,), generator=g)[:, None]
    t = torch.arange(T)[None, :]
    ids = torch.where(t == 0, 101, ids)
    if with_mask_token:
        ids = torch.where(t == 1, 103, ids)
    ids = torch.where(t == lengths - 1, 102, ids)
    return torch.where(t >= lengths, 0, ids)


def inputs_and_labels(ids, res):
    """(inputs, labels) detached, or None when the result is not two (B, T) integer tensors."""
    if not isinstance(res, (tuple, list)) or len(res) != 2:
        return None
    if not all(
        isinstance(x, torch.Tensor) and tuple(x.shape) == tuple(ids.shape) and not x.is_floating_point() for x in res
    ):
        return None
    return res[0].detach().to(torch.int64), res[1].detach().to(torch.int64)


def kind_of(res):
    """What came back, as types, shapes and dtypes (for results that are not two (B, T) tensors)."""
    if isinstance(res, (tuple, list)):
        return (
            "kind",
            tuple(
                (type(x).__name__, tuple(x.shape), str(x.dtype)) if isinstance(x, torch.Tensor) else type(x).__name__
                for x in res[:3]
            ),
            len(res),
        )
    return ("kind", type(res).__name__)


def read_rate(count, n, grid):
    """The rate count / n read as a value of `grid`: the nearest of those whose exact binomial
    interval holds count (a false rejection below 1e-9, so a rate reads the same whatever the RNG
    scheme), 'other' when none does."""
    from .properties import binomial_interval

    if n == 0:
        return "n=0"
    bounds = {p: binomial_interval(n, p) for p in grid}
    fits = [p for p, (lo, hi) in bounds.items() if lo <= count <= hi]
    return min(fits, key=lambda p: abs(count / n - p)) if fits else "other"


@probe(EX, MLM)
def masking_facts(s):
    """Structural facts that hold for every draw, on a batch where every special id occurs >= 96
    times (a token selected with probability 0.15 is then selected at least once, except with
    probability 0.85^96 < 2e-7) and 37 columns are selectable (a (T,) mask broadcast over the batch
    selects some): dtypes, which special ids are ever touched, what labels hold, whether unlabelled
    tokens change; and the seed: same seed (global state changed) -> same result, another seed ->
    another result."""
    ids = bert_rows(96, 40, 200, 1200, min_len=3, with_mask_token=True)
    args = (BERT_IDS, 103, 200)
    torch.manual_seed(111)  # code drawing from the global state sees another state each time
    res = s.call(MLM, ids, *args, 5)
    got = inputs_and_labels(ids, res)
    if got is None:
        return kind_of(res)
    inputs, labels = got
    lab = labels != IGNORE
    special = torch.isin(ids, torch.tensor(BERT_IDS))
    touched = special & (lab | (inputs != ids))
    foreign = sorted(set(labels[lab & (labels != ids)].tolist()))
    torch.manual_seed(222)
    again = inputs_and_labels(ids, s.call(MLM, ids, *args, 5))
    other = inputs_and_labels(ids, s.call(MLM, ids, *args, 6))
    same = again is not None and all(torch.equal(x, y) for x, y in zip(got, again))
    same_other = other is not None and all(torch.equal(x, y) for x, y in zip(got, other))
    return [
        [str(x.dtype) for x in res],
        tuple(sorted(set(ids[touched].tolist()))),  # special ids ever selected or changed
        bool((labels[lab] == ids[lab]).all()),  # labels hold the original tokens
        # labels hold the replaced inputs ([MASK] where the original was another token)
        bool((labels[lab] == inputs[lab]).all()) and bool((labels[lab & (ids != 103)] == 103).any()),
        tuple(foreign) if len(foreign) <= 3 else "many",  # label values that are neither -100 nor the original
        bool((~lab & (inputs != ids)).any()),  # an unlabelled token changed
        bool(((inputs < 0) | (inputs >= 200)).any()),
        same,
        same_other,
    ]


@probe(EX, MLM)
def masking_rates(s):
    """Rates on one long sequence (11998 ordinary tokens between [CLS] and [SEP]): the share of
    tokens labelled, and among them the shares replaced by [MASK], by another token, left
    unchanged, each read as one of the rates the contract or a catalogued mistake gives (exact
    binomial bounds, so any RNG scheme reads the same); and whether the other tokens look uniform.
    One sequence: one mask broadcast over a batch reads as the contract here (see identical_rows_masked_alike)."""
    V, mask_id = 1000, 103
    ids = bert_rows(1, 12000, V, 1210, min_len=12000)
    got = inputs_and_labels(ids, s.call(MLM, ids, BERT_IDS, mask_id, V, 11))
    if got is None:
        return "unusable"
    inputs, labels = got
    can = ~torch.isin(ids, torch.tensor(BERT_IDS))
    sel = (labels != IGNORE) & can
    n, S = int(can.sum()), int(sel.sum())
    x, orig = inputs[sel], ids[sel]
    n_mask, n_keep = int((x == mask_id).sum()), int((x == orig).sum())
    others = x[(x != mask_id) & (x != orig)]
    R = len(others)
    if R == 0:
        uniform = "none"
    elif R >= 2 and len(set(others.tolist())) == 1:
        uniform = "one"
    else:
        from .properties import binomial_interval

        top = int(torch.bincount(others.clamp(0, V - 1), minlength=V).max())
        _, hi = binomial_interval(R, 1 / (V - 2 - len(BERT_IDS)), 1e-9 / V, upper_only=True)
        uniform = "uniform" if top <= hi else "skewed"
    rate = read_rate(S, n, (0.12, 0.15, 0.8, 1.0))  # labelled: 0.15 (0.12 = 0.15 x 0.8: [MASK] only)
    if rate not in (0.12, 0.15, 0.8):  # labels everywhere (or nowhere): the mix means nothing
        return [rate]
    return [
        rate,
        read_rate(n_mask, S, (0.15, 0.8, 1.0)),
        read_rate(S - n_mask - n_keep, S, (0.0, 0.02, 0.1)),  # 0.02 = 0.2 x 0.1
        read_rate(n_keep, S, (0.0, 0.1, 0.18, 0.75)),
        uniform,
    ]


@probe(EX, MLM)
def identical_rows_masked_alike(s):
    """16 identical sequences (126 selectable tokens each): does any pair get the same selection?
    (Two independent rows do with probability < 1e-16.)"""
    row = bert_rows(1, 128, 200, 1220, min_len=128)
    ids = row.expand(16, 128).contiguous()
    got = inputs_and_labels(ids, s.call(MLM, ids, BERT_IDS, 103, 200, 12))
    if got is None:
        return "unusable"
    sel = got[1] != IGNORE
    return any(bool((sel[i] == sel[j]).all()) for i in range(16) for j in range(i + 1, 16))


@probe(EX, MLM)
def every_ordinary_id_comes_up(s):
    """A small vocabulary (V = 8; 0..3 special, 3 the mask) in 32768 tokens: does some ordinary id never
    come up as a random replacement?  A correct draw from [0, V) (or from the ordinary ids) makes each
    ordinary id about 42 times here (never with probability < 1e-17); randint(0, V - 1) never makes 7."""
    from .properties import _batch

    special, V = [0, 1, 2, 3], 8
    ids = _batch(128, 256, V, special, 1240, min_len=224)
    got = inputs_and_labels(ids, s.call(MLM, ids, special, 3, V, 15))
    if got is None:
        return ["unusable"]
    inputs, labels = got
    sel = labels != IGNORE
    return [any(int((sel & (ids != v) & (inputs == v)).sum()) == 0 for v in range(4, V))]


@probe(EX, MLM)
def global_random_state_left_alone(s):
    """Do two calls (seeds 13, 14) leave the global random states alone?"""
    ids = bert_rows(4, 12, 200, 1230, min_len=4)
    return global_state_moves(s, MLM, (ids, BERT_IDS, 103, 200, 13), (ids, BERT_IDS, 103, 200, 14))
