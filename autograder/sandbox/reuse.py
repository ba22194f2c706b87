"""Reuse: in a batch, an exercise is graded once per distinct code.

Many students write the same functions (the same one-liners, the reference from the lecture,
the same helper, and the same mistakes).  A grade-batch process remembers, for every exercise it
graded (with the conditions below), the names each test and the diagnosis looked up and a
fingerprint of each name's code; a later submission whose
code for all of those names has the same fingerprints, in a file that cannot behave differently,
gets the same outcomes without starting a worker (`ForkRunner(reuse=True)`).  Grading is
derandomized and a worker starts from the same state every time, so those outcomes are what
grading it would give; `tests/test_reuse.py` compares whole reports.

What makes it safe against a hostile or merely unusual submission:

* the keys come from the judge's side only: the submission's source text, parsed here; nothing
  a worker says is part of a key;
* an exercise is remembered when every test passed, or when its failures depend on the code
  alone (`settled_outcomes`): one judge ran every test and ended normally, the diagnosis finished
  well inside its budget, no time-out, crash or grader error (they depend on the machine), and no
  feedback shows the student's frames (file names and line numbers, which the fingerprint leaves
  out), and no file of the submission could not be read (a "missing" outcome lists those);
* only *pure* files: every top-level statement is a docstring or another bare constant (the
  docstrings of files pasted into one), an import of an allowed module
  (ALLOWED_MODULES), a def or class, a name bound to a literal constant, or an
  `if __name__ == "__main__":` block (never run in a worker); a file with any other
  top-level code (a demo call, a plot, a print) is graded as usual, because that code could change
  what the functions do, or raise a load error the report must show;
* a fingerprint covers the function's or class's normalized code (comments, docstrings and line
  numbers dropped), the imports it uses, and, recursively, the file's own definitions it refers
  to — those its body calls as the file ends, those its decorators, defaults and bases name as
  they were when it was defined (`class MultiHeadAttention(MultiHeadAttention)`); the key of an
  exercise adds what its files may do as they load besides binding names (`FileModel.load_digest`):
  the fingerprint of every definition whose making runs code (a class nobody calls could still
  patch torch as it is made, and so could a student's decorator, metaclass, base class or default
  of a function nobody calls: their code is in that fingerprint).  Imports (checked to exist),
  literal constants, docstrings, annotations, literal defaults, library base classes and the
  plain wrappers (staticmethod, property, torch.no_grad()) only bind names (`_Inert`): they are
  not part of it, so the same functions in a folder of files, in one file or in a notebook share
  a key; no file of the submission may be named like a module it imports;
* no part of it may use what varies from run to run or reaches outside the function: RISKY names
  (time, id(), the environment, files, exec/eval, dynamic attributes, introspection, threads,
  `global`); such code is never reused;
* a cache lives in the grading processes of one batch, whose course, options and grader code are
  fixed; what one process stores reaches the others through the batch (`take_new`, `absorb`:
  batch/pool.py, and the Dask client for a cluster's workers), never through a worker.

`Reuse.lookup(path, exercise, needed, read_errors)` -> result dict or None;
`Reuse.store(path, exercise, needed, result)` after grading.
"""
import ast
import builtins
import copy
import hashlib
import json
import re
import symtable
from pathlib import Path

ALLOWED_MODULES = {"torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.linalg", "math", "numpy",
                   "typing", "collections", "functools", "itertools", "dataclasses", "__future__", "copy",
                   "matplotlib", "matplotlib.pyplot", "operator", "enum", "numbers", "abc"}
