"""Python source read, never run: its tree and its top-level definitions.  Every reader of code
takes them from here: the loader's call graph (reader.calls_between), the similarity report
(similarity/extract.py), the diagnosis (what a catalogued mistake redefines), the counterexample's
parameter names (properties/_harness.py) and the notebook builder (nbgrader_course/build.py).

    parse(text)          the module's tree; an empty module where the text does not parse
    DEFINITIONS          the node types of a definition: functions (also async) and classes
    definitions(tree)    {name: node} of the top-level definitions (the last one of a name wins)
    qualified(tree)      the same, and "Class.method" for each method of a top-level class
    parameters(fn)       a def's positional parameters, in order
"""

import ast

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def parse(text, filename="<unknown>"):
    """The tree of `text`, or an empty module where it does not parse (or is too deep or too large)."""
    try:
        return ast.parse(text, filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ast.Module(body=[], type_ignores=[])


def definitions(tree):
    """{name: node} of the module's top-level functions and classes; a later one of a name wins, as
    when the module runs."""
    return {node.name: node for node in tree.body if isinstance(node, DEFINITIONS)}


def qualified(tree):
    """definitions(tree), plus {"Class.method": node} for the methods of its top-level classes."""
    out = {}
    for name, node in definitions(tree).items():
        out[name] = node
        if isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, _FUNCTIONS):
                    out[f"{name}.{sub.name}"] = sub
    return out


def parameters(fn):
    """The names of a def's positional parameters, in order (`self` included for a method)."""
    return [a.arg for a in fn.args.posonlyargs + fn.args.args]
