"""Running student code where it can do no harm, each file one concern:

    server.py    the sandbox server (started by exec: holds nothing of the grader's) and its
                 zygotes, which fork the workers
    worker.py    the untrusted side: confines itself, runs the submission, answers requests
    view.py      what a worker may see (view_rules), as a new root or as Landlock rules
    identity.py  its uid, its cgroup, the watchdog and the killing of what it leaves
    limits.py    everything applied to a worker, in order; what the judge checks of it (verify,
                 missing); `python -m autograder.sandbox.limits` prints what enforces each rule
    kernel.py    Landlock and seccomp, as the kernel offers them
    protocol.py  the one message format between the grader's processes, with its caps
    devices.py   the machine's GPUs: hidden from every process but a device worker
    forkcheck.py SEQGRADER_AUTOGRAD_FORK: every process checks its autograd across fork

The judge that drives them is `autograder/judge/`.  Importing this package imports none of them,
unless SEQGRADER_AUTOGRAD_FORK asks for forkcheck."""

import os as _os

if _os.environ.get("SEQGRADER_AUTOGRAD_FORK"):
    from . import forkcheck as _forkcheck

    _forkcheck.install()
