"""What a CUDA build of torch does to autograd across fork, reproduced on any machine.

On a machine where CUDA is visible, the first backward pass of a process starts the autograd
engine's threads (one per GPU), and every child forked from that process afterwards fails its own
backward pass:

    RuntimeError: Unable to handle autograd's threading in combination with fork-based
    multiprocessing. See https://github.com/pytorch/pytorch/wiki/Autograd-and-Fork

A CPU build never does this, so a grader that runs a backward pass in a process that then forks
its workers grades correctly on a laptop and wrongly on a GPU server (devices.py).  With the
variable SEQGRADER_AUTOGRAD_FORK set, every process of the grader (grading process, judge, sandbox
server, zygote, worker) puts a check in front of the autograd engine at start-up:

    cuda     CUDA's rule: a process forked after its parent ran a backward pass cannot run one
    broken   every process that descends from the first one of the grader cannot run a backward
             pass (an environment where autograd is broken for the grader's children, whatever
             the grader does: it must refuse to grade, see selfcheck.py)

SEQGRADER_AUTOGRAD_FORK_LOG=FILE, in either mode: one line "ROLE PID" for each fork of a process
that had run a backward pass -- what would have broken its children on a GPU machine.  A process
says what it is with `role()` (grading, judge, server, zygote, recorder, worker); only a worker
runs the student's code, which may do as it likes.

`seqgrader self-check --simulate cuda|broken` runs the reference solutions that way.
"""

import os

MODE = "SEQGRADER_AUTOGRAD_FORK"
LOG = "SEQGRADER_AUTOGRAD_FORK_LOG"
ROOT = "SEQGRADER_AUTOGRAD_FORK_ROOT"  # the pid of the first process of the grader ("broken")
MODES = ("cuda", "broken")
MESSAGE = (
    "Unable to handle autograd's threading in combination with fork-based multiprocessing. "
    "See https://github.com/pytorch/pytorch/wiki/Autograd-and-Fork"
)

_role = "grading"
_ran = False  # this process has run a backward pass
_bad = False  # this process cannot run one
_installed = False


def role(name):
    """Say what this process is (for the log); costs nothing when the check is off."""
    global _role
    _role = name


class _Engine:
    """The autograd engine behind Variable._execution_engine, with the check in front."""

    def __init__(self, inner):
        self._inner = inner

    def run_backward(self, *args, **kwargs):
        global _ran
        if _bad:
            raise RuntimeError(MESSAGE)
        _ran = True
        return self._inner.run_backward(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _before_fork():
    path = os.environ.get(LOG)
    if _ran and path:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, f"{_role} {os.getpid()}\n".encode())
            finally:
                os.close(fd)
        except OSError:
            pass


def _in_child():
    global _bad
    if os.environ.get(MODE) == "broken" or _ran:
        _bad = True


def install():
    """Put the check in front of torch's autograd engine in this process (see the module's
    docstring); idempotent, and nothing without SEQGRADER_AUTOGRAD_FORK."""
    global _installed, _bad
    mode = os.environ.get(MODE)
    if _installed or mode not in MODES:
        return False
    _installed = True
    from torch.autograd.variable import Variable

    if not isinstance(Variable._execution_engine, _Engine):
        Variable._execution_engine = _Engine(Variable._execution_engine)
    root = os.environ.get(ROOT)
    if root is None:
        os.environ[ROOT] = str(os.getpid())
    elif mode == "broken" and root != str(os.getpid()):
        _bad = True  # started by a grader process (the sandbox server, a batch's grading process)
    os.register_at_fork(before=_before_fork, after_in_child=_in_child)
    return True
