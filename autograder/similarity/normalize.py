"""A function's code in a canonical form, so that what obfuscation changes no longer shows.

``normalize(node)`` takes the ``ast`` of one function (or class) and returns a new tree where

* docstrings, comments (gone with the parse), formatting (gone with the parse), ``pass``, bare
  constants, ``print(...)`` calls and other statements that do nothing are dropped;
* dead code is dropped: what follows a ``return`` / ``raise`` / ``break`` / ``continue`` in its
  block, ``if False:`` / ``while 0:`` bodies, ``if True:`` reduced to its body, and assignments to
  a local name that nothing reads;
* a loop that only appends to (or sets items of) a fresh list / dict / set is written as the
  comprehension it is: ``xs = []; for v in it: xs.append(e)`` reads as ``xs = [e for v in it]``;
* a temporary assigned once and read once, later in the same block, is inlined
  (``s = q @ k; return s`` reads as ``return q @ k``), so splitting an expression into
  temporaries and inlining them give the same tree;
* statements of a block that do not depend on each other (neither reads or writes what the other
  writes, neither ends the block) are put in one canonical order;
* names are renamed: the parameters ``a0, a1, ...`` in order, the other local names ``v0, v1, ...``
  in order of first appearance after the ordering; global names (``torch``, ``F``, ``math``, the
  contract's other functions) and attribute names stay what they are.

Line numbers are kept on every node that comes from the student's code, so that a fingerprint of
the canonical tree still points at the lines it was made from (fingerprint.py).  Parsing only:
nothing here ever runs the code it reads.
"""

import ast
import copy
import math
import re

NOOP_CALLS = {"print", "breakpoint", "display"}  # calls that change no value the function returns


def normalize(node):
    """A canonical copy of the FunctionDef / ClassDef `node` (which is left unchanged)."""
    tree = copy.deepcopy(node)
    tree = _Canon().visit(tree)
    tree = _Simplify().visit(tree)
    for fn in reversed(_functions(tree)):  # a function defined inside another is made canonical first
        _versions(fn)
        names = _local_names(fn)  # the passes below only remove names: computed once
        for _ in range(4):  # each pass can uncover more (an inlined temporary, a store now dead)
            changed = _loops_to_comprehensions(fn, names)
            changed |= _inline_temporaries(fn, names)
            changed |= _drop_dead_stores(fn, names)
            changed |= _if_expressions(fn)
            if not changed:
                break
        _commute(fn, _blind(fn, names))  # the order below reads operands already in one order
        _order_blocks(fn, names)
        _rename(fn, names)
        _commute(fn)
    ast.fix_missing_locations(tree)
    return tree


def _functions(tree):
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and not isinstance(n, ast.Lambda)
    ]


# ---------------------------------------------------------------- no-ops and dead code


def _is_noop(stmt):
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr):
        v = stmt.value
        if isinstance(v, (ast.Constant, ast.Name, ast.Attribute)):  # a docstring, `x`, `...`
            return True
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in NOOP_CALLS:
            return True
    return False


def _const_truth(test):
    if isinstance(test, ast.Constant):
        return bool(test.value)
    return None


