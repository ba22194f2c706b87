"""The judge: the trusted side that grades a submission through sandboxed workers.

    runner.py   ForkRunner: a judge process per exercise (and per restart) with its time limits,
                the tests one by one, the diagnosis; InProcessRunner for the grader's own tests
    remote.py   RemoteStudent: the student's functions as the properties see them, called in a
                worker (sandbox/), every answer checked here: the verdict never leaves the judge

Importing this package imports neither (the sandbox server must not hold the judge)."""


def __getattr__(name):
    if name in ("ForkRunner", "InProcessRunner"):
        from . import runner

        return getattr(runner, name)
    raise AttributeError(name)
