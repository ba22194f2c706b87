"""What a submission's bytes can do to the trusted processes and to the people who read the results.

* Memory: a notebook of 60 MiB made of tiny JSON objects, a file of a few MiB of list literal, code
  just under the loader's cap, and a worker that claims its module holds 8192 x 8192 layers: the
  judges and the grading process stay within a fixed margin of what they hold for the reference
  (the reports' `judge_peak_mib` and `grader_peak_mib`), and each submission gets a clear reason.
* A class whose files are named to hurt (not UTF-8, terminal escapes, a spreadsheet formula, 250
  bytes of CJK): every student gets a row and a report, grade-batch exits 0, and no control
  character or live formula reaches the terminal, the log or grades.csv.
"""

import csv
import json
import os
import re
import subprocess
import sys

import pytest

from .conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")]

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # all but \t and \n
MARGIN_MIB = 150  # what a hostile submission may add to a trusted process's peak over the reference's

CLAIMS = """
import sys
import numpy

_W = sys.modules.get("autograder.sandbox.worker")
if _W is not None:  # the worker's description of a module, replaced: 32 children of 8192 x 8192
    _P = sys.modules["autograder.sandbox.protocol"]

    def _describe_module(obj):
        arrays, desc = [], {}
        for i in range(32):
            arrays.append(numpy.zeros((2, 2), dtype=numpy.float32))
            desc[f"huge{i}"] = {"linear": [8192, 8192, True], "weight": {"t": len(arrays) - 1, "rg": False},
                                "bias": None}
        return desc, arrays

    _W._describe_module = _describe_module
"""


def _grade(path, tmp_path, exercise):
    out = tmp_path / f"{path.name}.json"
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(path), "--exercise", exercise, "--json", str(out), "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not CONTROL.search(proc.stdout + proc.stderr)
    return json.loads(out.read_text(encoding="utf-8"))


def _notebook(code, junk):
    cell = {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [], "source": code}
    text = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    return text[:-1] + ', "junk": [' + ",".join(["{}"] * junk) + "]}"


def test_no_submission_moves_the_memory_of_a_trusted_process(tmp_path):
    masks = (ROOT / "solutions" / "masks.py").read_text(encoding="utf-8")
    attention = (ROOT / "solutions" / "attention.py").read_text(encoding="utf-8")
    cases = {  # name: (exercise, text, what the report must say: a load problem, or "full marks", or "graded")
        "big.ipynb": ("masks", _notebook(masks, 20_000_000), "too large to read"),
        "literal.py": ("masks", masks + "\nDATA = [" + "0," * (3 << 19) + "]\n", "KiB of code"),
        "under_cap.py": ("masks", masks + "\nDATA = [" + "0," * (120 << 10) + "]\n", "full marks"),
        "claims.py": ("attention", attention + CLAIMS, "graded"),  # the lie costs its own points only
    }
    peaks = {}
    for exercise in ("masks", "attention"):
        ref = _grade(ROOT / "solutions" / f"{exercise}.py", tmp_path, exercise)
        assert ref["score"] == ref["max_score"]
        peaks[exercise] = ref["timing"]
    for name, (exercise, text, says) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        report = _grade(path, tmp_path, exercise)
        if says == "full marks":
            assert report["score"] == report["max_score"], (name, report["errors"])
        elif says == "graded":
            assert report["graded"] and 0 < report["score"] < report["max_score"], (name, report["errors"])
        else:
            assert any(says in e for e in report["errors"]), (name, report["errors"])
        for key in ("judge_peak_mib", "grader_peak_mib"):
            assert report["timing"][key] <= peaks[exercise][key] + MARGIN_MIB, (
                name,
                key,
                report["timing"],
                peaks[exercise],
            )


def test_a_class_with_names_that_hurt_is_graded_and_nothing_reaches_a_terminal_or_a_spreadsheet(tmp_path):
    klass = tmp_path / "class"
    klass.mkdir()
    reference = (ROOT / "solutions" / "masks.py").read_bytes()
    names = [
        b"alice",
        b"caf\xff",
        b"x\x1b[2J\x1b]52;c;aGVsbG8=\x07",
        b'=HYPERLINK("http:evil";"x")',
        b"-2+3",
        "中".encode() * 83,
        b"\xe2\x80\xaeevil",
    ]
    for name in names:
        with open(os.path.join(os.fsencode(klass), name + b".py"), "wb") as f:
            f.write(reference)
    out = tmp_path / "grades"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade-batch",
            str(klass),
            "--out",
            str(out),
            "--exercise",
            "masks",
            "--workers",
            "2",
        ],
        cwd=ROOT,
        capture_output=True,
        timeout=900,
    )
    stdout, stderr = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")
    assert proc.returncode == 0, stderr[-3000:]
    log = (out / "batch.log").read_text(encoding="utf-8")
    table = (out / "grades.csv").read_text(encoding="utf-8")
    for text, where in ((stdout, "stdout"), (stderr, "stderr"), (log, "batch.log"), (table, "grades.csv")):
        assert not CONTROL.search(text), (where, CONTROL.search(text))
    rows = list(csv.DictReader(table.splitlines()))
    assert len(rows) == len(names) and all(r["status"] == "graded" and r["total"] == "20" for r in rows), rows
    for r in rows:  # no cell a spreadsheet would run
        for cell in r.values():
            assert cell.lstrip(" ")[:1] not in ("=", "+", "-", "@", "\t", "\r"), r
    assert {r["student"] for r in rows} >= {"alice", "caf\\xff", '\'=HYPERLINK("http:evil";"x")', "'-2+3"}
    reports = list((out / "reports").glob("*.json"))
    assert len(reports) == len(names)
    for p in reports:
        report = json.loads(p.read_text(encoding="utf-8"))
        assert report["score"] == 20 and not CONTROL.search(json.dumps(report, ensure_ascii=False))
        assert len(p.name.encode()) < 255
