"""The package as an instructor installs it: the wheel built from this checkout, pip-installed into a
fresh virtualenv outside the checkout (conftest.installed), run from folders that are not the
checkout.  The built-in course travels in the wheel (autograder/default_course/), a course folder
made by `seqgrader init-course` is found with --course or from inside it, and what the grader needs
and cannot find is a clear error.
"""

import json
import subprocess
import zipfile

import yaml

from .conftest import ROOT

EXAMPLES = ROOT / "examples" / "submissions"
# bob.ipynb's classic mistakes that the diagnosis names (examples/make_examples.py); without the
# reference solutions at hand it used to name almost none of them, with no warning
BOB_NAMED = {"causal_mask_excludes_diagonal", "sdpa_softmax_over_queries", "lstm_gate_order_ifog"}


def seqgrader(installed, *args, cwd, check=True):
    proc = subprocess.run(
        [str(installed["bin"] / "seqgrader"), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=900
    )
    if check:
        assert proc.returncode == 0, f"{args}: {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def test_the_wheel_carries_the_course_and_no_builder_scripts(installed):
    wheel = installed["wheel"]
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        "autograder/default_course/course.yml",
        *(f"autograder/default_course/solutions/{p.name}" for p in (ROOT / "solutions").glob("*.py")),
        *(f"autograder/default_course/exercises/{p.name}" for p in (ROOT / "exercises").glob("*.ipynb")),
        *(p.relative_to(ROOT).as_posix() for p in (ROOT / "autograder" / "exercises").glob("*/mistakes.yml")),
        "autograder/nbgrader_course/kit_conftest.py",
        # every module of the package (a subpackage left out of pyproject's list is missing)
        *(
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / "autograder").rglob("*.py")
            if "default_course" not in p.parts
        ),
    }
    assert len(expected) > 25 and not expected - names, sorted(expected - names)
    with zipfile.ZipFile(wheel) as z:  # real copies, byte for byte, not links
        assert z.read("autograder/default_course/solutions/masks.py") == (ROOT / "solutions" / "masks.py").read_bytes()
        assert z.read("autograder/default_course/course.yml") == (ROOT / "course.yml").read_bytes()
        entry = next(n for n in names if n.endswith("entry_points.txt"))
        assert "seqgrader = autograder.cli:main" in z.read(entry).decode()
    # of exercises/ only the notebooks, not exercises/build.py (the notebooks' sources are modules of the
    # exercises' packages, autograder/exercises/<exercise>/notebook.py, hidden from the worker with the package)
    assert {n for n in names if n.startswith("autograder/default_course/exercises/")} == {
        f"autograder/default_course/exercises/{p.name}" for p in (ROOT / "exercises").glob("*.ipynb")
    }
    assert (ROOT / "exercises" / "build.py").exists()
    assert not [n for n in names if n.startswith("tests/") or n.endswith("exercises/build.py")]
    assert wheel.stat().st_size < 2_000_000, wheel.stat().st_size


def test_installed_grader_grades_the_examples_anywhere_with_its_diagnosis(installed):
    work = installed["place"] / "work"  # no course.yml here or above: the built-in course
    work.mkdir()
    where = subprocess.run(
        [str(installed["bin"] / "python"), "-c", "import autograder; print(autograder.__file__)"],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(installed["venv"])) and str(ROOT) not in where, where
    assert "init-course" in seqgrader(installed, "--help", cwd=work).stdout
    seqgrader(installed, "grade", EXAMPLES / "bob.ipynb", "--json", work / "bob.json", "-q", cwd=work)
    report = json.loads((work / "bob.json").read_text())
    named = {d["id"] for e in report["exercises"] for t in e["tests"] for d in t.get("diagnosis") or []}
    assert BOB_NAMED <= named, named
    assert 0 < report["score"] < 100 and report["max_score"] == 100


def test_a_course_folder_is_found_and_what_it_lacks_is_a_clear_error(installed):
    place = installed["place"]
    seqgrader(installed, "init-course", place / "mycourse", cwd=place)
    course = place / "mycourse"
    assert {p.name for p in (course / "solutions").iterdir()} == {p.name for p in (ROOT / "solutions").glob("*.py")}
    assert {p.name for p in (course / "exercises").iterdir()} == {p.name for p in (ROOT / "exercises").glob("*.ipynb")}
    data = yaml.safe_load((course / "course.yml").read_text(encoding="utf-8"))
    data["exercises"]["masks"]["tests"]["padding_mask/shape_and_dtype"]["points"] = 3  # masks: 21 points here
    (course / "course.yml").write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    out = place / "masks.json"
    seqgrader(
        installed,
        "grade",
        EXAMPLES / "alice.py",
        "--exercise",
        "masks",
        "--json",
        out,
        "-q",
        "--course",
        course,
        cwd=place,
    )
    report = json.loads(out.read_text())
    assert (report["score"], report["max_score"]) == (21, 21)
    # without --course, from inside the course folder: its course.yml (here: its missing reference is
    # an error, exit 2, saying what is missing -- never a weaker diagnosis)
    (course / "solutions" / "masks.py").unlink()
    inside = course / "submissions"
    inside.mkdir()
    proc = seqgrader(installed, "grade", EXAMPLES / "alice.py", "--exercise", "masks", cwd=inside, check=False)
    assert (
        proc.returncode == 2
        and "no reference solution for exercise 'masks'" in proc.stderr
        and str(course / "solutions" / "masks.py") in proc.stderr
    ), proc.stderr[-2000:]
    proc = seqgrader(installed, "grade", EXAMPLES / "alice.py", "--course", place / "nowhere", cwd=place, check=False)
    assert proc.returncode == 2 and "course not found" in proc.stderr, proc.stderr
    proc = seqgrader(installed, "init-course", course, cwd=place, check=False)
    assert proc.returncode == 2 and "already holds a course.yml" in proc.stderr
