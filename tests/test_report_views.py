"""The reports as a person sees them: a correct submission, bob (four classic mistakes),
a corrupt notebook and an endless loop, each rendered in zh, en and both, opened in a real headless
Chromium at 1280 x 800 (tests/chromium.py), a screenshot taken, and the DOM and the pixels read:

* the first screen holds the score, in its colour, and the list of what to fix (or "not graded"
  and why, or "every test passed");
* a submission that was not graded shows no score and no test card, in every kind of report;
* no text of the other language, in every kind of report (HTML, Markdown, plain text, rich,
  Gradescope, nbgrader cells, a test's feedback), and `both` says nothing twice;
* no character drawn as an empty box, on the page and in the pictures, whose cells are big enough
  to read and whose weights have a colour bar; drawing prints nothing, whatever matplotlib's cache.
  Whatever CJK font is installed (WenQuanYi, Noto CJK or another): what is checked is that the
  font file actually used holds every character drawn, not the font's name.

The pages and screenshots are kept in out/report-views/ (CI keeps out/ as its artifacts).
Fails (does not skip) without chromium."""

import json
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import yaml

from autograder.config import load_course
from autograder.grading import grade
from autograder.report.feedback import feedback_text
from autograder.report.html import render_html
from autograder.report.markdown import render_markdown
from autograder.report.messages import MESSAGES, has_cjk, label_pair, value_pair
from autograder.report.model import TestResult, fixes, not_graded_reason
from autograder.report.terminal import render_rich_text
from autograder.report.text import render_text

from .chromium import Chromium, ChromiumError
from .conftest import ROOT

pytestmark = pytest.mark.slow  # grades whole submissions (CI runs slow tests too)

OUT = ROOT / "out" / "report-views"
EXAMPLES = ROOT / "examples" / "submissions"
LANGUAGES = ("zh", "en", "both")
SCREEN = (1280, 800)
LEVEL_RGB = {
    "good": (0x1B, 0x7F, 0x3B),
    "fair": (0x9A, 0x5B, 0x00),
    "poor": (0xC0, 0x16, 0x2C),
    "none": (0x5B, 0x61, 0x70),
}

PE_SWAPPED = """
import torch

def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2:
        raise ValueError("d must be even")
    t = torch.arange(T, dtype=torch.float32)[:, None]
    w = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.empty(T, d)
    pe[:, 0::2] = torch.cos(t * w)  # cos and sin swapped
    pe[:, 1::2] = torch.sin(t * w)
    return pe

def add_positional_encoding(X):
    return X + sinusoidal_encoding(X.shape[1], X.shape[2]).to(dtype=X.dtype, device=X.device)
"""


@pytest.fixture(scope="module")
def reports(bob, tmp_path_factory):
    """The four submissions graded by the real grader: the reference solutions and the corrupt
    notebook in this process (trusted / nothing runs), the endless loop in the sandbox with 1 s
    per test; bob by the command line (conftest.py).  Plus a swapped sin/cos, whose worked example
    must not be printed twice."""
    from autograder.judge import ForkRunner, InProcessRunner

    tmp = tmp_path_factory.mktemp("views")
    course = load_course(None, max_examples=1)
    out = {
        "correct": grade(ROOT / "solutions", course, InProcessRunner(course)).to_dict(),
        "bob": bob[2],
        "corrupt": grade(EXAMPLES / "dave.ipynb", course, InProcessRunner(course)).to_dict(),
    }
    c = yaml.safe_load((ROOT / "course.yml").read_text())
    c["load_timeout"] = 8
    c["exercises"]["masks"]["timeout"] = 30
    for t in c["exercises"]["masks"]["tests"].values():
        t["timeout"] = 1
    (tmp / "course.yml").write_text(yaml.safe_dump(c, sort_keys=False))
    short = load_course(tmp / "course.yml", max_examples=1)
    out["loop"] = grade(
        ROOT / "tests" / "files" / "hostile" / "infinite_loop.py", short, ForkRunner(short), exercises=["masks"]
    ).to_dict()
    (tmp / "pe.py").write_text(textwrap.dedent(PE_SWAPPED))
    out["pe"] = grade(tmp / "pe.py", course, InProcessRunner(course), exercises=["positional_encoding"]).to_dict()
    OUT.mkdir(parents=True, exist_ok=True)
    for name, r in out.items():
        (OUT / f"{name}.json").write_text(json.dumps(r, ensure_ascii=False, indent=1), encoding="utf-8")
    return out


