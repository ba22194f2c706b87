"""`seqgrader serve` end to end: the real command (uvicorn on 127.0.0.1), real HTTP requests
(httpx), a real SQLite file, the real grading processes (LocalPool) grading real submissions.

One service, started once for the module under a JupyterHub-like prefix, serves most tests;
the restart and two-process tests start their own on their own database."""

import csv
import io
import json
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import UTC
from pathlib import Path

import httpx
import pytest

from .conftest import ROOT, real_place

PREFIX = "/services/seqgrader/"
SOLUTION = (ROOT / "solutions" / "masks.py").read_text(encoding="utf-8")
PLANTED = SOLUTION.replace("return t[None, :] < lengths", "return t[None, :] <= lengths")  # off by one
assert PLANTED != SOLUTION
HIDDEN_TEST = "padding_mask/marks_real_tokens"
COURSE = f"""\
language: both
max_examples: 5
assignments:
  hw: [masks]
  closed: [masks]
exercises:
  masks:
    timeout: 60
    tests:
      padding_mask/shape_and_dtype: {{points: 2}}
      padding_mask/marks_real_tokens: {{points: 4}}
      padding_mask/rejects_bad_lengths: {{points: 2}}
      causal_mask/shape_dtype_device: {{points: 1}}
      causal_mask/future_is_blocked: {{points: 2}}
      causal_mask/past_and_present_allowed: {{points: 2}}
      attention_mask/shape_broadcasts_over_heads: {{points: 2}}
      attention_mask/blocks_padded_keys_only: {{points: 3}}
      attention_mask/causal_and_padding_combined: {{points: 2}}
service:
  hw: {{attempts: 3, window: 1h, hide_counterexamples: [{HIDDEN_TEST}]}}
  closed: {{deadline: "2020-01-01T00:00:00+00:00"}}
"""
PEOPLE = ["alice", "bob", "carol", "dave", "erin", "mallory", "zoe", "prof"]
XSS = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>alert('printed')</script>"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cmd(*args):
    return [sys.executable, "-m", "autograder", *args]


def _course_folder(where):
    where.mkdir(parents=True, exist_ok=True)
    (where / "course.yml").write_text(COURSE, encoding="utf-8")
    (where / "roster.csv").write_text(
        "student,role\n" + "".join(f"{p},{'instructor' if p == 'prof' else 'student'}\n" for p in PEOPLE),
        encoding="utf-8",
    )
    return where


def tokens(course, data, *extra):
    done = subprocess.run(
        _cmd("tokens", "--roster", str(course / "roster.csv"), "--data", str(data), *extra),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=course,
    )
    assert done.returncode == 0, done.stderr
    return dict(line.split(",", 1) for line in done.stdout.split())


class Service:
    """A `seqgrader serve` process and an httpx client per person."""

    def __init__(self, course, data, *extra, port=None):
        self.course, self.data = course, data
        self.port = port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}{PREFIX}"
        self.log_path = data.parent / f"serve-{self.port}.log"
        self.extra = extra
        self.proc = None

    def start(self):
        self.data.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            _cmd(
                "serve",
                "--course",
                str(self.course),
                "--data",
                str(self.data),
                "--roster",
                str(self.course / "roster.csv"),
                "--port",
                str(self.port),
                "--base-url",
                PREFIX,
                *self.extra,
            ),
            stdout=log,
            stderr=log,
            cwd=self.course,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log()
            try:
                if httpx.get(self.url + "healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise AssertionError("the service did not start:\n" + self.log())

    def log(self):
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def client(self, token=None, **kw):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, follow_redirects=False, **kw)


def submit(client, name, text, assignment="hw"):
    data = text.encode("utf-8") if isinstance(text, str) else text
    return client.post("api/submissions", data={"assignment": assignment}, files={"file": (name, data)})


