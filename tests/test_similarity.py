"""The instructors' similarity report (autograder/similarity/): copies found whatever was done to
hide them, what everyone shares never counted, behaviour compared from what grading recorded, the
JSON and the page, and nothing of it in a student's files.

Classes are written here from the reference solutions (solutions/) and the correct variants
written differently (tests/files/correct/alt*/); the copies are made by bench/obfuscate.py, the
obfuscator the bench uses.  The page is opened in a real Chromium (tests/chromium.py); its
screenshot is kept in out/similarity-views/."""

import importlib.util
import json
import random
import re
import subprocess
import sys

import pytest

from autograder.cli import main
from autograder.similarity.cli import analyse, write
from autograder.similarity.normalize import normalize
from autograder.similarity.pairs import FLAG

from .chromium import Chromium, ChromiumError
from .conftest import ROOT

EXERCISES = ["masks", "positional_encoding", "attention", "recurrent", "masked_loss"]
CORRECT = ROOT / "tests" / "files" / "correct"
OUT = ROOT / "out" / "similarity-views"


def _obfuscator():
    spec = importlib.util.spec_from_file_location("obfuscate", ROOT / "bench" / "obfuscate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


OBF = _obfuscator()


def _disguises():
    spec = importlib.util.spec_from_file_location(
        "unseen", ROOT / "tests" / "files" / "similarity_disguises" / "unseen.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


UNSEEN = _disguises()


def reference(ex):
    return (ROOT / "solutions" / f"{ex}.py").read_text(encoding="utf-8")


def variant(k, ex):
    return (CORRECT / f"alt{k}" / f"{ex}.py").read_text(encoding="utf-8")


def write_class(root, students):
    """students: {name: {exercise: source}} -> one folder per student, one .py per exercise."""
    for name, files in students.items():
        (root / name).mkdir(parents=True)
        for ex, src in files.items():
            (root / name / f"{ex}.py").write_text(src, encoding="utf-8")
    return root


def pair_of(result, a, b):
    for p in result.pairs:
        if {p.a, p.b} == {a, b}:
            return p
    return None


def honest_class(root, extra):
    """Four honest students (the reference, and variants 2, 3 and 4 written differently) plus
    `extra`."""
    students = {"ref": {ex: reference(ex) for ex in EXERCISES}}
    for k in (2, 3, 4):
        students[f"alt{k}"] = {ex: variant(k, ex) for ex in EXERCISES}
    students.update(extra)
    return write_class(root, students)


# ---------------------------------------------------------------- the canonical form


@pytest.mark.parametrize(
    "a, b",
    [
        (
            "def f(x):\n    y = []\n    for v in x:\n        y.append(v * 2)\n    return y\n",
            "def f(x):\n    return [w * 2 for w in x]\n",
        ),
        (
            "def f(q, k):\n    s = q @ k.T\n    s = s / 2\n    return s.softmax(-1)\n",
            "def f(q, k):\n    s = q @ k.T\n    s = s / 2\n    out = s.softmax(-1)\n    return out\n",
        ),
        (
            "def f(x, n):\n    a = x.sum()\n    b = n * 2\n    return a + b\n",
            "def f(x, n):\n    '''doc'''\n    b = n * 2  # first\n    unused = 3\n    a = x.sum()\n    pass\n"
            "    if False:\n        print(a)\n    return a + b\n    print('never')\n",
        ),
    ],
)
def test_equivalent_writings_have_one_canonical_form(a, b):
    import ast

    na, nb = (ast.unparse(normalize(ast.parse(s).body[0])) for s in (a, b))
    assert na == nb


def test_a_different_computation_keeps_a_different_canonical_form():
    import ast

    a = "def f(x):\n    return [v * 2 for v in x]\n"
    b = "def f(x):\n    return [v + 2 for v in x]\n"
    assert ast.unparse(normalize(ast.parse(a).body[0])) != ast.unparse(normalize(ast.parse(b).body[0]))


# ---------------------------------------------------------------- copies are found


@pytest.mark.parametrize("kinds", [[k] for k in OBF.KINDS] + [list(OBF.KINDS)], ids=lambda k: "+".join(k))
def test_an_obfuscated_copy_is_the_top_pair_and_flagged(tmp_path, kinds):
    """alice writes with loops (variant 1); mallory hands in alice's code obfuscated (each
    transformation alone, then all of them): the pair is flagged, above every honest pair."""
    rng = random.Random(7)
    alice = {ex: variant(1, ex) for ex in EXERCISES}
    mallory = {ex: OBF.obfuscate(src, kinds, rng) for ex, src in alice.items()}
    assert mallory != alice
    root = honest_class(tmp_path / "class", {"alice": alice, "mallory": mallory})
    result = analyse(root)
    top = result.pairs[0]
    assert {top.a, top.b} == {"alice", "mallory"}, [(p.a, p.b, p.score) for p in result.pairs[:3]]
    assert top.score >= FLAG
    assert all(p.score < FLAG for p in result.pairs[1:]), [(p.a, p.b, p.score) for p in result.pairs[1:4]]
    assert result.clusters == [["alice", "mallory"]]


@pytest.mark.parametrize("kinds", [[k] for k in UNSEEN.UNSEEN] + [list(UNSEEN.UNSEEN)], ids=lambda k: "+".join(k))
def test_a_copy_disguised_in_ways_the_obfuscator_does_not_know_is_the_top_pair_and_flagged(tmp_path, kinds):
    """The same, with the second set of disguises (tests/files/similarity_disguises/unseen.py:
    operands swapped, `+=`, torch's function for the method, module aliases, `while` loops,
    keywords, constants, annotations and asserts, f-strings, helper functions)."""
    rng = random.Random(11)
    alice = {ex: variant(1, ex) for ex in EXERCISES}
    mallory = {ex: UNSEEN.disguise(src, kinds, rng) for ex, src in alice.items()}
    assert mallory != alice
    root = honest_class(tmp_path / "class", {"alice": alice, "mallory": mallory})
    result = analyse(root)
    top = result.pairs[0]
    assert {top.a, top.b} == {"alice", "mallory"}, [(p.a, p.b, p.score) for p in result.pairs[:3]]
    assert top.score >= FLAG
    assert all(p.score < FLAG for p in result.pairs[1:]), [(p.a, p.b, p.score) for p in result.pairs[1:4]]


@pytest.mark.parametrize(
    "a, b",
    [
        ("def f(x, y):\n    return x * y + 1\n", "def f(x, y):\n    return 1 + y * x\n"),
        ("def f(x, y):\n    x = x + y\n    return x\n", "def f(x, y):\n    x += y\n    return x\n"),
        ("def f(q, k):\n    return torch.matmul(q, k.transpose(-1, -2))\n", "def f(q, k):\n    return q @ k.mT\n"),
        (
            "def f(s, m):\n    return torch.masked_fill(s, m, -1e9).softmax(dim=-1)\n",
            "def f(s, m):\n    return F.softmax(s.masked_fill(m, -10 ** 9), -1)\n",
        ),
        (
            "def f(x, n):\n    out = []\n    i = 0\n    while i < n:\n        out.append(x[i])\n        i += 1\n    return out\n",
            "def f(x, n):\n    return [x[j] for j in range(n)]\n",
        ),
        (
            "def f(x, m=None):\n    if m is None:\n        y = x\n    else:\n        y = x * m\n    return y.sum()\n",
            "def f(x: torch.Tensor, m=None) -> torch.Tensor:\n    assert x.dim() == 2\n    try:\n"
            "        return torch.sum(x if m is None else m * x)\n    except Exception:\n        raise\n",
        ),
        (
            "def f(x, m):\n    if m is None:\n        return x\n    return x * m\n",
            "def f(x, m):\n    if m is not None:\n        return m * x\n    else:\n        return x\n",
        ),
        ("def f(x, n):\n    return x[x < n]\n", "def f(x, n):\n    return x[n > x]\n"),
    ],
)
def test_other_equivalent_writings_have_one_canonical_form(a, b):
    import ast

    na, nb = (ast.unparse(normalize(ast.parse(s).body[0])) for s in (a, b))
    assert na == nb


def _with_checks(source, who):
    """`source` with a check of the student's own at the top of every function."""
    import ast

    tree = ast.parse(source)
    for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        params = [a.arg for a in fn.args.args if a.arg not in ("self", "cls")]
        if params:
            fn.body.insert(
                0,
                ast.parse(
                    f"if {params[0]} is None:\n    raise TypeError('{who}: {fn.name} "
                    f"wants {params[0]} given, not None')"
                ).body[0],
            )
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def test_three_whole_functions_copied_and_the_rest_written_apart_is_a_case(tmp_path):
    """mallory copies alice's three recurrent functions (her own way of writing them, disguised)
    and writes every other function another way, with checks of her own: three whole functions
    shared make a case however little else the two share; two students who share one whole
    function and write everything else apart do not."""
    alice = {ex: variant(1, ex) for ex in EXERCISES}
    own = {ex: _with_checks(reference(ex), "mallory") for ex in EXERCISES}
    mallory = dict(
        own, recurrent=UNSEEN.disguise(alice["recurrent"], ["commute", "calls", "annotate"], random.Random(4))
    )
    root = honest_class(tmp_path / "class", {"alice": alice, "mallory": mallory})
    result = analyse(root)
    pair = pair_of(result, "alice", "mallory")
    assert pair is not None and pair.score >= FLAG, [(p.a, p.b, p.score) for p in result.pairs[:3]]
    whole = sorted(f for f, m in pair.functions.items() if m.strength >= 0.75)
    assert whole == ["gru_cell", "lstm_cell", "lstm_sequence"], pair.functions
    assert all(p.score < FLAG for p in result.pairs if {p.a, p.b} != {"alice", "mallory"})


def test_functions_pasted_into_other_files_and_cells_are_compared_by_name(tmp_path):
    """bob puts alice's functions, renamed inside, into one notebook, one cell per function:
    the same functions are still compared with each other."""
    alice = {ex: variant(1, ex) for ex in EXERCISES}
    root = honest_class(tmp_path / "class", {"alice": alice})
    cells = []
    for src in alice.values():
        text = OBF.obfuscate(src, ["rename"], random.Random(3))
        cells += [
            {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": chunk}
            for chunk in re.split(r"\n(?=def |class )", text)
        ]
    (root / "bob.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))
    result = analyse(root)
    assert {result.pairs[0].a, result.pairs[0].b} == {"alice", "bob"} and result.pairs[0].score >= FLAG


def test_one_shared_line_is_not_a_case_and_three_shared_functions_are(tmp_path):
    """Two students who share one short unusual line, and two who share three whole functions
    written their own way (the rest is the reference)."""
    line = "def causal_mask(T, device=None):\n    return torch.ones(T, T, device=device).cumsum(0).gt(torch.arange(T, device=device)).T.contiguous().logical_not().logical_not().T\n"
    base = {ex: reference(ex) for ex in EXERCISES}
    one_a = dict(base, masks=reference("masks") + "\n\n" + line)
    one_b = dict(base, masks=reference("masks") + "\n\n" + line.replace("T, device", "T,  device"))
    three = {ex: reference(ex) for ex in EXERCISES}
    own = variant(1, "recurrent")  # lstm_cell, gru_cell, lstm_sequence, written with loops
    three_a = dict(three, recurrent=own)
    three_b = dict(three, recurrent=OBF.obfuscate(own, ["rename", "format"], random.Random(1)))
    root = honest_class(tmp_path / "class", {"one_a": one_a, "one_b": one_b, "three_a": three_a, "three_b": three_b})
    result = analyse(root)
    three_pair = pair_of(result, "three_a", "three_b")
    assert three_pair is not None and three_pair.score >= FLAG
    assert sorted(f for f, m in three_pair.functions.items() if m.strength > 0.5) == [
        "gru_cell",
        "lstm_cell",
        "lstm_sequence",
    ]
    one = pair_of(result, "one_a", "one_b")
    assert one is None or one.score < FLAG


# ---------------------------------------------------------------- what everyone shares


def test_honest_students_who_share_the_starter_code_and_the_reference_are_not_flagged(tmp_path):
    """Students who each hand in the reference (some functions in their own words), one with a
    stub still in it as released: nothing shared is evidence, no pair is flagged."""
    stub = json.loads((ROOT / "exercises" / "masks.ipynb").read_text(encoding="utf-8"))
    stub_code = "\n\n".join(
        "".join(c["source"])
        for c in stub["cells"]
        if c["cell_type"] == "code" and (c.get("metadata", {}).get("nbgrader") or {}).get("solution")
    )
    students = {}
    for i in range(6):
        files = {ex: reference(ex) for ex in EXERCISES}
        if i % 2:
            files["masks"] = "import torch\n\n" + stub_code  # the stubs, untouched
        files[EXERCISES[i % 5]] = variant(2 + i % 6, EXERCISES[i % 5]) if i else files[EXERCISES[0]]
        students[f"s{i}"] = files
    result = analyse(write_class(tmp_path / "class", students))
    assert [p for p in result.pairs if p.score >= FLAG] == []
    assert {e["what"] for e in result.excluded} == {"starter", "reference", "catalogue"}


def test_an_excluded_folder_of_public_code_is_not_evidence(tmp_path):
    """Two students paste the same public implementation (variant 1's recurrent functions): a
    case, until that public code is passed with --exclude."""
    public = variant(1, "recurrent")
    a = {ex: reference(ex) for ex in EXERCISES} | {"recurrent": public}
    b = {ex: reference(ex) for ex in EXERCISES} | {"recurrent": OBF.obfuscate(public, ["rename"], random.Random(5))}
    root = honest_class(tmp_path / "class", {"a": a, "b": b})
    assert pair_of(analyse(root), "a", "b").score >= FLAG
    known = tmp_path / "public"
    known.mkdir()
    (known / "blog_post_lstm.py").write_text(public, encoding="utf-8")
    result = analyse(root, exclude=[known])
    p = pair_of(result, "a", "b")
    assert p is None or p.score < FLAG
    assert any(e["what"] == "excluded" and e["source"] == str(known) and e["fingerprints"] > 0 for e in result.excluded)


def test_students_with_the_same_catalogued_mistakes_are_not_flagged(tmp_path):
    """Mistakes many students make (the catalogue's) are no evidence: two students with the same
    three catalogued mistakes pasted in are not flagged."""
    from autograder.catalogue import load_catalogue

    students = {}
    entries = {ex: [e for _, e in load_catalogue(ex)] for ex in ("masks", "attention", "masked_loss")}
    for name in ("a", "b"):
        files = {ex: reference(ex) for ex in EXERCISES}
        for ex, es in entries.items():
            files[ex] += "\n\n" + es[0]["code"]
        students[name] = files
    result = analyse(honest_class(tmp_path / "class", students))
    p = pair_of(result, "a", "b")
    assert p is None or p.score < FLAG


def test_candidate_pairs_come_from_the_lsh_index_not_from_every_pair(tmp_path):
    """40 students who write the reference, two who share their own code: only the pairs that
    share rare fingerprints are compared."""
    students = {f"s{i:02d}": {ex: reference(ex) for ex in EXERCISES} for i in range(40)}
    students["s00"]["recurrent"] = variant(1, "recurrent")
    students["s01"]["recurrent"] = OBF.obfuscate(variant(1, "recurrent"), ["rename"], random.Random(2))
    result = analyse(write_class(tmp_path / "class", students))
    assert result.compared < 40 * 39 // 2 // 10
    assert {result.pairs[0].a, result.pairs[0].b} == {"s00", "s01"}


# ---------------------------------------------------------------- the outputs


def test_similarity_json_follows_its_schema(tmp_path):
    alice = {ex: variant(1, ex) for ex in EXERCISES}
    root = honest_class(
        tmp_path / "class",
        {"alice": alice, "bob": {ex: OBF.obfuscate(s, OBF.KINDS, random.Random(4)) for ex, s in alice.items()}},
    )
    out = tmp_path / "out"
    assert main(["similarity", str(root), "--out", str(out), "-q"]) == 0
    data = json.loads((out / "similarity.json").read_text(encoding="utf-8"))
    assert set(data) >= {"pairs", "clusters", "excluded"}
    scores = [p["score"] for p in data["pairs"]]
    assert scores == sorted(scores, reverse=True) and scores and all(0 <= s <= 1 for s in scores)
    for p in data["pairs"]:
        assert set(p) == {"a", "b", "score", "functions", "summary", "evidence"}
        assert all(set(x) == {"zh", "en"} for x in p["summary"])
        assert all(isinstance(f, str) and 0 <= s <= 1 for f, s in p["functions"].items())
        for e in p["evidence"]:
            assert e["kind"] in ("code", "behaviour") and e["function"] in p["functions"]
            assert re.search(r"[\u4e00-\u9fff]", e["zh"]) and e["en"].isascii()
            for f in e.get("fragments", []):
                assert f["a"][0] <= f["a"][1] and f["b"][0] <= f["b"][1]
    assert data["clusters"] == [["alice", "bob"]]
    assert all(isinstance(c, list) for c in data["clusters"])
    assert {e["what"] for e in data["excluded"]} == {"starter", "reference", "catalogue"}


def test_the_command_line_prints_the_flagged_pairs(tmp_path):
    alice = {ex: variant(1, ex) for ex in EXERCISES}
    root = honest_class(
        tmp_path / "class",
        {
            "alice": alice,
            "bob": {ex: OBF.obfuscate(s, ["rename", "reorder"], random.Random(9)) for ex, s in alice.items()},
        },
    )
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "similarity", str(root), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"^  \d\.\d\d  alice - bob", done.stdout, re.M), done.stdout
    assert "1 flagged" in done.stdout


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    try:
        b = Chromium(tmp_path_factory.mktemp("chromium-profile"))
    except ChromiumError as e:
        pytest.fail(str(e), pytrace=False)
    yield b
    b.close()


def test_the_page_shows_ranked_pairs_and_aligned_fragments_in_chromium(tmp_path, browser):
    """In a real Chromium: the flagged pair first; its functions side by side, each fragment of
    one in the same row and the same colour as the fragment it matches; Chinese first, English
    beside it."""
    alice = {ex: variant(1, ex) for ex in EXERCISES}
    root = honest_class(
        tmp_path / "class",
        {"alice": alice, "mallory": {ex: OBF.obfuscate(s, OBF.KINDS, random.Random(11)) for ex, s in alice.items()}},
    )
    result = analyse(root)
    _, page = write(result, tmp_path / "out", "both")
    OUT.mkdir(parents=True, exist_ok=True)
    p = browser.open(page, size=(1280, 1400))
    p.screenshot(OUT / "similarity.png")
    seen = p.eval("""(() => ({
      first: [...document.querySelectorAll("table.ranked tr[data-a]")].slice(0, 1).map(tr =>
        [tr.dataset.a, tr.dataset.b, tr.className]),
      rows: document.querySelectorAll("table.ranked tr[data-a]").length,
      fragments: [...document.querySelectorAll("section#pair-1 tr.fragment")].map(tr =>
        [...tr.querySelectorAll("td")].map(td => getComputedStyle(td).backgroundColor)),
      tops: [...document.querySelectorAll("section#pair-1 tr.fragment")].slice(0, 3).map(tr =>
        [...tr.querySelectorAll("td")].map(td => Math.round(td.getBoundingClientRect().top))),
      evidence: [...document.querySelectorAll("section#pair-1 ul.evidence li")].map(li => li.innerText),
      code: [...document.querySelectorAll("section#pair-1 table.side")].length}))()""")
    p.close()
    assert seen["first"] == [["alice", "mallory", "flagged"]]
    assert seen["rows"] == len(result.pairs)
    assert seen["code"] >= 5 and len(seen["fragments"]) >= 5
    for left, right in seen["fragments"]:
        assert left == right and left != "rgba(0, 0, 0, 0)"  # the same colour on both sides
    for left, right in seen["tops"]:
        assert left == right  # aligned: a fragment and its match start on the same row
    first = seen["evidence"][0]
    assert re.search(r"[\u4e00-\u9fff]", first.splitlines()[0]) and first.splitlines()[-1].isascii()


# ---------------------------------------------------------------- with grading


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """grade-batch --similarity on a tiny class (the masks exercise): ann and ben make the same
    uncatalogued mistake in causal_mask (the diagonal only), written differently; dan and eve make
    the same catalogued one (the diagonal left out), written differently; cat hands in the
    reference."""
    tmp = tmp_path_factory.mktemp("graded")
    ref = reference("masks")
    root = tmp / "class"
    root.mkdir()

    def with_causal(body):
        text = re.sub(r"def causal_mask\(T, device=None\):.*?(?=\ndef )", body, ref, flags=re.S)
        assert text != ref
        return text

    (root / "ann.py").write_text(
        with_causal("def causal_mask(T, device=None):\n    return torch.eye(T, dtype=torch.bool, device=device)\n\n")
    )
    (root / "ben.py").write_text(
        with_causal(
            "def causal_mask(T, device=None):\n    idx = torch.arange(T, device=device)\n"
            "    return idx.unsqueeze(1) == idx.unsqueeze(0)\n\n"
        )
    )
    (root / "dan.py").write_text(
        with_causal(
            "def causal_mask(T, device=None):\n    return torch.ones(T, T, dtype=torch.bool, device=device).tril(-1)\n\n"
        )
    )
    (root / "eve.py").write_text(
        with_causal(
            "def causal_mask(T, device=None):\n    i = torch.arange(T, device=device)\n"
            "    return i[:, None] > i[None, :]\n\n"
        )
    )
    (root / "cat.py").write_text(ref)
    out = tmp / "grades"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade-batch",
            str(root),
            "--out",
            str(out),
            "--exercise",
            "masks",
            "--similarity",
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return root, out


def test_grade_batch_similarity_flags_the_same_uncatalogued_wrong_outputs(graded_class, tmp_path):
    root, out = graded_class
    data = json.loads((out / "similarity.json").read_text(encoding="utf-8"))
    assert (out / "similarity.html").is_file()
    top = data["pairs"][0]
    assert {top["a"], top["b"]} == {"ann", "ben"} and top["score"] >= FLAG
    assert any(e["kind"] == "behaviour" and e["function"] == "causal_mask" for e in top["evidence"])
    assert not any("cat" in (p["a"], p["b"]) and p["score"] >= FLAG for p in data["pairs"])
    # the same catalogued mistake is what many honest students do: no evidence
    assert not any({p["a"], p["b"]} == {"dan", "eve"} and p["score"] >= FLAG for p in data["pairs"])
    assert not any(e["kind"] == "behaviour" for p in data["pairs"] if "dan" in (p["a"], p["b"]) for e in p["evidence"])
    # the same class on code alone (no --grades): the two writings are not the same code
    alone = analyse(root, exercises=["masks"])
    p = pair_of(alone, "ann", "ben")
    assert p is None or p.score < FLAG
    # and with the recorded behaviour, read again by the command
    assert main(["similarity", str(root), "--grades", str(out), "--out", str(tmp_path / "again"), "-q"]) == 0
    again = json.loads((tmp_path / "again" / "similarity.json").read_text(encoding="utf-8"))
    assert {again["pairs"][0]["a"], again["pairs"][0]["b"]} == {"ann", "ben"}


def test_no_student_file_holds_another_students_code_or_the_recorded_behaviour(graded_class):
    root, out = graded_class
    recorded = {p.stem: json.loads(p.read_text()) for p in (out / "behaviour").glob("*.json")}
    assert set(recorded) == {"ann", "ben", "cat", "dan", "eve"}
    hashes = {r["outputs"] for fs in recorded.values() for r in fs["functions"].values()}
    assert hashes and recorded["ann"]["functions"]["causal_mask"]["named"] is False
    assert recorded["dan"]["functions"]["causal_mask"]["named"] is True  # the diagnosis named it
    assert (
        recorded["dan"]["functions"]["causal_mask"]["outputs"] == recorded["eve"]["functions"]["causal_mask"]["outputs"]
    )
    assert recorded["cat"]["functions"] == {}
    student_files = [p for p in (out / "reports").rglob("*") if p.is_file()] + [
        p for p in (out / "gradescope").rglob("*") if p.is_file()
    ]
    assert len(student_files) >= 15
    ben_line = "idx.unsqueeze(1) == idx.unsqueeze(0)"
    for p in student_files:
        text = p.read_text(encoding="utf-8", errors="replace")
        assert not any(h in text for h in hashes), p
        assert "similar" not in text.lower() and "相似" not in text, p
        if "ben" not in p.name and p.parent.name != "ben":
            assert ben_line not in text, p
