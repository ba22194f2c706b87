"""The diagnosis' engine: which catalogued mistakes explain how a failing function deviates.

For every contract function a fixed set of small, seeded *probes* (probes/<exercise>.py) is run
three ways, through the same Student interface the properties use:

* on the student's code (an in-process ``Student`` or a sandboxed ``RemoteStudent``),
* on the reference solution (solutions/<exercise>.py),
* on every catalogued mistake of the exercise (the reference with the entry's ``code`` appended:
  trusted code, executed here in the judge, never in the worker), in each of its *forms* (the same
  mistake written with ``-inf``, ``-1e9`` or ``finfo.min``, with ``triu()`` or ``triu(1)``); for
  tiny_lm also every mistake of the parts the student pastes into it (padding_mask, causal_mask,
  sinusoidal_encoding, the attention function, the masked loss).

What a probe returns is cut into *aspects* along the reference's own result: the rows of every
tensor (a row of a mask, of attention weights, of a gradient...; compared entry by entry, row i
with row i when the student has more or fewer rows; the same numbers in another form, a Python
number or axes of size 1 more or less, compared by value), its dtype (or form), every number, flag ("raises
ValueError", "finite") and failure of a call (each call of a probe is observed on its own).  For a
mistake M, where M's result differs from the reference's, a row (or value) is

* a **hit** when the student gives M's values at every entry where M differs (a row of numbers may
  differ elsewhere too: a second defect; a mask row must be M's exactly),
* a **contradiction** when the student gives the reference's value at one of them (a number:
  well within the tolerance, where M's is clearly outside it): M is not in the student's code,
  and is never named (a flag M gets wrong on the way, a check its code leaves
  out, only counts against it; so does a row count its broadcasting adds),
* a **miss** when the student differs there from both (something else changes it too),
* unknown when M's code crashes there (it says nothing of what the mistake computes there) --
  unless the student is right there, which refutes M.

M *accounts for* part of a failing function f when it is not refuted in f nor in its own function
g (a wrong padding_mask is named on attention_mask's tests only when the student's padding_mask
makes the mistake and their attention_mask inherits it), and more probes support it than refute it
(a probe supports it when at least as many of its outputs are mostly M's as are not; a probe
refutes it when one of them is not and the student has the reference's value somewhere M differs
there, or it is one number; numbers differing from the reference at every one of M's entries may
be M and a second defect changing the same values: they say nothing either way when M reproduces
something on a probe made so that a part of the function cannot matter -- a recurrent gate
saturated, two gate blocks alike -- and count against it otherwise, for a wrong constant meets a
catalogued one at some size; once M is reproduced on such a probe, a single number differing
from both elsewhere no longer counts against it either).  Named are:

1. those that reproduce something only they give: a value no other catalogued mistake of g gives
   there (flags count only when they are all M claims and the function does not crash; when M's
   values are all the student's deviations in g, another mistake the student refutes is no rival);
2. then the others, together, when with those of 1 nothing is left unexplained in f and in their
   own functions;
3. if something is still unexplained, two mistakes at once (their code composed, see
   compositions()) that reproduce everything exactly, tried among the mistakes nothing refutes,
   those that deviate where most of the student's deviations are first;

then a named mistake that explains nothing the others do not is dropped, and so is one whose own
part another unnamed mistake explains as well (a guess).  A part's mistake that also explains the
student's own part goes before a model mistake that only looks the same from outside.  What
differs and no named mistake explains is reported as "something else differs", with the calls
where it shows.  Nothing accounting for anything means nothing is named, and the property's own
feedback stands.

Mistakes are run lazily, probe by probe, stopping at the first refutation (a form of a mistake
refuted where its first form was is not run again); mistakes whose code cannot reach f (it
redefines nothing f uses) are not run at all.  A diagnosis costs 0.1-1 s in the judge; it runs
after every test of an exercise has its result (judge/runner.py), under its own time budget,
and only adds to them.
"""

import difflib
import functools
import math
import re
import signal
import threading
import time

import torch

from ..catalogue import load_catalogue, reference_solution
from ..errors import PropertyFailure, TestTimeout
from ..load import source
from .registry import PROBES, CallFailed, Guarded, failure_kind, load_probes, probe  # noqa: F401 - probe: the public decorator
from .values import close_numbers, near

# every exercise's probes registered (autograder/exercises/<exercise>/probes.py); the functions
# tiny_lm's model is built from, and the exercise of each
PARTS = load_probes()["tiny_lm"].PARTS

# The diagnosis' own time (its budget, the pair search's, how slow a function's probes are) is the
# judge's CPU time, not the wall clock: on a loaded machine the wall clock runs several times faster
# than the work done, and a diagnosis cut short there would differ from the same one on a quiet
# machine.  (The wall clock only guards against a hang: diagnose_outcomes' alarm.)
_clock = time.process_time
FAILED = ("failed", "error", "timeout")

# ---------------------------------------------------------------- observations


def encode(x):
    """A comparable, plain description of what a probe returned."""
    if isinstance(x, CallFailed):
        # an input written in place: which one is part of what it does (a loss writing into its
        # targets is not the catalogued one writing into its logits)
        return ("F", x.kind, x.written) if x.written is not None else ("F", x.kind)
    if isinstance(x, torch.Tensor) and x.is_meta:  # no values (device="meta")
        return ("P", "str", f"meta {x.dtype} {tuple(x.shape)}")
    if isinstance(x, torch.Tensor):
        t = x.detach()
        vals = t.to(torch.float64) if t.is_floating_point() else t.to(torch.int64)
        return ("T", str(t.dtype), tuple(t.shape), vals)
    if isinstance(x, (tuple, list)):
        return ("L", "seq", tuple(encode(v) for v in x))  # a list reads as a tuple
    if isinstance(x, dict):
        return ("D", tuple(sorted((str(k), encode(v)) for k, v in x.items())))
    if x is None or isinstance(x, (bool, int, float, str)):
        return ("P", type(x).__name__, x)
    return ("O", type(x).__name__)


def same(a, b):
    """True when two encoded results (`encode`) match: same kind, dtype and shape, floats close
    (`near`, `close_numbers`), the rest equal."""
    if a[0] != b[0]:
        return False
    if a[0] == "T":
        if a[1] != b[1] or a[2] != b[2]:
            return False
        if a[3].dtype == torch.float64:
            return bool(near(a[3], b[3]).all())
        return bool((a[3] == b[3]).all())
    if a[0] == "L":
        return len(a[2]) == len(b[2]) and all(same(x, y) for x, y in zip(a[2], b[2]))
    if a[0] == "D":
        return [k for k, _ in a[1]] == [k for k, _ in b[1]] and all(same(x, y) for (_, x), (_, y) in zip(a[1], b[1]))
    if a[0] == "P":
        if a[1] != b[1]:
            return False
        if a[1] == "float":
            x, y = a[2], b[2]
            return close_numbers(x, y)
        return a[2] == b[2]
    return a == b


def observe(student, fn, calls=None, log=None):
    """One probe on one student: its encoded result; ("missing",) when a function it needs is not
    there; ("F", "error" | "inplace"[, the argument written]) when the probe could not use what came back.  `calls`, a
    list, receives the text of the calls the probe made; `log`, a list, Guarded.log."""
    guarded = Guarded(student)
    try:
        with torch.enable_grad():
            return encode(fn(guarded))
    except TestTimeout:
        raise
    except PropertyFailure as f:  # a missing function (guarded calls give CallFailed otherwise)
        kind = failure_kind(f)
        return ("missing",) if kind == "missing" else ("F", kind)
    except Exception:  # noqa: BLE001 - the probe could not use what came back
        return ("F", "error")
    finally:
        if calls is not None:
            calls.extend(guarded.calls)
        if log is not None:
            log.extend(guarded.log)


def observations(student, exercise, function):
    """The encoded result of each probe of `exercise`'s `function` on `student` (`observe`)."""
    return [observe(student, fn) for fn in PROBES.get(exercise, {}).get(function, [])]


def agree(xs, ys):
    """True when two lists of observations match one for one (`same`)."""
    return len(xs) == len(ys) and all(same(x, y) for x, y in zip(xs, ys))


# ---------------------------------------------------------------- aspects