def test_the_four_reports_are_what_the_views_expect(reports):
    assert reports["correct"]["score"] == reports["correct"]["max_score"] == 100 and reports["correct"]["graded"]
    assert not_graded_reason(reports["correct"]) is None and fixes(reports["correct"]) == []
    bob = fixes(reports["bob"])
    assert [g["function"] for g in bob] == [
        "causal_mask",
        "scaled_dot_product_attention",
        "lstm_cell",
        "masked_cross_entropy",
    ]
    # each named mistake once per function; bob's loss makes two at once, both named
    assert [len(g["diagnoses"]) for g in bob] == [1, 1, 1, 2]
    corrupt = reports["corrupt"]
    assert corrupt["graded"] is False and "not valid JSON" in corrupt["not_graded_reason"]
    assert all(
        t["status"] == "not_graded" and "not defined" not in t["feedback"]
        for ex in corrupt["exercises"]
        for t in ex["tests"]
    )
    loop = fixes(reports["loop"])
    assert [(g["function"], g["status"].value) for g in loop] == [("causal_mask", "timeout")]
    assert reports["loop"]["graded"] and reports["loop"]["score"] == 15


# ---------------------------------------------------------------- in Chromium

# {missing, controlMissing} of a page's text: the characters no installed font holds, drawn in the
# page's fonts (whatever they are called) like a code point that has no glyph anywhere; and, as a
# control, how many of two such code points the check finds (2 for each of the page's two fonts)
MISSING_GLYPHS = r"""
(text => {
  const canvas = document.createElement("canvas"); canvas.width = 48; canvas.height = 48;
  const g = canvas.getContext("2d", {willReadFrequently: true});
  const draw = (ch, font) => { g.clearRect(0, 0, 48, 48); g.font = "32px " + font; g.fillText(ch, 4, 36);
    const d = g.getImageData(0, 0, 48, 48).data; let h = 0;
    for (let i = 3; i < d.length; i += 4) h = (h * 31 + d[i]) >>> 0; return h + ":" + g.measureText(ch).width; };
  const fonts = [getComputedStyle(document.body).fontFamily,
                 getComputedStyle(document.querySelector("code") || document.body).fontFamily];
  const out = {missing: [], controlMissing: []};
  for (const font of fonts) {
    const tofu = ["\u0378", "\u0379", "\uFDD0"].map(ch => draw(ch, font));
    out.controlMissing.push(["\u0378", "\uE000"].filter(ch => tofu.includes(draw(ch, font))).length);
    for (const ch of new Set(text.replace(/\s/g, ""))) {
      if (tofu.includes(draw(ch, font))) out.missing.push(ch);
    }
  }
  return out;
})
"""

