"""What a worker may see, written once (``view_rules``) and enforced two ways:

* ``_new_root``: a mount namespace holding a fresh root with only what the rules name (read-only
  but the worker's own directories), then ``pivot_root`` into it;
* ``landlock_view``: the same rules as Landlock's path lists, where no mount namespace is allowed
  (a container); ``limits.apply_worker_limits`` hands them to ``kernel.landlock``.

The grader's own files and the paths the judge hides (the course, the folders around the
submission) are never in either, even inside an allowed directory.
"""

import ctypes
import errno
import os
import re
import stat
import sys

from .identity import NOBODY
from .kernel import _libc
from .kernel import check as _check
from .kernel import mount as _mount

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
ST_RDONLY, ST_NOSUID, ST_NODEV, ST_NOEXEC = 1, 2, 4, 8
ST_NOATIME, ST_NODIRATIME, ST_RELATIME = 1024, 2048, 4096


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
    for st, ms in (
        (ST_NOSUID, MS_NOSUID),
        (ST_NODEV, MS_NODEV),
        (ST_NOEXEC, MS_NOEXEC),
        (ST_NOATIME, MS_NOATIME),
        (ST_NODIRATIME, MS_NODIRATIME),
        (ST_RELATIME, MS_RELATIME),
    ):
        if f & st:
            out |= ms
    return out


def _under(path, roots):
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


# ---------------------------------------------------------------- the allow-list view (a new root)

# top-level entries of / that the dynamic linker and the interpreter need: replicated as they
# are (merged-/usr systems have symlinks here) or bound read-only
TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# the few files of /etc that the C library, Python and matplotlib read; passwd, group and hosts
# are written anew (no real user names)
ETC_KEEP = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "nsswitch.conf",
    "fonts",
    "alternatives",
    "mime.types",
    "host.conf",
    "gai.conf",
)
DEV_NODES = ("null", "zero", "full", "random", "urandom")
SUBMISSION = "/submission"  # where a worker sees its own submission (read-only)
MNT_DETACH = 2
SYS_PIVOT_ROOT = {
    "x86_64": 155,
    "aarch64": 41,
    "riscv64": 41,
    "ppc64le": 203,
    "ppc64": 203,
    "s390x": 217,
    "i686": 217,
    "i386": 217,
    "armv7l": 218,
}
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
                sites.update(
                    real(os.path.join(base, n, "site-packages"))
                    for n in os.listdir(base)
                    if n.startswith("python") and os.path.isdir(os.path.join(base, n, "site-packages"))
                )
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
        if (
            os.path.isdir(d)
            and not _under(d, roots | {"/usr", "/lib", "/lib64", "/lib32"})
            and not _under(d, secret)
            and not d.startswith(("/tmp", "/dev", "/proc", "/run", "/var/tmp"))
        ):
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
    _PLAN = {
        "roots": roots,
        "hidden": sorted(set(secret)),
        "dropped": sorted(set(dropped)),
        "python": sorted(prefixes | sites),
    }
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
    return {
        "passwd": passwd,
        "group": group,
        "hosts": "127.0.0.1\tlocalhost\n::1\tlocalhost\n",
        "hostname": "sandbox\n",
    }


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
    """`path` (a real path) as the directories and files beneath it that hold nothing of `covers`:
    [path] when no cover is inside it, else its entries, recursively split where a cover lies
    deeper.  A symbolic link among them gets no rule: Landlock judges the file a path resolves to,
    so a link to an allowed file works without one, and a rule on the link would allow its target
    (a virtualenv's lib64 -> lib would open lib and the grader inside it)."""
    if path in covers:
        return []
    inside = [c for c in covers if c != path and _under(c, [path])]
    if not inside:
        return [path]
    if os.path.islink(path) or not os.path.isdir(path):
        return []
    out = []
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return []
    for name in names:
        entry = os.path.join(path, name)
        if not os.path.islink(entry):
            out.extend(_allowed_beneath(entry, inside))
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
    read.append("/proc")  # the links of rules["links"] need no rule: their targets are in /usr
    return sorted(set(read)), sorted(set(write))


def _new_root(workdir, tmpfs_mb, levels, submission=None, hide=(), expose=(), uid=None, mount_proc=True, devices=False):
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
        for name, target in (
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ):
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
            for src, target, _ro, _rec in binds:
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
    levels["exposed"] = sorted(
        set(
            [t for _s, t, _ro, _rec in binds if t.startswith(tuple(plan["roots"]))]
            + [t for _s, t, _ro, _rec in binds if t.startswith(("/usr", "/bin", "/lib", "/sbin"))]
        )
    )[:20]
    levels["submission"] = sub_target
    levels["private_tmp"] = ["/tmp", "/var/tmp", "/dev/shm"]
    # everything read-only but the worker's own directories
    keep = {workdir, "/tmp", "/var/tmp", "/dev/shm"}
    failed = []
    for p in _mount_points():
        if (
            p in keep
            or _under(p, ["/proc", "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"])
            or p.startswith("/dev/nvidia")
        ):
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
