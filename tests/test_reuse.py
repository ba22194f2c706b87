"""Reuse (autograder/sandbox/reuse.py): in a batch, an exercise whose code was graded before with
every test passed, or with failures that depend on the code alone, is not graded again.  What decides "the same code" is tested on its own; then a
small class through grade-batch gets exactly the reports `grade` gives each submission alone, and
nothing that could behave differently is reused."""
import json
import subprocess
import sys

import pytest

from autograder.sandbox.reuse import FileModel, Impure

from .conftest import ROOT

SOL = {ex: (ROOT / "solutions" / f"{ex}.py").read_text(encoding="utf-8") for ex in ("masks", "masked_loss")}


def fp(text, name):
    return FileModel(text).fingerprint(name)


# ---------------------------------------------------------------- the same code

@pytest.mark.parametrize("change", [
    lambda s: "# my notes\n\n\n" + s,  # comments and blank lines
    lambda s: s.replace('"""', '"""Mine. ', 1),  # a docstring
    lambda s: s + "\n\ndef unrelated_helper(x):\n    return x + 1\n",  # a definition nobody calls
    lambda s: s + '\n\nif __name__ == "__main__":\n    print(causal_mask(3))\n',  # never runs in a worker
    lambda s: s.replace("import torch\n", "import torch\nimport math\n", 1),  # an unused import
    # files pasted into one: their docstrings (bare strings) between the definitions
    lambda s: s.replace("\ndef ", '\n"""Part 2: the causal mask / 第二部分."""\n...\n\ndef ', 1),
])
def test_what_cannot_change_behaviour_keeps_the_fingerprint(change):
    assert fp(change(SOL["masks"]), "causal_mask") == fp(SOL["masks"], "causal_mask")


@pytest.mark.parametrize("extra", [
    "def causal_mask(T, device=None):\n    return torch.ones(T, T, dtype=torch.bool, device=device).triu()\n",
    "import numpy as torch\n",  # the same code, another module behind the name
    "EPS = 1e-9\ndef causal_mask(T, device=None, eps=EPS):\n"
    "    return torch.ones(T, T, dtype=torch.bool, device=device).tril()\n",
    # constants that compare equal but are not the same code: an int, a float, a bool
    "def causal_mask(T, device=None):\n    return torch.ones(T, T, dtype=torch.bool, device=device).tril(0)\n",
    "def causal_mask(T, device=None):\n    return torch.ones(T, T, dtype=torch.bool, device=device).tril(False)\n",
    # a body that is only a docstring counts as `pass`, not as nothing
    'def causal_mask(T, device=None):\n    """Unfinished."""\n',
])
def test_what_can_change_behaviour_changes_the_fingerprint(extra):
    assert fp(SOL["masks"] + "\n\n" + extra, "causal_mask") != fp(SOL["masks"], "causal_mask")


def test_an_int_and_a_float_constant_are_different_code():
    base = SOL["masks"] + "\n\ndef helper(x):\n    return x * 2\n"
    other = SOL["masks"] + "\n\ndef helper(x):\n    return x * 2.0\n"
    assert fp(base, "helper") != fp(other, "helper")
    assert fp(base, "helper") == fp(base.replace("return x * 2", "return x * 2  # doubled"), "helper")


def test_a_helper_is_part_of_the_function_that_calls_it():
    base = "import torch\n\ndef _tri(T, device):\n    return torch.ones(T, T, dtype=torch.bool, device=device).tril()\n\n" \
           "def causal_mask(T, device=None):\n    return _tri(T, device)\n"
    other = base.replace(".tril()", ".triu()")
    assert fp(base, "causal_mask") != fp(other, "causal_mask")
    # a subclass of the definition before it (as catalogue entries write MultiHeadAttention)
    att = (ROOT / "solutions" / "attention.py").read_text(encoding="utf-8")
    sub = att + "\n\nclass MultiHeadAttention(MultiHeadAttention):\n    pass\n"
    assert fp(sub, "MultiHeadAttention") != fp(att, "MultiHeadAttention")
    assert fp(sub, "scaled_dot_product_attention") == fp(att, "scaled_dot_product_attention")


