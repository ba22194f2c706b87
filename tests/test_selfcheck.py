"""The grader checks itself (selfcheck.py) and keeps its processes clean across fork (devices.py,
forkcheck.py).  On a machine without a GPU, SEQGRADER_AUTOGRAD_FORK reproduces what a CUDA build
of torch does on a machine with one: `cuda` is CUDA's rule (a process forked after its parent ran a
backward pass cannot run one), `broken` breaks autograd in every process the grader forks."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from .conftest import ROOT

EXAMPLES = ROOT / "examples" / "submissions"


def seqgrader(*args, env=None, timeout=600):
    full = dict(os.environ, **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "autograder", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full,
    )


@pytest.fixture
def cache(tmp_path):
    """A cache folder of its own: nothing this machine remembered counts."""
    return {"SEQGRADER_CACHE_DIR": str(tmp_path / "cache")}


def test_the_simulation_breaks_a_child_forked_after_a_backward_pass_as_cuda_does(tmp_path):
    log = tmp_path / "forks.log"
    code = textwrap.dedent("""
        import os, torch
        import autograder.sandbox  # installs the check (SEQGRADER_AUTOGRAD_FORK)
        from autograder.sandbox.forkcheck import MESSAGE

        def child_backward():
            pid = os.fork()
            if pid == 0:
                x = torch.ones(2, requires_grad=True)
                try:
                    (x * x).sum().backward()
                    os._exit(0)
                except RuntimeError as e:
                    os._exit(3 if str(e) == MESSAGE else 4)
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

        before = child_backward()            # the parent has not run autograd: the child can
        x = torch.ones(2, requires_grad=True)
        torch.autograd.grad((x * 3).sum(), x)  # now it has
        after = child_backward()             # ... and a child forked now cannot
        print(before, after)
        """)
    env = dict(os.environ, SEQGRADER_AUTOGRAD_FORK="cuda", SEQGRADER_AUTOGRAD_FORK_LOG=str(log))
    env.pop("SEQGRADER_AUTOGRAD_FORK_ROOT", None)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert out.stdout.split() == ["0", "3"], out.stderr[-2000:]
    assert log.read_text().split()[0] == "grading"  # the one fork after a backward pass was logged


@pytest.mark.slow
def test_no_process_that_forks_runs_autograd_in_grade_or_grade_batch(tmp_path, cache):
    """With CUDA's rule simulated, the reference gets full marks through `grade` and `grade-batch`,
    and no grader process (grading, judge, server, zygote) ever forked after a backward pass."""
    log = tmp_path / "forks.log"
    env = {**cache, "SEQGRADER_AUTOGRAD_FORK": "cuda", "SEQGRADER_AUTOGRAD_FORK_LOG": str(log)}
    out = tmp_path / "ref.json"
    proc = seqgrader("grade", ROOT / "solutions", "--json", out, "-q", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(out.read_text())["score"] == 100
    proc = seqgrader("grade", EXAMPLES / "alice.py", "--json", out, "-q", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    grades = tmp_path / "grades"
    proc = seqgrader("grade-batch", EXAMPLES, "--out", grades, "--workers", "2", "-q", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(list((grades / "reports").glob("*.json"))) == 4
    forks = [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []
    assert not [r for r in forks if r != "worker"], forks  # a worker runs the student's code: its own business


@pytest.mark.slow
def test_grade_refuses_to_grade_where_the_reference_loses_points(tmp_path, cache):
    out = tmp_path / "alice.json"
    proc = seqgrader("grade", EXAMPLES / "alice.py", "--json", out, env={**cache, "SEQGRADER_AUTOGRAD_FORK": "broken"})
    assert proc.returncode == 2, proc.stdout[-2000:]
    assert not out.exists()  # no score written
    err = proc.stderr
    assert "do not get full marks in this environment" in err and "no score is written" in err
    assert "attention/scaled_dot_product_attention/" in err  # the property
    assert (
        "Unable to handle autograd's threading in combination with fork-based multiprocessing" in err
    )  # the exception
    assert "CUDA_VISIBLE_DEVICES=" in err  # what to try
    assert "in-place" not in err and "Traceback" not in err


@pytest.mark.slow
def test_grade_batch_refuses_and_writes_no_row(tmp_path, cache):
    grades = tmp_path / "grades"
    proc = seqgrader(
        "grade-batch",
        EXAMPLES,
        "--out",
        grades,
        "--workers",
        "2",
        "-q",
        env={**cache, "SEQGRADER_AUTOGRAD_FORK": "broken"},
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "do not get full marks in this environment" in proc.stderr
    assert not list((grades / "reports").glob("*.json")) if (grades / "reports").exists() else True
    assert not (grades / "grades.csv").exists()
    assert not (grades / "gradescope").exists() or not list((grades / "gradescope").rglob("results.json"))


@pytest.mark.slow
def test_an_error_the_reference_shares_stops_the_run_even_after_a_remembered_pass(tmp_path, cache):
    """A pass remembered for this environment skips the check before grading; an error the
    reference raises too is still never the student's: the run stops all the same."""
    env = {**cache, "SEQGRADER_AUTOGRAD_FORK": "broken"}
    remember = textwrap.dedent("""
        from autograder.config import load_course
        from autograder import selfcheck
        from autograder.sandbox import devices
        devices.hide()  # as every grading process does
        course = load_course()
        env = selfcheck.environment(course, course.assignment(), "sandbox")
        selfcheck._remember(env, {"passed": True, "score": 100.0, "max_score": 100.0})
        print(selfcheck.cached(env) is not None)
        """)
    full = dict(os.environ, **env)
    full.pop("SEQGRADER_AUTOGRAD_FORK_ROOT", None)
    done = subprocess.run(
        [sys.executable, "-c", remember], cwd=ROOT, capture_output=True, text=True, env=full, timeout=120
    )
    assert done.stdout.strip() == "True", done.stderr[-2000:]
    out = tmp_path / "alice.json"
    proc = seqgrader("grade", EXAMPLES / "alice.py", "--json", out, "-v", env=env)
    assert "remembered from" in proc.stderr  # the check before grading was skipped
    assert proc.returncode == 2 and not out.exists(), proc.stderr[-3000:]
    assert "while grading" in proc.stderr and "its error is the reference's too" in proc.stderr
    assert "Unable to handle autograd's threading" in proc.stderr


