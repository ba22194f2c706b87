"""Facts of `mlm_mask`, a random function: which special ids it selects or changes, the label it
gives the positions it does not select, and the shares of [MASK], random and unchanged tokens among
those it selects -- read from what the student returns on batches where every special id occurs
often, never from the draws themselves.

Only what the contract fixes is compared: a special token is never selected nor changed (any one
that is, is a fact, not a chance: each special id occurs at least 128 times per call, so a token
selected with probability 0.15 shows with probability > 1 - 1e-9); unselected labels are -100 (a
single other value seen wherever the label is not the original token is a fact); the shares among
the selected tokens are read through exact binomial bounds (a false reading below 1e-9 per check).
A fact is said only when every call shows it the same way, the selection itself looks like the
contract's (15% of the ordinary tokens, read the same way), and no catalogued mistake of `mlm_mask`
shows the same fact (that one is the diagnosis' business).
"""

import torch

from ...diagnose.registry import CallFailed, Guarded
from ...report.messages import pair

SPECIAL = [0, 101, 102, 103]  # [PAD], [CLS], [SEP], [MASK]
NAMES = {0: "[PAD]", 101: "[CLS]", 102: "[SEP]", 103: "[MASK]"}
MASK_ID, V, IGNORE = 103, 200, -100
CASES = [(128, 24, 1500, 31), (160, 16, 1501, 32)]  # (B, T, seed of the batch, seed of the call)
RATE_CASE = (1, 12000, 1502, 33)  # one long row: the shares among the selected tokens


def _rows(B, T, seed, mask_token=True):
    from .probes import bert_rows

    return bert_rows(B, T, V, seed, min_len=3 if B > 1 else T, with_mask_token=mask_token and B > 1)


def _result(ids, out):
    if isinstance(out, CallFailed) or not isinstance(out, (tuple, list)) or len(out) != 2:
        return None
    if not all(
        isinstance(x, torch.Tensor) and tuple(x.shape) == tuple(ids.shape) and not x.is_floating_point() for x in out
    ):
        return None
    return out[0].detach().cpu().to(torch.int64), out[1].detach().cpu().to(torch.int64)


def _reads(count, n, p):
    from .properties import binomial_interval

    if n == 0:
        return False
    lo, hi = binomial_interval(n, p)
    return lo <= count <= hi


def _facts(ids, got):
    """{fact: detail} of one call's (inputs, labels)."""
    inputs, labels = got
    facts = {}
    other = labels[labels != ids]
    values = set(other.tolist())
    if len(values) > 1:
        return None  # labels hold something else than the original token or one marker
    marker = values.pop() if values else IGNORE
    special = torch.isin(ids, torch.tensor(SPECIAL))
    selected = (labels == ids) & ~((ids == marker) & (labels == marker))
    ordinary = ~special & (ids != marker)
    n, S = int(ordinary.sum()), int((selected & ordinary).sum())
    if not _reads(S, n, 0.15):
        return None  # the selection itself is not the contract's: the facts below would mislead
    if bool((~selected & ~special & (inputs != ids)).any()):
        facts["changed unselected"] = True
    if marker != IGNORE:
        facts["label value"] = marker
    touched = special & (selected | (inputs != ids))
    ids_touched = tuple(sorted(set(ids[touched].tolist())))
    if ids_touched:
        facts["special"] = ids_touched
    return facts


def _rates(ids, got):
    """('mask', 'random', 'keep') shares among the selected ordinary tokens, each as 'ok' or its
    percentage, when some share is not the contract's; None otherwise."""
    inputs, labels = got
    other = labels[labels != ids]
    if len(set(other.tolist())) > 1:
        return None
    marker = other[0].item() if len(other) else IGNORE
    special = torch.isin(ids, torch.tensor(SPECIAL))
    sel = (labels == ids) & ~special & (ids != marker)
    S = int(sel.sum())
    if S < 1000 or not _reads(S, int((~special & (ids != marker)).sum()), 0.15):
        return None
    x, orig = inputs[sel], ids[sel]
    counts = {"mask": int((x == MASK_ID).sum()), "keep": int((x == orig).sum())}
    counts["random"] = S - counts["mask"] - counts["keep"]
    want = {"mask": 0.8, "random": 0.1, "keep": 0.1}
    if all(_reads(counts[k], S, want[k]) for k in want):
        return None
    # a random token equal to the original reads as unchanged: the contract's 10% + 10%/V
    if _reads(counts["keep"], S, 0.1 + 0.1 / V) and _reads(counts["mask"], S, 0.8):
        return None
    return tuple(round(100 * counts[k] / S) for k in ("mask", "random", "keep"))


