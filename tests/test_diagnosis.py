"""The diagnosis (autograder/diagnose.py) names the catalogued mistake a failing function makes,
and never a wrong one.

Most checks call `diagnose` directly with the in-process Student (fast); a few grade whole
submissions through the real sandbox (ForkRunner) to check the hook, the JSON and the text.
"""
import itertools
import warnings
from pathlib import Path

import pytest
import torch

from autograder import diagnose as D
from autograder.catalogue import build_submission, load_catalogue
from autograder.config import load_course
from autograder.errors import TestTimeout
from autograder.grading import grade
from autograder.load import find_files, load_submission
from autograder.properties._harness import Student
from autograder.report.feedback import feedback_text
from autograder.report.model import TestResult
from autograder.report.text import render_text
from autograder.sandbox import ForkRunner

from .conftest import ROOT

EXERCISES = list(D.PROBES)  # the exercises with probes (an exercise without any gets no diagnosis)
CATALOGUE = [(ex, e) for ex, e in load_catalogue() if ex in EXERCISES and e.get("diagnosis", True)]
BLIND = [(ex, e) for ex, e in load_catalogue() if ex in EXERCISES and not e.get("diagnosis", True)]
HELDOUT = ROOT / "tests" / "files" / "heldout"
CORRECT = sorted(p for p in (ROOT / "tests" / "files" / "correct").iterdir() if p.is_dir())
CORRECT_EXTRA = sorted(p for p in (ROOT / "tests" / "files" / "correct_extra").iterdir() if p.is_dir())

warnings.filterwarnings("ignore", message=".*x.T.*")  # sdpa_k_dot_T's K.T on 4-D tensors


def _named_id(entry):
    """What the diagnosis calls `entry`: its own id, or its group's (mistakes that behave alike)."""
    return (entry.get("group") or entry)["id"]


def _names(found):
    return {f: [d["id"] for d in v] for f, v in found.items() if v}


def _heldout():
    """[(file, exercise, expected id or 'none')] from each file's two header lines."""
    out = []
    for f in sorted(HELDOUT.glob("*.py")):
        head = dict(line[2:].split(":", 1) for line in f.read_text(encoding="utf-8").splitlines()[:2])
        out.append((f, head["exercise"].strip(), head["diagnosis"].strip()))
    return out


def _student(path, exercise):
    sub = load_submission(path)
    return Student(sub, [str(p) for p in find_files(path)], exercise)


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the judge; tiny tensors are slower with more threads
    yield
    torch.set_num_threads(n)


# ---------------------------------------------------------------- the catalogue


def test_every_function_has_probes():
    for ex, e in CATALOGUE:
        assert D.PROBES.get(ex, {}).get(e["function"]), f"no probes for {ex}/{e['function']}"


def test_catalogued_mistakes_differ_from_the_reference_and_from_each_other():
    """On its own function, every mistake behaves unlike the reference, and two mistakes that
    behave alike on every probe must be declared one group (same `group` id)."""
    for ex in EXERCISES:
        sig = D.signatures(ex)
        ref = sig["reference"]
        for (e1, s1), (e2, s2) in itertools.combinations(sig["mistakes"], 2):
            if e1["function"] == e2["function"] and D.agree(s1[e1["function"]], s2[e1["function"]]):
                assert _named_id(e1) == _named_id(e2), \
                    f"{e1['id']} and {e2['id']} behave alike on every probe: add a probe or a shared group"
        for e, s in sig["mistakes"]:
            assert not D.agree(s[e["function"]], ref[e["function"]]), f"{e['id']} behaves like the reference"


def test_every_catalogued_mistake_is_named():
    named = []
    for ex, e in CATALOGUE:
        student = D._trusted_student(ex, e["code"])
        found = _names(D.diagnose(student, ex, list(D.PROBES[ex])))
        assert found.get(e["function"]) == [_named_id(e)], f"{e['id']}: diagnosis {found}"
        for f, ids in found.items():  # a mistake also shows in functions that use the broken one
            assert ids == [_named_id(e)], f"{e['id']} named as {ids} on {f}"
        named.append(e["id"])
    print(f"\ncatalogue: {len(named)}/{len(CATALOGUE)} mistakes named right, 0 wrong")
    assert len(named) == len(CATALOGUE) >= 100


