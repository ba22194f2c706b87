"""A second obfuscator, written apart from bench/obfuscate.py and from the canonical form: the
disguises the canonical form was not designed around, kept apart from what it is tuned on.

    disguise(source, kinds, rng) -> source

Each kind (any of UNSEEN) rewrites every top-level definition of `source` (a module):

  commute     operands of `+`, `*`, `&`, `|`, `==`, `!=` swapped (`a * b` -> `b * a`)
  augment     `a = a + b` -> `a += b` and back
  calls       `a @ b` <-> `torch.matmul(a, b)`, `x.transpose(-2, -1)` -> `x.mT`, a method call
              written as torch's function and back (`x.sum(1)` <-> `torch.sum(x, 1)`)
  aliases     `import torch as th` (`torch.` -> `th.`), `F.` -> `torch.nn.functional.`
  control     `for i in range(n)` -> a `while` loop; `if c: x = a else: x = b` <-> a conditional
              expression
  keywords    keyword arguments in another order; `dim=d` given by position where it is second
  constants   `-1e9` -> `-10 ** 9` or `float('-inf')`, `0.5` -> `1 / 2`
  annotate    type annotations on parameters, returns and assignments, an `assert` on the first
              parameter, the body wrapped in `try: ... except Exception: raise`
  strings     each message rewritten as an f-string
  helper      the expression a function returns moved into a helper function it calls

The result is valid Python that computes what the original computes (up to the precision of
`float('-inf')` for a mask).  Used by bench/similarity_bench.py --disguises unseen and tests/test_similarity.py.
"""
import ast
import copy
import random

UNSEEN = ("commute", "augment", "calls", "aliases", "control", "keywords", "constants", "annotate", "strings",
          "helper")
METHODS = {"sum", "mean", "exp", "tanh", "sigmoid", "masked_fill", "softmax", "sqrt", "log", "relu", "abs"}
DIM_SECOND = {"softmax", "log_softmax", "cat", "stack", "sum", "mean", "cumsum", "argmax"}


def disguise(source, kinds, rng=None):
    rng = rng or random.Random(0)
    tree = ast.parse(source)
    helpers = []
    for i, node in enumerate(list(tree.body)):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            tree.body[tree.body.index(node)] = _definition(node, kinds, rng, helpers)
    for h in helpers:
        tree.body.append(h)
    if "aliases" in kinds:
        tree = _Aliases().visit(tree)
        tree.body.insert(0, ast.parse("import torch as th").body[0])
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _definition(node, kinds, rng, helpers):
    node = copy.deepcopy(node)
    for fn in [n for n in ast.walk(node) if isinstance(n, ast.FunctionDef)]:
        if "helper" in kinds and rng.random() < 0.7:
            _helper(fn, helpers)
        if "control" in kinds:
            _Control(rng).visit(fn)
        if "augment" in kinds:
            _Augment(rng).visit(fn)
        if "commute" in kinds:
            _Commute(rng).visit(fn)
        if "calls" in kinds:
            _Calls(rng).visit(fn)
        if "keywords" in kinds:
            _Keywords(rng).visit(fn)
        if "constants" in kinds:
            _Constants(rng).visit(fn)
        if "strings" in kinds:
            _Strings().visit(fn)
        if "annotate" in kinds:
            _annotate(fn, rng)
    return node


def _name(x):
    return ast.Name(x, ast.Load())


def _attr(value, attr):
    return ast.Attribute(value, attr, ast.Load())


class _Commute(ast.NodeTransformer):
    def __init__(self, rng):
        self.rng = rng

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr)) and self.rng.random() < 0.8:
            node.left, node.right = node.right, node.left
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)) and self.rng.random() < 0.8:
            node.left, node.comparators = node.comparators[0], [node.left]
        return node


class _Augment(ast.NodeTransformer):
    def __init__(self, rng):
        self.rng = rng

    def visit_Assign(self, node):
        t = node.targets[0]
        if (len(node.targets) == 1 and isinstance(t, ast.Name) and isinstance(node.value, ast.BinOp)
                and isinstance(node.value.left, ast.Name) and node.value.left.id == t.id):
            return ast.copy_location(ast.AugAssign(ast.Name(t.id, ast.Store()), node.value.op, node.value.right), node)
        return node

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):
            return ast.copy_location(ast.Assign([ast.Name(node.target.id, ast.Store())],
                                                ast.BinOp(_name(node.target.id), node.op, node.value)), node)
        return node


class _Calls(ast.NodeTransformer):
    def __init__(self, rng):
        self.rng = rng

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult):
            return ast.Call(_attr(_name("torch"), "matmul"), [node.left, node.right], [])
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "torch":
            if f.attr == "matmul" and len(node.args) == 2 and not node.keywords:
                return ast.BinOp(node.args[0], ast.MatMult(), node.args[1])
            if f.attr in METHODS and node.args:
                return ast.Call(_attr(node.args[0], f.attr), node.args[1:], node.keywords)
            return node
        if isinstance(f, ast.Attribute) and f.attr == "transpose" and len(node.args) == 2 and not node.keywords:
            vals = [ast.literal_eval(a) if isinstance(a, (ast.Constant, ast.UnaryOp)) else None for a in node.args]
            if sorted(v for v in vals if v is not None) == [-2, -1]:
                return _attr(f.value, "mT")
        if isinstance(f, ast.Attribute) and f.attr in METHODS and not (
                isinstance(f.value, ast.Name) and f.value.id in ("torch", "F", "math", "nn")):
            return ast.Call(_attr(_name("torch"), f.attr), [f.value, *node.args], node.keywords)
        return node