def aspects(ref, node, path=(), out=None):
    """{key: value} of `node` (an encoded result) cut along the reference's result `ref`: each of
    ref's tensors as ("R", its rows: a 2-D tensor, one row per vector along the last axis) with its
    ("dtype",); each number, flag or string; ("len",) of each list.  Where `node` does not have
    ref's structure (another shape, a failed call, no such key) every key below holds ("W", node)."""
    out = {} if out is None else out
    kind = ref[0]
    if kind == "T":
        if node[0] == "T" and node[2] == ref[2]:
            out[path + ("dtype",)] = ("P", "str", node[1])
            out[path + ("values",)] = ("R", _as_rows(node[3]))
            if len(ref[2]) >= 2:
                out[path + ("leading",)] = ("P", "int", node[2][0])
            return out
        like = _as_ref_shape(ref, node)
        if like is not None:
            # the same numbers in another form (a Python number for a 0-dim tensor; extra or missing
            # axes of size 1): the values are compared, the form is told by the dtype aspect
            form, vals = like
            out[path + ("dtype",)] = ("P", "str", form)
            out[path + ("values",)] = ("R", _as_rows(vals))
            if len(ref[2]) >= 2:
                out[path + ("leading",)] = ("P", "int", ref[2][0])
            return out
        if node[0] == "T" and len(ref[2]) >= 2 and len(node[2]) == len(ref[2]) and node[2][1:] == ref[2][1:]:
            # more or fewer windows, steps, sequences: row i is compared with row i
            n, k = ref[2][0], node[2][0]
            vals = node[3][:n]
            if k < n:
                filler = torch.full(
                    (n - k,) + tuple(ref[2][1:]), _ABSENT if vals.is_floating_point() else -(2**62), dtype=vals.dtype
                )
                vals = torch.cat([vals, filler])
            out[path + ("dtype",)] = ("P", "str", node[1])
            out[path + ("values",)] = ("R", _as_rows(vals))
            out[path + ("leading",)] = ("P", "int", k)
            return out
        whole = ("W", node)
        out[path + ("dtype",)] = ("P", "str", node[1]) if node[0] == "T" else whole
        out[path + ("values",)] = whole
        if len(ref[2]) >= 2:
            out[path + ("leading",)] = ("P", "int", node[2][0]) if node[0] == "T" and node[2] else whole
        return out
    if kind == "L":
        if all(c[0] == "P" for c in ref[2]):  # flags, counts, facts: one row, a column each
            plain = node[0] == "L" and len(node[2]) == len(ref[2]) and all(c[0] == "P" for c in node[2])
            out[path + ("values",)] = ("Q", node[2]) if plain else ("W", node)
            return out
        if node[0] == "L":
            out[path + ("len",)] = ("P", "int", len(node[2]))
            for i, child in enumerate(ref[2]):
                aspects(child, node[2][i] if i < len(node[2]) else ("absent",), path + (i,), out)
            out[path + ("extra",)] = ("W", ("L", "seq", node[2][len(ref[2]) :]))
            return out
        return _whole(ref, node, path, out)
    if kind == "D":
        if node[0] == "D":
            theirs = dict(node[1])
            for k, child in ref[1]:
                aspects(child, theirs.get(k, ("absent",)), path + (k,), out)
            known = {k for k, _ in ref[1]}
            out[path + ("extra",)] = ("W", ("D", tuple((k, v) for k, v in node[1] if k not in known)))
            return out
        return _whole(ref, node, path, out)
    out[path] = node
    return out


def _as_ref_shape(ref, node):
    """(form, values of ref's shape) when `node` holds the numbers of a tensor like `ref` in
    another form: a Python number for a one-number tensor, or a tensor whose shape differs only
    by axes of size 1; else None."""
    if node[0] == "P" and node[1] in ("float", "int") and math.prod(ref[2]) == 1 and ref[3].is_floating_point():
        return f"Python {node[1]}", torch.tensor(float(node[2]), dtype=torch.float64).reshape(ref[2])
    if (
        node[0] == "T"
        and node[2] != ref[2]
        and math.prod(node[2]) == math.prod(ref[2]) > 0
        and [n for n in node[2] if n != 1] == [n for n in ref[2] if n != 1]
    ):
        return f"{node[1]} of shape {tuple(node[2])}", node[3].reshape(ref[2])
    return None


_ABSENT = 1.2345e300  # a row the student's tensor does not have (it has fewer along its first axis)


def _as_rows(vals):
    """A tensor as (rows, columns): one row per vector along its last axis (a scalar: 1 x 1)."""
    if vals.dim() == 0:
        return vals.reshape(1, 1)
    if vals.numel() == 0:
        return vals.reshape(1, 0) if vals.dim() <= 1 else vals.reshape(-1, vals.shape[-1])
    return vals.reshape(-1, vals.shape[-1])


def _whole(ref, node, path, out):
    """Every key of ref's structure below `path` holds ("W", node)."""
    for key in aspects(ref, ref, path):
        out[key] = ("W", node)
    return out


def _shape(ref_value):
    """(rows, columns) of an aspect, read from the reference's value."""
    if ref_value[0] == "R":
        return tuple(ref_value[1].shape)
    if ref_value[0] == "Q":
        return (1, max(1, len(ref_value[1])))
    return (1, 1)


def _equal(a, b, shape):
    """Entry by entry (a bool tensor of `shape`), for two values of one aspect."""
    if a[0] == "R" and b[0] == "R" and a[1].shape == b[1].shape:
        x, y = a[1], b[1]
        if x.is_floating_point() or y.is_floating_point():
            return near(x.double(), y.double())
        return x == y
    if a[0] == "Q" and b[0] == "Q" and len(a[1]) == len(b[1]) == shape[1]:
        return torch.tensor([[same(x, y) for x, y in zip(a[1], b[1])]], dtype=torch.bool)
    if a[0] in ("R", "Q") or b[0] in ("R", "Q"):
        return torch.full(shape, a[0] == b[0] == "Q" and same(("L", "seq", a[1]), ("L", "seq", b[1])))
    return torch.full(shape, same(a[1], b[1]) if a[0] == b[0] == "W" else same(a, b))


CLEAR = 10  # a mistake refuted by a number of the reference's: it is this many tolerances away there
STRICT = 0.1  # ... and the student within this share of a tolerance


def _clearly_apart(a, b, where, factor=CLEAR):
    """Entries (of `where`, or all) where a differs from b by more than `factor` tolerances: numbers
    a second defect may have brought near the reference's by chance refute nothing (other values:
    wherever they differ)."""
    if (
        a[0] == "R"
        and b[0] == "R"
        and a[1].shape == b[1].shape
        and (a[1].is_floating_point() or b[1].is_floating_point())
    ):
        x, y = a[1].double(), b[1].double()
        apart = ~near(x, y, factor)
        return apart if where is None else where & apart
    if where is not None:
        return where
    return ~_equal(a, b, _shape(b))


def _failed(value):
    return value[0] == "F" or (value[0] == "W" and value[1][0] == "F")


def _crashed(value):
    """The mistake's code raised here (it modifying an input is a behaviour, not a crash)."""
    return value in (("F", "error"), ("W", ("F", "error")))


def _floats(value):
    return value[0] == "R" and value[1].is_floating_point()


def _informative(value, rows, cells):
    """Per row (bool over `rows`): do the student's values at `cells` say something (a finite,
    non-zero number; a mask row; a count, a dtype) rather than a flag, a failure, a zero or a NaN
    that many mistakes give alike?"""
    if value[0] == "R":
        v = value[1]
        if not v.is_floating_point():
            return rows.clone()
        some = (cells & torch.isfinite(v) & (v != 0)).any(1)
        return rows & some
    if value[0] == "W":
        inner = value[1]
        ok = (
            inner[0] == "T"
            and inner[3].numel() > 0
            and (not inner[3].is_floating_point() or bool((torch.isfinite(inner[3]) & (inner[3] != 0)).any()))
        )
        return rows & ok
    if value[0] == "Q":
        ok = any(
            v[0] == "P" and (v[1] in ("int", "str") or (v[1] == "float" and math.isfinite(v[2]) and v[2] != 0))
            for v, c in zip(value[1], cells[0].tolist())
            if c
        )
        return rows & ok
    if value[0] == "P" and value[1] in ("int", "str", "shape"):
        return rows.clone()
    if value[0] == "P" and value[1] == "float":
        return rows & (math.isfinite(value[2]) and value[2] != 0)
    return torch.zeros_like(rows)


