"""Build a ready nbgrader course (and a student kit) from a course folder: course.yml, solutions/,
exercises/ (see config.py).

    DIR/nbgrader_config.py              course id, SandboxGrade instead of Execute, restore deleted
                                        test cells, flag unreadable notebooks, release settings
    DIR/course.yml, solutions/,         a copy of the course folder: DIR is itself a course, so the
      exercises/                        graders run inside DIR (or with --course DIR) find all of it
    DIR/source/<assignment>/<ex>.ipynb  per exercise: the student notebook with the reference
                                        solution inside ### BEGIN/END SOLUTION, the visible checks
                                        as locked 0-point test cells, and one locked hidden-tests
                                        cell per function holding that function's points
    DIR/source/<assignment>/conftest.py `pytest` in the released folder runs the visible checks, one
                                        line per function, with no grader installed (kit_conftest.py)
    DIR/source/<assignment>/submit.py   `submit("masks.ipynb")` in a notebook (or `python submit.py`)
                                        sends the work to the grading service and prints the score
                                        (kit_submit.py, standard library only)
    DIR/source/<assignment>/submit.json the assignment's name, and the service's address when given

Nothing of the hidden properties or the answers is written into a notebook: a hidden-tests cell
holds a few lines that print, in both languages, that the hidden tests run when the work is graded
(and, in a misconfigured `nbgrader autograde` that runs it in a kernel, fail loudly rather than
give the points away), ending in one call, `hidden_tests("attention", "MultiHeadAttention")`, which
SandboxGrade reads to fill the cell with the real result.

A markdown answer cell of the exercise notebook (nbgrader grade=True, solution=True: a written
analysis) stays a manually graded answer: its points are course.yml's `manual` points for its id,
and the model answer, a top-level string of that name in solutions/<exercise>.py, goes into a
solution region (nbgrader's release shows ClearSolutions.text_stub instead).  `nbgrader autograde`
flags it *needs manual grade*; `grade` never scores it.

`write_student_kit` writes the same notebooks without solutions (the exercise stubs as they are)
and the same conftest.py, submit.py and submit.json: what students need when the course does not
use nbgrader.
"""

import ast
import json
import shutil
import textwrap
from pathlib import Path

import nbformat

from ..errors import ConfigError
from ..load import source
from . import HIDDEN_MARKER, VISIBLE_MARKER

KIT_CONFTEST = Path(__file__).resolve().parent / "kit_conftest.py"
KIT_SUBMIT = Path(__file__).resolve().parent / "kit_submit.py"


def write_submit_files(folder, assignment, service_url=None):
    """submit.py, and submit.json with the assignment's name (and the service's address): what
    `submit` reads when neither its arguments nor the environment say.  Returns both paths."""
    folder = Path(folder)
    shutil.copyfile(KIT_SUBMIT, folder / "submit.py")
    settings = {"assignment": assignment}
    if service_url:
        settings["url"] = service_url.rstrip("/") + "/"
    (folder / "submit.json").write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    return [folder / "submit.py", folder / "submit.json"]


# ---------------------------------------------------------------- solution regions


