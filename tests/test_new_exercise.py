"""A new exercise added the way docs/authors.md says ("A worked example: clip_grad"), end to end.

The `autograder` package and the course files (course.yml, solutions/, exercises/) are copied into
a folder of their own; the exercise's folder autograder/exercises/clip_grad/ is written from the
code blocks of docs/authors.md (each names its file on its first line) and its course.yml entries
are added where authors.md puts them; exercises/build.py builds the notebook and links the
reference; then `python -m autograder grade`, with PYTHONPATH set to the copy, gives the reference
full marks and catches the catalogued mistake with the property it names, and the diagnosis names
the mistake.  Nothing of this repository is changed.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from .conftest import ROOT

AUTHORS = ROOT / "docs" / "authors.md"
EX = "clip_grad"
FOLDER = f"autograder/exercises/{EX}/"
FILES = ("__init__.py", "solution.py", "properties.py", "probes.py", "mistakes.yml", "notebook.py")
TESTS = ("clip_by_norm/keeps_small_gradients", "clip_by_norm/caps_the_norm", "clip_by_norm/keeps_the_direction")


def authors_blocks():
    """{the path on a code block's first line: the rest of the block} for docs/authors.md's blocks
    that name a file of the worked example (the exercise's folder, or course.yml)."""
    out = {}
    for body in re.findall(r"```\w*\n(.*?)```", AUTHORS.read_text(encoding="utf-8"), re.S):
        first, _, rest = body.partition("\n")
        if first.startswith(("# " + FOLDER, "# course.yml")):
            out[first[2:]] = rest
    return out


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """The repository's package and course, copied, with the clip_grad exercise added and built:
    {"root", "work" (a folder outside it), "env", "build" (the builder's output)}."""
    root = tmp_path_factory.mktemp("course")
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("autograder", "solutions", "exercises"):
        # links kept: autograder/default_course/ links to the course files, solutions/*.py to the
        # exercises' folders
        shutil.copytree(ROOT / name, root / name, symlinks=True, ignore=ignore)
    shutil.copy(ROOT / "course.yml", root / "course.yml")
    blocks = authors_blocks()
    folder = root / FOLDER
    folder.mkdir()
    for name in FILES:
        (folder / name).write_text(blocks[FOLDER + name], encoding="utf-8")
    text = (root / "course.yml").read_text(encoding="utf-8")
    # the assignment, last under `assignments:`; the exercise, last under `exercises:`
    at = text.index("\nexercises:")
    text = text[:at] + "\n" + blocks["course.yml, under assignments:"].rstrip("\n") + text[at:]
    at = text.index("\nservice:")
    text = text[:at] + "\n" + blocks["course.yml, under exercises:"].rstrip("\n") + text[at:]
    (root / "course.yml").write_text(text, encoding="utf-8")
    build = subprocess.run(
        [sys.executable, "exercises/build.py"], cwd=root, capture_output=True, text=True, timeout=300
    )
    work = tmp_path_factory.mktemp("work")  # a submission lives outside the course
    env = {**os.environ, "PYTHONPATH": str(root), "SEQGRADER_CACHE_DIR": str(work / "cache")}
    return {"root": root, "work": work, "env": env, "build": build}


def grade(copy, name, text):
    """`python -m autograder grade` of a one-file submission holding `text`, in the copy: the JSON report."""
    sub = copy["work"] / f"{name}.py"
    sub.write_text(text, encoding="utf-8")
    out = copy["work"] / f"{name}.json"
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(sub), "--exercise", EX, "--json", str(out), "-q"],
        cwd=copy["work"],
        env=copy["env"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    return {t["name"].split("/", 1)[1]: t for e in report["exercises"] for t in e["tests"]}, report


def test_authors_md_holds_every_file_of_the_example():
    blocks = authors_blocks()
    assert sorted(blocks) == sorted(
        [FOLDER + n for n in FILES] + ["course.yml, under assignments:", "course.yml, under exercises:"]
    )
    assert not (ROOT / FOLDER).exists()  # the example lives in the docs and in the copy only


def test_the_builder_writes_the_notebook_and_links_the_reference(copy):
    root, build = copy["root"], copy["build"]
    assert build.returncode == 0, build.stdout + build.stderr
    assert f"wrote {root / 'exercises' / f'{EX}.ipynb'}" in build.stdout
    link = root / "solutions" / f"{EX}.py"
    assert link.is_symlink() and os.readlink(link) == f"../{FOLDER}solution.py"
    assert link.read_text(encoding="utf-8") == (root / FOLDER / "solution.py").read_text(encoding="utf-8")
    nb = json.loads((root / "exercises" / f"{EX}.ipynb").read_text(encoding="utf-8"))
    stub = next(c for c in nb["cells"] if c["id"] == "clip_by_norm")
    assert 'raise NotImplementedError("clip_by_norm")' in "".join(stub["source"])
    # the built-in exercises' notebooks and links are left as they were
    for p in (ROOT / "exercises").glob("*.ipynb"):
        assert (root / "exercises" / p.name).read_bytes() == p.read_bytes(), p.name
    check = subprocess.run(
        [sys.executable, "exercises/build.py", "--check"], cwd=root, capture_output=True, text=True, timeout=300
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_copy_registers_the_exercise_everywhere(copy):
    code = (
        "import json\n"
        "from autograder.catalogue import load_catalogue\n"
        "from autograder.diagnose import PROBES\n"
        "from autograder.properties import load_all\n"
        f"print(json.dumps([sorted(n for n in load_all() if n.startswith('{EX}/')), sorted(PROBES['{EX}']),\n"
        f"                  [e['id'] for _, e in load_catalogue('{EX}')]]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=copy["work"], env=copy["env"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    registered, probed, mistakes = json.loads(proc.stdout)
    assert registered == sorted(f"{EX}/{t}" for t in TESTS)
    assert probed == ["clip_by_norm"] and mistakes == ["clip_rescales_every_gradient"]


def test_the_reference_gets_full_marks(copy):
    reference = (copy["root"] / FOLDER / "solution.py").read_text(encoding="utf-8")
    tests, report = grade(copy, "reference", reference)
    assert sorted(tests) == sorted(TESTS)
    assert all(t["status"] == "passed" for t in tests.values()), tests
    assert report["score"] == report["max_score"] == 100


def test_the_catalogued_mistake_is_caught_by_its_property_and_named(copy):
    root = copy["root"]
    (entry,) = yaml.safe_load((root / FOLDER / "mistakes.yml").read_text(encoding="utf-8"))
    reference = (root / FOLDER / "solution.py").read_text(encoding="utf-8")
    tests, report = grade(copy, "mistake", reference + "\n\n" + entry["code"])
    failing = sorted(n for n, t in tests.items() if t["status"] != "passed")
    assert failing == entry["expect_failing"] == ["clip_by_norm/keeps_small_gradients"], tests
    named = [d["id"] for d in tests["clip_by_norm/keeps_small_gradients"].get("diagnosis") or []]
    assert named == ["clip_rescales_every_gradient"], named
    assert report["score"] == 60 and report["max_score"] == 100