PROBE = r"""
(() => {
  const box = el => { const r = el.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, left: r.left,
                                                                    right: r.right, width: r.width, height: r.height}; };
  const shown = el => el.checkVisibility() && el.getBoundingClientRect().height > 0;
  const total = document.getElementById("total");
  const out = {
    total: total && {text: total.innerText, box: box(total), shown: shown(total)},
    fixes: [...document.querySelectorAll("li.fix")].map(li => ({text: li.innerText, box: box(li), shown: shown(li),
                                                               fn: li.dataset.function})),
    notGraded: (el => el && {box: box(el), text: el.innerText})(document.getElementById("not-graded")),
    allPassed: (el => el && {box: box(el), text: el.innerText})(document.querySelector(".all-passed")),
    cards: document.querySelectorAll("[data-test]").length,
    width: document.documentElement.scrollWidth,
    title: document.title,
    shownPictures: [...document.querySelectorAll("img.cx-picture")].filter(shown).length,
  };
  // everything, the folded tests opened
  document.querySelectorAll("details").forEach(d => d.open = true);
  out.text = document.body.innerText;
  const prose = document.querySelector("main").cloneNode(true);  // without code, raw text and tables of values
  prose.querySelectorAll("code, pre, table.arr, td.name").forEach(e => e.remove());
  out.prose = prose.innerText || prose.textContent;
  out.images = [...document.images].map(i => ({w: i.naturalWidth, h: i.naturalHeight, complete: i.complete,
                                               cls: i.className, alt: i.alt}));
  out.alts = out.images.map(i => i.alt).join("\n");
  // a block said twice inside one card, diagnosis or not-graded box
  out.repeated = [];
  document.querySelectorAll(".card, details.test, .diagnosis, .not-graded").forEach(c => {
    const seen = new Set();
    const blocks = "p, pre, li, .title, .hint, figcaption, span[lang], b";
    c.querySelectorAll(blocks).forEach(b => {
      const t = b.innerText.trim();
      if ([...b.querySelectorAll(blocks)].some(inner => inner.innerText.trim() === t)) return;  // a wrapper
      if (t.length >= 20 && seen.has(t) && !b.closest("table.inputs")) out.repeated.push(t);
      seen.add(t);
    });
  });
  out.diagnosisTitles = [...document.querySelectorAll(".diagnosis .title")].map(e => e.innerText);
  Object.assign(out, MISSING_GLYPHS(out.text + out.title));
  return out;
})()
""".replace("MISSING_GLYPHS", MISSING_GLYPHS.strip())


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    try:
        b = Chromium(tmp_path_factory.mktemp("chromium-profile"))
    except ChromiumError as e:
        pytest.fail(str(e), pytrace=False)
    yield b
    b.close()


def colour_share(png, box, rgb, tolerance=40):
    """The share of the pixels inside `box` (the CSS box of an element) close to the colour `rgb`."""
    import numpy as np
    from PIL import Image

    im = Image.open(png).convert("RGB").crop((int(box["left"]), int(box["top"]), int(box["right"]), int(box["bottom"])))
    px = np.asarray(im, dtype=int).reshape(-1, 3)
    near = (np.abs(px - np.array(rgb)) <= tolerance).all(axis=1)
    return float(near.mean()) if len(px) else 0.0


def english_in_chinese(text, report):
    """Snippets of English words written for a reader of English that a zh text shows: the
    catalogue's English, the report's English texts, and common English words outside code."""
    found = []
    phrases = set()
    for entry in MESSAGES.values():
        en = entry[1].split("{")[0].strip(" :：")
        if len(en) >= 6 and " " in en:
            phrases.add(en)
    for ex in report.get("exercises", []):
        for t in ex.get("tests", []):
            for k in ("property_en", "message_en", "hint_en"):
                if t.get(k) and " " in t[k] and t[k][:40] not in t.get(k.replace("_en", "_zh"), ""):
                    phrases.add(t[k][:40])
            for d in t.get("diagnosis") or []:
                for k in ("title_en", "explanation_en", "hint_en"):
                    if d.get(k):
                        phrases.add(d[k][:40])
            labels = [lab for lab, _ in t.get("details") or []] + list(
                (t.get("counterexample") or {}).get("inputs") or {}
            )
            for lab in labels:
                zh, en = label_pair(lab)
                if zh != en and not en.isidentifier():
                    phrases.add(en)
            for _, v in t.get("details") or []:
                p = value_pair(v)
                if p and p[1].splitlines()[0] not in p[0]:
                    phrases.add(p[1].splitlines()[0])
    found += [p for p in phrases if p and p in text]
    words = re.findall(
        r"(?<![\w`.\-=/])(the|of|from|with|your|yours|must|should|and|this|that|when|expected|got|wrong|"
        r"hand|original|failed|passed|points|details|hint|fix|not|is|are|was|by|in|to)(?![\w(=\-])",
        text,
    )
    return found + words


def exempt(text, report):
    """`text` without what is quoted raw (the submission's load errors, the reason it was not graded)."""
    for raw in (
        (report.get("errors") or []) + [report.get("not_graded_reason") or ""] + [not_graded_reason(report) or ""]
    ):
        if raw:
            text = text.replace(raw, "")
    return text