def test_mistakes_the_probes_cannot_see_are_never_named():
    """`diagnosis: false` entries (wrong only in gradients, or only far outside the probes' inputs)
    behave like the reference on every probe, so the diagnosis must name nothing for them (and the
    reference's own behaviour must not be taken for one of them)."""
    assert len(BLIND) >= 6
    for ex, e in BLIND:
        student = D._trusted_student(ex, e["code"])
        found = _names(D.diagnose(student, ex, list(D.PROBES[ex])))
        assert not found, f"{e['id']}: named {found}"
    print(f"\nblind to the probes: {len(BLIND)} mistakes, none named")


def test_two_mistakes_at_once_never_name_a_third():
    """A submission with two catalogued mistakes (sampled pairs: a later one may subclass or call
    the first) gets only their names, or none."""
    for ex in EXERCISES:
        entries = [e for _, e in load_catalogue(ex)]
        pairs = list(itertools.permutations(entries, 2))[::7]  # every 7th ordered pair: ~300 in all
        for e1, e2 in pairs:
            student = D._trusted_student(ex, e1["code"] + "\n\n" + e2["code"])
            found = _names(D.diagnose(student, ex, list(D.PROBES[ex])))
            extra = {i for ids in found.values() for i in ids} - {_named_id(e1), _named_id(e2)}
            assert not extra, f"{e1['id']} + {e2['id']}: wrongly named {extra}"


class _Reseeded:
    """A student whose random functions get `shift` added to their seed: other draws of the same
    code, as another RNG scheme gives."""

    SEED_ARG = {"mlm_mask": 4, "init_tiny_lm": 2, "train_tiny_lm": 0}

    def __init__(self, student, shift):
        self.student, self.shift = student, shift

    def call(self, name, *args, **kwargs):
        i = self.SEED_ARG.get(name)
        if i is not None and len(args) > i:
            args = args[:i] + (args[i] + self.shift,) + args[i + 1:]
        return self.student.call(name, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.student, name)


def test_random_functions_are_read_the_same_whatever_the_draws():
    """mlm_mask, init_tiny_lm, train_tiny_lm: the contract fixes rates and facts, not the draws, so
    the reference, every catalogued mistake and the correct alternatives must give the same
    observations with other seeds (other draws of the same code)."""
    for ex, functions in [("bert_masking", ["mlm_mask"]), ("tiny_lm", ["init_tiny_lm", "train_tiny_lm"])]:
        students = [("reference", D._trusted_student(ex))]
        students += [(e["id"], D._trusted_student(ex, e["code"])) for _, e in load_catalogue(ex)
                     if e["function"] in functions or ex == "bert_masking"]
        students += [(p.name, _student(p, ex)) for p in CORRECT_EXTRA if (p / f"{ex}.py").exists()]
        for name, student in students:
            for fn in functions:
                base = D.observations(student, ex, fn)
                for shift in (1000, 2000):
                    with torch.random.fork_rng():
                        again = D.observations(_Reseeded(student, shift), ex, fn)
                    assert D.agree(again, base), f"{name}: {fn} reads differently with seeds + {shift}"


# ---------------------------------------------------------------- held-out submissions


def test_heldout_files_cover_every_exercise():
    cases = _heldout()
    wrong = [c for c in cases if c[2] not in ("none", "correct")]
    assert len(wrong) >= 25
    assert {ex for _, ex, _ in wrong} == set(EXERCISES)
    ids = {_named_id(e) for _, e in CATALOGUE}
    for f, ex, want in wrong:
        assert want in ids, f"{f.name}: unknown mistake {want}"
    assert sum(want == "none" for _, _, want in cases) >= 4


def test_heldout_cover_every_mistake_of_the_random_exercises():
    """bert_masking and tiny_lm (whose probes read facts and statistics, not draws): every
    catalogued mistake has a held-out submission written differently."""
    have = {want for _, _, want in _heldout()}
    for ex, e in CATALOGUE:
        if ex in ("bert_masking", "tiny_lm"):
            assert _named_id(e) in have, f"no held-out submission for {e['id']}"


