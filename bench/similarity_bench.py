"""Benchmark: the similarity report on a generated class with planted copies, beside copydetect.

    .venv/bin/pip install -e '.[bench]'        # copydetect, for the comparison only
    .venv/bin/python bench/similarity_bench.py [--students 300] [--copies 30] [--seed 0]
                                               [--scale 1000] [--no-copydetect] [--keep DIR]

The class: N honest students of the first assignment (the five core exercises), each function
drawn as class_speed.py draws it -- the reference solution, or one of the correct variants written
differently (tests/files/correct/alt*), with one or two catalogued mistakes in most students --
and then written in the student's own hand: each student has habits (``x.size(1)`` or
``x.shape[1]``, ``torch.matmul`` or ``@``, ``d ** 0.5`` or ``math.sqrt(d)``, which softmax,
which transpose) applied where the code allows, and checks of their own with their own messages
in some functions.  Formats mix as in a class: a folder of one .py per exercise, one .py holding
everything, or a notebook (one cell per definition).

Then C planted copies, each an obfuscated copy of another (honest) student made by
bench/obfuscate.py, in another format than the original: each transformation on its own (rename,
comments, format, reorder, deadcode, loops, temporaries: C // 10 copies each... the first 21 of
30), the rest with all of them combined.

Printed: for `seqgrader similarity` (`analyse`, --workers processes) and for copydetect (pip
`copydetect`, one .py per student, the reference solutions and the starter notebooks as its
boilerplate, its own display threshold 0.33) on the same class -- the time, the pairs flagged, precision and recall of the flagged pairs,
the rank of every planted pair among all pairs, and whether every planted pair ranks above every
honest pair (the goal); then the time of `analyse` alone on a class of --scale students (the
honest generator, plus copies in the same proportion), with --workers processes (default 2),
and the same figures for it.  Nothing here is a test; run it on a quiet machine.
"""

import argparse
import ast
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from class_speed import EXERCISES, ingredients, notebook  # noqa: E402
from obfuscate import KINDS, obfuscate  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "files" / "similarity_disguises"))
from unseen import UNSEEN, disguise  # noqa: E402

PARTIAL = "partial"  # an unseen copy of some exercises only, the rest the copier's own work

WORDS = [
    "input",
    "tensor",
    "value",
    "shape",
    "expected",
    "wrong",
    "bad",
    "must",
    "be",
    "positive",
    "lengths",
    "dims",
    "batch",
    "size",
    "invalid",
    "check",
    "please",
    "given",
    "need",
    "non",
    "empty",
    "sequence",
]


# ---------------------------------------------------------------- a student's hand


class Hand(ast.NodeTransformer):
    """A student's habits, applied where the code allows."""

    def __init__(self, rng, habits, sid):
        self.rng, self.h, self.sid = rng, habits, sid

    def _p(self, key):
        return self.rng.random() < self.h[key]

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if (
            isinstance(node.value, ast.Attribute)
            and node.value.attr == "shape"
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.slice, (ast.Constant, ast.UnaryOp))
            and self._p("size")
        ):
            return ast.Call(ast.Attribute(node.value.value, "size", ast.Load()), [node.slice], [])
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult) and self._p("matmul"):
            return ast.Call(
                ast.Attribute(ast.Name("torch", ast.Load()), "matmul", ast.Load()), [node.left, node.right], []
            )
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and f.value.id == "math"
            and f.attr == "sqrt"
            and len(node.args) == 1
            and self._p("sqrt")
        ):
            return ast.BinOp(node.args[0], ast.Pow(), ast.Constant(0.5))
        if (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and f.value.id in ("F", "torch")
            and f.attr == "softmax"
            and self._p("softmax")
        ):
            f.value.id = "torch" if f.value.id == "F" else "F"
        if (
            isinstance(f, ast.Attribute)
            and f.attr == "transpose"
            and len(node.args) == 2
            and all(isinstance(a, ast.UnaryOp) for a in node.args)
            and self._p("transpose")
        ):
            node.args = node.args[::-1]
        return node

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        params = [a.arg for a in node.args.args if a.arg not in ("self", "cls")]
        if params and self._p("checks"):
            words = " ".join(self.rng.sample(WORDS, 4))
            guard = ast.parse(f"if {params[0]} is None:\n    raise ValueError('{words} ({self.sid})')").body[0]
            at = (
                1
                if (node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant))
                else 0
            )
            node.body.insert(at, guard)
        return node


