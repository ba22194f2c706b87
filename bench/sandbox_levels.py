"""What the worker sandbox (autograder/sandbox/limits.py) can do on this machine, measured.

    .venv/bin/python bench/sandbox_levels.py [--json]

Like the grader, this process imports torch and calls torch.set_num_threads(1), then forks
workers that apply the limits and try the hostile thing.  Each line says what was tried and what
happened; every bomb is bounded.  The last line is the report's one-line summary.
"""

import argparse
import ctypes
import json
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.sandbox import identity as I  # noqa: E402
from autograder.sandbox import limits as L  # noqa: E402

MIB = 1 << 20


def in_worker(action, *, as_uid=None, wait_exit=True, **kw):
    """Fork a judge-like middle process (its own session, reaps orphans), which forks the worker;
    the worker applies the limits, runs action(levels) and reports.  -> (levels, report, pid)."""
    workdir = tempfile.mkdtemp(prefix="seqgrader-bench-")
    r, w = os.pipe()
    pr, pw = os.pipe()
    mid = os.fork()
    if mid == 0:
        try:
            os.close(r), os.close(pr)
            os.setsid()
            ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # child subreaper: orphans come back to us
            if as_uid is not None:
                os.chown(workdir, as_uid, as_uid)
                os.setgroups([])
                os.setresgid(as_uid, as_uid, as_uid)
                os.setresuid(as_uid, as_uid, as_uid)
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(pw)
                    lv = L.apply_worker_limits(workdir, keep_fds=[w], **kw)
                    try:
                        rep = action(lv)
                    except BaseException as e:  # noqa: BLE001
                        rep = {"raised": f"{type(e).__name__}: {e}"}
                    os.write(w, (json.dumps({"levels": lv, "report": rep}, default=repr) + "\n").encode())
                finally:
                    os._exit(0)
            os.write(pw, f"{pid}\n".encode())
            end = time.monotonic() + 15
            while time.monotonic() < end:
                try:
                    if os.waitpid(-1, os.WNOHANG) == (0, 0):
                        time.sleep(0.02)
                except ChildProcessError:
                    break
        finally:
            os._exit(0)
    os.close(w), os.close(pw)
    pid = int(os.read(pr, 32).decode().strip() or 0)
    data, end = b"", time.monotonic() + 20
    while not data.endswith(b"\n") and time.monotonic() < end:
        if not select.select([r], [], [], max(0.0, end - time.monotonic()))[0]:
            break
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    doc = json.loads(data) if data.endswith(b"\n") else {"levels": {}, "report": {"raised": "no report"}}
    return doc["levels"], doc["report"], pid, (mid, workdir, r, pr)


def finish(handle, pid, uid=None):
    mid, workdir, r, pr = handle
    out = I.kill_worker_tree(pid, uid)
    os.kill(mid, signal.SIGKILL)
    os.waitpid(mid, 0)
    os.close(r), os.close(pr)
    shutil.rmtree(workdir, ignore_errors=True)
    return out


def alive(pid):
    return I._pid_alive(pid)


# ---------------------------------------------------------------- the probes


def probe_memory(lv):
    import torch

    out = {}
    try:
        torch.empty(10 << 30, dtype=torch.uint8)
        out["10 GB torch.empty"] = "allocated"
    except (RuntimeError, MemoryError) as e:
        out["10 GB torch.empty"] = type(e).__name__
    grown = []
    try:
        for _ in range(80):
            grown.append(torch.empty(100 * MIB, dtype=torch.uint8))
    except (RuntimeError, MemoryError):
        pass
    out["grown before refusal (MB)"] = len(grown) * 100
    return out


def probe_forks(lv):
    made, err = 0, None
    for _ in range(300):
        try:
            if os.fork() == 0:
                time.sleep(5)
                os._exit(0)
            made += 1
        except OSError as e:
            err = type(e).__name__
            break
    return {"forks": made, "stopped by": err}


def probe_threads(lv):
    import threading

    ev, made, err = threading.Event(), 0, None
    for _ in range(300):
        try:
            threading.Thread(target=ev.wait, args=(5,), daemon=True).start()
            made += 1
        except RuntimeError as e:
            err = str(e)
            break
    ev.set()
    return {"threads": made, "stopped by": err}


def probe_files(lv):
    import autograder

    repo = os.path.dirname(os.path.dirname(autograder.__file__))
    out = {}
    try:
        with open("big", "wb") as f:
            f.write(b"x" * (2 * MIB))
        out["2 MB file with a 1 MB cap"] = "written"
    except OSError as e:
        out["2 MB file with a 1 MB cap"] = f"OSError errno {e.errno}"
    for label, path in (
        ("new file in the checkout", os.path.join(repo, "bench-pwned")),
        ("/tmp/seqgrader-bench-pwned", "/tmp/seqgrader-bench-pwned"),
    ):
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            out[label] = "created"
        except OSError as e:
            out[label] = type(e).__name__
    out["cwd == HOME == TMPDIR == tempfile.gettempdir()"] = (
        os.getcwd() == os.environ["HOME"] == os.environ["TMPDIR"] == tempfile.gettempdir()
    )
    try:
        import mmap  # noqa: F401  (lazily imported stdlib, under a 0700 /root here)

        out["import a stdlib module not loaded yet"] = "ok"
    except ImportError as e:
        out["import a stdlib module not loaded yet"] = str(e)
    return out


