"""Limits a grading worker applies to itself right after fork, before any student code runs.

The judge (a trusted process that has imported torch and called ``torch.set_num_threads(1)``)
forks a worker per exercise.  The worker reads the submission's bytes, then calls
``apply_worker_limits(workdir)``, then runs the student's code.  Everything here falls back
cleanly: a step that this machine does not permit is skipped and recorded, never raised.

Levels, strongest first (what is in force is returned as a dict; ``describe`` makes a line):

* own session (``setsid``): the judge can ``killpg(pid)`` the worker and its ordinary children;
* cgroup (root, cgroup v2 and/or v1 ``pids`` writable): the worker moves itself into
  ``<its cgroup>/seqgrader-<pid>``; ``cgroup.kill`` kills every process in it, daemons that
  called ``setsid`` included, and ``pids.max`` caps processes + threads even for root;
* no network: a new, empty network namespace (``unshare(CLONE_NEWNET)``: only a downed ``lo``);
* private filesystem view: a new mount namespace with fresh small tmpfs on the world-writable
  directories (/tmp, /var/tmp, /dev/shm, /run/lock), ``workdir`` bind-mounted back in place,
  every other mount read-only (the repository checkout included);
* unprivileged user: root drops to a uid of its own (``worker_uid(pid)``: one per worker, so
  that RLIMIT_NPROC is a per-worker budget and ``kill_worker_tree`` cannot hit another worker;
  ``nobody`` (65534) if the user namespace does not map it), with no supplementary groups,
  ``PR_SET_NO_NEW_PRIVS`` (no setuid binaries) and ``PR_SET_PDEATHSIG`` (dies with the judge).
  As nobody-like uid the worker cannot signal, ptrace or read /proc/<pid>/mem of the judge;
* resource limits: address space and data (on top of what the worker already maps: torch maps
  ~0.7 GB of address space, ~0.25 GB of it private data), processes (per uid; root ignores
  it), file size (SIGXFSZ ignored, so an oversized write raises OSError(EFBIG)), core dumps 0,
  open files, optionally CPU seconds;
* ``workdir`` becomes cwd, HOME, TMPDIR/TMP/TEMP and ``tempfile.tempdir`` (mode 0700, owned by
  the worker's uid).

When not root, the worker tries an unprivileged user namespace instead (network and mount
namespaces inside it, its capabilities dropped afterwards); the uid stays the judge's.

Nothing here needs the submission's path: read the student's files before calling this (an
unprivileged worker cannot read a 0700 directory of root's).
"""
import ctypes
import errno
import os
import re
import resource
import select
import shutil
import signal
import stat
import sys
import tempfile
import time

from . import kernel

NOBODY = 65534
WORKER_UID_BASE = 2_000_000_000  # + pid (pid_max <= 4194304): far from real users and subuid ranges
CGROUP_PREFIX = "seqgrader-"

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
ST_RDONLY, ST_NOSUID, ST_NODEV, ST_NOEXEC = 1, 2, 4, 8
ST_NOATIME, ST_NODIRATIME, ST_RELATIME = 1024, 2048, 4096
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38

WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock")
NO_REMOUNT = ("/proc", "/sys", "/dev")  # kernel filesystems: left as they are

_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _check(ret, what):
    if ret != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def _unshare(flags):
    _check(_libc().unshare(ctypes.c_int(flags)), "unshare")


def _mount(source, target, fstype, flags, data=None):
    enc = (lambda s: os.fsencode(s) if isinstance(s, str) else s)
    _check(_libc().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {target}")


def _prctl(option, arg):
    _check(_libc().prctl(ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(0),
                         ctypes.c_ulong(0), ctypes.c_ulong(0)), f"prctl {option}")


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
                pid = int(name[len(CGROUP_PREFIX):])
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


# ---------------------------------------------------------------- filesystem view

def _mount_points():
    pts = []
    with open("/proc/self/mountinfo", errors="surrogateescape") as f:
        for line in f:
            p = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])  # \040: space
            pts.append(p)
    return pts


def _ms_flags(path):
    """The per-mount flags of `path` to keep when remounting (locked ones must be repeated)."""
    f = os.statvfs(path).f_flag
    out = 0
    for st, ms in ((ST_NOSUID, MS_NOSUID), (ST_NODEV, MS_NODEV), (ST_NOEXEC, MS_NOEXEC),
                   (ST_NOATIME, MS_NOATIME), (ST_NODIRATIME, MS_NODIRATIME), (ST_RELATIME, MS_RELATIME)):
        if f & st:
            out |= ms
    return out


