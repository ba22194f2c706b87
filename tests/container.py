"""Run a command as it would run in a container: under a seccomp filter like Docker's default
profile, optionally as another user and with Landlock refused as on an older kernel.

    python tests/container.py [--no-landlock] [--user NAME] [--no-filter] -- COMMAND ARGS...

Docker's default profile (moby's profiles/seccomp/default.json) refuses, to a process without
CAP_SYS_ADMIN in the profile's sense: new namespaces (unshare, setns, clone with a CLONE_NEW*
flag; clone3 is answered ENOSYS so that the C library falls back to clone), mount, umount2,
pivot_root and the new mount API.  What the sandbox needs of those is exactly what a JupyterHub
pod does not give it.  `--no-landlock` also answers landlock_* with ENOSYS (a kernel before 5.13,
or a profile older than Docker 20.10).  `--user NAME` drops to that user (its groups, uid and
gid) before running COMMAND, as a single-user server does.  The filter is inherited by
everything COMMAND starts and cannot be removed.
"""

import argparse
import errno
import os
import pwd
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from autograder.sandbox import kernel  # noqa: E402

DOCKER_DENIED = (
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
)
LANDLOCK = ("landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self")


def rules(no_landlock=False):
    flags_arg = 1 if os.uname().machine.startswith("s390") else 0
    out = [(name, errno.EPERM, ()) for name in DOCKER_DENIED]
    out += [
        ("clone", errno.EPERM, [(flags_arg, kernel.SCMP_CMP_MASKED_EQ, bit, bit)]) for bit in kernel.CLONE_NEW.values()
    ]
    out.append(("clone3", errno.ENOSYS, ()))
    if no_landlock:
        out += [(name, errno.ENOSYS, ()) for name in LANDLOCK]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-landlock", action="store_true", help="landlock_* fail with ENOSYS")
    ap.add_argument("--user", help="run COMMAND as this user")
    ap.add_argument("--no-filter", action="store_true", help="no seccomp filter (only --user): an ordinary machine")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no COMMAND")
    if args.user:
        pw = pwd.getpwnam(args.user)
        os.initgroups(pw.pw_name, pw.pw_gid)
        os.setresgid(pw.pw_gid, pw.pw_gid, pw.pw_gid)
        os.setresuid(pw.pw_uid, pw.pw_uid, pw.pw_uid)
        os.environ.update(HOME=pw.pw_dir, USER=pw.pw_name, LOGNAME=pw.pw_name)
    if not args.no_filter:
        kernel.load_filter(rules(args.no_landlock))
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main()