def _body_source(lines, fn, already=()):
    """Source lines of fn's body without its docstring and without leading statements the stub
    already has before its `raise` (`already`: their ast.unparse); None if nothing is left."""
    body = fn.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(getattr(body[0], "value", None), ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    while body and ast.unparse(body[0]) in already:
        body = body[1:]
    if not body:
        return None
    start = body[0].lineno - 1
    # keep comment lines right above the first statement (they belong to it)
    while start > fn.body[0].lineno and lines[start - 1].strip().startswith("#"):
        start -= 1
    return textwrap.dedent("\n".join(lines[start : fn.end_lineno]))


def _region(code, indent):
    pad = " " * indent
    inner = textwrap.indent(code, pad)
    return f"{pad}### BEGIN SOLUTION\n{inner}\n{pad}### END SOLUTION"


def with_solution(stub_src, solution_src, name):
    """The stub cell `stub_src` (one function or class whose bodies raise NotImplementedError) with
    every `raise NotImplementedError` replaced by the solution's body inside a solution region.
    Methods the solution has and the stub lacks (helpers) are added, their bodies in regions."""
    s_lines, r_lines = stub_src.splitlines(), solution_src.splitlines()
    stub, ref = source.qualified(ast.parse(stub_src)), source.qualified(ast.parse(solution_src))
    if name not in stub or name not in ref:
        raise ConfigError(f"{name}: not defined in both the exercise's stub cell and solutions/")
    edits = []  # (first line index, last line index exclusive, replacement lines)
    for qual, fn in stub.items():
        if isinstance(fn, ast.ClassDef) or not (qual == name or qual.startswith(name + ".")):
            continue
        raises = [st for st in fn.body if isinstance(st, ast.Raise) and "NotImplementedError" in ast.unparse(st)]
        if not raises:
            continue
        if qual not in ref:
            raise ConfigError(f"{qual}: the stub has it, solutions/ does not")
        st = raises[0]
        before = {ast.unparse(x) for x in fn.body[: fn.body.index(st)]}
        body = _body_source(r_lines, ref[qual], before)
        first = st.lineno - 1
        while first > 0 and "your code" in s_lines[first - 1] and s_lines[first - 1].strip().startswith("#"):
            first -= 1  # nbgrader's code stub says it (ClearSolutions.code_stub in nbgrader_config.py)
        edits.append((first, st.end_lineno, _region(body, st.col_offset).splitlines()))
    if isinstance(stub[name], ast.ClassDef):  # helper methods of the solution the stub does not show
        cls = stub[name]
        for qual, fn in ref.items():
            if qual.startswith(name + ".") and qual not in stub:
                indent = cls.body[-1].col_offset
                head = r_lines[fn.lineno - 1 : fn.body[0].lineno - 1] if fn.body else []
                doc = ast.get_docstring(fn)
                lines = [""] + [" " * indent + h.strip() if i == 0 else h for i, h in enumerate(head)]
                if doc:
                    lines.append(" " * (indent + 4) + '"""' + doc.replace('"""', "'''") + '"""')
                lines += _region(_body_source(r_lines, fn), indent + 4).splitlines()
                edits.append((cls.end_lineno, cls.end_lineno, lines))
    if not edits:
        raise ConfigError(f"{name}: the stub cell has no `raise NotImplementedError` to replace")
    for start, end, new in sorted(edits, reverse=True):
        s_lines[start:end] = new
    out = "\n".join(s_lines)
    ast.parse(out)  # still valid Python
    return out


# ---------------------------------------------------------------- notebooks


def model_answer(solution_src, name):
    """The top-level string assigned to `name` in a reference solution (a written answer), or None."""
    for node in ast.parse(solution_src).body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == [name]
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return textwrap.dedent(node.value.value).strip("\n")
    return None


def _meta(grade_id, *, grade, solution, locked, points=None):
    m = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution}
    if points is not None:
        m["points"] = points
    return {"nbgrader": m}


def hidden_cell(exercise, function, points):
    """The locked hidden-tests cell of `function`.  Run by a student (Jupyter, `nbgrader validate`) it
    prints that the hidden tests run at grading time and scores nothing; it needs no grader.  In
    `nbgrader autograde` SandboxGrade fills it without running it; should a misconfigured autograde run
    it in a kernel, it fails (0 points, a clear message) instead of handing out the points."""
    src = f"""{HIDDEN_MARKER} ({points:g} points) — 不要修改 / do not edit
# 隐藏测试在评分时由评分器运行，这个单元格只在这里说明。/ The hidden tests run when your work is graded; this cell only says so.
def hidden_tests(exercise, function, points={points:g}):
    import os
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":  # SandboxGrade grades this cell; a kernel never should
        raise RuntimeError("seqgrader: nbgrader autograde ran a hidden-tests cell in a kernel: nbgrader_config.py "
                           "must use SandboxGrade (seqgrader nbgrader-course writes it)")
    print(f"🔒 {{function}}：隐藏测试（{{points:g}} 分）在作业评分时运行，这里不运行、不计分。\\n"
          f"   {{function}}: the hidden tests ({{points:g}} points) run when your work is graded; nothing is scored here.")


hidden_tests({exercise!r}, {function!r})"""
    cell = nbformat.v4.new_code_cell(
        src, metadata=_meta(f"hidden_{function}", grade=True, solution=False, locked=True, points=points)
    )
    cell.id = f"hidden-{function}"[:64]
    return cell


NOTE = """\
### 计分说明 / How this notebook is scored

每个函数后面有两个 🔒 单元格：**自测**（0 分，帮你自查）和 **隐藏测试**（这个函数的全部分数）。隐藏测试在作业评分时由评分器运行：
它在沙箱里用随机的小输入检查你的函数的性质，结果和反馈会出现在批改后的笔记本里。你自己运行时，隐藏测试单元格只说明这一点，不计分。
提交前，在这个文件夹里运行 `pytest`（每个函数一行：通过、还没有实现、或没通过以及原因），或者运行 `nbgrader validate`。

After each function come two 🔒 cells: the **visible checks** (0 points, for you) and the **hidden tests** (all of
the function's points). The hidden tests run when your work is graded: the grader checks properties of your function
on small random inputs in its sandbox, and the results and feedback appear in your graded notebook. When you run
the notebook yourself, a hidden-tests cell only says so and scores nothing. Before submitting, run `pytest` in this
folder (one line per function: passed, not implemented yet, or failed and why), or `nbgrader validate`.
"""


