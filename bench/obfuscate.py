"""An automatic obfuscator: what a student does to a classmate's code to hide the copy.

    obfuscate(source, kinds, rng) -> source

`source` is a module (functions and classes); each top-level definition is rewritten with ast by
the transformations named in `kinds` (any of KINDS), each usable on its own or combined:

  rename      every local variable gets another name (parameters keep theirs: a call by keyword
              must still work)
  comments    the docstring replaced, comments written above statements
  format      another layout: blank lines, redundant parentheses, line breaks inside calls
  reorder     independent neighbouring statements swapped
  deadcode    statements that do nothing inserted: an unused variable, `if False:` blocks,
              `pass`, a bare expression
  loops       a list comprehension written as a loop that appends, and such a loop as a
              comprehension
  temporaries an expression split into temporaries (`return f(g(x))` -> `t = g(x); return f(t)`),
              and a single-use temporary inlined

The result is valid Python that computes what the original computes.  Used by
bench/similarity_bench.py (planted copies) and tests/test_similarity.py.
"""

import ast
import copy
import random
import re

from autograder.similarity.normalize import replace_node

KINDS = ("rename", "comments", "format", "reorder", "deadcode", "loops", "temporaries")
WORDS = [
    "val",
    "tmp",
    "res",
    "acc",
    "buf",
    "item",
    "data",
    "cur",
    "node",
    "part",
    "piece",
    "thing",
    "elem",
    "stuff",
    "blob",
    "hold",
    "keep",
    "x",
    "y",
    "z",
    "q",
    "w",
    "u",
    "aux",
    "mid",
    "step",
]


def obfuscate(source, kinds, rng=None):
    rng = rng or random.Random(0)
    tree = ast.parse(source)
    for i, node in enumerate(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            tree.body[i] = _definition(node, kinds, rng)
    text = ast.unparse(ast.fix_missing_locations(tree))
    if "format" in kinds:
        text = _reformat(text, rng)
    if "comments" in kinds:
        text = _comment(text, rng)
    return text + "\n"


def _functions(node):
    return [n for n in ast.walk(node) if isinstance(n, ast.FunctionDef)]


def _definition(node, kinds, rng):
    node = copy.deepcopy(node)
    for fn in _functions(node):
        if "comments" in kinds:
            _set_docstring(fn, rng)
        if "loops" in kinds:
            _loops(fn, rng)
        if "temporaries" in kinds:
            _temporaries(fn, rng)
        if "deadcode" in kinds:
            _deadcode(fn, rng)
        if "reorder" in kinds:
            _reorder(fn, rng)
        if "rename" in kinds:
            _rename(fn, rng)
    return node


# ---------------------------------------------------------------- the transformations


def _set_docstring(fn, rng):
    doc = ast.Expr(
        ast.Constant(
            rng.choice(
                [
                    "My implementation.",
                    "Computes the result as in class.",
                    "Helper written for the assignment.",
                    "See the notebook.",
                ]
            )
        )
    )
    if (
        fn.body
        and isinstance(fn.body[0], ast.Expr)
        and isinstance(fn.body[0].value, ast.Constant)
        and isinstance(fn.body[0].value.value, str)
    ):
        fn.body[0] = doc
    else:
        fn.body.insert(0, doc)


def _params(fn):
    a = fn.args
    names = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    if a.vararg:
        names.add(a.vararg.arg)
    if a.kwarg:
        names.add(a.kwarg.arg)
    return names


def _rename(fn, rng):
    params = _params(fn)
    local = sorted({n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} - params)
    taken = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | params
    mapping = {}
    for name in local:
        while True:
            new = f"{rng.choice(WORDS)}_{rng.randrange(100)}"
            if new not in taken:
                break
        taken.add(new)
        mapping[name] = new
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and n.id in mapping:
            n.id = mapping[n.id]
        elif isinstance(n, ast.Lambda):  # a lambda's own parameters follow its body's names
            for a in n.args.args:
                if a.arg in mapping:
                    a.arg = mapping[a.arg]


def _blocks(fn):
    out = []
    for n in ast.walk(fn):
        for field in ("body", "orelse"):
            b = getattr(n, field, None)
            if isinstance(b, list) and b and isinstance(b[0], ast.stmt):
                out.append(b)
    return out


def _deadcode(fn, rng):
    for block in _blocks(fn):
        if rng.random() < 0.8:
            name = f"unused_{rng.randrange(1000)}"
            dead = rng.choice(
                [
                    f"{name} = {rng.randrange(100)}",
                    "if False:\n    print('debug')",
                    "pass",
                    f"{name} = [0] * {rng.randrange(2, 9)}",
                    "None",
                ]
            )
            at = rng.randrange(0, max(1, len(block) - (1 if _ends(block) else 0)) + 1)
            at = min(at, len(block) - 1 if _ends(block) else len(block))
            block[at:at] = ast.parse(dead).body


def _ends(block):
    return isinstance(block[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _effects(stmt):
    reads, writes = set(), set()
    for n in ast.walk(stmt):
        if isinstance(n, ast.Name):
            (writes if isinstance(n.ctx, ast.Store) else reads).add(n.id)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            base = n.func.value
            while isinstance(base, (ast.Attribute, ast.Subscript)):
                base = base.value
            if isinstance(base, ast.Name):
                writes.add(base.id)
        elif isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):
            base = n.value
            while isinstance(base, (ast.Attribute, ast.Subscript)):
                base = base.value
            if isinstance(base, ast.Name):
                writes.add(base.id)
    return reads, writes


def _reorder(fn, rng):
    simple = (ast.Assign, ast.AugAssign, ast.AnnAssign)
    for block in _blocks(fn):
        for i in range(len(block) - 1):
            a, b = block[i], block[i + 1]
            if isinstance(a, simple) and isinstance(b, simple):
                ra, wa = _effects(a)
                rb, wb = _effects(b)
                if not (wa & (rb | wb)) and not (wb & ra) and rng.random() < 0.9:
                    block[i], block[i + 1] = b, a


def _loops(fn, rng):
    """A list comprehension assigned to a name -> a loop; a loop appending to a fresh list -> a
    comprehension."""
    for block in _blocks(fn):
        i = 0
        while i < len(block):
            s = block[i]
            if (
                isinstance(s, ast.Assign)
                and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)
                and isinstance(s.value, ast.ListComp)
                and len(s.value.generators) == 1
            ):
                name, comp = s.targets[0].id, s.value
                gen = comp.generators[0]
                body = [
                    ast.Expr(ast.Call(ast.Attribute(ast.Name(name, ast.Load()), "append", ast.Load()), [comp.elt], []))
                ]
                for cond in reversed(gen.ifs):
                    body = [ast.If(cond, body, [])]
                block[i : i + 1] = [
                    ast.Assign([ast.Name(name, ast.Store())], ast.List([], ast.Load())),
                    ast.For(gen.target, gen.iter, body, []),
                ]
                i += 2
                continue
            if (
                i + 1 < len(block)
                and isinstance(s, ast.Assign)
                and isinstance(s.value, ast.List)
                and not s.value.elts
                and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)
            ):
                loop = block[i + 1]
                name = s.targets[0].id
                if (
                    isinstance(loop, ast.For)
                    and not loop.orelse
                    and len(loop.body) == 1
                    and isinstance(loop.body[0], ast.Expr)
                    and isinstance(loop.body[0].value, ast.Call)
                ):
                    c = loop.body[0].value
                    if (
                        isinstance(c.func, ast.Attribute)
                        and c.func.attr == "append"
                        and isinstance(c.func.value, ast.Name)
                        and c.func.value.id == name
                        and len(c.args) == 1
                    ):
                        s.value = ast.ListComp(c.args[0], [ast.comprehension(loop.target, loop.iter, [], 0)])
                        del block[i + 1]
            i += 1


