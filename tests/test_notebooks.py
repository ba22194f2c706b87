"""The exercise notebooks (exercises/<name>.ipynb, written by exercises/build.py from their Jupytext
sources autograder/exercises/<name>/notebook.py).

Fast: each notebook is up to date with its source (and a course author's edit of a source reaches
its notebook and nothing else), valid nbformat v4 with the nbgrader metadata,
has one stub per contract function (raising NotImplementedError) and visible checks worth the
exercise's points in course.yml.
Slow (a real Jupyter kernel, via nbclient): as released, only the visible checks fail; with the
reference solutions pasted into the stubs, every cell runs and the grader's command line gives
full marks for the exercise.
"""

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest
import yaml

from .conftest import ROOT, run_grade

EXERCISES_DIR = ROOT / "exercises"
COURSE = yaml.safe_load((ROOT / "course.yml").read_text(encoding="utf-8"))

# docs/contract.md: exercise id -> the functions (and class) a student writes
CONTRACT = {
    "masks": ["padding_mask", "causal_mask", "attention_mask"],
    "positional_encoding": ["sinusoidal_encoding", "add_positional_encoding"],
    "attention": ["scaled_dot_product_attention", "MultiHeadAttention"],
    "recurrent": ["lstm_cell", "gru_cell", "lstm_sequence"],
    "masked_loss": ["masked_cross_entropy"],
    # docs/contract-extra.md: the rest of the chapter (assignment sequence-models-2)
    "rope": ["rope_angles", "apply_rope"],
    "timeseries": ["chronological_split", "fit_standardizer", "sliding_windows", "make_datasets"],
    "bert_masking": ["special_tokens_mask", "mlm_mask"],
    # docs/contract-extra.md: the tiny language model (assignment sequence-models-3)
    "tiny_lm": ["init_tiny_lm", "tiny_lm_logits", "tiny_lm_loss", "train_tiny_lm"],
    # docs/contract-extra.md: the one-factor ablation (assignment sequence-models-4)
    "ablation": ["make_ablation", "run_experiment", "run_ablation"],
}
# the parts an exercise asks the student to paste from earlier notebooks: stubs before its own, no visible checks
PARTS = {
    "tiny_lm": [
        "padding_mask",
        "causal_mask",
        "sinusoidal_encoding",
        "scaled_dot_product_attention",
        "masked_cross_entropy",
    ]
}
IDS = list(CONTRACT)


def _load_builder():
    """exercises/build.py as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("exercises_build", EXERCISES_DIR / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read_notebook(ex):
    return nbformat.read(str(EXERCISES_DIR / f"{ex}.ipynb"), as_version=4)


def nbgrader(cell):
    return cell.get("metadata", {}).get("nbgrader")


def solution_cells(nb):
    """The stubs: code cells the student fills in."""
    return [c for c in nb.cells if (nbgrader(c) or {}).get("solution") and c.cell_type == "code"]


def answer_cells(nb):
    """Manually graded answer cells (markdown the student writes, scored by hand in nbgrader)."""
    return [c for c in nb.cells if (nbgrader(c) or {}).get("solution") and c.cell_type == "markdown"]


def visible_check_cells(nb):
    return [c for c in nb.cells if (nbgrader(c) or {}).get("grade") and not nbgrader(c).get("solution")]


def course_points(ex):
    return sum(t["points"] for t in COURSE["exercises"][ex]["tests"].values())


def manual_points(ex):
    """course.yml's hand-graded points: {answer cell id: points}."""
    return COURSE["exercises"][ex].get("manual", {})


# ---------------------------------------------------------------- fast checks


def test_contract_functions_match_course_yml():
    assert set(COURSE["exercises"]) == set(CONTRACT)
    for ex, functions in CONTRACT.items():
        graded = {name.split("/", 1)[0] for name in COURSE["exercises"][ex]["tests"]}
        assert graded == set(functions), f"{ex}: course.yml grades {sorted(graded)}, the contract names {functions}"