@pytest.mark.parametrize("code", [
    "import torch\nprint('hello')\n",  # top-level code
    "import torch\ntorch.tril = lambda x, *a, **k: x\n",  # a monkeypatch
    "import torch\nimport os\n",  # a module outside the allow-list
    "from masks import padding_mask\n",  # a sibling file
    "from torch import *\n",
    "import torch\nX = torch.zeros(3)\n",  # a name bound to something computed
])
def test_files_with_anything_but_definitions_are_not_pure(code):
    with pytest.raises(Impure):
        FileModel(code + "\ndef causal_mask(T, device=None):\n    return None\n")


@pytest.mark.parametrize("body", [
    "global N\n    N = 1\n    return None",
    "import time\n    return time.time()",
    "return id(T)",
    "return getattr(torch, 'tril')(torch.ones(T, T))",
    "return eval('T')",
    "return open('/etc/passwd').read()",
    "return torch.load('answers.pt')",  # a file of the submission: its bytes are not in the key
    "import numpy as np\n    return torch.from_numpy(np.fromfile('answers.bin'))",
    "return undefined_name",
    "raise ValueError(__name__)",  # the module's name: the file's, another in each layout
])
def test_closures_that_vary_or_reach_out_are_never_reused(body):
    model = FileModel(f"import torch\n\ndef causal_mask(T, device=None):\n    {body}\n")
    with pytest.raises(Impure):
        model.fingerprint("causal_mask")


# ---------------------------------------------------------------- a class through grade-batch

@pytest.mark.slow
def test_a_batch_reuses_only_what_is_the_same_and_gives_the_reports_grade_gives(tmp_path):
    exercises = ["masks", "masked_loss"]
    klass = tmp_path / "class"

    def student(name, masks_extra="", header=""):
        d = klass / name
        d.mkdir(parents=True)
        (d / "masks.py").write_text(header + SOL["masks"] + masks_extra, encoding="utf-8")
        (d / "masked_loss.py").write_text(header + SOL["masked_loss"], encoding="utf-8")

    student("a1")
    student("a2", header="# mine, with comments\n")  # the same code: both exercises reused
    student("b1", masks_extra="\n\ndef causal_mask(T, device=None):\n"
                              "    return torch.ones(T, T, dtype=torch.bool, device=device).triu()\n")
    student("b2", header="# the same mistake as b1's\n\n\n",
            masks_extra="\n\ndef causal_mask(T, device=None):\n"
                        "    return torch.ones(T, T, dtype=torch.bool, device=device).triu()\n")
    raising = "\n\ndef causal_mask(T, device=None):\n    raise RuntimeError('not today')\n"
    student("e1", masks_extra=raising)
    student("e2", header="# another line, so the traceback's line numbers differ\n", masks_extra=raising)
    student("m1", masks_extra="\n\n_orig = torch.Tensor.tril\ntorch.Tensor.tril = lambda self, diagonal=0: "
                              "_orig(self, diagonal + 1)\n")
    # the same two files pasted into one, with annotations and a class nobody calls: a1's code
    (klass / "f1.py").write_text(SOL["masks"] + "\n\nfrom typing import Optional\nimport torch.nn as nn\n\n\n"
                                 "class Unused(nn.Module):\n    def forward(self, x: torch.Tensor, k: Optional[int] = None)"
                                 " -> torch.Tensor:\n        return x\n\n\n" + SOL["masked_loss"], encoding="utf-8")
    # a decorator of the student's runs as masks.py loads; d2's patches torch (no function calls it)
    deco = "\n\ndef deco(f):\n    {body}\n    return f\n\n\n@deco\ndef unused(x):\n    return x\n"
    student("d1", masks_extra=deco.format(body="pass"))
    student("d2", masks_extra=deco.format(body="torch.Tensor.tril = torch.Tensor.triu"))
    out = tmp_path / "grades"
    flags = [arg for ex in exercises for arg in ("--exercise", ex)]
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade-batch", klass, "--out", out, "--workers", "1",
                           "-q", *flags], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = (out / "batch.log").read_text(encoding="utf-8")
    reused = {line.split(" graded ")[1].split()[0]: int(line.split("reused=")[1]) if "reused=" in line else 0
              for line in log.splitlines() if " graded " in line and " fingerprint=" in line}
    assert reused["a1"] == 0 and reused["a2"] == 2, log  # a2's files differ from a1's only in comments
    assert reused["b1"] == 1, log  # its masked_loss only: its causal_mask is another
    # the same failure (and diagnosis) as b1's: remembered, its feedback depends on the code alone
    assert reused["b2"] == 2, log
    # a failure whose feedback shows the student's frames (file, line) is graded again
    assert reused["e1"] == 1 and reused["e2"] == 1, log
    assert reused["m1"] == 1, log  # top-level code in masks.py patches torch: only its other file is reused
    assert reused["f1"] == 2, log  # one file holding a1's functions: what it binds besides them runs nothing
    # a decorator that runs as masks.py loads: its code is part of the key (d2 is not d1)
    assert reused["d1"] == 1 and reused["d2"] == 1, log
    for name in ("a2", "b1", "b2", "e2", "m1", "f1", "d2"):
        batch = json.loads((out / "reports" / f"{name}.json").read_text(encoding="utf-8"))
        alone_file = tmp_path / f"{name}.json"
        where = klass / name if (klass / name).exists() else klass / f"{name}.py"
        subprocess.run([sys.executable, "-m", "autograder", "grade", where, "--json", alone_file, "-q", *flags],
                       cwd=ROOT, check=True, capture_output=True, timeout=600)
        alone = json.loads(alone_file.read_text(encoding="utf-8"))

        def view(report):
            return [(e["id"], e["score"], [(t["name"], t["passed"], t["feedback"]) for t in e["tests"]])
                    for e in report["exercises"]]

        assert view(batch) == view(alone), name
        assert batch["errors"] == alone["errors"] and batch["sandbox"] == alone["sandbox"], name
    scores = {n: json.loads((out / "reports" / f"{n}.json").read_text(encoding="utf-8"))["score"] for n in reused}
    assert scores["a1"] == scores["a2"] == scores["f1"] == scores["d1"] == 35, scores
    assert scores["b1"] == scores["b2"] < 35 and scores["m1"] < 35 and scores["d2"] < 35, scores
    b2 = json.loads((out / "reports" / "b2.json").read_text(encoding="utf-8"))
    named = {d["id"] for e in b2["exercises"] for t in e["tests"] for d in t.get("diagnosis") or []}
    assert named, "b2's reused failures keep their diagnosis"
    e2 = json.loads((out / "reports" / "e2.json").read_text(encoding="utf-8"))
    line = (klass / "e2" / "masks.py").read_text(encoding="utf-8").splitlines().index(raising.splitlines()[-1]) + 1
    assert f"masks.py, line {line}, in causal_mask" in json.dumps(e2, ensure_ascii=False), "e2's own line numbers"


