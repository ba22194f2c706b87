"""A plan run: the tests of a course ({exercise: [test names]}) on one submission, through a runner.

The step both grading a student (grading.py) and checking the reference solutions (selfcheck.py)
stand on: the course and the registered properties agree, the submission is found, the runner runs
the tests and returns their raw outcomes."""

from .errors import ConfigError
from .properties import load_all
from .properties._harness import grading_profile


def check_course(course, exercises=None):
    """course.yml and the registered properties must name exactly the same tests."""
    registry = load_all()
    ids = set(exercises or course.exercises)
    listed = {f"{ex}/{name}" for ex, cfg in course.exercises.items() if ex in ids for name in cfg.tests}
    known = {n for n in registry if n.split("/", 1)[0] in ids}
    if listed - known:
        raise ConfigError(f"course.yml lists tests that no property implements: {sorted(listed - known)}")
    if known - listed:
        raise ConfigError(f"properties missing from course.yml (no points): {sorted(known - listed)}")
    return registry


def run_plan(path, course, runner, plan, progress=None):
    """(the property registry, the runner's raw outcomes {exercise: {"tests", "load_errors", ...}})
    of the tests of `plan` ({exercise: [test names]}) on the submission at `path`."""
    from .load import find_files

    known_exercises(course, plan)
    grading_profile(course.max_examples)  # before the property modules are imported: @given keeps it
    registry = check_course(course, list(plan))
    for ex in plan:  # the diagnosis compares with the course's reference: missing is an error
        course.reference(ex)
    from .catalogue import use_solutions

    use_solutions(course.solutions_dir)
    find_files(path)  # raises SubmissionNotFound early, with a clear message
    if hasattr(runner, "run_many"):
        raw = runner.run_many(str(path), plan, progress=progress)
    else:
        raw = {ex: runner.run(str(path), ex, tests, progress=progress) for ex, tests in plan.items()}
    return registry, raw


def known_exercises(course, ids):
    """Raise ConfigError, naming the course's exercises, for an id course.yml does not have."""
    for ex in ids:
        if ex not in course.exercises:
            raise ConfigError(f"unknown exercise {ex!r}; course.yml has {list(course.exercises)}")
