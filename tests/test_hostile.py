"""The catalogue of hostile submissions (tests/files/hostile/catalogue.yml), each graded by the
real command line: a report with a clear message for what it broke, full marks for the rest, no
process of it left alive, nothing written outside the worker's directory, no connection out.

All submissions are graded up front, three at a time, by one module fixture (the whole file takes
one to three minutes); each test then checks one report.  As a guard for machines where the
grader cannot confine its workers, every grade command runs with a 6 GiB address-space
limit and every bomb in the catalogue is bounded.
"""

import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from . import where
from .conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")]

HOSTILE = ROOT / "tests" / "files" / "hostile"
CATALOGUE = yaml.safe_load((HOSTILE / "catalogue.yml").read_text(encoding="utf-8"))
MASKS_TESTS = list(yaml.safe_load((ROOT / "course.yml").read_text())["exercises"]["masks"]["tests"])
ESCAPES = [
    "/tmp/pwned",
    "/var/tmp/pwned-by-hostile-submission",
    "/dev/shm/pwned-by-hostile-submission",
    "/tmp/seqgrader-hostile-heartbeat",
    str(ROOT / "PWNED-by-hostile-submission"),
]
PARALLEL = 3
SAFETY_AS = 6 << 30  # bytes of address space per process of a grade command
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # all but \t and \n


def _course(path):
    c = yaml.safe_load((ROOT / "course.yml").read_text())
    c["load_timeout"] = 3
    for ex in c["exercises"].values():
        ex["timeout"] = 40
        for t in ex["tests"].values():
            t["timeout"] = 3
    path.write_text(yaml.safe_dump(c))
    return path


def _cgroup_base():
    """A cgroup folder (v1 pids, else v2) where this test may create one cgroup per grade command:
    every process of that command, daemons included, stays in it or below it (only root can move a
    process out, and the workers are not root).  None where no cgroup can be made (then processes
    are found by an environment marker, which only catches what runs before the worker's limits)."""
    from autograder.sandbox import identity as I

    for _, path in sorted(I.cgroup_paths(0).items(), key=lambda kv: kv[0] != "pids"):
        parent = os.path.dirname(path)
        probe = os.path.join(parent, f"hostile-probe-{os.getpid()}")
        try:
            os.mkdir(probe)
            os.rmdir(probe)
            return parent
        except OSError:
            continue
    return None


CGROUP_BASE = _cgroup_base()


def _in_cgroup(path):
    """Live (not zombie) processes in the cgroup `path` and below."""
    out = []
    for top, _dirs, files in os.walk(path):
        if "cgroup.procs" not in files:
            continue
        try:
            with open(os.path.join(top, "cgroup.procs")) as f:
                pids = [int(p) for p in f.read().split()]
        except (OSError, ValueError):
            continue
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state not in ("Z", "X"):
                out.append(pid)
    return out


def _remove_cgroup(path):
    for top, _dirs, _files in sorted(os.walk(path), key=lambda t: -t[0].count("/")):
        try:
            os.rmdir(top)
        except OSError:
            pass


