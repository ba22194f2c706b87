"""Results are data: a test's result, an exercise's, the whole report.  Renderers live beside."""
from dataclasses import asdict, dataclass, field


@dataclass
class TestResult:
    __test__ = False
    name: str  # "exercise/function/property", as in the contract
    function: str
    score: float
    max_score: float
    passed: bool
    feedback: str
    status: str = "passed"  # passed | failed | missing | error | timeout
    property_zh: str = ""
    property_en: str = ""
    message_zh: str = ""
    message_en: str = ""
    details: list = field(default_factory=list)  # [[label, text]]: the counterexample
    hint_zh: str = ""
    hint_en: str = ""
    seconds: float = 0.0
    # structured counterexample for renderers (pictures): {"inputs": {name: nested list},
    # "expected": nested list, "got": nested list, "kind": "mask" | "weights" | "encoding" | ...}
    counterexample: dict = field(default_factory=dict)
    # catalogued mistakes this failure matches (autograder/diagnose.py): [{"id", "title_zh",
    # "title_en", "explanation_zh", "explanation_en", "hint_zh", "hint_en"}]; empty = no match
    diagnosis: list = field(default_factory=list)


@dataclass
class ExerciseResult:
    id: str
    score: float
    max_score: float
    tests: list
    load_errors: list = field(default_factory=list)


@dataclass
class Report:
    submission: str
    score: float
    max_score: float
    exercises: list
    errors: list = field(default_factory=list)
    seconds: float = 0.0
    sandbox: str = ""  # the isolation level in force while the student's code ran

    def to_dict(self):
        return asdict(self)