def probe_network(port):
    def go(lv):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
            return {"connect to the judge's 127.0.0.1 port": "connected"}
        except OSError as e:
            return {"connect to the judge's 127.0.0.1 port": e.strerror or str(e)}

    return go


def probe_judge(lv):
    judge, out = os.getppid(), {}
    for label, fn in (
        ("kill(judge, SIGKILL)", lambda: os.kill(judge, signal.SIGKILL)),
        ("read /proc/judge/mem", lambda: open(f"/proc/{judge}/mem", "rb").close()),
    ):
        try:
            fn()
            out[label] = "done"
        except OSError as e:
            out[label] = type(e).__name__
    return out


def probe_daemon(lv):
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(w, f"{os.getpid()}\n".encode())
            time.sleep(20)
            os._exit(0)
        os._exit(0)
    return {"daemon": int(os.read(r, 32).decode())}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the levels dict too")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    torch.randn(8, 8) @ torch.randn(8, 8)
    vm = {k: v for k, v in (ln.split(":") for ln in open("/proc/self/status") if ln.startswith(("VmSize", "VmData")))}
    print(
        f"machine: uid {os.getuid()}, {os.cpu_count()} cores, kernel {os.uname().release}; "
        f"judge after import torch: VmSize {vm['VmSize'].strip()}, VmData {vm['VmData'].strip()}"
    )
    cg = I.cgroup_paths(os.getpid())
    print(f"cgroups: {', '.join(f'{k} under {os.path.dirname(p)}' for k, p in cg.items()) or 'none found'}")

    lv, rep, pid, h = in_worker(lambda lv: {})
    finish(h, pid)
    times = []
    for _ in range(5):
        lv2, _, pid2, h2 = in_worker(lambda lv: {})
        finish(h2, pid2)
        times.append(lv2.get("seconds") or 0)
    print(f"\napply_worker_limits: {sorted(times)[2] * 1000:.0f} ms (median of 5; watchdog fork included)")
    for key in (
        "user",
        "session",
        "cgroup",
        "netns",
        "mountns",
        "private_tmp",
        "hidden",
        "exposed",
        "readonly_fs",
        "rlimits",
        "no_new_privs",
        "pdeathsig",
        "watchdog",
        "kill",
        "problems",
    ):
        print(f"  {key:13} {lv.get(key)}")

    def show(title, rep):
        print(f"\n{title}")
        for k, v in rep.items():
            print(f"  {k}: {v}")

    lv_m, rep, pid, h = in_worker(probe_memory, memory_mb=1024)
    finish(h, pid)
    show("memory (memory_mb=1024):", rep)
    lv_f, rep, pid, h = in_worker(probe_forks, max_procs=32)
    finish(h, pid)
    show(f"fork bomb as {lv_f.get('user')} (max_procs=32):", rep)
    lv_r, rep, pid, h = in_worker(probe_forks, max_procs=32, uid=0)
    finish(h, pid)
    show(f"fork bomb as root (uid=0; pids cgroup: {lv_r.get('cgroup_pids_max')}):", rep)
    _, rep, pid, h = in_worker(probe_threads, max_procs=32)
    finish(h, pid)
    show("thread bomb (max_procs=32):", rep)
    _, rep, pid, h = in_worker(probe_files, max_file_mb=1)
    finish(h, pid)
    rep["... visible in the judge's /tmp"] = os.path.exists("/tmp/seqgrader-bench-pwned")
    for leftover in ("/tmp/seqgrader-bench-pwned", ROOT / "bench-pwned"):
        if os.path.exists(leftover):
            os.remove(leftover)
    show("files (max_file_mb=1):", rep)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    _, rep, pid, h = in_worker(probe_network(srv.getsockname()[1]))
    finish(h, pid)
    srv.close()
    show("network:", rep)
    _, rep, pid, h = in_worker(probe_judge)
    rep["judge alive afterwards"] = alive(h[0])
    finish(h, pid)
    show("the judge (the worker's parent):", rep)

    _, rep, pid, h = in_worker(probe_daemon, watchdog=False)
    d = rep["daemon"]
    time.sleep(0.3)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    time.sleep(0.2)
    after_killpg = alive(d)
    killed = finish(h, pid)
    time.sleep(0.1)
    show(
        "a double-forked daemon that called setsid:",
        {
            "alive after killpg(worker pgid)": after_killpg,
            "alive after kill_worker_tree": alive(d),
            "kill_worker_tree": killed,
        },
    )
    _, rep, pid, h = in_worker(probe_daemon)
    d = rep["daemon"]
    end = time.monotonic() + 3
    while alive(d) and time.monotonic() < end:
        time.sleep(0.05)
    show(
        "same daemon, the judge never cleans up (watchdog on):",
        {
            "alive 3 s after the worker exited": alive(d),
            "worker cgroups left": [p for p in I.cgroup_paths(pid).values() if os.path.isdir(p)],
        },
    )
    finish(h, pid)

    if os.geteuid() == 0:
        lv_u, rep, pid, h = in_worker(lambda lv: {"uid": os.getuid()}, as_uid=I.WORKER_UID_BASE - 11)
        finish(h, pid, uid=I.WORKER_UID_BASE - 11)
        show(
            "as a non-root judge (user namespace fallback):",
            {
                "userns": lv_u.get("userns"),
                "netns": lv_u.get("netns"),
                "readonly_fs": lv_u.get("readonly_fs"),
                "problems": lv_u.get("problems"),
            },
        )
    if args.json:
        print(json.dumps(lv, indent=1))
    print("\n" + L.describe(lv))


if __name__ == "__main__":
    main()
