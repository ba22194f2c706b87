"""The limits a worker applies to itself (autograder/sandbox/limits.py), each checked by doing
the hostile thing in a forked worker after apply_worker_limits.

Layout of every check:  pytest ── M (sacrificial "judge": own session, child subreaper, reaps)
                                     └── W (worker: apply_worker_limits, then the action)
W reports one JSON dict through a pipe; the test then calls kill_worker_tree(W) as a judge
would.  Every bomb is bounded (attempts, sizes, lifetimes) so that a limit that is missing on
some machine costs time, not the machine.  A limit this machine cannot provide is skipped,
with the reason, never failed.
"""

import ctypes
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy  # noqa: F401  (the judge has numpy loaded; workers inherit it)
import pytest
import torch

# as the real runner does before it forks: an OpenMP pool that another test already started in
# this process does not survive fork (the worker would hang or die in its first matmul)
torch.set_num_threads(1)

from autograder.sandbox import identity as I  # noqa: E402
from autograder.sandbox import limits as L  # noqa: E402
from autograder.sandbox import view as V  # noqa: E402

from .conftest import ROOT, real_place  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or not os.path.isdir("/proc"), reason="Linux only")
MIB = 1024 * 1024


def _json_default(o):
    return repr(o)


class Run:
    """What happened in one worker: its report, its levels, its pid and how it ended."""

    def __init__(self):
        self.report, self.levels, self.pid, self.status, self.killed = {}, {}, None, None, None
        self.judge = self.workdir = None

    def need(self, *keys):
        """Skip when this machine does not give the level the check is about."""
        for key in keys:
            if key == "unprivileged" and self.levels.get("uid", 0) == 0:
                pytest.skip(f"cannot drop privileges here: {self.levels.get('problems')}")
            elif key != "unprivileged" and not self.levels.get(key):
                pytest.skip(f"level {key!r} not available here: {self.levels.get('problems')}")


