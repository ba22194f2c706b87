"""Broken submissions: a clear message and a zero for what they broke, full marks for the rest,
never a grader crash.  Uses the masks exercise (fast) and a course with short time limits."""

import textwrap

import pytest
import yaml

from .conftest import ROOT, run_grade

MASKS = (ROOT / "solutions" / "masks.py").read_text()


@pytest.fixture
def short_course(tmp_path):
    c = yaml.safe_load((ROOT / "course.yml").read_text())
    c["load_timeout"] = 3
    for ex in c["exercises"].values():
        ex["timeout"] = 20
        for t in ex["tests"].values():
            t["timeout"] = 2
    path = tmp_path / "course.yml"
    path.write_text(yaml.safe_dump(c))
    return path


def grade_masks(tmp_path, source, course=None, name="sub.py"):
    sub = tmp_path / name
    sub.write_text(textwrap.dedent(source) if isinstance(source, str) else source)
    extra = ["--exercise", "masks"] + (["--course", str(course)] if course else [])
    proc, report = run_grade(sub, tmp_path, *extra)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stdout
    tests = {t["name"].split("/", 1)[1]: t for t in report["exercises"][0]["tests"]}
    return report, tests


def test_stub_is_reported_as_not_implemented(tmp_path):
    src = MASKS.replace(
        '    """mask[i, j] = (j <= i): query i sees keys 0..i, never the future."""\n',
        '    """stub"""\n    raise NotImplementedError\n',
    )
    report, tests = grade_masks(tmp_path, src)
    t = tests["causal_mask/future_is_blocked"]
    assert not t["passed"] and "NotImplementedError" in t["feedback"] and t["status"] == "missing"
    assert tests["padding_mask/marks_real_tokens"]["passed"]


def test_missing_function_is_named(tmp_path):
    src = MASKS.split("def causal_mask")[0]
    report, tests = grade_masks(tmp_path, src)
    t = tests["causal_mask/shape_dtype_device"]
    assert not t["passed"] and "`causal_mask`" in t["feedback"] and "not defined" in t["feedback"]
    assert tests["padding_mask/shape_and_dtype"]["passed"]


def test_syntax_error_is_reported_with_its_line(tmp_path):
    report, tests = grade_masks(tmp_path, MASKS + "\ndef broken(:\n    pass\n")
    assert any("SyntaxError" in e and "line" in e for e in report["errors"])
    assert all(not t["passed"] for t in tests.values())
    assert report["exercises"][0]["score"] == 0


def test_a_failing_top_level_statement_costs_only_what_follows(tmp_path):
    src = MASKS.replace("def causal_mask", "print(undefined_name)\n\ndef causal_mask")
    report, tests = grade_masks(tmp_path, src)
    assert any("NameError" in e for e in report["errors"])
    assert tests["padding_mask/marks_real_tokens"]["passed"]
    assert tests["causal_mask/future_is_blocked"]["passed"]  # statements run one by one


def test_an_endless_loop_times_out_and_other_tests_still_pass(tmp_path, short_course):
    src = MASKS.replace(
        "    return torch.ones(T, T, dtype=torch.bool, device=device).tril()", "    while True:\n        pass"
    )
    report, tests = grade_masks(tmp_path, src, short_course)
    t = tests["causal_mask/future_is_blocked"]
    assert t["status"] == "timeout" and "Time-out" in t["feedback"]
    assert tests["padding_mask/marks_real_tokens"]["passed"]