def test_heldout_mistakes_are_named_and_never_wrongly():
    right, none, per = [], [], {}
    for f, ex, want in _heldout():
        if want in ("none", "correct"):
            continue
        found = _names(D.diagnose(_student(f, ex), ex, list(D.PROBES[ex])))
        got = {i for ids in found.values() for i in ids}
        assert got <= {want}, f"{f.name}: expected {want}, named {found}"
        (right if got else none).append(f.name)
        n = per.setdefault(ex, [0, 0])
        n[0] += bool(got)
        n[1] += 1
    rate = len(right) / (len(right) + len(none))
    print(f"\nheld-out: {len(right)} named right, 0 wrong, {len(none)} named nothing ({rate:.0%}): {none}")
    print("held-out per exercise (named / files): " + ", ".join(f"{ex} {a}/{b}" for ex, (a, b) in per.items()))
    assert rate >= 0.9


def test_uncatalogued_bugs_get_no_name():
    n = 0
    for f, ex, want in _heldout():
        if want != "none":
            continue
        student = _student(f, ex)
        assert any(not D.agree(D.observations(student, ex, fn), D.signatures(ex)["reference"][fn])
                   for fn in D.PROBES[ex]), f"{f.name} is not wrong on any probe"
        assert not _names(D.diagnose(student, ex, list(D.PROBES[ex]))), f.name
        n += 1
    print(f"\nuncatalogued: {n} bugs, each wrong on a probe, 0 named")


def test_correct_heldout_variants_get_no_diagnosis():
    n = 0
    for f, ex, want in _heldout():
        if want != "correct":
            continue
        student = _student(f, ex)
        assert not _names(D.diagnose(student, ex, list(D.PROBES[ex]))), f.name
        for fn in D.PROBES[ex]:
            assert D.agree(D.observations(student, ex, fn), D.signatures(ex)["reference"][fn]), (f.name, fn)
        n += 1
    print(f"\ncorrect held-out variants: {n}, 0 named, all like the reference on every probe")


@pytest.mark.parametrize("folder", CORRECT + CORRECT_EXTRA,
                         ids=[f"{p.parent.name}/{p.name}" for p in CORRECT + CORRECT_EXTRA])
def test_correct_alternatives_get_no_diagnosis(folder):
    for ex in EXERCISES:
        if not (folder / f"{ex}.py").exists():
            continue  # the alternatives predate this exercise
        student = _student(folder, ex)
        assert not _names(D.diagnose(student, ex, list(D.PROBES[ex]))), (folder.name, ex)
        for fn in D.PROBES[ex]:  # they behave like the reference on every probe
            assert D.agree(D.observations(student, ex, fn), D.signatures(ex)["reference"][fn]), (folder.name, fn)


# ---------------------------------------------------------------- outcomes, budget, feedback


def test_diagnose_outcomes_attaches_to_failed_tests_of_the_function():
    e = next(e for _, e in CATALOGUE if e["id"] == "padding_mask_inverted")
    student = D._trusted_student("masks", e["code"])
    outcomes = {"padding_mask/marks_real_tokens": {"status": "failed"},
                "attention_mask/blocks_padded_keys_only": {"status": "failed"},
                "causal_mask/future_is_blocked": {"status": "passed"}}
    added = D.diagnose_outcomes(student, "masks", outcomes, lambda n: n.split("/")[0])
    assert set(added) == {"padding_mask/marks_real_tokens", "attention_mask/blocks_padded_keys_only"}
    d = outcomes["attention_mask/blocks_padded_keys_only"]["diagnosis"][0]
    assert d["id"] == "padding_mask_inverted" and d["function"] == "padding_mask"
    assert all(d[k] for k in ("title_zh", "title_en", "explanation_zh", "explanation_en", "hint_zh", "hint_en"))
    assert "diagnosis" not in outcomes["causal_mask/future_is_blocked"]


def test_a_slow_student_costs_only_the_diagnosis(tmp_path):
    import signal
    import time

    f = tmp_path / "slow.py"
    f.write_text("import time\n\ndef causal_mask(T, device=None):\n    while True:\n        time.sleep(0.01)\n")
    outcomes = {"causal_mask/future_is_blocked": {"status": "failed", "en": "failed"}}
    before = signal.getsignal(signal.SIGALRM)
    start = time.monotonic()
    added = D.diagnose_outcomes(_student(f, "masks"), "masks", outcomes, lambda n: n.split("/")[0], budget=0.5)
    assert time.monotonic() - start < 3
    assert added == {} and outcomes == {"causal_mask/future_is_blocked": {"status": "failed", "en": "failed"}}
    # a function whose test timed out is not probed at all
    outcomes = {"causal_mask/future_is_blocked": {"status": "timeout"}}
    start = time.monotonic()
    assert D.diagnose_outcomes(_student(f, "masks"), "masks", outcomes, lambda n: n.split("/")[0]) == {}
    assert time.monotonic() - start < 0.5
    assert signal.getsignal(signal.SIGALRM) == before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def _result(diagnosis, function="attention_mask"):
    return TestResult(name=f"masks/{function}/x", function=function, score=0, max_score=1, passed=False,
                      feedback="", status="failed", property_zh="性质", property_en="the property",
                      message_zh="消息", message_en="the message", diagnosis=diagnosis)