@pytest.mark.parametrize("name", ["correct", "bob", "corrupt", "loop"])
def test_report_pages_in_chromium(reports, browser, name):
    r = reports[name]
    for language in LANGUAGES:
        html_file = OUT / f"{name}-{language}.html"
        html_file.write_text(render_html(r, language), encoding="utf-8")
        page = browser.open(html_file, size=SCREEN)
        shot = page.screenshot(OUT / f"{name}-{language}.png")
        seen = page.eval(PROBE)
        page.close()
        where = f"{name} in {language} ({shot})"

        # the first screen: the score in its colour, then what to do
        assert seen["total"] and seen["total"]["shown"] and seen["total"]["box"]["bottom"] <= SCREEN[1], where
        graded = not_graded_reason(r) is None
        if graded:
            assert seen["total"]["text"] == f"{r['score']:g} / {r['max_score']:g}", where
            frac = r["score"] / r["max_score"]
            lvl = "good" if frac >= 0.9 else "fair" if frac >= 0.6 else "poor"
        else:
            assert seen["total"]["text"] == {"zh": "未评分", "en": "Not graded", "both": "未评分 Not graded"}[language]
            lvl = "none"
        assert colour_share(shot, seen["total"]["box"], LEVEL_RGB[lvl]) > 0.04, f"{where}: the score is not {lvl}"
        for other, rgb in LEVEL_RGB.items():
            if other != lvl:
                assert colour_share(shot, seen["total"]["box"], rgb, tolerance=25) < 0.02, f"{where}: {other} colour"
        groups = fixes(r)
        assert [f["fn"] for f in seen["fixes"]] == [g["function"] for g in groups], where
        for f, g in zip(seen["fixes"], groups):
            assert f["shown"] and f["box"]["bottom"] <= SCREEN[1], f"{where}: {f['fn']} is below the first screen"
            for d in g["diagnoses"]:  # the named mistake, in the page's language
                title = d["title_en"] if language == "en" else d["title_zh"]
                assert title in f["text"], (where, title, f["text"])
        if name == "correct":
            assert seen["allPassed"] and seen["allPassed"]["box"]["bottom"] <= SCREEN[1] and seen["cards"] == 0
        if name == "corrupt":  # not graded: why and what to do, first; no score, no test card
            assert seen["notGraded"] and seen["notGraded"]["box"]["top"] < SCREEN[1] * 0.5, where
            assert "not valid JSON" in seen["notGraded"]["text"] and seen["cards"] == 0, where
            assert not re.search(r"(?<![\d.])0 / 100", seen["text"]) and "not defined" not in seen["text"], where
        if name == "bob":
            assert seen["shownPictures"] >= 2, where  # the first test of each function is open, its picture shown
        student = {"correct": "solutions", "bob": "bob", "corrupt": "dave", "loop": "infinite_loop"}[name]
        assert seen["title"].endswith(f": {student}"), where  # the student, not a path

        # one language means one language; `both` says nothing twice
        text = exempt(seen["text"] + "\n" + seen["alts"], r)
        if language == "en":
            assert not has_cjk(text), (
                f"{where}: Chinese on an English page: {re.findall(r'.{0,20}[一-龥]+.{0,20}', text)[:5]}"
            )
        elif language == "zh":
            assert english_in_chinese(exempt(seen["prose"], r), r) == [], where
        else:
            assert has_cjk(text) and re.search(r"[A-Za-z]{4} [a-z]{3}", text), where
        assert seen["repeated"] == [], f"{where}: said twice: {seen['repeated'][:3]}"
        assert len(seen["diagnosisTitles"]) == len(set(seen["diagnosisTitles"])), f"{where}: a diagnosis shown twice"

        # what is drawn can be read
        assert [c for c in seen["controlMissing"]] == [2, 2], "the missing-glyph check does not detect a missing glyph"
        assert seen["missing"] == [], f"{where}: drawn as empty boxes: {seen['missing']}"
        for img in seen["images"]:
            assert img["complete"] and img["w"] > 100 and img["h"] > 50, (where, img)
        assert seen["width"] <= SCREEN[0], f"{where}: scrolls sideways"


