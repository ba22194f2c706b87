"""Every page the product writes meets WCAG 2.1 A and AA as axe-core checks it (its rules tagged
wcag2a, wcag2aa, wcag21a and wcag21aa), in a real Chromium (tests/chromium.py):

* a student's report (`grade --html`): passed and failed tests, counterexamples with their tables
  and pictures, named mistakes, load problems, in zh, en and both; and a submission not graded;
* the class dashboard of a small graded class (grade-batch), one submission of it not graded;
* the similarity report: a copied pair's functions side by side, every matched region highlighted;
* the service's pages as its people browse them: sign-in (and a wrong token), upload, a queued
  submission's status, the list, the report, the instructor's class page and dashboard.

axe-core comes from npm: bin/setup installs the pinned version into .venv/axe/; without it these
tests fail and say how to install it.  A page given a text of too low a contrast and a picture
without a text alternative is reported: the check finds what it is there to find.  The pages are
kept in out/accessibility/ (CI keeps out/ as its artifacts)."""

import json
import random
import re
import time

import pytest

from autograder.report.dashboard import render_dashboard
from autograder.report.html import render_html
from autograder.similarity.cli import analyse, write

from .chromium import Chromium, ChromiumError
from .conftest import ROOT
from .servers import masks_submission, serve, tokens, write_roster

pytestmark = pytest.mark.slow  # grades a submission, runs the service

OUT = ROOT / "out" / "accessibility"
EXAMPLES = ROOT / "examples" / "submissions"
AXE_VERSION = re.search(r"^AXE_VERSION=(\S+)$", (ROOT / "bin" / "setup").read_text(encoding="utf-8"), re.M)[1]
AXE = ROOT / ".venv" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# what axe reports of one page: each rule that fails, with its first elements
RUN_AXE = """
axe.run(document, {runOnly: {type: "tag", values: WCAG}, resultTypes: ["violations"]}).then(r =>
  r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
                          targets: v.nodes.slice(0, 5).map(n => n.target.join(" "))})))
""".replace("WCAG", json.dumps(WCAG))


def axe_source(path=AXE):
    """axe.min.js, of the version bin/setup installs."""
    install = f"Run bin/setup, or `npm install --prefix .venv/axe axe-core@{AXE_VERSION}`."
    if not path.is_file():
        pytest.fail(
            f"axe-core is not installed ({path.relative_to(ROOT)} is missing): these tests check every page "
            f"with it. {install}",
            pytrace=False,
        )
    version = json.loads((path.parent / "package.json").read_text(encoding="utf-8"))["version"]
    if version != AXE_VERSION:
        pytest.fail(f"axe-core {version} is installed, bin/setup pins {AXE_VERSION}. {install}", pytrace=False)
    return path.read_text(encoding="utf-8")


def axe(page, source, tries=3):
    """axe's violations on `page` (axe injected first); a page still loading when it is checked is
    checked again once loaded."""
    for attempt in range(tries):
        try:
            if not page.eval("typeof axe !== 'undefined'"):
                page.run_script(source)
            return page.eval(RUN_AXE)
        except ChromiumError:
            if attempt == tries - 1:
                raise
            time.sleep(1)


def said(found):
    """One line per failed rule, then its first elements."""
    return "\n".join(
        f"  {v['id']} ({v['impact']}, {v['count']} element(s)): {v['help']}\n"
        + "".join(f"      {t}\n" for t in v["targets"])
        for v in found
    )


def check(page, source, where):
    """No WCAG 2.1 A/AA rule of axe fails on `page` (its results are kept in out/accessibility/)."""
    found = axe(page, source)
    OUT.mkdir(parents=True, exist_ok=True)
    name = "".join(c if c.isalnum() else "-" for c in where)
    (OUT / f"{name}.axe.json").write_text(json.dumps(found, ensure_ascii=False, indent=1), encoding="utf-8")
    assert found == [], f"{where}: axe reports {len(found)} WCAG 2.1 A/AA rule(s) failing:\n{said(found)}"


@pytest.fixture(scope="module")
def source():
    return axe_source()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    try:
        b = Chromium(tmp_path_factory.mktemp("chromium-profile"))
    except ChromiumError as e:
        pytest.fail(str(e), pytrace=False)
    yield b
    b.close()


def open_file(browser, name, text):
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / name
    path.write_text(text, encoding="utf-8")
    return browser.open(path, size=(1280, 900))


@pytest.fixture(scope="module")
def reports():
    """bob.ipynb (classic mistakes, most of them named; tables and pictures) graded in this process,
    with a load problem added; and dave.ipynb, a notebook cut off: not graded."""
    from autograder.config import load_course
    from autograder.grading import grade
    from autograder.judge import InProcessRunner

    course = load_course(None, max_examples=1)
    bob = grade(EXAMPLES / "bob.ipynb", course, InProcessRunner(course)).to_dict()
    bob["errors"] = ["bob.ipynb: cell 7: SyntaxError: invalid syntax (line 2) <行 2>"]
    dave = grade(EXAMPLES / "dave.ipynb", course, InProcessRunner(course)).to_dict()
    failed = [t for ex in bob["exercises"] for t in ex["tests"] if not t["passed"]]
    assert (
        len(failed) >= 8
        and any(t["diagnosis"] for t in failed)
        and len(failed) < sum(len(ex["tests"]) for ex in bob["exercises"])
    )
    assert {(t.get("counterexample") or {}).get("kind") for t in failed} >= {"mask", "weights", "tensor"}
    assert dave["graded"] is False
    return {"bob": bob, "dave": dave}


