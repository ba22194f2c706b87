"""One student's submission never changes another student's grade.

A class of correct, wrong and hostile submissions, generated from the repo's own catalogues (the
reference and the correct variants, every catalogued mistake of the masks exercise, every hostile
submission: the class grows with them), is graded

  * each submission alone, with `grade`;
  * with `grade-batch --workers 1`, in one order;
  * with `grade-batch --workers 2`, in the opposite order;
  * with `grade-batch --workers 1`, in the opposite order;

and every student's score, whether it was graded, and the status of every test are the same each
time.  The order is set by the names (grade-batch grades in the order of its students' names).
"""

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from autograder.catalogue import load_catalogue

from .conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")]

EXERCISE = "masks"


def _course(path):
    """The built-in course with short limits (the loops in the class cost seconds, not minutes)."""
    c = yaml.safe_load((ROOT / "course.yml").read_text(encoding="utf-8"))
    c["load_timeout"] = 3
    for ex in c["exercises"].values():
        ex["timeout"] = 40
        for t in ex["tests"].values():
            t["timeout"] = 3
    path.write_text(yaml.safe_dump(c), encoding="utf-8")
    return path


def the_class():
    """{name: (file name, bytes)}: the class, from the catalogues."""
    reference = (ROOT / "solutions" / f"{EXERCISE}.py").read_bytes()
    out = {"reference": ("masks.py", reference)}
    for alt in sorted((ROOT / "tests" / "files" / "correct").glob(f"alt*/{EXERCISE}.py")):
        out[f"correct-{alt.parent.name}"] = ("masks.py", alt.read_bytes())
    for _, entry in load_catalogue(EXERCISE):
        out[f"mistake-{entry['id']}"] = ("masks.py", reference + f"\n\n# --- {entry['id']}\n{entry['code']}\n".encode())
    for f in sorted((ROOT / "tests" / "files" / "hostile").iterdir()):
        if f.suffix in (".py", ".ipynb"):
            out[f"hostile-{f.stem}"] = (f"masks{f.suffix}", f.read_bytes())
    # an honest classmate whose code is what the hostile name_main.py shows (its trick cut off):
    # graded alike only if the two are graded apart
    twin = (ROOT / "tests" / "files" / "hostile" / "name_main.py").read_bytes().split(b'\n__name__ = "__main__"')[0]
    out["correct-twin-of-name_main"] = ("masks.py", twin + b"\n")
    return out


def _outcome(report):
    """What must not depend on the class: the score, whether it was graded, every test's status."""
    return (
        report["score"],
        report.get("graded", True),
        tuple((t["name"], t["status"]) for e in report["exercises"] for t in e["tests"]),
    )


def _write(folder, names, klass):
    """Each student as a folder of their own, named so that grade-batch takes them in `names`' order."""
    folder.mkdir()
    ids = {}
    for i, name in enumerate(names):
        student = f"s{i:03d}-{name}"
        (folder / student).mkdir()
        file_name, data = klass[name]
        (folder / student / file_name).write_bytes(data)
        ids[student] = name
    return ids


def _batch(tmp_path, label, names, klass, course, workers):
    folder = tmp_path / label
    ids = _write(folder, names, klass)
    out = tmp_path / f"{label}-grades"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade-batch",
            str(folder),
            "--layout",
            "flat",
            "--out",
            str(out),
            "--course",
            str(course),
            "--exercise",
            EXERCISE,
            "--max-examples",
            "10",
            "--workers",
            str(workers),
            "-q",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {ids[p.stem]: _outcome(json.loads(p.read_text(encoding="utf-8"))) for p in (out / "reports").glob("*.json")}


def _alone(tmp_path, name, klass, course):
    folder = tmp_path / "alone" / name
    folder.mkdir(parents=True)
    file_name, data = klass[name]
    (folder / file_name).write_bytes(data)
    out = folder.parent / f"{name}.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(folder),
            "--json",
            str(out),
            "--course",
            str(course),
            "--exercise",
            EXERCISE,
            "--max-examples",
            "10",
            "-q",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, (name, proc.stderr[-2000:])
    return _outcome(json.loads(out.read_text(encoding="utf-8")))


def test_every_student_gets_the_same_grade_alone_in_any_order_and_on_any_number_of_workers(tmp_path):
    klass = the_class()
    course = _course(tmp_path / "course.yml")
    names = sorted(klass)
    assert len(names) >= 60 and any(n.startswith("hostile-") for n in names)
    with ThreadPoolExecutor(2) as pool:
        alone = dict(zip(names, pool.map(lambda n: _alone(tmp_path, n, klass, course), names)))
    runs = {
        "alone": alone,
        "in order, 1 process": _batch(tmp_path, "forward-1", names, klass, course, 1),
        "in the opposite order, 2 processes": _batch(tmp_path, "backward-2", names[::-1], klass, course, 2),
        "in the opposite order, 1 process": _batch(tmp_path, "backward-1", names[::-1], klass, course, 1),
    }
    for label, got in runs.items():
        assert set(got) == set(names), (label, sorted(set(names) ^ set(got)))
        differ = {n: (alone[n], got[n]) for n in names if got[n] != alone[n]}
        assert not differ, f"graded {label}, these students' grades differ from their grade alone: {differ}"
    # the class is what it says: the reference gets full marks, every catalogued mistake loses points
    assert alone["reference"][0] == 20 and all(alone[n][0] == 20 for n in names if n.startswith("correct-"))
    assert all(alone[n][0] < 20 for n in names if n.startswith("mistake-"))