def _key(*files, exercise="masks", names=("causal_mask",)):
    """Reuse.keys for a submission of `files` ((stem, text) pairs), as the batch computes it."""
    from autograder.sandbox.reuse import Reuse

    sources = [(f"{stem}.py", f"submission_{stem}", f"/s/{stem}.py", [(f"{stem}.py", f"/s/{stem}.py", text)])
               for stem, text in files]
    return Reuse.keys(Reuse.models(sources), sources, exercise, list(names), list(names))


def test_what_runs_at_load_is_part_of_the_key_even_in_a_class_nobody_calls():
    base = SOL["masks"]
    evil = base + "\n\nclass Unused:\n    _ = setattr(torch.Tensor, 'tril', torch.Tensor.triu)\n"
    computed = base + "\n\nclass Unused:\n    x = torch.ones(1)\n"
    assert _key(("masks", base)) != _key(("masks", computed))  # a class body called something
    with pytest.raises(Impure):
        _key(("masks", evil))  # setattr while loading
    with pytest.raises(Impure):
        _key(("torch", base))  # a file that an `import torch` in a sibling could pick up


HEADER = "import functools\nfrom typing import List, Optional, Tuple\nimport torch.nn as nn\n"


@pytest.mark.parametrize("unused", [
    "class Unused:\n    \"\"\"Notes.\"\"\"\n    x = 1\n    names: List[str] = ['a']\n",
    "class Unused(nn.Module):\n    def forward(self, x: torch.Tensor, k: Optional[int] = None) -> torch.Tensor:\n"
    "        return x\n",
    "def unused(x: 'torch.Tensor', d: int | None = None, dtype=torch.float32, *, eps=-1e-9)"
    " -> Tuple[torch.Tensor, List[int]]:\n    return x\n",
    "class Unused:\n    @staticmethod\n    def f(x):\n        return x\n\n    @property\n    def p(self):\n"
    "        return 1\n",
    "@torch.no_grad()\ndef unused(x):\n    return x\n",
    "SCALE = 2.0\n\ndef unused(x, s=SCALE, f=causal_mask):\n    return x\n",
])
def test_a_definition_whose_making_runs_nothing_leaves_the_key_alone(unused):
    """Imports, constants, annotations, literal defaults, library bases and wrappers only bind
    names: the same functions have the same key whatever sits next to them."""
    assert _key(("masks", HEADER + SOL["masks"] + "\n\n" + unused)) == _key(("masks", SOL["masks"]))