def test_notebooks_are_up_to_date_with_their_sources():
    build = _load_builder()
    assert sorted(p.parent.name for p in build.SOURCES.glob("*/notebook.py")) == sorted(IDS)
    assert sorted(p.stem for p in EXERCISES_DIR.glob("*.ipynb")) == sorted(IDS)
    stale = [
        ex
        for ex in IDS
        if (EXERCISES_DIR / f"{ex}.ipynb").read_bytes()
        != build.build(build.SOURCES / ex / "notebook.py").encode("utf-8")
    ]
    assert not stale, f"rebuild with `.venv/bin/python exercises/build.py`: {stale} differ from their notebook.py"


def test_each_solution_is_a_link_to_its_exercise_folder():
    """solutions/<name>.py, the built-in course's reference, is a relative link to the one file
    autograder/exercises/<name>/solution.py (exercises/build.py makes it)."""
    for ex in IDS:
        link = ROOT / "solutions" / f"{ex}.py"
        assert link.is_symlink() and os.readlink(link) == f"../autograder/exercises/{ex}/solution.py", ex
        assert link.resolve() == (ROOT / "autograder" / "exercises" / ex / "solution.py").resolve()
    assert sorted(p.stem for p in (ROOT / "solutions").glob("*.py")) == sorted(IDS)


def build_script(*args):
    """exercises/build.py run as a course author runs it, in a process of its own."""
    return subprocess.run(
        [sys.executable, str(EXERCISES_DIR / "build.py"), *map(str, args)], capture_output=True, text=True, timeout=300
    )


def build_here(capsys, *args):
    """exercises/build.py's main(args) in this process (no second import of jupytext): (status, stdout, stderr)."""
    capsys.readouterr()
    try:
        status = _load_builder().main([str(a) for a in args])
    except SystemExit as e:  # argparse: --help, a usage error
        status = e.code
    out, err = capsys.readouterr()
    return status, out, err


# one sentence of the masks notebook's first cell (its goal), in the source and in the notebook
SENTENCE = "Implement the three boolean masks every sequence model of this chapter uses"
EDITED = "Write the three boolean masks that every sequence model in this chapter relies on"


@pytest.fixture
def author_copy(tmp_path):
    """A copy of the exercises' folders with their sources and solutions (tmp/src/<name>/), of the
    notebooks built from them (tmp/out) and of the solutions' links (tmp/solutions)."""
    for ex in IDS:
        (tmp_path / "src" / ex).mkdir(parents=True)
        for name in ("notebook.py", "solution.py"):
            shutil.copyfile(ROOT / "autograder" / "exercises" / ex / name, tmp_path / "src" / ex / name)
    (tmp_path / "out").mkdir()
    (tmp_path / "solutions").mkdir()
    for ex in IDS:
        shutil.copyfile(EXERCISES_DIR / f"{ex}.ipynb", tmp_path / "out" / f"{ex}.ipynb")
        (tmp_path / "solutions" / f"{ex}.py").symlink_to(f"../src/{ex}/solution.py")
    return tmp_path


def test_a_sentence_edited_in_a_source_reaches_its_notebook_and_nothing_else(author_copy, capsys):
    src, out = author_copy / "src", author_copy / "out"
    assert build_here(capsys, "--check", "--src", src, "--out", out)[0] == 0
    source = (src / "masks" / "notebook.py").read_text(encoding="utf-8")
    assert source.count(f"# {SENTENCE}") == 1
    (src / "masks" / "notebook.py").write_text(source.replace(SENTENCE, EDITED), encoding="utf-8")

    check = build_script("--check", "--src", src, "--out", out)
    assert check.returncode == 1 and "masks.ipynb" in check.stdout, check.stdout + check.stderr
    assert not any(f"{ex}.ipynb" in check.stdout for ex in IDS if ex != "masks"), check.stdout
    assert (out / "masks.ipynb").read_bytes() == (EXERCISES_DIR / "masks.ipynb").read_bytes()  # --check wrote nothing

    status, written, err = build_here(capsys, "--src", src, "--out", out)
    assert status == 0 and written.strip() == f"wrote {out / 'masks.ipynb'}", written + err
    before = (EXERCISES_DIR / "masks.ipynb").read_text(encoding="utf-8")
    after = (out / "masks.ipynb").read_text(encoding="utf-8")
    assert before.count(SENTENCE) == 1 and after == before.replace(
        SENTENCE, EDITED
    )  # byte for byte, apart from the sentence
    old, new = read_notebook("masks"), nbformat.read(str(out / "masks.ipynb"), as_version=4)
    assert [c.id for c in new.cells] == [c.id for c in old.cells] and new.metadata == old.metadata
    changed = [c.id for c, d in zip(new.cells, old.cells) if c != d]
    assert changed == ["masks_intro"] and EDITED in new.cells[0].source
    for ex in IDS:
        if ex != "masks":
            assert (out / f"{ex}.ipynb").read_bytes() == (EXERCISES_DIR / f"{ex}.ipynb").read_bytes(), ex
    assert build_here(capsys, "--check", "--src", src, "--out", out)[0] == 0


