"""The catalogue of real mistakes: one YAML file per exercise, autograder/exercises/<exercise>/mistakes.yml,
shared by the tests of the tests, the diagnosis in feedback and the docs.

Each entry::

    - id: causal_mask_excludes_diagonal      # unique, snake_case
      function: causal_mask                  # the contract function it breaks
      title: {zh: ..., en: ...}              # the mistake in a few words
      explanation: {zh: ..., en: ...}        # why it is wrong, in the chapter's terms
      hint: {zh: ..., en: ...}               # what to change
      expect_failing: [causal_mask/past_and_present_allowed]   # tests that must fail (>= 1 of them)
      code: |                                # replaces the function(s) in the reference solution
        def causal_mask(T, device=None):
            ...

`code` is appended to the reference solution of the exercise (solutions/<exercise>.py of the course
being graded: `use_solutions`, set by grading.grade; the built-in course's otherwise), so it
may use anything defined there (e.g. ``class MultiHeadAttention(MultiHeadAttention)``).

Optional: ``diagnosis: false`` for a mistake the diagnosis' probes cannot see (it changes only
gradients, or shows only far outside the probes' small inputs): the diagnosis never names it (a
mistake identical to the reference on every probe would be "found" in every correct submission),
and the failing property's own feedback explains it; tests/test_diagnosis.py checks that nothing
is named for it.

Optional: ``group: {id, title, explanation, hint}`` for mistakes that behave exactly alike on
every input (e.g. ``scores * mask`` and a fill value of -1e-9): the diagnosis
(autograder/diagnose/) cannot tell them apart, so it names the group, whose text covers every
member.  Entries of a group share it (a YAML anchor).
"""

import shutil
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
EXERCISES = HERE.parent / "exercises"  # <exercise>/mistakes.yml: the folder's name is the exercise
SOLUTIONS = (HERE.parent / "default_course" / "solutions").resolve()  # the built-in course's (package data)
_current = None  # the graded course's solutions/ (use_solutions)


def use_solutions(folder):
    """Take the reference solutions of the course being graded from `folder` (this process and the
    judges it forks)."""
    global _current
    _current = Path(folder)


def reference_solution(exercise):
    """The reference solution's source file of `exercise` (of the course being graded); a missing one
    raises FileNotFoundError, which grading.grade has ruled out beforehand (Course.reference)."""
    path = (_current or SOLUTIONS) / f"{exercise}.py"
    if not path.is_file():
        raise FileNotFoundError(f"no reference solution {path}")
    return path


def load_catalogue(exercise=None):
    """[(exercise, entry dict)] in file order."""
    out = []
    for f in sorted(EXERCISES.glob("*/mistakes.yml")):
        if exercise and f.parent.name != exercise:
            continue
        # libyaml's safe loader where PyYAML has it: the same documents, ten times faster
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        for entry in yaml.load(f.read_text(encoding="utf-8"), Loader=loader) or []:
            out.append((f.parent.name, entry))
    return out


def build_submission(exercise, entry, dest, solutions=SOLUTIONS):
    """A full submission in `dest`: the reference solutions with `entry`'s mistake put in."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for f in Path(solutions).glob("*.py"):
        shutil.copy(f, dest / f.name)
    target = dest / f"{exercise}.py"
    target.write_text(
        target.read_text(encoding="utf-8") + "\n\n# --- catalogued mistake: " + entry["id"] + "\n" + entry["code"],
        encoding="utf-8",
    )
    return dest