def test_the_same_functions_in_one_file_or_in_a_folder_have_the_same_key():
    alone = _key(("masks", SOL["masks"]))
    together = SOL["masks"] + "\n\n" + SOL["masked_loss"]
    assert _key(("s0001", together)) == alone  # a single file: every file loads
    assert _key(("masks", SOL["masks"]), ("masked_loss", SOL["masked_loss"])) == alone
    assert _key(("s0001", together), exercise="masked_loss", names=("masked_cross_entropy",)) == \
        _key(("masked_loss", SOL["masked_loss"]), exercise="masked_loss", names=("masked_cross_entropy",))


@pytest.mark.parametrize("unused", [
    "class Unused:\n    x = torch.ones(1)\n",  # a call in a class body
    "def unused(x, d=torch.ones(1)):\n    return x\n",  # a computed default
    "def unused(x: torch.Tensr):\n    return x\n",  # an annotation that raises as the file loads
    "def unused(x: Optional[int, str]):\n    return x\n",  # ... a subscript that raises
    "class Unused(torch.nn.Modul):\n    pass\n",  # a base that does not exist
    "class Unused(metaclass=type):\n    pass\n",  # a keyword
    "import enum\n\nclass Unused(enum.Enum):\n    A = 1\n    A = 2\n",  # a library metaclass (this one raises)
    "@functools.lru_cache\ndef unused(x):\n    return x\n",  # a decorator that is not a plain wrapper
    "class Unused:\n    staticmethod = 3\n\n    @staticmethod\n    def f(x):\n        return x\n",  # 3(f) raises
])
def test_a_definition_whose_making_may_run_something_is_in_the_key(unused):
    assert _key(("masks", HEADER + SOL["masks"] + "\n\n" + unused)) != _key(("masks", SOL["masks"]))


@pytest.mark.parametrize("maker", [
    "def deco(f):\n    {body}\n    return f\n\n@deco\ndef unused(x):\n    return x\n",
    "class Meta(type):\n    def __init__(cls, *args):\n        {body}\n        type.__init__(cls, *args)\n\n"
    "class Unused(metaclass=Meta):\n    pass\n",
    "class Base:\n    def __init_subclass__(cls):\n        {body}\n\nclass Unused(Base):\n    pass\n",
    "def helper():\n    {body}\n    return 1\n\ndef unused(x, d=helper()):\n    return x\n",
    "def helper():\n    {body}\n    return 1\n\nclass Unused:\n    x = helper()\n",
])
def test_the_students_own_code_that_runs_as_the_file_loads_is_in_the_key(maker):
    """A decorator, metaclass, base class or default of the student's runs its body as the file
    loads, even next to functions nobody calls: its code is part of the key (its body, not only
    the text of the definition that uses it)."""
    benign = SOL["masks"] + "\n\n" + maker.format(body="pass")
    evil = SOL["masks"] + "\n\n" + maker.format(body="torch.Tensor.tril = torch.Tensor.triu")
    assert _key(("masks", evil)) != _key(("masks", benign)) != _key(("masks", SOL["masks"]))
    risky = SOL["masks"] + "\n\n" + maker.format(body="getattr(torch, 'tril')")
    with pytest.raises(Impure):
        _key(("masks", risky))


def test_a_failure_that_names_the_students_module_is_not_remembered():
    """str(type(obj)) of the student's own class names its module: "submission_masks" in a folder,
    "submission_s0042" in one file; what that failure says depends on the layout, not the code."""
    from autograder.sandbox.reuse import settled_outcomes

    def result(message):
        return {"tests": {"t": {"status": "failed", "zh": message, "en": message, "details": []}}, "settled": {}}

    assert settled_outcomes(result("returned a list, expected a tensor")) is not None
    assert settled_outcomes(result("returned <class 'submission_masks.Mask'>, expected a tensor")) is None