# ---------------------------------------------------------------- every kind of report, in one language


def _kinds(r, language):
    """{kind: text} of every report a student can read, for the report `r`."""
    from autograder.batch import gradescope_results
    from autograder.nbgrader_course.cell import function_result

    out = {
        "text": render_text(r, language),
        "markdown": render_markdown(r, language),
        "rich": render_rich_text(r, language, width=100),
    }
    gs = gradescope_results(r, language)
    out["gradescope"] = (
        gs["output"]
        + "\n"
        + "\n".join(t["name"] + "\n" + t.get("output", "") for t in gs["tests"] if t.get("status") == "failed")
    )
    cells, feedback = [], []
    for ex in r["exercises"]:
        for fn in dict.fromkeys(t["function"] for t in ex["tests"]):
            cells.append(function_result(r, ex["id"], fn, language)[2])
        for t in ex["tests"]:
            if not t["passed"]:
                feedback.append(feedback_text(TestResult(**t), language))
    out["nbgrader"] = "\n".join(cells)
    out["feedback"] = "\n".join(feedback)
    return out


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_report_kind_speaks_one_language(reports, language):
    for name, r in reports.items():
        for kind, text in _kinds(r, language).items():
            where = f"{name}, {kind}, {language}"
            text = exempt(text, r)
            if language == "en":
                assert not has_cjk(text), f"{where}: {re.findall(r'.{0,20}[一-龥]+.{0,20}', text)[:5]}"
            elif language == "zh":
                stray = english_in_chinese(re.sub(r"`[^`\n]*`|<[^>\n]+>", "", text), r)
                assert stray == [], f"{where}: {stray[:8]}"


def test_terminal_captions_are_never_cut(reports):
    """`grade --rich` in an 80- and a 120-column terminal: every table's caption whole (a Chinese
    character is two columns wide)."""
    r = reports["bob"]
    for width in (80, 120):
        for language in LANGUAGES:
            text = render_rich_text(r, language, width=width)
            captions = [ln for ln in text.splitlines() if re.search(r"期望|你的结果|expected|yours", ln)]
            assert captions, (width, language)
            assert not [ln for ln in captions if "…" in ln], (width, language, [ln for ln in captions if "…" in ln])


def html_text(page):
    """The text of an HTML page (tags removed, entities decoded)."""
    import html

    return html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<style>.*?</style>", "", page, flags=re.S)))


def test_both_never_says_a_thing_twice(reports):
    """In `both` every block is there once in each language: the worked example of the positional
    encoding (a property's bilingual value) and each named mistake's explanation."""
    pe = reports["pe"]
    hand = next(t for ex in pe["exercises"] for t in ex["tests"] if t["name"].endswith("hand_example"))
    by_hand = dict(hand["details"])["手算 by hand"]
    zh, en = value_pair(by_hand)
    kinds = _kinds(pe, "both")
    page = html_text(render_html(pe, "both", picture=False))
    flat = lambda s: re.sub(r"[\s│]+", "", s)  # noqa: E731 - a terminal wraps lines inside its boxes
    for kind, text in [*kinds.items(), ("html", page)]:
        if kind in ("nbgrader", "feedback", "gradescope"):  # one block per test there: the test's own feedback
            text = "\n".join(part for part in text.split("\n✗ ")[:2])
        assert "by hand" in text or "手算" in text, kind
        assert flat(text).count(flat(zh.splitlines()[0])) == 1, kind
        assert flat(text).count(flat(en.splitlines()[0])) == 1, kind
    bob = reports["bob"]
    for g in fixes(bob):
        for d in g["diagnoses"]:
            for kind, text in [
                *_kinds(bob, "both").items(),
                ("html", html_text(render_html(bob, "both", picture=False))),
            ]:
                if kind in ("nbgrader", "feedback", "gradescope"):
                    continue  # each test's feedback is its own box there
                assert flat(text).count(flat(d["explanation_en"][:50])) == 1, (kind, d["id"])
                assert flat(text).count(flat(d["explanation_zh"][:30])) == 1, (kind, d["id"])


