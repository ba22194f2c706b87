import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BOB = ROOT / "examples" / "submissions" / "bob.ipynb"


def run_grade(submission, tmp_path, *extra):
    """Run the real command line; return (completed process, parsed JSON report)."""
    out = Path(tmp_path) / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(submission), "--json", str(out), *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
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


def remote_student(path, source, exercise, limit_options=None):
    """(zygote, RemoteStudent) over the submission `source` written to `path`, as a judge makes
    them: `limit_options` None for a worker without limits (fast: it tests the channel), a dict for
    the real sandbox."""
    import torch

    from autograder.judge.remote import RemoteStudent, Zygote
    from autograder.load import read_sources

    torch.set_num_threads(1)  # as the runner does before forking
    path.write_text(source)
    sources, errors, root = read_sources(path)
    zygote = Zygote(sources, errors, root, [str(path)], limit_options)
    return zygote, RemoteStudent(zygote, exercise, 20, errors)


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


# ---------------------------------------------------------------- the built wheel in fresh virtualenvs

WHEEL_SOURCES = ("autograder", "solutions", "exercises", "course.yml", "pyproject.toml", "README.md", "LICENSE")
STUDENT_PACKAGES = ("torch", "numpy", "matplotlib", "pytest", "nbformat", "nbgrader", "ipykernel")


def _dist_name(d):
    return (d.metadata["Name"] or "").lower().replace("_", "-")


def _closure(names):
    """The distributions `names` (requirement strings: "nbgrader", "dask[distributed]") need, with
    their dependencies, as installed in this environment."""
    import importlib.metadata as md

    from packaging.requirements import Requirement

    dists = {_dist_name(d): d for d in md.distributions()}
    todo, seen = [Requirement(n) for n in names], {}
    while todo:
        req = todo.pop()
        name = req.name.lower().replace("_", "-")
        key = (name, tuple(sorted(req.extras)))
        if key in seen:
            continue
        seen[key] = dists[name]  # KeyError: a needed package missing from the test environment
        for dep in dists[name].requires or ():
            r = Requirement(dep)
            if r.marker is None or any(r.marker.evaluate({"extra": e}) for e in ("", *req.extras)):
                todo.append(r)
    return list({_dist_name(d): d for d in seen.values()}.values())


def clone_into_venv(venv, dists):
    """A real virtualenv at `venv` holding `dists` of this environment, their files hard-linked (what
    pip would unpack, in a second instead of minutes), console scripts written for its python."""
    import importlib.metadata as md  # noqa: F401

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(
        subprocess.run(
            [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    for d in dists:
        base = Path(d.locate_file(""))
        for f in d.files or ():
            rel = Path(os.path.normpath(site / f))
            if rel.parent == venv / "bin" or "share/jupyter/kernels/" in str(rel):  # scripts: below; a kernel.json
                continue  # names another python: below
            if f.parts[:2] == ("torch", "include"):  # 9,000 C++ headers, for building extensions only
                continue
            src = Path(os.path.normpath(base / f))
            if not src.is_file():
                continue
            rel.parent.mkdir(parents=True, exist_ok=True)
            if not rel.exists():
                os.link(src, rel)
        for ep in d.entry_points.select(group="console_scripts"):
            module, _, attr = ep.value.partition(":")
            head, _, rest = attr.partition(".")
            script = venv / "bin" / ep.name
            script.write_text(
                f"#!{venv}/bin/python\nimport sys\nfrom {module} import {head} as _entry\n"
                f"sys.exit(_entry{'.' + rest if rest else ''}())\n"
            )
            script.chmod(0o755)
    kernel = venv / "share" / "jupyter" / "kernels" / "python3"
    kernel.mkdir(parents=True, exist_ok=True)
    (kernel / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (ipykernel)",
                "language": "python",
            }
        )
    )
    return venv


@pytest.fixture(scope="session")
def installed():
    """The wheel built from this checkout, pip-installed (with its nbgrader extra) into a fresh virtualenv
    outside the checkout; and a student's virtualenv with only torch, numpy, matplotlib, pytest,
    nbformat, nbgrader and ipykernel (never this package).  Under /srv (or ~), not /tmp (see real_place)."""
    import importlib.metadata as md

    place = real_place("install")
    try:
        src = place / "src"
        for name in WHEEL_SOURCES:
            if (ROOT / name).is_dir():
                shutil.copytree(
                    ROOT / name, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
                )
            else:
                shutil.copy(ROOT / name, src / name)
        dist = place / "dist"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "-q",
                "-w",
                str(dist),
                str(src),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        (wheel,) = dist.glob("seqgrader-*.whl")
        needs = [r for r in md.distribution("seqgrader").requires if "extra" not in r or "nbgrader" in r]
        venv = clone_into_venv(place / "venv", _closure([*(r.split(";")[0] for r in needs), "pip"]))
        proc = subprocess.run(
            [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--no-index",
                "--no-cache-dir",
                "-q",
                f"{wheel}[nbgrader]",
            ],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        student = clone_into_venv(place / "student", _closure(STUDENT_PACKAGES))
        yield {"place": place, "wheel": wheel, "venv": venv, "bin": venv / "bin", "student": student / "bin"}
    finally:
        subprocess.run(["rm", "-rf", str(place)])  # ~70,000 links: faster than shutil.rmtree


@pytest.fixture(scope="session")
def bob(tmp_path_factory):
    """bob.ipynb graded by the real command line, with every report format (once per session:
    tests/test_reports.py and tests/test_report_views.py share it)."""
    tmp = tmp_path_factory.mktemp("bob")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(BOB),
            "--json",
            str(tmp / "bob.json"),
            "--html",
            str(tmp / "bob.html"),
            "--markdown",
            str(tmp / "bob.md"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return tmp, proc, json.loads((tmp / "bob.json").read_text(encoding="utf-8"))
