"""Hostile submissions through the real service (roster sign-in, SQLite, the real grading
processes): code that reads whatever it can find of the service (its database, the other
students' uploads, the roster, course.yml, the reference solutions, its environment) and puts it
in printed output, exception messages and return values; code that loops, forks, floods stdout or
kills its grading process.  A unique marker is planted in every secret, and every answer the
attacker gets (API JSON, report JSON, report and status pages, lists) is searched for each."""

import json
import os
import shutil
import sqlite3
import time

import httpx
import pytest

from .conftest import real_place
from .servers import _children
from .test_service import COURSE, PEOPLE, PREFIX, SOLUTION, Service, _course_folder, submit, tokens

MARK = {
    what: f"QZX{what.upper()}MARK{os.urandom(6).hex()}"
    for what in ("upload", "roster", "course", "solution", "env", "dbpass", "hubtoken")
}
FAST_COURSE = (
    COURSE.replace("language: both", "language: en")
    .replace("timeout: 60", "timeout: 15")
    .replace("attempts: 3, window: 1h", "attempts: 20")
)
assert FAST_COURSE.count("timeout: 15") == 1 and "attempts: 20" in FAST_COURSE


@pytest.fixture(scope="module")
def hostile_svc():
    place = real_place("hostile")
    service, left = None, []
    try:
        service = _start(place)
        yield service
    finally:
        if service is not None:
            for c in service.as_.values():
                c.close()
            kids = set(_children(service.proc.pid)) if service.proc.poll() is None else set()
            service.stop()
            deadline = time.monotonic() + 20  # the grading processes and their sandboxes end with it
            while (left := [pid for pid in kids if _alive(pid)]) and time.monotonic() < deadline:
                time.sleep(0.2)
        shutil.rmtree(place, ignore_errors=True)
    assert not left, f"processes left behind: {left}"  # forks of student code included


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _named(comm):
    out = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and open(f"/proc/{p}/comm").read().strip() == comm and _alive(int(p)):
                out.append(int(p))
        except OSError:
            pass
    return out


