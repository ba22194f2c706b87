"""Running student code: the judge's runners (runner.py), the worker (worker.py), the sandbox
server every worker descends from (server.py), the limits and filesystem view (limits.py) and
the wire format (protocol.py).  Importing this package imports none of them: the sandbox server
imports only what a worker needs."""


def __getattr__(name):
    if name in ("ForkRunner", "InProcessRunner"):
        from . import runner
        return getattr(runner, name)
    raise AttributeError(name)
