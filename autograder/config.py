"""The one typed configuration: defaults < course.yml < command-line flags.

A course is a folder: course.yml, solutions/ (the reference solutions, <exercise>.py) and
exercises/ (the student notebooks, <exercise>.ipynb); `seqgrader init-course DIR` writes one, a
copy of the built-in course (autograder/default_course/, package data).  `--course` takes the
folder or its course.yml; without it, the nearest course.yml in the working directory or above it,
else the built-in course (`find_course`).  A course folder without a solutions/ (or exercises/)
folder uses the built-in one, which always matches the properties of this package; a solutions/
folder that lacks an exercise's file is an error (`Course.reference`), never a weaker diagnosis.

course.yml keys
---------------
language       feedback language: ``zh``, ``en`` or ``both`` (default both)
max_examples   hypothesis examples per property, on top of the pinned @examples (default 20)
load_timeout   seconds allowed to load (import) a submission (default 20)
assignments    mapping assignment name -> list of exercise ids (what one nbgrader assignment holds
               and what `grade --assignment NAME` grades); the first is the default.  Without
               it, one assignment "all" holds every exercise.
exercises      mapping exercise id -> {timeout, tests}
  timeout      seconds for all tests of the exercise together (default 60)
  manual       mapping answer-cell id -> points graded by hand in nbgrader (default none): the
               notebook's manually graded answer cell of that id (e.g. a written analysis) gets
               these points in the nbgrader course; `grade` does not score it
  tests        mapping "function/property" -> {points, timeout}
    points     points for passing the test (an assignment's tests and manual points
               together: 100)
    timeout    seconds for this test (default 10)
service        mapping assignment name -> the rules of `seqgrader serve` for it (default: none, so
               unlimited attempts, no deadline, full feedback); see docs/service.md
  attempts     graded submissions allowed per window (default: no limit); a submission that ends
               "not graded" (a corrupt notebook, a grader failure) gives its attempt back
  window       the period the attempts are counted over, a duration such as "24h", "90m", "7d" or
               "1h30m" (default: the whole course, so `attempts` is a total)
  deadline     ISO-8601 date and time with its timezone ("2026-12-20T23:59:00+08:00"): no
               submission is accepted after it (default: none)
  feedback     what a student sees of a graded submission: ``full`` (everything `grade` shows:
               score, failing properties, counterexamples, diagnosis; the default) or ``score``
               (the score of each test, and nothing of why)
  hide_counterexamples   test names ("padding_mask/marks_real_tokens", or with the exercise in
               front, "masks/padding_mask/marks_real_tokens") whose counterexamples (inputs,
               expected and actual values, the probing call) are removed from every page and
               JSON answer of the service; the verdict, the score and the named mistake stay
"""

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from .errors import ConfigError

BUILTIN = Path(__file__).resolve().parent / "default_course"  # package data (links to the checkout's files)
DEFAULT_COURSE = BUILTIN / "course.yml"


class TestConfig(BaseModel):
    __test__ = False
    model_config = ConfigDict(extra="forbid")
    points: float = Field(ge=0)
    timeout: float = Field(default=10.0, gt=0)


class ExerciseConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    timeout: float = Field(default=60.0, gt=0)
    manual: dict[str, float] = Field(default_factory=dict)
    tests: dict[str, TestConfig]

    @model_validator(mode="after")
    def _manual_points(self):
        bad = {k: v for k, v in self.manual.items() if not v > 0}
        if bad:
            raise ValueError(f"manual points must be > 0, got {bad}")
        return self

    @property
    def max_score(self):
        """The autograded points (what `grade` reports); `manual_score` is graded by hand."""
        return sum(t.points for t in self.tests.values())

    @property
    def manual_score(self):
        """The points graded by hand (course.yml's `manual:`), not part of `max_score`."""
        return sum(self.manual.values())


DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


def parse_duration(text):
    """A timedelta from "24h", "90m", "7d", "1h30m", "45s" (or a number of seconds)."""
    if isinstance(text, (int, float)):
        return timedelta(seconds=float(text))
    m = DURATION.fullmatch(str(text).strip())
    if not str(text).strip() or m is None:
        raise ValueError(f"{text!r} is not a duration: write it as 24h, 90m, 7d or 1h30m")
    d, h, mi, s = (int(x or 0) for x in m.groups())
    out = timedelta(days=d, hours=h, minutes=mi, seconds=s)
    if out <= timedelta(0):
        raise ValueError(f"{text!r}: a window must be longer than nothing")
    return out


class ServiceRules(BaseModel):
    """The rules of `seqgrader serve` for one assignment (course.yml ``service:``)."""

    model_config = ConfigDict(extra="forbid")
    attempts: int | None = Field(default=None, ge=1)
    window: str | None = None
    deadline: datetime | None = None
    feedback: Literal["full", "score"] = "full"
    hide_counterexamples: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _checked(self):
        if self.window is not None:
            parse_duration(self.window)
        if self.deadline is not None and self.deadline.tzinfo is None:
            raise ValueError(
                f"deadline {self.deadline.isoformat()} has no timezone: write it as "
                f"2026-12-20T23:59:00+08:00 (or ...Z for UTC)"
            )
        return self

    @property
    def window_length(self):
        """The window as a timedelta, or None (the attempts are a total)."""
        return parse_duration(self.window) if self.window is not None else None