class _Simplify(ast.NodeTransformer):
    def _block(self, body, keep_one=True):
        out = []
        for stmt in body:
            stmt = self.visit(stmt)
            if stmt is None:
                continue
            for s in stmt if isinstance(stmt, list) else [stmt]:
                if _is_noop(s):
                    continue
                out.append(s)
                if isinstance(s, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
                    return out  # what follows is never run
        if not out and keep_one:
            out = [ast.Pass()]
        return out

    def generic_visit(self, node):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and (not block or isinstance(block[0], ast.stmt)):
                setattr(node, name, self._block(block, keep_one=(name == "body")))
        for name, value in ast.iter_fields(node):
            if name in ("body", "orelse", "finalbody") and isinstance(value, list):
                continue
            if isinstance(value, list):
                new = []
                for v in value:
                    if isinstance(v, ast.AST):
                        v = self.visit(v)
                        if v is None:
                            continue
                        if isinstance(v, list):
                            new.extend(v)
                            continue
                    new.append(v)
                setattr(node, name, new)
            elif isinstance(value, ast.AST):
                setattr(node, name, self.visit(value))
        return node

    def visit_If(self, node):
        truth = _const_truth(node.test)
        if truth is True:
            return self._block(node.body, keep_one=False)
        if truth is False:
            return self._block(node.orelse, keep_one=False)
        return self.generic_visit(node)

    def visit_While(self, node):
        if _const_truth(node.test) is False:
            return self._block(node.orelse, keep_one=False)
        return self.generic_visit(node)


# ---------------------------------------------------------------- reads and writes


def _stored(target):
    """Names a target writes (a subscript or attribute store writes its base name)."""
    out = set()
    for n in ast.walk(target):
        if isinstance(n, ast.Name):
            out.add(n.id)
    return out


def _effects(stmt, local=None):
    """(names read, names written) by a statement.  A call of a method that changes its object
    (`xs.append(v)`, `x.add_(1)`: MUTATORS, or torch's in-place `..._`) counts as writing it too,
    so the order of two such calls is kept -- on a local name (`local`, when given); `x.size(1)`,
    `x.view(...)` and `torch.zeros(...)` write nothing."""
    reads, writes = set(), set()
    for n in ast.walk(stmt):
        if isinstance(n, ast.Name):
            (writes if isinstance(n.ctx, (ast.Store, ast.Del)) else reads).add(n.id)
        elif isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            writes |= _stored(n)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and _mutates(n.func.attr):
            base = n.func.value
            while isinstance(base, (ast.Attribute, ast.Subscript)):
                base = base.value
            if isinstance(base, ast.Name) and (local is None or base.id in local):
                writes.add(base.id)
    return reads, writes


MUTATORS = {
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "clear",
    "sort",
    "reverse",
    "update",
    "add",
    "setdefault",
    "discard",
    "popitem",
    "fill_diagonal_",
    "requires_grad_",
    "backward",
}


def _mutates(method):
    return method in MUTATORS or (method.endswith("_") and not method.startswith("_"))


def _blocks(fn):
    """Every statement list inside `fn` (its body first), not entering nested functions."""
    out, todo = [], [fn]
    while todo:
        node = todo.pop()
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                out.append(block)
                todo.extend(
                    s for s in block if not isinstance(s, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                )
        for h in getattr(node, "handlers", []) or []:
            out.append(h.body)
            todo.extend(h.body)
    return out


def _params(fn):
    a = fn.args
    names = [x.arg for x in [*a.posonlyargs, *a.args]]
    if a.vararg:
        names.append(a.vararg.arg)
    names += [x.arg for x in a.kwonlyargs]
    if a.kwarg:
        names.append(a.kwarg.arg)
    return names


def _local_names(fn):
    params = set(_params(fn))
    stored = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stored.add(n.id)
        elif isinstance(n, ast.arg) and n.arg not in params:
            stored.add(n.arg)  # a lambda's parameter
    return params, stored - params


def _loads(fn, name):
    return [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]


def _stores(fn, name):
    return [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)]


# ---------------------------------------------------------------- loops as comprehensions


def _fresh(value):
    """'list' / 'dict' / 'set' when `value` builds an empty container, else None."""
    if isinstance(value, ast.List) and not value.elts:
        return "list"
    if isinstance(value, ast.Dict) and not value.keys:
        return "dict"
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and not value.args and not value.keywords:
        return {"list": "list", "dict": "dict", "set": "set"}.get(value.func.id)
    return None


def _accumulates(body, name, kind):
    """(element / key-value, conditions, inner loops) when `body` only adds to `name`."""
    conds, loops = [], []
    while len(body) == 1 and isinstance(body[0], (ast.If, ast.For)):
        s = body[0]
        if isinstance(s, ast.If) and not s.orelse:
            conds.append(s.test)
            body = s.body
        elif isinstance(s, ast.For) and not s.orelse:
            loops.append(s)
            body = s.body
        else:
            break
    if len(body) != 1:
        return None
    s = body[0]
    if kind in ("list", "set") and isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
        c = s.value
        method = "append" if kind == "list" else "add"
        if (
            isinstance(c.func, ast.Attribute)
            and c.func.attr == method
            and isinstance(c.func.value, ast.Name)
            and c.func.value.id == name
            and len(c.args) == 1
            and not c.keywords
        ):
            return (c.args[0],), conds, loops
    if kind == "dict" and isinstance(s, ast.Assign) and len(s.targets) == 1:
        t = s.targets[0]
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name:
            return (t.slice, s.value), conds, loops
    return None


def _loops_to_comprehensions(fn, names=None):
    changed = False
    local = set().union(*(names or _local_names(fn)))
    for block in _blocks(fn):
        i = 0
        while i + 1 < len(block):
            a = block[i]
            j = i + 1  # the loop may come a few statements later, when they do not touch the list
            if isinstance(a, ast.Assign) and len(a.targets) == 1 and isinstance(a.targets[0], ast.Name):
                while (
                    j < len(block) - 1
                    and not isinstance(block[j], ast.For)
                    and isinstance(block[j], (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr))
                    and a.targets[0].id not in set().union(*_effects(block[j], local))
                ):
                    j += 1
            b = block[j]
            if (
                isinstance(a, ast.Assign)
                and len(a.targets) == 1
                and isinstance(a.targets[0], ast.Name)
                and _fresh(a.value)
                and isinstance(b, ast.For)
                and not b.orelse
            ):
                name, kind = a.targets[0].id, _fresh(a.value)
                got = _accumulates(b.body, name, kind)
                if got is not None:
                    elt, conds, loops = got
                    if not any(
                        n.id == name
                        for n in ast.walk(ast.Module(body=[*elt, *conds], type_ignores=[]))
                        if isinstance(n, ast.Name)
                    ):
                        gens = [ast.comprehension(target=b.target, iter=b.iter, ifs=[], is_async=0)]
                        for lp in loops:
                            gens.append(ast.comprehension(target=lp.target, iter=lp.iter, ifs=[], is_async=0))
                        gens[-1].ifs = conds
                        if kind == "list":
                            comp = ast.ListComp(elt=elt[0], generators=gens)
                        elif kind == "set":
                            comp = ast.SetComp(elt=elt[0], generators=gens)
                        else:
                            comp = ast.DictComp(key=elt[0], value=elt[1], generators=gens)
                        a.value = ast.copy_location(comp, b)
                        block[j] = a  # the list is built where the loop was
                        del block[i]
                        changed = True
                        continue
            i += 1
    return changed


# ---------------------------------------------------------------- temporaries


def _inline_temporaries(fn, names=None):
    """Inline `x = expr` into the one later statement of the same block that reads x, when x is
    assigned nowhere else and read nowhere else, and nothing between writes what expr reads."""
    params, local = names or _local_names(fn)
    stores, loads, comp_targets = {}, {}, set()
    for n in ast.walk(fn):  # one walk: an inlining below removes its name only, moves no other name
        if isinstance(n, ast.Name):
            (stores if isinstance(n.ctx, ast.Store) else loads).setdefault(n.id, []).append(n)
        elif isinstance(n, ast.comprehension):
            comp_targets.update(x.id for x in ast.walk(n.target) if isinstance(x, ast.Name))
    changed = False
    for block in _blocks(fn):
        i = 0
        while i < len(block):
            s = block[i]
            if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)):
                i += 1
                continue
            name = s.targets[0].id
            if name not in local or len(stores.get(name, ())) != 1 or name in comp_targets:
                i += 1
                continue
            uses = [u for u in loads.get(name, ()) if isinstance(u.ctx, ast.Load)]
            if len(uses) != 1:
                i += 1
                continue
            reads, _ = _effects(s.value, params | local)
            target = None
            for j in range(i + 1, len(block)):
                if any(u is n for n in ast.walk(block[j]) for u in uses):
                    target = j
                    break
                _, w = _effects(block[j], params | local)
                if w & reads:
                    break
            if (
                target is None
                or isinstance(block[target], (ast.For, ast.While))
                and _inside_loop_body(block[target], uses[0])
            ):
                i += 1
                continue
            replace_node(block[target], uses[0], s.value)
            del block[i]
            stores.pop(name, None)
            loads.pop(name, None)
            changed = True
        # next block
    return changed


