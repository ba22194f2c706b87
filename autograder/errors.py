"""One exception hierarchy for the grader.

GraderError                      the grader itself cannot go on (exit code 2)
├── ConfigError                  course.yml is missing, malformed or disagrees with the properties
├── SubmissionNotFound           the SUBMISSION path does not exist or holds no .py/.ipynb
└── GraderEnvironmentError       the reference solutions lose points here (selfcheck.py): whatever
    │                            fails is the grader's, so nobody is graded
    └── WeakSandboxError         the sandbox here misses a guarantee (sandbox/limits.missing) and
                                 --allow-weak-sandbox was not given: no student code runs

PropertyFailure (Exception)      a property does not hold for the student's code (raised by checks)
├── StudentCrash                 the student's function raised; carries the filtered traceback
└── MissingFunction              the function is not defined in the submission

TestTimeout (BaseException)      the per-test alarm fired; a BaseException so that neither
                                 hypothesis nor a student's `except Exception` swallows it

ServiceError (Exception)         an answer of `seqgrader serve` other than a success: the HTTP
│                                status, a code, and what to do in Chinese and English (the
│                                service turns it into {"error", "message"})
└── NotSignedIn                  nobody signed in: 401 for the API, the sign-in page for a browser
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


class WeakSandboxError(GraderEnvironmentError):
    """No student code runs where the sandbox misses a guarantee, unless the instructor allowed it."""

    def __init__(self, why):
        super().__init__(
            f"Refusing to grade: {why}. Nothing was graded. Run where the kernel allows a mount "
            f"namespace or Landlock (see docs/security.md), or pass --allow-weak-sandbox to grade "
            f"anyway (every report then says so at its top)."
        )


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


class ServiceError(Exception):
    """`status` (HTTP), `code` (the JSON's "error"), `zh` / `en` (its "message"), extra `headers`."""

    def __init__(self, status, code, zh, en, headers=None):
        super().__init__(en)
        self.status, self.code, self.zh, self.en = status, code, zh, en
        self.headers = dict(headers or {})

    @property
    def message(self):
        """The message in both languages, "zh / en"."""
        return f"{self.zh} / {self.en}"


class NotSignedIn(ServiceError):
    def __init__(self):
        super().__init__(
            401,
            "not_signed_in",
            "请先登录：在请求头中附上 Authorization: Bearer 令牌，或在登录页输入令牌。",
            "Sign in first: send the header Authorization: Bearer YOUR_TOKEN, or enter your token on the sign-in page.",
            {"WWW-Authenticate": "Bearer"},
        )