def test_a_submission_not_graded_is_not_graded_in_every_kind_of_report(reports):
    from autograder.batch import classify, gradescope_results

    r = reports["corrupt"]
    reason = r["not_graded_reason"]
    for language in LANGUAGES:
        for kind, text in _kinds(r, language).items():
            assert reason in text, (kind, language)
            assert not re.search(r"(?<![\d.])0 / 100", text) and "not defined" not in text, (kind, language)
            assert "not graded" in text.lower() or "未评分" in text, (kind, language)
    gs = gradescope_results(r, "en")
    assert gs["extra_data"]["graded"] is False and gs["extra_data"]["not_graded_reason"] == reason
    assert [(t["status"], t["name"]) for t in gs["tests"]] == [("failed", "Not graded")] and reason in gs["output"]
    assert classify(r) == ("error: " + reason, "")  # grade-batch: a blank row with the reason, as before
    ok = gradescope_results(reports["bob"], "en")
    assert ok["extra_data"]["graded"] is True and ok["output"].startswith("Submission: bob")
    # nbgrader autograde (SandboxGrade): the hidden-tests cell says not graded and why
    import nbformat

    from autograder.nbgrader_course import HIDDEN_MARKER
    from autograder.nbgrader_course.preprocessor import fill_cells

    cell = nbformat.v4.new_code_cell(f'{HIDDEN_MARKER}\nhidden_tests("masks", "causal_mask")')
    cell.metadata["nbgrader"] = {"grade": True, "points": 5, "grade_id": "hidden_causal_mask"}
    nb = fill_cells(nbformat.v4.new_notebook(cells=[cell]), r)
    said = nb.cells[0].outputs[0]["text"]
    assert reason in said and "not defined" not in said and ("not graded" in said or "未评分" in said), said
    n_tests = sum(len(ex["tests"]) for ex in reports["bob"]["exercises"])
    assert "What to fix (4):" in ok["output"] and len(ok["tests"]) == n_tests


def test_one_unreadable_notebook_of_a_folder_is_that_exercise_not_graded(tmp_path):
    """A folder submission whose masks.ipynb is cut off: masks is "not graded" (no card, no
    "not defined"); the other exercises are graded as usual."""
    from autograder.judge import InProcessRunner

    sub = tmp_path / "erin"
    sub.mkdir()
    (sub / "masks.ipynb").write_text((EXAMPLES / "dave.ipynb").read_text(encoding="utf-8"), encoding="utf-8")
    (sub / "masked_loss.py").write_text((ROOT / "solutions" / "masked_loss.py").read_text(encoding="utf-8"))
    course = load_course(None, max_examples=1)
    r = grade(sub, course, InProcessRunner(course), exercises=["masks", "masked_loss"]).to_dict()
    assert r["graded"] and not_graded_reason(r) is None and r["score"] == 15
    masks = r["exercises"][0]
    assert masks["not_graded_reason"].startswith("masks.ipynb: the notebook is not valid JSON")
    assert [(g["exercise"], g["not_graded"] is not None) for g in fixes(r)] == [("masks", True)]
    page = render_html(r, "en", picture=False)
    assert "not defined" not in page and 'data-test="masks/' not in page and "Not graded" in page
    assert "not defined" not in render_text(r, "en") and "masks.ipynb: the notebook is not valid JSON" in render_text(
        r, "en"
    )


# ---------------------------------------------------------------- pictures


def _counterexamples(report):
    kinds = {}
    for ex in report["exercises"]:
        for t in ex["tests"]:
            cx = t.get("counterexample") or {}
            if not t["passed"] and cx.get("kind") in ("mask", "weights", "tensor", "encoding"):
                kinds.setdefault(cx["kind"], cx)
    kinds["shape"] = {"kind": "shape", "expected_shape": [2, 3], "got_shape": [3, 2]}
    return kinds


