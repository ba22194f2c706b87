"""Confinement an unprivileged process applies to itself with Landlock and seccomp.

Neither needs a capability, a user namespace or a mount: both work inside a Docker or
Kubernetes container whose default seccomp profile forbids ``unshare`` and ``mount`` but allows
``landlock_*``, ``seccomp`` and ``prctl``.  Both are irreversible and inherited across fork and
exec, and both set ``PR_SET_NO_NEW_PRIVS`` (setuid and file capabilities grant nothing after it).
Call them in the worker after it has opened what it needs and before any student code runs.

Landlock (``landlock``), by ABI version of the running kernel:

* filesystem (ABI 1): opening, executing, listing, creating, removing and renaming are allowed
  only beneath the given paths: read and execute beneath ``read``, read, write, create, remove
  and truncate (no execute) beneath ``write``.  Files opened before it stay usable.  It does not
  restrict stat, access, chdir, chmod, chown, utime, setxattr, flock or fcntl, nor (up to ABI 7)
  connect() to a named unix socket: no right covers it, the socket file only has to exist.
  ABI 1 denies every rename or link between directories; ABI 2 (REFER) allows it beneath
  ``write``; before ABI 3 truncate(2) is not restricted; before ABI 5 ioctl on devices is not
  restricted (from ABI 5 it is allowed only on devices beneath ``write``);
* TCP (ABI 4, ``net=True``): no bind and no connect on any TCP port.  UDP, raw, netlink and unix
  sockets are not covered, and before ABI 4 nothing on the network is;
* scopes (ABI 6, ``scope=True``): no signal to a process outside the domain (its own children
  are inside) and no connect to an abstract unix socket bound outside it.  Before ABI 6 signals
  go wherever the uid allows;
* any ABI: no ptrace of, and no /proc/<pid>/mem access to, a process outside the domain.

A domain covers only the thread that enforces it (ABI 8 adds a flag for all threads, not used
here): ``landlock`` refuses to run while the process has other threads.  Denials go to the audit
log where audit is on (the ABI 7 flags that silence it are not used).  The syscall numbers are
known for x86_64 and aarch64; elsewhere ``landlock_abi`` is 0.

seccomp (``seccomp_deny``, a filter loaded through libseccomp.so.2 for every thread): the
syscalls in ``DENIED`` fail with EPERM, never a kill, so Python raises OSError.  ``socket`` is
denied for every family: no TCP, UDP, raw, netlink, and no unix socket to connect to a listener
Landlock cannot see (``socketpair`` stays allowed; sockets opened before stay usable).  ``clone``
fails with EPERM when its flags ask for any new namespace; ``clone3``, whose flags sit in memory
a filter cannot read, fails with ENOSYS so that glibc falls back to ``clone``.  ``personality``
may only query or set PER_LINUX.  Syscalls of another ABI (i386 ``int 0x80``, x32) all fail with
EPERM.  seccomp sees numbers and register values only: no paths, no memory behind pointers, and
nothing about files, signals, memory or CPU time.
"""

import ctypes
import errno
import os
import platform
import stat
import threading

PR_SET_NO_NEW_PRIVS = 38

# include/uapi/asm-generic/unistd.h (aarch64) and arch/x86/entry/syscalls/syscall_64.tbl
SYS_LANDLOCK = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}

# include/uapi/linux/landlock.h
LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
LANDLOCK_RULE_PATH_BENEATH = 1
ACCESS_FS_EXECUTE = 1 << 0
ACCESS_FS_WRITE_FILE = 1 << 1
ACCESS_FS_READ_FILE = 1 << 2
ACCESS_FS_READ_DIR = 1 << 3
ACCESS_FS_REMOVE_DIR = 1 << 4
ACCESS_FS_REMOVE_FILE = 1 << 5
ACCESS_FS_MAKE_CHAR = 1 << 6
ACCESS_FS_MAKE_DIR = 1 << 7
ACCESS_FS_MAKE_REG = 1 << 8
ACCESS_FS_MAKE_SOCK = 1 << 9
ACCESS_FS_MAKE_FIFO = 1 << 10
ACCESS_FS_MAKE_BLOCK = 1 << 11
ACCESS_FS_MAKE_SYM = 1 << 12
ACCESS_FS_REFER = 1 << 13  # ABI 2
ACCESS_FS_TRUNCATE = 1 << 14  # ABI 3
ACCESS_FS_IOCTL_DEV = 1 << 15  # ABI 5
ACCESS_NET_BIND_TCP = 1 << 0  # ABI 4
ACCESS_NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