def habits(rng):
    return {k: rng.choice([0.0, 0.2, 0.8, 1.0]) for k in ("size", "matmul", "sqrt", "softmax", "transpose")} | {
        "checks": rng.choice([0.3, 0.5, 0.7])
    }


def in_hand(source, rng, h, sid):
    tree = ast.parse(source)
    tree = Hand(rng, h, sid).visit(tree)
    return f"# {sid}\n" + ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def honest_student(rng, parts, sid):
    """{exercise: source} of one honest student and its recipe."""
    n_wrong = rng.choices([0, 1, 2], weights=[35, 40, 25])[0]
    wrong = rng.sample(EXERCISES, n_wrong)
    h = habits(rng)
    files, recipe = {}, []
    for ex in EXERCISES:
        p = parts[ex]
        src = p["reference"]
        for name in p["functions"]:
            if p["variants"].get(name) and rng.random() < 0.25:
                alt, text = rng.choice(p["variants"][name])
                src += f"\n\n{text}\n"
                recipe.append(f"{ex}.{name}={alt}")
        if ex in wrong:
            entry = rng.choice(p["mistakes"])
            src += f"\n\n{entry['code']}\n"
            recipe.append(f"{ex}:{entry['id']}")
        files[ex] = in_hand(src, rng, h, sid)
    return files, recipe


def write_student(root, sid, files, fmt):
    if fmt == "folder":
        d = root / sid
        d.mkdir()
        for ex, src in files.items():
            (d / f"{ex}.py").write_text(src, encoding="utf-8")
    elif fmt == "file":
        (root / f"{sid}.py").write_text("\n\n".join(files.values()), encoding="utf-8")
    else:
        (root / f"{sid}.ipynb").write_text(notebook("\n\n".join(files.values())), encoding="utf-8")


def make_class(root, n, n_copies, seed, parts, disguises="obfuscate"):
    """Writes the class; returns ([honest ids], {(copy, source): kinds}, {sid: {ex: source}})."""
    if disguises == "unseen":
        return _unseen_class(root, n, n_copies, seed, parts)
    rng = random.Random(seed)
    texts, ids = {}, []
    for i in range(n):
        sid = f"s{i:04d}"
        files, _ = honest_student(rng, parts, sid)
        texts[sid] = files
        ids.append(sid)
        write_student(root, sid, files, rng.choice(["folder", "file", "notebook"]))
    planted = {}
    sources = rng.sample(ids, n_copies)
    alone = min(n_copies, 3 * len(KINDS))
    for k, src in enumerate(sources):
        kinds = [KINDS[k % len(KINDS)]] if k < alone else list(KINDS)
        cid = f"c{k:04d}"
        files = {ex: obfuscate(text, kinds, random.Random(seed * 1000 + k)) for ex, text in texts[src].items()}
        texts[cid] = files
        planted[(cid, src)] = "+".join(kinds) if len(kinds) < len(KINDS) else "all"
        write_student(root, cid, files, rng.choice(["folder", "file", "notebook"]))
    return ids, planted, texts