def test_every_picture_title_has_its_glyphs_in_the_font_in_use_and_cells_are_readable(reports):
    from autograder.report import plots

    kinds = {**_counterexamples(reports["bob"]), **_counterexamples(reports["pe"])}
    assert set(kinds) == {"mask", "weights", "tensor", "encoding", "shape"}
    # a CJK font is installed (bin/setup installs one as root on Debian): the pictures use one that
    # holds every Chinese character they can draw, whatever it is called
    path, face = plots.font_file_in_use()
    assert plots.font_covers(path, plots.cjk_characters(), face), (
        f"the pictures' font {plots.font_in_use()} ({path}) lacks Chinese characters: install a CJK font"
    )
    for language in ("both", "en"):  # `both` draws every Chinese and English word `zh` and `en` draw
        for kind, cx in kinds.items():
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # "Glyph ... missing from font(s)" and any other warning fail
                fig = plots.figure(cx, language, kinds=plots.PICTURED + ("tensor",))
                assert plots.missing_glyphs(fig) == [], (kind, language)
                texts = " ".join(t.get_text() for t in fig.findobj(plots_text()))
                assert has_cjk(texts) == (language != "en"), (kind, language, texts)
                chinese = set(re.findall(r"[^\x00-\u2fff]", texts))  # drawn with the font in use, not a fallback
                assert plots.font_covers(path, chinese, face), (kind, language, path, sorted(chinese))
                if kind in ("mask", "weights", "tensor"):
                    grids = [a for a in fig.axes if a.images]
                    for ax in grids:
                        rows, cols = ax.images[0].get_array().shape[:2]
                        w = ax.get_window_extent().width / cols
                        h = ax.get_window_extent().height / rows
                        small = max(rows, cols) <= 12
                        assert min(w, h) >= (plots.MIN_CELL if small else plots.MIN_CELL_LARGE) - 0.5, (kind, w, h)
                    bars = [a for a in fig.axes if not a.images and a.collections]  # colour bars
                    assert len(bars) == (len(grids) if kind in ("weights", "tensor") else 0), (kind, len(bars))
                plots._setup().close(fig)
    # the check itself finds a glyph that no font has
    fig = plots._setup().figure()
    fig.suptitle("\u0378 ✗")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # matplotlib's own "Glyph 888 missing" warning: expected here
        assert plots.missing_glyphs(fig) == [("\u0378 ✗", "\u0378")]
    plots._setup().close(fig)


def plots_text():
    from matplotlib.text import Text

    return Text


def test_pictures_do_not_depend_on_an_old_font_cache_and_print_nothing(bob, tmp_path):
    """matplotlib's font list, cached on disk, may predate the CJK font's installation: the
    pictures find the font anyway (the same one, whatever it is called), and nothing (no
    "findfont" line, no warning) is printed."""
    import matplotlib

    from autograder.report import plots

    cache = Path(matplotlib.get_cachedir())
    lists = sorted(cache.glob("fontlist-*.json"))
    assert lists, f"no matplotlib font cache in {cache}"
    stale = json.loads(lists[-1].read_text(encoding="utf-8"))
    # the list as it was before any CJK font: without every font that holds a Chinese character
    stale["ttflist"] = [f for f in stale["ttflist"] if not plots.font_covers(f["fname"], "期望", f.get("index", 0))]
    assert plots.font_file_in_use()[0] not in {f["fname"] for f in stale["ttflist"]}
    cfg = tmp_path / "mpl"
    cfg.mkdir()
    (cfg / lists[-1].name).write_text(json.dumps(stale), encoding="utf-8")
    code = (
        "import json, sys\n"
        "from autograder.report import plots\n"
        "cx = json.loads(sys.argv[1])\n"
        "png = plots.picture(cx, 'zh')\n"
        "print(json.dumps([plots.font_in_use(), *plots.font_file_in_use(), len(png)]))\n"
    )
    cx = _counterexamples(bob[2])["mask"]
    env = dict(os.environ, MPLCONFIGDIR=str(cfg))
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(cx)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    font, path, face, size = json.loads(proc.stdout.split("\n")[0])
    assert font == plots.font_in_use() and plots.font_covers(path, plots.cjk_characters(), face), proc.stdout
    assert size > 2000, proc.stdout
    assert proc.stderr == "", proc.stderr
    _, grade_proc, _ = bob  # `grade --html --markdown` drew every picture: nothing but the report printed
    assert "findfont" not in grade_proc.stdout + grade_proc.stderr and grade_proc.stderr == "", grade_proc.stderr