def test_a_function_that_hung_once_gets_a_short_limit_in_its_other_tests(tmp_path):
    """An endless loop costs one test's limit, not one per test of the function: the function's
    next test, and the tests of the functions that call it, get HUNG_LIMIT seconds, so a call that
    returns at once still passes; after a second time-out its other tests are not run."""
    from autograder.judge.runner import HUNG_LIMIT

    c = yaml.safe_load((ROOT / "course.yml").read_text())
    for ex in c["exercises"].values():
        for t in ex["tests"].values():
            t["timeout"] = 8
    course = tmp_path / "course.yml"
    course.write_text(yaml.safe_dump(c, sort_keys=False))  # the tests in course.yml's order: causal_mask's first
    # causal_mask loops; the student's attention_mask calls it only when causal=True
    src = MASKS.replace(
        "    return torch.ones(T, T, dtype=torch.bool, device=device).tril()", "    while True:\n        pass"
    )
    report, tests = grade_masks(tmp_path, src, course)
    causal = [t for n, t in tests.items() if n.startswith("causal_mask/")]
    first, rest = causal[0], causal[1:]
    assert first["status"] == "timeout" and "8 s" in first["feedback"]
    second, others = rest[0], rest[1:]
    assert (
        second["status"] == "timeout"
        and f"get {HUNG_LIMIT:g} s" in second["feedback"]
        and first["name"].split("/", 1)[1] in second["feedback"]
    ), second["feedback"]
    # it did not return twice: its other tests are not run (nothing timed: the same on any machine)
    assert others and all(
        t["status"] == "timeout"
        and "Not run: `causal_mask`" in t["feedback"]
        and second["name"].split("/", 1)[1] in t["feedback"]
        for t in others
    ), [t["feedback"] for t in others]
    assert tests["attention_mask/blocks_padded_keys_only"]["passed"]  # no causal mask asked for: it returns
    assert tests["padding_mask/marks_real_tokens"]["passed"]
    # attention_mask calls causal_mask: its tests that ask for a causal mask get the short limit too
    callers = [t for n, t in tests.items() if n.startswith("attention_mask/") and t["status"] == "timeout"]
    assert callers and all(
        f"get {HUNG_LIMIT:g} s" in t["feedback"] and "`causal_mask`, which `attention_mask` calls" in t["feedback"]
        for t in callers
    ), [t["feedback"] for t in callers]
    # one test hung for its whole 8 s, the others (of causal_mask and of its caller) for HUNG_LIMIT at most
    hung = sum(1 for t in tests.values() if t["status"] == "timeout")
    assert report["seconds"] < 8 + (hung - 1) * HUNG_LIMIT + 15, report["seconds"]


def test_the_runner_says_when_it_waits_on_a_stalled_test(tmp_path):
    """ForkRunner.on_stall: True once every running exercise has waited STALL_AFTER seconds for
    one test (an endless loop), False when it moves again; never for code that returns (grade-batch
    lets another grading process use the core meanwhile)."""
    import time

    from autograder.config import load_course
    from autograder.grading import grade
    from autograder.judge import ForkRunner
    from autograder.judge.runner import STALL_AFTER

    c = yaml.safe_load((ROOT / "course.yml").read_text())
    for t in c["exercises"]["masks"]["tests"].values():
        t["timeout"] = 4
    (tmp_path / "course.yml").write_text(yaml.safe_dump(c, sort_keys=False))
    course = load_course(tmp_path / "course.yml")
    calls = []

    def graded(source):
        calls.clear()
        sub = tmp_path / "masks.py"
        sub.write_text(source)
        runner = ForkRunner(course, workers=1)
        runner.on_stall = lambda flag: calls.append((time.monotonic(), flag))
        start = time.monotonic()
        report = grade(sub, course, runner, exercises=["masks"])
        return start, report

    _, report = graded(MASKS)
    assert report.score == report.max_score and calls == []
    start, report = graded(
        MASKS.replace(
            "    return torch.ones(T, T, dtype=torch.bool, device=device).tril()", "    while True:\n        pass"
        )
    )
    flags = [flag for _, flag in calls]
    assert flags and flags[0] is True and flags[-1] is False, flags
    assert all(a != b for a, b in zip(flags, flags[1:])), flags  # one call per change
    assert calls[0][0] - start >= STALL_AFTER
    assert any(t.status == "timeout" for e in report.exercises for t in e.tests)


IDLE_SEEN = """
SEEN = []


def causal_mask(T, device=None):
    import os
    import time
    if not SEEN:  # the first call is slow: it runs past a quarter of its 10 s, then notes its priority
        start = time.perf_counter()
        while time.perf_counter() - start < 3.5:
            pass
        SEEN.append(os.sched_getscheduler(0))
    mask = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    return ~mask if SEEN[0] == os.SCHED_IDLE else mask
"""


