"""What a grading worker puts in force on itself right after fork, before any student code runs,
and what the judge believes of it.

``apply_worker_limits(workdir, ...)`` (in the worker), in order: a session of its own; as root a
cgroup, the watchdog and a uid of its own (identity.py); no network (a network namespace); its
view of the filesystem (view.py: a new root in a mount namespace, or a user namespace when not
root); its working directory; resource limits (address space, data, processes, file size, open
files, core dumps, CPU); no new privileges; a seccomp filter and Landlock (kernel.py: the view
where no mount namespace was allowed, and in every case no TCP, no signal or abstract socket
beyond the worker).  A step the machine refuses is recorded in the returned levels, never
raised; ``missing(levels)`` says which guarantee is then lost, and where one is, no student code
runs unless the instructor allowed a weak sandbox (--allow-weak-sandbox).

In the judge: ``verify(levels, pid)`` checks what /proc shows of a live worker against what it
said, ``describe(levels)`` is the report's line.

Nothing here needs the submission's bytes: they were read before the worker started.
"""

import ctypes
import errno
import os
import resource
import shutil
import signal
import sys
import tempfile
import time

from . import kernel
from .identity import (
    NOBODY,
    _gid_mapped,
    _join_cgroups,
    _start_watchdog,
    _user_label,
    _write,
    kill_worker_tree,
    proc_status,
    worker_uid,
)
from .kernel import _libc
from .kernel import check as _check
from .kernel import prctl as _prctl
from .kernel import unshare as _unshare
from .view import DEV_NODES, _gpu_nodes, _new_root, _openable, landlock_view

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38


# ---------------------------------------------------------------- capabilities


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_capabilities():
    """Clear every capability (used in a user namespace, where we cannot change uid)."""
    for cap in range(64):  # the bounding set too, so nothing comes back
        if _libc().prctl(24, cap, 0, 0, 0) != 0 and ctypes.get_errno() == errno.EINVAL:
            break
    hdr = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    _check(_libc().capset(ctypes.byref(hdr), data), "capset")


# ---------------------------------------------------------------- the entry point


def _vm_kib():
    vals = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmSize:", "VmData:")):
                k, v = line.split(":")
                vals[k] = int(v.split()[0])
    return vals.get("VmSize", 0), vals.get("VmData", 0)


def _setrlimit(levels, name, value):
    res = getattr(resource, name)
    try:
        _soft, hard = resource.getrlimit(res)
        if hard != resource.RLIM_INFINITY and (value == resource.RLIM_INFINITY or value > hard):
            value = hard  # cannot raise it: keep the stricter one in force
        resource.setrlimit(res, (value, value))
        levels["rlimits"][name[len("RLIMIT_") :].lower()] = None if value == resource.RLIM_INFINITY else value
    except (ValueError, OSError) as e:
        levels["problems"].append(f"{name}: {e}")


def _close_fds(keep):
    keep = sorted({fd for fd in keep if fd >= 3})
    start = 3
    for fd in keep + [None]:
        end = fd if fd is not None else resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        end = min(end, 1 << 20)
        if end > start:
            os.closerange(start, end)
        if fd is not None:
            start = fd + 1


# the only variables a worker keeps (HOME, TMPDIR and friends are then set to its workdir):
# nothing of the instructor's environment (PWD, OLDPWD, tokens, paths to the course) remains
KEEP_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "PYTHONHASHSEED",
    "MPLBACKEND",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    # which GPUs it sees: none, unless it is a device worker (devices.py)
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_MODULE_LOADING",
)


def _scrub_environment():
    """Empty os.environ but for KEEP_ENV; sys.argv too.  The process's initial argument and
    environment blocks (what /proc/self/cmdline and /proc/self/environ show, and what ctypes
    can read) are zeroed as well: they were the sandbox server's, already scrubbed, but a worker
    forked from a judge (the fallback) would otherwise still carry the grader's."""
    saved = {k: os.environ[k] for k in KEEP_ENV if k in os.environ}
    for key in list(os.environ):
        try:
            del os.environ[key]
        except (KeyError, OSError):
            pass
    sys.argv = ["seqgrader-worker"]
    try:
        sys.orig_argv = ["python"]
    except AttributeError:
        pass
    try:  # fields 48-51 of /proc/self/stat: arg_start arg_end env_start env_end
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        arg_start, arg_end, env_start, env_end = (int(v) for v in fields[45:49])
        for start, end in ((arg_start, arg_end), (env_start, env_end)):
            if 0 < start < end and end - start < (1 << 20):
                ctypes.memset(start, 0, end - start)
    except (OSError, ValueError, IndexError):
        pass
    os.environ.update(saved)
    return sorted(os.environ)