def _under(path, roots):
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def python_paths():
    """What the worker must still be able to read after dropping privileges: the Python
    installation and every existing sys.path entry (modules it has not imported yet)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths.update(p for p in sys.path if p)
    return sorted(os.path.realpath(p) for p in paths if os.path.exists(p))


def _blocked_ancestor(path):
    """The topmost directory on the way to `path` that others (the worker's uid) cannot enter."""
    parts = path.strip("/").split("/")
    for i in range(1, len(parts) + 1):
        d = "/" + "/".join(parts[:i])
        try:
            st = os.stat(d)
        except OSError:
            return None
        if stat.S_ISDIR(st.st_mode) and not st.st_mode & 0o001:
            return d if d != path else None  # the target itself is not ours to open up
    return None


def _same_file(path, fd):
    try:
        a, b = os.stat(path), os.fstat(fd)
        return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
    except OSError:
        return False


def _bind_back(fd, path):
    """Bind the file or directory open as `fd` onto `path` (creating the mount point)."""
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        os.makedirs(path, mode=0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        if not os.path.exists(path):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))
    _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)


# ---------------------------------------------------------------- the allow-list view (a new root)

# top-level entries of / that the dynamic linker and the interpreter need: replicated as they
# are (merged-/usr systems have symlinks here) or bound read-only
TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# the few files of /etc that the C library, Python and matplotlib read; passwd, group and hosts
# are written anew (no real user names)
ETC_KEEP = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "fonts", "alternatives",
            "mime.types", "host.conf", "gai.conf")
DEV_NODES = ("null", "zero", "full", "random", "urandom")
SUBMISSION = "/submission"  # where a worker sees its own submission (read-only)
MNT_DETACH = 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "ppc64": 203, "s390x": 217,
                  "i686": 217, "i386": 217, "armv7l": 218}
_PLAN = None


def _grader_files(site_dirs=()):
    """The grader's own files: its package directory; when it runs from a source tree, the tree
    (course.yml, solutions/, exercises/, tests/...); and any other installed copy of the package
    in `site_dirs` (an older install in the base Python's site-packages holds the same answers)."""
    package = os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = [package]
    tree = os.path.dirname(package)
    if any(os.path.exists(os.path.join(tree, n)) for n in ("course.yml", "solutions", "pyproject.toml", ".git")):
        out.append(tree)
    name = os.path.basename(package)
    for d in site_dirs:
        copy = os.path.join(d, name)
        if os.path.isdir(os.path.join(copy, "sandbox")) or os.path.isdir(os.path.join(copy, "properties")):
            out.append(os.path.realpath(copy))
    return out


def _home_like():
    homes = {"/root", "/home", os.path.realpath(os.path.expanduser("~"))}
    return {h for h in homes if h and h != "/"}


def _mapped_library_dirs():
    dirs = set()
    try:
        with open("/proc/self/maps", errors="surrogateescape") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].startswith("/") and ".so" in parts[5]:
                    dirs.add(os.path.dirname(parts[5].strip()))
    except OSError:
        pass
    return dirs


