"""Results are data: a test's result, an exercise's, the whole report.  Renderers live beside."""
from dataclasses import asdict, dataclass, field


@dataclass
class TestResult:
    __test__ = False
    name: str  # "exercise/function/property", as in the contract
    function: str
    score: float
    max_score: float
    passed: bool
    feedback: str
    status: str = "passed"  # passed | failed | missing | error | timeout
    property_zh: str = ""
    property_en: str = ""
    message_zh: str = ""
    message_en: str = ""
    details: list = field(default_factory=list)  # [[label, text]]: the counterexample
    hint_zh: str = ""
    hint_en: str = ""
    seconds: float = 0.0
    # structured counterexample for renderers (tables, pictures), built by properties/_harness.py;
    # JSON-able and small (at most ~40 kB):
    #   {"kind": "mask" | "weights" | "encoding" | "tensor" | "scalar" | "shape" | "values",
    #    "what": the compared quantity ("mask", "weights", "PE", ...), "call": "causal_mask(3)",
    #    "inputs": {name: value}  (a tensor is {"shape", "dtype", "values": nested list | None}),
    #    "expected", "got": nested lists (NaN / inf as "nan" / "inf" / "-inf"),
    #    "differs": nested list of bools, True = a wrong entry; "n_differ": how many in all,
    #    "shape": the full shape; "labels": ["expected", "got"] or ["before", "after"];
    #    "index" / "offset": set when only a window (one 2-D slice, cut) of a large tensor is kept;
    #    "expected_shape" / "got_shape": for a wrong shape}
    # Any key may be missing (e.g. a crash has only "inputs"); {} when the test passed.
    counterexample: dict = field(default_factory=dict)
    # catalogued mistakes this failure matches (autograder/diagnose.py): [{"id", "title_zh",
    # "title_en", "explanation_zh", "explanation_en", "hint_zh", "hint_en", "function" (where the
    # mistake is: may differ from the test's, e.g. padding_mask's on an attention_mask test), and
    # "members" for a group of mistakes that behave the same}]; empty = no match
    diagnosis: list = field(default_factory=list)


@dataclass
class ExerciseResult:
    id: str
    score: float
    max_score: float
    tests: list
    load_errors: list = field(default_factory=list)


@dataclass
class Report:
    submission: str
    score: float
    max_score: float
    exercises: list
    errors: list = field(default_factory=list)
    seconds: float = 0.0
    sandbox: str = ""  # the isolation level in force while the student's code ran

    def to_dict(self):
        return asdict(self)


# ---------------------------------------------------------------- helpers shared by the renderers

def as_dict(report):
    """A Report, or the dict of a JSON report (grade --json, grade-batch's reports/*.json)."""
    return report.to_dict() if isinstance(report, Report) else report


def cell_text(v):
    """One entry of a counterexample table, short: T/F for bools, 4 significant digits."""
    if isinstance(v, bool):
        return "T" if v else "F"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def pick(language, zh, en, sep=" / "):
    """The text in the course's language: zh, en, or both (Chinese first)."""
    if language == "zh":
        return zh or en
    if language == "en":
        return en or zh
    return sep.join(s for s in (zh, en) if s)


def cx_slices(cx, limit=4):
    """The expected / got pair of a counterexample as at most `limit` 2-D slices:
    [(index, expected rows, got rows, differs rows)], slices with a wrong entry first.
    A scalar is a 1 x 1 slice, a vector one row; [] when there is no pair (or only `got`)."""
    exp, got = cx.get("expected"), cx.get("got")
    if got is None:
        return []
    diff = cx.get("differs")
    base = list(cx.get("index", []))

    def depth(x):
        d = 0
        while isinstance(x, list):
            if not x:
                return d + 1
            x, d = x[0], d + 1
        return d

    def two_d(x, n):
        if n == 0:
            return [[x]]
        if n == 1:
            return [x]
        return x

    n = depth(got)
    out = []

    def walk(e, g, d, idx, k):
        if k <= 2:
            out.append((base + idx, two_d(e, k) if e is not None else None, two_d(g, k),
                        two_d(d, k) if d is not None else None))
            return
        for i in range(len(g)):
            walk(e[i] if e is not None else None, g[i], d[i] if d is not None else None, idx + [i], k - 1)

    walk(exp, got, diff, [], n)

    def wrong(s):
        return bool(s[3]) and any(any(bool(v) for v in row) for row in s[3])

    ranked = [s for s in out if wrong(s)] + [s for s in out if not wrong(s)]
    return ranked[:limit]