def _inside_loop_body(loop, use):
    return any(use is n for s in loop.body for n in ast.walk(s))


def replace_node(root, old, new):
    """Put `new` where the node `old` is in the tree `root` (in place)."""
    for parent in ast.walk(root):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for k, v in enumerate(value):
                    if v is old:
                        value[k] = new
                        return


def _drop_dead_stores(fn, names=None):
    """`x = expr` where x is a local name that nothing reads: gone (a call's side effects aside,
    which dead code inserted to obfuscate does not have)."""
    params, local = names or _local_names(fn)
    read = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    changed = False
    for block in _blocks(fn):
        for s in list(block):
            if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and all(
                isinstance(t, ast.Name) and t.id in local and t.id not in read
                for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
            ):
                if len(block) > 1:
                    block.remove(s)
                    changed = True
    return changed


# ---------------------------------------------------------------- canonical order

_NAMES = re.compile(r"Name\('([^']*)'")


def _shape(node, names, local):
    """The ordering key of a statement: its tree's text, the local names already placed written as
    their place, the others blind (the order must not depend on what they are called)."""
    text = ast.dump(node, annotate_fields=False, include_attributes=False)

    def name(m):
        n = m.group(1)
        return "Name('" + (names.get(n) or ("_" if n in local else n)) + "'"

    return _NAMES.sub(name, text)