# ---------------------------------------------------------------- trusted namespaces


class _Namespace:
    """What a Submission offers the harness' Student, for one trusted namespace."""

    def __init__(self, ns):
        self.ns, self.load_errors = ns, []

    def get(self, name, prefer=None):
        return self.ns.get(name)


def _namespace(exercise, code=None):
    src = reference_solution(exercise).read_text(encoding="utf-8")
    ns = {"__name__": f"catalogue_{exercise}"}
    exec(compile(src + ("\n\n" + code if code else ""), f"<catalogue {exercise}>", "exec"), ns)  # noqa: S102 - trusted
    return ns


def _trusted_student(exercise, code=None):
    """The reference solution of `exercise` (with `code` appended) as a Student (trusted, in process)."""
    from ..properties._harness import Student

    return Student(_Namespace(_namespace(exercise, code)), (), exercise)


@functools.lru_cache(maxsize=4096)
def redefined(code):
    """The top-level functions and classes a catalogue entry's code (re)defines (a frozenset: kept
    per code, since the diagnosis asks again and again)."""
    return frozenset(source.definitions(source.parse(code)))


# The same mistake written another way: a blocked score of -inf, -1e9 or the dtype's minimum; an
# upper triangle with or without its diagonal.  Each entry is also tried in these forms.
_MINUS_INF = re.compile(r"""-\s*float\(\s*["']inf["']\s*\)|float\(\s*["']-inf["']\s*\)|-\s*math\.inf|-\s*torch\.inf""")
_FORMS = [
    (_MINUS_INF, ["-1e9", "torch.finfo(torch.float32).min"]),
    (re.compile(r"-1e9\b"), ['float("-inf")']),
    (re.compile(r"\.triu\(\)"), [".triu(1)"]),
    (re.compile(r"\.triu\((?:diagonal=)?1\)"), [".triu()"]),
]


def forms(code):
    """The entry's code, then the same mistake written another way (see _FORMS)."""
    out = [code]
    for pattern, replacements in _FORMS:
        if pattern.search(code):
            out += [pattern.sub(r, code) for r in replacements]
    return list(dict.fromkeys(out))


_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def merge3(base, a, b, split=str.splitlines, join="\n".join):
    """a and b, two edits of the text base, in one text; None when they change the same lines
    differently (identical changes on both sides are one change).  `split`, `join`: the units
    (lines; tokens for two edits of one line)."""
    lines = split(base)

    def edits(text):
        sm = difflib.SequenceMatcher(None, lines, split(text), autojunk=False)
        new = split(text)
        return {(i1, i2, tuple(new[j1:j2])) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal"}

    ea, eb = edits(a), edits(b)

    def absorbed(e, others):  # an insertion the other side's replacement already holds at that end
        i1, i2, new = e
        return i1 == i2 and any(
            new and ((o2 == i1 and onew[-len(new) :] == new) or (o1 == i1 and onew[: len(new)] == new))
            for o1, o2, onew in others
            if (o1, o2) != (i1, i2)
        )

    changes = sorted({e for e in ea if not absorbed(e, eb)} | {e for e in eb if not absorbed(e, ea)})
    for (i1, i2, _), (j1, _, _) in zip(changes, changes[1:]):
        if j1 < i2 or j1 == i1:
            return None
    out, pos = [], 0
    for i1, i2, new in changes:
        out += lines[pos:i1] + list(new)
        pos = i2
    return join(out + lines[pos:]) + ("\n" if split is str.splitlines else "")


_CONSENSUS = {}


def consensus(codes):
    """The entries of one function as they would read without any mistake: the entry closest to
    all others, each of its lines replaced by the version most entries have there (kept)."""
    key = tuple(sorted(codes))
    if key not in _CONSENSUS:
        _CONSENSUS[key] = _consensus(list(key))
    return _CONSENSUS[key]


def _consensus(codes):
    if not codes:
        return ""
    texts = [c.splitlines() for c in codes]

    def aligned(anchor, other):
        pairs = {}
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, anchor, other, autojunk=False).get_opcodes():
            if tag in ("equal", "replace") and i2 - i1 == j2 - j1:
                pairs.update({i1 + k: other[j1 + k] for k in range(i2 - i1)})
        return pairs

    def spread(anchor):
        total = 0
        for o in texts:
            same_lines = sum(
                size for *_, size in difflib.SequenceMatcher(None, anchor, o, autojunk=False).get_matching_blocks()
            )
            total += len(anchor) + len(o) - 2 * same_lines
        return total

    anchor = min(texts, key=spread)
    votes = [dict() for _ in anchor]
    for other in texts:
        for i, line in aligned(anchor, other).items():
            votes[i][line] = votes[i].get(line, 0) + 1
    return "\n".join(max(v, key=v.get) if v else line for v, line in zip(votes, anchor)) + "\n"


def _wraps(code, names):
    """Does code keep an earlier definition of one of `names` before redefining it (`_right = f`)?"""
    return any(re.search(rf"^\s*\w+\s*=\s*{re.escape(n)}\s*$", code, re.M) for n in names)


def compositions(a, b, pivots):
    """Code making both catalogued mistakes at once: one after the other (each redefines its own
    names, or the later wraps the earlier, as `_right = f` entries do), or one text from both edits
    of another entry of the same function (the pivot: entries are written alike)."""
    names = redefined(a)
    if names != redefined(b):
        return [a + "\n\n" + b]  # each redefines its own names
    # the same names: one after the other only when the later wraps the earlier (`_right = f`)
    out = [x + "\n\n" + y for x, y in ((a, b), (b, a)) if _wraps(y, names)]
    pivots = [p for p in pivots if redefined(p) == names]

    def distance(pivot):  # lines changed from the pivot to a and to b
        lines = pivot.splitlines()
        return sum(
            sum(
                max(i2 - i1, j2 - j1)
                for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
                    None, lines, x.splitlines(), autojunk=False
                ).get_opcodes()
                if tag != "equal"
            )
            for x in (a, b)
        )

    pivot = consensus(pivots + [a, b])
    by_token = merge3(pivot, a, b, _TOKEN.findall, "".join)  # two edits of one line, at other places in it
    for _, merged in [(p, merge3(p, a, b)) for p in [pivot] + sorted(pivots, key=distance)] + [(pivot, by_token)]:
        if merged is None or merged in (a, b):
            continue
        counts = {}
        for line in merged.splitlines():
            counts[line] = counts.get(line, 0) + 1
        if all(n <= max(a.splitlines().count(line), b.splitlines().count(line), 1) for line, n in counts.items()):
            out.append(merged)  # no line twice that neither has twice (an insertion made on both sides)
            break
    return list(dict.fromkeys(out))


