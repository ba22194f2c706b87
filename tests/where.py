"""Where the grader commands of a test run: the environments courses grade in.

SEQGRADER_TEST_WHERE chooses one (default "vm-root"):

    vm-root          this machine as it is (CI runs as root)
    vm-user          an ordinary user on this machine (SEQGRADER_TEST_USER, default seqgrader-ci)
    container-root   root under a seccomp filter like Docker's default profile (tests/container.py:
                     no namespace, no mount)
    container-user   an ordinary user under that filter (a JupyterHub single-user pod)
    no-landlock      root under that filter with Landlock refused too (an older kernel): the
                     grader must refuse to grade (so must it anywhere `REFUSES` says)

The ordinary user runs SEQGRADER_TEST_PYTHON (a virtual environment built from the system
Python, which that user can read: .ci/run builds one); so does root outside vm-root when it is
set (a container's Python is readable by every user, and a worker runs as another uid); else
root runs this interpreter.  The tests
that use this module run the grader as a subprocess: `command(args)` is what they start, and
`share(path)` makes a folder the test wrote readable (and, for `writable`, writable) by the user.
"""

import os
import pwd
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WHERE = os.environ.get("SEQGRADER_TEST_WHERE", "vm-root")
PLACES = ("vm-root", "vm-user", "container-root", "container-user", "no-landlock")
if WHERE not in PLACES:
    raise SystemExit(f"SEQGRADER_TEST_WHERE={WHERE!r}: one of {', '.join(PLACES)}")
USER = os.environ.get("SEQGRADER_TEST_USER", "seqgrader-ci") if WHERE.endswith("-user") else None


def _landlock_abi():
    from autograder.sandbox.kernel import landlock_abi

    return landlock_abi()


# the grader must refuse here (exit status 2, no report), as sandbox/limits.missing decides: no view
# without a mount namespace or Landlock; a user's worker keeps the grader's uid, so its signals must
# be scoped (Landlock ABI 6)
ABI = 0 if WHERE == "no-landlock" else _landlock_abi()
REFUSES = (WHERE.startswith("container") or WHERE == "no-landlock") and ABI == 0 or (USER is not None and ABI < 6)


def python():
    py = os.environ.get("SEQGRADER_TEST_PYTHON")
    if WHERE == "vm-root" or (USER is None and not py):
        return sys.executable
    if not py:
        raise SystemExit(
            f"SEQGRADER_TEST_WHERE={WHERE}: set SEQGRADER_TEST_PYTHON to a Python the user {USER} "
            f"can run, with the package installed (see .ci/run)"
        )
    return py


def command(args):
    """[python, "-m", "autograder", *args] as it runs in this place."""
    cmd = [python(), "-m", "autograder", *map(str, args)]
    if WHERE == "vm-root":
        return cmd
    launcher = [sys.executable, str(ROOT / "tests" / "container.py")]
    if WHERE == "vm-user":
        launcher.append("--no-filter")
    if WHERE == "no-landlock":
        launcher.append("--no-landlock")
    if USER:
        launcher += ["--user", USER]
    return launcher + ["--", *cmd]


def share(path, writable=False):
    """Let the user of this place read `path` (a folder the test made: recursively) and go
    through its parents; with `writable`, write into it too.  Nothing to do for root."""
    if USER is None:
        return
    path = Path(path)
    for parent in list(path.parents)[:-1]:
        try:
            os.chmod(parent, os.stat(parent).st_mode | 0o711)
        except OSError:
            pass
    uid = pwd.getpwnam(USER).pw_uid
    for dirpath, _, filenames in os.walk(path):
        os.chmod(dirpath, 0o777 if writable else 0o755)
        if writable:
            os.chown(dirpath, uid, -1)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)