def view_plan():
    """What a worker's filesystem view holds beyond the fixed skeleton (computed once per
    process; the sandbox server calls it before forking):

      roots   directories bound read-only at their own path: the Python installation (prefixes)
              and its site-packages, and the directories of loaded shared libraries that lie
              elsewhere; never the current directory, PYTHONPATH's other entries, "/" or a
              home directory (a prefix that is one is narrowed to its lib/ and bin/)
      hidden  the grader's own files that fall inside a root (an installed grader lives in
              site-packages): covered by an empty read-only tmpfs
      dropped sys.path entries left out of the view (the grader's source tree, cwd...)"""
    global _PLAN
    if _PLAN is not None:
        return _PLAN
    import site

    real = os.path.realpath
    prefixes = {real(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix) if p}
    sites = set()
    try:
        sites.update(real(p) for p in site.getsitepackages())
        if site.ENABLE_USER_SITE:
            sites.add(real(site.getusersitepackages()))
    except (AttributeError, OSError):
        pass
    for pre in prefixes:  # the site-packages of every prefix, listed in sys.path or not
        for lib in ("lib", "lib64"):
            base = os.path.join(pre, lib)
            try:
                sites.update(real(os.path.join(base, n, "site-packages")) for n in os.listdir(base)
                             if n.startswith("python") and os.path.isdir(os.path.join(base, n, "site-packages")))
            except OSError:
                pass
    secret = _grader_files(sorted(sites))
    roots, dropped = set(prefixes), []
    for p in sys.path:
        rp = real(p) if p else None
        if not rp or not os.path.isdir(rp):
            continue
        if _under(rp, prefixes) or rp in sites:
            roots.add(rp)
        elif not _under(rp, ["/usr"]):
            dropped.append(rp)
    for d in _mapped_library_dirs():
        if os.path.isdir(d) and not _under(d, roots | {"/usr", "/lib", "/lib64", "/lib32"}) \
                and not _under(d, secret) and not d.startswith(("/tmp", "/dev", "/proc", "/run", "/var/tmp")):
            roots.add(real(d))
    homes = _home_like()
    narrowed = set()
    for r in roots:
        if r == "/" or any(_under(h, [r]) for h in homes):  # "/" or a home (or /home) itself: too wide
            narrowed.update(os.path.join(r, n) for n in ("lib", "lib64", "bin") if os.path.isdir(os.path.join(r, n)))
        else:
            narrowed.add(r)
    roots = sorted(r for r in narrowed if not any(q != r and _under(r, [q]) for q in narrowed))
    roots = [r for r in roots if not _under(r, ["/usr"])]  # /usr is in the skeleton
    _PLAN = {"roots": roots, "hidden": sorted(set(secret)), "dropped": sorted(set(dropped)),
             "python": sorted(prefixes | sites)}
    return _PLAN


def _gpu_nodes():
    """The names in /dev of the NVIDIA driver's device nodes (nvidia0, nvidiactl, nvidia-uvm, ...)."""
    try:
        return sorted(n for n in os.listdir("/dev") if n.startswith("nvidia"))
    except OSError:
        return []


def _pivot_root(new, old):
    nr = SYS_PIVOT_ROOT.get(os.uname().machine)
    if nr is None:
        raise OSError(errno.ENOSYS, f"pivot_root: unknown syscall number on {os.uname().machine}")
    enc = os.fsencode
    _check(_libc().syscall(ctypes.c_long(nr), enc(new), enc(old)), "pivot_root")


def _umount(target, flags=0):
    _check(_libc().umount2(os.fsencode(target), ctypes.c_int(flags)), f"umount {target}")


def _etc_text(uid):
    passwd = "root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    group = "root:x:0:\nnogroup:x:65534:\n"
    if uid not in (0, NOBODY, None):
        passwd += f"student:x:{uid}:{uid}:student:/nonexistent:/usr/sbin/nologin\n"
        group += f"student:x:{uid}:\n"
    return {"passwd": passwd, "group": group, "hosts": "127.0.0.1\tlocalhost\n::1\tlocalhost\n",
            "hostname": "sandbox\n"}


def view_rules(submission=None, hide=(), expose=(), devices=False):
    """What a worker may see, as rules (the one description of the view; `_new_root` builds it
    with mounts, `landlock_view` with Landlock):

        binds      [(source, target, read_only, recursive)]: the paths it sees, at `target`
        covers     paths inside a bound directory that it must not see (the grader's own files,
                   the paths of `hide`): empty in the view
        links      {"/bin": target, ...} top-level symlinks kept as they are; etc_links for /etc
        submission where the submission is in a new root (/submission or /submission/<name>)

    The worker's workdir, a private /tmp and /proc come on top of these (see each builder)."""
    plan = view_plan()
    real = os.path.realpath
    binds = []  # (source path, target path inside the view, read-only, recursive)
    if os.path.isdir("/usr"):
        binds.append(("/usr", "/usr", True, True))
    links = {}
    for name in TOP_LEVEL:
        p = "/" + name
        if os.path.islink(p):
            links[p] = os.readlink(p)
        elif os.path.isdir(p):
            binds.append((p, p, True, True))
    for r in plan["roots"]:
        binds.append((r, r, True, True))
    for p in expose:
        rp = real(p)
        if os.path.exists(rp):
            binds.append((rp, rp, True, True))
    etc_links = {}
    for name in ETC_KEEP:
        p = "/etc/" + name
        if os.path.islink(p):
            etc_links[p] = os.readlink(p)
        elif os.path.exists(p):
            binds.append((p, p, True, True))
    for name in DEV_NODES:
        if os.path.exists("/dev/" + name):
            binds.append(("/dev/" + name, "/dev/" + name, False, False))
    if devices:
        for name in _gpu_nodes():
            binds.append(("/dev/" + name, "/dev/" + name, False, True))
        if os.path.isdir("/sys"):
            binds.append(("/sys", "/sys", True, True))
    if os.path.isdir("/sys/devices/system/cpu"):  # what sysconf() reads for the number of CPUs
        binds.append(("/sys/devices/system/cpu", "/sys/devices/system/cpu", True, False))
    sub_target = None
    if submission:
        sp = os.path.abspath(submission)
        if os.path.isdir(sp) and not os.path.islink(sp):
            sub_target = SUBMISSION
        elif os.path.isfile(sp) and not os.path.islink(sp):
            sub_target = os.path.join(SUBMISSION, os.path.basename(sp))
        if sub_target:
            binds.append((sp, sub_target, True, True))
    bound = [t for s, t, _ro, _rec in binds if os.path.isdir(s)]
    covers = []
    extra = [real(p) for p in hide if p]
    extra = [h for h in extra if not any(_under(py, [h]) for py in plan["python"])]  # never Python itself
    for h in list(plan["hidden"]) + extra:
        if os.path.exists(h) and _under(h, bound) and h not in covers:
            covers.append(h)
    covers = [c for c in covers if not any(o != c and _under(c, [o]) for o in covers)]
    return {"binds": binds, "covers": covers, "links": links, "etc_links": etc_links, "submission": sub_target}


