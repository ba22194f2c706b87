"""Behaviour as evidence: the same wrong outputs, recorded by grading, compared without running
anything again.

When a function fails a test, the diagnosis (diagnose/engine.py) runs its fixed probes on the
student's code in the sandbox anyway.  ``digest(observations)`` turns what those probes returned
(engine.encode's plain descriptions) into a short hash, numbers rounded to 5 significant digits;
grading records, per function, that hash and whether the diagnosis named a catalogued mistake.
grade-batch writes it to ``<out>/behaviour/<student>.json``, a file for the instructor only: it is
never part of a report, a feedback text or a Gradescope file (tests/test_similarity.py checks).

    {"functions": {"attention_mask": {"outputs": "9f2c...", "named": false}}}

``Behaviour(folder)`` reads those files; ``same(a, b)`` gives {function: weight} for the
functions where a and b fail with the same outputs and no catalogued mistake explains them (a
catalogued mistake's outputs are what a whole class of honest students gets).  The weight is 1
when two students have those outputs, 2 / n when n students have them, as the rarity of a
fingerprint (index.py).
"""

import hashlib
import json
import math
from collections import Counter
from pathlib import Path

from .index import rarity

FOLDER = "behaviour"  # in grade-batch's --out folder


def _plain(x):
    """A JSON-able, stable description of an encoded observation (tensors' values rounded)."""
    if isinstance(x, (tuple, list)):
        return [_plain(v) for v in x]
    if isinstance(x, float):
        return "nan" if math.isnan(x) else f"{x:.5g}"
    if hasattr(x, "tolist") and hasattr(x, "shape"):  # a tensor, without importing torch here
        return _plain(x.tolist())
    if x is None or isinstance(x, (bool, int, str)):
        return x
    return type(x).__name__


def digest(observations):
    """A 16-hex-digit hash of a function's probe observations."""
    text = json.dumps(_plain(observations), separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def path_of(out, student):
    """<out>/behaviour/<student>.json, where grade-batch records `student`'s behaviour."""
    return Path(out) / FOLDER / f"{student}.json"


class Behaviour:
    """The recorded behaviour of a class (the behaviour/ folder of a grade-batch output)."""

    def __init__(self, folder=None, records=None):
        self.records = dict(records or {})  # student -> {function: {"outputs", "named"}}
        if folder is not None:
            for p in sorted((Path(folder) / FOLDER).glob("*.json")):
                try:
                    data = json.loads(p.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue
                if isinstance(data, dict) and isinstance(data.get("functions"), dict):
                    self.records[p.stem] = data["functions"]
        self.n = len(self.records)
        self.df = Counter(
            (f, r.get("outputs"))
            for fs in self.records.values()
            for f, r in fs.items()
            if isinstance(r, dict) and not r.get("named")
        )

    def __len__(self):
        return self.n

    def groups(self):
        """{(function, outputs): [students]} of the uncatalogued wrong outputs two or more share."""
        out = {}
        for s, fs in self.records.items():
            for f, r in fs.items():
                if isinstance(r, dict) and not r.get("named") and self.df[(f, r.get("outputs"))] > 1:
                    out.setdefault((f, r.get("outputs")), []).append(s)
        return out

    def same(self, a, b):
        """{function: weight} of the functions where `a` and `b` fail with the same outputs and no
        catalogued mistake explains them; the weight is the outputs' `rarity` in the class."""
        ra, rb = self.records.get(a, {}), self.records.get(b, {})
        out = {}
        for f, x in ra.items():
            y = rb.get(f)
            if not (isinstance(x, dict) and isinstance(y, dict)) or x.get("named") or y.get("named"):
                continue
            if x.get("outputs") and x.get("outputs") == y.get("outputs"):
                df = self.df[(f, x["outputs"])]
                out[f] = rarity(df)
        return out