RISKY = {
    # what varies from run to run
    "time", "perf_counter", "monotonic", "process_time", "datetime", "id", "random", "os", "sys", "environ",
    "getpid", "uuid", "secrets", "urandom",
    # reaching outside the function: files, processes, the interpreter, the grader
    "open", "input", "breakpoint", "exec", "eval", "compile", "globals", "locals", "vars",
    "getattr", "setattr", "delattr", "__import__", "__builtins__", "__dict__", "__globals__", "__code__",
    "__class__", "__subclasses__", "__doc__", "__module__", "__file__", "importlib", "inspect", "gc", "ctypes",
    # the module's own names: "submission_masks" in a folder, "submission_s0042" in one file
    "__name__", "__spec__", "__loader__", "__package__",
    "threading", "multiprocessing", "subprocess", "signal", "pickle", "marshal", "io", "pathlib", "socket",
    "shutil", "tempfile", "_getframe", "settrace", "setprofile",
    # reading files by another name: what the function returns would depend on bytes outside the key
    "load", "save", "fromfile", "loadtxt", "genfromtxt", "memmap", "from_file", "hub", "read_csv",
    # global settings of torch that outlive a call
    "set_default_dtype", "set_default_device", "set_default_tensor_type", "set_num_threads",
    "use_deterministic_algorithms", "set_flush_denormal", "backends", "_C", "set_grad_enabled",
}
BUILTINS = set(dir(builtins))


class Impure(Exception):
    """This file or closure cannot be reused (the reason is the message)."""


def _strip_docstring(body):
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_PASS = ast.Pass()


def _dump(node):
    """The code of `node` as text, without positions, comments or docstrings (a def, class or
    method whose body is only a docstring counts as `pass`): one walk, nothing copied."""
    out = []

    def walk(n):
        if isinstance(n, ast.AST):
            out.append(type(n).__name__ + "(")
            scope = isinstance(n, _SCOPES)
            for name in n._fields:
                value = getattr(n, name, None)
                if scope and name == "body":
                    value = _strip_docstring(value) or [_PASS]
                walk(value)
                out.append(",")
            out.append(")")
        elif isinstance(n, list):
            out.append("[")
            for v in n:
                walk(v)
                out.append(",")
            out.append("]")
        else:
            out.append(repr(n))

    walk(node)
    return "".join(out)


def names_used(node):
    """Every name and attribute name that appears in `node` (loaded, stored or called)."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
    return out


def _literal(node):
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def _names_in(nodes):
    out = set()
    for n in nodes:
        if n is None:
            continue
        for sub in ast.walk(n):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                out.add(sub.id)
    return out


def _call_time_globals(table):
    """Implicit globals of every function scope below `table` (its own if it is a function)."""
    out = set()
    stack = [table]
    while stack:
        t = stack.pop()
        if t.get_type() == "function":
            for sym in t.get_symbols():
                if sym.is_global():
                    if sym.is_declared_global():
                        raise Impure("a `global` statement")
                    out.add(sym.get_name())
        stack.extend(t.get_children())
    return out


def _load_time_nodes(node):
    """What runs when `node` (a def or class) is executed: decorators, defaults, annotations,
    bases and keywords, and a class body's own statements (not its methods' bodies)."""
    nodes = list(node.decorator_list)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        nodes += a.defaults + [d for d in a.kw_defaults if d is not None]
        nodes += [x.annotation for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None]
        nodes.append(node.returns)
    else:
        nodes += node.bases + [k.value for k in node.keywords]
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                nodes += _load_time_nodes(stmt)
            elif not isinstance(stmt, ast.ClassDef):
                nodes.append(stmt)
            else:
                nodes += _load_time_nodes(stmt)
    return nodes


def _main_guard(stmt):
    """`if __name__ == "__main__":` with no else."""
    t = getattr(stmt, "test", None)
    return (isinstance(stmt, ast.If) and not stmt.orelse and isinstance(t, ast.Compare) and len(t.ops) == 1
            and isinstance(t.ops[0], ast.Eq) and isinstance(t.left, ast.Name) and t.left.id == "__name__"
            and isinstance(t.comparators[0], ast.Constant) and t.comparators[0].value == "__main__")


EMPTY = hashlib.sha256(b"").hexdigest()  # the load digest of a file that only binds names
_UNKNOWN = object()  # what _Inert cannot know (or what would raise)
_STUDENT = object()  # a name bound to the student's own definition or constant
_LIBRARY = {}  # dotted name -> the object it names in this (the judge's) process, or _UNKNOWN
# decorators that only wrap: applying them runs nothing of the student's and cannot fail
_WRAPPERS = (staticmethod, classmethod, property)
_WRAPPER_CALLS = ("torch.no_grad", "torch.enable_grad", "torch.inference_mode")  # called with no arguments
_GENERICS = (list, tuple, dict, set, frozenset, type)  # subscripted in annotations: list[int]


def _library(obj):
    """True for an object of the judge's own (a library's or a builtin), not _UNKNOWN or _STUDENT."""
    return obj is not _UNKNOWN and obj is not _STUDENT


def _quietly(fn, *args):
    """fn(*args) on the judge's own library objects, warnings silenced; _UNKNOWN if it raises."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)
    except Exception:  # noqa: BLE001 - what raises here would raise as the file loads
        return _UNKNOWN


