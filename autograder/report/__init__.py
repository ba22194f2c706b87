from .model import ExerciseResult, Report, TestResult  # noqa: F401
