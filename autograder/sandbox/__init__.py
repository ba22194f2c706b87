"""Running student code: the judge's runners (runner.py), the worker (worker.py), the sandbox
server every worker descends from (server.py), the limits and filesystem view (limits.py), the
wire format (protocol.py), the machine's GPUs (devices.py) and the device the device sentences are
checked on (elsewhere.py).  Importing this package imports none of them (the sandbox server
imports only what a worker needs), unless SEQGRADER_AUTOGRAD_FORK asks every process of the grader
to check its autograd across fork (forkcheck.py)."""
import os as _os

if _os.environ.get("SEQGRADER_AUTOGRAD_FORK"):
    from . import forkcheck as _forkcheck

    _forkcheck.install()


def __getattr__(name):
    if name in ("ForkRunner", "InProcessRunner"):
        from . import runner
        return getattr(runner, name)
    raise AttributeError(name)