def _library_object(dotted):
    """What `dotted` (an allowed module, or a name in one: "torch.nn.Module") is, looked up in the
    judge's own process (trusted: the modules the worker imports too, never the student's
    code), or _UNKNOWN when it does not exist there (an import or attribute that would raise)."""
    if dotted not in _LIBRARY:
        import importlib

        obj = _UNKNOWN
        try:
            if dotted in ALLOWED_MODULES:
                obj = importlib.import_module(dotted)
            else:
                module, _, attr = dotted.rpartition(".")
                if module in ALLOWED_MODULES and not attr.startswith("_"):
                    obj = getattr(importlib.import_module(module), attr)
        except Exception:  # noqa: BLE001 - anything that fails here fails in the worker
            obj = _UNKNOWN
        _LIBRARY[dotted] = obj
    return _LIBRARY[dotted]


class _Inert:
    """Whether making a definition runs nothing but what is proven harmless: literal constants,
    names already bound, attributes of the allowed modules that exist (looked up in the judge:
    `nn.Module`, `torch.float32`), typing subscripts and `X | None` built from those (annotations),
    bases that are plain classes of those modules (`type` their metaclass, no `__init_subclass__`:
    nn.Module, not Enum or autograd.Function), and the
    decorators staticmethod, classmethod, property, torch.no_grad() and the like.  Anything else
    (a call, a keyword such as metaclass=, a student's decorator or base class, a class-body
    statement other than a docstring or a literal constant) may run code or raise as the file
    loads: that definition's fingerprint joins the file's load digest."""

    def __init__(self, model, env, shadowed=frozenset()):
        self.model, self.env = model, env
        self.shadowed = shadowed  # names a class body binds: there they are not the module's

    def value(self, node):
        """The judge's object for a name or attribute chain, _STUDENT for a student's own
        definition or constant, or _UNKNOWN."""
        if isinstance(node, ast.Name):
            if node.id in self.shadowed:
                return _UNKNOWN
            if node.id in self.env:
                _name, kind, value = self.model.bindings[self.env[node.id]]
                return _library_object(value) if kind == "import" else _STUDENT
            if node.id in BUILTINS and node.id not in RISKY:
                return getattr(builtins, node.id)
            return _UNKNOWN
        if isinstance(node, ast.Attribute) and not node.attr.startswith("_"):
            base = self.value(node.value)
            return _quietly(getattr, base, node.attr) if _library(base) else _UNKNOWN
        return _UNKNOWN

    def annotation(self, node):
        if node is None:  # (`from __future__ import annotations` is not trusted: a notebook's cells compile apart)
            return True
        return self._evaluates(node) is not _UNKNOWN

    def _evaluates(self, node):
        """What an annotation evaluates to (only what cannot run anything), or _UNKNOWN."""
        import operator

        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self.value(node)
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [self._evaluates(e) for e in node.elts]
            return items if all(_library(i) for i in items) else _UNKNOWN
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            left, right = self._evaluates(node.left), self._evaluates(node.right)
            if not all(isinstance(x, type) or x is None for x in (left, right)):
                return _UNKNOWN
            return _quietly(operator.or_, left, right)
        if isinstance(node, ast.Subscript):
            base = self._evaluates(node.value)
            if not (any(base is g for g in _GENERICS)
                    or _quietly(getattr, base, "__module__") in ("typing", "collections.abc")):
                return _UNKNOWN
            index = self._evaluates(node.slice)
            if not _library(index):
                return _UNKNOWN
            if isinstance(node.slice, ast.Tuple):
                index = tuple(index)
            return _quietly(operator.getitem, base, index)
        return _UNKNOWN

    def _default(self, node):
        return _literal(node) or self.value(node) is not _UNKNOWN

    def _decorator(self, node):
        if isinstance(node, ast.Call):
            obj = self.value(node.func)
            return not node.args and not node.keywords and obj is not _UNKNOWN and any(
                obj is _library_object(name) for name in _WRAPPER_CALLS)
        obj = self.value(node)
        return any(obj is w for w in _WRAPPERS)

    def definition(self, node):
        if not all(self._decorator(d) for d in node.decorator_list):
            return False
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            if not all(self._default(d) for d in a.defaults + [d for d in a.kw_defaults if d is not None]):
                return False
            args = a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x is not None]
            return all(self.annotation(x.annotation) for x in args) and self.annotation(node.returns)
        if node.keywords:
            return False
        for base in node.bases:  # a library class made by `type` that does not watch its subclasses
            obj = self.value(base)
            if not _library(obj) or type(obj) is not type or any(
                    "__init_subclass__" in vars(k) for k in obj.__mro__[:-1]):
                return False
        inner = _Inert(self.model, self.env, self.shadowed | {
            n.id if isinstance(n, ast.Name) else n.name for n in ast.walk(node) if n is not node and (
                isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                or (isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))))})
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if not inner.definition(stmt):
                    return False
            elif isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
                continue
            elif isinstance(stmt, ast.Assign) and _literal(stmt.value) and all(isinstance(t, ast.Name)
                                                                               for t in stmt.targets):
                continue
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                    and (stmt.value is None or _literal(stmt.value)) and inner.annotation(stmt.annotation):
                continue
            else:
                return False
        return True