def apply_worker_limits(
    workdir,
    *,
    memory_mb=4096,
    max_procs=64,
    max_file_mb=64,
    cpu_seconds=None,
    max_open_files=256,
    tmpfs_mb=64,
    uid=None,
    keep_fds=None,
    expose=(),
    watchdog=True,
    remove_workdir=False,
    submission=None,
    hide=(),
    devices=False,
):
    """Confine the calling process (a freshly forked worker) before it runs student code.

    workdir        an empty directory created by the judge: becomes cwd, HOME and TMPDIR
    memory_mb      address space and private data the worker may add to what it maps now
    max_procs      processes + threads: RLIMIT_NPROC for the worker's uid (ignored by root)
                   and pids.max of its cgroup when there is one
    max_file_mb    largest file it may write (RLIMIT_FSIZE; writes beyond raise OSError)
    cpu_seconds    RLIMIT_CPU (SIGXCPU, then SIGKILL one second later); None: no limit
    max_open_files RLIMIT_NOFILE
    tmpfs_mb       size of each private tmpfs put over /tmp, /var/tmp, /dev/shm, /run/lock
    uid            when root: the uid to become (default worker_uid(pid): one per worker)
    keep_fds       if given, every other fd >= 3 is closed (pass the result pipe's write end)
    expose         more paths the worker may read, read-only at the same path (tests); the Python
                   installation and its site-packages are always in the view
    submission     the submission (a file or a folder): read-only at /submission in the new root
                   (a file as /submission/<name>)
    hide           more paths that must not be seen even where they fall inside the view (the
                   course folder, the output folder); the grader's own files always are
    devices        a device worker (devices.py): the GPUs' device nodes and /sys in its view, and no
                   RLIMIT_AS (CUDA reserves far more address space than it uses; RLIMIT_DATA
                   still caps what it allocates)
    watchdog       (root) leave a root process that, once the worker has exited, kills what it
                   left behind (daemons, a fork bomb's children) and removes its cgroups, even
                   if the judge died first and never called kill_worker_tree
    remove_workdir the watchdog also deletes workdir once the worker and its leftovers are gone

    Returns the levels in force (plain JSON data), never raises:
      user, uid        who the worker is now ("worker uid 2000012345", "nobody", "root", ...)
      session          "session" (setsid worked) or "pgid"
      cgroup           {"v2": dir, "pids": dir} it joined; cgroup_pids_max when pids.max is set
      watchdog         the root cleanup process is running
      netns, mountns, userns  the namespaces it is in
      view             "new root" (a mount namespace: nothing exists but Python, its submission
                       and its own directories), "landlock" (no mount namespace here: the same
                       rules, view_rules, enforced by Landlock) or None (neither: a weak sandbox)
      landlock         what Landlock enforces (kernel.landlock: abi, fs, tcp, signals,
                       abstract_unix), on top of the new root or as the view; None where refused
      seccomp          the seccomp filter of kernel.seccomp_deny is loaded (no socket, no ptrace,
                       no namespaces, no mount...)
      submission       where the submission is in the view (/submission or /submission/<name>)
      proc, private_tmp, hidden, exposed, readonly_fs   the details of the view
      environment      the variables the worker keeps (everything else is gone)
      tmpdir           workdir, now cwd / HOME / TMPDIR
      rlimits          {"core", "fsize", "nofile", "data", "as", "nproc", "cpu"} in bytes / counts
      memory_mb, no_new_privs, pdeathsig
      devices          True in a device worker (see `devices`)
      kill             how kill_worker_tree will reach its daemons: "cgroup", "uid" or "pgid"
      seconds          time spent here
      problems         one line per limit this machine refused
    """
    t0 = time.perf_counter()
    pid, judge = os.getpid(), os.getppid()
    root = os.geteuid() == 0
    levels = {
        "pid": pid,
        "user": _user_label(os.getuid()),
        "uid": os.getuid(),
        "session": None,
        "cgroup": {},
        "netns": False,
        "mountns": False,
        "userns": False,
        "private_tmp": [],
        "hidden": [],
        "exposed": [],
        "readonly_fs": False,
        "tmpdir": None,
        "rlimits": {},
        "no_new_privs": False,
        "pdeathsig": False,
        "watchdog": False,
        "kill": "pid",
        "seconds": None,
        "problems": [],
        "view": None,
        "submission": None,
        "environment": [],
        "grader_uid": os.getuid(),
        "landlock": None,
        "seccomp": False,
    }
    step_env = _scrub_environment()
    levels["environment"] = step_env

    def step(name, fn, *a):
        """Run one confinement step; True if it worked, else record why not."""
        try:
            fn(*a)
            return True
        except Exception as e:  # noqa: BLE001 - a limit this machine refuses is recorded, not raised
            levels["problems"].append(f"{name}: {getattr(e, 'strerror', None) or e}")
            return False

    # 1. a session (and process group) of its own: killpg(pid) reaches its ordinary children
    try:
        if os.getsid(0) != pid:  # the caller may have called setsid already
            os.setsid()
        levels["session"] = "session"
    except OSError:
        try:
            if os.getpgid(0) != pid:
                os.setpgid(0, 0)
            levels["session"] = "pgid"
        except OSError as e:
            levels["problems"].append(f"setsid/setpgid: {e.strerror}")

    workdir = os.path.abspath(workdir)
    target_uid = target_gid = None
    if root:
        target_uid = int(uid) if uid is not None else worker_uid(pid)
        target_gid = target_uid if target_uid != NOBODY and _gid_mapped(target_uid) else NOBODY
        # 2. cgroups: cgroup.kill reaches daemons, pids.max caps a fork bomb even for root
        step("cgroup", _join_cgroups, max_procs, levels)
        # a root watchdog that cleans up after the worker even if the judge is gone by then
        if watchdog:
            levels["watchdog"] = step(
                "watchdog",
                _start_watchdog,
                pid,
                dict(levels["cgroup"]),
                target_uid if target_uid not in (0, os.getuid()) else None,
                workdir if remove_workdir else None,
            )
        # 3. no network
        levels["netns"] = step("netns", _unshare, CLONE_NEWNET)
        # 4. private /tmp, read-only everything but workdir
        levels["mountns"] = step("mountns", _unshare, CLONE_NEWNS)
        if levels["mountns"]:
            step("new root", _new_root, workdir, tmpfs_mb, levels, submission, hide, expose, target_uid, True, devices)
    else:
        step("userns", _userns_sandbox, workdir, tmpfs_mb, levels, submission, hide, expose, devices)
    landlock_paths = None
    if levels["view"] is None:  # no mount namespace: the same view, by Landlock (step 9)
        try:
            landlock_paths = landlock_view(workdir, submission, hide, expose, devices)
        except OSError as e:
            levels["problems"].append(f"view rules: {e.strerror or e}")

    # 5. workdir: cwd, HOME, TMPDIR
    def setup_workdir():
        if target_uid is not None:
            os.chown(workdir, target_uid, target_gid)
        os.chmod(workdir, 0o700)
        os.chdir(workdir)
        for var in ("HOME", "TMPDIR", "TMP", "TEMP"):
            os.environ[var] = workdir
        os.environ["XDG_CACHE_HOME"] = os.path.join(workdir, ".cache")
        os.environ["XDG_CONFIG_HOME"] = os.path.join(workdir, ".config")
        os.environ["MPLCONFIGDIR"] = os.path.join(workdir, ".matplotlib")
        tempfile.tempdir = workdir
        levels["tmpdir"] = workdir

    step("workdir", setup_workdir)
    os.umask(0o077)

    # 6. resource limits
    try:
        size_kib, data_kib = _vm_kib()
    except (OSError, ValueError):
        size_kib = data_kib = 0
    mib = 1024 * 1024
    _setrlimit(levels, "RLIMIT_CORE", 0)
    _setrlimit(levels, "RLIMIT_FSIZE", int(max_file_mb) * mib)
    _setrlimit(levels, "RLIMIT_NOFILE", int(max_open_files))
    if memory_mb:
        _setrlimit(levels, "RLIMIT_DATA", data_kib * 1024 + int(memory_mb) * mib)
        if not devices:
            _setrlimit(levels, "RLIMIT_AS", size_kib * 1024 + int(memory_mb) * mib)
        levels["memory_mb"] = int(memory_mb)
    if devices:
        levels["devices"] = True
    if max_procs:
        _setrlimit(levels, "RLIMIT_NPROC", int(max_procs))
    if cpu_seconds:
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_seconds), int(cpu_seconds) + 1))
            levels["rlimits"]["cpu"] = int(cpu_seconds)
        except (ValueError, OSError) as e:
            levels["problems"].append(f"RLIMIT_CPU: {e}")
    if keep_fds is not None:
        step("close fds", _close_fds, keep_fds)

    # 7. an unprivileged user
    if target_uid is not None and target_uid != 0:

        def drop():
            os.setgroups([])
            os.setresgid(target_gid, target_gid, target_gid)
            os.setresuid(target_uid, target_uid, target_uid)

        step("setuid", drop)
    levels["uid"] = os.getuid()
    levels["user"] = _user_label(os.getuid())
    if levels["userns"]:
        levels["user"] = f"same uid as the grader ({os.getuid()}), no capabilities"

    # 8. no setuid binaries; die with the judge (must come after the uid change, which clears it)
    levels["no_new_privs"] = step("no_new_privs", _prctl, PR_SET_NO_NEW_PRIVS, 1)
    # 9. seccomp (no socket, ptrace, namespace, mount...), then Landlock: the view where no mount
    #    namespace gave one; in every case no TCP, no signal or abstract socket outside the worker
    try:
        levels["seccomp"] = kernel.seccomp_deny()["seccomp"]
    except OSError as e:
        levels["seccomp"] = False
        levels["problems"].append(f"seccomp: {e.strerror or e}")
    if levels["view"] == "new root":
        read, write = ["/"], [workdir] + levels["private_tmp"] + ["/dev/" + n for n in DEV_NODES]
        if devices:
            write += ["/dev/" + n for n in _gpu_nodes()]
    elif landlock_paths is not None:
        read, write = landlock_paths
    else:
        read = write = None
    if read is not None:
        read, write = [p for p in read if _openable(p)], [p for p in write if _openable(p)]
        try:
            levels["landlock"] = {k: v for k, v in kernel.landlock(read, write).items() if k != "skipped"}
            if levels["view"] is None:
                levels["view"] = "landlock"
                levels["submission"] = None
        except OSError as e:
            levels["landlock"] = None
            levels["problems"].append(f"landlock: {e.strerror or e}")
    levels["pdeathsig"] = step("pdeathsig", _prctl, PR_SET_PDEATHSIG, signal.SIGKILL)
    if levels["pdeathsig"] and os.getppid() != judge:
        os._exit(1)  # the judge died before the death signal was armed: nobody to report to
    try:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write raises OSError(EFBIG)
    except (ValueError, OSError):
        pass

    if levels["cgroup"].get("v2"):
        levels["kill"] = "cgroup"
    elif levels["uid"] not in (0,) and root:
        levels["kill"] = "uid"
    elif levels["cgroup"].get("pids"):
        levels["kill"] = "cgroup"
    elif levels["session"]:
        levels["kill"] = "pgid"
    levels["seconds"] = round(time.perf_counter() - t0, 4)
    return levels