FS_BY_ABI = {1: (1 << 13) - 1, 2: ACCESS_FS_REFER, 3: ACCESS_FS_TRUNCATE, 5: ACCESS_FS_IOCTL_DEV}
FILE_RIGHTS = (
    ACCESS_FS_EXECUTE | ACCESS_FS_WRITE_FILE | ACCESS_FS_READ_FILE | ACCESS_FS_TRUNCATE | ACCESS_FS_IOCTL_DEV
)  # the rights a rule on a file (not a directory) may carry
READ_RIGHTS = ACCESS_FS_EXECUTE | ACCESS_FS_READ_FILE | ACCESS_FS_READ_DIR
WRITE_RIGHTS = (
    ACCESS_FS_READ_FILE
    | ACCESS_FS_READ_DIR
    | ACCESS_FS_WRITE_FILE
    | ACCESS_FS_REMOVE_DIR
    | ACCESS_FS_REMOVE_FILE
    | ACCESS_FS_MAKE_DIR
    | ACCESS_FS_MAKE_REG
    | ACCESS_FS_MAKE_SOCK
    | ACCESS_FS_MAKE_FIFO
    | ACCESS_FS_MAKE_SYM
    | ACCESS_FS_REFER
    | ACCESS_FS_TRUNCATE
    | ACCESS_FS_IOCTL_DEV
)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


# seccomp.h of libseccomp 2.x
SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_FLTATR_ACT_BADARCH = 2
SCMP_FLTATR_CTL_TSYNC = 4
SCMP_FLTATR_API_SYSRAWRC = 9  # libseccomp >= 2.5
SCMP_CMP_MASKED_EQ = 7
NR_SCMP_ERROR = -1


def SCMP_ACT_ERRNO(e):
    """The seccomp action "fail with errno `e`" (libseccomp's SCMP_ACT_ERRNO macro)."""
    return 0x00050000 | (e & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


# syscalls newer than some libseccomp releases know by name; same numbers on x86_64 and aarch64
# (include/uapi/asm-generic/unistd.h, arch/x86/entry/syscalls/syscall_64.tbl)
NEW_SYSCALLS = {
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "clone3": 435,
    "pidfd_getfd": 438,
    "mount_setattr": 442,
    "quotactl_fd": 443,
    "landlock_create_ruleset": 444,
}

CLONE_NEW = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}

DENIED = (
    "socket",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "mount_setattr",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "add_key",
    "request_key",
    "keyctl",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "pidfd_getfd",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "settimeofday",
    "clock_settime",
    "quotactl",
    "quotactl_fd",
    "lookup_dcookie",
    "name_to_handle_at",
    "open_by_handle_at",
    "vhangup",
    "syslog",
)

_LIBC = None
_SECCOMP = None


def _libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
        _LIBC.syscall.restype = ctypes.c_long
    return _LIBC


def check(ret, what):
    """Raise OSError (errno and `what`) when a libc call returned non-zero."""
    if ret != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def prctl(option, arg):
    """prctl(`option`, `arg`, 0, 0, 0); raises OSError when it fails."""
    check(
        _libc().prctl(
            ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)
        ),
        f"prctl {option}",
    )


def unshare(flags):
    """unshare(2) with `flags` (CLONE_NEW*); raises OSError when it fails."""
    check(_libc().unshare(ctypes.c_int(flags)), "unshare")


