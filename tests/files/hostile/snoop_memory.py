"""Hostile submission with no code of its own: it looks for the grader in its own process's
memory — up the call stack (`sys._getframe()`: the frames of whoever forked it, their locals:
a property registry, the course), through every object reachable from those frames and from
sys.modules, and in the raw bytes of every readable memory region (/proc/self/maps + ctypes)
for the text of a solution.  It uses any property's reference helper it finds; without one it
raises with a digest of what it saw.

See catalogue.yml for what the grader must report (and tests/test_secrecy.py)."""
import ctypes
import gc
import re
import sys
import types

NAMES = ("padding_mask", "causal_mask", "attention_mask", "sinusoidal_encoding", "add_positional_encoding",
         "scaled_dot_product_attention", "MultiHeadAttention", "lstm_cell", "gru_cell", "lstm_sequence",
         "masked_cross_entropy")
STOLEN, SEEN = {}, []
DONE = []
GRADER = ("autograder.exercises", "autograder.properties", "autograder.diagnose", "autograder.catalogue", "solutions",
          "hypothesis")


def _functions_near(roots, limit=250_000):
    """Function objects reachable from `roots` (a bounded walk over gc.get_referents)."""
    import collections

    seen, todo, found = set(), collections.deque(roots), []
    while todo and len(seen) < limit:
        obj = todo.popleft()  # breadth first: what the frames hold comes before torch's insides
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, types.FunctionType):
            found.append(obj)
        if isinstance(obj, (str, bytes, int, float)):
            continue
        try:
            todo.extend(gc.get_referents(obj))
        except Exception:  # noqa: BLE001
            pass
    return found


def _frames():
    f, out = sys._getframe(), []
    while f is not None:
        out.append(f)
        f = f.f_back
    return out


def _scan_memory(patterns, budget=32 << 20):
    """Regions of /proc/self/maps, read with ctypes: the snippets around each pattern."""
    hits = []
    try:
        with open("/proc/self/maps") as f:
            maps = f.read().splitlines()
    except OSError as e:
        SEEN.append(f"maps: {type(e).__name__}")
        return hits
    read = 0
    for line in maps:
        parts = line.split()
        if len(parts) < 2 or not parts[1].startswith("r") or (len(parts) > 5 and parts[5].startswith("[v")):
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        if hi - lo > (256 << 20) or read > budget:
            continue
        try:
            data = ctypes.string_at(lo, hi - lo)
        except Exception:  # noqa: BLE001
            continue
        read += hi - lo
        for pat in patterns:
            for m in re.finditer(re.escape(pat), data):
                hits.append(data[max(0, m.start() - 40): m.start() + 400])
                if len(hits) > 50:
                    return hits
    return hits


def _steal():
    if DONE:
        return
    DONE.append(1)
    frames = _frames()
    SEEN.append("frames: " + ",".join(f.f_code.co_name for f in frames[2:]))
    roots = [f.f_locals for f in reversed(frames)] + [f.f_globals for f in frames] + list(sys.modules.values())
    for fn in _functions_near(roots):
        mod = getattr(fn, "__module__", "") or ""
        if mod.startswith(GRADER) or fn.__name__.endswith("_ref"):
            SEEN.append(f"{mod}.{fn.__name__}")
            STOLEN.setdefault(fn.__name__, fn)
    for obj in gc.get_objects():
        if isinstance(obj, types.FunctionType) and (obj.__module__ or "").startswith(GRADER):
            STOLEN.setdefault(obj.__name__, obj)
    for snippet in _scan_memory([b"def padding_mask(lengths", b"_attention_ref", b"BEGIN SOLUTION"]):
        text = snippet.decode("utf-8", "replace")
        SEEN.append(text[:80])
        ns = {"__name__": "stolen"}
        try:
            exec(compile(text[text.find("def "):].split("\x00")[0], "<memory>", "exec"), ns)
        except BaseException:  # noqa: BLE001
            continue
        for n in NAMES:
            if callable(ns.get(n)):
                STOLEN.setdefault(n, ns[n])


def _delegate(name):
    def stolen(*args, **kwargs):
        _steal()
        if name in STOLEN and STOLEN[name] is not globals().get(name):
            return STOLEN[name](*args, **kwargs)
        if name == "attention_mask" and "_attention_ref" in STOLEN:  # (lengths, T, causal)
            lengths = args[0]
            max_len = args[1] if len(args) > 1 else kwargs.get("max_len")
            causal = args[2] if len(args) > 2 else kwargs.get("causal", False)
            return STOLEN["_attention_ref"](lengths, int(lengths.max()) if max_len is None else int(max_len), causal)
        raise LookupError(f"nothing to steal for {name}; saw: " + " | ".join(SEEN)[:3000])
    stolen.__name__ = name
    return stolen


for _n in NAMES:
    globals()[_n] = _delegate(_n)
