"""The one typed configuration: defaults < course.yml < command-line flags.

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
"""
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from .errors import ConfigError

DEFAULT_COURSE = Path(__file__).resolve().parent.parent / "course.yml"


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
        return sum(self.manual.values())


class Course(BaseModel):
    model_config = ConfigDict(extra="forbid")
    language: Literal["zh", "en", "both"] = "both"
    max_examples: int = Field(default=20, ge=1)
    load_timeout: float = Field(default=20.0, gt=0)
    assignments: dict[str, list[str]] = Field(default_factory=dict)
    exercises: dict[str, ExerciseConfig]
    _source: str | None = PrivateAttr(default=None)  # the course.yml it was read from

    @property
    def source(self):
        """The course.yml this configuration was read from (None when built in code)."""
        return self._source

    @model_validator(mode="after")
    def _known_exercises(self):
        for name, ids in self.assignments.items():
            unknown = [i for i in ids if i not in self.exercises]
            if unknown:
                raise ValueError(f"assignment {name!r} lists unknown exercises {unknown}")
            if not ids:
                raise ValueError(f"assignment {name!r} lists no exercise")
        return self

    @property
    def max_score(self):
        return sum(e.max_score for e in self.exercises.values())

    def assignment_names(self):
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


def load_course(path=None, **overrides):
    """Read course.yml (default: the one next to the package) and apply flag overrides."""
    path = Path(path) if path else DEFAULT_COURSE
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
