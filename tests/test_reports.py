"""The student's reports: the structured counterexample, the pictures, the HTML page (checked in a real
headless Chromium: what is visible, images that load), Markdown, the rich terminal view and the
`grade --html / --markdown / --rich` options.

Chromium is required (Debian's `chromium`; bin/setup installs it when run as root): without it
these tests fail, they do not skip.  Screenshots are kept in pytest's tmp dir (the path is printed with -s)."""

import html as htmllib
import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograder.config import load_course
from autograder.grading import grade
from autograder.judge import InProcessRunner
from autograder.report.html import render_html
from autograder.report.markdown import render_markdown
from autograder.report.plots import picture
from autograder.report.terminal import render_rich_text

from .conftest import ROOT  # bob.ipynb graded once per session: the `bob` fixture of conftest.py

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

# A named mistake as autograder/diagnose/ puts it into TestResult.diagnosis.
DIAGNOSIS = {
    "id": "softmax_over_queries",
    "title_zh": "softmax 用在了查询轴上（dim=-2）",
    "title_en": "softmax normalised over queries instead of keys",
    "explanation_zh": "每个查询对所有键的权重之和应为 1。",
    "explanation_en": "Each query's weights over the keys must sum to 1.",
    "hint_zh": "用 softmax(scores, dim=-1)。",
    "hint_en": "Use softmax(scores, dim=-1).",
}

# ---------------------------------------------------------------- headless Chromium

PROBE = """
<script>
window.addEventListener("load", function () {
  var imgs = Array.prototype.map.call(document.images, function (i) {
    var r = i.getBoundingClientRect();
    return {w: i.naturalWidth, h: i.naturalHeight, complete: i.complete, shown_w: r.width, shown_h: r.height,
            cls: i.className};
  });
  var marked = Array.prototype.filter.call(document.querySelectorAll("td.diff"), function (td) {
    var s = getComputedStyle(td);
    return s.backgroundColor !== "rgba(0, 0, 0, 0)" && td.getBoundingClientRect().width > 0;
  }).length;
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({images: imgs, text: document.body.innerText, marked: marked,
                                    width: document.documentElement.scrollWidth});
  document.body.appendChild(out);
});
</script>
"""


def chromium_flags(profile):
    return [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
    ]


def need_chromium():
    if not Path(CHROMIUM).exists():
        pytest.fail(
            "chromium is not installed: these tests render the reports in a real browser. "
            "Install Debian's package with `apt-get install -y chromium fonts-wqy-zenhei` (bin/setup does it "
            "when run as root).",
            pytrace=False,
        )