def test_an_import_that_would_fail_is_never_reused():
    with pytest.raises(Impure):
        FileModel("from torch.nn.functional import softmx\n" + SOL["masks"])
    FileModel("from torch.nn.functional import softmax\nfrom typing import Optional\n" + SOL["masks"])


def test_what_one_process_stores_another_takes_through_the_batch():
    """Reuse.take_new / absorb: the entries one grading process stored, passed as JSON (as the
    batch passes them), let another process's cache give the same outcomes; anything malformed is
    dropped, and nothing is taken twice."""
    from autograder.sandbox.reuse import Reuse

    def sources(text):
        return [("masks.py", "submission_masks", "/s/masks.py", [("masks.py", "/s/masks.py", text)])]

    passed = {"status": "passed", "seconds": 0.01, "looked_up": ["causal_mask"]}
    result = {"tests": {"causal_mask/lower_triangular": dict(passed)}, "load_errors": [], "levels": {"rlimits": True},
              "settled": {"looked_up": []}}
    one, two = Reuse(), Reuse()
    src = sources(SOL["masks"])
    assert one.store(src, "masks", ["causal_mask"], result)
    sent = json.loads(json.dumps(one.take_new()))
    assert len(sent) == 1 and one.take_new() == []  # taken once
    assert two.lookup(sources("# mine\n" + SOL["masks"]), "masks", ["causal_mask"]) is None
    assert two.absorb(sent) == 1 and two.absorb(sent) == 0
    hit = two.lookup(sources("# mine\n" + SOL["masks"]), "masks", ["causal_mask"])
    assert hit is not None and hit["tests"] == {"causal_mask/lower_triangular": passed}
    assert hit["levels"] == {"rlimits": True} and two.take_new() == []  # absorbed, not passed on again
    other = SOL["masks"].replace(".tril()", ".triu()")
    assert two.lookup(sources(other), "masks", ["causal_mask"]) is None  # other code: graded
    three = Reuse()
    bad = [None, "x", [1, 2, 3], ["masks", [], [], {}], ["masks", ["causal_mask"], ["k"], {"tests": {}}],
           ["masks", ["causal_mask"], [1], {"tests": {"t": {}}, "levels": {}}],
           ["masks", ["causal_mask"], ["k"], {"tests": {"t": "passed"}, "levels": {}}]]
    assert three.absorb(bad) == 0 and three.absorb("not a list") == 0 and three.size == 0


def test_a_failure_next_to_a_file_that_could_not_be_read_is_not_remembered():
    """A "missing" outcome lists the submission's load errors (a corrupt notebook next to the
    code): a classmate with the same code but no such file must not be shown them."""
    from autograder.sandbox.reuse import Reuse

    sources = [("masks.py", "submission_masks", "/s/masks.py", [("masks.py", "/s/masks.py", SOL["masks"])])]
    missing = {"status": "missing", "zh": "", "en": "`f` is not defined in your submission.",
               "details": [["load errors", "broken.ipynb: not valid JSON"]], "looked_up": ["padding_mask"]}
    result = {"tests": {"padding_mask/shape": missing}, "load_errors": ["broken.ipynb: not valid JSON"],
              "levels": {}, "settled": {"looked_up": []}}
    cache = Reuse()
    assert not cache.store(sources, "masks", ["padding_mask"], result, ["broken.ipynb: not valid JSON"])
    assert cache.lookup(sources, "masks", ["padding_mask"]) is None
    passed = {"tests": {"padding_mask/shape": {"status": "passed", "seconds": 0.0, "looked_up": ["padding_mask"]}},
              "load_errors": ["broken.ipynb: not valid JSON"], "levels": {}}
    assert cache.store(sources, "masks", ["padding_mask"], passed, ["broken.ipynb: not valid JSON"])
    hit = cache.lookup(sources, "masks", ["padding_mask"], [])  # the classmate's own (no) load errors
    assert hit is not None and hit["load_errors"] == [] and hit["tests"]["padding_mask/shape"]["status"] == "passed"
