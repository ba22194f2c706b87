"""Landlock and seccomp confinement (autograder/sandbox/kernel.py) on the real kernel.  Every check
runs in a forked child, since both are irreversible; the child reports one JSON value through a
pipe and the test asserts on it.  A check that needs a Landlock ABI this kernel lacks is skipped."""

import ctypes
import errno
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from autograder.sandbox import kernel

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

PY_READ = sorted(
    {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        *(os.path.realpath(p) for p in sys.path if p),
        "/usr/lib",
        "/usr/lib64",
        "/lib",
        "/lib64",
        "/usr/local/lib",
        "/usr/bin",
        "/bin",
        "/etc/ld.so.cache",
    }
)
ABI = kernel.landlock_abi()
needs_landlock = pytest.mark.skipif(ABI == 0, reason="Landlock is not available on this kernel")
CLONE_THREAD = 0x00010000
ADDR_NO_RANDOMIZE = 0x0040000


def in_child(fn, timeout=20):
    """fn() run in a forked child; its JSON-able value (an exception in it fails the test)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            try:
                out = {"value": fn()}
            except BaseException as e:  # noqa: BLE001 - whatever the child raised is the answer
                out = {"raised": f"{type(e).__name__}: {e}"}
            os.write(w, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    data, deadline = b"", time.monotonic() + timeout
    try:
        while select.select([r], [], [], max(deadline - time.monotonic(), 0))[0]:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(r)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    assert data, "the child gave no answer"
    out = json.loads(data)
    assert "raised" not in out, out["raised"]
    return out["value"]


def attempt(fn):
    """ "ok", or the errno name of the OSError fn() raised."""
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def read(path):
    with open(path) as f:
        return f.read()


def write(path, text="x", mode="w"):
    with open(path, mode) as f:
        f.write(text)


def fork_and_wait():
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def raw_syscall(name, *args):
    """ "ok" or the errno name of syscall `name` with integer or bytes arguments."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    nr = kernel.syscall_number(name)
    assert nr is not None, name
    cargs = [ctypes.c_char_p(a) if isinstance(a, bytes) or a is None else ctypes.c_long(a) for a in args]
    ret = libc.syscall(ctypes.c_long(nr), *cargs)
    return "ok" if ret >= 0 else errno.errorcode[ctypes.get_errno()]


@needs_landlock
def test_landlock_filesystem(tmp_path):
    a, b, c = (tmp_path / n for n in "abc")
    for d in (a, b, c):
        d.mkdir()
    write(a / "f", "A")
    write(c / "f", "C")
    write(b / "old", "old")
    write(b / "run.sh", "#!/bin/sh\nexit 0\n")
    os.chmod(b / "run.sh", 0o755)
    missing = str(tmp_path / "missing")

    def body():
        info = kernel.landlock(read=[*PY_READ, a, missing], write=[b, "/dev/null"])
        for name in [m for m in sys.modules if m == "json" or m.startswith("json.")]:
            del sys.modules[name]
        import colorsys
        import json as json_again

        (b / "sub").mkdir()
        return {
            "info": info,
            "read C": attempt(lambda: read(c / "f")),
            "list C": attempt(lambda: os.listdir(c)),
            "read A": read(a / "f"),
            "list A": sorted(os.listdir(a)),
            "append A": attempt(lambda: write(a / "f", mode="a")),
            "create in A": attempt(lambda: write(a / "new")),
            "create in B": attempt(lambda: write(b / "new", "B")),
            "truncate in B": attempt(lambda: write(b / "old", "")),
            "rename within B": attempt(lambda: os.rename(b / "new", b / "sub" / "moved")),
            "rename out of B": attempt(lambda: os.rename(b / "sub" / "moved", tmp_path / "moved")),
            "remove in B": attempt(lambda: os.unlink(b / "old")),
            "create outside": attempt(lambda: write(tmp_path / "outside")),
            "write /dev/null": attempt(lambda: write("/dev/null")),
            "exec from B": attempt(lambda: subprocess.run([str(b / "run.sh")], check=False)),
            "exec /bin/true": subprocess.run(["/bin/true"], check=False).returncode,
            "json": json_again.loads("[1]") == [1],
            "colorsys": colorsys.rgb_to_hsv(1, 0, 0)[2] == 1,
        }

    got = in_child(body)
    skipped = got["info"].pop("skipped")
    assert missing in skipped and not any(os.path.exists(p) for p in skipped)
    assert got["info"] == {"abi": ABI, "fs": True, "tcp": ABI >= 4, "signals": ABI >= 6, "abstract_unix": ABI >= 6}
    assert got["read C"] == got["list C"] == "EACCES"
    assert got["read A"] == "A" and got["list A"] == ["f"]
    assert got["append A"] == got["create in A"] == "EACCES"
    assert got["create in B"] == got["truncate in B"] == got["remove in B"] == "ok"
    assert got["rename within B"] == ("ok" if ABI >= 2 else "EXDEV")
    assert got["rename out of B"] in ("EACCES", "EXDEV")
    assert got["create outside"] == "EACCES"
    assert got["write /dev/null"] == "ok"
    assert got["exec from B"] == "EACCES" and got["exec /bin/true"] == 0
    assert got["json"] and got["colorsys"]
    assert not (tmp_path / "outside").exists() and not (tmp_path / "moved").exists()
    assert not (b / "old").exists() and (ABI < 2 or (b / "sub" / "moved").read_text() == "B")
    assert (a / "f").read_text() == "A" and not (a / "new").exists()