def _allowed_beneath(path, covers):
    """`path` as the directories and files beneath it that hold nothing of `covers`: [path] when
    no cover is inside it, else its entries (recursively split where a cover lies deeper)."""
    inside = [c for c in covers if c != path and _under(c, [path])]
    if path in covers:
        return []
    if not inside or not os.path.isdir(path) or os.path.islink(path):
        return [path]
    out = []
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return []
    for name in names:
        out.extend(_allowed_beneath(os.path.join(path, name), inside))
    return out


def _openable(path):
    """True when this process may open `path` at all (a path it cannot reach needs no rule)."""
    try:
        os.close(os.open(path, os.O_PATH | os.O_CLOEXEC))
        return True
    except OSError:
        return False


def landlock_view(workdir, submission=None, hide=(), expose=(), devices=False):
    """The same view as `_new_root` (view_rules) as Landlock's (read, write) path lists, for a
    machine without a mount namespace: every path at its own place, the submission at its real
    path, /proc of this machine (Landlock keeps the worker from ptrace and /proc/<pid>/mem of
    anything outside it), the workdir writable, nothing else there."""
    rules = view_rules(submission, hide, expose, devices)
    real = os.path.realpath
    read, write = [], [real(workdir)]
    for src, _target, ro, _rec in rules["binds"]:
        (read if ro else write).extend(_allowed_beneath(real(src), rules["covers"]))
    read += [p for p in list(rules["links"]) + list(rules["etc_links"]) if os.path.exists(p)]
    read.append("/proc")
    return sorted(set(read)), sorted(set(write))