class _Trusted:
    """A trusted namespace (the reference, or the reference with one form of a mistake) whose probe
    observations are computed when first needed and kept.  `origin`: the exercise a pasted part's
    mistake comes from (its code runs in that exercise's reference; the function it breaks then
    replaces the part in this exercise's reference)."""

    def __init__(self, exercise, entry=None, code=None, origin=None, parts=()):
        self.exercise, self.entry, self.origin = exercise, entry, origin
        code = code if code is not None else (entry or {}).get("code")
        # native code is appended to the exercise's reference; a part's runs in its own exercise's
        self.code, self.parts = (None, [(origin, code)]) if origin else (code, list(parts))
        self._student, self._obs, self._dev, self.logs = None, {}, {}, {}
        self.seconds = {}  # function -> seconds its probes took here

    def student(self):
        if self._student is None:
            try:
                from ..properties._harness import Student

                ns = _namespace(self.exercise, self.code)
                for origin, code in self.parts:
                    part = _namespace(origin, code)
                    for name in redefined(code) & set(PARTS):
                        ns[name] = part[name]
                self._student = Student(_Namespace(ns), (), self.exercise)
            except Exception:  # noqa: BLE001 - a broken entry never matches (test_diagnosis flags it)
                self._student = False
        return self._student

    def obs(self, function, i):
        key = (function, i)
        if key not in self._obs:
            student = self.student()
            if student is False:
                return ("broken",)
            start = _clock()
            log = self.logs[key] = []
            with torch.random.fork_rng():
                self._obs[key] = observe(student, PROBES[self.exercise][function][i], log=log)
            self.seconds[function] = self.seconds.get(function, 0.0) + _clock() - start
        return self._obs[key]

    def log(self, function, i):
        """The calls probe i of `function` made here (the form's comparison reads them): recorded when
        the probe ran here; an observation shared from another judge (share.py) comes without one,
        so the probe runs again for it."""
        key = (function, i)
        if key not in self.logs:
            student = self.student()
            if student is False:
                return []
            log = self.logs[key] = []
            with torch.random.fork_rng():
                observe(student, PROBES[self.exercise][function][i], log=log)
        return self.logs[key]

    def all(self, function):
        return [self.obs(function, i) for i in range(len(PROBES[self.exercise].get(function, [])))]

    def deviation(self, ref, function, i):
        """{key: (its value, the entries where it differs from ref's)} on one probe (kept)."""
        if (function, i) not in self._dev:
            r_obs, m_obs = ref.obs(function, i), self.obs(function, i)
            out = {}
            if m_obs != ("broken",):
                r_asp = aspects(r_obs, r_obs)
                for key, m in aspects(r_obs, m_obs).items():
                    r = r_asp[key]
                    d = ~_equal(m, r, _shape(r))
                    if bool(d.any()):
                        out[key] = (m, d)
            self._dev[(function, i)] = out
        return self._dev[(function, i)]

    def refutable(self, ref, function, i):
        """The entries (all of the reference's aspects, flattened in order) where it differs and
        a student with the reference's value there refutes it (not flags, counts, crashes); kept."""
        key = ("refutable", function, i)
        if key not in self._dev:
            r_obs = ref.obs(function, i)
            deviation = self.deviation(ref, function, i)
            parts = []
            for k, r in aspects(r_obs, r_obs).items():
                n = _shape(r)[0] * _shape(r)[1]
                m = deviation.get(k)
                if m is None or _crashed(m[0]) or _flag(r) or (k and k[-1] == "leading"):
                    parts.append(torch.zeros(n, dtype=torch.bool))
                else:
                    parts.append((m[1] & _clearly_apart(m[0], r, m[1])).reshape(-1))
            self._dev[key] = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.bool)
        return self._dev[key]

    def agrees_with(self, function, theirs):
        """Every probe of `function` gives what `theirs` holds (stops at the first difference)."""
        n = len(PROBES[self.exercise].get(function, []))
        return len(theirs) == n and all(same(theirs[i], self.obs(function, i)) for i in range(n))


class _Mistake:
    """A catalogued mistake of an exercise, in all its forms; `origin` for a pasted part's."""

    def __init__(self, exercise, entry, order, origin=None):
        self.entry, self.order, self.origin = entry, order, origin
        self.function = entry["function"]
        self.group = (entry.get("group") or entry)["id"]
        self.touches = redefined(entry.get("code") or "")
        self.forms = [_Trusted(exercise, entry, code, origin) for code in forms(entry.get("code") or "")]


_CACHE = {}


_CATALOGUE = {}


def _catalogue(exercise):
    """load_catalogue(exercise), read once per process (the YAML parser is slow)."""
    if exercise not in _CATALOGUE:
        _CATALOGUE[exercise] = load_catalogue(exercise)
    return _CATALOGUE[exercise]


def _trusted(exercise):
    """(reference, [_Mistake]) of an exercise, kept for the process.  Their namespaces are built
    and run only when needed."""
    if exercise not in _CACHE:
        mistakes = [
            _Mistake(exercise, e, i) for i, (ex, e) in enumerate(_catalogue(exercise)) if e.get("diagnosis", True)
        ]
        ref = _Trusted(exercise)
        if exercise == "tiny_lm":  # the parts' own mistakes, named after their exercises' entries
            natives = [m for m in mistakes if m.touches and m.touches <= set(PARTS)]
            for origin in dict.fromkeys(PARTS.values()):
                for _, e in _catalogue(origin):
                    if (
                        not e.get("diagnosis", True)
                        or PARTS.get(e["function"]) != origin
                        or not redefined(e.get("code") or "") <= set(PARTS)
                    ):
                        continue
                    part = _Mistake(exercise, e, 1000 + len(mistakes), origin)
                    if not any(_duplicate(part, m) for m in natives):
                        mistakes.append(part)
        _CACHE[exercise] = (ref, mistakes)
    return _CACHE[exercise]


def _duplicate(part, native):
    """Does a pasted part's mistake do exactly what a catalogued mistake of the exercise does (a
    tiny_lm entry that only redefines a part)?  Then only the exercise's own entry is named."""
    if part.touches != native.touches:
        return False
    a, b = part.forms[0], native.forms[0]
    return all(agree(a.all(g), b.all(g)) for g in part.touches if g in PROBES[a.exercise])


def signatures(exercise):
    """Every observation of the exercise's own catalogue, computed in full: {"reference":
    {function: obs}, "mistakes": [(entry, {function: obs})]} (for the tests of the catalogue)."""
    ref, mistakes = _trusted(exercise)
    functions = list(PROBES.get(exercise, {}))
    return {
        "reference": {f: ref.all(f) for f in functions},
        "mistakes": [(m.entry, {f: m.forms[0].all(f) for f in functions}) for m in mistakes if m.origin is None],
    }


_USES = {}


def uses(exercise):
    """{name: the functions and classes of the reference it uses, directly or not}."""
    if exercise not in _USES:
        ns = _namespace(exercise)
        local = {k for k, v in ns.items() if callable(v) and getattr(v, "__module__", None) == ns["__name__"]}

        def names(obj):
            found = set()
            codes = (
                [obj.__code__]
                if hasattr(obj, "__code__")
                else [v.__code__ for v in vars(obj).values() if hasattr(v, "__code__")]
                if isinstance(obj, type)
                else []
            )
            while codes:
                c = codes.pop()
                found |= set(c.co_names)
                codes += [k for k in c.co_consts if hasattr(k, "co_names")]
            return found & local

        direct = {k: names(ns[k]) for k in local}
        closure = {}
        for k in local:
            seen, todo = set(), [k]
            while todo:
                for n in direct.get(todo.pop(), ()):
                    if n not in seen:
                        seen.add(n)
                        todo.append(n)
            closure[k] = seen
        _USES[exercise] = closure
    return _USES[exercise]


def describe(entry, origin=None):
    """What the report shows: the entry's (or its group's) id, function, title, explanation, hint;
    `part`: the exercise a pasted part's mistake comes from."""
    src = entry.get("group") or entry
    d = {"id": src["id"], "function": entry["function"]}
    for key in ("title", "explanation", "hint"):
        for lang in ("zh", "en"):
            d[f"{key}_{lang}"] = (src.get(key) or {}).get(lang, "")
    if entry.get("group"):
        d["members"] = [entry["id"]]
    if origin:
        d["part"] = origin
    return d


# ---------------------------------------------------------------- the diagnosis


class _Verdict:
    """How one mistake (one form) reads against the student on one function's probes.  Cells are
    {(function, probe, key): bool tensor (rows, columns)}."""

    __slots__ = (
        "hits",
        "misses",
        "unknown",
        "evidence",
        "covers",
        "crashes",
        "strong",
        "weak_probes",
        "supporting",
        "refuting",
        "soft",
        "covered",
        "isolated",
        "lone",
    )

    def __init__(self):
        self.hits = self.misses = self.unknown = 0
        self.soft = 0  # flags where the student has the reference's value (see _verdict)
        self.supporting = self.refuting = 0  # probes where it reproduces something / only differs
        self.covered = 0  # probes where the student differs wherever it does, otherwise (see _accounts)
        self.isolated = False  # it reproduces something on a probe where a second defect cannot matter
        self.lone = 0  # probes refuting it only by single numbers differing from both (see _accounts)
        self.evidence = {}  # the student's deviations it reproduces
        self.covers = {}  # every entry where it deviates (or its code crashes)
        self.crashes = {}  # entries where its code crashes and the student computes something else
        self.strong = False  # a hit that says something (see _informative)
        self.weak_probes = set()  # probes where its only hits are flags, failures, zeros


def _union(*maps):
    out = {}
    for m in maps:
        for k, v in m.items():
            out[k] = out[k] | v if k in out else v.clone()
    return out


def _minus(a, b):
    """The cells of a that are not in b."""
    out = {}
    for k, v in a.items():
        left = v & ~b[k] if k in b else v
        if bool(left.any()):
            out[k] = left
    return out


def _within(a, b):
    return not _minus(a, b)