# ---------------------------------------------------------------- the instructor's dashboard


def test_dashboard_notes_integer_ticks_and_colours_that_follow_the_value(tmp_path, browser):
    """A small grades folder written by hand: pass rates of 100 %, 62 % and 25 %, integer scores,
    one student graded with a load problem (a SyntaxError in one of her files).  In both languages,
    no character is drawn as an empty box."""
    from autograder.report import plots
    from autograder.report.dashboard import collect, histogram_figure, render_dashboard

    reports = tmp_path / "reports"
    reports.mkdir()
    rates = {"t/a/all": 8, "t/b/most": 5, "t/c/few": 2}  # students of 8 who pass each test
    for i in range(8):
        tests = [
            {
                "name": n,
                "function": n.split("/")[1],
                "score": 1.0 if i < k else 0.0,
                "max_score": 1.0,
                "passed": i < k,
                "status": "passed" if i < k else "failed",
            }
            for n, k in rates.items()
        ]
        score = sum(t["score"] for t in tests)
        note = "carol/masks.py: SyntaxError: invalid syntax (line 3)" if i == 7 else ""
        r = {
            "submission": f"s{i}",
            "score": score,
            "max_score": 3.0,
            "errors": [note] if note else [],
            "exercises": [{"id": "t", "score": score, "max_score": 3.0, "tests": tests}],
            "batch": {"student": f"s{i}", "status": "graded", "note": note},
        }
        (reports / f"s{i}.json").write_text(json.dumps(r), encoding="utf-8")
    d = collect(tmp_path)
    fig = histogram_figure(d)
    assert plots.missing_glyphs(fig) == []  # every character of the histograms is in a font they are drawn with
    for ax in fig.axes:
        if ax.has_data():
            labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
            assert labels and all(re.fullmatch(r"−?\d+|-?\d+", s) for s in labels), labels  # integer scores
            ylabels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
            assert all(re.fullmatch(r"\d+", s) for s in ylabels), ylabels  # whole students
    page = tmp_path / "dashboard.html"
    page.write_text(render_dashboard(tmp_path, "en"), encoding="utf-8")
    p = browser.open(page, size=(1280, 1400))
    p.screenshot(OUT / "dashboard.png")
    seen = p.eval("""(() => ({
      bars: Object.fromEntries([...document.querySelectorAll("table.pass-rates tr[data-test]")].map(tr =>
        [tr.dataset.test, getComputedStyle(tr.querySelector(".bar span")).backgroundColor])),
      notes: Object.fromEntries([...document.querySelectorAll("table.students tr[data-student]")].map(tr =>
        [tr.dataset.student, tr.querySelector("td.note").innerText])),
      head: [...document.querySelectorAll("table.students th")].map(th => th.innerText)}))()""")
    p.close()
    assert seen["bars"] == {
        "t/a/all": "rgb(27, 127, 59)",
        "t/b/most": "rgb(214, 158, 46)",
        "t/c/few": "rgb(192, 22, 44)",
    }
    assert (
        "Notes (load problems)" in seen["head"] and "SyntaxError" in seen["notes"]["s7"] and seen["notes"]["s0"] == ""
    )
    both = tmp_path / "dashboard-both.html"
    both.write_text(render_dashboard(tmp_path, "both"), encoding="utf-8")
    p = browser.open(both, size=(1280, 1400))
    glyphs = p.eval(f"({MISSING_GLYPHS.strip()})(document.body.innerText + document.title)")
    text = p.eval("document.body.innerText")
    p.close()
    assert has_cjk(text) and glyphs["controlMissing"] == [2, 2], glyphs
    assert glyphs["missing"] == [], f"the dashboard draws as empty boxes: {glyphs['missing']}"