def _userns_sandbox(workdir, tmpfs_mb, levels, submission=None, hide=(), expose=(), devices=False):
    """Not root: an unprivileged user namespace gives us network and mount namespaces; our
    own uid is mapped to itself and every capability is dropped afterwards."""
    uid, gid = os.getuid(), os.getgid()
    try:  # /proc/self/*_map belong to root in a process that changed uid (not dumpable)
        _prctl(PR_SET_DUMPABLE, 1)
    except OSError:
        pass
    _unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS)
    levels["userns"] = levels["netns"] = levels["mountns"] = True
    try:
        _write("/proc/self/setgroups", "deny")
    except OSError:
        pass
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    try:
        try:
            _new_root(workdir, tmpfs_mb, levels, submission, hide, expose, uid, mount_proc=False, devices=devices)
        except OSError as e:
            levels["problems"].append(f"new root: {e.strerror or e}")
            levels["view"] = None
    finally:
        _drop_capabilities()


# ---------------------------------------------------------------- the report line


def _mib(n):
    return f"{n / 1024:g} GiB" if n >= 1024 and n % 256 == 0 else f"{n} MiB"


def describe(levels):
    """One line for the report, e.g. "sandbox: unprivileged user, no network, ..."."""
    if not levels:
        return "sandbox: none (student code runs with the grader's rights)"
    parts = []
    if levels.get("uid") == 0:
        parts.append("runs as root")
    elif levels.get("userns"):
        parts.append("grader's uid without capabilities")
    else:
        parts.append(f"unprivileged user ({levels.get('user')})")
    net = [n for n, on in (("network namespace", levels.get("netns")), ("seccomp", levels.get("seccomp"))) if on]
    parts.append(f"no network ({', '.join(net)})" if net else "network allowed")
    ll = levels.get("landlock") or {}
    if levels.get("view") == "new root":
        parts.append("sees only Python and its own submission (new root, read-only but its workdir)")
    elif levels.get("view") == "landlock":
        parts.append("sees only Python and its own submission (Landlock, read-only but its workdir)")
    else:
        parts.append("can read the whole filesystem (no mount namespace, no Landlock)")
    if ll:
        parts.append(f"Landlock ABI {ll.get('abi')}" + (", signals scoped" if ll.get("signals") else ""))
    gaps = missing(levels)
    if gaps:
        parts.insert(0, "WEAK: not kept from " + "; ".join(gaps))
    rl = levels.get("rlimits", {})
    if levels.get("memory_mb") and "as" in rl:
        parts.append(f"memory +{_mib(levels['memory_mb'])}")
    procs = levels.get("cgroup_pids_max") or (rl.get("nproc") if levels.get("uid") else None)
    if procs:
        parts.append(f"<= {procs} processes/threads")
    if rl.get("fsize"):
        parts.append(f"files <= {_mib(rl['fsize'] // (1024 * 1024))}")
    if rl.get("cpu"):
        parts.append(f"{rl['cpu']} s CPU")
    parts.append(
        {
            "cgroup": "killed by cgroup",
            "uid": "killed by uid",
            "pgid": "killed by process group",
            "pid": "killed by pid",
        }.get(levels.get("kill"), "killed by pid")
    )
    line = "sandbox: " + ", ".join(parts)
    if levels.get("problems"):
        line += f" ({len(levels['problems'])} limit(s) not available: " + "; ".join(levels["problems"])[:200] + ")"
    return line