class _Session:
    """One diagnosis: the student's observations and their aspects, computed when first needed."""

    def __init__(self, student, exercise, deadline):
        self.student, self.exercise, self.deadline = student, exercise, deadline
        self.ref, self.mistakes = _trusted(exercise)
        self.obs, self.calls, self._asp, self._ref_asp, self._dev, self._verdicts = {}, {}, {}, {}, {}, {}
        self.logs = {}  # function -> [Guarded.log of each probe] (the student's)
        self._same_as_ref, self._died = {}, {}
        self.composed = _COMPOSED.setdefault(exercise, {})

    def late(self):
        return self.deadline is not None and _clock() > self.deadline

    def observed(self, function):
        """The student's observations of `function` (None: missing, or out of time)."""
        if function not in self.obs:
            if self.late():
                return None
            got, calls, logs = [], [], []
            for fn in PROBES[self.exercise].get(function, []):
                c, log = [], []
                got.append(observe(self.student, fn, c, log))
                calls.append(c)
                logs.append(log)
            self.obs[function] = None if any(o == ("missing",) for o in got) else got
            self.calls[function] = calls
            self.logs[function] = logs
        return self.obs[function]

    def ref_aspects(self, function, i):
        if (function, i) not in self._ref_asp:
            r = self.ref.obs(function, i)
            self._ref_asp[(function, i)] = aspects(r, r)
        return self._ref_asp[(function, i)]

    def student_aspects(self, function, i):
        if (function, i) not in self._asp:
            self._asp[(function, i)] = aspects(self.ref.obs(function, i), self.obs[function][i])
        return self._asp[(function, i)]

    def flat_same_as_ref(self, function, i):
        """at_ref of every aspect of a probe, flattened in the reference's order (kept)."""
        k = ("flat", function, i)
        if k not in self._same_as_ref:
            parts = [self.at_ref(function, i, key).reshape(-1) for key in self.ref_aspects(function, i)]
            self._same_as_ref[k] = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.bool)
        return self._same_as_ref[k]

    def at_ref(self, function, i, key):
        """Entries where the student gives the reference's value closely enough to refute a mistake
        that differs there (numbers: well within the tolerance; kept)."""
        k = ("at", function, i, key)
        if k not in self._same_as_ref:
            r = self.ref_aspects(function, i)[key]
            self._same_as_ref[k] = self.same_as_ref(function, i, key) & ~_clearly_apart(
                self.student_aspects(function, i)[key], r, None, STRICT
            )
        return self._same_as_ref[k]

    def same_as_ref(self, function, i, key):
        """Entries where the student gives the reference's value (kept)."""
        k = (function, i, key)
        if k not in self._same_as_ref:
            r = self.ref_aspects(function, i)[key]
            self._same_as_ref[k] = _equal(self.student_aspects(function, i)[key], r, _shape(r))
        return self._same_as_ref[k]

    def deviations(self, function):
        """{(function, probe, key): cells where the student differs from the reference}."""
        if function not in self._dev:
            out = {}
            for i in range(len(self.obs[function])):
                ref = self.ref_aspects(function, i)
                for key in ref:
                    d = ~self.same_as_ref(function, i, key)
                    if bool(d.any()):
                        out[(function, i, key)] = d
            self._dev[function] = out
        return self._dev[function]

    def verdict(self, form, function, strict=False, like=None):
        """The verdict of one form of a mistake on `function`, or None at the first contradiction
        (strict: also at the first miss or crash, for two mistakes at once).  `like`: another form
        of the same mistake, already judged: where it was refuted, this one is too if it gives the
        same there (checked on that probe alone)."""
        key = (id(form), function, strict)
        if key not in self._verdicts:
            died = self._died.get((id(like), function, strict)) if like is not None else None
            if died is not None and same(form.obs(function, died), like.obs(function, died)):
                self._verdicts[key] = None
                self._died[key] = died
            else:
                self._verdicts[key] = self._verdict(form, function, strict, key)
        return self._verdicts[key]

    def _verdict(self, form, function, strict=False, key=None):
        v = _Verdict()
        for i in range(len(self.obs[function])):
            self._died[key] = i  # where it is refuted, if it is (a return None below)
            if self.late():
                return None
            if form.obs(function, i) == ("broken",):
                return None
            deviation = form.deviation(self.ref, function, i)
            if not deviation:
                continue
            if bool((form.refutable(self.ref, function, i) & self.flat_same_as_ref(function, i)).any()):
                return None  # the student has the reference's value where the mistake differs
            mine = self.student_aspects(function, i)
            informative = False
            matched = missed = soft = 0  # outputs of this probe the mistake reproduces (wherever it differs) or not
            uncovered = 0  # ... of those not, the ones where the student has the reference's value somewhere it differs
            lone = 0  # ... of those, single numbers (a loss) that differ from both the reference and it
            crashed_right = []  # where the mistake's code crashes: is the student right there?
            for key, (m, m_dev) in deviation.items():
                s = mine[key]
                s_ref = self.same_as_ref(function, i, key)
                cell = (function, i, key)
                clear = _clearly_apart(m, self.ref_aspects(function, i)[key], m_dev & self.at_ref(function, i, key))
                if bool(clear.any()) and not _crashed(m):
                    if not _flag(self.ref_aspects(function, i)[key]) and key[-1] != "leading":
                        return None  # the student has the reference's value where the mistake differs
                    # a flag the mistake's code gets wrong on the way (a check it leaves out, NaN
                    # it lets through), or a count of rows its broadcasting adds, while the student
                    # gets it right: a difference, not a refutation
                    v.misses += 1
                    v.soft += 1
                    v.covers[cell] = m_dev
                    soft += 1
                    continue
                s_m = _equal(s, m, tuple(m_dev.shape))
                if _crashed(m) and not bool(s_m[m_dev].all()):
                    crashed_right.append(bool(s_ref.all()))
                    v.unknown += 1  # it crashes where the student computes something else
                    v.covers[cell] = m_dev
                    v.crashes[cell] = m_dev
                    continue
                v.covers[cell] = m_dev
                rows = m_dev.any(1)
                match = rows & ~(m_dev & ~s_m).any(1)  # every entry where it differs, reproduced
                extra = (~m_dev & ~s_ref).any(1)  # the student also differs elsewhere in the row
                # a row reproduced exactly is a hit; so is a row of numbers whose differing entries
                # are reproduced while others differ too (a second defect); a mask row that is
                # only partly the mistake's is not (a flipped bit matches any flip)
                hit = match & (~extra | torch.full_like(extra, _floats(s)))
                n_hit = int(hit.sum())
                n_miss = int((rows & ~hit).sum())
                v.hits += n_hit
                v.misses += n_miss
                if n_hit and n_hit >= n_miss:  # an output whose rows are mostly the mistake's
                    matched += 1
                else:
                    missed += 1
                    # numbers that differ from the reference wherever the mistake differs, only
                    # otherwise: the mistake and something else changing the same values, or not
                    if not (_floats(s) and int(m_dev.sum()) >= 2 and not bool((m_dev & s_ref).any())):
                        uncovered += 1
                        lone += _floats(s) and int(m_dev.numel()) == 1 and not bool((m_dev & s_ref).any())
                if n_hit:
                    v.evidence[cell] = m_dev & hit[:, None]
                    informative = informative or bool(_informative(s, hit, m_dev).any())
            if crashed_right and all(crashed_right):
                return None  # the mistake's code crashes where the student computes the reference's result
            if strict and (v.misses or v.unknown):
                return None
            # a probe supports the mistake when at least as many of its outputs are the mistake's
            # (wherever the mistake differs) as are not
            hit_here = matched > 0 and matched >= missed + soft
            if hit_here:
                v.supporting += 1
                if informative:
                    v.strong = True
                else:
                    v.weak_probes.add((function, i))
                if PROBES[self.exercise][function][i].isolates:
                    v.isolated = True
            elif uncovered or (soft and not v.hits):
                v.refuting += 1
                v.lone += uncovered == lone and not soft
            elif missed:
                v.covered += 1  # (a flag it gets wrong on the way alone does not refute a probe)
        self._died.pop(key, None)
        return v


def _accounts(v):
    """More probes (independent experiments) where it reproduces something than where it only differs."""
    if v is None or v.hits < 1:
        return False
    if v.isolated:  # seen alone where a second defect cannot matter: a single number differing from
        return v.supporting > v.refuting - v.lone  # both elsewhere may be that defect too
    return v.supporting > v.refuting + v.covered