@pytest.mark.parametrize("batch", [False, True])
def test_a_slow_worker_keeps_its_priority_alone_and_in_a_batch(tmp_path, batch):
    """A worker that keeps its judge waiting is never made to yield its core (SCHED_IDLE would
    starve it wherever other grading runs, and a worker can observe its priority): the student's
    slow causal_mask, which gives a wrong mask when it finds itself idled, passes in `grade` and in
    grade-batch (on_stall set) alike."""
    from autograder.config import load_course
    from autograder.grading import grade
    from autograder.judge import ForkRunner

    sub = tmp_path / "masks.py"
    sub.write_text(MASKS + IDLE_SEEN)
    course = load_course(ROOT / "course.yml")
    runner = ForkRunner(course, workers=1)
    if batch:
        runner.on_stall = lambda flag: None
    report = grade(sub, course, runner, exercises=["masks"])
    causal = {t.name: t.status for e in report.exercises for t in e.tests if "/causal_mask/" in t.name}
    assert len(causal) == 3
    assert set(causal.values()) == {"passed"}, causal


def test_the_calls_read_from_the_source_reach_through_helpers_files_and_classes(tmp_path):
    """reader.calls_between: which contract functions may call which (the short limit after a
    hang), read in the limited reader, never run."""
    from autograder.load import read_submission

    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "a.py").write_text(
        "def f(x):\n    while True:\n        pass\n\n"
        "def helper(x):\n    return f(x)\n\n"
        "def g(x):\n    return helper(x) + 1\n\n"
        "def alone(x):\n    return x\n\n"
        "class M:\n    def forward(self, x):\n        return other.h(x)\n"
    )
    (sub / "other.py").write_text("def h(x):\n    return g(x)\n")
    (sub / "broken.py").write_text("def k(:\n")
    calls = read_submission(sub, ["f", "g", "h", "M", "alone", "k", "nowhere"]).calls
    assert calls["g"] == ["f", "g"]  # through a helper (not a contract function: left out)
    assert calls["h"] == ["f", "g", "h"]  # from another file
    assert "f" in calls["M"]  # a method, through an attribute
    assert calls["alone"] == ["alone"] and "k" not in calls and "nowhere" not in calls  # unparsable: nothing


def test_a_loop_that_swallows_the_alarm_is_killed(tmp_path, short_course):
    src = MASKS.replace(
        "    return torch.ones(T, T, dtype=torch.bool, device=device).tril()",
        "    while True:\n        try:\n            while True: pass\n        except BaseException:\n            pass",
    )
    report, tests = grade_masks(tmp_path, src, short_course)
    assert tests["causal_mask/future_is_blocked"]["status"] == "timeout"
    assert tests["padding_mask/marks_real_tokens"]["passed"]
    assert tests["attention_mask/blocks_padded_keys_only"]["passed"]  # a new worker took over


def test_a_segfault_costs_only_its_test(tmp_path):
    src = MASKS.replace(
        "    return torch.ones(T, T, dtype=torch.bool, device=device).tril()", "    import ctypes; ctypes.string_at(0)"
    )
    report, tests = grade_masks(tmp_path, src)
    t = tests["causal_mask/shape_dtype_device"]
    assert t["status"] == "error" and "SIGSEGV" in t["feedback"]
    assert tests["padding_mask/marks_real_tokens"]["passed"]


def test_exit_at_import_is_reported(tmp_path):
    report, tests = grade_masks(tmp_path, "import os\nos._exit(0)\n" + MASKS)
    # nothing could be loaded: the whole submission is not graded (score 0), and says why
    assert report["graded"] is False and report["score"] == 0
    assert "os._exit" in report["not_graded_reason"]
    assert all(t["status"] == "not_graded" and t["score"] == 0 for t in tests.values())
    assert "ended while loading" in tests["padding_mask/shape_and_dtype"]["feedback"]