def mount(source, target, fstype, flags, data=None):
    """mount(2) of `source` on `target` (str or bytes; `data` optional); raises OSError when it fails."""

    def enc(s):
        return os.fsencode(s) if isinstance(s, str) else s

    check(_libc().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _no_new_privs():
    prctl(PR_SET_NO_NEW_PRIVS, 1)


# ---------------------------------------------------------------- Landlock


def _landlock_syscall(index, *args):
    """(return value, errno) of landlock_create_ruleset/add_rule/restrict_self (index 0, 1, 2)."""
    numbers = SYS_LANDLOCK.get(platform.machine())
    if numbers is None:
        return -1, errno.ENOSYS
    ret = _libc().syscall(ctypes.c_long(numbers[index]), *args)
    return ret, (ctypes.get_errno() if ret < 0 else 0)


def _probe_abi():
    ret, e = _landlock_syscall(0, None, ctypes.c_size_t(0), ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return max(ret, 0), e


def landlock_abi() -> int:
    """The Landlock ABI version of the running kernel; 0 when the kernel or a seccomp filter refuses
    Landlock (ENOSYS, EOPNOTSUPP, EPERM) or its syscall numbers on this machine are not known;
    OSError on any other error."""
    abi, e = _probe_abi()
    if abi == 0 and e not in (errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM):
        raise OSError(e, f"landlock_create_ruleset(VERSION): {os.strerror(e)}")
    return abi


def _thread_count():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def landlock(read=(), write=(), *, net=True, scope=True) -> dict:
    """Restrict the calling process (it must have no other thread) to: read and execute beneath
    each path of `read` (a file: read and execute it), read, write, create, remove, rename and
    truncate beneath each path of `write` (a file: read, write and truncate it; no execute: list a
    path in both for that), and nothing else on the filesystem.  With `net`, no TCP bind or connect
    (ABI >= 4); with `scope`, no signal to processes outside the domain and no connect to abstract
    unix sockets bound outside it (ABI >= 6).  Paths that do not exist are skipped.  Sets
    PR_SET_NO_NEW_PRIVS first.  Returns {"abi", "fs", "tcp", "signals", "abstract_unix",
    "skipped"}; raises OSError when Landlock is unavailable or a step fails."""
    abi, e = _probe_abi()
    if abi == 0:
        raise OSError(e, f"Landlock is not available here (landlock_create_ruleset: {os.strerror(e)})")
    threads = _thread_count()
    if threads > 1:
        raise OSError(errno.EBUSY, f"Landlock: the process has {threads} threads; a domain covers only the calling one")
    handled_fs = 0
    for version, rights in FS_BY_ABI.items():
        if abi >= version:
            handled_fs |= rights
    tcp = bool(net) and abi >= 4
    scoped = bool(scope) and abi >= 6
    attr = _RulesetAttr(
        handled_fs,
        (ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP) if tcp else 0,
        (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if scoped else 0,
    )
    _no_new_privs()
    ruleset, e = _landlock_syscall(0, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(e, f"landlock_create_ruleset: {os.strerror(e)}")
    skipped = []
    try:
        for paths, rights in ((read, READ_RIGHTS), (write, WRITE_RIGHTS)):
            for path in paths:
                path = os.fspath(path)
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except (FileNotFoundError, NotADirectoryError):
                    skipped.append(path)
                    continue
                try:
                    allowed = rights & handled_fs
                    if not stat.S_ISDIR(os.fstat(fd).st_mode):
                        allowed &= FILE_RIGHTS
                    rule = _PathBeneathAttr(allowed, fd)
                    ret, e = _landlock_syscall(
                        1,
                        ctypes.c_int(ruleset),
                        ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
                        ctypes.byref(rule),
                        ctypes.c_uint32(0),
                    )
                    if ret < 0:
                        raise OSError(e, f"landlock_add_rule({path}): {os.strerror(e)}")
                finally:
                    os.close(fd)
        ret, e = _landlock_syscall(2, ctypes.c_int(ruleset), ctypes.c_uint32(0))
        if ret < 0:
            raise OSError(e, f"landlock_restrict_self: {os.strerror(e)}")
    finally:
        os.close(ruleset)
    return {"abi": abi, "fs": True, "tcp": tcp, "signals": scoped, "abstract_unix": scoped, "skipped": skipped}


# ---------------------------------------------------------------- seccomp


def _seccomp():
    global _SECCOMP
    if _SECCOMP is None:
        try:
            lib = ctypes.CDLL("libseccomp.so.2")
        except OSError as e:
            raise OSError(errno.ENOENT, f"seccomp: libseccomp.so.2 cannot be loaded ({e})") from None
        lib.seccomp_init.argtypes = [ctypes.c_uint32]
        lib.seccomp_init.restype = ctypes.c_void_p
        lib.seccomp_release.argtypes = [ctypes.c_void_p]
        lib.seccomp_release.restype = None
        lib.seccomp_load.argtypes = [ctypes.c_void_p]
        lib.seccomp_load.restype = ctypes.c_int
        lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
        lib.seccomp_attr_set.restype = ctypes.c_int
        lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
        lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
        lib.seccomp_rule_add_array.argtypes = [
            ctypes.c_void_p,
            ctypes.c_uint32,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.POINTER(_ArgCmp),
        ]
        lib.seccomp_rule_add_array.restype = ctypes.c_int
        _SECCOMP = lib
    return _SECCOMP


def syscall_number(name):
    """The number of syscall `name` on this machine, or None where it does not exist here."""
    nr = _seccomp().seccomp_syscall_resolve_name(name.encode())
    if nr == NR_SCMP_ERROR and platform.machine() in SYS_LANDLOCK:
        nr = NEW_SYSCALLS.get(name, NR_SCMP_ERROR)
    return nr if nr >= 0 else None


def _check_scmp(ret, what):
    if ret < 0:
        raise OSError(-ret, f"seccomp: {what}: {os.strerror(-ret)}")


def load_filter(rules):
    """Load a seccomp filter for every thread: default allow; each rule (name, errno, comparisons)
    makes syscall `name` fail with that errno when all of its comparisons (arg, op, datum_a,
    datum_b) hold; syscalls of another ABI fail with EPERM.  Sets PR_SET_NO_NEW_PRIVS.  Returns
    the names of the rules loaded (those whose syscall exists here)."""
    lib = _seccomp()
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        raise OSError(errno.ENOMEM, "seccomp: seccomp_init failed")
    try:
        _check_scmp(lib.seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(errno.EPERM)), "bad-arch action")
        _check_scmp(lib.seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1), "thread sync")
        lib.seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1)
        loaded = []
        for name, err, comparisons in rules:
            nr = syscall_number(name)
            if nr is None:
                continue
            cmps = (_ArgCmp * max(len(comparisons), 1))(*(_ArgCmp(*c) for c in comparisons))
            _check_scmp(
                lib.seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(err), nr, len(comparisons), cmps), f"rule {name}"
            )
            if name not in loaded:
                loaded.append(name)
        _no_new_privs()
        _check_scmp(lib.seccomp_load(ctx), "seccomp_load")
    finally:
        lib.seccomp_release(ctx)
    return loaded