def test_feedback_shows_the_mistake_above_the_property_failure():
    d = D.describe(next(e for _, e in CATALOGUE if e["id"] == "padding_mask_inverted"))
    for lang in ("zh", "en", "both"):
        text = feedback_text(_result([d]), lang)
        if lang != "zh":
            assert d["title_en"] in text and d["explanation_en"] in text and d["hint_en"].split("\n")[0] in text
            assert text.index(d["title_en"]) < text.index("the message")
            assert "`padding_mask`" in text  # the mistake is in another function than the test's
        if lang != "en":
            assert d["title_zh"] in text and d["hint_zh"] in text
            assert text.index(d["title_zh"]) < text.index("消息")
        if lang == "zh":
            assert d["title_en"] not in text
    plain = feedback_text(_result([]), "en")
    assert "Diagnosis" not in plain and "the message" in plain


# ---------------------------------------------------------------- end to end, through the sandbox


@pytest.fixture(scope="module")
def course():
    return load_course()


def _grade(path, course, exercise):
    return grade(path, course, ForkRunner(course), exercises=[exercise])


def test_end_to_end_catalogued_mistake(tmp_path, course):
    e = next(e for _, e in CATALOGUE if e["id"] == "attention_mask_ignores_causal")
    report = _grade(build_submission("masks", e, tmp_path / "sub"), course, "masks")
    failed = [t for ex in report.exercises for t in ex.tests if not t.passed]
    assert failed and all([d["id"] for d in t.diagnosis] == ["attention_mask_ignores_causal"] for t in failed)
    assert e["title"]["en"] in failed[0].feedback
    assert report.to_dict()["exercises"][0]["tests"][0]["diagnosis"] is not None
    assert e["title"]["en"] in render_text(report)


def test_end_to_end_heldout_and_uncatalogued(course):
    report = _grade(HELDOUT / "pe__swapped_loops.py", course, "positional_encoding")
    failed = [t for ex in report.exercises for t in ex.tests if not t.passed]
    assert failed and {d["id"] for t in failed for d in t.diagnosis} == {"pe_sin_cos_swapped"}
    assert all(t.diagnosis for t in failed if t.function == "sinusoidal_encoding")

    report = _grade(HELDOUT / "none__masks_one_future.py", course, "masks")
    failed = [t for ex in report.exercises for t in ex.tests if not t.passed]
    assert failed and not any(t.diagnosis for t in failed)
    assert all("Diagnosis" not in t.feedback and "诊断" not in t.feedback for t in failed)


def test_end_to_end_gradient_probe_through_the_worker(tmp_path, course):
    """sdpa_detached_weights differs only in its gradient: the probe's vector-Jacobian product
    crosses the sandbox."""
    e = next(e for _, e in CATALOGUE if e["id"] == "sdpa_detached_weights")
    report = _grade(build_submission("attention", e, tmp_path / "sub"), course, "attention")
    failed = [t for ex in report.exercises for t in ex.tests if not t.passed]
    assert failed and all([d["id"] for d in t.diagnosis] == ["sdpa_detached_weights"] for t in failed)


@pytest.mark.parametrize("name, exercise, want", [
    ("bm__rates_confused_hf.py", "bert_masking", "bm_rates_swapped"),
    ("tlm__train_adds_gradient.py", "tiny_lm", "tiny_lm_train_gradient_ascent"),
])
def test_end_to_end_random_functions_through_the_worker(course, name, exercise, want):
    """Probes of random functions through the sandbox: mlm_mask's 12000-token rates, and
    train_tiny_lm's loss lists (three short trainings in the worker, the reference's in the judge,
    within the diagnosis budget)."""
    report = _grade(HELDOUT / name, course, exercise)
    failed = [t for ex in report.exercises for t in ex.tests if not t.passed]
    assert failed and all([d["id"] for d in t.diagnosis] == [want] for t in failed)