class Course(BaseModel):
    model_config = ConfigDict(extra="forbid")
    language: Literal["zh", "en", "both"] = "both"
    max_examples: int = Field(default=20, ge=1)
    load_timeout: float = Field(default=20.0, gt=0)
    assignments: dict[str, list[str]] = Field(default_factory=dict)
    exercises: dict[str, ExerciseConfig]
    service: dict[str, ServiceRules] = Field(default_factory=dict)
    _source: str | None = PrivateAttr(default=None)  # the course.yml it was read from

    @property
    def source(self):
        """The course.yml this configuration was read from (None when built in code)."""
        return self._source

    @property
    def root(self):
        """The course folder (the one holding course.yml); the built-in course when built in code."""
        return Path(self._source).parent if self._source else BUILTIN

    @property
    def solutions_dir(self):
        """The reference solutions: the course's solutions/, else the built-in ones."""
        return _course_part(self.root, "solutions")

    @property
    def exercises_dir(self):
        """The student notebooks: the course's exercises/, else the built-in ones."""
        return _course_part(self.root, "exercises")

    def reference(self, exercise):
        """solutions/<exercise>.py of this course; a ConfigError when it is missing (the diagnosis
        and the nbgrader course need it)."""
        path = self.solutions_dir / f"{exercise}.py"
        if not path.is_file():
            raise ConfigError(
                f"no reference solution for exercise {exercise!r}: {path} is missing (the diagnosis "
                f"and the nbgrader course need it; `seqgrader init-course DIR` writes a complete course)"
            )
        return path

    @model_validator(mode="after")
    def _known_exercises(self):
        for name, ids in self.assignments.items():
            unknown = [i for i in ids if i not in self.exercises]
            if unknown:
                raise ValueError(f"assignment {name!r} lists unknown exercises {unknown}")
            if not ids:
                raise ValueError(f"assignment {name!r} lists no exercise")
        names = list(self.assignments) or ["all"]
        for name, rules in self.service.items():
            if name not in names:
                raise ValueError(f"service: unknown assignment {name!r}; course.yml has {names}")
            ids = self.assignments.get(name) or list(self.exercises)
            tests = {f"{ex}/{t}" for ex in ids for t in self.exercises[ex].tests}
            unknown = [
                t for t in rules.hide_counterexamples if t not in tests and not any(f"{ex}/{t}" in tests for ex in ids)
            ]
            if unknown:
                raise ValueError(
                    f"service: {name}: hide_counterexamples names tests the assignment does not have: {unknown}"
                )
        return self

    def rules(self, assignment):
        """The service's rules for `assignment` (course.yml ``service:``; defaults where it has none)."""
        return self.service.get(assignment) or ServiceRules()

    @property
    def max_score(self):
        """The autograded points of every exercise of the course."""
        return sum(e.max_score for e in self.exercises.values())

    def assignment_names(self):
        """The assignments' names in course.yml's order, or ["all"] when it defines none."""
        return list(self.assignments) or ["all"]

    def assignment(self, name=None):
        """The exercise ids of assignment `name` (default: the first one)."""
        if not self.assignments:
            if name not in (None, "all"):
                raise ConfigError(f"unknown assignment {name!r}; course.yml defines none (use 'all')")
            return list(self.exercises)
        if name is None:
            return list(next(iter(self.assignments.values())))
        if name not in self.assignments:
            raise ConfigError(f"unknown assignment {name!r}; course.yml has {list(self.assignments)}")
        return list(self.assignments[name])


def _course_part(root, name):
    own = Path(root) / name
    if own.is_dir():
        return own.resolve()  # a submission-like folder: the loader follows no link
    builtin = (BUILTIN / name).resolve()
    if not builtin.is_dir():
        raise ConfigError(
            f"the course {root} has no {name}/ folder and the built-in one is missing from this "
            f"installation ({builtin}): reinstall seqgrader, or add {own}"
        )
    return builtin


def find_course(arg=None, cwd=None):
    """The course.yml to use: `arg` (a course folder or a .yml file), else the nearest course.yml in
    `cwd` (default: the working directory) or a folder above it, else the built-in course."""
    if arg:
        p = Path(arg)
        if p.is_dir():
            if not (p / "course.yml").is_file():
                raise ConfigError(
                    f"{p} is not a course folder: it has no course.yml (`seqgrader init-course {p}` writes one)"
                )
            return p / "course.yml"
        if not p.is_file():
            raise ConfigError(f"course not found: {p} (give a course folder or its course.yml)")
        return p
    here = Path(cwd or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "course.yml").is_file():
            return d / "course.yml"
    if not DEFAULT_COURSE.is_file():
        raise ConfigError(
            f"no course.yml in {here} or above it, and the built-in course is missing from this "
            f"installation ({DEFAULT_COURSE}): give --course DIR, or reinstall seqgrader"
        )
    return DEFAULT_COURSE


def load_course(path=None, **overrides):
    """Read a course (a folder or its course.yml; default: `find_course()`) and apply flag overrides."""
    path = find_course(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(f"course file not found: {path}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path} is not valid YAML: {e}") from None
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        course = Course.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"{path}: {e}") from None
    course._source = str(path.resolve())
    return course