def deny_rules():
    """The rules `seccomp_deny` loads (see `load_filter`)."""
    flags_arg = 1 if platform.machine().startswith("s390") else 0  # CLONE_BACKWARDS2
    rules = [(name, errno.EPERM, ()) for name in DENIED]
    rules += [("clone", errno.EPERM, [(flags_arg, SCMP_CMP_MASKED_EQ, bit, bit)]) for bit in CLONE_NEW.values()]
    rules.append(("clone3", errno.ENOSYS, ()))
    # personality(2) takes an unsigned int: deny every value but 0 (PER_LINUX) and 0xffffffff (query).
    # Any other 32-bit value has a set bit followed (cyclically) by a clear one: one rule per position.
    rules += [
        ("personality", errno.EPERM, [(0, SCMP_CMP_MASKED_EQ, (1 << i) | (1 << (i + 1) % 32), 1 << i)])
        for i in range(32)
    ]
    return rules


def seccomp_deny() -> dict:
    """Load a filter (default allow) under which the syscalls of DENIED fail with EPERM, clone with
    any CLONE_NEW* flag fails with EPERM, clone3 with ENOSYS, personality other than PER_LINUX or a
    query with EPERM, and every syscall of another ABI with EPERM; socketpair, fork, threads and exec
    stay allowed.  Sets PR_SET_NO_NEW_PRIVS.  Returns {"seccomp": True, "denied": [names loaded]};
    raises OSError when libseccomp or the kernel refuses.  libseccomp.so.2 is loaded at first use:
    call this before `landlock`, or leave its directory readable."""
    return {"seccomp": True, "denied": load_filter(deny_rules())}


# ---------------------------------------------------------------- probe


def _nothing_holds(**errors):
    return {
        "landlock_abi": 0,
        "landlock": False,
        "tcp": False,
        "signals": False,
        "abstract_unix": False,
        "seccomp": False,
        "errors": errors,
    }


def _probe():
    """(In run_limited's child.)  What holds here, tried on this process."""
    out = _nothing_holds()
    try:
        _seccomp()
    except OSError:
        pass
    try:
        out["landlock_abi"] = landlock_abi()
        got = landlock()
        out.update(landlock=True, **{k: got[k] for k in ("tcp", "signals", "abstract_unix")})
    except OSError as e:
        out["errors"]["landlock"] = str(e)
    try:
        out["seccomp"] = seccomp_deny()["seccomp"]
    except OSError as e:
        out["errors"]["seccomp"] = str(e)
    return out


def what_holds(timeout=10.0) -> dict:
    """What this machine allows, tried in a forked child: {"landlock_abi": n, "landlock": bool,
    "tcp": bool, "signals": bool, "abstract_unix": bool, "seccomp": bool, "errors": {step: message}}."""
    from ..load.reader import run_limited

    out = run_limited(_probe, seconds=timeout)
    return out if isinstance(out, dict) else _nothing_holds(probe=f"the probe child gave no answer ({out})")