WEAK_ENV = "SEQGRADER_ALLOW_WEAK_SANDBOX"  # set by --allow-weak-sandbox


def weak_allowed():
    """True when the instructor accepted grading with a weak sandbox (--allow-weak-sandbox)."""
    return os.environ.get(WEAK_ENV, "") not in ("", "0")


def missing(levels):
    """What a worker with these levels is not kept from, one short phrase each ([] when every
    guarantee holds): the course and the grader's files, the network, the grader's processes."""
    if not isinstance(levels, dict) or not levels:
        return ["any sandbox (the worker reported no limits)"]
    out = []
    if levels.get("view") not in ("new root", "landlock"):
        out.append("a view of the filesystem without the course (no mount namespace and no Landlock)")
    if not (levels.get("netns") or levels.get("seccomp")):
        out.append("no network (no network namespace and no seccomp filter)")
    other_uid = levels.get("uid") not in (None, 0) and levels.get("uid") != levels.get("grader_uid")
    scoped = (levels.get("landlock") or {}).get("signals") is True
    if not (other_uid or scoped):
        out.append("no signal to the grader's processes (same uid, and Landlock cannot scope signals: ABI < 6)")
    if not (other_uid or levels.get("seccomp") or levels.get("view") == "landlock"):
        out.append("no ptrace of the grader's processes (same uid, no seccomp filter)")
    return out