def _unseen_class(root, n, n_copies, seed, parts):
    """The same honest class; the copies made with tests/files/similarity_disguises/unseen.py:
    each of its disguises on its own, all of them combined, and partial copies (two or three
    exercises of another student, all disguises, the rest the copier's own honest work)."""
    rng = random.Random(seed)
    texts, ids = {}, []
    for i in range(n):
        sid = f"s{i:04d}"
        files, _ = honest_student(rng, parts, sid)
        texts[sid] = files
        ids.append(sid)
        write_student(root, sid, files, rng.choice(["folder", "file", "notebook"]))
    planted = {}
    sources = rng.sample(ids, n_copies)
    kinds_of = [[k] for k in UNSEEN] * 2 + [list(UNSEEN)] * 6 + [PARTIAL] * 4
    for k, src in enumerate(sources):
        kinds = kinds_of[k % len(kinds_of)]
        cid = f"c{k:04d}"
        r = random.Random(seed * 1000 + k)
        if kinds == PARTIAL:
            own, _ = honest_student(rng, parts, cid)
            taken = r.sample(EXERCISES, r.choice([2, 3]))
            files = {ex: disguise(texts[src][ex], list(UNSEEN), r) if ex in taken else own[ex] for ex in EXERCISES}
            label = f"partial {len(taken)}/{len(EXERCISES)}"
        else:
            files = {ex: disguise(text, kinds, r) for ex, text in texts[src].items()}
            label = "+".join(kinds) if len(kinds) < len(UNSEEN) else "all unseen"
        texts[cid] = files
        planted[(cid, src)] = label
        write_student(root, cid, files, rng.choice(["folder", "file", "notebook"]))
    return ids, planted, texts


# ---------------------------------------------------------------- the figures


def figures(scores, planted, flag):
    """scores: {(a, b): score} of every pair given a score (others count as 0)."""
    key = {tuple(sorted(p)): kinds for p, kinds in planted.items()}
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    rank = {tuple(sorted(p)): i for i, (p, _) in enumerate(ranked, 1)}
    flagged = {tuple(sorted(p)) for p, s in scores.items() if s >= flag}
    tp = len(flagged & set(key))
    honest = [s for p, s in scores.items() if tuple(sorted(p)) not in key]
    planted_scores = [scores.get(p, scores.get(p[::-1], 0.0)) for p in key]
    return {
        "flagged": len(flagged),
        "true": tp,
        "precision": tp / len(flagged) if flagged else 1.0,
        "recall": tp / len(key) if key else 1.0,
        "ranks": sorted((rank.get(p, 10**9), k) for p, k in key.items()),
        "worst_planted_rank": max((rank.get(p, 10**9) for p in key), default=0),
        "lowest_planted": min(planted_scores, default=0.0),
        "highest_honest": max(honest, default=0.0),
        "separated": min(planted_scores, default=0.0) > max(honest, default=0.0),
    }


def run_ours(root, workers):
    from autograder.similarity.cli import analyse
    from autograder.similarity.pairs import FLAG

    t = time.perf_counter()
    result = analyse(root, workers=workers)
    seconds = time.perf_counter() - t
    return seconds, {(p.a, p.b): p.score for p in result.pairs}, FLAG, result


