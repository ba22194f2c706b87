"""The contract lives in the repository: docs/contract.md is word for word the shared contract
(../shared/contract.md, relative to the repository root, where that folder exists: graders outside
this repo rely on it), and nothing the repository ships points outside it."""

import os
import re
import subprocess

from .conftest import ROOT

SHARED = ROOT.parent / "shared" / "contract.md"
# a path of a development machine or a file beside the repository, in prose, comments or code
OUTSIDE = re.compile(r"\.\./shared\b|(?<![\w.])/work/|(?<![\w.])/home/\w|(?<![\w.])/Users/\w")
SHIPPED = ("*.md", "*.py", "*.yml", "*.toml", "*.ipynb", "*.cfg", "*.txt")
NOT_SHIPPED = {".git", ".venv", ".hypothesis", ".pytest_cache", "__pycache__", "out", "grades", "build"}


def test_docs_contract_is_the_shared_contract_word_for_word():
    ours = (ROOT / "docs" / "contract.md").read_bytes()
    assert len(ours) > 1000 and b"# " in ours  # the repository's copy is there, whether ../shared is or not
    if SHARED.exists():
        assert ours == SHARED.read_bytes(), "docs/contract.md differs from ../shared/contract.md: copy it over"


def test_nothing_refers_outside_the_repository():
    import fnmatch
    import os

    this = __file__.rsplit("/", 1)[-1]
    bad, seen = [], 0
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in NOT_SHIPPED and not d.endswith(".egg-info")]
        for name in files:
            if name == this or not any(fnmatch.fnmatch(name, p) for p in SHIPPED):
                continue
            path = os.path.join(folder, name)
            seen += 1
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    if OUTSIDE.search(line):
                        bad.append(f"{os.path.relpath(path, ROOT)}:{n}: {line.strip()[:120]}")
    assert seen > 100 and bad == [], "\n".join(bad)
    assert "docs/contract.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`contract.md`" in (ROOT / "docs" / "contract-extra.md").read_text(encoding="utf-8")  # its neighbour


# ---------------------------------------------------------------- the README and the guides
GUIDES = ("students.md", "instructors.md", "authors.md", "security.md", "benchmarks.md")
CONTRACTS = ("contract.md", "contract-extra.md", "contract-coverage.md")
VENV_BIN = ROOT / ".venv" / "bin"


def _documents():
    """The README and every page of the site, except the contract pages (their code is the contract's)."""
    return [ROOT / "README.md"] + sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in CONTRACTS)


def _shell_blocks(text):
    return [body for lang, body in re.findall(r"```(\w*)\n(.*?)```", text, re.S) if lang in ("bash", "sh", "shell")]


def _commands():
    """(where, argv) for every command of a shell block of the README and the guides."""
    import shlex

    out = []
    for doc in _documents():
        for block in _shell_blocks(doc.read_text(encoding="utf-8")):
            for line in block.splitlines():
                for part in line.split("&&"):
                    argv = shlex.split(part, comments=True)
                    if argv:
                        out.append((f"{doc.relative_to(ROOT)}: {line.strip()}", argv))
    return out


def test_the_readme_is_short_and_answers_in_order():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    headings = [h.lower() for h in re.findall(r"^## (.+)$", text, re.M)]
    order = ["the two commands", "students", "instructors", "course authors", "the contract", "licence"]
    where = [next(i for i, h in enumerate(headings) if h.startswith(want)) for want in order]
    assert where == sorted(where), headings
    picture = re.search(r"!\[[^\]]+\]\(([^)]+\.png)\)", text)
    assert picture and text.index(picture.group(0)) < text.index("## The two commands")
    assert (ROOT / picture.group(1)).stat().st_size > 20_000  # a real screenshot, not a placeholder
    blocks = _shell_blocks(text)
    assert "bin/demo" in blocks[0] and "bin/test" in blocks[0]
    assert "bin/test" in (ROOT / ".ci" / "run").read_text()  # CI runs the README's test command
    for role, guide in (
        ("students", "students.md"),
        ("instructors", "instructors.md"),
        ("course authors", "authors.md"),
    ):
        section = re.split(r"^## ", text, flags=re.M)[1 + where[order.index(role)]]
        commands = [line for b in _shell_blocks(section) for line in b.splitlines() if line.strip()]
        assert 3 <= len(commands) <= 5, (role, commands)
        assert f"(docs/{guide})" in section, role
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_every_guide_is_in_the_site():
    site = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in GUIDES + CONTRACTS + ("index.md", "diagnosis.md", "quality.md"):
        assert (ROOT / "docs" / page).exists() and page in site, page
    assert "strict: true" in site


