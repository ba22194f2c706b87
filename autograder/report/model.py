"""Results are data: a test's result, an exercise's, the whole report.  Renderers live beside.

Shared by the renderers: `Status` (a test's status and its words), `not_graded_reason` (the one rule
for a submission nothing of which could be graded: never shown as a zero), `level` (the colour of
a score), `student_of` (whose report it is) and `fixes` (what to fix, function by function: the
short list at the top of every report and the grouping of its details).
"""

import copy
import functools
import re
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from enum import Enum
from pathlib import Path

from ..safe import one_line  # noqa: F401 - the renderers import it from here
from .messages import pair, pick  # noqa: F401 - pick: the renderers' and the dashboard's import


class Status(str, Enum):  # noqa: UP042 - StrEnum would change str() of a member
    """A test's status, as stored in TestResult.status and the JSON."""

    PASSED = "passed"
    FAILED = "failed"  # the property does not hold
    MISSING = "missing"  # the function is not defined (or is a stub)
    ERROR = "error"  # the student's code raised, or its process died
    TIMEOUT = "timeout"  # the test did not finish in time
    NOT_GRADED = "not_graded"  # nothing of the submission could be graded (see not_graded_reason)

    @classmethod
    def of(cls, t):
        """The status of a test (a TestResult or its dict); an unknown one counts as failed."""
        get = t.get if hasattr(t, "get") else (lambda k: getattr(t, k, None))
        try:
            return cls(get("status") or ("passed" if get("passed") else "failed"))
        except ValueError:
            return cls.FAILED

    def words(self):
        """(zh, en) of the status."""
        return pair(f"status.{self.value}")


@dataclass
class TestResult:
    __test__ = False
    name: str  # "exercise/function/property", as in the contract
    function: str
    score: float
    max_score: float
    passed: bool
    feedback: str
    status: str = "passed"  # a Status value: passed | failed | missing | error | timeout | not_graded
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
    # catalogued mistakes this failure matches (autograder/diagnose/): [{"id", "title_zh",
    # "title_en", "explanation_zh", "explanation_en", "hint_zh", "hint_en", "function" (where the
    # mistake is: may differ from the test's, e.g. padding_mask's on an attention_mask test), and
    # "members" for a group of mistakes that behave the same}]; empty = no match
    diagnosis: list = field(default_factory=list)
    # where no catalogued mistake is named: which part of the function differs, found by experiment
    # on the student's function (autograder/diagnose/parts/): [{"function", "part" (the altered
    # part's id), "zh", "en" (what differs), "probe" (a call that shows it), and "else_zh" /
    # "else_en" when something else differs as well}]; empty = nothing to say
    explained_by_part: list = field(default_factory=list)


@dataclass
class ExerciseResult:
    id: str
    score: float
    max_score: float
    tests: list
    load_errors: list = field(default_factory=list)
    not_graded_reason: str = ""  # set when the exercise's own file could not be read (see grading.py)


@dataclass
class Report:
    submission: str
    score: float
    max_score: float
    exercises: list
    errors: list = field(default_factory=list)
    seconds: float = 0.0
    sandbox: str = ""  # the isolation level in force while the student's code ran (for the instructor)
    # set only when the instructor allowed a weak sandbox (--allow-weak-sandbox) and it was one:
    # what the student's code was not kept from; the JSON's first key and every report's first line
    sandbox_warning: str = ""
    # False when nothing of the submission could be graded (a corrupt notebook, nothing loadable):
    # the scores are 0 as the contract asks, but no report shows them as a grade; why in the reason
    graded: bool = True
    not_graded_reason: str = ""
    student: str = ""  # whose submission (grade --student); the reports' title, else the file's name
    language: str = "both"  # the language of the feedback texts (course.yml's, or --language)
    # where the grading time went, summed over exercises (for the instructor and bench/class_speed.py):
    # start / tests / diagnosis wall seconds, judge_cpu / worker_cpu CPU seconds; the most memory
    # a judge and the grading process held (judge_peak_mib, grader_peak_mib)
    timing: dict = field(default_factory=dict)

    def to_dict(self):
        """The report as plain dicts and lists (`plain`), `sandbox_warning` first when there is one."""
        out = plain(self)
        if out.get("sandbox_warning"):  # at the top, where a person reading the file sees it first
            out = {"sandbox_warning": out.pop("sandbox_warning"), **out}
        return out


