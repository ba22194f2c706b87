"""Who a worker is and how whatever it starts is found and killed.

* identities: root drops each worker to a uid of its own (``worker_uid``);
* cgroups: where the machine lets root make them, a worker joins ``seqgrader-<pid>`` cgroups
  (``cgroup.kill`` reaches daemons that left its session, ``pids.max`` caps a fork bomb);
* the watchdog: a root process that kills what a worker left once it is gone;
* the judge's side: ``kill_worker_tree`` by cgroup, by uid, by process group.
"""

import os
import select
import shutil
import signal
import time

from .kernel import _libc  # noqa: F401

NOBODY = 65534
WORKER_UID_BASE = 2_000_000_000  # + pid (pid_max <= 4194304): far from real users and subuid ranges
CGROUP_PREFIX = "seqgrader-"


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


# ---------------------------------------------------------------- identities


def _uid_mapped(uid):
    """True if `uid` exists in this process's user namespace (setuid to it can work)."""
    try:
        with open("/proc/self/uid_map") as f:
            for line in f:
                inside, _outside, count = (int(v) for v in line.split())
                if inside <= uid < inside + count:
                    return True
        return False
    except (OSError, ValueError):
        return uid == NOBODY


def worker_uid(pid):
    """The uid the worker `pid` runs as when started as root: one of its own if this user
    namespace maps it, else nobody.  The judge calls it with the pid fork() returned, the worker
    with os.getpid(): both get the same answer."""
    uid = WORKER_UID_BASE + int(pid)
    return uid if _uid_mapped(uid) else NOBODY


def _user_label(uid):
    if uid == 0:
        return "root"
    if uid == NOBODY:
        return "nobody"
    if uid >= WORKER_UID_BASE:
        return f"worker uid {uid}"
    return f"uid {uid}"


# ---------------------------------------------------------------- cgroups


def _cgroup_mounts():
    """{"v2": mount point, "pids": v1 pids mount point} for the hierarchies mounted here."""
    found = {}
    try:
        with open("/proc/self/mountinfo", errors="surrogateescape") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fstype, _src, opts = (right.split() + ["", "", ""])[:3]
                point = left.split()[4]
                if fstype == "cgroup2" and "v2" not in found:
                    found["v2"] = point
                elif fstype == "cgroup" and "pids" in opts.split(",") and "pids" not in found:
                    found["pids"] = point
    except OSError:
        pass
    return found


def _own_cgroups():
    """{"v2": path of this process's cgroup in the v2 tree, "pids": ... in the v1 pids tree}."""
    own = {}
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _hid, controllers, path = line.rstrip("\n").split(":", 2)
                if controllers == "":
                    own["v2"] = path
                elif "pids" in controllers.split(","):
                    own["pids"] = path
    except OSError:
        pass
    return own


def cgroup_paths(pid):
    """Where the worker `pid` puts itself: {"v2": dir, "pids": dir} (the judge computes the
    same from its own cgroups, which the worker inherited at fork)."""
    mounts, own = _cgroup_mounts(), _own_cgroups()
    out = {}
    for kind in ("v2", "pids"):
        if kind in mounts and kind in own:
            out[kind] = os.path.join(mounts[kind], own[kind].lstrip("/"), f"{CGROUP_PREFIX}{pid}")
    return out