def test_a_student_who_raises_the_grader_s_error_gets_the_blame(tmp_path, cache):
    """A student who raises the very message of a broken environment cannot stop the class: the
    reference passes that test here, so the error is the student's own."""
    from autograder.sandbox.forkcheck import MESSAGE

    sub = tmp_path / "mallory.py"
    sub.write_text(
        (ROOT / "solutions" / "masked_loss.py").read_text()
        + textwrap.dedent(f"""

        def masked_cross_entropy(logits, targets, mask):
            raise RuntimeError({MESSAGE!r})
        """)
    )
    out = tmp_path / "mallory.json"
    proc = seqgrader("grade", sub, "--exercise", "masked_loss", "--json", out, "-q", env=cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    tests = report["exercises"][0]["tests"]
    assert report["score"] == 0 and {t["status"] for t in tests} <= {"error", "failed"}
    assert any("autograd's threading" in json.dumps(t["details"]) for t in tests)


def test_a_pass_is_remembered_as_json_per_environment(tmp_path, cache):
    first = seqgrader(
        "grade", EXAMPLES / "alice.py", "--exercise", "masks", "--json", tmp_path / "a.json", "-v", env=cache
    )
    assert first.returncode == 0 and "self-check" in first.stderr and "remembered" not in first.stderr, first.stderr
    files = list((tmp_path / "cache" / "self-check").glob("*.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text())  # plain JSON data: no pickle anywhere
    assert data["passed"] is True and data["environment"]["exercises"] == ["masks"]
    for key in ("grader", "course", "python", "kernel", "torch", "runner"):
        assert data["environment"][key], key
    again = seqgrader(
        "grade", EXAMPLES / "alice.py", "--exercise", "masks", "--json", tmp_path / "b.json", "-v", env=cache
    )
    assert "remembered from" in again.stderr
    other = seqgrader(
        "grade",
        EXAMPLES / "alice.py",
        "--exercise",
        "masks",
        "--json",
        tmp_path / "c.json",
        "-v",
        env={**cache, "CUDA_VISIBLE_DEVICES": "7"},
    )  # another view of the GPUs: checked again
    assert "remembered" not in other.stderr
    assert len(list((tmp_path / "cache" / "self-check").glob("*.json"))) == 2
    # a file whose environment is not exactly this one's counts for nothing
    for f in (tmp_path / "cache" / "self-check").glob("*.json"):
        d = json.loads(f.read_text())
        d["environment"]["python"] = "0.0"
        f.write_text(json.dumps(d))
    tampered = seqgrader(
        "grade", EXAMPLES / "alice.py", "--exercise", "masks", "--json", tmp_path / "d.json", "-v", env=cache
    )
    assert "remembered" not in tampered.stderr


def test_self_check_says_what_it_found(tmp_path, cache):
    ok = seqgrader("self-check", "--exercise", "masks", "--json", "-", env=cache)
    assert ok.returncode == 0, ok.stderr[-2000:]
    data = json.loads(ok.stdout)
    assert data["passed"] is True and data["score"] == data["max_score"] == 20
    assert data["environment"]["torch"]["torch"] and "gpus" in data["environment"]["torch"]
    assert sum(len(v) for k, v in data["devices"].items() if k != "problems") == 3  # the three device sentences ran
    bad = seqgrader("self-check", "--exercise", "masked_loss", "--simulate", "broken", env=cache)
    assert bad.returncode == 2 and "self-check FAILED" in bad.stderr and "masked_loss/" in bad.stderr


@pytest.mark.slow
def test_the_gpu_check_writes_a_baseline_and_finds_a_difference(tmp_path, cache):
    """bench/gpu_check.py on a machine without a GPU: it writes this machine's summary, agrees with
    it, and says where a summary differs (exit status 1)."""
    script = ROOT / "bench" / "gpu_check.py"
    base = tmp_path / "cpu.json"
    args = ["--cases", "mistake-causal_mask_excludes_diagonal", "--workers", "2"]
    env = dict(os.environ, **cache)

    def check(*extra):
        return subprocess.run(
            [sys.executable, script, *args, *extra], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )

    from autograder.sandbox import devices

    if not devices.visible():  # (on a machine with a GPU it grades: docs/benchmarks.md, "The same grades with a GPU")
        skipped = subprocess.run(
            [sys.executable, script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert skipped.returncode == 0 and "skipped: no GPU here" in skipped.stdout, skipped.stdout + skipped.stderr
    wrote = check("--write-baseline", base)
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr[-2000:]
    summary = json.loads(base.read_text())
    ((key, case),) = summary.items()
    assert key == "mistake-causal_mask_excludes_diagonal @ sequence-models" and case["score"] < case["max_score"]
    assert case["tests"]["masks/causal_mask/past_and_present_allowed"]["diagnosis"] == ["causal_mask_excludes_diagonal"]
    same = check("--baseline", base)
    assert same.returncode == 0 and "all the same" in same.stdout, same.stdout + same.stderr[-2000:]
    case["tests"]["masks/causal_mask/past_and_present_allowed"]["status"] = "passed"
    base.write_text(json.dumps(summary))
    other = check("--baseline", base)
    assert other.returncode == 1 and "hidden/baseline: " + key in other.stdout, other.stdout