class FileModel:
    """The top-level bindings of one pure file, in order: what its definitions refer to."""

    def __init__(self, text, label="<submission>"):
        try:
            tree = ast.parse(text, label)
            table = symtable.symtable(text, label, "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            raise Impure(f"does not parse ({type(e).__name__})") from None
        self.bindings = []  # (name, kind, value): an import's dotted target, a constant's dump, a def's (node, table, env then)
        self.final = {}  # name -> index into bindings
        self.effects = []  # indices of the definitions whose making may run something (see load_digest)
        tables = {}
        for child in table.get_children():  # top-level defs and classes, by name and line
            tables[(child.get_name(), child.get_lineno())] = child
        for stmt in _strip_docstring(tree.body):
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.name not in ALLOWED_MODULES:
                        raise Impure(f"imports {alias.name}")
                    name = alias.asname or alias.name.split(".")[0]
                    target = alias.name if alias.asname else alias.name.split(".")[0]
                    self._bind(name, "import", target)
            elif isinstance(stmt, ast.ImportFrom):
                if stmt.level or stmt.module not in ALLOWED_MODULES:
                    raise Impure(f"imports from {stmt.module}")
                for alias in stmt.names:
                    if alias.name == "*":
                        raise Impure("a star import")
                    full = f"{stmt.module}.{alias.name}"
                    if full not in ALLOWED_MODULES and alias.name in RISKY:
                        raise Impure(f"imports {full}")
                    if _library_object(full) is _UNKNOWN:  # an ImportError as the file loads
                        raise Impure(f"imports {full}, which does not exist")
                    self._bind(alias.asname or alias.name, "import", full)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                t = tables.get((stmt.name, stmt.lineno))
                if t is None:  # decorated: symtable counts from the def line
                    t = next((v for (n, ln), v in tables.items() if n == stmt.name and
                              stmt.lineno <= ln <= (stmt.end_lineno or ln)), None)
                if t is None:
                    raise Impure(f"cannot read the scope of {stmt.name}")
                env = dict(self.final)
                self._bind(stmt.name, "def", (stmt, t, env))
                ran = _load_time_nodes(stmt)  # decorators, defaults, bases, class bodies: they run now
                risky = ({a.attr for n in ran if n is not None for a in ast.walk(n) if isinstance(a, ast.Attribute)}
                         | _names_in(ran)) & RISKY
                if risky:
                    raise Impure(f"{stmt.name}'s definition uses {sorted(risky)[0]} when the file loads")
                if not _Inert(self, env).definition(stmt):
                    self.effects.append(len(self.bindings) - 1)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None and _literal(stmt.value):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if not all(isinstance(t, ast.Name) for t in targets):
                    raise Impure("a top-level assignment that is not to a name")
                if isinstance(stmt, ast.AnnAssign) and not _Inert(self, self.final).annotation(stmt.annotation):
                    raise Impure(f"an annotation that may not evaluate (line {stmt.lineno})")
                for t in targets:
                    self._bind(t.id, "const", ast.dump(stmt.value))
            elif _main_guard(stmt):
                continue  # a worker runs a file under another __name__: this block never runs there
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # a string (or other constant) on its own: evaluated, nothing happens
            else:
                raise Impure(f"top-level code ({type(stmt).__name__}, line {stmt.lineno})")

    @property
    def load_digest(self):
        """What loading this file may do besides binding its names, as a digest (Impure if that
        cannot be known): the fingerprint of every definition whose making runs more than
        `_Inert` proves harmless (a decorator, default, base, keyword or class-body statement that
        calls something, a student's own decorator, metaclass or base class, whose code then runs
        as the file loads), in order.  Imports of the allowed modules (checked to exist) and
        literal constants do nothing but bind names, and a function's fingerprint already covers
        the ones it uses: they are not part of it, so the same functions in a folder of files, in
        one file or in a notebook have the same key.  The digest of a file that does nothing else
        is EMPTY."""
        return self._memoized(("load",), self._load_digest)

    def _load_digest(self):
        if not self.effects:
            return EMPTY
        h = hashlib.sha256()
        for i in self.effects:
            h.update(f"{self.bindings[i][0]}\0{self._fingerprint_at(i)}\0".encode())
        return h.hexdigest()

    def _bind(self, name, kind, value):
        self.bindings.append((name, kind, value))
        self.final[name] = len(self.bindings) - 1

    def defines(self):
        return set(self.final)

    def fingerprint(self, name):
        """The fingerprint of what `name` is once the file has run (Impure if it cannot be reused)."""
        return self._memoized(name, lambda: self._fingerprint(name))

    def _memoized(self, key, compute):
        """compute(), once per key: a digest, or the Impure it raised (raised again each time)."""
        memo = self.__dict__.setdefault("_memo", {})
        if key not in memo:
            try:
                memo[key] = compute()
            except Impure as e:
                memo[key] = e
            except RecursionError:
                memo[key] = Impure("code nested too deeply")
        if isinstance(memo[key], Impure):
            raise memo[key]
        return memo[key]

    def _fingerprint(self, name):
        if name not in self.final:
            raise Impure(f"{name} is not defined")
        return self._fingerprint_at(self.final[name])

    def _fingerprint_at(self, index):
        """The fingerprint of binding `index` (a name's last one, or an earlier definition)."""
        h = hashlib.sha256()
        seen = set()
        todo = [index]
        while todo:
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            bname, kind, value = self.bindings[i]
            h.update(f"{bname}:{kind}\0".encode())
            if kind != "def":
                h.update(str(value).encode() + b"\0")
                continue
            node, table, env_then = value
            dump, risky = self._code(i, node)
            h.update(dump + b"\0")
            if risky:
                raise Impure(f"{bname} uses {sorted(risky)[0]}")
            for ref, env in ((r, env_then) for r in sorted(_names_in(_load_time_nodes(node)))):
                todo.extend(self._resolve(ref, env, bname))
            for ref in sorted(_call_time_globals(table)):
                todo.extend(self._resolve(ref, self.final, bname))
        return h.hexdigest()

    def _code(self, i, node):
        """(the normalized code of binding i, the RISKY names it uses), once per binding."""
        codes = self.__dict__.setdefault("_codes", {})
        if i not in codes:
            codes[i] = (_dump(node).encode(), names_used(node) & RISKY)
        return codes[i]

    def _resolve(self, ref, env, who):
        if ref in env:
            return [env[ref]]
        if ref in BUILTINS and ref not in RISKY:
            return []
        raise Impure(f"{who} refers to {ref}, which is not defined where it is needed")


def _loaded_files(sources, exercise, needed, models):
    """Which files a worker for `exercise` runs (load.exec_sources' rule), as indices."""
    own = [i for i, (_, _, filename, _) in enumerate(sources) if Path(filename).stem == exercise]
    if len(own) == 1 and models.get(own[0]) is not None and needed <= models[own[0]].defines():
        return own
    return list(range(len(sources)))


class Reuse:
    """One grading process's memory of the exercises it graded (see the module docstring)."""

    def __init__(self, limit=20_000):
        self.entries = {}  # exercise -> {names tuple: {fingerprints tuple: result}}
        self.limit = limit
        self.size = 0
        self.hits = self.misses = 0
        self.outbox = []  # entries stored here since take_new(): for the batch's other grading processes

    @staticmethod
    def models(sources):
        """{file index: FileModel, or None for a file that is not pure}."""
        models = {}
        for i, (label, _mod, _filename, chunks) in enumerate(sources):
            try:
                models[i] = FileModel("\n".join(code for _c, _f, code in chunks), label)
            except Impure:
                models[i] = None
        return models

    @staticmethod
    def keys(models, sources, exercise, needed, names):
        """The fingerprints of `names` as a worker for `exercise` would find them (Impure if it
        would run a file that is not pure, or a name's code cannot be reused)."""
        loaded = _loaded_files(sources, exercise, set(needed), models)
        if any(models.get(i) is None for i in loaded):
            raise Impure("a file with top-level code")
        order = sorted(loaded, key=lambda i: Path(sources[i][2]).stem != exercise)  # Worker.lookup's order
        shadows = {m.split(".")[0] for m in ALLOWED_MODULES} | {"autograder"}
        if any(Path(f).stem in shadows or Path(f).parent.name in shadows for _l, _m, f, _c in sources):
            raise Impure("a file named like a module it may import")
        # what loading may do besides binding names, in every file that runs (none: EMPTY)
        out = [hashlib.sha256("\0".join(d for d in (models[i].load_digest for i in loaded) if d != EMPTY)
                              .encode()).hexdigest()]
        for name in names:
            where = next((i for i in order if name in models[i].defines()), None)
            if where is None:
                raise Impure(f"{name} is not defined")
            out.append(models[where].fingerprint(name))
        return tuple(out)

    def lookup(self, sources, exercise, needed, read_errors=(), models=None):
        """The remembered result for `exercise` if this submission's code is the same; else None."""
        entries = self.entries.get(exercise)
        if entries:
            models = self.models(sources) if models is None else models
            for names, by_keys in entries.items():
                try:
                    keys = self.keys(models, sources, exercise, needed, names)
                except Impure:
                    continue
                hit = by_keys.get(keys)
                if hit is not None:
                    self.hits += 1
                    tests = {name: copy.deepcopy(outcome) for name, outcome in hit["tests"].items()}
                    out = {"tests": tests, "load_errors": list(read_errors), "levels": hit["levels"],
                           "reused": True}
                    if hit.get("behaviour"):  # the same code: the same probe outputs
                        out["behaviour"] = copy.deepcopy(hit["behaviour"])
                    return out
        self.misses += 1
        return None

    def store(self, sources, exercise, needed, result, read_errors=(), models=None):
        """Remember `result` if the code can be reused and the result is settled (see
        `settled_outcomes`).  `models`: `models(sources)`, when the caller has it already."""
        tests = result.get("tests") or {}
        if not tests:
            return False
        if set(result.get("load_errors") or []) != set(read_errors):  # only what the judge read itself
            return False
        if read_errors and any(o.get("status") != "passed" for o in tests.values()):
            return False  # a failure's text may list this submission's load errors ("missing": what did not load)
        outcomes = settled_outcomes(result)
        if outcomes is None:
            return False
        names = sorted({n for o in tests.values() for n in (o.get("looked_up") or [])}
                       | set((result.get("settled") or {}).get("looked_up") or []))
        if not names or self.size >= self.limit:
            return False
        try:
            keys = self.keys(models if models is not None else self.models(sources), sources, exercise, needed, names)
        except Impure:
            return False
        entry = {"tests": outcomes, "levels": result.get("levels") or {}}
        if isinstance(result.get("behaviour"), dict) and result["behaviour"]:
            entry["behaviour"] = result["behaviour"]
        if self._add(exercise, names, keys, entry):
            self.outbox.append([exercise, list(names), list(keys), entry])
        return True

    def _add(self, exercise, names, keys, entry):
        """Remember `entry` under these names and fingerprints; False if it was known."""
        slot = self.entries.setdefault(exercise, {}).setdefault(tuple(names), {})
        if tuple(keys) in slot:
            return False
        slot[tuple(keys)] = entry
        self.size += 1
        return True

    def take_new(self):
        """The entries stored since the last call, as JSON-able lists [exercise, names, keys,
        entry]: grade-batch passes them to its other grading processes (`absorb`), so that a
        class's code is graded once per batch, not once per process."""
        out, self.outbox = self.outbox, []
        return out

    def absorb(self, entries):
        """Add entries that another grading process of the same batch stored (`take_new`); they
        come from the batch, never from a worker.  Returns how many were new."""
        n = 0
        for item in entries if isinstance(entries, list) else ():
            if not (isinstance(item, list) and len(item) == 4 and isinstance(item[0], str)):
                continue
            exercise, names, keys, entry = item
            if not (isinstance(names, list) and names and all(isinstance(x, str) for x in names)
                    and isinstance(keys, list) and all(isinstance(x, str) for x in keys)
                    and isinstance(entry, dict) and isinstance(entry.get("tests"), dict) and entry["tests"]
                    and all(isinstance(o, dict) for o in entry["tests"].values())
                    and isinstance(entry.get("levels"), dict)):
                continue
            if self.size >= self.limit:
                break
            kept = {"tests": entry["tests"], "levels": entry["levels"]}
            if isinstance(entry.get("behaviour"), dict):
                kept["behaviour"] = entry["behaviour"]
            n += self._add(exercise, names, keys, kept)
        return n


REUSABLE = {"passed", "failed", "missing"}  # what the same code always gets again
_FRAME = re.compile(r", line \d+, in ")


def settled_outcomes(result):
    """The outcomes to remember of an exercise's `result`, or None when it must not be reused.

    Every test passed: always (as before).  A failure only when what it says depends on the code
    alone: one judge ran every test and ended normally, its diagnosis finished well inside its
    budget (the runner's "settled"), no time-out, crash or grader error, and no feedback that
    shows the student's frames ("masks.py, line 12, in causal_mask": line numbers and file names
    that the normalized fingerprint leaves out) or a module's name ("<class 'submission_masks.Foo'>":
    the file's name, another in a folder, in one file and in a notebook)."""
    tests = result.get("tests") or {}
    statuses = {o.get("status") for o in tests.values()}
    if statuses == {"passed"}:
        return {k: {"status": "passed", "seconds": o.get("seconds", 0.0),
                    "looked_up": list(o.get("looked_up") or [])} for k, o in tests.items()}
    if not statuses <= REUSABLE or not isinstance(result.get("settled"), dict):
        return None
    try:
        text = json.dumps(tests, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return None
    if _FRAME.search(text) or "submission_" in text:  # frames, or a module's name (str(type(obj)))
        return None
    return json.loads(text)