def _mkdocs(config, out):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [str(VENV_BIN / "mkdocs"), "build", "--strict", "-f", str(config), "-d", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_the_site_builds_in_strict_mode_and_a_broken_link_fails_it(tmp_path):
    import shutil

    done = _mkdocs(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    for page in (
        "index.html",
        "students/index.html",
        "instructors/index.html",
        "authors/index.html",
        "security/index.html",
        "benchmarks/index.html",
        "contract/index.html",
    ):
        assert (tmp_path / "site" / page).stat().st_size > 1000, page
    assert (tmp_path / "site" / "images" / "report.png").exists()
    # the same site with one broken link and one broken anchor is refused
    shutil.copytree(ROOT / "docs", tmp_path / "broken" / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "broken" / "mkdocs.yml")
    with open(tmp_path / "broken" / "docs" / "students.md", "a", encoding="utf-8") as f:
        f.write("\n[gone](no-such-page.md) [nowhere](instructors.md#no-such-anchor)\n")
    done = _mkdocs(tmp_path / "broken" / "mkdocs.yml", tmp_path / "broken" / "site")
    assert done.returncode != 0 and "no-such-page.md" in done.stderr and "no-such-anchor" in done.stderr


_HELP = {}


def _help(argv):
    """The --help text of a command (run once), or None where it fails."""
    key = tuple(argv)
    cache = _HELP
    if key not in cache:
        env = {**os.environ, "COLUMNS": "200", "NO_MKDOCS_2_WARNING": "1"}
        done = subprocess.run([*argv, "--help"], capture_output=True, text=True, env=env, timeout=180, cwd=ROOT)
        cache[key] = done.stdout + done.stderr if done.returncode == 0 else None
    return cache[key]


def _options(argv):
    return [a.split("=", 1)[0] for a in argv if a.startswith("-") and a not in ("-", "--help", "-h")]


def _check_seqgrader(argv):
    import contextlib
    import io

    from autograder.cli import build_parser

    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            build_parser().parse_args(argv)
    except SystemExit as e:  # --help and --version exit 0; a wrong option or argument exits 2
        return e.code == 0
    return True


# scripts the student kit holds (run in the kit's folder), and where they come from
KIT_SCRIPTS = {"submit.py": ROOT / "autograder" / "nbgrader_course" / "kit_submit.py"}


def _check(argv):
    """None if argv is a command this project documents correctly, else why not."""
    prog, args = argv[0], argv[1:]
    if prog == "seqgrader":
        return None if _check_seqgrader(args) else "seqgrader refuses these arguments"
    if prog == "python" and args[:2] == ["-m", "autograder"]:
        return None if _check_seqgrader(args[2:]) else "python -m autograder refuses these arguments"
    if prog == "python" and args[:1] == ["-m"]:
        import importlib.util

        return None if importlib.util.find_spec(args[1]) else f"no module {args[1]}"
    if prog == "python":
        script = KIT_SCRIPTS.get(args[0], ROOT / args[0])
        if not script.is_file():
            return f"no script {args[0]}"
        text = _help([str(VENV_BIN / "python"), str(script)])
        missing = [o for o in _options(args[1:]) if text is None or o not in text]
        return f"{args[0]} --help fails or lacks {missing}" if text is None or missing else None
    if prog.startswith("bin/"):
        if not os.access(ROOT / prog, os.X_OK):
            return f"{prog} is not an executable script"
        missing = [a for a in args if not a.startswith("-") and not (ROOT / a.split("::")[0]).exists()]
        return f"no such test file {missing}" if missing else None
    if prog in (".venv/bin/mkdocs", ".venv/bin/dask", ".venv/bin/ruff", "nbgrader", "jupyter"):
        sub = []
        for a in args:  # the subcommand's words: `nbgrader db assignment add`, `dask worker`, `mkdocs build`
            if not re.fullmatch(r"[a-z_]+", a):
                break
            sub.append(a)
        text = _help([str(VENV_BIN / prog.rsplit("/", 1)[-1]), *sub])
        missing = [o for o in _options(args) if text is None or o not in text]
        return f"{' '.join([prog, *sub])} --help fails or lacks {missing}" if text is None or missing else None
    if prog == "pytest":
        return None if all(a.endswith(".ipynb") or a.startswith("-") for a in args) else "pytest takes notebooks"
    if prog in ("pip", "git", "cd"):  # installs and moves: nothing of this project's to parse
        return None
    return f"no check for the command {prog!r}: teach this test to parse it"


def test_every_command_in_the_readme_and_the_guides_is_parsed():
    commands = _commands()
    assert len(commands) > 60
    bad = [f"{where}: {why}" for where, argv in commands if (why := _check(argv))]
    assert bad == [], "\n".join(bad)


def test_the_command_check_refuses_a_wrong_command():
    assert _check(["seqgrader", "grade", "alice.py", "--no-such-option"])
    assert _check(["seqgrader", "no-such-command"])
    assert _check(["python", "bench/grade_speed.py", "--no-such-option"])
    assert _check(["python", "bench/no_such_script.py"])
    assert _check(["nbgrader", "db", "assignment", "add", "x", "--no-such-option"])
    assert _check(["bin/test", "tests/test_no_such_file.py"])
    assert _check(["make", "all"])
    assert _check(["seqgrader", "grade", "alice.py", "--html", "a.html"]) is None


def test_the_version_is_written_once_and_printed():
    from autograder import __version__

    done = subprocess.run([str(VENV_BIN / "seqgrader"), "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == f"seqgrader {__version__}"
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "Keep a Changelog" in changelog and "## [Unreleased]" in changelog
    assert re.search(rf"^## \[{re.escape(__version__)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M)