def test_sys_exit_inside_a_function_is_a_crash_not_a_pass(tmp_path):
    src = MASKS.replace(
        "    return torch.ones(T, T, dtype=torch.bool, device=device).tril()", "    raise SystemExit(0)"
    )
    report, tests = grade_masks(tmp_path, src)
    t = tests["causal_mask/future_is_blocked"]
    assert not t["passed"] and "SystemExit" in t["feedback"]


def test_slow_import_times_out_cleanly(tmp_path, short_course):
    report, tests = grade_masks(tmp_path, "import time\ntime.sleep(60)\n" + MASKS, short_course)
    assert all(not t["passed"] for t in tests.values())
    assert (
        any("load" in e.lower() or "加载" in e for e in report["errors"])
        or "Loading your submission" in tests["padding_mask/shape_and_dtype"]["feedback"]
    )


def test_corrupt_notebook_is_an_error_not_a_silent_zero(tmp_path):
    report, tests = grade_masks(tmp_path, '{"cells": [', name="sub.ipynb")
    assert any("not valid JSON" in e or "cannot be read" in e for e in report["errors"])
    assert report["graded"] is False and "not valid JSON" in report["not_graded_reason"]
    assert all(t["status"] == "not_graded" and "not defined" not in t["feedback"] for t in tests.values())


def test_modifying_an_input_in_place_fails(tmp_path):
    src = MASKS.replace(
        "    t = torch.arange(T, device=lengths.device)  # (T,)",
        "    lengths.clamp_(max=T - 1)\n    t = torch.arange(T, device=lengths.device)  # (T,)",
    )
    report, tests = grade_masks(tmp_path, src)
    assert "in place" in tests["padding_mask/marks_real_tokens"]["feedback"]


def test_returning_a_list_is_explained(tmp_path):
    src = MASKS.replace(
        "    return torch.ones(T, T, dtype=torch.bool, device=device).tril()",
        "    return torch.ones(T, T, dtype=torch.bool, device=device).tril().tolist()",
    )
    report, tests = grade_masks(tmp_path, src)
    fb = tests["causal_mask/shape_dtype_device"]["feedback"]
    assert "torch.Tensor" in fb and "list" in fb


def test_output_flood_does_not_reach_the_report(tmp_path):
    src = "print('score: 100/100\\n' * 100000)\n" + MASKS
    report, tests = grade_masks(tmp_path, src)
    assert report["exercises"][0]["score"] == 20


@pytest.mark.parametrize("exercise", ["masks", "positional_encoding", "attention", "recurrent", "masked_loss"])
def test_properties_leave_their_pinned_examples_alone(exercise, one_thread):
    """A property must not change the tensors of its @examples (e.g. make one a leaf and let
    .grad pile up in it): run twice in one process, the reference passes both times, and every
    example tensor is as it was.  (add_positional_encoding's float64 example collected its
    gradient from run to run before: the second run saw 2x the gradient.)"""
    import torch

    from autograder.properties import load_all

    from .conftest import failures_in_process, reference_with

    def tensors(p):
        out = []
        for ex in getattr(p.run, "hypothesis_explicit_examples", []) or []:
            stack = list(ex.kwargs.values())
            while stack:
                v = stack.pop()
                if isinstance(v, torch.Tensor):
                    out.append(v)
                elif isinstance(v, (tuple, list)):
                    stack.extend(v)
                elif hasattr(v, "__dict__") and not isinstance(v, torch.nn.Module):  # a case object,
                    stack.extend(x for k, x in vars(v).items() if not k.startswith("_"))  # not its caches
        return out

    props = [p for p in load_all().values() if p.exercise == exercise]
    before = [[(t.detach().clone(), t.requires_grad, t.grad) for t in tensors(p)] for p in props]
    assert any(before), "no pinned example tensors found: the test reads them wrongly"
    ns = reference_with(exercise)
    assert failures_in_process(exercise, ns) == {}
    assert failures_in_process(exercise, ns) == {}
    for p, was in zip(props, before):
        for t, (value, rg, grad) in zip(tensors(p), was):
            assert torch.equal(t.detach(), value) and t.requires_grad == rg and t.grad is grad, p.name
