"""Hostile submission with no code of its own: it looks for the grader's installation through
Python itself — the paths of loaded modules (sys.modules), importlib's specs of `autograder`
and its sub-packages, the installed distributions' file lists (importlib.metadata), editable
installs' finders — then reads the package's files and the source tree around it: the
properties (their reference helpers), the catalogue, course.yml and solutions/.  It execs what
defines the contract's functions; without it, it raises with a digest of what it read.

See catalogue.yml for what the grader must report (and tests/test_secrecy.py)."""
import glob
import importlib.metadata
import importlib.util
import os
import sys

NAMES = ("padding_mask", "causal_mask", "attention_mask", "sinusoidal_encoding", "add_positional_encoding",
         "scaled_dot_product_attention", "MultiHeadAttention", "lstm_cell", "gru_cell", "lstm_sequence",
         "masked_cross_entropy")
STOLEN, SEEN = {}, []
DONE = []


def _places():
    out = set()
    for name, mod in list(sys.modules.items()):
        try:
            paths = [getattr(mod, "__file__", None)] + list(getattr(mod, "__path__", None) or [])
        except Exception:  # noqa: BLE001 - torch's odd namespaces
            continue
        for p in paths:
            if p and ("autograder" in str(p) or "seqgrader" in str(p)):
                out.add(os.path.dirname(str(p)))
        mapping = getattr(mod, "MAPPING", None)  # setuptools' editable finder
        if isinstance(mapping, dict):
            out.update(str(v) for v in mapping.values())
    for name in ("autograder", "autograder.properties", "autograder.catalogue", "seqgrader"):
        try:
            spec = importlib.util.find_spec(name)
        except Exception:  # noqa: BLE001
            spec = None
        if spec is not None:
            out.update(spec.submodule_search_locations or [])
            if spec.origin:
                out.add(os.path.dirname(spec.origin))
    for dist in importlib.metadata.distributions():
        try:
            files = dist.files or []
        except Exception:  # noqa: BLE001
            files = []
        for f in files:
            if "autograder" in str(f) or "solutions" in str(f):
                out.add(os.path.dirname(str(dist.locate_file(f))))
    return out


def _take(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        SEEN.append(f"{path}: {type(e).__name__}")
        return
    SEEN.append(f"{path}: {text.strip()[:60]}")
    if not path.endswith(".py"):
        return
    ns = {"__name__": "stolen"}
    try:
        exec(compile(text, path, "exec"), ns)
    except BaseException:  # noqa: BLE001
        pass
    for n in NAMES:
        if callable(ns.get(n)) and n not in STOLEN:
            STOLEN[n] = ns[n]
    for key, value in ns.items():  # a property module's reference helper: _attention_ref, ...
        if key.endswith("_ref") and callable(value):
            STOLEN.setdefault(key, value)


def _steal():
    if DONE:
        return
    DONE.append(1)
    for place in sorted(_places()):
        SEEN.append(f"place {place}")
        for up in (place, os.path.dirname(place), os.path.dirname(os.path.dirname(place))):
            for pattern in ("solutions/*.py", "course.yml", "properties/*.py", "catalogue/*.yml",
                            "autograder/properties/*.py", "autograder/catalogue/*.yml", "exercises/*.ipynb",
                            "exercises/*/solution.py", "exercises/*/properties.py", "exercises/*/mistakes.yml",
                            "autograder/exercises/*/solution.py", "autograder/exercises/*/properties.py",
                            "autograder/exercises/*/mistakes.yml"):
                for path in sorted(glob.glob(os.path.join(up, pattern)))[:40]:
                    _take(path)


def _delegate(name):
    def stolen(*args, **kwargs):
        _steal()
        if name in STOLEN:
            return STOLEN[name](*args, **kwargs)
        if name == "attention_mask" and "_attention_ref" in STOLEN:  # (lengths, T, causal)
            lengths = args[0]
            max_len = args[1] if len(args) > 1 else kwargs.get("max_len")
            causal = args[2] if len(args) > 2 else kwargs.get("causal", False)
            return STOLEN["_attention_ref"](lengths, int(lengths.max()) if max_len is None else int(max_len), causal)
        raise LookupError(f"nothing to steal for {name}; read: " + " | ".join(SEEN)[:3000])
    stolen.__name__ = name
    return stolen


for _n in NAMES:
    globals()[_n] = _delegate(_n)