def _observe(student, deadline=None):
    """([facts of each call] or None, rates or None, the text of the first call)."""
    g = Guarded(student)
    facts = []
    for B, T, seed, call_seed in CASES:
        if deadline is not None and deadline():
            return None, None
        ids = _rows(B, T, seed)
        with torch.random.fork_rng():
            got = _result(ids, g.call("mlm_mask", ids.clone(), list(SPECIAL), MASK_ID, V, call_seed))
        facts.append(_facts(ids, got) if got is not None else None)
    B, T, seed, call_seed = RATE_CASE
    ids = _rows(B, T, seed)
    with torch.random.fork_rng():
        got = _result(ids, g.call("mlm_mask", ids.clone(), list(SPECIAL), MASK_ID, V, call_seed))
    return facts, (_rates(ids, got) if got is not None else None)


def _shows(B, T, seed):
    return f"mlm_mask(input_ids {B}×{T}, special_ids={SPECIAL}, mask_id={MASK_ID}, vocab_size={V}, seed={seed})"


# ---------------------------------------------------------------- the interface the engine calls

FUNCTIONS = ("mlm_mask",)


def setup(function, ref_ns):
    """None: mlm_mask is random, explained by facts of what it returns (explain), not by variants."""
    return None


def explain(student, function, ref_ns, catalogued=(), deadline=None):
    """[claim] for mlm_mask (see the module docstring)."""
    facts, rates = _observe(student, deadline)
    if facts is None or any(f is None for f in facts):
        facts = None
    found = {}
    if facts:
        for key in ("special", "label value"):
            seen = [f.get(key) for f in facts]
            if seen[0] is not None and all(s == seen[0] for s in seen):
                found[key] = seen[0]
        if any(f.get("changed unselected") for f in facts):
            found.pop("special", None)  # changes everywhere: the special ids are not what differs
    if rates is not None:
        found["rates"] = rates
    if not found:
        return []
    for mistake in catalogued:  # a fact a catalogued mistake shows too is the diagnosis' business
        if deadline is not None and deadline():
            return []
        theirs, their_rates = _observe(mistake)
        for key in list(found):
            if key == "rates":  # shares within 3 points of a catalogued mistake's: that one
                if their_rates is not None and all(abs(a - b) <= 3 for a, b in zip(their_rates, found[key])):
                    found.pop(key)
            elif theirs and all(t is not None and t.get(key) == found[key] for t in theirs):
                found.pop(key)
    claims = []
    B, T, seed, call_seed = CASES[0]
    text = _shows(B, T, call_seed)
    something_else = facts is not None and any(f.get("changed unselected") for f in facts)
    if "special" in found:
        ids = found["special"]
        kept = [s for s in SPECIAL if s not in ids]
        names = ", ".join(f"{NAMES[s]} {s}" for s in ids)
        protected = ", ".join(f"{NAMES[s]} {s}" for s in kept) or "—"
        zh, en = pair("part.mlm_special", ids=names, kept=protected)
        claims.append(_claim("special selected:" + ",".join(map(str, ids)), zh, en, text, something_else))
    if "label value" in found:
        zh, en = pair("part.mlm_label_value", value=found["label value"])
        claims.append(_claim(f"unselected label {found['label value']}", zh, en, text, something_else))
    if "rates" in found:
        m, r, k = found["rates"]
        zh, en = pair("part.mlm_rates", mask=m, random=r, keep=k)
        claims.append(
            _claim(f"rates {m}/{r}/{k}", zh, en, _shows(RATE_CASE[0], RATE_CASE[1], RATE_CASE[3]), something_else)
        )
    return claims


def _claim(part, zh, en, shows, something_else):
    d = {"function": "mlm_mask", "part": part, "zh": zh, "en": en, "probe": shows}
    if something_else:
        d["else_zh"], d["else_en"] = pair("part.also_else")
    return d