def _temporaries(fn, rng):
    """Split: the first argument of a call in a return / assignment becomes a temporary.
    Inline: a temporary assigned and then read once by the next statement is put in its place."""
    counter = [0]
    for block in _blocks(fn):
        i = 0
        while i < len(block):
            s = block[i]
            # inline first (so a split temporary is not inlined again)
            if (
                i + 1 < len(block)
                and isinstance(s, ast.Assign)
                and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)
                and rng.random() < 0.5
            ):
                name = s.targets[0].id
                uses = [n for st in block[i + 1 :] for n in ast.walk(st) if isinstance(n, ast.Name) and n.id == name]
                nxt = block[i + 1]
                if (
                    len(uses) == 1
                    and any(u is n for n in ast.walk(nxt) for u in uses)
                    and isinstance(nxt, (ast.Return, ast.Assign))
                    and not _in_fn(fn, name, s)
                ):
                    replace_node(nxt, uses[0], s.value)
                    del block[i]
                    continue
            value = s.value if isinstance(s, (ast.Return, ast.Assign)) else None
            if isinstance(value, ast.Call) and value.args and isinstance(value.args[0], (ast.Call, ast.BinOp)):
                counter[0] += 1
                name = f"part{counter[0]}"
                tmp = ast.Assign([ast.Name(name, ast.Store())], value.args[0])
                value.args[0] = ast.Name(name, ast.Load())
                block.insert(i, tmp)
                i += 2
                continue
            if isinstance(value, ast.BinOp) and isinstance(value.left, (ast.Call, ast.BinOp)):
                counter[0] += 1
                name = f"part{counter[0]}"
                block.insert(i, ast.Assign([ast.Name(name, ast.Store())], value.left))
                value.left = ast.Name(name, ast.Load())
                i += 2
                continue
            i += 1


def _in_fn(fn, name, assign):
    """`name` is assigned elsewhere in fn too (then it is not a simple temporary)."""
    return sum(1 for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)) > 1


# ---------------------------------------------------------------- text


def _reformat(text, rng):
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        m = re.match(r"^(\s*)return (.+)$", line)
        if m and rng.random() < 0.5 and not stripped.endswith(":"):
            line = f"{m.group(1)}return ({m.group(2)})"
        out.append(line)
        if stripped and rng.random() < 0.25:
            out.append("")
    return "\n".join(out).replace(", ", " , " if rng.random() < 0.5 else ",")


def _comment(text, rng):
    out = []
    for line in text.splitlines():
        if line.strip() and not line.rstrip().endswith((",", "(", "[")) and rng.random() < 0.3:
            indent = line[: len(line) - len(line.lstrip())]
            if not line.lstrip().startswith(("else", "elif", "except", "finally", ")", "]")):
                out.append(
                    f"{indent}# {rng.choice(['step', 'compute it', 'the main part', 'as in the lecture', 'done'])}"
                )
        out.append(line)
    return "\n".join(out)