def _order_blocks(fn, names=None):
    """Every block in a canonical order: among the statements whose dependencies are placed, the
    smallest key first; the names a placed statement writes are then numbered, so that the keys
    of the rest tell `a @ b` from `b @ a` without depending on what the names were."""
    params, local = names or _local_names(fn)
    names = {p: f"a{i}" for i, p in enumerate(_params(fn))}
    _order(fn.body, names, params | local)


def _order(block, names, local):
    n = len(block)
    if n >= 2:
        fx = [_effects(s, local) for s in block]
        deps = [set() for _ in range(n)]
        barrier = None
        for j in range(n):
            rj, wj = fx[j]
            for i in range(j):
                ri, wi = fx[i]
                if (wi & (rj | wj)) or (wj & ri):
                    deps[j].add(i)
            if barrier is not None:
                deps[j].add(barrier)
            if not isinstance(block[j], (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)):
                for i in range(j):
                    deps[j].add(i)  # control flow, a return, a raise: keeps its place
                barrier = j
        done, order = set(), []
        while len(order) < n:
            ready = [k for k in range(n) if k not in done and deps[k] <= done]
            k = min(ready, key=lambda k: (_shape(block[k], names, local), k))
            done.add(k)
            order.append(k)
            _number(block[k], names, local)
        block[:] = [block[k] for k in order]
    else:
        for s in block:
            _number(s, names, local)
    for s in block:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                _order(inner, names, local)
        for h in getattr(s, "handlers", []) or []:
            _order(h.body, names, local)


def _number(stmt, names, local):
    for x in ast.walk(stmt):
        if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store) and x.id in local and x.id not in names:
            names[x.id] = f"v{len(names)}"


# ---------------------------------------------------------------- one name, one value


def _versions(fn):
    """A name assigned several times, each time by a plain assignment in the function's own body
    (`x = x.float()`, later `x = x / 2`), becomes one name per value, as if the student had used
    new names: each value can then be inlined or ordered on its own."""
    simple = {}
    for s in fn.body:
        if isinstance(s, ast.Assign):
            for t in s.targets:
                for x in ast.walk(t):
                    if isinstance(x, ast.Name):
                        simple.setdefault(x.id, []).append(x)
    stored = {}
    for x in ast.walk(fn):
        if isinstance(x, ast.Name) and isinstance(x.ctx, (ast.Store, ast.Del)):
            stored[x.id] = stored.get(x.id, 0) + 1
        elif isinstance(x, ast.AugAssign) and isinstance(x.target, ast.Name):
            stored[x.target.id] = stored.get(x.target.id, 0) + 1
    params = set(_params(fn))
    names = {k for k, v in simple.items() if stored.get(k, 0) == len(v) and len(v) + (k in params) >= 2}
    if not names:
        return
    current, count = {}, {}
    for s in fn.body:
        targets = s.targets if isinstance(s, ast.Assign) else []
        stores = {id(x) for t in targets for x in ast.walk(t) if isinstance(x, ast.Name)}
        for x in ast.walk(s):
            if isinstance(x, ast.Name) and x.id in current and id(x) not in stores:
                x.id = current[x.id]
        for t in targets:
            for x in ast.walk(t):
                if isinstance(x, ast.Name) and x.id in names and id(x) in stores:
                    count[x.id] = count.get(x.id, 0) + 1
                    current[x.id] = new = f"{x.id}__{count[x.id]}"
                    x.id = new


# ---------------------------------------------------------------- names


def _rename(fn, names=None):
    params, local = names or _local_names(fn)
    mapping = {p: f"a{i}" for i, p in enumerate(_params(fn)) if p not in ("self", "cls")}
    count = 0
    for n in ast.walk(fn):  # breadth-first: statement order first
        name = n.id if isinstance(n, ast.Name) else n.arg if isinstance(n, ast.arg) else None
        if name in local and name not in mapping:
            mapping[name] = f"v{count}"
            count += 1
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and n.id in mapping:
            n.id = mapping[n.id]
        elif isinstance(n, ast.arg) and n.arg in mapping:
            n.arg = mapping[n.arg]
    fn.name = fn.name  # the contract's name stays
    return mapping