def _flag(ref_value):
    """A yes / no fact (raises ValueError, finite, reproducible...), or a row of them."""
    if ref_value[0] == "P":
        return ref_value[1] == "bool"
    if ref_value[0] == "Q":
        return bool(ref_value[1]) and all(v[0] == "P" and v[1] == "bool" for v in ref_value[1])
    return False


class _Candidate:
    def __init__(self, mistake, verdicts, f, form=None):
        self.mistake, self.form, self.f = mistake, form, f
        self.verdicts = verdicts  # {function: _Verdict}
        self._sum()

    def widen(self, session, functions):
        """Also read it on these functions (where it is contradicted, it explains nothing there)."""
        for g in functions:
            if g not in self.verdicts and session.observed(g) is not None:
                v = session.verdict(self.form, g)
                if v is not None and v.hits:
                    self.verdicts[g] = v
        self._sum()

    def _sum(self):
        verdicts, f = self.verdicts, self.f
        self.f_evidence = verdicts[f].evidence  # what of f it explains
        self.evidence = _union(*(v.evidence for v in verdicts.values()))
        self.covers = _union(*(v.covers for v in verdicts.values()))
        self.crashes = _union(*(v.crashes for v in verdicts.values()))
        self.misses = sum(v.misses for v in verdicts.values())
        self.size = sum(int(x.sum()) for x in self.evidence.values())
        self.f_size = sum(int(x.sum()) for x in self.f_evidence.values())
        self.strong = any(v.strong for v in verdicts.values())
        self.weak_probes = set().union(*(v.weak_probes for v in verdicts.values()))


def _best_form(session, mistake, f):
    """The candidate of the form of `mistake` that accounts for most of f (and of its own function)."""
    best = None
    for form in mistake.forms:
        verdicts = {}
        for function in dict.fromkeys([mistake.function, f]):
            if function != f and session.observed(function) is None:
                break
            v = session.verdict(form, function, like=mistake.forms[0] if form is not mistake.forms[0] else None)
            if not _accounts(v):
                break
            verdicts[function] = v
        else:
            c = _Candidate(mistake, verdicts, f, form)
            if not c.strong and any(v.soft for v in verdicts.values()):
                continue  # a mistake of flags whose flags the student gets right: refuted after all
            if best is None or (c.size, -c.misses) > (best.size, -best.misses):
                best = c
    return best


def _distinctive(session, c):
    """Does what c reproduces of its own function (the values that say something: numbers, mask
    rows; not flags or failures) rule out every other catalogued mistake of that function?  (Each
    other one gives, somewhere there, a value other than the student's.)"""
    g = c.mistake.function
    own, flags = [], []
    for (fn, i, key), cells in c.evidence.items():
        if fn == g:
            s = session.student_aspects(fn, i)[key]
            informative = cells & _informative(s, cells.any(1), cells)[:, None]
            if bool(informative.any()):
                own.append((fn, i, key, s, informative))
            elif _flag(session.ref_aspects(fn, i)[key]):
                flags.append((fn, i, key, s, cells))
    if not own:
        # flags alone (raises ValueError or not...) only from a function that runs: one that
        # crashes somewhere says nothing by its flags
        if not flags or any(_failed(session.student_aspects(k[0], k[1])[k[2]]) for k in session.deviations(g)):
            return False
        own = flags
    # a mistake whose values are all the student's deviations of its function (only their form, a
    # dtype or a count of rows, may differ besides) is not mistaken for another one the student's
    # values refute: that one cannot be what gives them
    left = _minus(session.deviations(g), c.evidence) if session.obs.get(g) else {"?": True}
    whole = all(k[2] and k[2][-1] in ("dtype", "leading") for k in left)
    # ... nor is one whose values are all the student's deviations on a probe made so that a part
    # of the function cannot matter (a second defect elsewhere is out of sight there)
    if not whole and session.obs.get(g):
        probes = PROBES[session.exercise][g]
        seen = {k[1] for k in c.evidence if k[0] == g}
        whole = any(probes[i].isolates and not any(k[1] == i for k in left) for i in seen)
    for m in session.mistakes:
        if m.function != g or m.group == c.mistake.group:
            continue
        if whole and _refuted(session, m, g):
            continue  # the student's own values rule it out: it cannot be what gives them
        alike = True
        for fn, i, key, s, cells in own:
            o = m.forms[0].deviation(session.ref, fn, i).get(key)
            if not _floats(s):  # a mask row, a row of flags: alike only when the whole row is
                cells = cells.any(1, keepdim=True).expand_as(cells)
            if o is None or not bool(_equal(o[0], s, tuple(cells.shape))[cells].all()):
                alike = False  # it gives the reference's value there, or another one
                break
        if alike:
            return False
    return True


def _refuted(session, m, g):
    """Is every form of mistake m contradicted by the student's values in g (see _Verdict)?"""
    if session.observed(g) is None:
        return False
    return all(
        session.verdict(form, g, like=m.forms[0] if form is not m.forms[0] else None) is None for form in m.forms
    )


def _select(session, f, candidates):
    """The fewest candidates that explain the most (see the module docstring), in order: first
    those that reproduce a value only they give; then, one at a time, any other that completes
    the explanation (nothing left unexplained in f and in its own function)."""

    def rank(c):  # most of f first; then most of its own function too (a part's mistake seen in the part)
        return (-c.f_size, -c.size, c.misses, c.mistake.origin is not None, c.mistake.order)

    ranked = sorted(candidates, key=rank)

    def twin(c):  # another mistake explains exactly the same, differently: name neither
        return any(
            d is not c
            and d.mistake.group != c.mistake.group
            and d.size == c.size
            and d.misses == c.misses
            and _within(d.evidence, c.evidence)
            and _within(c.evidence, d.evidence)
            for d in ranked
        )

    chosen = []

    def adds(c):  # it explains something in f that the chosen ones do not
        return not _within(c.f_evidence, _explained(chosen))

    for c in ranked:  # (a mistake of flags only: when it reproduces all it claims)
        if adds(c) and not twin(c) and (c.strong or not c.misses) and _distinctive(session, c):
            chosen.append(c)
    # the others only together: they are named when, with the ones above, nothing is left unexplained
    extra = []
    for c in ranked:
        if c not in chosen and not twin(c) and not _within(c.f_evidence, _explained(chosen + extra)):
            extra.append(c)
    while extra:
        explained = _explained(chosen + extra)
        functions = {f} | {c.mistake.function for c in extra}
        if all(_within(session.deviations(g), explained) for g in functions if session.obs.get(g)):
            chosen += extra
            break
        extra.pop()  # the least telling one out, and try again
    # a named mistake that explains nothing the others do not is dropped (the least telling first);
    # what one alone explains, another mistake might explain as well: then it is a guess, dropped too
    for c in sorted(chosen, key=rank, reverse=True):
        others = [d for d in chosen if d is not c]
        alone = _minus(c.evidence, _explained(others)) if others else c.evidence
        if c.strong:  # a mistake of values whose own part is only a failure both give: redundant
            alone = {k: v for k, v in alone.items() if not _failed(session.student_aspects(k[0], k[1])[k[2]])}
        if not alone or any(
            d not in chosen
            and d.mistake.group != c.mistake.group
            and _within(alone, d.evidence)
            and d.misses <= c.misses
            for d in ranked
        ):
            chosen.remove(c)
    return chosen


def _explained(chosen):
    """The cells a set of named mistakes explains: what each reproduces, where its code crashes
    (a value of the student's there is the mistake written another way), and where two of them
    deviate at once (what the student does there is theirs together)."""
    explained = _union(*(c.evidence for c in chosen), *(c.crashes for c in chosen))
    count = {}
    for c in chosen:
        for k, v in c.covers.items():
            count[k] = count.get(k, 0) + v.long()
    return _union(explained, {k: v >= 2 for k, v in count.items()})


def _unexplained(session, f, chosen):
    """The student's deviations in f that no named mistake explains: [(probe, key)] in order."""
    left = _minus(session.deviations(f), _explained(chosen))
    return sorted({(k[1], k[2]) for k in left}, key=lambda x: (x[0], str(x[1])))


