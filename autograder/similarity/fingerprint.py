"""Tokens and fingerprints of a function's canonical tree (k-grams, then winnowing).

``tokens(tree)``       the canonical tree (normalize.py) read in order as a list of
                       (token, line): node kinds, canonical names, attribute names, operators,
                       numbers, and a short hash of each string (without its spaces); each
                       token keeps the line of the
                       student's code it comes from
``fingerprints(toks)`` every K consecutive tokens hashed (a k-gram), then winnowed (Schleimer,
                       Wilkerson and Aiken, 2003): in every window of W consecutive k-grams the
                       smallest hash is kept, so any run of W + K - 1 shared tokens is found
                       whatever comes before or after it.  A Fingerprint records its hash, its
                       place among the tokens and the student's lines it covers.

Fingerprints are plain data: the index, the pairs and every renderer read them, none recomputes them.
"""

import ast
import hashlib
import re
from dataclasses import dataclass

K = 12  # tokens per k-gram: about one short statement
W = 4  # k-grams per winnowing window: a shared run of W + K - 1 = 15 tokens is always found


_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Fingerprint:
    hash: int
    start: int  # the first token of the k-gram
    lines: tuple  # (first, last) line of the student's code it covers


def tokens(tree):
    """[(token, line)] of a canonical tree, in source order."""
    out = []
    _walk(tree, out, getattr(tree, "lineno", 0))
    return out


def _walk(node, out, line):
    line = getattr(node, "lineno", line) or line
    kind = type(node).__name__
    if isinstance(node, ast.Name):
        out.append((f"N:{node.id}", line))
        return
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, str):  # a message's words, not its spacing
            v = "s" + hashlib.blake2b(_SPACE.sub("", v).encode("utf-8", "replace"), digest_size=3).hexdigest()
        out.append((f"C:{v!r}", line))
        return
    if isinstance(node, (ast.operator, ast.unaryop, ast.cmpop, ast.boolop)):
        out.append((kind, line))
        return
    if isinstance(node, (ast.expr_context,)):
        return
    if isinstance(node, ast.Attribute):
        _walk(node.value, out, line)
        out.append((f".{node.attr}", line))
        return
    if isinstance(node, ast.arg):
        out.append((f"A:{node.arg}", line))
        return
    if isinstance(node, ast.keyword):
        out.append((f"K:{node.arg}", line))
        _walk(node.value, out, line)
        return
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        out.append((f"{kind}:{node.name}", line))
    else:
        out.append((kind, line))
    for field, value in ast.iter_fields(node):
        if field in ("name", "decorator_list", "returns", "type_comment", "type_params"):
            continue
        if field == "annotation":
            continue  # type hints: no behaviour, easy to add or drop
        if isinstance(value, list):
            for v in value:
                if isinstance(v, ast.AST):
                    _walk(v, out, line)
        elif isinstance(value, ast.AST):
            _walk(value, out, line)


def _hash(text):
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 1


def kgrams(toks, k=K):
    """[(hash, start)] of every k consecutive tokens (one k-gram of all of them when fewer)."""
    names = [t for t, _ in toks]
    if not names:
        return []
    if len(names) <= k:
        return [(_hash("\x1f".join(names)), 0)]
    return [(_hash("\x1f".join(names[i : i + k])), i) for i in range(len(names) - k + 1)]


def winnow(grams, w=W):
    """The k-grams winnowing keeps: the smallest hash of every window of w (the rightmost on a tie)."""
    if len(grams) <= w:
        return sorted(set(grams), key=lambda g: g[1])
    kept, last = [], -1
    for i in range(len(grams) - w + 1):
        window = grams[i : i + w]
        j = min(range(w), key=lambda m: (window[m][0], -m))
        if i + j != last:
            kept.append(grams[i + j])
            last = i + j
    return kept


def fingerprints(toks, k=K, w=W, offset=0):
    """The winnowed Fingerprints of a token list; `offset` is taken from the tokens' lines (a
    definition read from a file: its lines counted from its own first line)."""
    out = []
    for h, start in winnow(kgrams(toks, k), w):
        lines = [ln - offset for _, ln in toks[start : start + k] if ln and ln > offset]
        out.append(Fingerprint(h, start, (min(lines), max(lines)) if lines else (0, 0)))
    return out
