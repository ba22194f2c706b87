import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BOB = ROOT / "examples" / "submissions" / "bob.ipynb"


def run_grade(submission, tmp_path, *extra):
    """Run the real command line; return (completed process, parsed JSON report)."""
    out = Path(tmp_path) / "report.json"
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(submission), "--json", str(out), *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    report = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    return proc, report


def real_place(name):
    """A new folder where a real course or checkout lives: under /srv, or the home directory where
    /srv is not writable; never under /tmp, which every sandboxed worker replaces anyway (a test of
    what a worker can see must put the secrets where they would be).  The caller removes it."""
    import uuid

    for parent in (Path("/srv"), Path.home()):
        try:
            parent.mkdir(exist_ok=True)
            d = parent / f"seqgrader-{name}-{uuid.uuid4().hex[:8]}"
            d.mkdir()
            return d
        except OSError:
            continue
    pytest.fail("neither /srv nor the home directory is writable")


@pytest.fixture
def grade_cli(tmp_path):
    return lambda submission, *extra: run_grade(submission, tmp_path, *extra)


# ---------------------------------------------------------------- properties run in this process


class Namespace:
    """A dict of names posing as a loaded submission (for properties run in this process)."""

    load_errors = []

    def __init__(self, ns):
        self.ns = ns

    def get(self, name, prefer=None):
        return self.ns.get(name)


def reference_with(exercise, code=None, path=None):
    """solutions/<exercise>.py (or `path`) with `code` appended, run in this process (trusted code)."""
    ns = {"__name__": f"{exercise}_under_test"}
    src = Path(path or ROOT / "solutions" / f"{exercise}.py").read_text(encoding="utf-8")
    exec(compile(src + ("\n\n" + code if code else ""), f"<{exercise}>", "exec"), ns)  # noqa: S102 - trusted
    return ns


def failures_in_process(exercise, ns, only=None):
    """{property name: message} of the exercise's properties that fail on the namespace `ns`."""
    from autograder.errors import MissingFunction, PropertyFailure, StudentCrash
    from autograder.properties import load_all
    from autograder.properties._harness import Student

    student = Student(Namespace(ns), (), exercise)
    failed = {}
    for p in load_all().values():
        if p.exercise != exercise or (only and p.name not in only):
            continue
        try:
            p.run(student)
        except (PropertyFailure, StudentCrash, MissingFunction) as e:
            failed[p.name] = e.en
    return failed


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread, as in the judge: tiny tensors are much slower with more threads."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def bob(tmp_path_factory):
    """bob.ipynb graded by the real command line, with every report format (once per session:
    tests/test_reports.py and tests/test_report_views.py share it)."""
    tmp = tmp_path_factory.mktemp("bob")
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(BOB), "--json", str(tmp / "bob.json"),
                           "--html", str(tmp / "bob.html"), "--markdown", str(tmp / "bob.md")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return tmp, proc, json.loads((tmp / "bob.json").read_text(encoding="utf-8"))