@needs_landlock
def test_landlock_refuses_a_process_with_threads(tmp_path):
    write(tmp_path / "f", "still readable")

    def body():
        stop = threading.Event()
        t = threading.Thread(target=stop.wait)
        t.start()
        try:
            refused = attempt(lambda: kernel.landlock(read=PY_READ))
        finally:
            stop.set()
            t.join()
        return {"refused": refused, "after": read(tmp_path / "f")}

    assert in_child(body) == {"refused": "EBUSY", "after": "still readable"}


@pytest.fixture
def tcp_listener():
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(0)
    yield srv
    srv.close()


@pytest.mark.skipif(ABI < 4, reason="Landlock ABI < 4 cannot restrict TCP")
def test_landlock_tcp(tcp_listener):
    port = tcp_listener.getsockname()[1]

    def connect():
        with socket.socket() as s:
            s.settimeout(5)
            s.connect(("127.0.0.1", port))

    def bind():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))

    def body(net):
        info = kernel.landlock(read=PY_READ, net=net, scope=False)
        return {"tcp": info["tcp"], "connect": attempt(connect), "bind": attempt(bind)}

    assert in_child(lambda: body(True)) == {"tcp": True, "connect": "EACCES", "bind": "EACCES"}
    with pytest.raises(BlockingIOError):
        tcp_listener.accept()
    assert in_child(lambda: body(False)) == {"tcp": False, "connect": "ok", "bind": "ok"}
    tcp_listener.accept()[0].close()


def test_seccomp_denies_sockets_but_not_socketpair(tcp_listener):
    port = tcp_listener.getsockname()[1]

    def body():
        info = kernel.seccomp_deny()
        a, b = socket.socketpair()
        a.sendall(b"ping")
        return {
            "denied": info["denied"],
            "inet": attempt(lambda: socket.create_connection(("127.0.0.1", port), 5)),
            "unix": attempt(lambda: socket.socket(socket.AF_UNIX)),
            "udp": attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)),
            "socketpair": b.recv(4).decode(),
        }

    got = in_child(body)
    assert "socket" in got["denied"] and "socketpair" not in got["denied"]
    assert got["inet"] == got["unix"] == got["udp"] == "EPERM"
    assert got["socketpair"] == "ping"
    with pytest.raises(BlockingIOError):
        tcp_listener.accept()


def test_seccomp_covers_threads_started_before():
    def body():
        go, box = threading.Event(), []
        t = threading.Thread(target=lambda: go.wait() and box.append(attempt(socket.socket)))
        t.start()
        kernel.seccomp_deny()
        go.set()
        t.join()
        return box

    assert in_child(body) == ["EPERM"]