# ---------------------------------------------------------------- one spelling of each operation

METHOD_FUNCTIONS = {
    "sum",
    "mean",
    "exp",
    "log",
    "tanh",
    "sigmoid",
    "relu",
    "abs",
    "sqrt",
    "masked_fill",
    "softmax",
    "log_softmax",
    "transpose",
    "matmul",
    "bmm",
    "mm",
    "max",
    "min",
    "argmax",
    "cumsum",
    "clamp",
    "where",
    "view",
    "reshape",
    "permute",
    "unsqueeze",
    "squeeze",
    "flatten",
    "tril",
    "triu",
    "pow",
    "norm",
    "std",
    "var",
    "prod",
    "logsumexp",
}
MODULES = {
    "torch": "torch",
    "torch.nn": "nn",
    "torch.nn.functional": "F",
    "nn.functional": "F",
    "math": "math",
    "numpy": "np",
}
DIM_SECOND = {
    "softmax",
    "log_softmax",
    "cat",
    "stack",
    "sum",
    "mean",
    "cumsum",
    "argmax",
    "argmin",
    "logsumexp",
    "unsqueeze",
    "squeeze",
    "flatten",
    "max",
    "min",
    "std",
    "var",
    "prod",
    "norm",
}
BIG = 1e4  # a constant this large or larger only says "very large" (a mask's fill value)


def aliases(modules):
    """{name: canonical dotted name} of the imports of the modules (trees) of one submission:
    `import torch as th` -> {"th": "torch"}, `from torch.nn import functional as G` -> {"G": "F"},
    `from torch import matmul` -> {"matmul": "torch.matmul"}."""
    out = {}
    for tree in modules:
        for node in getattr(tree, "body", []):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name in MODULES:
                        out[a.asname] = MODULES[a.name]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    if full in MODULES:
                        out[a.asname or a.name] = MODULES[full]
                    elif node.module in MODULES and a.name != "*":
                        out[a.asname or a.name] = f"{MODULES[node.module]}.{a.name}"
    return {k: v for k, v in out.items() if k != v}


def resolve(node, names, helpers=None):
    """`node` (changed in place) with the module aliases `names` (aliases()) written as their
    canonical module, and each call of a helper in `helpers` ({name: FunctionDef}) that only
    returns an expression replaced by that expression: moving a piece into a helper function or
    back changes nothing."""
    stored = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    stored |= {
        a.arg for n in ast.walk(node) if isinstance(n, ast.arguments) for a in [*n.posonlyargs, *n.args, *n.kwonlyargs]
    }
    if helpers:
        _inline_helpers(node, {k: h for k, h in helpers.items() if k not in stored})
    names = {k: v for k, v in names.items() if k not in stored}
    for parent in ast.walk(node):
        for field, value in ast.iter_fields(parent):
            if isinstance(value, ast.Name) and value.id in names:
                setattr(parent, field, _dotted(names[value.id], value))
            elif isinstance(value, list):
                for i, v in enumerate(value):
                    if isinstance(v, ast.Name) and v.id in names:
                        value[i] = _dotted(names[v.id], v)
    return node


def _dotted(path, where):
    parts = path.split(".")
    out = ast.copy_location(ast.Name(parts[0], ast.Load()), where)
    for p in parts[1:]:
        out = ast.copy_location(ast.Attribute(out, p, ast.Load()), where)
    return out


def _returns_only(fn):
    body = [s for s in fn.body if not _is_noop(s)]
    a = fn.args
    if (
        len(body) == 1
        and isinstance(body[0], ast.Return)
        and body[0].value is not None
        and not a.vararg
        and not a.kwarg
        and not a.kwonlyargs
        and not a.posonlyargs
        and not a.defaults
    ):
        return [x.arg for x in a.args], body[0].value
    return None