def plain(obj):
    """What dataclasses.asdict returns (dataclasses as dicts; new lists, tuples and dicts all the
    way down), without its deep copy of every leaf: a report's leaves are str, numbers, bools and
    None, and asdict's copying cost more CPU than some exercises' grading."""
    kind = type(obj)
    if kind in _LEAVES:
        return obj
    if kind is list:
        return [plain(v) for v in obj]
    if kind is dict:
        return {plain(k): plain(v) for k, v in obj.items()}
    if kind is tuple:
        return tuple(plain(v) for v in obj)
    names = _field_names(kind) if is_dataclass(kind) else None
    if names is not None:
        return {f: plain(getattr(obj, f)) for f in names}
    return copy.deepcopy(obj)  # anything else: as asdict would


_LEAVES = frozenset({str, int, float, bool, type(None)})


@functools.cache
def _field_names(kind):
    return tuple(f.name for f in fields(kind))


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


def not_graded_reason(report):
    """Why nothing of this submission could be graded, or None when it was graded.

    The one rule (grade, grade-batch, every renderer): a report the grader marked so (`graded`
    false), a grade-batch row whose status is "error: ...", or a report where no test reached a
    verdict (passed or failed) and the submission could not be loaded (load errors), or every test
    ended in the same kind of error (the process died or timed out while loading)."""
    r = as_dict(report)
    status = (r.get("batch") or {}).get("status")
    if status and status != "graded":
        return status[len("error: ") :] if status.startswith("error: ") else status
    if r.get("graded") is False:
        return r.get("not_graded_reason") or "?"
    tests = [t for ex in r.get("exercises", []) for t in ex.get("tests", [])]
    statuses = [Status.of(t) for t in tests]
    errors = r.get("errors") or []
    if any(s in (Status.PASSED, Status.FAILED) for s in statuses):
        return None
    if errors:
        return one_line(errors[0] + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""))
    if statuses and all(s in (Status.ERROR, Status.NOT_GRADED) for s in statuses):
        t = tests[0]
        return one_line(t.get("message_en") or t.get("feedback", ""))
    return None


def exercise_not_graded_reason(exercise):
    """Why one exercise of a graded submission could not be graded, or None: its own file
    (`<exercise>.ipynb` / `<exercise>.py` in a folder submission) could not be read or parsed at
    all, and none of its tests reached a verdict.  (A missing file, or an error in another file,
    is not this: then the functions are simply missing.)"""
    ex = exercise if isinstance(exercise, dict) else asdict(exercise)
    tests = ex.get("tests", [])
    if any(Status.of(t) in (Status.PASSED, Status.FAILED) for t in tests):
        return None
    if tests and all(Status.of(t) == Status.NOT_GRADED for t in tests) and ex.get("not_graded_reason"):
        return ex["not_graded_reason"]
    name = ex.get("id", "")
    for e in ex.get("load_errors") or []:
        if e.startswith(f"{name}.ipynb: the notebook") or e.startswith(f"{name}.py: SyntaxError"):
            return one_line(e)
    return None


def advice_key(reason):
    """The catalogue key (messages.py "why.*") of what to do about a submission that was not
    graded, from the reason (load/submission.py's and the sandbox's words)."""
    r = reason.lower()
    if "json" in r or "notebook cannot be read" in r:
        return "why.json"
    if "syntaxerror" in r or "indentationerror" in r:
        return "why.syntax"
    if "did not finish" in r or "time-out" in r or "timed out" in r:
        return "why.timeout"
    return "why.other"


def level(score, max_score):
    """The colour class of a score: "good" (>= 90 %), "fair" (>= 60 %), "poor"; "none" without one."""
    if not isinstance(score, (int, float)) or not isinstance(max_score, (int, float)) or max_score <= 0:
        return "none"
    f = score / max_score
    return "good" if f >= 0.9 else "fair" if f >= 0.6 else "poor"


def student_of(report):
    """Whose report this is: grade-batch's student, `grade --student`, else the submission's name
    (the file's stem or the folder's name; never a temporary path)."""
    r = as_dict(report)
    who = (r.get("batch") or {}).get("student") or r.get("student")
    if who:
        return str(who)
    sub = str(r.get("submission") or "")
    if not sub:
        return ""
    p = Path(sub)
    return p.stem if p.suffix in (".py", ".ipynb") else p.name


