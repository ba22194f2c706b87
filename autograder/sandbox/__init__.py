"""Running student code where it can do no harm, each file one concern:

    server.py    the sandbox server (holds nothing of the grader's) and its zygotes, which fork
                 the workers
    worker.py    the untrusted side: confines itself, runs the submission, answers requests
    limits.py    what a worker is given: its view (view_rules: a new root, or Landlock), its
                 identity, cgroups and the killing of what it leaves, its resource limits; what
                 the judge checks of it (verify, missing)
    kernel.py    Landlock and seccomp, as the kernel offers them
    protocol.py  the one wire format between a judge and a worker, with its caps
    devices.py   the machine's GPUs: hidden from every process but a device worker
    forkcheck.py SEQGRADER_AUTOGRAD_FORK: every process checks its autograd across fork

The judge that drives them is `autograder/judge/`.  Importing this package imports none of them,
unless SEQGRADER_AUTOGRAD_FORK asks for forkcheck."""
import os as _os

if _os.environ.get("SEQGRADER_AUTOGRAD_FORK"):
    from . import forkcheck as _forkcheck

    _forkcheck.install()
