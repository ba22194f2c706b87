"""Held-out student mistakes written from the contract alone (tests/files/heldout_contract/cases.yml).

Each case is one function (or class) as a student writes it; `submission(case, folder)` writes a
folder submission: every reference solution copied, and the case's code appended to the file of
its exercise, after the imports the exercise notebooks have, so that the student's definition
(a later `def` of the same name) wins. bench/diagnosis_heldout.py grades them all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "files" / "heldout_contract" / "cases.yml"
SOLUTIONS = ROOT / "solutions"

# what every exercise notebook imports in its setup cell (and copy, which the ablation notebook adds)
HEADER = """

# ---------------------------------------------------------------- the student's version
import copy  # noqa: E402,F401
import math  # noqa: E402,F401

import numpy as np  # noqa: E402,F401
import torch  # noqa: E402,F401
import torch.nn.functional as F  # noqa: E402,F401
from torch import nn  # noqa: E402,F401


"""

KEYS = ("id", "exercise", "function", "correct", "part", "what", "code")


def load(path: Path = CASES) -> dict:
    """The whole file: {"vocabulary": {label: description}, "cases": [case, ...]}."""
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def vocabulary(path: Path = CASES) -> dict:
    """The labels a wrong case's `part` may take, with what each means."""
    return dict(load(path)["vocabulary"])


def cases(exercise: str | None = None, path: Path = CASES) -> list[dict]:
    """Every case as a dict (id, exercise, function, correct, part, what, code); optionally one exercise's."""
    data = load(path)
    vocab = data["vocabulary"]
    out, seen = [], set()
    for case in data["cases"]:
        missing = [k for k in KEYS if k not in case]
        if missing:
            raise ValueError(f"case {case.get('id')!r} lacks {missing}")
        if case["id"] in seen:
            raise ValueError(f"case id {case['id']!r} repeats")
        seen.add(case["id"])
        if not case["correct"] and case["part"] not in vocab:
            raise ValueError(f"case {case['id']!r}: part {case['part']!r} is not in the vocabulary")
        if case["correct"] and case["part"] is not None:
            raise ValueError(f"case {case['id']!r}: a correct variant has part null")
        if not (SOLUTIONS / f"{case['exercise']}.py").is_file():
            raise ValueError(f"case {case['id']!r}: no solutions/{case['exercise']}.py")
        if exercise is None or case["exercise"] == exercise:
            out.append(dict(case))
    return out


def submission(case: dict, folder: Path | str) -> Path:
    """Write the case's submission folder: the reference solutions, the case's code appended to its exercise's file."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for src in sorted(SOLUTIONS.glob("*.py")):
        shutil.copyfile(src, folder / src.name)
    target = folder / f"{case['exercise']}.py"
    code = case["code"].rstrip() + "\n"
    with target.open("a", encoding="utf-8") as f:
        f.write(HEADER + code)
    return folder