# ---------------------------------------------------------------- the check itself


def test_without_axe_the_check_fails_and_says_how_to_install_it():
    with pytest.raises(pytest.fail.Exception, match=r"bin/setup.*npm install --prefix \.venv/axe axe-core@"):
        axe_source(ROOT / ".venv" / "axe" / "nowhere" / "axe.min.js")


def test_the_check_reports_low_contrast_and_a_picture_without_alt(reports, browser, source):
    """The student's report, given a paragraph of light grey on white and a picture without alt:
    axe names both rules and both elements."""
    page = open_file(browser, "broken.html", render_html(reports["bob"], "both"))
    page.eval("""(() => {
      const p = document.createElement("p");
      p.id = "pale"; p.style.color = "#c8c8c8"; p.style.background = "#fff"; p.textContent = "看不清 hard to read";
      const img = document.createElement("img");
      img.id = "no-alt"; img.src = document.querySelector("img.cx-picture").src;
      document.querySelector("main").append(p, img);
      return true;
    })()""")
    found = {v["id"]: v for v in axe(page, source)}
    page.close()
    assert "color-contrast" in found and "#pale" in found["color-contrast"]["targets"], said(found.values())
    assert "image-alt" in found and "#no-alt" in found["image-alt"]["targets"], said(found.values())


# ---------------------------------------------------------------- the pages written as files


@pytest.mark.parametrize("language", ["zh", "en", "both"])
def test_student_report(reports, browser, source, language):
    page = open_file(browser, f"report-{language}.html", render_html(reports["bob"], language))
    assert page.eval("document.querySelectorAll('img.cx-picture').length") >= 2
    page.eval("document.querySelectorAll('details').forEach(d => d.open = true) || true")  # the folded tests too
    check(page, source, f"report {language}")
    page.close()


def test_student_report_not_graded(reports, browser, source):
    page = open_file(browser, "report-not-graded.html", render_html(reports["dave"], "both"))
    assert page.eval("document.getElementById('not-graded') !== null")
    check(page, source, "report not graded")
    page.close()


@pytest.fixture(scope="module")
def class_folder(reports, tmp_path_factory):
    """A grade-batch folder of three students: bob (his report and its page), ann (every test
    passed) and dave (not graded)."""
    from autograder.batch.exports import classify

    folder = tmp_path_factory.mktemp("class")
    (folder / "reports").mkdir()
    ann = json.loads(json.dumps(reports["bob"]))
    ann["errors"] = []
    for ex in ann["exercises"]:
        for t in ex["tests"]:
            t.update(passed=True, status="passed", score=t["max_score"], diagnosis=[], counterexample={})
        ex["score"] = ex["max_score"]
    ann["score"] = ann["max_score"]
    for student, r in (("bob", reports["bob"]), ("ann", ann), ("dave", reports["dave"])):
        r = {**r, "batch": dict(zip(("status", "note"), classify(r)), student=student)}
        (folder / "reports" / f"{student}.json").write_text(json.dumps(r, ensure_ascii=False), encoding="utf-8")
    (folder / "reports" / "bob.html").write_text(render_html(reports["bob"], "both", picture=False), encoding="utf-8")
    return folder


@pytest.mark.parametrize("language", ["both", "en"])
def test_class_dashboard(class_folder, browser, source, language):
    page = open_file(browser, f"dashboard-{language}.html", render_dashboard(class_folder, language, label="hw1"))
    seen = page.eval("[document.querySelectorAll('tr.errored').length, document.querySelectorAll('img.hist').length]")
    assert seen[0] >= 1 and seen[1] == 1, seen
    check(page, source, f"dashboard {language}")
    page.close()


@pytest.mark.parametrize("language", ["both", "zh"])
def test_similarity_report(browser, source, tmp_path, language):
    from .test_similarity import EXERCISES, OBF, honest_class, variant

    alice = {ex: variant(1, ex) for ex in EXERCISES}
    root = honest_class(
        tmp_path / "class",
        {"alice": alice, "mallory": {ex: OBF.obfuscate(s, OBF.KINDS, random.Random(11)) for ex, s in alice.items()}},
    )
    _, written = write(analyse(root), tmp_path / "out", language)
    page = open_file(browser, f"similarity-{language}.html", written.read_text(encoding="utf-8"))
    assert page.eval("document.querySelectorAll('tr.fragment td.match').length") >= 10
    check(page, source, f"similarity {language}")
    page.close()