def _pid_alive(pid):
    """True if `pid` is a process that has not exited (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return False


def remove_stale_cgroups(limit=200):
    """Clean up after judges that died before calling kill_worker_tree: for every
    seqgrader-<pid> cgroup whose worker has exited, kill what is left in it (daemons) and
    remove it.  Called by every worker as it starts; the judge may call it when it finishes.
    Returns how many cgroups were removed."""
    removed = 0
    for kind, path in cgroup_paths(0).items():
        parent = os.path.dirname(path)
        try:
            names = [n for n in os.listdir(parent) if n.startswith(CGROUP_PREFIX)][:limit]
        except OSError:
            continue
        for name in names:
            try:
                pid = int(name[len(CGROUP_PREFIX) :])
            except ValueError:
                continue
            if _pid_alive(pid):
                continue  # a worker still running (or a reused pid): leave it
            full = os.path.join(parent, name)
            if _cgroup_procs(full):
                _kill_cgroup(kind, full, time.monotonic() + 0.5)
            try:
                os.rmdir(full)
                removed += 1
            except OSError:
                pass
    return removed


def _join_cgroups(max_procs, levels):
    pid = os.getpid()
    remove_stale_cgroups()
    for kind, path in cgroup_paths(pid).items():
        try:
            os.mkdir(path, 0o755)
        except FileExistsError:
            pass
        except OSError as e:
            levels["problems"].append(f"cgroup {kind}: {e.strerror}")
            continue
        try:
            if os.path.exists(os.path.join(path, "pids.max")) and max_procs:
                with open(os.path.join(path, "pids.max"), "w") as f:
                    f.write(str(int(max_procs)))
                levels["cgroup_pids_max"] = int(max_procs)
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(pid))
        except OSError as e:
            levels["problems"].append(f"cgroup {kind}: {e.strerror}")
            try:
                os.rmdir(path)
            except OSError:
                pass
            continue
        levels["cgroup"][kind] = path


def _gid_mapped(gid):
    try:
        with open("/proc/self/gid_map") as f:
            for line in f:
                inside, _outside, count = (int(v) for v in line.split())
                if inside <= gid < inside + count:
                    return True
        return False
    except (OSError, ValueError):
        return False


# ---------------------------------------------------------------- the watchdog


def _start_watchdog(worker, cgroups, uid, workdir=None):
    """Fork a root process that waits for the worker to exit, then kills what is left in its
    cgroups / of its uid.  A single fork (~6 ms with torch loaded; a double fork costs twice
    that plus a wait): the watchdog is the worker's child, in a session of its own, outside the
    worker's cgroups (it costs nothing of pids.max and survives the judge's cgroup.kill)."""
    try:
        pidfd = os.pidfd_open(worker)
    except (AttributeError, OSError):
        pidfd = None
    if os.fork() == 0:
        _watchdog(worker, pidfd, cgroups, uid, workdir)
    if pidfd is not None:
        os.close(pidfd)


def _watchdog(worker, pidfd, cgroups, uid, workdir):
    try:
        os.setsid()
        for path in cgroups.values():  # step out of the worker's cgroups
            try:
                _write(os.path.join(os.path.dirname(path), "cgroup.procs"), str(os.getpid()))
            except OSError:
                pass
        keep = pidfd if pidfd is not None else -1
        os.closerange(0, max(keep, 0))  # holds nothing of the judge's: its channel must see EOF
        os.closerange(keep + 1, 1 << 16)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_IGN)
        if pidfd is not None:
            select.select([pidfd], [], [])  # readable once the worker has exited
        else:
            while _pid_alive(worker):
                time.sleep(0.2)
        deadline = time.monotonic() + 5
        left = [_kill_cgroup(kind, path, deadline) for kind, path in cgroups.items()]
        if uid is not None and ("v2" not in cgroups or any(left)):
            _kill_uid(uid, deadline)
        if workdir:  # nothing of the student's runs any more; rmtree does not follow symlinks
            shutil.rmtree(workdir, ignore_errors=True)
    finally:
        os._exit(0)


# ---------------------------------------------------------------- the judge's side


def proc_status(pid):
    """/proc/<pid>/status as {field: [its words]}; None for a process that is gone or hidden."""
    out = {}
    try:
        with open(f"/proc/{int(pid)}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                out[key] = value.split()
    except (OSError, ValueError):
        return None
    return out


def _alive_of_uid(uid):
    """Pids of live (not zombie) processes whose real uid is `uid`."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = proc_status(name)
        try:
            real_uid = int(fields["Uid"][0])
        except (TypeError, KeyError, IndexError, ValueError):
            continue
        if real_uid == uid and not fields.get("State", [""])[0].startswith(("Z", "X")):
            out.append(int(name))
    return out


def _kill_uid(uid, deadline):
    """From a helper running as `uid`: kill(-1, SIGKILL) reaches every process of that uid and
    nothing else (no pid can be reused by someone else between looking and killing)."""
    while True:
        pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setresgid(NOBODY, NOBODY, NOBODY)
                os.setresuid(uid, uid, uid)
                for _ in range(50):
                    try:
                        os.kill(-1, signal.SIGKILL)
                    except ProcessLookupError:
                        break
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        alive = _alive_of_uid(uid)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.01)


def _cgroup_procs(path):
    try:
        with open(os.path.join(path, "cgroup.procs")) as f:
            return [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        return []


def _kill_cgroup(kind, path, deadline):
    if not os.path.isdir(path):
        return None
    if kind == "v2" and os.path.exists(os.path.join(path, "cgroup.kill")):
        try:
            _write(os.path.join(path, "cgroup.kill"), "1")
        except OSError:
            pass
    while True:
        procs = _cgroup_procs(path)
        if kind != "v2" or not os.path.exists(os.path.join(path, "cgroup.kill")):
            for p in procs:  # v1: pids.max keeps this loop short even against a fork bomb
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        if not procs:
            break
        if time.monotonic() > deadline:
            return procs
        time.sleep(0.005)
    while True:  # rmdir fails while zombies are still charged to it (until their parent reaps)
        try:
            os.rmdir(path)
            break
        except FileNotFoundError:
            break
        except OSError:
            if time.monotonic() > deadline:
                break
            time.sleep(0.01)
    return []


def kill_worker_tree(pid, uid=None, *, timeout=3.0):
    """Kill the worker `pid` and everything it started, daemons that left its session
    included; remove its cgroups.  Call it from the judge (root or the worker's own uid) after
    every worker, crashed or finished, before removing its workdir; waitpid(pid) as usual.

    uid: the uid the worker ran as (default worker_uid(pid), what apply_worker_limits chose).
    Returns {"methods": [...], "survivors": [pids still alive]}.
    """
    deadline = time.monotonic() + timeout
    methods, survivors = [], []
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except OSError:
            pass
    methods.append("pgid")
    for kind, path in cgroup_paths(pid).items():
        left = _kill_cgroup(kind, path, deadline)
        if left is not None:
            methods.append(f"cgroup-{kind}")
            survivors += left
    if uid is None:
        uid = worker_uid(pid)
    if "cgroup-v2" in methods and not survivors:
        pass  # cgroup.kill reached everything it started: nobody can leave a cgroup unprivileged
    elif os.geteuid() == 0 and uid not in (0, os.getuid()):
        methods.append("uid")
        survivors += _kill_uid(uid, deadline)
    return {"methods": methods, "survivors": sorted(set(survivors))}


def kill_tree(pid_or_uid, *, uid=False):
    """kill_tree(pid): the worker's tree; kill_tree(uid, uid=True): every process of a uid."""
    if uid:
        if int(pid_or_uid) in (0, os.getuid()) or os.geteuid() != 0:
            raise ValueError("kill_tree(uid=True) needs root and a uid other than root's and ours")
        return {"methods": ["uid"], "survivors": _kill_uid(int(pid_or_uid), time.monotonic() + 3)}
    return kill_worker_tree(int(pid_or_uid))