class _Aliases(ast.NodeTransformer):
    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id == "torch":
            node.value = _name("th")
        elif isinstance(node.value, ast.Name) and node.value.id == "F":
            node.value = _attr(_attr(_name("th"), "nn"), "functional")
        return node


class _Control(ast.NodeTransformer):
    def __init__(self, rng):
        self.rng = rng

    def visit_For(self, node):
        self.generic_visit(node)
        it = node.iter
        if (isinstance(node.target, ast.Name) and isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "range" and len(it.args) == 1 and not node.orelse
                and not any(isinstance(n, ast.Continue) for n in ast.walk(node))):
            i = node.target.id
            return [ast.Assign([ast.Name(i, ast.Store())], ast.Constant(0)),
                    ast.While(ast.Compare(_name(i), [ast.Lt()], [it.args[0]]),
                              node.body + [ast.AugAssign(ast.Name(i, ast.Store()), ast.Add(), ast.Constant(1))], [])]
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        b, o = node.body, node.orelse
        if (len(b) == 1 and len(o) == 1 and isinstance(b[0], ast.Assign) and isinstance(o[0], ast.Assign)
                and ast.dump(b[0].targets[0]) == ast.dump(o[0].targets[0]) and len(b[0].targets) == 1):
            return ast.Assign(b[0].targets, ast.IfExp(node.test, b[0].value, o[0].value))
        if len(b) == 1 and len(o) == 1 and isinstance(b[0], ast.Return) and isinstance(o[0], ast.Return):
            return ast.Return(ast.IfExp(node.test, b[0].value or ast.Constant(None), o[0].value or ast.Constant(None)))
        return node

    def visit_Assign(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.IfExp) and len(node.targets) == 1:
            v = node.value
            return ast.If(v.test, [ast.Assign(node.targets, v.body)], [ast.Assign(copy.deepcopy(node.targets), v.orelse)])
        return node


class _Keywords(ast.NodeTransformer):
    def __init__(self, rng):
        self.rng = rng

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        method = isinstance(f, ast.Attribute) and not (isinstance(f.value, ast.Name)
                                                       and f.value.id in ("torch", "F", "th"))
        dims = [k for k in node.keywords if k.arg == "dim"]
        if name in DIM_SECOND and dims and len(node.args) == (0 if method else 1):
            node.args.append(dims[0].value)
            node.keywords = [k for k in node.keywords if k.arg != "dim"]
        node.keywords = node.keywords[::-1]
        return node


class _Constants(ast.NodeTransformer):
    def __init__(self, rng):
        self.rng = rng

    def visit_UnaryOp(self, node):
        if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) and node.operand.value in (1e9, 1e4):
            if self.rng.random() < 0.5:
                return ast.UnaryOp(ast.USub(), ast.BinOp(ast.Constant(10), ast.Pow(),
                                                         ast.Constant(int(round(__import__("math").log10(node.operand.value))))))
            return ast.Call(_name("float"), [ast.Constant("-inf")], [])
        return self.generic_visit(node)

    def visit_Constant(self, node):
        if node.value == 0.5 and isinstance(node.value, float):
            return ast.BinOp(ast.Constant(1), ast.Div(), ast.Constant(2))
        return node


class _Strings(ast.NodeTransformer):
    def visit_JoinedStr(self, node):
        return node

    def visit_Expr(self, node):
        return node  # a docstring stays one

    def visit_Constant(self, node):
        if isinstance(node.value, str) and " " in node.value:
            return ast.JoinedStr([ast.Constant(node.value)])
        return node


def _annotate(fn, rng):
    for a in fn.args.args:
        if a.arg not in ("self", "cls") and a.annotation is None:
            a.annotation = _attr(_name("torch"), "Tensor")
    fn.returns = fn.returns or _attr(_name("torch"), "Tensor")
    body = fn.body
    doc = []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        doc, body = body[:1], body[1:]
    for k, s in enumerate(body):
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            body[k] = ast.AnnAssign(s.targets[0], _attr(_name("torch"), "Tensor"), s.value, 1)
    params = [a.arg for a in fn.args.args if a.arg not in ("self", "cls")]
    check = ast.parse(f"assert {params[0]} is not None, 'missing input'").body if params else []
    fn.body = doc + check + [ast.Try(body or [ast.Pass()], [ast.ExceptHandler(_name("Exception"), None, [ast.Raise()])],
                                     [], [])]


def _helper(fn, helpers):
    ret = [s for s in fn.body if isinstance(s, ast.Return) and s.value is not None]
    if len(ret) != 1 or isinstance(ret[0].value, (ast.Name, ast.Constant)):
        return
    expr = ret[0].value
    free = sorted({n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
                  - {"torch", "F", "math", "nn", "th", "float", "int", "len", "range", "self"})
    if any(isinstance(n, (ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp, ast.NamedExpr))
           for n in ast.walk(expr)) or "self" in {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}:
        return
    name = f"_{fn.name}_part"
    helpers.append(ast.FunctionDef(name, ast.arguments([], [ast.arg(x) for x in free], None, [], [], None, []),
                                   [ast.Return(copy.deepcopy(expr))], [], None, type_params=[]))
    ret[0].value = ast.Call(_name(name), [_name(x) for x in free], [])