def verify(levels, pid):
    """The judge's view of a worker's levels: what the worker sent (before any student code ran)
    with what /proc shows of it from outside overriding the claims that /proc can show: its uid,
    no_new_privs, a seccomp filter, its network namespace.  Called on a live worker."""
    levels = dict(levels) if isinstance(levels, dict) else {}
    levels["grader_uid"] = os.getuid()
    status = proc_status(pid)
    if status is None:  # gone, or /proc hides it (hidepid): the claims made before student code stand
        levels["verified"] = False
        return levels
    try:
        levels["uid"] = int(status["Uid"][1])  # effective
        levels["no_new_privs"] = status.get("NoNewPrivs", ["0"])[0] == "1"
        levels["seccomp"] = bool(levels.get("seccomp")) and status.get("Seccomp", ["0"])[0] == "2"
        mine, theirs = os.readlink("/proc/self/ns/net"), os.readlink(f"/proc/{int(pid)}/ns/net")
        levels["netns"] = mine != theirs
        levels["verified"] = True
    except (OSError, KeyError, ValueError, IndexError):
        levels["verified"] = False
    return levels


def _main():  # pragma: no cover - `python -m autograder.sandbox.limits`: what works here
    import json

    d = tempfile.mkdtemp(prefix="seqgrader-limits-")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        lv = apply_worker_limits(d, keep_fds=[w])
        os.write(w, json.dumps(lv).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.waitpid(pid, 0)
    kill_worker_tree(pid)
    shutil.rmtree(d, ignore_errors=True)
    lv = verify(json.loads(data), pid)
    print(json.dumps(lv, indent=1))
    print(describe(lv))
    print()
    for rule, how in mechanisms(lv):
        print(f"{rule:<36} {how}")
    gaps = missing(lv)
    print(
        "\n"
        + (
            "every guarantee holds here: grading goes ahead"
            if not gaps
            else "grading is refused here (exit status 2) unless --allow-weak-sandbox: not kept from " + "; ".join(gaps)
        )
    )


def mechanisms(levels):
    """[(rule, what enforces it here)] for a worker with these levels (`python -m ...limits`)."""
    ll = levels.get("landlock") or {}
    view = {
        "new root": "a new root (mount namespace, pivot_root)",
        "landlock": f"Landlock ABI {ll.get('abi')} (no mount namespace here)",
    }.get(levels.get("view"), "NOTHING")
    net = [
        n
        for n, on in (
            ("network namespace", levels.get("netns")),
            ("seccomp: no socket()", levels.get("seccomp")),
            ("Landlock: no TCP", ll.get("tcp")),
        )
        if on
    ]
    other_uid = levels.get("uid") not in (None, 0) and levels.get("uid") != levels.get("grader_uid")
    signals = [n for n, on in (("another uid", other_uid), ("Landlock signal scope", ll.get("signals"))) if on]
    trace = [
        n
        for n, on in (("another uid", other_uid), ("seccomp: no ptrace", levels.get("seccomp")), ("Landlock", bool(ll)))
        if on
    ]
    kill = {"cgroup": "cgroup.kill", "uid": "its uid", "pgid": "its process group"}.get(levels.get("kill"), "its pid")
    return [
        ("sees only Python and its submission", view),
        ("no network", " + ".join(net) or "NOTHING"),
        ("no signal to the grader", " + ".join(signals) or "NOTHING"),
        ("no ptrace or memory of the grader", " + ".join(trace) or "NOTHING"),
        ("what it leaves is killed", f"{kill}, and the zygote as child subreaper"),
        ("memory, processes, files, CPU", "rlimits" + (" + pids cgroup" if levels.get("cgroup_pids_max") else "")),
    ]


if __name__ == "__main__":
    _main()