def run_in_worker(action, *, timeout=8.0, before_kill=None, after_exit=None, judge_uid=None, **limit_kw):
    """Fork M (the judge), which forks W; W applies the limits then runs action(levels) -> dict.
    before_kill(run) is called while W and its leftovers may still run (before the judge's
    kill_worker_tree); after_exit(run) too, but once W has exited.  Returns a Run."""
    workdir = tempfile.mkdtemp(prefix="seqgrader-test-")
    res_r, res_w = os.pipe()
    st_r, st_w = os.pipe()
    ctl_r, ctl_w = os.pipe()
    m = os.fork()
    if m == 0:  # ---- M: a sacrificial judge
        try:
            os.close(res_r), os.close(st_r), os.close(ctl_w)
            os.setsid()
            ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
            if judge_uid is not None:
                os.chown(workdir, judge_uid, judge_uid)
                os.setgroups([])
                os.setresgid(judge_uid, judge_uid, judge_uid)
                os.setresuid(judge_uid, judge_uid, judge_uid)
            w = os.fork()
            if w == 0:  # ---- W: the worker
                try:
                    os.close(st_w), os.close(ctl_r)
                    levels = L.apply_worker_limits(workdir, keep_fds=[res_w], **limit_kw)
                    try:
                        out = action(levels)
                    except BaseException as e:  # noqa: BLE001
                        out = {"action_raised": f"{type(e).__name__}: {e}"}
                    data = json.dumps({"levels": levels, "report": out}, default=_json_default).encode() + b"\n"
                    while data:
                        data = data[os.write(res_w, data) :]
                finally:
                    os._exit(0)
            os.close(res_w)
            os.write(st_w, f"{w}\n".encode())
            worker_status = None
            while True:  # reap W and every orphan handed to us, until the test says stop
                ready, _, _ = select.select([ctl_r], [], [], 0.02)
                while True:
                    try:
                        pid, status = os.waitpid(-1, os.WNOHANG)
                    except ChildProcessError:
                        break
                    if pid == 0:
                        break
                    if pid == w:
                        worker_status = status
                        os.write(st_w, f"{status}\n".encode())
                if ready:
                    break
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                try:
                    if os.waitpid(-1, os.WNOHANG)[0] == 0:
                        time.sleep(0.01)
                except ChildProcessError:
                    break
            if worker_status is None:
                os.write(st_w, b"gone\n")
        finally:
            os._exit(0)
    # ---- the test
    os.close(res_w), os.close(st_w), os.close(ctl_r)
    run = Run()
    run.judge = m
    try:
        run.pid = int(_read_line(st_r, 5))
        data, deadline = b"", time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([res_r], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(res_r, 65536)
            data += chunk
            if not chunk or data.endswith(b"\n"):  # children of W may hold the pipe open
                break
        if data:
            doc = json.loads(data)
            run.levels, run.report = doc["levels"], doc["report"]
        line = _read_line(st_r, 2)  # W exits by itself right after reporting
        if after_exit is not None and line:
            run.status = int(line)
            after_exit(run)
            after_exit = None
        if before_kill is not None:
            before_kill(run)
        run.killed = I.kill_worker_tree(run.pid, judge_uid if run.levels.get("userns") else None)
        line = line or _read_line(st_r, 3)
        run.status = int(line) if line.strip().lstrip("-").isdigit() else None
    finally:
        os.close(ctl_w)
        os.waitpid(m, 0)
        for fd in (res_r, st_r):
            os.close(fd)
        shutil.rmtree(workdir, ignore_errors=True)
    run.workdir = workdir
    return run


def _read_line(fd, timeout):
    buf, deadline = b"", time.monotonic() + timeout
    while not buf.endswith(b"\n") and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        c = os.read(fd, 1)
        if not c:
            break
        buf += c
    return buf.decode().strip()


def _alive(pid):
    """True if pid is a live process (a zombie is not alive)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return line.split()[1] not in ("Z", "X")
    except OSError:
        return False
    return False


# ---------------------------------------------------------------- levels and report line


def test_levels_are_reported_and_applying_them_is_fast():
    run = run_in_worker(lambda lv: {"ok": True})
    lv = run.levels
    assert run.report == {"ok": True}
    for key in ("user", "uid", "session", "cgroup", "netns", "mountns", "tmpdir", "rlimits", "kill", "problems"):
        assert key in lv
    assert lv["session"] == "session"
    assert lv["rlimits"]["core"] == 0 and lv["rlimits"]["fsize"] == 64 * MIB
    assert lv["seconds"] < 0.5
    line = L.describe(lv)
    assert line.startswith("sandbox: ") and "\n" not in line
    assert run.killed["survivors"] == []


def test_a_worker_that_called_setsid_itself_keeps_its_session():
    def body(levels):
        return {"sid": os.getsid(0), "pid": os.getpid()}

    run = run_in_worker(body)
    assert run.report["sid"] == run.report["pid"]
    workdir = tempfile.mkdtemp(prefix="seqgrader-test-")
    pid = os.fork()
    if pid == 0:
        os.setsid()
        lv = L.apply_worker_limits(workdir, watchdog=False)
        os._exit(0 if lv["session"] == "session" and not any("setsid" in p for p in lv["problems"]) else 1)
    _, status = os.waitpid(pid, 0)
    I.kill_worker_tree(pid)
    shutil.rmtree(workdir, ignore_errors=True)
    assert os.WEXITSTATUS(status) == 0


def test_describe_says_what_is_in_force():
    full = {
        "uid": 2000000123,
        "user": "worker uid 2000000123",
        "netns": True,
        "seccomp": True,
        "private_tmp": ["/tmp"],
        "readonly_fs": True,
        "memory_mb": 4096,
        "cgroup_pids_max": 64,
        "view": "new root",
        "grader_uid": 0,
        "landlock": {"abi": 7, "signals": True},
        "rlimits": {"as": 1, "fsize": 64 * MIB, "nproc": 64},
        "kill": "cgroup",
        "problems": [],
    }
    line = L.describe(full)
    assert line == (
        "sandbox: unprivileged user (worker uid 2000000123), no network (network namespace, seccomp), "
        "sees only Python and its own submission (new root, read-only but its workdir), Landlock ABI 7, "
        "signals scoped, memory +4 GiB, <= 64 processes/threads, files <= 64 MiB, killed by cgroup"
    )
    assert L.missing(full) == []
    assert dict(L.mechanisms(full))["no signal to the grader"] == "another uid + Landlock signal scope"
    landlock = dict(full, view="landlock", netns=False)
    assert L.missing(landlock) == [] and "(Landlock, read-only but its workdir)" in L.describe(landlock)
    # the same uid as the grader and no scoped signals: its processes can be killed
    same_uid = dict(landlock, uid=1000, grader_uid=1000, landlock={"abi": 5, "signals": False})
    assert [m.split(" (")[0] for m in L.missing(same_uid)] == ["no signal to the grader's processes"]
    bare = {"uid": 0, "netns": False, "rlimits": {}, "kill": "pgid", "problems": ["netns: Operation not permitted"]}
    line = L.describe(bare)
    assert line.startswith("sandbox: WEAK: not kept from a view of the filesystem without the course")
    assert "runs as root" in line and "network allowed" in line and "not available" in line
    assert len(L.missing(bare)) == 4
    assert dict(L.mechanisms(bare))["sees only Python and its submission"] == "NOTHING"
    assert L.describe({}).startswith("sandbox: none")


def test_never_raises_even_with_a_missing_workdir():
    pid = os.fork()
    if pid == 0:
        try:
            lv = L.apply_worker_limits("/nonexistent/seqgrader/workdir")
            os._exit(0 if isinstance(lv, dict) and lv["problems"] else 3)
        except BaseException:  # noqa: BLE001
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    I.kill_worker_tree(pid)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_worker_uid_is_one_per_worker():
    assert I.worker_uid(123) != I.worker_uid(124) or I.worker_uid(123) == I.NOBODY
    assert I.worker_uid(123) not in (0, os.getuid())


# ---------------------------------------------------------------- memory


def _memory_bomb(levels):
    import numpy as np
    import torch

    out = {}
    for name, attempt in (
        ("torch.empty 10 GB", lambda: torch.empty(10 * 1024**3, dtype=torch.uint8)),
        ("numpy.ones 10 GB", lambda: np.ones(10 * 1024**3, dtype=np.uint8)),
        ("bytearray 10 GB", lambda: bytearray(10 * 1024**3)),
        ("shared mmap 10 GB", lambda: __import__("mmap").mmap(-1, 10 * 1024**3)),
    ):
        try:
            attempt()
            out[name] = "allocated"
        except (MemoryError, RuntimeError, OSError) as e:
            out[name] = type(e).__name__
    chunks = []
    try:
        for _ in range(40):  # at most 40 x 64 MB = 2.5 GB, touched page by page
            chunks.append(bytearray(64 * MIB))
        out["gradual"] = "not stopped"
    except MemoryError:
        out["gradual"] = f"stopped at {len(chunks) * 64} MB"
    out["gradual_mb"] = len(chunks) * 64
    del chunks
    out["still_works"] = float(torch.ones(3).sum())  # the worker survives its own bomb
    return out


def test_a_memory_bomb_fails_with_memory_error_instead_of_eating_the_machine():
    run = run_in_worker(_memory_bomb, memory_mb=512)
    assert "as" in run.levels["rlimits"] and "data" in run.levels["rlimits"], run.levels["problems"]
    r = run.report
    for name in ("torch.empty 10 GB", "numpy.ones 10 GB", "bytearray 10 GB", "shared mmap 10 GB"):
        assert r[name] in ("MemoryError", "RuntimeError", "OSError"), r
    assert r["gradual"].startswith("stopped") and r["gradual_mb"] <= 512, r
    assert r["still_works"] == 3.0


def test_torch_still_works_under_the_default_memory_limit():
    def work(levels):
        import torch

        x = torch.randn(64, 64, requires_grad=True)
        y = torch.softmax(x @ x.T, dim=-1).sum()
        y.backward()
        big = torch.zeros(256 * MIB // 4)  # 256 MB is fine
        return {"grad": float(x.grad.abs().sum()) >= 0, "big": big.numel()}

    run = run_in_worker(work)
    assert run.report == {"grad": True, "big": 256 * MIB // 4}


# ---------------------------------------------------------------- processes and threads


def _fork_bomb(levels):
    made, error = 0, None
    for _ in range(200):  # bounded: 200 attempts, each child sleeps 3 s then exits
        try:
            pid = os.fork()
        except OSError as e:
            error = type(e).__name__
            break
        if pid == 0:
            time.sleep(3)
            os._exit(0)
        made += 1
    return {"made": made, "error": error}


def test_a_fork_bomb_is_contained_as_an_unprivileged_user():
    run = run_in_worker(_fork_bomb, max_procs=20)
    run.need("unprivileged")
    assert run.levels["rlimits"]["nproc"] == 20
    assert run.report["made"] < 20 and run.report["error"] == "BlockingIOError", run.report
    assert run.killed["survivors"] == []


def test_a_fork_bomb_is_contained_even_as_root_by_the_pids_cgroup():
    run = run_in_worker(_fork_bomb, max_procs=20, uid=0)
    run.need("cgroup_pids_max")
    assert run.levels["uid"] == 0
    assert run.report["made"] < 20 and run.report["error"] == "BlockingIOError", run.report


def _thread_bomb(levels):
    import threading

    stop = threading.Event()
    made, error = 0, None
    for _ in range(300):  # bounded; each thread waits at most 3 s
        t = threading.Thread(target=stop.wait, args=(3,), daemon=True)
        try:
            t.start()
        except RuntimeError as e:
            error = str(e)
            break
        made += 1
    stop.set()
    return {"made": made, "error": error}


def test_a_thread_bomb_is_contained():
    run = run_in_worker(_thread_bomb, max_procs=20)
    run.need("unprivileged")
    assert run.report["made"] < 20 and "thread" in (run.report["error"] or ""), run.report


# ---------------------------------------------------------------- files


def test_file_size_is_capped_and_the_write_fails_cleanly():
    def big_file(levels):
        out = {}
        try:
            with open("big.bin", "wb") as f:
                for _ in range(4):
                    f.write(b"x" * MIB)
            out["write"] = "ok"
        except OSError as e:
            out["write"] = f"{type(e).__name__} errno {e.errno}"
        out["size"] = os.path.getsize("big.bin")
        return out

    run = run_in_worker(big_file, max_file_mb=1)
    assert run.report["write"].startswith("OSError") and "errno 27" in run.report["write"], run.report  # EFBIG
    assert run.report["size"] == MIB
    assert os.WIFEXITED(run.status), "SIGXFSZ must not kill the worker"


def test_cwd_home_and_tmpdir_are_the_private_workdir():
    def where(levels):
        fd, path = tempfile.mkstemp()
        os.close(fd)
        with open(os.path.expanduser("~/note.txt"), "w") as f:
            f.write("hi")
        st = os.stat(".")
        return {
            "cwd": os.getcwd(),
            "home": os.environ["HOME"],
            "tmpdir": os.environ["TMPDIR"],
            "gettempdir": tempfile.gettempdir(),
            "mkstemp": os.path.dirname(path),
            "mode": oct(st.st_mode & 0o777),
            "owner": st.st_uid,
            "uid": os.getuid(),
        }

    seen = {}
    run = run_in_worker(
        where, before_kill=lambda r: seen.update(note=os.path.exists(os.path.join(r.levels["tmpdir"], "note.txt")))
    )
    r, wd = run.report, run.workdir
    assert r["cwd"] == r["home"] == r["tmpdir"] == r["gettempdir"] == r["mkstemp"] == wd
    assert r["mode"] == "0o700" and r["owner"] == r["uid"]
    assert seen["note"], "the judge sees the workdir's files at the same path"


def test_cannot_write_to_the_checkout_or_to_tmp_outside_its_dir():
    marker = f"pwned-limits-{os.getpid()}"

    def escape(levels):
        import autograder

        repo = os.path.dirname(os.path.dirname(os.path.abspath(autograder.__file__)))
        out = {}
        for label, path, flags in (
            ("new file in checkout", os.path.join(repo, marker), os.O_WRONLY | os.O_CREAT | os.O_EXCL),
            ("course.yml for writing", os.path.join(repo, "course.yml"), os.O_WRONLY | os.O_APPEND),
            ("/tmp", f"/tmp/{marker}", os.O_WRONLY | os.O_CREAT | os.O_EXCL),
            ("/var/tmp", f"/var/tmp/{marker}", os.O_WRONLY | os.O_CREAT | os.O_EXCL),
            ("/dev/shm", f"/dev/shm/{marker}", os.O_WRONLY | os.O_CREAT | os.O_EXCL),
        ):
            try:
                os.close(os.open(path, flags, 0o644))  # nothing is written, even if it opens
                out[label] = "opened"
            except OSError as e:
                out[label] = type(e).__name__
        return out

    try:
        run = run_in_worker(escape)
        run.need("unprivileged")
        r = run.report
        assert r["new file in checkout"] != "opened" and r["course.yml for writing"] != "opened", r
        for d in ("/tmp", "/var/tmp", "/dev/shm"):
            assert not os.path.exists(f"{d}/{marker}"), f"{d} is shared with the judge: {r}"
    finally:
        for p in (ROOT / marker, f"/tmp/{marker}", f"/var/tmp/{marker}", f"/dev/shm/{marker}"):
            if os.path.exists(p):
                os.remove(p)


def test_a_folder_submission_can_import_its_sibling_when_exposed():
    base = tempfile.mkdtemp(prefix="seqgrader-sub-")  # 0700, root's: the worker's uid cannot enter
    sub = os.path.join(base, "alice")
    os.mkdir(sub)
    with open(os.path.join(sub, "helper_for_limits_test.py"), "w") as f:
        f.write("X = 42\n")

    def sibling(levels):
        import sys

        sys.path.insert(0, sub)
        try:
            import helper_for_limits_test

            return {"X": helper_for_limits_test.X}
        except ImportError as e:
            return {"X": f"ImportError: {e}"}

    try:
        hidden = run_in_worker(sibling)
        shown = run_in_worker(sibling, expose=[sub])
    finally:
        shutil.rmtree(base)
    shown.need("unprivileged", "mountns")
    assert shown.report == {"X": 42}, shown.levels["problems"]
    assert str(hidden.report["X"]).startswith("ImportError")  # read the sources first, or expose them


# ---------------------------------------------------------------- the allow-list view


def _secret_dir():
    """A folder where an instructor keeps things (not /tmp, which every worker replaces)."""
    for parent in ("/srv", os.path.expanduser("~")):
        try:
            os.makedirs(parent, exist_ok=True)
            return tempfile.mkdtemp(prefix="seqgrader-view-", dir=parent)
        except OSError:
            continue
    pytest.fail("no writable /srv or home directory")


def test_the_view_holds_only_python_and_the_submission():
    secret = _secret_dir()
    with open(os.path.join(secret, "answers.py"), "w") as f:
        f.write("ANSWER = 42\n")
    sub = os.path.join(secret, "alice.py")
    with open(sub, "w") as f:
        f.write("def padding_mask(lengths, max_len=None):\n    pass\n")
    os.environ["SEQGRADER_TEST_SECRET"] = "instructor-token"  # an instructor's variable

    def look(levels):
        import sys

        plan = V.view_plan()
        out = {
            "top": sorted(os.listdir("/")),
            "roots": plan["roots"],
            "env": sorted(os.environ),
            "argv": sys.argv,
            "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
            "me": os.getpid(),
        }
        for label, path in (
            ("checkout", str(ROOT / "course.yml")),
            ("solutions", str(ROOT / "solutions" / "masks.py")),
            ("secret", os.path.join(secret, "answers.py")),
            ("submission", "/submission/alice.py"),
            ("passwd", "/etc/passwd"),
            ("shadow", "/etc/shadow"),
        ):
            try:
                with open(path) as f:
                    out[label] = f.read()
            except OSError as e:
                out[label] = type(e).__name__
        try:
            with open("/submission/alice.py", "a") as f:
                f.write("# changed")
            out["write submission"] = "written"
        except OSError as e:
            out["write submission"] = type(e).__name__
        with open("/proc/self/stat") as f:  # the initial environment block, read with ctypes
            fields = f.read().rsplit(")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])
        out["environ block"] = ctypes.string_at(start, end - start).replace(b"\0", b"").decode("latin1")
        return out

    try:
        run = run_in_worker(look, submission=sub, hide=[secret])
    finally:
        os.environ.pop("SEQGRADER_TEST_SECRET")
        shutil.rmtree(secret, ignore_errors=True)
    run.need("unprivileged", "mountns")
    r, lv = run.report, run.levels
    assert lv["view"] == "new root", lv["problems"]
    assert "action_raised" not in r, r
    assert lv["submission"] == "/submission/alice.py"
    allowed = {
        "bin",
        "sbin",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "usr",
        "etc",
        "dev",
        "proc",
        "sys",
        "tmp",
        "var",
        "submission",
    } | {p.strip("/").split("/")[0] for p in r["roots"]}
    assert set(r["top"]) <= allowed, set(r["top"]) - allowed
    for label in ("checkout", "solutions", "secret", "shadow"):
        assert r[label] == "FileNotFoundError", (label, r[label])
    assert r["submission"].startswith("def padding_mask") and r["write submission"] in ("OSError", "PermissionError")
    assert set(r["passwd"].split()) <= {
        "root:x:0:0:root:/root:/usr/sbin/nologin",
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
        f"student:x:{lv['uid']}:{lv['uid']}:student:/nonexistent:/usr/sbin/nologin",
    }
    assert set(r["env"]) <= set(L.KEEP_ENV) | {
        "HOME",
        "TMPDIR",
        "TMP",
        "TEMP",
        "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME",
        "MPLCONFIGDIR",
    }, r["env"]
    assert r["environ block"] == "" and r["argv"] == ["seqgrader-worker"]  # zeroed: not even PATH is left there
    if lv.get("proc", "").startswith("hidepid"):
        assert r["pids"] == [r["me"]], r["pids"]  # the judge and everyone else's processes do not exist


def test_what_must_stay_hidden_inside_the_view_is_empty():
    inside = os.path.join(os.path.dirname(numpy.__file__), "doc")  # a folder in site-packages

    def look(levels):
        return {"listing": sorted(os.listdir(inside)) if os.path.isdir(inside) else None}

    run = run_in_worker(look, hide=[inside])
    run.need("unprivileged", "mountns")
    assert run.levels["view"] == "new root"
    if os.path.isdir(inside):
        assert os.listdir(inside), "nothing to hide: the test needs a non-empty folder"
        assert run.report["listing"] == [] and inside in run.levels["hidden"], run.report


def test_without_a_mount_namespace_landlock_gives_the_same_view(tmp_path):
    """What a container gets (no namespace, no mount: tests/container.py's filter): the view of
    view_rules, enforced by Landlock -- Python imports, the course next to it cannot be read by
    the worker, its own submission is read-only, its workdir writable -- and no socket, no signal
    to the grader.  The worker stays root (uid=0): nothing but Landlock and seccomp stops it."""
    place = real_place("landlock")  # where a course lives
    probe = tmp_path / "probe.py"
    probe.write_text(LANDLOCK_PROBE)
    try:
        (place / "course.yml").write_text("secret")
        sub = place / "submitted" / "alice"  # readable by the worker's uid, as a class folder is
        sub.mkdir(parents=True)
        (sub / "mine.py").write_text("x = 1\n")
        for d in (place, place / "submitted", sub):
            d.chmod(0o755)
        (sub / "mine.py").chmod(0o644)
        proc = subprocess.run(
            [
                sys.executable,
                str(ROOT / "tests" / "container.py"),
                "--",
                sys.executable,
                str(probe),
                str(place / "course.yml"),
                str(sub),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
    finally:
        shutil.rmtree(place, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    levels = got["levels"]
    assert levels["view"] == "landlock" and not levels["mountns"] and levels["seccomp"], levels
    assert got["course"] == "PermissionError" and got["own"] == "x = 1\n" and got["write_own"] == "PermissionError"
    assert got["workdir"] is True and got["imports"] is True, got
    assert got["socket"] == "PermissionError" and got["kill_parent"] == "PermissionError", got
    assert L.missing(levels) == []  # root, but Landlock scopes its signals and seccomp its sockets


def test_a_landlock_rule_never_opens_a_hidden_folder_through_a_link(tmp_path):
    """A virtualenv's lib64 -> lib, a link to "/" beside the grader: the rules allow what lies
    beside the hidden folder, and no rule resolves to the hidden folder or to one that holds it."""
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    (site / "autograder" / "properties").mkdir(parents=True)
    (site / "numpy").mkdir()
    (site / "six.py").write_text("")
    (venv / "lib64").symlink_to("lib")
    (site / "everything").symlink_to("/")
    hidden = str(site / "autograder")
    rules = V._allowed_beneath(str(venv), [hidden])
    assert str(site / "numpy") in rules and str(site / "six.py") in rules
    for r in rules:
        real = os.path.realpath(r)
        assert not (real == hidden or hidden.startswith(real + "/")), f"{r} opens {hidden}"
    assert V._allowed_beneath(str(venv), []) == [str(venv)]


LANDLOCK_PROBE = """
import json, os, signal, socket, sys, tempfile
from autograder.sandbox import identity as I, limits as L, view as V
course, sub = sys.argv[1], sys.argv[2]
workdir = tempfile.mkdtemp()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    lv = L.apply_worker_limits(workdir, submission=sub, keep_fds=[w], watchdog=False, uid=0)  # Landlock alone
    def attempt(fn):
        try:
            return fn()
        except Exception as e:
            return type(e).__name__
    out = {"levels": lv,
           "course": attempt(lambda: open(course).read()),
           "own": attempt(lambda: open(os.path.join(sub, "mine.py")).read()),
           "write_own": attempt(lambda: open(os.path.join(sub, "mine.py"), "a").write("y")),
           "workdir": attempt(lambda: open(os.path.join(workdir, "f"), "w").write("ok") == 2),
           "imports": attempt(lambda: __import__("yaml") is not None),
           "socket": attempt(lambda: socket.socket()),
           "kill_parent": attempt(lambda: os.kill(os.getppid(), 0))}
    out = {k: (v if isinstance(v, (str, bool, dict, int)) else str(v)) for k, v in out.items()}
    os.write(w, json.dumps(out).encode())
    os._exit(0)
os.close(w)
data = b""
while chunk := os.read(r, 65536):
    data += chunk
os.waitpid(pid, 0)
I.kill_worker_tree(pid)
print(data.decode())
"""


# ---------------------------------------------------------------- network


def test_no_network_even_to_a_port_the_judge_opened():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        pass  # control: the port is reachable from outside the worker

    def connect(levels):
        try:
            s = socket.socket()  # seccomp refuses this already
            s.settimeout(2)
            s.connect(("127.0.0.1", port))
            return {"connect": "connected"}
        except OSError as e:
            return {"connect": f"{type(e).__name__}: {e.strerror or e}"}

    try:
        run = run_in_worker(connect)
    finally:
        srv.close()
    run.need("netns")
    assert run.report["connect"] == "PermissionError: Operation not permitted", run.report


# ---------------------------------------------------------------- the judge is out of reach


def test_cannot_kill_or_read_the_judge():
    def attack(levels):
        judge = os.getppid()
        out = {}
        for label, fn in (
            ("kill judge", lambda: os.kill(judge, signal.SIGKILL)),
            ("killpg judge", lambda: os.killpg(os.getpgid(judge), signal.SIGKILL)),
            ("read judge mem", lambda: open(f"/proc/{judge}/mem", "rb").close()),
            ("read judge environ", lambda: open(f"/proc/{judge}/environ", "rb").read(1)),
        ):
            try:
                fn()
                out[label] = "done"
            except OSError as e:
                out[label] = type(e).__name__
        return out

    judge_alive = {}
    run = run_in_worker(attack, before_kill=lambda r: judge_alive.update(ok=_alive(r.judge)))
    run.need("unprivileged")
    # in the new root, /proc hides every process of another user: the judge's files do not exist
    unseen = "FileNotFoundError" if run.levels.get("proc", "").startswith("hidepid") else "PermissionError"
    assert run.report == {
        "kill judge": "PermissionError",
        "killpg judge": "PermissionError",
        "read judge mem": unseen,
        "read judge environ": unseen,
    }
    assert judge_alive["ok"] and run.status is not None  # M lived to report W's exit


def test_killpg_zero_kills_only_the_worker():
    def suicide(levels):
        os.killpg(0, signal.SIGKILL)
        return {"survived": True}

    run = run_in_worker(suicide)
    assert run.status is not None and os.WIFSIGNALED(run.status) and os.WTERMSIG(run.status) == signal.SIGKILL
    assert run.report == {}  # it died before reporting; M (the judge) lived to tell


# ---------------------------------------------------------------- daemons


def _daemon(levels):
    """A double-forked daemon in a session of its own, heartbeating into the workdir (<= 20 s)."""
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(w, f"{os.getpid()}\n".encode())
            end = time.monotonic() + 20
            while time.monotonic() < end:
                with open("heartbeat", "w") as f:
                    f.write(str(time.monotonic()))
                time.sleep(0.05)
            os._exit(0)
        os._exit(0)
    pid = int(os.read(r, 32).decode().strip())
    time.sleep(0.2)
    return {"daemon": pid, "daemon_pgid": os.getpgid(pid), "worker_pgid": os.getpgrp()}


def test_a_daemon_that_left_the_session_survives_killpg_but_not_kill_worker_tree():
    seen = {}

    def probe(run):
        d = run.report["daemon"]
        assert _alive(d)
        try:
            os.killpg(run.report["worker_pgid"], signal.SIGKILL)  # what the old runner does
        except ProcessLookupError:
            pass  # the worker's group is already empty: the daemon is elsewhere
        time.sleep(0.2)
        seen["after_killpg"] = _alive(d)

    run = run_in_worker(_daemon, before_kill=probe, watchdog=False)  # the judge's side alone
    d = run.report["daemon"]
    assert run.report["daemon_pgid"] != run.report["worker_pgid"]
    assert seen["after_killpg"], "measured: killpg(worker) does not reach a setsid daemon"
    time.sleep(0.1)
    assert not _alive(d), f"kill_worker_tree left the daemon alive: {run.killed}"
    assert run.killed["survivors"] == []
    assert any(m.startswith("cgroup") or m == "uid" for m in run.killed["methods"]), run.killed


def test_the_watchdog_kills_leftovers_even_if_the_judge_never_cleans_up():
    seen = {}

    def judge_died(run):  # W has exited and nobody called kill_worker_tree
        d = run.report["daemon"]
        deadline = time.monotonic() + 3
        while _alive(d) and time.monotonic() < deadline:
            time.sleep(0.05)
        seen["daemon_alive"] = _alive(d)
        # the watchdog removes the cgroups, then the workdir, after the kill: poll, a loaded
        # machine may take a while (CI once saw them a few ms after the daemon died)
        paths = list(I.cgroup_paths(run.pid).values())
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline and (
            any(os.path.isdir(p) for p in paths) or os.path.exists(run.levels["tmpdir"])
        ):
            time.sleep(0.05)
        seen["cgroups_left"] = [p for p in paths if os.path.isdir(p)]
        seen["procs_left"] = {p: I._cgroup_procs(p) for p in seen["cgroups_left"]}
        seen["workdir_left"] = os.path.exists(run.levels["tmpdir"])

    run = run_in_worker(_daemon, after_exit=judge_died, remove_workdir=True)
    if os.geteuid() != 0:
        pytest.skip("the watchdog needs root (it is a root process that outlives the worker)")
    assert run.levels.get("watchdog"), f"root, yet no watchdog: {run.levels.get('problems')}"
    assert seen["daemon_alive"] is False, "the watchdog did not kill the daemon"
    assert seen["cgroups_left"] == [], f"the watchdog did not remove the worker's cgroups: {seen}"
    assert seen["workdir_left"] is False, "remove_workdir=True: the watchdog did not remove it"


# ---------------------------------------------------------------- not root


def test_without_root_an_unprivileged_user_namespace_still_isolates():
    uid = I.WORKER_UID_BASE - 7  # a plain user for the judge M
    marker = f"pwned-userns-{os.getpid()}"
    place = real_place("userns")  # a folder like a checkout, where one lives (not under /tmp)
    os.chmod(place, 0o777)  # writable for anybody: only the worker's read-only view keeps it out
    target = str(place / marker)

    def inside(levels):
        out = {"uid": os.getuid()}
        for label, path in (("checkout", target), ("/tmp", f"/tmp/{marker}")):
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                out[label] = "opened"
            except OSError as e:
                out[label] = type(e).__name__
        try:
            with open("ok.txt", "w") as f:
                f.write("x")
            out["workdir"] = "ok"
        except OSError as e:
            out["workdir"] = type(e).__name__
        return out

    try:
        if os.geteuid() != 0:
            pytest.skip("needs root to play a non-root judge")
        run = run_in_worker(inside, judge_uid=uid)
        written = os.path.exists(target)
    finally:
        shutil.rmtree(place, ignore_errors=True)
        if os.path.exists(f"/tmp/{marker}"):
            os.remove(f"/tmp/{marker}")
    if not run.levels.get("userns"):
        pytest.skip(f"no unprivileged user namespaces here: {run.levels.get('problems')}")
    assert run.report["uid"] == uid and run.report["workdir"] == "ok"
    assert run.report["checkout"] != "opened" and not written
    assert run.levels["netns"] and run.levels["readonly_fs"], run.levels["problems"]
    assert run.report["/tmp"] == "opened"  # its own private /tmp ...
    assert not os.path.exists(f"/tmp/{marker}")  # ... not the judge's
    assert run.levels["user"].startswith("same uid")