MANUAL_NOTE = """
书面回答的单元格由助教手工评分（分数写在单元格上方的题目里），隐藏测试不评它。

The written-answer cell is graded by hand (its points are in the question above it); the hidden tests do not grade it.
"""


def source_notebook(exercise, course, exercises_dir, solutions_dir, *, solutions=True):
    """The instructor's version of one exercise notebook (see the module docstring); with
    `solutions=False` the student's version (the stubs as they are, for the student kit)."""
    path = Path(exercises_dir) / f"{exercise}.ipynb"
    sol_path = Path(solutions_dir) / f"{exercise}.py"
    if not path.exists():
        raise ConfigError(f"no notebook for exercise {exercise!r}: {path}")
    if solutions and not sol_path.exists():
        raise ConfigError(f"no reference solution for exercise {exercise!r}: {sol_path}")
    nb = nbformat.read(str(path), as_version=4)
    solution = sol_path.read_text(encoding="utf-8") if solutions else ""
    points = {}
    for test, cfg in course.exercises[exercise].tests.items():
        fn = test.split("/", 1)[0]
        points[fn] = points.get(fn, 0.0) + cfg.points
    manual = course.exercises[exercise].manual
    cells, seen, answered = [], set(), set()
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "markdown":  # a written answer, graded by hand
            name = meta["grade_id"]
            if name not in manual:
                raise ConfigError(
                    f"{exercise}.ipynb: the answer cell {name!r} has no points in course.yml "
                    f"(exercises.{exercise}.manual)"
                )
            meta.update(grade=True, locked=False, points=manual[name])
            model = model_answer(solution, name) if solutions else None
            if model is not None:
                cell.source = _region(model, 0)
            cells.append(cell)
            answered.add(name)
        elif meta.get("solution"):
            name = meta["grade_id"]
            if solutions:
                cell.source = with_solution(cell.source, solution, name)
            cells.append(cell)
        elif meta.get("grade") and cell.cell_type == "code":  # visible checks: locked, 0 points
            fn = meta["grade_id"].removeprefix("test_")
            if fn not in points:
                raise ConfigError(f"{exercise}.ipynb: visible checks for {fn!r}, which course.yml does not grade")
            cell.source = f"{VISIBLE_MARKER}: {fn}\n{cell.source}"
            meta["points"] = 0
            cells.append(cell)
            cells.append(hidden_cell(exercise, fn, points[fn]))
            seen.add(fn)
        else:
            cells.append(cell)
            if meta.get("grade_id", "").endswith("_how_to"):
                note = nbformat.v4.new_markdown_cell(
                    NOTE + (MANUAL_NOTE if manual else ""),
                    metadata=_meta(f"{exercise}_nbgrader_note", grade=False, solution=False, locked=True),
                )
                note.id = f"{exercise}-nbgrader-note"
                cells.append(note)
    missing = set(points) - seen
    if missing:
        raise ConfigError(
            f"{exercise}.ipynb has no visible-checks cell for {sorted(missing)}; their points would have no cell"
        )
    if set(manual) - answered:
        raise ConfigError(
            f"{exercise}.ipynb has no answer cell for course.yml's manual points {sorted(set(manual) - answered)}"
        )
    nb.cells = cells
    nbformat.validate(nb)
    return nb