def _start(place):
    course = _course_folder(place / "course")
    (course / "course.yml").write_text(FAST_COURSE + f"# {MARK['course']}\n", encoding="utf-8")
    roster = (course / "roster.csv").read_text(encoding="utf-8").splitlines()
    (course / "roster.csv").write_text(
        "\n".join([roster[0] + ",note"] + [f"{r},{MARK['roster']}" for r in roster[1:]]) + "\n", encoding="utf-8"
    )
    (course / "solutions").mkdir()
    (course / "solutions" / "masks.py").write_text(SOLUTION + f"\n# {MARK['solution']}\n", encoding="utf-8")
    data = place / "data"
    toks = tokens(course, data)
    env = {
        "SEQGRADER_SECRET_NOTE": MARK["env"],
        "JUPYTERHUB_API_TOKEN_UNUSED": MARK["hubtoken"],
        "SEQGRADER_DB": f"postgresql+psycopg://grader:{MARK['dbpass']}@db.invalid/grades",
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the service's environment: secrets the grading processes must not hold
    try:
        service = Service(course, data, "--db", f"sqlite:///{data / 'service.db'}", "--workers", "2").start()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    service.tokens = toks
    service.as_ = {p: service.client(toks[p]) for p in PEOPLE}
    service.seen = []  # every answer mallory got
    with sqlite3.connect(data / "service.db") as db:
        service.secret = db.execute("SELECT value FROM keys").fetchall()
    # bob's upload, with a marker, graded before any attack
    r = submit(service.as_["bob"], "bob.py", SOLUTION + f"\n# {MARK['upload']}\n")
    assert r.status_code == 202, r.text
    service.bob = r.json()["id"]
    _wait(service, service.as_["bob"], service.bob)
    return service


def _wait(svc, client, sid, timeout=300, keep=False):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in (f"api/submissions/{sid}", f"submissions/{sid}"):
            r = client.get(path)
            assert r.status_code == 200, r.text
            if keep:
                svc.seen.append(r.text)
        body = client.get(f"api/submissions/{sid}").json()
        if body["status"] in ("graded", "not_graded"):
            return body
        time.sleep(0.5)
    raise AssertionError(f"{sid} was not graded in {timeout} s")


def _attack(svc, name, code):
    mallory = svc.as_["mallory"]
    r = submit(mallory, name, code)
    assert r.status_code == 202, r.text
    svc.seen.append(r.text)
    res = _wait(svc, mallory, r.json()["id"], keep=True)
    for path in (
        f"api/submissions/{res['id']}",
        f"api/submissions/{res['id']}/report",
        f"submissions/{res['id']}",
        "api/submissions",
        "submissions",
        "upload",
        "api/assignments",
        "api/me",
        "api/submissions?student=bob",
        "submissions?student=bob",
        "instructor",
        "instructor/export.csv",
        "instructor/dashboard",
    ):
        svc.seen.append(mallory.get(path).text)
    return res


def _secrets(svc):
    out = dict(MARK)
    out.update({f"token of {p}": t for p, t in svc.tokens.items()})
    out.update({f"key {i}": v for i, (v,) in enumerate(svc.secret)})
    out["the data folder"] = str(svc.data.resolve())  # where the service keeps things is no student's business
    out["the course folder"] = str(svc.course.resolve())
    out["bob's upload id"] = svc.bob
    out["bob's file"] = "bob.py"
    return out


def _no_leak(svc):
    text = "\n".join(svc.seen)
    leaked = [what for what, value in _secrets(svc).items() if value in text]
    assert not leaked, leaked


def _loot_code(svc):
    data, course = svc.data.resolve(), svc.course.resolve()
    targets = [
        str(data / "service.db"),
        str(data / "submissions"),
        str(course / "roster.csv"),
        str(course / "course.yml"),
        str(course / "solutions" / "masks.py"),
        str(data / "workers.log"),
        "service.db",
        "roster.csv",
        "course.yml",
        "solutions/masks.py",
        "../data/service.db",
        "../course/roster.csv",
        "../../data/submissions",
        "/proc/self/cwd/roster.csv",
        "/proc/self/cwd/course.yml",
        "/proc/self/cwd/solutions/masks.py",
        "/proc/self/environ",
    ]
    return f"""

import glob as _glob, os as _os
_TARGETS = [bytes.fromhex(t).decode() for t in {[t.encode().hex() for t in targets]!r}]  # no path in the code itself

def _read(p):
    out = []
    try:
        if _os.path.isdir(p):
            for q in sorted(_os.listdir(p)):
                out += _read(_os.path.join(p, q))
        else:
            with open(p, "rb") as f:
                out.append(p + ": " + f.read(20000).decode("utf-8", "replace"))
    except Exception as e:
        pass
    return out

def _loot():
    found = []
    for p in _TARGETS:
        found += _read(p)
    pid = _os.getpid()
    for _ in range(8):  # up the chain of parents: their cwd, environment and command line
        try:
            with open("/proc/%d/stat" % pid) as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except Exception:
            break
        for what in ("environ", "cmdline"):
            found += _read("/proc/%d/%s" % (pid, what))
        for rel in ("roster.csv", "course.yml", "solutions/masks.py", "service.db", "../data/service.db"):
            found += _read("/proc/%d/cwd/%s" % (pid, rel))
    for p in _glob.glob("/proc/[0-9]*/environ") + _glob.glob("/proc/[0-9]*/cmdline"):
        found += _read(p)
    found.append("ENV " + repr(dict(_os.environ)))
    import re as _re
    text = " | ".join(found)
    # the best first (a report shortens long text): anything marked, then the names of what could be read
    return " ".join(_re.findall(r"QZX[A-Z]+MARK[0-9a-f]+", text)) + " READ " + " ".join(
        f.split(": ", 1)[0] for f in found if len(f.split(": ", 1)[-1].strip(chr(0) + " ")) > 0) + " " + text

def padding_mask(lengths, max_len=None):
    print(_loot())
    return _real_padding_mask(lengths, max_len)

def causal_mask(T, device=None):
    raise LookupError(_loot())

def attention_mask(lengths, max_len=None, causal=False):
    return _loot()
"""


def test_a_submission_that_reads_the_services_files_and_environment_learns_nothing(hostile_svc):
    svc = hostile_svc
    code = SOLUTION.replace("def padding_mask(", "def _real_padding_mask(", 1) + _loot_code(svc)
    res = _attack(svc, "loot.py", code)
    assert res["status"] == "graded" and res["score"] < res["max_score"], res
    _no_leak(svc)


def test_the_grading_processes_hold_no_secret_of_the_service_nor_its_folders(hostile_svc):
    svc = hostile_svc
    mine = os.getuid()
    found = 0
    for pid in _children(svc.proc.pid):
        try:
            if os.stat(f"/proc/{pid}").st_uid != mine:
                continue  # a sandboxed worker under another uid: not readable, and not ours to read
            environ = open(f"/proc/{pid}/environ", "rb").read().decode("utf-8", "replace")
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        found += 1
        assert not [m for m in ("env", "dbpass", "hubtoken") if MARK[m] in environ], pid
        assert not cwd.startswith((str(svc.data.resolve()), str(svc.course.resolve()))), (pid, cwd)
    assert found  # the grading processes were there to look at
    # the service itself had them: the test planted them where it matters
    assert MARK["env"] in open(f"/proc/{svc.proc.pid}/environ", "rb").read().decode("utf-8", "replace")


ENDLESS = (
    SOLUTION
    + """

def causal_mask(T, device=None):
    while True:
        pass
"""
)
FORKS = (
    SOLUTION
    + """

import ctypes as _ctypes, os as _os, time as _time

def _linger():
    try:
        _ctypes.CDLL(None).prctl(15, b"qzxlinger", 0, 0, 0)  # PR_SET_NAME: to be found afterwards
    except Exception:
        pass
    while True:
        _time.sleep(1)

def causal_mask(T, device=None):
    for i in range(200):
        try:
            if _os.fork() == 0:
                if i % 2:  # half of them leave: a new session, and a second fork whose parent exits
                    _os.setsid()
                    if _os.fork():
                        _os._exit(0)
                _linger()
        except OSError:
            break
    raise RuntimeError("forked")
"""
)
KILLS = (
    SOLUTION
    + """

import os as _os, signal as _signal

def causal_mask(T, device=None):
    _os.kill(_os.getppid(), _signal.SIGKILL)
    _os.kill(1, _signal.SIGKILL)
    _os.killpg(0, _signal.SIGKILL)
"""
)
FLOOD = (
    SOLUTION
    + """

import sys as _sys

def causal_mask(T, device=None):
    chunk = "y" * (1 << 20)
    for _ in range(200):
        print(chunk)
        _sys.stderr.write(chunk)
    raise RuntimeError("flooded")
"""
)


@pytest.mark.parametrize(
    "name, code", [("endless.py", ENDLESS), ("forks.py", FORKS), ("kills.py", KILLS), ("flood.py", FLOOD)]
)
def test_a_submission_that_loops_forks_kills_or_floods_is_settled_and_the_next_is_graded(hostile_svc, name, code):
    svc = hostile_svc
    res = _attack(svc, name, code)
    if res["status"] == "graded":  # zero for what it broke, the rest scored
        assert 0 < res["score"] < res["max_score"], res
        report = svc.as_["mallory"].get(f"api/submissions/{res['id']}/report").json()
        broken = {t["name"] for e in report["exercises"] for t in e["tests"] if not t["passed"]}
        # what it broke (attention_mask calls causal_mask) and nothing else
        assert {n for n in broken if n.startswith("masks/causal_mask/")} and not {
            n for n in broken if n.startswith("masks/padding_mask/")
        }, broken
    else:
        assert res["status"] == "not_graded" and res["reason"] and res["attempt_charged"] is False, res
    assert len(json.dumps(res)) < 20000
    deadline = time.monotonic() + 30
    while (lingering := _named("qzxlinger")) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not lingering, "processes forked by student code outlived its grading"
    log = svc.data / "workers.log"  # what student code prints never reaches the grading processes' log
    assert not log.exists() or log.stat().st_size < (4 << 20), log.stat().st_size
    assert httpx.get(svc.url + "healthz").status_code == 200
    r = submit(svc.as_["dave"], "correct.py", SOLUTION)
    assert r.status_code == 202
    assert _wait(svc, svc.as_["dave"], r.json()["id"])["score"] == 20
    _no_leak(svc)


# ---------------------------------------------------------------- a student with a valid token, attacking the HTTP layer


def _error(r, status, code):
    assert r.status_code == status, (r.status_code, r.text[:500])
    assert r.headers["content-type"].startswith("application/json") and r.json()["error"] == code, r.text[:500]
    return r


def test_ids_that_are_paths_or_sql_find_nothing(hostile_svc):
    mallory = hostile_svc.as_["mallory"]
    for sid in (
        "..%2F..%2Fservice.db",
        "../../data/service.db",
        "%2e%2e",
        "a" * 65,
        "x%00y",
        "' OR '1'='1",
        hostile_svc.bob,
    ):
        for path in (f"api/submissions/{sid}", f"api/submissions/{sid}/report"):
            r = mallory.get(path)
            assert r.status_code == 404 and hostile_svc.bob not in r.text, (sid, r.status_code, r.text[:300])


def test_forms_with_too_many_fields_or_a_huge_field_are_refused_briefly(hostile_svc):
    mallory = hostile_svc.as_["mallory"]
    file = {"file": ("a.py", SOLUTION.encode())}
    before = len(mallory.get("api/submissions").json()["submissions"])
    _error(
        mallory.post("api/submissions", data={**{f"f{i}": "x" for i in range(5000)}, "assignment": "hw"}, files=file),
        400,
        "bad_form",
    )
    _error(mallory.post("api/submissions", data={"assignment": "A" * (3 << 20)}, files=file), 400, "bad_form")
    r = _error(
        mallory.post("api/submissions", data={"assignment": "A" * (300 << 10)}, files=file), 422, "unknown_assignment"
    )
    assert len(r.content) < 2000  # the name is not echoed back whole
    assert len(mallory.get("api/submissions").json()["submissions"]) == before


def test_files_built_to_break_the_parsers_are_refused_or_not_graded(hostile_svc):
    svc = hostile_svc
    mallory = svc.as_["mallory"]
    deep = b'{"cells": ' + b"[" * 100000 + b"]" * 100000 + b', "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    _error(submit(mallory, "deep.ipynb", deep), 415, "unsupported_file")
    _error(submit(mallory, "deep.py", deep), 415, "unsupported_file")
    _error(submit(mallory, "nul.py", SOLUTION.encode() + b"\0"), 415, "unsupported_file")
    res = _attack(svc, "nested.py", "x = " + "(" * 100000 + ")" * 100000 + "\n")
    assert res["status"] == "not_graded" and "nested" in res["reason"] and res["attempt_charged"] is False, res
    cell = {"cell_type": "code", "metadata": {}, "source": "x = 1", "outputs": [], "execution_count": None}
    source = {**cell, "source": SOLUTION}
    many = json.dumps({"cells": [cell] * 40000 + [source], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    res = _attack(svc, "many.ipynb", many)
    assert res["status"] in ("graded", "not_graded") and (res["status"] == "graded") is res["attempt_charged"], res
    assert httpx.get(svc.url + "healthz").status_code == 200
    for sent, shown in (
        ("../../../data/service.py", "service.py"),
        ("..\\..\\roster.py", "roster.py"),
        ("x" * 3000 + ".py", "x" * 200),
    ):
        r = submit(mallory, sent, SOLUTION)
        assert r.status_code == 202, (sent[:20], r.text)
        assert mallory.get(f"api/submissions/{r.json()['id']}").json()["file"] == shown
    _error(
        submit(mallory, "x" * 20000 + ".py", SOLUTION), 400, "bad_form"
    )  # a part's header line over the parser's limit
    res = _attack(svc, "\u202eg\u200bnp.py", SOLUTION)  # a right-to-left override and a zero-width space
    assert res["status"] == "graded" and res["file"] == "gnp.py" and res["score"] == 20
    _no_leak(svc)


def test_head_is_answered_as_get_without_a_body_and_options_is_405(hostile_svc):
    mallory = hostile_svc.as_["mallory"]
    for path in ("api/me", "submissions", "api/submissions"):
        get, head = mallory.get(path), mallory.head(path)
        assert head.status_code == get.status_code == 200 and head.content == b""
        assert head.headers["content-type"] == get.headers["content-type"]
        assert head.headers["content-security-policy"] == get.headers["content-security-policy"]
    assert httpx.head(hostile_svc.url + "healthz").status_code == 200
    _error(mallory.options("api/submissions"), 405, "method_not_allowed")
    r = httpx.head(hostile_svc.url + "api/me")
    assert r.status_code == 401 and r.content == b"" and r.headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    "where",
    [
        "//evil.example/",
        "/\\evil.example",
        "https://evil.example/",
        "///evil.example",
        "/\t/evil.example",
        f"{PREFIX}..//evil.example",
        f"{PREFIX}../../evil",
        f"{PREFIX}%2e%2e/%2fevil.example",
        f"{PREFIX}\n/evil",
        "javascript:alert(1)",
    ],
)
def test_next_never_leads_off_the_service(hostile_svc, where):
    r = httpx.post(hostile_svc.url + "signin", data={"token": hostile_svc.tokens["dave"], "next": where})
    assert r.status_code == 303 and r.headers["location"] == PREFIX, r.headers["location"]
    page = httpx.get(hostile_svc.url + "signin", params={"next": where})
    assert page.status_code == 200 and "evil" not in page.text and "javascript:" not in page.text