def _where(session, f, left, limit=3):
    """The calls (and what of them) where the unexplained deviations show, for the report."""
    zh, en, seen = [], [], []
    for i, key in left:
        calls = session.calls[f][i]
        top = key[0] if key else None
        if isinstance(top, int) and top < len(calls):
            call = calls[top]
        else:
            call = calls[0] if calls else PROBES[session.exercise][f][i].__name__
        raises = call.startswith("raises ")
        call = call[len("raises ") :] if raises else call
        tail = key[-1] if key else None
        if raises:
            what_zh, what_en = "是否抛出 ValueError", "whether it raises ValueError"
        elif tail == "dtype":
            what_zh, what_en = "dtype", "dtype"
        elif tail == "shape":
            what_zh, what_en = "形状", "shape"
        elif isinstance(top, str):
            what_zh, what_en = top, top
        else:
            what_zh, what_en = "数值", "values"
        if (call, what_en) in seen:
            continue
        seen.append((call, what_en))
        if len(seen) > limit:
            break
        zh.append(f"`{call}` 的{what_zh}")
        en.append(f"{what_en} of `{call}`")
    more_zh = "等" if len(seen) > limit else ""
    more_en = ", ..." if len(seen) > limit else ""
    return "；".join(zh[:limit]) + more_zh, "; ".join(en[:limit]) + more_en


PAIR_POOL = 10  # two mistakes at once are tried among this many that are not refuted
PAIR_SLOW = 0.05  # ... only for functions whose probes take the reference less than this each (not training runs)
PAIR_SECONDS = 0.75  # ... and for at most this long per function


def _cheap(session, f):
    """Are f's probes cheap enough to try two mistakes at once (seconds per probe on the reference;
    a composition is checked probe by probe and dropped at its first miss)?"""
    n = len(PROBES[session.exercise].get(f, [])) or 1
    return session.ref.seconds.get(f, 0) / n < PAIR_SLOW


def _reach(session, f, v):
    """The student's deviations in f where a mistake's verdict `v` deviates too (cells)."""
    dev = session.deviations(f)
    return {k: dev[k] & c for k, c in v.covers.items() if k in dev and bool((dev[k] & c).any())}


def _size(cells):
    return sum(int(x.sum()) for x in cells.values())


def _pair(session, f, pool, chosen, singles):
    """Two catalogued mistakes made at once (their code composed: see compositions) that together
    reproduce everything the student's f (and their own functions) does, where no one mistake
    did; [candidate, candidate] or None.  Tried only among mistakes nothing refutes, and only if
    it keeps what was already named; first the mistakes that deviate where most of the student's
    deviations are, and the pairs whose deviations together reach most of them."""
    reach = [_reach(session, f, v) for _, _, v in pool]
    order = sorted(range(len(pool)), key=lambda i: (-pool[i][2].hits, -_size(reach[i]), -pool[i][0].order))
    order = order[:PAIR_POOL]
    pairs = sorted(
        ((i, j) for n, i in enumerate(order) for j in order[n + 1 :]),
        key=lambda ij: (-_size(_union(reach[ij[0]], reach[ij[1]])), -(pool[ij[0]][2].hits + pool[ij[1]][2].hits)),
    )
    named = {c.mistake.group for c in chosen}
    stop = _clock() + PAIR_SECONDS
    found = []  # pairs that explain everything
    for i, j in pairs:
        (a, form_a, _), (b, form_b, _) = pool[i], pool[j]
        if session.late() or _clock() > stop:
            break
        if a.group == b.group or not named <= {a.group, b.group}:
            continue
        for form in _composed(session, a, b, form_a, form_b):
            first = session.verdict(form, f, strict=True)  # (probe by probe, dropped at its first miss)
            if first is None or first.misses or first.unknown:
                continue
            if agree(form.all(f), form_a.all(f)) or agree(form.all(f), form_b.all(f)):
                continue  # one redefinition hides the other: not both at once
            if any(
                _crashed(o) and not _crashed(x) and not _crashed(y)
                for o, x, y in zip(form.all(f), form_a.all(f), form_b.all(f))
            ):
                continue  # the merged code crashes where neither mistake does: a bad merge
            functions = list(dict.fromkeys([f, a.function, b.function]))
            verdicts = {}
            for g in functions:
                if session.observed(g) is None:
                    break
                v = session.verdict(form, g, strict=True)
                if v is None or v.misses or v.unknown:
                    break  # both at once must reproduce everything: no crash of theirs excuses a value
                verdicts[g] = v
            else:
                if not verdicts[f].hits or not verdicts[f].strong:
                    continue  # two mistakes at once are named for values they give, not for a crash
                both = _Candidate(a, verdicts, f, form)
                if all(_within(session.deviations(g), _explained([both])) for g in functions):
                    found.append([both, _Candidate(b, dict(verdicts), f, form)])
                    break
    if not found:
        return None
    # the pair that explains most, its own functions included (a part's mistake seen in the part);
    # two pairs that explain as much name only the mistake they share
    top = max(p[0].size for p in found)
    best = [p for p in found if p[0].size == top]
    common = set.intersection(*({c.mistake.group for c in p} for p in best))
    if len(common) == 2:
        return best[0]
    # only what they share: the shared mistake as it reads alone
    return [c for c in singles if c.mistake.group in common] or None


def _composed(session, a, b, form_a, form_b):
    """_Trusted namespaces making mistakes a and b (in these forms) at once (kept for the process)."""
    ca, cb = (
        (form_a.parts[0][1] if form_a.parts else form_a.code) or "",
        (form_b.parts[0][1] if form_b.parts else form_b.code) or "",
    )
    key = (ca, cb)
    cache = session.composed
    if key not in cache:
        out = []
        if a.origin == b.origin:
            pivots = [
                m.entry.get("code") or ""
                for m in session.mistakes
                if m.origin == a.origin and m.function == a.function and m.group not in (a.group, b.group)
            ]
            for code in compositions(ca, cb, pivots):
                out.append(_Trusted(session.exercise, code=code, origin=a.origin))
        elif a.origin is None or b.origin is None:
            native, part = (a, b) if a.origin is None else (b, a)
            cn, cp = (ca, cb) if native is a else (cb, ca)
            out.append(_Trusted(session.exercise, code=cn, parts=[(part.origin, cp)]))
        else:
            out.append(_Trusted(session.exercise, parts=[(a.origin, ca), (b.origin, cb)]))
        cache[key] = out
    return cache[key]


_COMPOSED = {}


def diagnose(student, exercise, functions, deadline=None, into=None, by_part=None, behaviour=None):
    """{function: [mistake description]} for the given (failing) functions; [] where nothing is named.

    Each description is describe()'s, plus "unexplained_zh" / "unexplained_en" when something in
    the function differs that the named mistakes do not explain.  `deadline`: a _clock() (CPU time)
    after which the diagnosis gives up (functions not reached get nothing); `into`: a dict filled
    as functions are done (kept if the caller's alarm fires); `by_part`: a dict, filled with
    {function: [claim]} where nothing is named but an experiment finds which part of the function
    differs (parts.explain).  `behaviour`: a dict, filled with {function: {"outputs": hash}} of
    every function whose probes deviate from the reference (similarity/behaviour.py: for the
    instructor's similarity report, never for a report).  Never raises but TestTimeout (the
    caller's alarm)."""
    out = {} if into is None else into
    if not PROBES.get(exercise):
        for f in functions:
            out[f] = []  # no probes for this exercise: never guess
        return out
    session = _Session(student, exercise, deadline)
    used = uses(exercise)
    for f in functions:
        if f not in PROBES[exercise]:
            out[f] = []
            continue
        mine = session.observed(f)
        if mine is None or not session.deviations(f):
            out[f] = []
            if mine is not None and by_part is not None and not session.late():
                claims = _by_part(session, f)  # it failed a test: its form on other dtypes, by experiment
                if claims:
                    by_part[f] = claims
            continue  # missing, out of time, or behaves like the reference on every probe
        if behaviour is not None:
            from ..similarity.behaviour import digest

            behaviour[f] = {"outputs": digest(mine)}
        reach = {f} | used.get(f, set())
        candidates, pool = [], []
        for m in session.mistakes:
            if not (m.touches & reach) or (m.function != f and m.function not in PROBES[exercise]):
                continue  # its code changes nothing f uses
            c = _best_form(session, m, f)
            if c is not None and f in c.verdicts and c.verdicts[f].hits:
                candidates.append(c)
            for form in m.forms:  # the first form nothing refutes, for two mistakes at once
                like = m.forms[0] if form is not m.forms[0] else None
                if m.function != f and (
                    session.observed(m.function) is None or not session.verdict(form, m.function, like=like)
                ):
                    continue  # refuted in its own function (checked first: it is usually cheaper)
                v = session.verdict(form, f, like=like)
                if v is not None and v.covers:
                    pool.append((m, form, v))
                    break
        # every candidate read on every candidate's function too: a part's mistake that also
        # explains what a model mistake explains in its own function goes first
        functions = {c.mistake.function for c in candidates}
        for c in candidates:
            c.widen(session, functions)
        chosen = _select(session, f, candidates)
        if _unexplained(session, f, chosen) and not session.late() and _cheap(session, f):
            both = _pair(session, f, pool, chosen, candidates)
            if both:
                chosen = both
        chosen, counted = _dependent_draws(session, f, chosen)
        found = []
        left = [x for x in _unexplained(session, f, chosen) if x[0] not in counted] if chosen else []
        extra = {}
        if left:
            zh, en = _where(session, f, left)
            extra = {
                "unexplained_zh": f"另外还有不同之处，上面的错误解释不了：{zh}。",
                "unexplained_en": f"And something else differs that the mistake above does not explain: {en}.",
            }
        for c in chosen:
            d = describe(c.mistake.entry, c.mistake.origin)
            d.update(extra)
            found.append(d)
        out[f] = _merge(found)
        if not chosen and by_part is not None and not session.late():
            claims = _by_part(session, f)
            if claims:
                by_part[f] = claims
    return out