def _marked(marker):
    """Live (not zombie) processes whose environment carries `marker`."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{name}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in env and state not in ("Z", "X"):
            out.append(int(name))
    return out


def _git_status():
    try:
        return subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None


class Graded:
    def __init__(self, name, proc_rc, stdout, stderr, report, survivors, folder, seconds):
        self.name, self.rc, self.stdout, self.stderr = name, proc_rc, stdout, stderr
        self.report, self.survivors, self.folder, self.seconds = report, survivors, folder, seconds


def _grade(name, base, course, port):
    folder = base / name.replace(".", "_")
    folder.mkdir()
    code = (HOSTILE / name).read_bytes().replace(b"HOSTILE_PORT = 22\n", f"HOSTILE_PORT = {port}\n".encode())
    (folder / name).write_bytes(code)
    out = folder / "report.json"
    marker = f"seqgrader-hostile-{uuid.uuid4().hex}"
    env = dict(os.environ, HOSTILE_MARK=marker)
    where.share(folder, writable=True)
    cmd = where.command(
        ["grade", folder / name, "--exercise", "masks", "--json", out, "--course", course, "--max-examples", "10"]
    )
    cgroup = None
    if CGROUP_BASE:  # the command joins a cgroup of its own before it starts: all it starts stays below
        cgroup = os.path.join(CGROUP_BASE, f"hostile-{marker}")
        os.mkdir(cgroup)
        cmd = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup, *cmd]
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT if where.USER is None else base,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        resource.prlimit(proc.pid, resource.RLIMIT_AS, (SAFETY_AS, SAFETY_AS))
    except (OSError, ValueError):
        pass
    try:
        stdout, stderr = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
    seconds = time.monotonic() - start
    deadline = time.monotonic() + 3  # leftovers get a moment to be reaped by the grader's watchdog

    def alive():
        return sorted(set(_marked(marker) + (_in_cgroup(cgroup) if cgroup else [])))

    survivors = alive()
    while survivors and time.monotonic() < deadline:
        time.sleep(0.1)
        survivors = alive()
    for pid in survivors:  # recorded for the test; then cleaned up: they are ours
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if cgroup:
        time.sleep(0.05)
        _remove_cgroup(cgroup)
    report = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    return Graded(name, proc.returncode, stdout, stderr, report, survivors, folder, seconds)


@pytest.fixture(scope="module")
def graded(request, tmp_path_factory):
    """Grade every catalogue entry selected in this session; returns {name: Graded} and what
    escaped: {"git_before", "git_after", "escapes", "connections"}."""
    names = sorted(
        {
            item.callspec.params["name"]
            for item in request.session.items
            if item.module.__name__ == __name__ and hasattr(item, "callspec") and "name" in item.callspec.params
        }
    ) or sorted(CATALOGUE)
    for path in ESCAPES:
        if os.path.exists(path):
            os.remove(path)  # left over from a manual run: would be blamed on this one
    base = tmp_path_factory.mktemp("hostile")
    course = _course(base / "course.yml")
    where.share(base)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    srv.setblocking(False)
    git_before = _git_status()
    try:
        with ThreadPoolExecutor(PARALLEL) as pool:
            results = {g.name: g for g in pool.map(lambda n: _grade(n, base, course, srv.getsockname()[1]), names)}
        connections = 0
        while True:
            try:
                srv.accept()[0].close()
                connections += 1
            except BlockingIOError:
                break
    finally:
        srv.close()
    escaped = {
        "git_before": git_before,
        "git_after": _git_status(),
        "escapes": [p for p in ESCAPES if os.path.exists(p)],
        "connections": connections,
    }
    for path in escaped["escapes"]:
        os.remove(path)
    yield results, escaped


def _expected_failures(entry):
    fail = entry.get("fail") or []
    if fail == "all":
        return set(MASKS_TESTS)
    out = set()
    for f in fail:
        out |= {t for t in MASKS_TESTS if t == f or t.startswith(f + "/")}
    return out


def test_the_catalogue_lists_every_hostile_file():
    files = {p.name for p in HOSTILE.iterdir() if p.suffix in (".py", ".ipynb")}
    assert files == set(CATALOGUE)
    for name, entry in CATALOGUE.items():
        assert entry.get("does") and "fail" in entry, name
        assert entry.get("fail") in ("all", []) or _expected_failures(entry), f"{name}: unknown test in fail"


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_hostile_submission(name, graded, request):
    entry = CATALOGUE[name]
    if entry.get("known_gap"):
        request.node.add_marker(pytest.mark.xfail(reason=entry["known_gap"], strict=True))
    g = graded[0][name]
    if where.REFUSES:  # nothing holds here: no student code runs, nothing is graded
        assert g.rc == 2 and g.report is None, f"exit {g.rc}: graded where the sandbox is weak\n{g.stderr[-2000:]}"
        assert "Refusing to grade" in g.stderr and "--allow-weak-sandbox" in g.stderr, g.stderr[-2000:]
        return
    assert g.rc == 0 and g.report is not None, f"exit {g.rc}\n{g.stderr[-2000:]}"
    for text, stream in ((g.stdout, "stdout"), (g.stderr, "stderr"), (json.dumps(g.report), "report")):
        assert "Traceback" not in text, f"a traceback reached the {stream}"
    assert len(g.stdout) < 50_000, "the submission's output reached the report"
    assert len(json.dumps(g.report)) < 100_000, "the report grew with what the submission sent"
    for text, stream in ((g.stdout, "stdout"), (g.stderr, "stderr")):  # nothing a terminal acts on
        assert not CONTROL.search(text), f"a control character reached the {stream}: {CONTROL.search(text)!r}"
    tests = {t["name"].split("/", 1)[1]: t for t in g.report["exercises"][0]["tests"]}
    failed = {n for n, t in tests.items() if not t["passed"]}
    expected = _expected_failures(entry)
    assert failed == expected, f"lost points: {sorted(failed)}\nexpected:    {sorted(expected)}\n" + "\n".join(
        f"{n}: {tests[n]['feedback'][-300:]}" for n in sorted(failed ^ expected) if n in tests
    )
    for n in failed:
        fb = tests[n]["feedback"].lower()
        assert any(m.lower() in fb for m in entry.get("message", [])), f"{n}: unclear message:\n{tests[n]['feedback']}"
    wanted = entry.get("errors") or []
    for want in [wanted] if isinstance(wanted, str) else wanted:
        assert any(want in e for e in g.report["errors"]), f"{want!r} not in the load errors {g.report['errors']}"
    assert g.survivors == [], f"processes of the submission outlived the grader: {g.survivors}"
    assert not list(g.folder.glob("PWNED*")), "it wrote into its submission folder"


def test_nothing_escaped_the_workers(graded):
    _, escaped = graded
    assert escaped["escapes"] == [], f"written outside the worker's directory: {escaped['escapes']}"
    assert escaped["connections"] == 0, "a submission connected to a port on 127.0.0.1"
    if escaped["git_before"] is None:
        pytest.skip("not a git checkout")
    assert escaped["git_after"] == escaped["git_before"], "the checkout changed while grading"