@pytest.mark.skipif(ABI < 6, reason="Landlock ABI < 6 cannot scope signals")
def test_landlock_signal_scope():
    sleeper = subprocess.Popen(["sleep", "30"])
    try:

        def body(scope):
            def own_child():
                pid = os.fork()
                if pid == 0:
                    time.sleep(30)
                    os._exit(0)
                os.kill(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL

            info = kernel.landlock(read=PY_READ, scope=scope)
            return {
                "signals": info["signals"],
                "parent": attempt(lambda: os.kill(os.getppid(), 0)),
                "other": attempt(lambda: os.kill(sleeper.pid, signal.SIGTERM if scope else 0)),
                "own child": attempt(own_child),
            }

        assert in_child(lambda: body(True)) == {"signals": True, "parent": "EPERM", "other": "EPERM", "own child": "ok"}
        assert in_child(lambda: body(False)) == {"signals": False, "parent": "ok", "other": "ok", "own child": "ok"}
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.skipif(ABI < 6, reason="Landlock ABI < 6 cannot scope abstract unix sockets")
def test_landlock_abstract_unix_scope():
    name = f"\0seqgrader-kernel-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX) as srv:
        srv.bind(name)
        srv.listen()

        def connect(to):
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(to)

        def own():
            with socket.socket(socket.AF_UNIX) as mine:
                mine.bind(name + "-child")
                mine.listen()
                connect(name + "-child")

        def body(scope):
            info = kernel.landlock(read=PY_READ, scope=scope)
            return {
                "abstract_unix": info["abstract_unix"],
                "outside": attempt(lambda: connect(name)),
                "own": attempt(own),
            }

        assert in_child(lambda: body(True)) == {"abstract_unix": True, "outside": "EPERM", "own": "ok"}
        assert in_child(lambda: body(False)) == {"abstract_unix": False, "outside": "ok", "own": "ok"}


def test_seccomp_denied_syscalls():
    calls = {
        "socket": ("socket", socket.AF_INET, socket.SOCK_STREAM, 0),
        "ptrace bogus request": ("ptrace", 0x7FFFFFFF, 0, 0, 0),
        "mount missing target": ("mount", b"none", b"/nonexistent-seqgrader", b"tmpfs", 0, None),
        "setns bad fd": ("setns", -1, 0),
        "pidfd_getfd bad fd": ("pidfd_getfd", -1, -1, 0),
        "clone3 size 0": ("clone3", None, 0),
        "clone CLONE_THREAD alone": ("clone", CLONE_THREAD, 0, 0, 0, 0),
        "personality query": ("personality", 0xFFFFFFFF),
        "personality PER_LINUX": ("personality", 0),
        **{f"clone {flag}": ("clone", bit | CLONE_THREAD, 0, 0, 0, 0) for flag, bit in kernel.CLONE_NEW.items()},
    }
    only_filtered = {
        "unshare 0": ("unshare", 0),
        "unshare CLONE_NEWUSER": ("unshare", kernel.CLONE_NEW["CLONE_NEWUSER"]),
        "personality ADDR_NO_RANDOMIZE": ("personality", ADDR_NO_RANDOMIZE),
        "personality PER_LINUX32": ("personality", 0x0008),
        "personality 0x7fffffff": ("personality", 0x7FFFFFFF),
        "personality 0x80000000": ("personality", 0x80000000),
        "personality 0x100040000": ("personality", 0x100040000),
        "bpf": ("bpf", 0xFFFF, None, 0),
        "keyctl": ("keyctl", -1, 0, 0, 0, 0),
        "io_uring_setup": ("io_uring_setup", 0, None),
        "perf_event_open": ("perf_event_open", None, 0, -1, -1, 0),
        "chroot": ("chroot", b"/nonexistent-seqgrader"),
    }

    def body(filtered):
        denied = kernel.seccomp_deny()["denied"] if filtered else []
        out = {k: raw_syscall(*v) for k, v in calls.items()}
        if filtered:
            out.update({k: raw_syscall(*v) for k, v in only_filtered.items()})
            out["os.fork"] = fork_and_wait()
            out["subprocess /bin/true"] = subprocess.run(["/bin/true"], check=False).returncode
            box = []
            t = threading.Thread(target=box.append, args=(1,))
            t.start()
            t.join()
            out["thread"] = box
            a, b = socket.socketpair()
            a.sendall(b"x")
            out["socketpair"] = b.recv(1).decode()
            out["denied"] = denied
        return out

    control = in_child(lambda: body(False))
    got = in_child(lambda: body(True))
    for k in ("socket", "personality query", "personality PER_LINUX"):
        assert control[k] == "ok", k
    for k in (
        "ptrace bogus request",
        "mount missing target",
        "setns bad fd",
        "pidfd_getfd bad fd",
        "clone3 size 0",
        "clone CLONE_THREAD alone",
        *(f"clone {flag}" for flag in kernel.CLONE_NEW),
    ):
        assert control[k] not in ("ok", "EPERM", "ENOSYS"), (k, control[k])
    expect_eperm = [
        k
        for k in (*calls, *only_filtered)
        if k not in ("clone3 size 0", "clone CLONE_THREAD alone", "personality query", "personality PER_LINUX")
    ]
    assert {k: got[k] for k in expect_eperm} == {k: "EPERM" for k in expect_eperm}
    assert got["clone3 size 0"] == "ENOSYS"
    assert got["clone CLONE_THREAD alone"] == control["clone CLONE_THREAD alone"]
    assert got["personality query"] == got["personality PER_LINUX"] == "ok"
    assert got["os.fork"] == 7 and got["subprocess /bin/true"] == 0
    assert got["thread"] == [1] and got["socketpair"] == "x"
    assert set(kernel.DENIED) | {"clone", "clone3", "personality"} == set(got["denied"])


@needs_landlock
def test_numpy_under_landlock_and_seccomp(tmp_path):
    code = (
        "import numpy, socket\n"
        "print(int(numpy.arange(10).sum()))\n"
        "try:\n    socket.socket()\nexcept PermissionError:\n    print('no socket')\n"
        "try:\n    open('/etc/hostname')\nexcept PermissionError:\n    print('no /etc')\n"
    )

    def body():
        kernel.seccomp_deny()
        kernel.landlock(read=PY_READ, write=[tmp_path])
        import numpy

        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
        return {
            "in process": int(numpy.ones(3).sum()),
            "rc": proc.returncode,
            "out": proc.stdout.split(),
            "err": proc.stderr[-2000:],
        }

    got = in_child(body, timeout=90)
    assert got["in process"] == 3
    assert (got["rc"], got["out"]) == (0, ["45", "no", "socket", "no", "/etc"]), got["err"]


@pytest.mark.parametrize("refusal", [errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM, errno.EINVAL])
def test_landlock_unavailable(refusal):
    def body():
        kernel.load_filter([("landlock_create_ruleset", refusal, ())])
        try:
            abi = kernel.landlock_abi()
        except OSError as e:
            abi = errno.errorcode[e.errno]
        return {"abi": abi, "landlock": attempt(kernel.landlock), "holds": kernel.what_holds()}

    got = in_child(body)
    name = errno.errorcode[refusal]
    assert got["abi"] == (name if refusal == errno.EINVAL else 0)
    assert got["landlock"] == name
    holds = got["holds"]
    assert (holds["landlock_abi"], holds["landlock"], holds["seccomp"]) == (0, False, True)
    assert os.strerror(refusal) in holds["errors"]["landlock"]


def test_what_holds_leaves_the_caller_free(tmp_path):
    holds = kernel.what_holds()
    assert holds["landlock_abi"] == ABI
    assert holds["landlock"] is (ABI > 0) and holds["seccomp"] is True, holds["errors"]
    assert holds["tcp"] is (ABI >= 4) and holds["signals"] is holds["abstract_unix"] is (ABI >= 6)
    socket.socket().close()
    write(tmp_path / "f")
    assert read(tmp_path / "f") == "x"