def wait_done(client, sid, timeout=240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            r = client.get(f"api/submissions/{sid}")
        except httpx.RemoteProtocolError:  # a kept-alive connection the server closed as it was reused:
            r = client.get(f"api/submissions/{sid}")  # asked again on a new one (a service that is gone fails here)
        assert r.status_code == 200, r.text
        if r.json()["status"] in ("graded", "not_graded"):
            return r.json()
        time.sleep(0.5)
    raise AssertionError(f"{sid} was not graded in {timeout} s: {r.json()}")


@pytest.fixture(scope="module")
def place():
    where = real_place("service")  # not under /tmp: a worker that saw the data folder would show it
    yield where
    shutil.rmtree(where, ignore_errors=True)


@pytest.fixture(scope="module")
def svc(place):
    course = _course_folder(place / "course")
    data = place / "data"
    toks = tokens(course, data)
    # as behind a proxy on this host: the clients below speak for many addresses (X-Forwarded-For)
    service = Service(course, data, "--max-upload", "200kB", "--forwarded-allow-ips", "127.0.0.1").start()
    service.tokens = toks
    service.as_ = {p: service.client(toks[p]) for p in PEOPLE}
    yield service
    for c in service.as_.values():
        c.close()
    service.stop()


@pytest.fixture(scope="module")
def graded(svc):
    """alice's correct and planted submissions, graded by the service."""
    alice = svc.as_["alice"]
    out = {}
    for name, text in (("correct.py", SOLUTION), ("planted.py", PLANTED)):
        r = submit(alice, name, text)
        assert r.status_code == 202, r.text
        body = r.json()
        assert body["status"] == "queued" and set(body) >= {"id", "status", "attempts_left"}
        out[name] = body
    for name, body in out.items():
        out[name] = {**body, **wait_done(alice, body["id"])}
    return out


# ---------------------------------------------------------------- grading


def test_tokens_are_stable_and_rotate(svc, place):
    again = tokens(svc.course, svc.data)
    assert again == svc.tokens and len(set(again.values())) == len(PEOPLE)
    with sqlite3.connect(svc.data / "service.db") as db:
        stored = dict(db.execute("SELECT name, token_hash FROM people"))
    assert not set(svc.tokens.values()) & set(stored.values())  # only hashes are stored
    with sqlite3.connect(svc.data / "service.db") as db:  # the schema came from the shipped migrations
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [("0002",)]
    rotated = tokens(svc.course, svc.data, "--rotate", "zoe")
    assert rotated["zoe"] != svc.tokens["zoe"] and {k: v for k, v in rotated.items() if k != "zoe"} == {
        k: v for k, v in svc.tokens.items() if k != "zoe"
    }
    assert svc.client(svc.tokens["zoe"]).get("api/me").status_code == 401
    assert svc.client(rotated["zoe"]).get("api/me").json() == {"name": "zoe", "role": "student"}


def test_a_correct_submission_gets_the_score_grade_gives(svc, graded, tmp_path):
    res = graded["correct.py"]
    assert res["status"] == "graded" and res["score"] == res["max_score"] == 20
    (tmp_path / "correct.py").write_text(SOLUTION, encoding="utf-8")
    out = tmp_path / "report.json"
    done = subprocess.run(
        _cmd("grade", str(tmp_path / "correct.py"), "--course", str(svc.course), "--json", str(out), "-q"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["score"] == res["score"]


def test_a_planted_mistake_is_scored_and_named_as_grade_does(svc, graded, tmp_path):
    res = graded["planted.py"]
    (tmp_path / "planted.py").write_text(PLANTED, encoding="utf-8")
    out = tmp_path / "report.json"
    done = subprocess.run(
        _cmd("grade", str(tmp_path / "planted.py"), "--course", str(svc.course), "--json", str(out), "-q"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    expected = json.loads(out.read_text())
    assert res["status"] == "graded" and res["score"] == expected["score"] < res["max_score"]
    alice = svc.as_["alice"]
    report = alice.get(f"api/submissions/{res['id']}/report").json()
    failed = {t["name"]: t for e in report["exercises"] for t in e["tests"] if not t["passed"]}
    assert set(failed) == {t["name"] for e in expected["exercises"] for t in e["tests"] if not t["passed"]}
    named = [d["id"] for t in failed.values() for d in t.get("diagnosis") or []]
    assert named, "the off-by-one mistake is named"
    page = alice.get(f"submissions/{res['id']}")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert f"{res['score']:g} / 20" in page.text and "planted.py" in page.text


def test_hidden_counterexamples_reach_no_response(svc, graded):
    alice = svc.as_["alice"]
    sid = graded["planted.py"]["id"]
    report = alice.get(f"api/submissions/{sid}/report").json()
    tests = {t["name"]: t for e in report["exercises"] for t in e["tests"]}
    hidden = tests[f"masks/{HIDDEN_TEST}"]
    assert not hidden["passed"] and hidden["diagnosis"]  # the verdict and the named mistake stay
    assert hidden["details"] == [] and hidden["counterexample"] == {}
    shown = tests["masks/attention_mask/blocks_padded_keys_only"]  # a test whose counterexample is shown
    assert shown["counterexample"] and shown["details"]
    # the hidden test's call and values, from the report `grade` writes, appear nowhere
    with sqlite3.connect(svc.data / "service.db") as db:
        full = json.loads(db.execute("SELECT report FROM results WHERE submission_id = ?", (sid,)).fetchone()[0])
    original = next(t for e in full["exercises"] for t in e["tests"] if t["name"] == f"masks/{HIDDEN_TEST}")
    call = original["counterexample"]["call"]
    assert call and call in json.dumps(full)
    import html as html_module

    for text in (
        alice.get(f"submissions/{sid}").text,
        json.dumps(report),
        alice.get(f"api/submissions/{sid}").text,
        svc.as_["prof"].get(f"submissions/{sid}").text,
        svc.as_["prof"].get("instructor").text,
    ):
        assert call not in text and html_module.escape(call) not in text
    assert "sandbox" not in report and report["submission"] == "planted.py"


def test_a_corrupt_notebook_is_not_graded_and_costs_no_attempt(svc):
    carol = svc.as_["carol"]
    corrupt = (ROOT / "tests" / "files" / "hostile" / "corrupt_notebook.ipynb").read_bytes()
    r = submit(carol, "masks.ipynb", corrupt)
    assert r.status_code == 202, r.text
    assert r.json()["attempts_left"] == 2
    res = wait_done(carol, r.json()["id"])
    assert res["status"] == "not_graded" and res["score"] is None
    assert "json" in res["reason"].lower() or "notebook" in res["reason"].lower()
    assert res["attempt_charged"] is False and res["attempts_left"] == 3
    page = carol.get(f"submissions/{res['id']}")
    assert page.status_code == 200 and "not graded" in page.text
    # the file is named as it was sent, never by its name on disk
    assert "masks.ipynb" in page.text and res["id"] not in page.text.replace(f"submissions/{res['id']}", "")
    assert res["id"] not in res["reason"] + carol.get(f"api/submissions/{res['id']}/report").text


HOSTILE = (
    SOLUTION
    + """

import glob as _glob, os as _os

def _loot():
    found = []
    for pattern in ("/srv/*/*/service.db", "/srv/*/*/submissions/*", "/root/*/*/submissions/*",
                    _os.path.expanduser("~") + "/*/*/submissions/*", "/proc/*/cwd/*/submissions/*",
                    "/proc/*/cwd/roster.csv", "/srv/*/*/roster.csv"):
        for p in _glob.glob(pattern):
            try:
                with open(p, "rb") as f:
                    found.append(p + ": " + f.read(4000).decode("utf-8", "replace"))
            except OSError:
                pass
    return found

def causal_mask(T, device=None):
    loot = _loot()
    raise LookupError("found %d file(s): " % len(loot) + " | ".join(loot) if loot else "nothing found")
"""
)


def test_a_hostile_submission_sees_no_other_file_and_the_service_stays_up(svc, graded):
    carol = svc.as_["carol"]
    r = submit(carol, "masks.py", HOSTILE)
    assert r.status_code == 202, r.text
    res = wait_done(carol, r.json()["id"])
    assert res["status"] == "graded" and 0 < res["score"] < res["max_score"]
    report = carol.get(f"api/submissions/{res['id']}/report").text
    page = carol.get(f"submissions/{res['id']}").text
    assert "nothing found" in report
    for text in (report, page):
        assert not re.search(r"found \d+ file", text)
        assert "student,role" not in text and not any(t in text for t in svc.tokens.values())
        assert "Reference solution" not in text  # the reference's own docstring
    assert httpx.get(svc.url + "healthz").status_code == 200


def test_a_submission_that_kills_its_grading_process_costs_nothing_else(svc, graded):
    carol = svc.as_["carol"]
    text = (ROOT / "tests" / "files" / "hostile" / "kill_parent.py").read_text(encoding="utf-8")
    r = submit(carol, "kill_parent.py", text)
    assert r.status_code == 202, r.text
    res = wait_done(carol, r.json()["id"])
    assert res["status"] in ("graded", "not_graded")
    assert res["attempt_charged"] is (res["status"] == "graded")
    assert httpx.get(svc.url + "healthz").status_code == 200
    # and the next submission is graded as usual
    again = submit(svc.as_["dave"], "correct.py", SOLUTION)
    assert again.status_code == 202
    assert wait_done(svc.as_["dave"], again.json()["id"])["score"] == 20


def test_feedback_score_shows_the_scores_and_nothing_of_why(svc, graded):
    from autograder.config import ServiceRules
    from autograder.report.html import render_html
    from autograder.service.views import shown_report

    with sqlite3.connect(svc.data / "service.db") as db:
        full = json.loads(
            db.execute("SELECT report FROM results WHERE submission_id = ?", (graded["planted.py"]["id"],)).fetchone()[
                0
            ]
        )
    brief = shown_report(full, ServiceRules(feedback="score"), "planted.py", "both")
    tests = [t for e in brief["exercises"] for t in e["tests"]]
    assert [(t["name"], t["score"], t["passed"]) for t in tests] == [
        (t["name"], t["score"], t["passed"]) for e in full["exercises"] for t in e["tests"]
    ]
    assert brief["score"] == full["score"] < full["max_score"]
    for t in tests:
        assert not {"details", "counterexample", "diagnosis", "hint_en", "message_en"} & set(t), t
    page = render_html(brief, "both")
    first = next(t for e in full["exercises"] for t in e["tests"] if not t["passed"])
    assert first["diagnosis"][0]["title_en"] not in page and first["counterexample"]["call"] not in page
    assert f"{full['score']:g} / {full['max_score']:g}" in page


def test_a_grader_that_fails_its_self_check_grades_nobody_and_charges_nothing(place):
    course = _course_folder(place / "course-broken")
    (course / "solutions").mkdir()
    (course / "solutions" / "masks.py").write_text(PLANTED, encoding="utf-8")  # the reference loses points here
    data = place / "data-broken"
    toks = tokens(course, data)
    service = Service(course, data).start()
    try:
        alice = service.client(toks["alice"])
        r = submit(alice, "masks.py", SOLUTION)
        assert r.status_code == 202 and r.json()["attempts_left"] == 2
        res = wait_done(alice, r.json()["id"])
        page = alice.get(f"submissions/{res['id']}").text
        told = service.client(toks["prof"]).get(f"api/submissions/{res['id']}").json()
    finally:
        service.stop()
    assert res["status"] == "not_graded" and res["score"] is None
    assert res["attempt_charged"] is False and res["attempts_left"] == 3
    # the student reads that the grader is at fault; the instructor reads which test of the reference failed
    assert "nothing to do with your code" in res["reason"] and "nothing to do with your code" in page
    for text in (json.dumps(res), page):
        assert str(course) not in text and "marks_real_tokens" not in text
    assert "cannot grade" in told["reason"] and "padding_mask/marks_real_tokens" in told["reason"]
    subs, results = _db_rows(data)
    assert results == [] and [s["charged"] for s in subs] == [0]


# ---------------------------------------------------------------- what is refused, and why


def _error(r, status, code):
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert body["error"] == code and " / " in body["message"]
    zh, en = body["message"].split(" / ", 1)
    assert re.search(r"[\u4e00-\u9fff]", zh) and re.search(r"[A-Za-z]{3}", en)
    return body


def test_nobody_signed_in_gets_401_json_and_a_browser_the_sign_in_page(svc):
    anon = svc.client()
    _error(anon.get("api/submissions"), 401, "not_signed_in")
    _error(submit(anon, "x.py", SOLUTION), 401, "not_signed_in")
    _error(svc.client("not-a-token").get("api/submissions"), 401, "bad_token")
    r = anon.get("submissions")
    assert r.status_code == 303 and r.headers["location"].startswith(PREFIX + "signin")


def test_an_oversized_upload_is_413(svc):
    big = SOLUTION + "\n# padding\n" + "x = 1\n" * 50_000  # ~300 kB, over the 200 kB limit
    body = _error(submit(svc.as_["erin"], "big.py", big), 413, "too_large")
    assert "200" in body["message"] or "0.195" in body["message"]
    # sent in chunks, with no length announced: counted as it arrives, refused before it is parsed

    def chunks():
        yield b'--b\r\nContent-Disposition: form-data; name="assignment"\r\n\r\nhw\r\n'
        yield b'--b\r\nContent-Disposition: form-data; name="file"; filename="big.py"\r\n\r\n'
        for _ in range(100):
            yield b"x = 1\n" * 1000
        yield b"\r\n--b--\r\n"

    r = svc.as_["erin"].post(
        "api/submissions", content=chunks(), headers={"Content-Type": "multipart/form-data; boundary=b"}
    )
    assert "content-length" not in {k.lower() for k in r.request.headers}
    _error(r, 413, "too_large")
    assert svc.as_["erin"].get("api/submissions").json()["submissions"] == []


@pytest.mark.parametrize(
    "name, content",
    [
        ("masks.ipynb", SOLUTION),  # Python code named as a notebook
        ("masks.py", json.dumps({"cells": [], "nbformat": 4, "nbformat_minor": 5, "metadata": {}})),  # the reverse
        ("masks.py", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),  # a picture
        ("masks.txt", SOLUTION),  # neither name
        ("masks.ipynb", json.dumps([1, 2, 3])),  # JSON, not a notebook
    ],
)
def test_a_mislabelled_file_is_415(svc, name, content):
    _error(submit(svc.as_["erin"], name, content), 415, "unsupported_file")


def test_an_unknown_assignment_is_422_and_a_missing_field_too(svc):
    body = _error(submit(svc.as_["erin"], "masks.py", SOLUTION, assignment="nope"), 422, "unknown_assignment")
    assert "hw" in body["message"]
    r = svc.as_["erin"].post("api/submissions", data={"assignment": "hw"})
    assert r.status_code == 422 and r.json()["error"] in ("bad_request", "no_file")


def test_after_the_deadline_nothing_is_accepted(svc):
    body = _error(submit(svc.as_["erin"], "masks.py", SOLUTION, assignment="closed"), 403, "deadline_passed")
    assert "2020-01-01" in body["message"]
    assert svc.as_["erin"].get("api/submissions", params={"assignment": "closed"}).json()["submissions"] == []


def test_used_up_attempts_are_429_with_when_the_next_comes(svc):
    bob = svc.as_["bob"]
    lefts = [submit(bob, f"try{i}.py", SOLUTION + f"\n# try {i}\n").json()["attempts_left"] for i in range(3)]
    assert lefts == [2, 1, 0]
    r = submit(bob, "try3.py", SOLUTION)
    body = _error(r, 429, "no_attempts_left")
    wait = int(r.headers["Retry-After"])
    assert 3500 < wait <= 3600
    next_at = time.strftime("%Y-%m-%d %H:", time.gmtime(time.time() + wait))
    assert next_at in body["message"] and "UTC" in body["message"]
    assert len(bob.get("api/submissions").json()["submissions"]) == 3  # the refused one left nothing
    with sqlite3.connect(svc.data / "service.db") as db:
        assert db.execute("SELECT count(*) FROM submissions WHERE student = 'bob'").fetchone()[0] == 3
    assert sorted(p.name for p in (svc.data / "submissions").iterdir() if p.name.startswith(".")) == []


def test_no_next_attempt_is_promised_without_a_window_or_after_the_deadline():
    from datetime import datetime, timedelta

    from autograder.config import ServiceRules
    from autograder.service.app import _attempts_used
    from autograder.service.database import AttemptsUsed

    at = datetime(2026, 12, 20, 12, 0, tzinfo=UTC)
    total = _attempts_used(AttemptsUsed(3, 3, None), ServiceRules(attempts=3), at)
    assert total.status == 429 and "Retry-After" not in total.headers and "all 3 attempts" in total.en
    rules = ServiceRules(attempts=2, window="24h", deadline=at + timedelta(hours=1))
    late = _attempts_used(AttemptsUsed(2, 2, at + timedelta(hours=5)), rules, at)
    assert "Retry-After" not in late.headers and "after the deadline (2026-12-20 13:00 UTC)" in late.en
    soon = _attempts_used(AttemptsUsed(2, 2, at + timedelta(minutes=30)), rules, at)
    assert soon.headers["Retry-After"] == "1800" and "2026-12-20 12:30 UTC (in 30 min)" in soon.en


# ---------------------------------------------------------------- who sees what


def test_a_student_opening_anothers_submission_gets_404(svc, graded):
    sid = graded["correct.py"]["id"]
    mallory = svc.as_["mallory"]
    for path in (f"api/submissions/{sid}", f"submissions/{sid}", f"api/submissions/{sid}/report"):
        _error(mallory.get(path), 404, "not_found")
    nosuch = _error(mallory.get("api/submissions/0123456789abcdef0123456789abcdef"), 404, "not_found")
    assert nosuch == mallory.get(f"api/submissions/{sid}").json()  # the same answer: nothing learnt
    assert mallory.get("api/submissions", params={"student": "alice"}).json()["submissions"] == []
    for path in ("instructor", "instructor/export.csv", "instructor/dashboard"):
        _error(mallory.get(path), 404, "not_found")


def test_the_instructor_sees_everyone_and_exports_csv(svc, graded):
    prof = svc.as_["prof"]
    everyone = {s["student"] for s in prof.get("api/submissions").json()["submissions"]}
    assert {"alice", "bob"} <= everyone
    only = prof.get("api/submissions", params={"student": "alice"}).json()["submissions"]
    assert only and {s["student"] for s in only} == {"alice"}
    assert prof.get(f"submissions/{graded['planted.py']['id']}").status_code == 200
    page = prof.get("instructor", params={"assignment": "hw"})
    assert page.status_code == 200 and "alice" in page.text and "<svg" in page.text
    assert 'id="mistakes"' in page.text  # the off-by-one is the class's most common mistake so far
    dash = prof.get("instructor/dashboard", params={"assignment": "hw"})
    assert dash.status_code == 200 and "alice" in dash.text
    formula = prof.post(
        "api/submissions",
        data={"assignment": "hw"},  # an instructor: no attempt limit
        files={"file": ("=HYPERLINK(1)+1.py", SOLUTION.encode())},
    )
    assert formula.status_code == 202 and formula.json()["attempts_left"] is None
    r = prof.get("instructor/export.csv")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.text)))
    with sqlite3.connect(svc.data / "service.db") as db:
        assert len(rows) == db.execute("SELECT count(*) FROM submissions").fetchone()[0]
    by_id = {row["id"]: row for row in rows}
    planted = by_id[graded["planted.py"]["id"]]
    assert planted["student"] == "alice" and planted["status"] == "graded"
    assert float(planted["score"]) == graded["planted.py"]["score"]
    assert by_id[formula.json()["id"]]["file"] == "'=HYPERLINK(1)+1.py"  # a spreadsheet shows it, runs nothing


def test_every_link_and_form_works_under_the_prefix(svc, graded):
    alice = svc.as_["alice"]
    pages = [alice.get(p) for p in ("submissions", "upload", f"submissions/{graded['planted.py']['id']}")]
    pages.append(svc.as_["prof"].get("instructor"))
    pages.append(svc.client().get("signin"))
    targets = set()
    for page in pages:
        assert page.status_code == 200, page.url
        for url in re.findall(r'(?:href|action)="([^"#]*)"', page.text):
            if url and not url.startswith(("data:", "http://www.w3.org")):
                assert url.startswith(PREFIX), (page.url, url)
                targets.add(url.split("?")[0])
    assert len(targets) >= 5
    for url in targets - {PREFIX + "signin", PREFIX + "signout", PREFIX + "upload"}:
        r = svc.as_["prof"].get(f"http://127.0.0.1:{svc.port}{url}")
        assert r.status_code in (200, 303), (url, r.status_code)


def test_every_route_but_the_public_ones_goes_through_current_user(svc):
    from autograder.config import load_course
    from autograder.service.app import Service as App
    from autograder.service.app import create_app
    from autograder.service.auth import Roster, current_user
    from autograder.service.database import make_engine, migrate, sqlite_url

    (svc.data.parent / "routes").mkdir(exist_ok=True)
    engine = make_engine(sqlite_url(svc.data.parent / "routes"))
    migrate(engine)
    app = create_app(
        App(
            engine=engine,
            course=load_course(svc.course),
            data=svc.data.parent / "routes",
            roster=Roster(engine),
            base_url=PREFIX,
        )
    )

    def calls(dependant):
        yield dependant.call
        for d in dependant.dependencies:
            yield from calls(d)

    public = {(r.path, m) for r in app.state.routers["public"].routes for m in r.methods}
    assert public == {("/healthz", "GET"), ("/signin", "GET"), ("/signin", "POST"), ("", "GET")}
    protected = [
        (r.path, m)
        for r in app.state.routers["protected"].routes
        for m in r.methods
        if current_user in set(calls(r.dependant))
    ]
    assert len(protected) == len([1 for r in app.state.routers["protected"].routes for _ in r.methods]) >= 15
    # and the running service answers each of them, to nobody signed in, with 401 or the sign-in page
    anon = svc.client()
    for path, method in protected:
        r = anon.request(method, path.lstrip("/").replace("{sid}", "0" * 32))
        if method == "GET" and "/api/" not in PREFIX + path:
            assert r.status_code == 303 and r.headers["location"].startswith(PREFIX + "signin"), (path, r)
        else:
            assert r.status_code == 401 and r.json()["error"] == "not_signed_in", (path, method, r.text)


# ---------------------------------------------------------------- pages: escaping, forms


def test_a_file_name_and_printed_output_are_shown_escaped(svc):
    erin = svc.as_["erin"]
    code = (
        SOLUTION + f"\nprint({SCRIPT!r})\n\n\ndef causal_mask(T, device=None):\n    print({SCRIPT!r})\n"
        f"    raise ValueError({SCRIPT + ' ' + XSS!r})\n"
    )
    r = submit(erin, f"{XSS}.py", code)
    assert r.status_code == 202, r.text
    sid = r.json()["id"]
    res = wait_done(erin, sid)
    assert res["status"] == "graded" and res["file"] == f"{XSS}.py"
    pages = [
        erin.get(f"submissions/{sid}").text,
        erin.get("submissions").text,
        svc.as_["prof"].get("instructor").text,
        svc.as_["prof"].get("submissions").text,
    ]
    assert "&lt;script&gt;" in pages[0]  # the exception's text is on the report, escaped
    for text in pages:
        assert SCRIPT not in text and XSS not in text and "<img src=x" not in text
        assert "&lt;img src=x" in text
    stored = sorted(p.name for p in (svc.data / "submissions").iterdir())
    assert all(re.fullmatch(r"[0-9a-f]{32}\.(py|ipynb)", n) for n in stored), stored  # never the uploaded name
    headers = svc.as_["prof"].get("instructor").headers
    assert "script-src" not in headers["content-security-policy"]
    assert "default-src 'none'" in headers["content-security-policy"]


def _signed_in(svc, person):
    c = svc.client()
    r = c.post("signin", data={"token": svc.tokens[person], "next": PREFIX + "upload"})
    assert r.status_code == 303 and r.headers["location"] == PREFIX + "upload"
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and f"path={PREFIX}" in cookie
    return c


def test_a_form_without_its_token_or_from_another_site_is_refused(svc):
    dave = _signed_in(svc, "dave")
    page = dave.get("upload")
    assert page.status_code == 200
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    before = len(dave.get("api/submissions").json()["submissions"])
    files = {"file": ("masks.py", SOLUTION.encode())}
    assert dave.post("upload", data={"assignment": "hw"}, files=files).status_code == 403
    assert dave.post("upload", data={"assignment": "hw", "csrf": "forged"}, files=files).status_code == 403
    r = dave.post(
        "upload", data={"assignment": "hw", "csrf": csrf}, files=files, headers={"Origin": "https://evil.example"}
    )
    assert r.status_code == 403
    _error(dave.post("api/submissions", data={"assignment": "hw"}, files=files), 403, "csrf")
    assert len(dave.get("api/submissions").json()["submissions"]) == before  # nothing accepted, nothing charged
    r = dave.post("upload", data={"assignment": "hw", "csrf": csrf}, files=files)
    assert r.status_code == 303 and r.headers["location"].startswith(PREFIX + "submissions/")
    status = dave.get(f"http://127.0.0.1:{svc.port}{r.headers['location']}")
    assert status.status_code == 200 and ('id="reload"' in status.text or "/ 20" in status.text)
    assert len(dave.get("api/submissions").json()["submissions"]) == before + 1


def test_a_wrong_token_on_the_sign_in_page_says_so(svc):
    r = svc.client().post("signin", data={"token": "wrong", "next": "https://evil.example/"})
    assert r.status_code == 401 and "set-cookie" not in r.headers and "This token is not right" in r.text
    r = svc.client().post("signin", data={"token": svc.tokens["dave"], "next": "https://evil.example/"})
    assert r.status_code == 303 and r.headers["location"] == PREFIX  # never to another site


def test_guessing_tokens_is_stopped_per_address_with_429_and_retry_after(svc):
    """Ten wrong tokens a minute from one address (the proxy's X-Forwarded-For, believed from
    127.0.0.1: --forwarded-allow-ips), and that address may try no token until a minute has
    passed; others may."""

    def at(address, token=None):
        headers = {"X-Forwarded-For": address}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.Client(base_url=svc.url, headers=headers, timeout=60, follow_redirects=False)

    guesser = at("203.0.113.7", "not-a-token")
    for _ in range(10):
        _error(guesser.get("api/me"), 401, "bad_token")
    r = guesser.get("api/me")
    _error(r, 429, "too_many_failures")
    assert 1 <= int(r.headers["retry-after"]) <= 60
    _error(at("203.0.113.7", svc.tokens["dave"]).get("api/me"), 429, "too_many_failures")  # nothing is tried
    assert at("203.0.113.8", svc.tokens["dave"]).get("api/me").json()["name"] == "dave"  # another address
    _error(at("203.0.113.8", "not-a-token").get("api/me"), 401, "bad_token")
    other = httpx.Client(base_url=svc.url, headers={"X-Forwarded-For": "203.0.113.9", "Authorization": "token x"})
    for _ in range(10):
        assert other.get("api/me").status_code == 401  # JupyterHub's scheme: a failure too
    _error(other.get("api/me"), 429, "too_many_failures")
    # a browser signed in before keeps working from the blocked address
    browser = at("203.0.113.7")
    browser.cookies = _signed_in(svc, "dave").cookies
    assert browser.get("api/me").json()["name"] == "dave"

    page = at("198.51.100.9")
    for _ in range(10):
        assert page.post("signin", data={"token": "wrong", "next": ""}).status_code == 401
    r = page.post("signin", data={"token": svc.tokens["dave"], "next": ""})
    assert r.status_code == 429 and "text/html" in r.headers["content-type"] and "set-cookie" not in r.headers
    assert 1 <= int(r.headers["retry-after"]) <= 60 and "Too many wrong tokens" in r.text
    assert at("198.51.100.10").post("signin", data={"token": svc.tokens["dave"], "next": ""}).status_code == 303


def test_the_limit_of_failures_forgets_after_its_window():
    from autograder.service.auth import Failures

    f = Failures(limit=3, window=0.5)
    for _ in range(3):
        assert f.wait("a") == 0
        f.add("a")
    assert 0 < f.wait("a") <= 0.5 and f.wait("b") == 0
    time.sleep(0.6)
    assert f.wait("a") == 0
    f.MAX_ADDRESSES = 5
    for i in range(20):
        f.add(str(i))
    assert len(f._seen) == 5


# ---------------------------------------------------------------- nothing lost, nothing counted twice


def slow(seconds):
    """The reference, loading in `seconds` (top-level code: graded anew every time, never reused)."""
    return f"import time\ntime.sleep({seconds})\n" + SOLUTION


def _db_rows(data):
    with sqlite3.connect(data / "service.db") as db:
        db.row_factory = sqlite3.Row
        subs = [dict(r) for r in db.execute("SELECT * FROM submissions")]
        results = [dict(r) for r in db.execute("SELECT submission_id, graded_by FROM results")]
    return subs, results


def test_kill_9_while_grading_then_restart_grades_each_submission_once(place):
    course = _course_folder(place / "course-restart")
    data = place / "data-restart"
    toks = tokens(course, data)
    first = Service(course, data, "--workers", "1").start()  # one thread: the second upload waits in the queue
    try:
        alice = first.client(toks["alice"])
        slow_id = submit(alice, "slow.py", slow(8)).json()["id"]
        deadline = time.monotonic() + 120
        while alice.get(f"api/submissions/{slow_id}").json()["status"] != "grading":
            assert time.monotonic() < deadline, first.log()
            time.sleep(0.2)
        queued = submit(alice, "second.py", SOLUTION + "\n# second\n")
        assert queued.status_code == 202
        first.kill9()  # right after the 202: the row and the file must be there
    finally:
        first.stop()
    subs, results = _db_rows(data)
    by_id = {s["id"]: s for s in subs}
    second = queued.json()["id"]
    assert by_id[slow_id]["status"] == "grading" and by_id[second]["status"] == "queued" and results == []
    assert (data / "submissions" / by_id[second]["stored"]).is_file()
    again = Service(course, data).start()
    try:
        alice = again.client(toks["alice"])
        for sid in (slow_id, second):
            res = wait_done(alice, sid)
            assert res["status"] == "graded" and res["score"] == 20, res
        assert alice.get(f"api/submissions/{slow_id}").json()["attempts_left"] == 1  # two charged, once each
        assert "queued again" in again.log()
    finally:
        again.stop()
    subs, results = _db_rows(data)
    assert sorted(r["submission_id"] for r in results) == sorted([slow_id, second])  # one result each
    assert {s["id"]: s["claims"] for s in subs}[slow_id] == 2
    assert sum(s["charged"] for s in subs) == 2


def test_two_services_on_one_database_never_grade_a_submission_twice(place):
    course = _course_folder(place / "course-two")
    data = place / "data-two"
    toks = tokens(course, data)
    a = Service(course, data).start()
    b = Service(course, data).start()
    try:
        ids = []
        for n, person in enumerate(["alice", "bob", "carol", "dave", "erin", "mallory"]):
            via = a if n % 2 else b
            r = submit(via.client(toks[person]), "slow.py", slow(1.5) + f"\n# {person}\n")
            assert r.status_code == 202, r.text
            ids.append((person, r.json()["id"]))
        for person, sid in ids:
            assert wait_done(a.client(toks[person]), sid)["status"] == "graded"
    finally:
        a.stop()
        b.stop()
    graded_in = {s: [log.count(f"grading {sid} ") for log in (a.log(), b.log())] for s, sid in ids}
    assert all(sum(counts) == 1 for counts in graded_in.values()), graded_in
    assert all(sum(c[i] for c in graded_in.values()) > 0 for i in (0, 1)), graded_in  # both took a share
    subs, results = _db_rows(data)
    assert len(results) == len({r["submission_id"] for r in results}) == 6
    assert {r["graded_by"].rsplit(":", 2)[1] for r in results} == {str(a.proc.pid), str(b.proc.pid)}


def test_a_service_without_grading_threads_accepts_and_leaves_grading_to_another(place):
    course = _course_folder(place / "course-front")
    data = place / "data-front"
    toks = tokens(course, data)
    front = Service(course, data, "--workers", "0").start()
    try:
        assert httpx.get(front.url + "healthz").json()["grading"] is False
        alice = front.client(toks["alice"])
        sid = submit(alice, "masks.py", SOLUTION).json()["id"]
        time.sleep(3)
        assert alice.get(f"api/submissions/{sid}").json()["status"] == "queued"
        grader = Service(course, data).start()  # another process on the same database grades it
        try:
            assert wait_done(alice, sid)["score"] == 20
        finally:
            grader.stop()
    finally:
        front.stop()
    assert f"grading {sid} " not in front.log() and f"grading {sid} " in grader.log()


def test_an_upload_is_claimed_at_once_and_the_default_is_a_process_per_core(place):
    """--poll 120: the queue is read every two minutes for others' uploads, yet an upload this
    service accepts starts grading at once (the upload route wakes a grading thread)."""
    import os

    course = _course_folder(place / "course-wake")
    data = place / "data-wake"
    toks = tokens(course, data)
    service = Service(course, data, "--poll", "120").start()
    try:
        assert f", {os.cpu_count()} grading process(es)" in service.log()
        alice = service.client(toks["alice"])
        time.sleep(2)  # the grading threads are idle, waiting
        for _ in range(2):
            r = submit(alice, "masks.py", SOLUTION)
            assert r.status_code == 202, r.text
            sid, start = r.json()["id"], time.monotonic()
            while alice.get(f"api/submissions/{sid}").json()["status"] == "queued":
                assert time.monotonic() - start < 10, "the upload waited for the next poll"
                time.sleep(0.1)
            assert wait_done(alice, sid)["score"] == 20
    finally:
        service.stop()
    bad = subprocess.run(
        _cmd(
            "serve", "--course", str(course), "--data", str(data), "--roster", str(course / "roster.csv"), "--poll", "0"
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0 and "--poll" in bad.stderr


def _grading_processes(pid):
    out = []
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and (p / "stat").read_text().rsplit(")", 1)[1].split()[1] == str(pid):
                if "autograder.batch\0--grading-process" in (p / "cmdline").read_text():
                    out.append(int(p.name))
        except (OSError, IndexError):
            pass
    return out


def test_grading_processes_are_as_many_as_workers_whatever_the_assignments(place):
    course = _course_folder(place / "course-pools")
    data = place / "data-pools"
    toks = tokens(course, data)
    service = Service(course, data, "--workers", "1").start()
    try:
        prof = service.client(toks["prof"])  # an instructor may submit after the deadline of `closed`
        for assignment in ("hw", "closed", "hw"):
            r = submit(prof, "masks.py", SOLUTION, assignment=assignment)
            assert r.status_code == 202, r.text
            assert wait_done(prof, r.json()["id"])["score"] == 20
            assert len(_grading_processes(service.proc.pid)) == 1
    finally:
        service.stop()


# ---------------------------------------------------------------- the sign-in seam JupyterHub mode uses


class HeaderSignIn:
    """An authenticator of the shape auth.py describes (user, router, login_url), standing in for
    JupyterHub's: it believes the header X-Signed-In-As, and its login page is /hub/login."""

    def __init__(self):
        from fastapi import APIRouter

        self.router = APIRouter()
        self.router.add_api_route("/oauth_callback", lambda: {"callback": True}, methods=["GET"])

    async def user(self, request):
        from autograder.service.auth import User

        name = request.headers.get("x-signed-in-as")
        if not name:
            return None
        via = "hub-token" if request.headers.get("x-signed-in-by") == "token" else "hub-cookie"
        return User(name, "instructor" if name == "teacher" else "student", via=via)

    def login_url(self, request, next):
        from urllib.parse import quote

        return "/hub/login?next=" + quote(next)


def test_an_authenticator_signs_people_in_through_the_one_dependency(place):
    import threading

    import uvicorn

    from autograder.config import load_course
    from autograder.service.app import Service as App
    from autograder.service.app import create_app
    from autograder.service.auth import Roster, read_roster, sync_roster
    from autograder.service.database import make_engine, migrate, sqlite_url

    course = _course_folder(place / "course-hub")
    data = place / "data-hub"
    data.mkdir()
    engine = make_engine(sqlite_url(data))
    migrate(engine)
    roster_tokens = {name: token for name, _, token in sync_roster(engine, read_roster(course / "roster.csv"))}
    app = create_app(
        App(
            engine=engine,
            course=load_course(course),
            data=data,
            roster=Roster(engine),
            base_url=PREFIX,
            authenticator=HeaderSignIn(),
        )
    )
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}{PREFIX}"
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        anon = httpx.Client(base_url=base, timeout=30)
        r = anon.get("submissions")
        assert r.status_code == 303 and r.headers["location"] == "/hub/login?next=" + PREFIX + "submissions"
        assert anon.get("oauth_callback").json() == {"callback": True}  # its router, under the prefix
        _error(anon.get("api/me"), 401, "not_signed_in")
        alice = httpx.Client(base_url=base, timeout=30, headers={"X-Signed-In-As": "alice"})
        assert alice.get("api/me").json() == {"name": "alice", "role": "student"}
        teacher = httpx.Client(base_url=base, timeout=30, headers={"X-Signed-In-As": "teacher"})
        assert teacher.get("api/me").json() == {"name": "teacher", "role": "instructor"}
        files = {"file": ("masks.py", SOLUTION.encode())}
        # signed in by a cookie-like means: a form needs its token, whatever Authorization header
        # comes along (a proxy's password, a token that signs nobody in)
        _error(alice.post("api/submissions", data={"assignment": "hw"}, files=files), 403, "csrf")
        for header in ("token hub-api-token", "Basic cHJveHk6cGFzc3dvcmQ="):
            _error(
                alice.post(
                    "api/submissions", data={"assignment": "hw"}, files=files, headers={"Authorization": header}
                ),
                403,
                "csrf",
            )
        r = alice.post(
            "api/submissions", data={"assignment": "hw"}, files=files, headers={"X-Signed-In-By": "token"}
        )  # signed in by a header: no forms token
        assert r.status_code == 202 and r.json()["attempts_left"] == 2
        sid = r.json()["id"]
        assert teacher.get(f"api/submissions/{sid}").json()["student"] == "alice"
        _error(httpx.get(base + f"api/submissions/{sid}", headers={"X-Signed-In-As": "bob"}), 404, "not_found")
        _error(alice.get("instructor"), 404, "not_found")
        # roster tokens still work beside it, and a Bearer token that is none of them is refused
        bob = httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {roster_tokens['bob']}"})
        assert bob.get("api/me").json() == {"name": "bob", "role": "student"}
        _error(httpx.get(base + "api/me", headers={"Authorization": "Bearer nonsense"}), 401, "bad_token")
    finally:
        server.should_exit = True
        thread.join(timeout=30)