def run_copydetect(root, texts, work):
    """copydetect on one .py per student (its tokenizer reads .py), boilerplate: the reference
    solutions and the starter code."""
    from copydetect import CopyDetector

    flat = work / "copydetect-class"
    flat.mkdir()
    for sid, files in texts.items():
        (flat / f"{sid}.py").write_text("\n\n".join(files.values()), encoding="utf-8")
    boiler = work / "copydetect-boilerplate"
    boiler.mkdir()
    for ex in EXERCISES:
        shutil.copy(ROOT / "solutions" / f"{ex}.py", boiler / f"solution_{ex}.py")
        nb = json.loads((ROOT / "exercises" / f"{ex}.ipynb").read_text(encoding="utf-8"))
        (boiler / f"starter_{ex}.py").write_text(
            "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"), encoding="utf-8"
        )
    t = time.perf_counter()
    det = CopyDetector(
        test_dirs=[str(flat)],
        boilerplate_dirs=[str(boiler)],
        extensions=["py"],
        autoopen=False,
        silent=True,
        out_file=str(work / "copydetect.html"),
    )
    det.run()
    seconds = time.perf_counter() - t
    names = [Path(f).stem for f in det.test_files]
    sm = det.similarity_matrix
    scores = {}
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            s = float(max(sm[i, j, 0], sm[i, j, 1], sm[j, i, 0], sm[j, i, 1]))
            if s > 0:
                scores[(names[i], names[j])] = s
    return seconds, scores, det.conf.display_t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=300)
    ap.add_argument("--copies", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", type=int, default=1000, help="class size of the timing run (0: none)")
    ap.add_argument("--workers", type=int, default=2, help="processes of `analyse` (default 2)")
    ap.add_argument("--no-copydetect", action="store_true")
    ap.add_argument("--keep", metavar="DIR", help="keep the generated class here")
    ap.add_argument(
        "--disguises",
        choices=["obfuscate", "unseen"],
        default="obfuscate",
        help="the planted copies' disguises: bench/obfuscate.py (default), or the set kept apart "
        "from it, tests/files/similarity_disguises/unseen.py",
    )
    args = ap.parse_args()

    parts = ingredients()
    work = Path(tempfile.mkdtemp(prefix="similarity-bench-"))
    try:
        root = work / "class"
        root.mkdir()
        ids, planted, texts = make_class(root, args.students, args.copies, args.seed, parts, args.disguises)
        print(
            f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {platform.machine()}, {os.cpu_count()} core(s), "
            f"Python {platform.python_version()}"
        )
        print(
            f"class: {len(ids)} honest students + {len(planted)} planted copies "
            f"({', '.join(sorted(set(planted.values())))}), seed {args.seed}"
        )
        rows = []
        seconds, scores, flag, result = run_ours(root, args.workers)
        rows.append(("seqgrader similarity", seconds, figures(scores, planted, flag), flag))
        print(f"  (seqgrader: {result.compared} candidate pairs compared of {len(texts) * (len(texts) - 1) // 2})")
        if not args.no_copydetect:
            cs, cscores, cflag = run_copydetect(root, texts, work)
            rows.append(("copydetect " + _version("copydetect"), cs, figures(cscores, planted, cflag), cflag))
        print(
            f"{'tool':<26} {'time':>8} {'flag at':>8} {'flagged':>8} {'precision':>10} {'recall':>7} "
            f"{'worst planted rank':>19} {'lowest planted':>15} {'highest honest':>15}  planted above all honest"
        )
        for name, s, f, t in rows:
            print(
                f"{name:<26} {s:>7.1f}s {t:>8.2f} {f['flagged']:>8} {f['precision']:>10.2f} {f['recall']:>7.2f} "
                f"{f['worst_planted_rank']:>19} {f['lowest_planted']:>15.3f} {f['highest_honest']:>15.3f}  "
                f"{'yes' if f['separated'] else 'no'}"
            )
        for name, _, f, _ in rows:
            print(
                f"ranks of the planted pairs, {name}: "
                + " ".join(f"{r if r < 10**9 else '-'}({k})" for r, k in f["ranks"])
            )
        if args.disguises == "unseen":
            key = {tuple(sorted(p)): k for p, k in planted.items()}
            honest = max((s for p, s in scores.items() if tuple(sorted(p)) not in key), default=0.0)
            print(f"per planted pair, seqgrader similarity (flag {flag}, highest honest {honest:.3f}):")
            for p, k in sorted(key.items(), key=lambda kv: kv[1]):
                sc = scores.get(p, scores.get(p[::-1], 0.0))
                print(
                    f"  {k:<22} {p[0]}-{p[1]}  {sc:.3f}  {'flagged' if sc >= flag else 'not flagged':<11} "
                    f"{'above every honest pair' if sc > honest else 'NOT above every honest pair'}"
                )
        if args.keep:
            shutil.copytree(root, Path(args.keep) / "class", dirs_exist_ok=True)
        if args.scale:
            big = work / "scale"
            big.mkdir()
            n_copies = round(args.scale * args.copies / max(1, args.students + args.copies))
            _, big_planted, _ = make_class(big, args.scale - n_copies, n_copies, args.seed + 1, parts, args.disguises)
            seconds, scores, flag, result = run_ours(big, args.workers)
            f = figures(scores, big_planted, flag)
            print(
                f"scale: {args.scale} students ({n_copies} of them planted copies), `analyse` on {args.workers} "
                f"process(es): {seconds:.1f} s; {result.compared} candidate pairs compared; {f['flagged']} flagged, "
                f"precision {f['precision']:.2f}, recall {f['recall']:.2f}, worst planted rank "
                f"{f['worst_planted_rank']}, lowest planted {f['lowest_planted']:.3f}, highest honest "
                f"{f['highest_honest']:.3f}, planted above all honest: {'yes' if f['separated'] else 'no'}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _version(name):
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    main()