def _inline_helpers(node, helpers, depth=0):
    if depth > 3:
        return
    simple = {k: r for k, h in helpers.items() if (r := _returns_only(_Canon().visit(copy.deepcopy(h))))}
    if not simple:
        return
    for parent in list(ast.walk(node)):
        for field, value in ast.iter_fields(parent):
            items = value if isinstance(value, list) else [value]
            for i, v in enumerate(items):
                if (
                    isinstance(v, ast.Call)
                    and isinstance(v.func, ast.Name)
                    and v.func.id in simple
                    and not v.keywords
                    and len(v.args) == len(simple[v.func.id][0])
                    and not any(isinstance(x, ast.Starred) for x in v.args)
                ):
                    params, expr = simple[v.func.id]
                    new = copy.deepcopy(expr)
                    args = dict(zip(params, v.args))
                    for n in ast.walk(new):
                        if hasattr(n, "lineno"):
                            n.lineno, n.end_lineno = v.lineno, getattr(v, "end_lineno", v.lineno)
                    new = _Substitute(args).visit(new)
                    if isinstance(value, list):
                        value[i] = new
                    else:
                        setattr(parent, field, new)
    _inline_helpers(node, helpers, depth + 1)


class _Substitute(ast.NodeTransformer):
    def __init__(self, args):
        self.args = args

    def visit_Name(self, node):
        if node.id in self.args and isinstance(node.ctx, ast.Load):
            return copy.deepcopy(self.args[node.id])
        return node


