"""course.yml: 100 points, every property listed once, clear errors for a broken file."""

import pytest

from autograder import EXERCISES
from autograder.config import load_course
from autograder.errors import ConfigError
from autograder.plan import check_course


def test_course_has_every_exercise_and_100_points():
    course = load_course()
    assert course.assignment() == list(EXERCISES)  # the default assignment: the five core exercises
    for name in course.assignment_names():  # each assignment is worth 100 points, hand-graded ones included
        assert (
            sum(course.exercises[e].max_score + course.exercises[e].manual_score for e in course.assignment(name))
            == 100
        ), name
    assert set(course.exercises) == {e for n in course.assignment_names() for e in course.assignment(n)}
    for ex in course.exercises.values():
        assert ex.timeout > 0 and all(t.timeout > 0 and t.points > 0 for t in ex.tests.values())


def test_course_and_properties_name_the_same_tests():
    registry = check_course(load_course())
    assert set(registry) == {f"{e}/{t}" for e, c in load_course().exercises.items() for t in c.tests}
    for full, p in registry.items():
        assert full.split("/")[1] == p.function and p.zh and p.en


def test_broken_course_files_are_clear_errors(tmp_path):
    bad = tmp_path / "c.yml"
    bad.write_text("exercises: {masks: {tests: {x: {points: -1}}}}")
    with pytest.raises(ConfigError, match="points"):
        load_course(bad)
    bad.write_text("exercises: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_course(bad)
    bad.write_text("exercises: {masks: {manual: {essay: 0}, tests: {x: {points: 1}}}}")
    with pytest.raises(ConfigError, match="manual points must be > 0"):
        load_course(bad)
    with pytest.raises(ConfigError, match="not found"):
        load_course(tmp_path / "missing.yml")
    bad.write_text("exercises: {masks: {tests: {nonexistent/test: {points: 1}}}}")
    with pytest.raises(ConfigError, match="no property implements"):
        check_course(load_course(bad))