def render_in_chromium(page, folder, name, size=(1200, 3000)):
    """Render the HTML file `page` in headless Chromium: save a screenshot `folder/name.png` and
    return what a probe script saw once the page loaded: {"images": [...], "text": visible text,
    "marked": visible cells marked wrong}.  The probe runs in a copy of the page, never in the report."""
    need_chromium()
    folder = Path(folder)
    probed = folder / f"{name}.probe.html"
    text = Path(page).read_text(encoding="utf-8")
    probed.write_text(text.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    shot = folder / f"{name}.png"
    n = len(list(folder.glob("profile-*")))
    proc = subprocess.run(
        chromium_flags(folder / f"profile-{n}-shot")
        + [
            f"--screenshot={shot}",
            f"--window-size={size[0]},{size[1]}",
            "--hide-scrollbars",
            Path(page).resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.exists() and shot.stat().st_size > 10_000, f"no screenshot: {proc.stderr[-2000:]}"
    proc = subprocess.run(
        chromium_flags(folder / f"profile-{n}-dom")
        + ["--dump-dom", "--virtual-time-budget=5000", f"--window-size={size[0]},{size[1]}", probed.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    m = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, re.S)
    assert m, f"the probe did not run in Chromium: {proc.stderr[-2000:]}"
    print(f"screenshot: {shot}")
    return json.loads(htmllib.unescape(m.group(1)))


def test_without_chromium_the_browser_tests_fail_and_say_how_to_install_it(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "CHROMIUM", "/nonexistent/chromium")
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y chromium"):
        need_chromium()


# ---------------------------------------------------------------- graded reports


def grade_in_process(tmp_path, code, exercises):
    """Grade a submission file holding `code` in-process (fast); returns the report's dict."""
    path = Path(tmp_path) / "submission.py"
    path.write_text(textwrap.dedent(code))
    course = load_course(None)
    return grade(path, course, InProcessRunner(course), exercises=exercises).to_dict()


def failed(report, name):
    t = next(t for ex in report["exercises"] for t in ex["tests"] if t["name"] == name)
    assert not t["passed"], name
    return t


def with_diagnosis(report):
    """A copy of `report` where the first failed attention test names DIAGNOSIS."""
    r = json.loads(json.dumps(report))
    t = next(t for ex in r["exercises"] if ex["id"] == "attention" for t in ex["tests"] if not t["passed"])
    t["diagnosis"] = [DIAGNOSIS]
    return r, t


# ---------------------------------------------------------------- the structured counterexample

WRONG_MASKS = """
import torch

def padding_mask(lengths, max_len=None):
    T = int(lengths.max()) if max_len is None else max_len
    return torch.arange(T)[None, :] < lengths[:, None]

def causal_mask(T, device=None):
    return torch.ones(T, T, dtype=torch.bool, device=device).tril(-1)  # the diagonal is blocked

def attention_mask(lengths, max_len=None, causal=False):
    m = padding_mask(lengths, max_len)[:, None, None, :]
    T = m.shape[-1]
    m = m.expand(-1, 1, T, T)
    return m & causal_mask(T) if causal else m
"""


def test_counterexample_of_a_mask_is_small_structured_data(tmp_path):
    r = grade_in_process(tmp_path, WRONG_MASKS, ["masks"])
    cx = failed(r, "masks/causal_mask/past_and_present_allowed")["counterexample"]
    assert cx["kind"] == "mask" and cx["what"] == "mask"
    assert cx["inputs"] == {"T": 1}  # shrunk to the smallest T
    assert cx["expected"] == [[True]] and cx["got"] == [[False]] and cx["differs"] == [[True]]
    cx = failed(r, "masks/attention_mask/causal_and_padding_combined")["counterexample"]
    assert cx["kind"] == "mask" and len(cx["shape"]) == 4
    assert cx["inputs"]["causal"] is True and cx["inputs"]["lengths"]["dtype"] == "int64"
    exp, got, diff = cx["expected"], cx["got"], cx["differs"]
    for b in range(cx["shape"][0]):  # the wrong entries are exactly those where got != expected: the diagonal
        for i in range(cx["shape"][2]):
            for j in range(cx["shape"][3]):
                assert diff[b][0][i][j] == (exp[b][0][i][j] != got[b][0][i][j])
                if diff[b][0][i][j]:
                    assert i == j
    assert cx["n_differ"] == sum(v for b in diff for h in b for row in h for v in row)
    json.dumps(r, allow_nan=False)  # strict JSON: no NaN tokens anywhere


def test_counterexample_of_attention_weights_and_positional_encoding(tmp_path):
    code = """
    import math, torch

    def scaled_dot_product_attention(Q, K, V, mask=None):
        scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-2)  # over the queries
        return weights @ V, weights

    def sinusoidal_encoding(T, d, base=10000.0):
        if d % 2:
            raise ValueError("d must be even")
        t = torch.arange(T, dtype=torch.float32)[:, None]
        w = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
        pe = torch.empty(T, d)
        pe[:, 0::2] = torch.cos(t * w)  # cos and sin swapped
        pe[:, 1::2] = torch.sin(t * w)
        return pe
    """
    r = grade_in_process(tmp_path, code, ["attention", "positional_encoding"])
    cx = failed(r, "attention/scaled_dot_product_attention/matches_torch")["counterexample"]
    assert cx["kind"] == "weights" and cx["what"] == "weights"
    assert {"Q", "K", "V"} <= set(cx["inputs"]) and cx["n_differ"] > 0
    assert len(cx["expected"]) == cx["shape"][-2] or "index" in cx
    cx = failed(r, "positional_encoding/sinusoidal_encoding/hand_example")["counterexample"]
    assert cx["kind"] == "encoding" and cx["what"] == "PE"
    assert cx["expected"][0][:2] == [0.0, 1.0] and cx["got"][0][:2] == [1.0, 0.0]  # position 0: sin 0, cos 0
    assert cx["differs"][0][:2] == [True, True]
    for t in (t for ex in r["exercises"] for t in ex["tests"]):
        assert len(json.dumps(t["counterexample"], allow_nan=False)) < 45_000, t["name"]


def test_large_tensors_are_cut_to_a_window_around_the_first_wrong_entry():
    import torch

    from autograder.properties._harness import counterexample

    exp = torch.zeros(2, 3, 50, 40)
    got = exp.clone()
    got[1, 2, 30, 35] = 1.0
    cx = counterexample(what="out", expected=exp, got=got)
    assert cx["index"] == [1, 2] and cx["n_differ"] == 1 and cx["shape"] == [2, 3, 50, 40]
    r0, c0 = cx["offset"]
    assert cx["differs"][30 - r0][35 - c0] is True and cx["got"][30 - r0][35 - c0] == 1.0
    assert len(cx["got"]) <= 24 and len(cx["got"][0]) <= 16
    nan = counterexample(
        what="x", got=torch.tensor([1.0, float("nan"), float("inf")]), differs=torch.tensor([False, True, True])
    )
    assert nan["got"] == [1.0, "nan", "inf"]
    json.dumps(nan, allow_nan=False)


@pytest.mark.slow
def test_pictures_are_png_for_each_kind(bob):
    _, _, report = bob
    kinds = {}
    for t in (t for ex in report["exercises"] for t in ex["tests"] if not t["passed"]):
        kinds.setdefault(t["counterexample"].get("kind"), t["counterexample"])
    assert {"mask", "weights"} <= set(kinds)
    for kind in ("mask", "weights"):
        png = picture(kinds[kind], "both")
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000
    enc = {
        "kind": "encoding",
        "what": "PE",
        "shape": [3, 4],
        "expected": [[0, 1, 0, 1], [0.84, 0.54, 0.01, 1.0], [0.91, -0.42, 0.02, 1.0]],
        "got": [[1, 0, 1, 0], [0.54, 0.84, 1.0, 0.01], [-0.42, 0.91, 1.0, 0.02]],
        "differs": [[True] * 4] * 3,
    }
    assert picture(enc)[:4] == b"\x89PNG"
    assert picture({"kind": "shape", "expected_shape": [2, 3], "got_shape": [3, 2]})[:4] == b"\x89PNG"
    assert picture({"kind": "values", "inputs": {"T": 2}}) is None and picture({}) is None
    tensor = {**kinds["weights"], "kind": "tensor"}  # LSTM states and the like: the tables suffice
    assert picture(tensor) is None and picture(tensor, kinds=("tensor",))[:4] == b"\x89PNG"


# ---------------------------------------------------------------- the HTML page


@pytest.mark.slow
def test_student_html_in_chromium_shows_scores_mistake_tables_and_pictures(bob, tmp_path):
    _, _, report = bob
    r, t = with_diagnosis(report)
    page = tmp_path / "bob.html"
    page.write_text(render_html(r, "both"), encoding="utf-8")
    seen = render_in_chromium(page, tmp_path, "student-report", size=(1200, 2400))
    text = seen["text"]
    assert f"{report['score']:g} / {report['max_score']:g}" in text
    for ex in report["exercises"]:  # every exercise's score is in the table
        assert ex["id"] in text and f"{ex['score']:g} / {ex['max_score']:g}" in text
    assert DIAGNOSIS["title_en"] in text and DIAGNOSIS["title_zh"] in text  # the named mistake, both languages
    assert DIAGNOSIS["hint_en"] in text
    assert t["name"] in text and t["message_en"] in text
    for f in (t for ex in report["exercises"] for t in ex["tests"] if not t["passed"]):
        assert f["name"] in text
    assert "Counterexample" in text and "反例" in text
    pictures = [i for i in seen["images"] if i["cls"] == "cx-picture"]
    assert len(pictures) >= 2  # the open test of each function (folded ones show tables only)
    for img in pictures:  # loaded (data: URI), not broken, and drawn at a visible size
        assert img["complete"] and img["w"] > 100 and img["h"] > 50 and img["shown_w"] > 100, img
    assert seen["marked"] >= 4  # wrong cells are visibly marked in the expected / got tables
    assert seen["width"] <= 1200  # no horizontal scrolling at a laptop's width


@pytest.mark.slow
def test_student_html_is_self_contained_escaped_and_in_the_course_language(bob):
    _, _, report = bob
    r, t = with_diagnosis(report)
    r["errors"] = ["<script>alert('x')</script> in cell 3"]
    page = render_html(r, "both")
    assert "<script" not in page.replace("&lt;script", "")  # no script, and the student's text is escaped
    assert not re.search(r'(src|href)="(https?:)?//', page) and "<link" not in page and "@import" not in page
    assert page.count('src="data:image/png;base64,') >= 2  # the first test of each function: bob's mask and weights
    zh, en = render_html(r, "zh", picture=False), render_html(r, "en", picture=False)
    assert DIAGNOSIS["title_zh"] in zh and DIAGNOSIS["title_en"] not in zh and t["message_en"] not in zh
    assert DIAGNOSIS["title_en"] in en and DIAGNOSIS["title_zh"] not in en and t["message_zh"] not in en
    assert '<html lang="en">' in en and "Grade report" in en and "成绩报告" not in en


@pytest.mark.slow
def test_grade_command_writes_html_and_markdown_and_keeps_plain_stdout(bob):
    tmp, proc, report = bob
    assert "总分 Score:" in proc.stdout and "\x1b[" not in proc.stdout  # the plain text report, Chinese first
    page = (tmp / "bob.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and f"{report['score']:g} / {report['max_score']:g}" in page
    md = (tmp / "bob.md").read_text(encoding="utf-8")
    assert f"{report['score']:g} / {report['max_score']:g}" in md
    links = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", md)
    assert links and all((tmp / link).is_file() for link in links)  # pictures beside the Markdown


@pytest.mark.slow
def test_markdown_and_rich_views_name_the_mistake_and_mark_wrong_entries(bob):
    _, _, report = bob
    r, t = with_diagnosis(report)
    md = render_markdown(r, "en")
    assert DIAGNOSIS["title_en"] in md and DIAGNOSIS["hint_en"] in md and "**✗" in md
    assert f"## ✗ `{t['name']}`" in md and "| 0 |" in md
    term = render_rich_text(r, "en", width=110)
    assert DIAGNOSIS["title_en"] in term and "✗" in term and t["name"] in term
    assert f"{report['score']:g} / {report['max_score']:g}" in term
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(ROOT / "solutions"),
            "--rich",
            "--exercise",
            "masks",
            "--max-examples",
            "2",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0 and "masks" in proc.stdout and "20 / 20" in proc.stdout, proc.stderr


def test_to_dict_is_what_dataclasses_asdict_gives(tmp_path):
    """Report.to_dict skips asdict's deep copy of every leaf: the same dict, the same JSON, and
    nothing shared with the report (a change to the dict leaves the report as it was)."""
    from dataclasses import asdict

    sub = tmp_path / "sub.py"
    sub.write_text((ROOT / "solutions" / "masks.py").read_text(encoding="utf-8").replace(".tril()", ".triu()"))
    course = load_course(None)
    report = grade(sub, course, InProcessRunner(course), exercises=["masks"])
    assert any(t.counterexample for ex in report.exercises for t in ex.tests)  # nested data to copy
    got, want = report.to_dict(), asdict(report)
    assert got == want and json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    got["exercises"][0]["tests"][0]["details"].append(["x", "y"])
    got["exercises"][0]["tests"][0]["counterexample"]["mine"] = 1
    assert report.to_dict() == want