def test_the_builder_links_each_solution_and_never_overwrites_a_file_of_its_own(author_copy, capsys):
    src, out, solutions = author_copy / "src", author_copy / "out", author_copy / "solutions"
    (solutions / "rope.py").unlink()
    status, said, _ = build_here(capsys, "--check", "--src", src, "--out", out)
    assert status == 1 and "solutions/rope.py" in said and not (solutions / "rope.py").exists(), said
    status, said, err = build_here(capsys, "--src", src, "--out", out)
    assert status == 0 and said.strip() == f"linked {solutions / 'rope.py'} -> ../src/rope/solution.py", said + err
    assert (solutions / "rope.py").read_bytes() == (src / "rope" / "solution.py").read_bytes()
    (solutions / "masks.py").unlink()
    (solutions / "masks.py").write_text("# an edit of its own\n", encoding="utf-8")
    status, _, err = build_here(capsys, "--src", src, "--out", out)
    assert status == 2 and "masks.py is a file that differs from" in err, err
    assert (solutions / "masks.py").read_text(encoding="utf-8") == "# an edit of its own\n"


def test_a_malformed_source_is_a_clear_error_and_writes_nothing(author_copy, capsys):
    src, out = author_copy / "src", author_copy / "out"
    source = (src / "masks" / "notebook.py").read_text(encoding="utf-8")
    header = "# %% masks_notation [markdown] nbgrader={"
    line = source[: source.index(header)].count("\n") + 1
    (src / "masks" / "notebook.py").write_text(source.replace(header, header[:-1] + "{{"), encoding="utf-8")
    (src / "attention" / "notebook.py").write_text(
        "", encoding="utf-8"
    )  # sources are read (and fail) before any is written
    (out / "rope.ipynb").unlink()
    status, _, err = build_here(capsys, "--src", src, "--out", out)
    assert (
        status == 2
        and f"masks/notebook.py:{line}: cannot read the metadata" in err
        and "attention/notebook.py:1: a source starts with a cell header" in err
    ), err
    assert not (out / "rope.ipynb").exists()
    (src / "attention" / "notebook.py").write_text(
        (ROOT / "autograder" / "exercises" / "attention" / "notebook.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (src / "masks" / "notebook.py").write_text(
        source.replace("# %% masks_notation ", "# %% masks_intro "), encoding="utf-8"
    )
    status, _, err = build_here(capsys, "--check", "--src", src, "--out", out)
    assert (
        status == 2
        and err.count("error:") == 1
        and f"masks/notebook.py:{line}: a second cell with the id 'masks_intro'" in err
    ), err
    status, usage, _ = build_here(capsys, "--help")
    assert status == 0 and "--check" in usage and "--src" in usage


@pytest.mark.parametrize("ex", IDS)
def test_notebook_is_valid_v4_without_outputs(ex):
    nb = read_notebook(ex)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert nb.metadata["kernelspec"]["language"] == "python"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{ex}: cell {cell.id} has outputs"


@pytest.mark.parametrize("ex", IDS)
def test_nbgrader_metadata(ex):
    nb = read_notebook(ex)
    grade_ids = [nbgrader(c)["grade_id"] for c in nb.cells if nbgrader(c)]
    assert len(grade_ids) == len(set(grade_ids)), f"{ex}: duplicate grade_ids"
    for cell in nb.cells:
        meta = nbgrader(cell)
        if cell.cell_type == "markdown" and (meta or {}).get("solution"):  # an answer graded by hand (course.yml)
            assert meta == {
                "grade": True,
                "solution": True,
                "locked": False,
                "grade_id": meta["grade_id"],
                "points": manual_points(ex).get(meta["grade_id"]),
                "schema_version": 3,
            }, f"{ex}: answer cell {cell.id} is not a manually graded answer worth course.yml's manual points"
            continue
        if cell.cell_type == "markdown":
            assert meta == {
                "grade": False,
                "solution": False,
                "locked": True,
                "grade_id": meta["grade_id"],
                "schema_version": 3,
            }, f"{ex}: markdown cell {cell.id} is not a locked instruction"
        if meta is None:
            continue
        assert meta["schema_version"] == 3 and meta["grade_id"]
        if meta["solution"]:
            assert meta == {
                "grade": False,
                "solution": True,
                "locked": False,
                "grade_id": meta["grade_id"],
                "schema_version": 3,
            }, f"{ex}: stub {meta['grade_id']}"
        elif meta["grade"]:
            assert meta["locked"] is True and meta["points"] > 0, f"{ex}: visible check {meta['grade_id']}"
            assert set(meta) == {"grade", "solution", "locked", "points", "grade_id", "schema_version"}
    points = sum(nbgrader(c)["points"] for c in visible_check_cells(nb))
    assert points == course_points(ex), f"{ex}: visible checks give {points} points, course.yml {course_points(ex)}"
    assert {nbgrader(c)["grade_id"] for c in answer_cells(nb)} == set(manual_points(ex)), (
        f"{ex}: course.yml's manual points need one answer cell each, and every answer cell needs its points"
    )
    assert [nbgrader(c)["grade_id"] for c in visible_check_cells(nb)] == [f"test_{fn}" for fn in CONTRACT[ex]]


def _reference_module(ex):
    return ast.parse((ROOT / "solutions" / f"{ex}.py").read_text(encoding="utf-8"))


def _signature(node):
    """A function's (or a class's __init__ and forward) argument names and defaults, as text."""
    if isinstance(node, ast.ClassDef):
        return {
            f.name: _signature(f)
            for f in node.body
            if isinstance(f, ast.FunctionDef) and f.name in ("__init__", "forward")
        }
    return ast.unparse(node.args)


@pytest.mark.parametrize("ex", IDS)
def test_every_contract_function_has_a_stub_that_raises(ex):
    nb = read_notebook(ex)
    stubs = solution_cells(nb)
    assert [nbgrader(c)["grade_id"] for c in stubs] == PARTS.get(ex, []) + CONTRACT[ex]
    reference = {n.name: n for n in _reference_module(ex).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for cell in stubs:
        name = nbgrader(cell)["grade_id"]
        tree = ast.parse(cell.source)
        assert len(tree.body) == 1 and getattr(tree.body[0], "name", None) == name, (
            f"{ex}: the cell {name} must define exactly `{name}`"
        )
        node = tree.body[0]
        assert _signature(node) == _signature(reference[name]), f"{ex}: {name} has not the contract's signature"
        functions = [f for f in ast.walk(node) if isinstance(f, ast.FunctionDef)]
        assert functions
        for f in functions:
            last = f.body[-1]
            assert isinstance(last, ast.Raise) and "NotImplementedError" in ast.unparse(last.exc), (
                f"{ex}: {f.name} must end with raise NotImplementedError"
            )
        doc = ast.get_docstring(node)
        assert doc and "\n" not in doc.strip(), f"{ex}: {name} needs a one-line docstring"


@pytest.mark.parametrize("ex", IDS)
def test_each_stub_has_its_formula_above_and_a_picture_or_check_by_hand(ex):
    nb = read_notebook(ex)
    for i, cell in enumerate(nb.cells):
        if (nbgrader(cell) or {}).get("solution") and cell.cell_type == "code":  # a stub (not an answer cell)
            above = nb.cells[i - 1]
            assert above.cell_type == "markdown" and "$" in above.source, (
                f"{ex}: the cell above {nbgrader(cell)['grade_id']} should give its formula"
            )
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "动手检查 / Check by hand" in text and "信息边界" in text and "Row convention" in text


def run_visible_checks(ex, source):
    """Run the notebook's set-up cell, then `source` (a student's module) in place of the stubs,
    then each visible check, in this process; returns {grade_id: error} of the checks that failed."""
    import matplotlib

    matplotlib.use("Agg")
    ns = {"__name__": f"visible_checks_{ex}"}
    failed = {}
    nb = read_notebook(ex)
    for cell in nb.cells:
        meta = nbgrader(cell) or {}
        if cell.cell_type != "code" or meta.get("solution"):
            continue
        if meta.get("grade"):
            try:
                exec(compile(cell.source, meta["grade_id"], "exec"), ns)
            except Exception as e:  # noqa: BLE001 - any failure of a check is a result
                failed[meta["grade_id"]] = f"{type(e).__name__}: {e}"
        elif meta.get("locked"):  # the set-up cell (imports)
            exec(compile(cell.source, meta["grade_id"], "exec"), ns)
            exec(compile(source, f"{ex}.py", "exec"), ns)
    return failed


CORRECT = sorted((ROOT / "tests" / "files" / "correct").glob("*/*.py")) + sorted(
    (ROOT / "tests" / "files" / "correct_extra").glob("*/*.py")
)
CORRECT = [(p.stem, p) for p in CORRECT if p.stem in CONTRACT]


@pytest.mark.parametrize("ex", IDS)
def test_visible_checks_accept_the_reference_solution(ex):
    assert run_visible_checks(ex, (ROOT / "solutions" / f"{ex}.py").read_text(encoding="utf-8")) == {}


@pytest.mark.parametrize("ex,path", CORRECT, ids=[f"{p.parent.name}:{ex}" for ex, p in CORRECT])
def test_visible_checks_accept_every_correct_alternative(ex, path):
    """Like the grader, the visible checks must never reject correct code written another way."""
    sys.path.insert(0, str(path.parent))  # as the grader does: a file may import its sibling
    try:
        failed = run_visible_checks(ex, path.read_text(encoding="utf-8"))
    finally:
        sys.path.remove(str(path.parent))
    assert not failed, f"{path.parent.name}/{path.name} fails visible checks: {failed}"


# ---------------------------------------------------------------- a real kernel


@pytest.fixture(scope="session")
def kernel_name(tmp_path_factory):
    """The kernel "python3", running this interpreter (so torch and the venv are there).

    ipykernel installs a "python3" kernelspec into the environment; jupyter_client runs its
    argv[0] "python" as sys.executable.  If another "python3" kernelspec would win (a user-level
    one pointing elsewhere), a private one is put first on JUPYTER_PATH for the session."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    major, minor = sys.version_info[:2]
    try:
        argv0 = KernelSpecManager().get_kernel_spec("python3").argv[0]
        ours = argv0 in ("python", f"python{major}", f"python{major}.{minor}") or os.path.abspath(
            argv0
        ) == os.path.abspath(sys.executable)  # not resolved: a venv's python is a symlink
    except NoSuchKernel:
        ours = False
    if ours:
        yield "python3"
        return
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (tests)",
                "language": "python",
            }
        ),
        encoding="utf-8",
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", os.pathsep.join(filter(None, [str(root), os.environ.get("JUPYTER_PATH")])))
        yield "python3"


_EXECUTE = """
import sys
import nbformat
from nbclient import NotebookClient
src, dst, kernel_name, cwd = sys.argv[1:]
nb = nbformat.read(src, as_version=4)
NotebookClient(nb, kernel_name=kernel_name, timeout=120, allow_errors=True,
               resources={"metadata": {"path": cwd}}).execute()
nbformat.write(nb, dst)
"""


def execute_all(notebooks, kernel_name, tmp):
    """{key: the notebook with every cell run in a fresh kernel} for {key: notebook}; errors are kept
    in the outputs, not raised.  Two at a time (each kernel keeps one core busy), each in a process
    of its own running nbclient, in a folder of its own."""
    from concurrent.futures import ThreadPoolExecutor

    def run(key):
        cwd = tmp / key
        cwd.mkdir()
        src, dst = tmp / f"{key}.in.ipynb", tmp / f"{key}.out.ipynb"
        nbformat.write(notebooks[key], str(src))
        proc = subprocess.run(
            [sys.executable, "-c", _EXECUTE, str(src), str(dst), kernel_name, str(cwd)],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, f"{key}: {proc.stderr[-3000:]}"
        return key, nbformat.read(str(dst), as_version=4)

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(run, list(notebooks)))


@pytest.fixture(scope="module")
def executed(kernel_name, tmp_path_factory):
    """Every notebook as released and with the reference solutions pasted in, run in real kernels."""
    notebooks = {**{f"released-{ex}": read_notebook(ex) for ex in IDS}, **{f"solved-{ex}": solved(ex) for ex in IDS}}
    return execute_all(notebooks, kernel_name, tmp_path_factory.mktemp("executed"))


def errors(cell):
    return [o for o in cell.get("outputs", []) if o.output_type == "error"]


def stdout(cell):
    return "".join(
        o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream" and o.name == "stdout"
    )


def stderr(cell):
    return "".join(
        o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream" and o.name == "stderr"
    )


def solved(ex):
    """The released notebook with each stub replaced by the reference from solutions/<ex>.py."""
    source = (ROOT / "solutions" / f"{ex}.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    imports = "\n".join(
        ast.get_source_segment(source, n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
    )
    defs = {
        n.name: ast.get_source_segment(source, n) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))
    }
    nb = read_notebook(ex)
    for cell in solution_cells(nb):
        cell.source = f"{imports}\n\n\n{defs[nbgrader(cell)['grade_id']]}"
    return nb


@pytest.mark.slow
@pytest.mark.parametrize("ex", IDS)
def test_released_notebook_fails_only_in_its_visible_checks(ex, executed):
    nb = executed[f"released-{ex}"]
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        meta = nbgrader(cell) or {}
        if meta.get("grade") and not meta.get("solution"):
            errs = errors(cell)
            assert errs and errs[0].ename == "NotImplementedError", (
                f"{ex}: the visible check {meta['grade_id']} should fail on the stub, got {[e.ename for e in errs]}"
            )
        else:
            assert not errors(cell), f"{ex}: cell {cell.id} crashed before the visible checks:\n" + "\n".join(
                errors(cell)[0].traceback
            )
    hints = [c for c in nb.cells if "implement" in stdout(c).lower() and "first" in stdout(c).lower()]
    assert hints, f"{ex}: no picture/check-by-hand cell told the student to implement the function first"


@pytest.mark.slow
@pytest.mark.parametrize("ex", IDS)
def test_solved_notebook_runs_and_passes_its_visible_checks(ex, executed):
    nb = executed[f"solved-{ex}"]
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not errors(cell), f"{ex}: cell {cell.id} failed with the reference solution:\n" + "\n".join(
                errors(cell)[0].traceback
            )
            if not (nbgrader(cell) or {}).get("locked") or (nbgrader(cell) or {}).get("grade"):
                # a warning (e.g. a glyph missing from the plot font); the set-up cell may log
                # matplotlib's one-off "building the font cache" on a fresh machine
                assert not stderr(cell), f"{ex}: cell {cell.id} wrote to stderr:\n{stderr(cell)[:1000]}"
    for cell in visible_check_cells(nb):
        assert "passed" in stdout(cell), f"{ex}: {nbgrader(cell)['grade_id']} did not report success"
    assert not any("implement" in stdout(c).lower() and "first" in stdout(c).lower() for c in nb.cells)


@pytest.fixture(scope="module")
def solved_report(tmp_path_factory):
    """One `grade` of a folder holding every solved notebook, every exercise (one torch import)."""
    tmp = tmp_path_factory.mktemp("solved")
    folder = tmp / "student"
    folder.mkdir()
    for ex in IDS:
        nbformat.write(solved(ex), str(folder / f"{ex}.ipynb"))
    proc, report = run_grade(folder, tmp, *[a for ex in IDS for a in ("--exercise", ex)])
    assert proc.returncode == 0, proc.stderr
    return report


@pytest.mark.slow
@pytest.mark.parametrize("ex", IDS)
def test_solved_notebook_gets_full_marks_from_the_grader(ex, solved_report):
    (result,) = [e for e in solved_report["exercises"] if e["id"] == ex]
    lost = {t["name"]: t["feedback"] for t in result["tests"] if not t["passed"]}
    assert not lost and result["score"] == result["max_score"] == course_points(ex), lost
    assert not solved_report["errors"], solved_report["errors"]
