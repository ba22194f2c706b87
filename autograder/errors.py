"""One exception hierarchy for the grader.

    GraderError                      the grader itself cannot go on (exit code 2)
    ├── ConfigError                  course.yml is missing, malformed or disagrees with the properties
    ├── SubmissionNotFound           the SUBMISSION path does not exist or holds no .py/.ipynb
    └── GraderEnvironmentError       the reference solutions lose points here (selfcheck.py): whatever
                                     fails is the grader's, so nobody is graded

    PropertyFailure (Exception)      a property does not hold for the student's code (raised by checks)
    ├── StudentCrash                 the student's function raised; carries the filtered traceback
    └── MissingFunction              the function is not defined in the submission

    TestTimeout (BaseException)      the per-test alarm fired; a BaseException so that neither
                                     hypothesis nor a student's `except Exception` swallows it
"""


class GraderError(Exception):
    """The grader cannot produce a report."""


class ConfigError(GraderError):
    pass


class SubmissionNotFound(GraderError):
    pass


class GraderEnvironmentError(GraderError):
    """`lost`: [{test, status, message, exception}] of the reference's tests that did not pass."""

    def __init__(self, message, lost=()):
        super().__init__(message)
        self.lost = list(lost)


class PropertyFailure(Exception):
    """A property failed; `zh`/`en` explain why, `details` holds counterexample lines."""

    def __init__(self, zh, en, details=(), hint_zh="", hint_en="", kind="failed", counterexample=None):
        super().__init__(en)
        self.counterexample = dict(counterexample or {})  # structured, for pictures (report/model.py)
        self.zh, self.en = zh, en
        self.details = list(details)  # [(label, text)]
        self.hint_zh, self.hint_en = hint_zh, hint_en
        self.kind = kind


class StudentCrash(PropertyFailure):
    pass


class MissingFunction(PropertyFailure):
    pass


class TestTimeout(BaseException):
    __test__ = False  # not a pytest test class