def _number_value(node):
    """The number a constant expression stands for (`10 ** 9`, `-1e9`, `float('-inf')`, `1 / 2`), or None."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _number_value(node.operand)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Pow, ast.Mult, ast.Div, ast.Add, ast.Sub)):
        a, b = _number_value(node.left), _number_value(node.right)
        if a is None or b is None:
            return None
        try:
            if isinstance(node.op, ast.Pow):
                return float(a) ** b if abs(b) < 400 else None
            return (
                {ast.Mult: a * b, ast.Add: a + b, ast.Sub: a - b}.get(type(node.op))
                if not isinstance(node.op, ast.Div)
                else (a / b if b else None)
            )
        except (OverflowError, ZeroDivisionError):
            return None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "float"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        try:
            return float(node.args[0].value)
        except ValueError:
            return None
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in ("math", "torch", "np")
    ):
        return {"inf": float("inf"), "pi": math.pi, "e": math.e}.get(node.attr)
    return None


def _is_module(node):
    return isinstance(node, ast.Name) and node.id in ("torch", "F", "math", "np", "nn")


class _Canon(ast.NodeTransformer):
    """One spelling of what can be written several ways: `x += y` is `x = x + y`, `torch.matmul(a,
    b)` is `a @ b`, `torch.sum(x, 1)` is `x.sum(1)`, `x.mT` is `x.transpose(-2, -1)`, `dim=` given by
    position or by keyword, keywords in one order, a constant's value however it is written (any
    value of BIG or more: infinite), an f-string without a field is its string, annotations and
    `assert`s (checks that change no value) are gone, and `try: ... except: raise` is its body."""

    def generic_visit(self, node):
        super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(node, field, _while_to_for(block))
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if isinstance(node.target, ast.Name):
            return ast.copy_location(
                ast.Assign(
                    [node.target],
                    ast.copy_location(
                        ast.BinOp(ast.copy_location(ast.Name(node.target.id, ast.Load()), node), node.op, node.value),
                        node,
                    ),
                ),
                node,
            )
        return node

    def visit_AnnAssign(self, node):
        self.generic_visit(node)
        if node.value is None:
            return None
        return ast.copy_location(ast.Assign([node.target], node.value), node)

    def visit_Assert(self, node):
        return None

    def visit_Try(self, node):
        self.generic_visit(node)
        if (
            not node.orelse
            and not node.finalbody
            and node.handlers
            and all(
                len(h.body) == 1 and isinstance(h.body[0], ast.Raise) and h.body[0].exc is None for h in node.handlers
            )
        ):
            return node.body
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        flip = {ast.Gt: ast.Lt, ast.GtE: ast.LtE}
        if len(node.ops) == 1 and type(node.ops[0]) in flip:
            return ast.copy_location(ast.Compare(node.comparators[0], [flip[type(node.ops[0])]()], [node.left]), node)
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        if node.orelse and _negated(node.test) is not None:
            node.test, node.body, node.orelse = _negated(node.test), node.orelse, node.body
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if _negated(node.test) is not None:
            node.test, node.body, node.orelse = _negated(node.test), node.orelse, node.body
        return node

    def visit_JoinedStr(self, node):
        self.generic_visit(node)
        if all(isinstance(v, ast.Constant) for v in node.values):
            return ast.copy_location(ast.Constant("".join(str(v.value) for v in node.values)), node)
        return node

    def visit_UnaryOp(self, node):
        return self._number(node) or self.generic_visit(node)

    def visit_BinOp(self, node):
        number = self._number(node)
        if number:
            return number
        self.generic_visit(node)
        return node

    def _number(self, node):
        v = _number_value(node)
        if v is None or isinstance(node, ast.Constant):
            return None
        if isinstance(v, float) and v.is_integer() and abs(v) < BIG:
            v = int(v)
        if abs(v) >= BIG:
            v = math.copysign(float("inf"), v)
        return ast.copy_location(ast.Constant(v), node)

    def visit_Constant(self, node):
        if type(node.value) in (int, float) and abs(node.value) >= BIG:
            return ast.copy_location(ast.Constant(math.copysign(float("inf"), node.value)), node)
        return node

    def visit_Call(self, node):
        number = self._number(node)
        if number:
            return number
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and _is_module(f.value) and f.value.id in ("torch", "F"):
            if f.attr == "matmul" and len(node.args) == 2 and not node.keywords:
                return ast.copy_location(ast.BinOp(node.args[0], ast.MatMult(), node.args[1]), node)
            if f.attr in METHOD_FUNCTIONS and node.args and not isinstance(node.args[0], ast.Starred):
                node = ast.copy_location(
                    ast.Call(
                        ast.copy_location(ast.Attribute(node.args[0], f.attr, ast.Load()), f),
                        node.args[1:],
                        node.keywords,
                    ),
                    node,
                )
                f = node.func
        if (
            isinstance(f, ast.Attribute)
            and f.attr == "matmul"
            and len(node.args) == 1
            and not node.keywords
            and not _is_module(f.value)
        ):
            return ast.copy_location(ast.BinOp(f.value, ast.MatMult(), node.args[0]), node)
        if isinstance(f, ast.Attribute) and f.attr == "transpose" and len(node.args) == 2 and not node.keywords:
            vals = [_number_value(a) for a in node.args]
            if sorted(v for v in vals if v is not None) == [-2, -1] or vals == [1, 0] or vals == [0, 1]:
                node.args = sorted(node.args, key=lambda a: _number_value(a))
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        method = isinstance(f, ast.Attribute) and not _is_module(f.value)
        dims = [k for k in node.keywords if k.arg == "dim"]
        if name in DIM_SECOND and dims and len(node.args) == (0 if method else 1):
            node.args.append(dims[0].value)
            node.keywords = [k for k in node.keywords if k.arg != "dim"]
        node.keywords = sorted(node.keywords, key=lambda k: k.arg or "")
        return node

    def visit_arg(self, node):
        node.annotation = None
        return node

    def visit_FunctionDef(self, node):
        node.returns = None
        return self.generic_visit(node)

    def visit_Attribute(self, node):
        dotted = _dotted_name(node)
        if dotted in MODULES and MODULES[dotted] != dotted and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Name(MODULES[dotted], ast.Load()), node)
        self.generic_visit(node)
        if node.attr in ("mT", "T") and isinstance(node.ctx, ast.Load) and node.attr == "mT":
            return ast.copy_location(
                ast.Call(
                    ast.copy_location(ast.Attribute(node.value, "transpose", ast.Load()), node),
                    [ast.Constant(-2), ast.Constant(-1)],
                    [],
                ),
                node,
            )
        return node


def _if_expressions(fn):
    """An `if` that only picks one of two values to assign to one name (or tuple), or to return, as the
    conditional expression it is (once dead code is gone from its branches)."""
    changed = False
    for block in _blocks(fn):
        for k, node in enumerate(block):
            if not isinstance(node, ast.If):
                continue
            b, o = node.body, node.orelse
            if (
                not o
                and len(b) == 1
                and isinstance(b[0], ast.Return)
                and k + 2 == len(block)
                and isinstance(block[k + 1], ast.Return)
            ):
                node.orelse = o = [block.pop(k + 1)]  # `if c: return a` then `return b`: an else
            new = None
            if (
                len(b) == 1
                and len(o) == 1
                and isinstance(b[0], ast.Assign)
                and isinstance(o[0], ast.Assign)
                and len(b[0].targets) == len(o[0].targets) == 1
                and all(
                    isinstance(x, (ast.Name, ast.Tuple, ast.Starred))
                    for x in ast.walk(b[0].targets[0])
                    if not isinstance(x, ast.expr_context)
                )
                and ast.dump(b[0].targets[0]) == ast.dump(o[0].targets[0])
            ):
                new = ast.Assign(b[0].targets, ast.copy_location(ast.IfExp(node.test, b[0].value, o[0].value), node))
            elif (
                len(b) == 1
                and len(o) == 1
                and isinstance(b[0], ast.Return)
                and isinstance(o[0], ast.Return)
                and b[0].value is not None
                and o[0].value is not None
            ):
                new = ast.Return(ast.copy_location(ast.IfExp(node.test, b[0].value, o[0].value), node))
            if new is not None:
                block[k] = ast.copy_location(new, node)
                changed = True
    return changed


def _negated(test):
    """The plain test of a negated one (`not c`, `a is not b`, `a != b`), or None: an `if` with an
    `else` reads the same with its test negated and its branches swapped."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    neg = {ast.IsNot: ast.Is, ast.NotEq: ast.Eq, ast.NotIn: ast.In}
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in neg:
        return ast.copy_location(ast.Compare(test.left, [neg[type(test.ops[0])]()], test.comparators), test)
    return None