def fixes(report):
    """What to fix, one entry per function, in the order of the exercises and their tests:

        {"exercise", "function", "anchor", "tests": [failed test dicts], "lost": points,
         "diagnoses": [each named mistake once], "status": Status of the first test,
         "parts": [each explanation by part once] (only where a test has one),
         "not_graded": None, or why the exercise was not graded (then "function" is the exercise
                       and "tests" is empty: no test is shown for it)}

    A test belongs to the function its named mistake is in (a padding_mask mistake failing an
    attention_mask test is padding_mask's to fix), else to its own function.  [] when every test
    passed or when the submission was not graded."""
    r = as_dict(report)
    if not_graded_reason(r) is not None:
        return []
    groups = {}
    for ex in r.get("exercises", []):
        why = exercise_not_graded_reason(ex)
        if why is not None:
            groups[(ex["id"], None)] = {
                "exercise": ex["id"],
                "function": ex["id"],
                "anchor": f"fix-{ex['id']}",
                "tests": [],
                "lost": 0.0,
                "diagnoses": [],
                "status": Status.NOT_GRADED,
                "not_graded": why,
            }
            continue
        for t in ex.get("tests", []):
            if t.get("passed"):
                continue
            diag = t.get("diagnosis") or []
            fn = (diag[0].get("function") if diag else "") or t.get("function") or t["name"].split("/")[1]
            key = (ex["id"], fn)
            g = groups.get(key)
            if g is None:
                anchor = "fix-" + re.sub(r"[^A-Za-z0-9_-]+", "-", f"{ex['id']}-{fn}")
                g = groups[key] = {
                    "exercise": ex["id"],
                    "function": fn,
                    "anchor": anchor,
                    "tests": [],
                    "lost": 0.0,
                    "diagnoses": [],
                    "status": Status.of(t),
                    "not_graded": None,
                }
            for p in t.get("explained_by_part") or []:
                if p not in g.setdefault("parts", []):
                    g["parts"].append(p)
            g["tests"].append(t)
            g["lost"] += float(t.get("max_score") or 0) - float(t.get("score") or 0)
            for d in diag:
                key_d = d.get("id") or (d.get("title_en"), d.get("title_zh"))
                if all((e.get("id") or (e.get("title_en"), e.get("title_zh"))) != key_d for e in g["diagnoses"]):
                    g["diagnoses"].append(d)
    return list(groups.values())


def fix_headline(group):
    """(zh, en): the one line that says what is wrong with a function: its named mistake(s), else
    what its first failed test says (a missing function, a time-out, a crash: the message; a
    property that does not hold: the property)."""
    if group.get("not_graded"):
        return pair("test.not_graded", reason=group["not_graded"])
    if group["diagnoses"]:
        return (
            "；".join(d.get("title_zh", "") for d in group["diagnoses"] if d.get("title_zh")),
            "; ".join(d.get("title_en", "") for d in group["diagnoses"] if d.get("title_en")),
        )
    t = group["tests"][0]
    if Status.of(t) in (Status.MISSING, Status.TIMEOUT, Status.ERROR):
        return (t.get("message_zh") or "").split("\n")[0], (t.get("message_en") or "").split("\n")[0]
    return (
        pair("test.fails", prop=_first_clause(t.get("property_zh", "")))[0],
        pair("test.fails", prop=_first_clause(t.get("property_en", "")))[1],
    )


def _first_clause(text, limit=110):
    """A property's first clause (up to its first semicolon), at most `limit` characters."""
    text = re.split(r"；|; ", text, maxsplit=1)[0].strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


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
            out.append(
                (
                    base + idx,
                    two_d(e, k) if e is not None else None,
                    two_d(g, k),
                    two_d(d, k) if d is not None else None,
                )
            )
            return
        for i in range(len(g)):
            walk(e[i] if e is not None else None, g[i], d[i] if d is not None else None, idx + [i], k - 1)

    walk(exp, got, diff, [], n)

    def wrong(s):
        return bool(s[3]) and any(any(bool(v) for v in row) for row in s[3])

    ranked = [s for s in out if wrong(s)] + [s for s in out if not wrong(s)]
    return ranked[:limit]