# Draws that are not independent.  A random function whose probe of independence shows rows drawn
# alike (the same pattern in every row: one generator re-seeded per row, one (T,) mask broadcast)
# makes far fewer distinct draws than a probe counting over many rows expects; what such a probe
# sees (an id that never comes up among the random tokens) is then the repetition's doing, and no
# evidence of another mistake.  {(exercise, function): (the independence probe, {probes counting
# draws over rows})}
ROWS_ALIKE = {("bert_masking", "mlm_mask"): ("identical_rows_masked_alike", {"every_ordinary_id_comes_up"})}


def _dependent_draws(session, f, chosen):
    """(chosen without the mistakes whose only evidence is on probes counting draws over rows, when
    the student's rows are drawn alike; those probes' indices)."""
    spec = ROWS_ALIKE.get((session.exercise, f))
    if not spec or not chosen:
        return chosen, set()
    names = [p.__name__ for p in PROBES[session.exercise][f]]
    if spec[0] not in names or session.obs[f][names.index(spec[0])] != encode(True):
        return chosen, set()
    counted = {i for i, n in enumerate(names) if n in spec[1]}

    def elsewhere(c):  # evidence outside the probes counting draws over rows
        return any(bool(v.any()) for k, v in c.evidence.items() if not (k[0] == f and k[1] in counted))

    kept = [c for c in chosen if elsewhere(c)]
    return (kept, counted) if kept else (chosen, set())


def _by_part(session, f):
    """Which part of f differs, by experiment (parts/), for a function nothing catalogued explains."""
    from . import parts

    if f not in parts.FUNCTIONS.get(session.exercise, ()):
        return _by_form(session, f)
    catalogued = []
    for m in session.mistakes:
        if m.function == f and m.origin is None:
            catalogued += [s for s in (form.student() for form in m.forms) if s is not False]
    try:
        with torch.random.fork_rng():
            claims = parts.explain(
                session.student, session.exercise, f, _reference_namespace(session.exercise), catalogued, session.late
            )
    except TestTimeout:
        raise
    except Exception:  # noqa: BLE001 - an explanation must never cost a diagnosis
        claims = []
    return claims or _by_form(session, f)


def _by_form(session, f):
    """The form of f's results and arguments where it differs (dtype, shape, gradient, in-place
    writes, ValueError), from the calls the probes made (parts/form.py)."""
    from .parts import form

    try:
        n = len(PROBES[session.exercise].get(f, []))
        r_logs = [session.ref.log(f, i) for i in range(n)]
        deviating = {k[1] for k in session.deviations(f)}
        s_extra, r_extra = form.extra_logs(f, session.student, session.ref.student())
        return form.explain(
            f,
            session.logs.get(f, [[]] * n) + [s_extra],
            r_logs + [r_extra],
            deviating,
            _reference_namespace(session.exercise),
        )
    except TestTimeout:
        raise
    except Exception:  # noqa: BLE001 - an explanation must never cost a diagnosis
        return []


_REFERENCE_NS = {}


def _reference_namespace(exercise):
    """The reference solution's namespace (trusted, run once per process)."""
    if exercise not in _REFERENCE_NS:
        _REFERENCE_NS[exercise] = _namespace(exercise)
    return _REFERENCE_NS[exercise]


def _merge(descriptions):
    """One description per id: a group's members are listed together."""
    merged = {}
    for d in descriptions:
        if d["id"] in merged:
            merged[d["id"]].setdefault("members", []).extend(d.get("members", []))
        else:
            merged[d["id"]] = d
    return list(merged.values())


def diagnose_outcomes(student, exercise, outcomes, functions_of, budget=5.0, wall=None, behaviour=None):
    """Attach `diagnosis` lists to the failed outcomes in place; returns {test: diagnosis} added.

    outcomes: {test name: outcome dict}; functions_of: test name -> function.  `budget`: seconds of
    the judge's CPU time (_clock); guarded by an alarm after `wall` seconds (default `budget`) of
    wall-clock time; any problem gives no diagnosis.  `behaviour`: see diagnose(); each entry also
    says whether a catalogued mistake was named in that function ("named")."""
    failed = [n for n, o in outcomes.items() if isinstance(o, dict) and o.get("status") in FAILED]
    if not failed or budget <= 0:
        return {}
    # a function that timed out would most likely spend the whole budget on the first probe
    slow = {functions_of(n) for n in failed if outcomes[n].get("status") == "timeout"}
    functions = [f for f in dict.fromkeys(functions_of(n) for n in failed) if f not in slow]
    if not functions:
        return {}
    armed, old, found, by_part = False, None, {}, {}
    try:
        if threading.current_thread() is threading.main_thread():  # an alarm needs the main thread
            old = signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, max(0.01, wall if wall is not None else budget))
            armed = True
        diagnose(
            student, exercise, functions, deadline=_clock() + budget, into=found, by_part=by_part, behaviour=behaviour
        )
    except TestTimeout:  # what was found before the alarm stands
        abort = getattr(student, "abort", None)
        if abort:
            try:
                abort()  # the worker may still be running the student's endless loop
            except Exception:  # noqa: BLE001
                pass
    except Exception:  # noqa: BLE001 - a diagnosis must never cost a result
        pass
    finally:
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old if old is not None else signal.SIG_DFL)
    for f, entry in (behaviour or {}).items():
        entry["named"] = bool(found.get(f))
    added = {}
    for n in failed:
        d = found.get(functions_of(n)) or []
        if d:
            outcomes[n]["diagnosis"] = d
            added[n] = d
        parts = by_part.get(functions_of(n)) or []
        if parts and not d:
            outcomes[n]["explained_by_part"] = parts
        outcomes[n].update(elsewhere_hint(functions_of(n), d, parts if not d else []))
    return added


def elsewhere_hint(function, named, parts):
    """{"hint_zh", "hint_en"} replacing a failed test's own hint when what the diagnosis found lies in
    another function only (a wrong attention function seen through MultiHeadAttention): the test's
    hint names parts of its own function, which the diagnosis shows are not at fault.  {} otherwise."""
    if named and all(d.get("function") not in (None, function) for d in named):
        fns = list(dict.fromkeys(d["function"] for d in named))
        where = ", ".join(f"`{f}`" for f in fns)
        return {
            "hint_zh": f"差别来自 {where}：先让它通过自己的测试，再看这个测试。",
            "hint_en": f"The difference comes from {where}: make it pass its own tests first, then this one.",
            "hint_elsewhere": True,
        }
    if parts and all(p.get("hint_en") for p in parts):
        return {
            "hint_zh": "\n".join(p["hint_zh"] for p in parts),
            "hint_en": "\n".join(p["hint_en"] for p in parts),
            "hint_elsewhere": True,
        }
    return {}


def _alarm(_signum, _frame):
    raise TestTimeout()