def _dotted_name(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def _while_to_for(block):
    """`i = 0; while i < n: ...; i += 1` (nothing else changing i) as `for i in range(n): ...`."""
    out = list(block)
    for k in range(len(out) - 1):
        a, w = out[k], out[k + 1]
        if not (
            isinstance(a, ast.Assign)
            and len(a.targets) == 1
            and isinstance(a.targets[0], ast.Name)
            and isinstance(a.value, ast.Constant)
            and a.value.value == 0
            and isinstance(w, ast.While)
            and not w.orelse
            and w.body
        ):
            continue
        i = a.targets[0].id
        t = w.test
        if not (
            isinstance(t, ast.Compare)
            and len(t.ops) == 1
            and isinstance(t.ops[0], ast.Lt)
            and isinstance(t.left, ast.Name)
            and t.left.id == i
        ):
            continue
        last = w.body[-1]
        step = (
            isinstance(last, ast.AugAssign)
            and isinstance(last.target, ast.Name)
            and last.target.id == i
            and isinstance(last.op, ast.Add)
            and isinstance(last.value, ast.Constant)
            and last.value.value == 1
        )
        step = step or (
            isinstance(last, ast.Assign)
            and len(last.targets) == 1
            and isinstance(last.targets[0], ast.Name)
            and last.targets[0].id == i
            and isinstance(last.value, ast.BinOp)
            and isinstance(last.value.op, ast.Add)
            and sorted(ast.dump(x) for x in (last.value.left, last.value.right))
            == sorted([ast.dump(ast.Name(i, ast.Load())), ast.dump(ast.Constant(1))])
        )
        rest = w.body[:-1]
        if (
            not step
            or not rest
            or any(isinstance(n, (ast.Continue, ast.Break)) for s in rest for n in ast.walk(s))
            or any(
                isinstance(n, ast.Name) and n.id == i and not isinstance(n.ctx, ast.Load)
                for s in rest
                for n in ast.walk(s)
            )
        ):
            continue
        loop = ast.copy_location(
            ast.For(
                ast.copy_location(ast.Name(i, ast.Store()), a),
                ast.copy_location(ast.Call(ast.Name("range", ast.Load()), list(t.comparators), []), w),
                rest,
                [],
            ),
            w,
        )
        out[k : k + 2] = [loop]
        return _while_to_for(out)
    return out


COMMUTATIVE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr)


def _commute(tree, key=None):
    """Operands of `+`, `*`, `&`, `|`, `==`, `!=` in one order (by their canonical text, or by
    `key`), inner ones first: `b * a` reads as `a * b` (on tensors and numbers these commute)."""
    key = key or _key
    for node in reversed(list(ast.walk(tree))):
        if isinstance(node, ast.BinOp) and isinstance(node.op, COMMUTATIVE):
            if key(node.right) < key(node.left):
                node.left, node.right = node.right, node.left
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            if key(node.comparators[0]) < key(node.left):
                node.left, node.comparators = node.comparators[0], [node.left]


def _key(node):
    return ast.dump(node, annotate_fields=False, include_attributes=False)


def _blind(fn, names):
    """A key for _commute before the local names are numbered: the parameters by their place,
    the other local names all alike."""
    params, local = names
    places = {p: f"a{i}" for i, p in enumerate(_params(fn))}
    return lambda node: _shape(node, places, params | local)