def _new_root(workdir, tmpfs_mb, levels, submission=None, hide=(), expose=(), uid=None, mount_proc=True,
              devices=False):
    """Build the worker's whole filesystem from an empty tmpfs, then pivot_root into it:

        /usr, /bin, /lib...           read-only (symlinks kept as they are)
        <the Python prefixes and site-packages, loaded libraries elsewhere>   read-only, same paths
        /etc                          the few files of ETC_KEEP, a passwd/group/hosts of its own
        /dev                          null, zero, full, random, urandom; a private /dev/shm
        /proc                         a new proc with hidepid=invisible (other users' processes
                                      do not exist); /sys/devices/system/cpu read-only
        /dev/nvidia*, /sys            only in a device worker (`devices`: devices.py): the GPUs'
                                      device nodes, and /sys read-only (what CUDA reads of them)
        /tmp, /var/tmp                private tmpfs
        workdir                       read-write (cwd, HOME, TMPDIR)
        /submission                   the submission, read-only (a file is /submission/<name>)

    The grader's own files (view_plan()["hidden"]) and the paths of `hide` (the course, the
    output folder...) that fall inside a root are covered by empty tmpfs.  Anything else on this
    machine does not exist for the worker.  Raises OSError before pivot_root if a step fails
    (the caller falls back to the deny-list view); after it, problems are recorded."""
    plan = view_plan()
    real = os.path.realpath
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    old_umask = os.umask(0o022)
    fds = {}

    def fd(path):
        if path not in fds:
            fds[path] = os.open(path, os.O_PATH)
        return fds[path]

    try:
        workdir = real(workdir)
        fd(workdir)
        fd("/proc")
        rules = view_rules(submission, hide, expose, devices)
        links, etc_links, sub_target = rules["links"], rules["etc_links"], rules["submission"]
        usable = []
        for b in rules["binds"]:  # a path this user cannot open is left out of the view (and said so)
            try:
                fd(b[0])
                usable.append(b)
            except OSError as e:
                levels["problems"].append(f"view: {b[0]}: {e.strerror}")
        binds = usable
        covers = rules["covers"]

        # the new root: a fresh tmpfs mounted over /tmp of this (private) mount namespace
        base = "/tmp" if os.path.isdir("/tmp") and not os.path.islink("/tmp") else "/mnt"
        _mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV, "size=2m,nr_inodes=4096,mode=0755")
        new = base

        def at(path):
            return new + path

        for d in ("/etc", "/dev", "/proc", "/sys", "/tmp", "/var/tmp", "/dev/shm"):
            os.makedirs(at(d), mode=0o755, exist_ok=True)
        for d in ("/tmp", "/var/tmp", "/dev/shm"):  # first: a root under /tmp (a virtualenv there) goes on top
            _mount("tmpfs", at(d), "tmpfs", MS_NOSUID | MS_NODEV, f"size={int(tmpfs_mb)}m,nr_inodes=4096,mode=1777")
        for p, target in links.items():
            os.symlink(target, at(p))
        for p, target in etc_links.items():
            os.symlink(target, at(p))
        for name, text in _etc_text(uid).items():
            if not os.path.exists(at("/etc/" + name)):
                with open(at("/etc/" + name), "w") as f:
                    f.write(text)
        for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                             ("stderr", "/proc/self/fd/2")):
            os.symlink(target, at("/dev/" + name))
        readonly = []
        for src, target, ro, rec in sorted(binds, key=lambda b: b[1].count("/")):
            dest = at(target)
            if stat.S_ISDIR(os.fstat(fds[src]).st_mode):
                os.makedirs(dest, mode=0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(dest), mode=0o755, exist_ok=True)
                if not os.path.lexists(dest):
                    os.close(os.open(dest, os.O_WRONLY | os.O_CREAT, 0o644))
            _mount(f"/proc/self/fd/{fds[src]}", dest, None, MS_BIND | (MS_REC if rec else 0))
            if ro:
                readonly.append(target)
        hidden = []
        for c in covers:
            dest = at(c)
            if os.path.isdir(dest):
                _mount("tmpfs", dest, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,nr_inodes=16,mode=0755")
            else:
                _mount(f"/proc/self/fd/{fd('/dev/null')}", dest, None, MS_BIND)
                readonly.append(c)
            hidden.append(c)
            # a root inside what was just covered (a virtualenv inside the grader's source tree)
            for src, target, ro, rec in binds:
                if target != c and _under(target, [c]):
                    os.makedirs(at(target) if os.path.isdir(src) else os.path.dirname(at(target)), exist_ok=True)
                    _mount(f"/proc/self/fd/{fds[src]}", at(target), None, MS_BIND | MS_REC)
        os.makedirs(at(workdir), mode=0o700, exist_ok=True)
        _mount(f"/proc/self/fd/{fds[workdir]}", at(workdir), None, MS_BIND)
        proc_kind = "bound"
        if mount_proc:
            for opts in ("hidepid=invisible", "hidepid=2"):
                try:
                    _mount("proc", at("/proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts)
                    proc_kind = opts
                    break
                except OSError:
                    continue
        if proc_kind == "bound":
            _mount(f"/proc/self/fd/{fds['/proc']}", at("/proc"), None, MS_BIND | MS_REC)
        # into it: the old root is detached and gone for good
        os.chdir(new)
        _pivot_root(".", ".")
        _umount(".", MNT_DETACH)
        os.chdir("/")
    finally:
        os.umask(old_umask)
        for f in fds.values():
            os.close(f)
    levels["view"] = "new root"
    levels["proc"] = proc_kind
    levels["hidden"] = hidden
    levels["exposed"] = sorted(set([t for _s, t, _ro, _rec in binds if t.startswith(tuple(plan["roots"]))] + [
        t for _s, t, _ro, _rec in binds if t.startswith(("/usr", "/bin", "/lib", "/sbin"))]))[:20]
    levels["submission"] = sub_target
    levels["private_tmp"] = ["/tmp", "/var/tmp", "/dev/shm"]
    # everything read-only but the worker's own directories
    keep = {workdir, "/tmp", "/var/tmp", "/dev/shm"}
    failed = []
    for p in _mount_points():
        if p in keep or _under(p, ["/proc", "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"]) \
                or p.startswith("/dev/nvidia"):
            continue
        try:
            if os.statvfs(p).f_flag & ST_RDONLY:
                continue
            flags = MS_REMOUNT | MS_RDONLY | _ms_flags(p)
            _mount(None, p, None, flags | (MS_BIND if p != "/" else 0))
        except OSError:
            try:
                _mount(None, p, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _ms_flags(p))
            except OSError:
                failed.append(p)
    if failed:
        levels["problems"].append(f"read-only remount failed: {', '.join(failed)[:200]}")
    levels["readonly_fs"] = not failed


# ---------------------------------------------------------------- capabilities

class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _drop_capabilities():
    """Clear every capability (used in a user namespace, where we cannot change uid)."""
    for cap in range(64):  # the bounding set too, so nothing comes back
        if _libc().prctl(24, cap, 0, 0, 0) != 0 and ctypes.get_errno() == errno.EINVAL:
            break
    hdr = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    _check(_libc().capset(ctypes.byref(hdr), data), "capset")


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


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
        for kind, path in cgroups.items():  # step out of the worker's cgroups
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
        levels["rlimits"][name[len("RLIMIT_"):].lower()] = None if value == resource.RLIM_INFINITY else value
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
KEEP_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONHASHSEED", "MPLBACKEND", "OMP_NUM_THREADS",
            "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
            # which GPUs it sees: none, unless it is a device worker (devices.py)
            "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING")


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


def apply_worker_limits(workdir, *, memory_mb=4096, max_procs=64, max_file_mb=64, cpu_seconds=None,
                        max_open_files=256, tmpfs_mb=64, uid=None, keep_fds=None, expose=(),
                        watchdog=True, remove_workdir=False, submission=None, hide=(),
                        devices=False):
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
    levels = {"pid": pid, "user": _user_label(os.getuid()), "uid": os.getuid(), "session": None,
              "cgroup": {}, "netns": False, "mountns": False, "userns": False, "private_tmp": [],
              "hidden": [], "exposed": [], "readonly_fs": False, "tmpdir": None, "rlimits": {}, "no_new_privs": False,
              "pdeathsig": False, "watchdog": False, "kill": "pid", "seconds": None, "problems": [],
              "view": None, "submission": None, "environment": [], "grader_uid": os.getuid(), "landlock": None,
              "seccomp": False}
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
            levels["watchdog"] = step("watchdog", _start_watchdog, pid, dict(levels["cgroup"]),
                                      target_uid if target_uid not in (0, os.getuid()) else None,
                                      workdir if remove_workdir else None)
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


# ---------------------------------------------------------------- the judge's side

def _alive_of_uid(uid):
    """Pids of live (not zombie) processes whose real uid is `uid`."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                text = f.read()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        try:
            real_uid = int(fields.get("Uid", "").split()[0])
        except (IndexError, ValueError):
            continue
        if real_uid == uid and not fields.get("State", "").strip().startswith(("Z", "X")):
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
    parts.append({"cgroup": "killed by cgroup", "uid": "killed by uid", "pgid": "killed by process group",
                  "pid": "killed by pid"}.get(levels.get("kill"), "killed by pid"))
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


def _proc_status(pid):
    out = {}
    try:
        with open(f"/proc/{int(pid)}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                out[key] = value.split()
    except (OSError, ValueError):
        return None
    return out


def verify(levels, pid):
    """The judge's view of a worker's levels: what the worker sent (before any student code ran)
    with what /proc shows of it from outside overriding the claims that /proc can show: its uid,
    no_new_privs, a seccomp filter, its network namespace.  Called on a live worker."""
    levels = dict(levels) if isinstance(levels, dict) else {}
    levels["grader_uid"] = os.getuid()
    status = _proc_status(pid)
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
    import shutil
    shutil.rmtree(d, ignore_errors=True)
    lv = json.loads(data)
    print(json.dumps(lv, indent=1))
    print(describe(lv))


if __name__ == "__main__":
    _main()