def contrast(a, b):
    """WCAG's contrast ratio of two colours "#rrggbb"."""

    def luminance(colour):
        channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_every_colour_of_a_matched_region_keeps_the_code_readable():
    """A function of a pair shows one colour per matched region, up to six (the pages above show
    fewer): the code, its line numbers and its tags are readable on every one (4.5:1, WCAG AA)."""
    from autograder.similarity.html import BACKGROUNDS, COLOURS, MUTED, TEXT

    assert contrast("#98a0ad", "#ffe08a") < 4.5  # the line numbers' old grey, which axe reported
    low = [(fg, bg, round(contrast(fg, bg), 2)) for fg in (TEXT, MUTED) for bg in COLOURS + BACKGROUNDS]
    assert [x for x in low if x[2] < 4.5] == [], low


# ---------------------------------------------------------------- the service's pages


def sign_in(page, base, token):
    if not page.url().startswith(base + "signin"):
        page.goto(base + "signin")
    page.eval(f"document.querySelector('#token').value = {token!r}")
    page.act("document.querySelector('form[action$=\"signin\"]').submit()")


def test_service_pages(browser, source, tmp_path):
    """As alice and her instructor browse them: first a service that only accepts (alice's upload
    stays queued: its status page), then one that grades, on the same data."""
    data = tmp_path / "data"
    roster = write_roster(tmp_path / "roster.csv")
    tok = tokens(roster, data)
    alice = browser.new_context()
    teacher = browser.new_context()
    with serve("--roster", roster, "--workers", 0, data=data) as (base, _, _):
        page = browser.open_url(base + "upload", context=alice, bypass_csp=True)
        assert page.url().startswith(base + "signin?next="), page.url()
        check(page, source, "service sign-in")
        sign_in(page, base, "not-a-token")
        assert page.eval("document.getElementById('error') !== null"), page.text()[:500]
        check(page, source, "service sign-in wrong token")
        sign_in(page, base, tok["alice"])
        assert page.url() == base + "upload", page.url()
        check(page, source, "service upload")
        page.eval("document.querySelector('#assignment').value = 'sequence-models'")
        page.set_file("#file", masks_submission(tmp_path, without_diagonal=True))
        page.act("document.querySelector('form[action$=\"upload\"]').submit()")
        report_url = page.url()
        assert "/submissions/" in report_url and page.eval("document.getElementById('status') !== null")
        # the page never reloads itself (WCAG 2.2.1): the student reloads it with its own link
        assert page.eval("document.querySelector('meta[http-equiv=refresh]') === null")
        assert page.eval("document.querySelector('#reload').href") == report_url
        check(page, source, "service status queued")
        page.goto(base + "submissions")
        check(page, source, "service list")
        page.close()
    with serve("--roster", roster, "--workers", 1, data=data) as (base, _, _):
        page = browser.open_url(base + "submissions", context=alice, bypass_csp=True)
        if page.url().startswith(base + "signin"):
            sign_in(page, base, tok["alice"])
        sid = report_url.rsplit("/", 1)[1]
        deadline = time.monotonic() + 300
        while True:
            page.goto(f"{base}submissions/{sid}")
            if page.eval("document.querySelector('#scores') !== null"):
                break
            assert time.monotonic() < deadline, page.text()[:2000]
            time.sleep(1)
        assert "causal mask excludes the diagonal" in page.text()
        page.eval("document.querySelectorAll('details').forEach(d => d.open = true) || true")
        check(page, source, "service report")
        page.goto(base + "submissions")
        check(page, source, "service list graded")
        page.close()
        page = browser.open_url(base + "signin", context=teacher, bypass_csp=True)
        sign_in(page, base, tok["teacher"])
        page.goto(base + "instructor")
        assert page.eval("document.querySelector('svg.chart') !== null && document.getElementById('mistakes') !== null")
        check(page, source, "service instructor")
        page.goto(base + "instructor/dashboard?assignment=sequence-models")
        assert page.eval("document.getElementById('kpi-graded') !== null")
        check(page, source, "service dashboard")
        page.close()


def test_the_wheel_carries_the_templates_and_jinja2_is_loaded_only_to_write_a_page(tmp_path):
    """The wheel built from this checkout holds every template and requires jinja2; the modules that
    write the pages import it only when they write one (`grade` without --html does not load it)."""
    import shutil
    import subprocess
    import sys
    import zipfile

    from .conftest import WHEEL_SOURCES

    src = tmp_path / "src"
    for name in WHEEL_SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(ROOT / name, src / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", tmp_path, src],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("seqgrader-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    templates = {p.relative_to(ROOT).as_posix() for p in (ROOT / "autograder" / "templates").glob("*.html")}
    assert len(templates) >= 14 and not templates - names, sorted(templates - names)
    assert "Requires-Dist: jinja2>=3.1\n" in metadata  # a core requirement, not the service's alone
    code = (
        "import sys\n"
        "import autograder.cli, autograder.report.html, autograder.report.dashboard, autograder.similarity.html\n"
        "import autograder.templates\n"
        "print('jinja2' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False", out