CONFIG = """\
# nbgrader configuration written by `python -m autograder nbgrader-course` (seqgrader).
# Docs: https://nbgrader.readthedocs.io/en/stable/configuration/config_options.html
import os

c = get_config()  # noqa: F821
HERE = os.path.dirname(os.path.abspath(__file__))

c.CourseDirectory.root = HERE
c.CourseDirectory.course_id = {course_id!r}

# Student code never runs in nbgrader's kernel: SandboxGrade grades each notebook with the
# hidden properties in seqgrader's sandbox and writes the scores and feedback into the
# hidden-tests cells, in place of nbgrader's Execute.
c.Autograde.autograde_preprocessors = [
    "autograder.nbgrader_course.preprocessor.SandboxGrade",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.SandboxGrade.course_file = os.path.join(HERE, "course.yml")

# A notebook nbgrader cannot read (corrupt JSON...) stops its conversion; before that, this hook
# flags the submission's hidden-tests cells *needs manual grade* with the reason, so it never shows
# as a silent partial score.
from autograder.nbgrader_course.hooks import flag_unreadable_notebooks  # noqa: E402

c.Autograde.pre_convert_hook = flag_unreadable_notebooks

# What a solution region becomes in the release (code; a written answer).
c.ClearSolutions.code_stub = {{"python": "# 你的代码 / your code\\nraise NotImplementedError(\\"还没有实现 / not implemented yet\\")"}}
c.ClearSolutions.text_stub = "在这里写你的回答（中文或英文均可）。/ Write your answer here (in Chinese or English)."

# A deleted (or changed) test cell comes back from the database.
c.OverwriteCells.add_missing_cells = True

# Students' own runs (`nbgrader validate`): the visible checks run in a kernel (a hidden-tests cell
# only prints that it runs at grading time); a tiny model trains in some of them.
c.Execute.timeout = 300
c.Validator.validate_all = False

# Autograde even students who are not in the gradebook yet.
c.Autograde.create_student = True

# Late submissions: nbgrader compares each submission's timestamp.txt with the assignment's due date
# (`nbgrader db assignment add NAME --duedate "2026-12-01 18:00:00 UTC"`); "zero" scores a late one 0.
# c.LateSubmissionPlugin.penalty_method = "zero"
"""


def _copy_course(course, out):
    """DIR becomes a course folder too: course.yml, solutions/ and exercises/ (see config.py)."""
    src = Path(course.source)
    if src.resolve() != (out / "course.yml").resolve():
        shutil.copyfile(src, out / "course.yml")
    for name, folder, pattern in (
        ("solutions", course.solutions_dir, "*.py"),
        ("exercises", course.exercises_dir, "*.ipynb"),
    ):
        dest = out / name
        if Path(folder).resolve() == dest.resolve():
            continue
        dest.mkdir(exist_ok=True)
        for f in sorted(Path(folder).glob(pattern)):
            if not f.name.startswith("_"):
                shutil.copyfile(f, dest / f.name)


def build_course(
    out,
    course,
    course_file=None,
    *,
    assignments=None,
    exercises_dir=None,
    solutions_dir=None,
    course_id="seqgrader",
    force=False,
    service_url=None,
):
    """Write the course into `out`; returns {assignment: [notebook paths]}."""
    out = Path(out)
    exercises_dir = Path(exercises_dir or course.exercises_dir)
    solutions_dir = Path(solutions_dir or course.solutions_dir)
    names = assignments or course.assignment_names()
    for name in names:
        course.assignment(name)  # raises ConfigError for an unknown one
    if out.exists() and any(out.iterdir()) and not force:
        if not (out / "nbgrader_config.py").exists() and not (out / "course.yml").exists():
            raise ConfigError(
                f"{out} exists and is neither a course folder nor an nbgrader course; choose an empty folder"
            )
    built = {}
    for name in names:
        folder = out / "source" / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        built[name] = []
        for ex in course.assignment(name):
            nb = source_notebook(ex, course, exercises_dir, solutions_dir)
            path = folder / f"{ex}.ipynb"
            nbformat.write(nb, str(path))
            built[name].append(path)
        shutil.copyfile(KIT_CONFTEST, folder / "conftest.py")
        write_submit_files(folder, name, service_url)
    if course.source:
        _copy_course(course, out)
    elif course_file:
        shutil.copyfile(course_file, out / "course.yml")
    (out / "nbgrader_config.py").write_text(CONFIG.format(course_id=course_id), encoding="utf-8")
    return built


def write_student_kit(out, course, *, assignment=None, force=False, service_url=None):
    """The student kit of `assignment` in `out`: one notebook per exercise (stubs, visible checks,
    hidden-tests cells that only say when they run), conftest.py, submit.py and submit.json (with
    `service_url`, the grading service's address, when given).  Returns the paths written."""
    out = Path(out)
    exercises = course.assignment(assignment)
    name = assignment or course.assignment_names()[0]
    if out.exists() and any(out.iterdir()) and not force:
        raise ConfigError(f"{out} is not empty (--force writes into it anyway)")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for ex in exercises:
        nb = source_notebook(ex, course, course.exercises_dir, course.solutions_dir, solutions=False)
        path = out / f"{ex}.ipynb"
        nbformat.write(nb, str(path))
        written.append(path)
    shutil.copyfile(KIT_CONFTEST, out / "conftest.py")
    written.append(out / "conftest.py")
    written += write_submit_files(out, name, service_url)
    return written
