"""`seqgrader serve` against the people around it: another user of the same machine, a browser
driven by another site (behind a proxy that adds its own Authorization header), a copied cookie, a
local process that writes X-Forwarded-For, clients that send slowly or hold connections, and a
hub that does not answer.  A real `seqgrader serve` on loopback throughout (tests/servers.py),
but for the JupyterHub mode's signed cookies, also read by its Hub alone (the hub stood in for)."""

import asyncio
import base64
import os
import re
import socket
import stat
import subprocess
import sys
import time
import types
import urllib.parse

import httpx
import itsdangerous
import pytest

from .conftest import ROOT
from .servers import free_port, masks_submission, serve, tokens, write_roster

BASIC = "Basic " + base64.b64encode(b"proxy-user:proxy-password").decode()  # a proxy's password, sent by the browser
EVIL = "http://evil.example"
TIMEOUTS = ("--header-timeout", "1.5", "--body-timeout", "2", "--max-connections", "8")


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    """A service whose data folder was left readable by others before it started, started under
    a loose umask: it must make everything private and say so."""
    where = tmp_path_factory.mktemp("clients")
    data, roster = where / "data", write_roster(where / "roster.csv")
    toks = tokens(roster, data)
    for p in (data, *data.rglob("*")):  # as an older version, or a careless copy, left it
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    old = os.umask(0o002)
    try:
        with serve("--roster", roster, "--workers", 0, *TIMEOUTS, data=data) as (url, proc, log):
            os.umask(old)
            yield type("Svc", (), dict(url=url, tokens=toks, data=data, log=log, roster=roster, where=where))
    finally:
        os.umask(old)


def client(svc, token=None, **headers):
    headers.setdefault("Connection", "close")  # no connection kept after each answer: the limit here is 8
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(base_url=svc.url, headers=headers, timeout=30, follow_redirects=False)


def signed_in(svc, person, **headers):
    """A browser signed in by the sign-in page: (its client, the forms token of its pages)."""
    c = client(svc, **headers)
    r = c.post("signin", data={"token": svc.tokens[person], "next": "/upload"})
    assert r.status_code == 303, r.text
    page = c.get("upload")
    assert page.status_code == 200
    return c, re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)


def count(svc, person):
    return len(client(svc, svc.tokens[person]).get("api/submissions").json()["submissions"])


def upload(c, tmp_path, csrf=None, **headers):
    f = masks_submission(tmp_path)
    return c.post(
        "upload",
        data={"assignment": "sequence-models", **({"csrf": csrf} if csrf else {})},
        files={"file": (f.name, f.read_bytes())},
        headers=headers,
    )


# ---------------------------------------------------------------- another user of the machine


def test_everything_the_service_writes_is_private_whatever_the_umask(svc, tmp_path):
    r = upload(client(svc, svc.tokens["alice"]), tmp_path)
    assert r.status_code == 303, r.text  # a script's upload through the form route: accepted (header-signed)
    said = svc.log.read_text()
    assert "WARNING" in said and "could be read by other users" in said and "--new-key" in said, said
    found = list(svc.data.rglob("*"))
    assert any(p.suffix == ".py" for p in found) and any(p.name == "service.db" for p in found), found
    for p in (svc.data, *found):
        mode = stat.S_IMODE(p.lstat().st_mode)
        assert not mode & 0o077, (p, oct(mode))  # 0700 folders, 0600 files
    if os.getuid() == 0:  # and another user really cannot read them
        for p in (svc.data / "service.db", next(p for p in found if p.suffix == ".py")):
            code = f"import os; os.setgid(65534); os.setuid(65534); open({str(p)!r}, 'rb')"
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            assert r.returncode and "PermissionError" in r.stderr, (p, r.stderr[-500:])


# ---------------------------------------------------------------- a browser another site drives


def test_a_cookie_needs_its_forms_token_and_this_site_whatever_authorization_header_a_proxy_adds(svc, tmp_path):
    browser, csrf = signed_in(svc, "bob")
    before = count(svc, "bob")
    for headers in (
        {"Origin": EVIL, "Authorization": BASIC},
        {"Sec-Fetch-Site": "cross-site", "Authorization": BASIC},
        {"Origin": EVIL, "Authorization": BASIC, "Sec-Fetch-Site": "cross-site"},
    ):
        r = upload(browser, tmp_path, csrf, **headers)
        assert r.status_code == 403 and r.json()["error"] == "cross_site", (headers, r.text)
        r = browser.post("signout", data={"csrf": csrf}, headers=headers)
        assert r.status_code == 403, (headers, r.text)
    r = upload(browser, tmp_path, None, Authorization=BASIC)  # this site, no forms token
    assert r.status_code == 403 and r.json()["error"] == "csrf", r.text
    r = upload(browser, tmp_path, "é" + csrf[1:])  # a token that is not ASCII: refused, never an error
    assert r.status_code == 403 and r.json()["error"] == "csrf", r.text
    r = browser.post(
        "api/submissions",
        data={"assignment": "sequence-models"},
        files={"file": ("m.py", b"x = 1\n")},
        headers={"Authorization": BASIC, "Origin": svc.url[:-1]},
    )
    assert r.status_code == 403 and r.json()["error"] == "csrf", r.text
    assert count(svc, "bob") == before  # nothing was submitted, and bob is still signed in
    assert browser.get("api/me").json() == {"name": "bob", "role": "student"}
    # the same form from this site, with its token: accepted, whatever the proxy adds
    r = upload(browser, tmp_path, csrf, Authorization=BASIC, Origin=svc.url.rstrip("/"))
    assert r.status_code == 303, r.text
    assert count(svc, "bob") == before + 1
    # a script signed in by its own token needs no forms token, wherever it says it comes from
    script = client(svc, svc.tokens["bob"], Origin=EVIL)
    assert (
        script.post(
            "api/submissions",
            data={"assignment": "sequence-models"},
            files={"file": ("m.py", masks_submission(tmp_path).read_bytes())},
        ).status_code
        == 202
    )


def test_nobody_is_signed_in_by_another_sites_form(svc):
    for headers in ({"Origin": EVIL}, {"Sec-Fetch-Site": "cross-site"}):
        r = client(svc, **headers).post("signin", data={"token": svc.tokens["alice"], "next": "/"})
        assert r.status_code == 403 and "set-cookie" not in r.headers, (headers, r.text)


# ---------------------------------------------------------------- a copied cookie


def test_signing_out_ends_the_session_a_copied_cookie_carries(svc):
    browser, csrf = signed_in(svc, "alice")
    copy = client(svc)
    copy.cookies = httpx.Cookies(browser.cookies)
    assert copy.get("api/me").json()["name"] == "alice"
    other, _ = signed_in(svc, "alice")  # alice on another computer
    r = browser.post("signout", data={"csrf": csrf})
    assert r.status_code == 303 and r.headers["location"].endswith("/signin")
    r = copy.get("api/me")
    assert r.status_code == 401 and r.json()["error"] == "not_signed_in", r.text
    assert copy.get("upload").status_code == 303  # a page: to the sign-in page
    assert other.get("api/me").json()["name"] == "alice"  # only that browser signed out


# ---------------------------------------------------------------- a cookie tampered with, too old, of another purpose


def _payload(value):
    """What a signed cookie carries: readable by anyone (it is signed, not secret)."""
    valid, payload = itsdangerous.URLSafeTimedSerializer(b"not the key").loads_unsafe(value)
    assert not valid and isinstance(payload, dict), value
    return payload


def _flipped(value):
    """`value` with one character changed in the middle of each of its parts (payload, time,
    signature): never in a part's last character, whose spare bits base64 ignores."""
    parts = value.split(".")
    out = []
    for i, part in enumerate(parts):
        if len(part) > 1:
            j = len(part) // 2
            out.append(
                ".".join(parts[:i] + [part[:j] + ("A" if part[j] != "A" else "B") + part[j + 1 :]] + parts[i + 1 :])
            )
    assert len(out) == 3, value
    return out


GARBAGE = ["", ".", "..", "...", "a.b.c", "x" * 4000, "é.é.é", "%00", '"quoted"', "e30.AAAAAA.AAAA", "!!.!!.!!"]


def _signed_at(monkeypatch, serializer, payload, when=None):
    """`payload` signed by `serializer` as at the time `when` (default: now)."""
    with monkeypatch.context() as m:
        if when is not None:
            m.setattr(itsdangerous.timed, "time", types.SimpleNamespace(time=lambda: when))
        return serializer.dumps(payload)


def _service_key(svc):
    from autograder.service import database

    engine = database.make_engine(database.sqlite_url(svc.data))
    try:
        return bytes.fromhex(database.secret(engine))
    finally:
        engine.dispose()


def test_a_sign_in_cookie_tampered_with_cut_short_too_old_or_of_another_purpose_is_nobodys(svc, monkeypatch):
    from autograder.service import hub
    from autograder.service.auth import COOKIE, COOKIE_DAYS, SIGNIN_SALT, signed

    alice, _ = signed_in(svc, "alice")
    bob, _ = signed_in(svc, "bob")
    real = alice.cookies[COOKIE]
    mine = _payload(real)
    assert set(mine) == {"name", "gen", "nonce"} and mine["name"] == "alice", mine
    key = _service_key(svc)
    now = time.time()
    right = signed(key, SIGNIN_SALT)

    def me(value):
        return client(svc, Cookie=f"{COOKIE}={value}".encode()).get("api/me")

    # a cookie made as the service makes it is accepted: the refusals below are the changes' doing
    for accepted in (
        real,
        _signed_at(monkeypatch, right, mine),
        _signed_at(monkeypatch, right, mine, now - COOKIE_DAYS * 86400 + 3600),
    ):
        assert me(accepted).json() == {"name": "alice", "role": "student"}
    refused = {
        **{f"tampered {i}": v for i, v in enumerate(_flipped(real))},
        "cut short": real[:-1],
        "no signature": real.rsplit(".", 1)[0],
        "payload only": real.split(".", 1)[0],
        "bob's payload, alice's signature": bob.cookies[COOKIE].split(".")[0] + "." + real.split(".", 1)[1],
        "too old": _signed_at(monkeypatch, right, mine, now - COOKIE_DAYS * 86400 - 60),
        "another key": signed(os.urandom(32), SIGNIN_SALT).dumps(mine),
        "the OAuth state cookie's salt": signed(key, hub.STATE_SALT).dumps(mine),
        "the hub sign-in cookie's salt": signed(key, hub.SIGNIN_SALT).dumps(mine),
        "another name on alice's session": right.dumps({**mine, "name": "bob"}),
        "an older generation": right.dumps({**mine, "gen": mine["gen"] - 1}),
        "no session": right.dumps({**mine, "nonce": os.urandom(16).hex()}),
        "not a dict": right.dumps(["alice", mine["gen"], mine["nonce"]]),
        **{f"garbage {g[:10]!r}": g for g in GARBAGE},
    }
    for what, value in refused.items():
        r = me(value)
        assert r.status_code == 401 and r.json()["error"] == "not_signed_in", (what, r.status_code, r.text)
        page = client(svc, Cookie=f"{COOKIE}={value}".encode()).get("upload")
        assert page.status_code == 303 and "/signin" in page.headers["location"], (what, page.status_code, page.text)
    assert alice.get("api/me").json()["name"] == "alice"  # the real one still signs alice in


def _request(cookies=None, method="GET"):
    from starlette.requests import Request

    headers = [(b"host", b"127.0.0.1:8000")]
    if cookies:
        headers.append((b"cookie", "; ".join(f"{k}={v}" for k, v in cookies.items()).encode()))
    scope = {
        "type": "http",
        "method": method,
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "path": "/services/seqgrader/",
        "root_path": "",
        "query_string": b"",
        "headers": headers,
    }
    return Request(scope)


def _set_cookie(response, name):
    """(value, the whole Set-Cookie header) of the cookie `name` a response sets."""
    for header in response.headers.getlist("set-cookie"):
        if header.split("=", 1)[0] == name and not header.startswith(f'{name}="";'):
            return header.split(";")[0].split("=", 1)[1].strip('"'), header
    raise AssertionError(f"no cookie {name}: {response.headers.getlist('set-cookie')}")


@pytest.fixture
def lone_hub(tmp_path, monkeypatch):
    """The JupyterHub mode's authenticator with a database of its own and no hub: the hub's
    answers (a code's token, who a token is) are stood in for and counted."""
    from autograder.service import database
    from autograder.service.hub import Hub

    monkeypatch.setenv("JUPYTERHUB_API_URL", f"http://127.0.0.1:{free_port()}/hub/api")
    engine = database.make_engine(database.sqlite_url(tmp_path))
    database.migrate(engine)
    hub = Hub(base_url="/services/seqgrader/", engine=engine, api_token="the-service-token")
    hub.asked = []

    async def identify(token, request, use_cache=True):
        hub.asked.append(token)
        return {"kind": "user", "name": "alice", "admin": False, "groups": []}

    async def token_for_code(code, code_verifier=None, sync=True):
        assert code == "the-code" and code_verifier
        return "alices-hub-token"

    monkeypatch.setattr(hub, "_identify", identify)
    monkeypatch.setattr(hub.auth, "token_for_code", token_for_code)
    yield hub
    engine.dispose()


def test_the_hub_cookies_are_refused_tampered_too_old_of_another_purpose_or_after_signing_out(lone_hub, monkeypatch):
    from starlette.responses import Response

    from autograder.errors import ServiceError
    from autograder.service import auth
    from autograder.service.hub import COOKIE_MAX_AGE, SIGNIN_SALT, STATE_MAX_AGE, STATE_SALT, Hub

    hub = lone_hub
    login = asyncio.run(hub.oauth_login(_request(), next="/services/seqgrader/upload"))
    state_cookie, header = _set_cookie(login, hub.state_cookie_name)
    for attribute in ("httponly", "samesite=lax", "path=/services/seqgrader/", f"max-age={STATE_MAX_AGE}"):
        assert attribute in header.lower(), header
    assert "secure" not in header.lower()  # http here; https (as a believed proxy says) adds it
    state = urllib.parse.parse_qs(urllib.parse.urlsplit(login.headers["location"]).query)["state"][0]
    assert _payload(state_cookie)["state"] == state

    def callback(cookie, sent_state=state):
        request = _request({hub.state_cookie_name: cookie})
        return asyncio.run(hub.oauth_callback(request, code="the-code", state=sent_state))

    back = callback(state_cookie)
    assert back.status_code == 303 and back.headers["location"] == "/services/seqgrader/upload"
    signin_cookie, header = _set_cookie(back, hub.cookie_name)
    for attribute in ("httponly", "samesite=lax", "path=/services/seqgrader/", f"max-age={COOKIE_MAX_AGE}"):
        assert attribute in header.lower(), header
    kept = _payload(signin_cookie)
    assert kept["token"] == "alices-hub-token" and kept["nonce"], kept

    def who(cookie, name=hub.cookie_name):
        return asyncio.run(hub.user(_request({name: cookie})))

    hub.asked.clear()
    alice = who(signin_cookie)
    assert (alice.name, alice.via, alice.nonce) == ("alice", "hub-cookie", kept["nonce"])
    assert hub.asked == ["alices-hub-token"]
    key = hub._signin_cookies.secret_keys[-1]
    now = time.time()
    other = Hub(base_url="/services/seqgrader/", engine=hub.engine, api_token="another-service-token")
    hub_signed = auth.signed(key, SIGNIN_SALT)
    assert who(_signed_at(monkeypatch, hub_signed, kept, now - COOKIE_MAX_AGE + 3600)).name == "alice"

    # the sign-in cookie: each refused before the hub is asked anything
    hub.asked.clear()
    refused = {
        **{f"tampered {i}": v for i, v in enumerate(_flipped(signin_cookie))},
        "cut short": signin_cookie[:-1],
        "no signature": signin_cookie.rsplit(".", 1)[0],
        "the state cookie as the sign-in cookie": state_cookie,
        "another service's key": other._signin_cookies.dumps(kept),
        "the state cookie's salt": auth.signed(key, STATE_SALT).dumps(kept),
        "the roster sign-in cookie's salt": auth.signed(key, auth.SIGNIN_SALT).dumps(kept),
        "too old": _signed_at(monkeypatch, hub_signed, kept, now - COOKIE_MAX_AGE - 60),
        "no session": hub_signed.dumps({**kept, "nonce": os.urandom(16).hex()}),
        "no nonce": hub_signed.dumps({"token": kept["token"]}),
        "a token that is no string": hub_signed.dumps({**kept, "token": ["alices-hub-token"]}),
        **{f"garbage {g[:10]!r}": g for g in GARBAGE},
    }
    for what, value in refused.items():
        assert who(value) is None, what
    assert hub.asked == []
    roster = auth.Roster(hub.engine)  # and neither hub cookie is the roster mode's sign-in cookie
    assert roster.from_cookie(signin_cookie) is None and roster.from_cookie(state_cookie) is None

    # the state cookie: the callback refuses all but the one this browser left with, unchanged, in time
    state_signed = auth.signed(key, STATE_SALT)
    mine = _payload(state_cookie)
    refused = {
        **{f"tampered {i}": (v, state) for i, v in enumerate(_flipped(state_cookie))},
        "the sign-in cookie as the state cookie": (signin_cookie, state),
        "another service's key": (other._state_cookies.dumps(mine), state),
        "the sign-in cookie's salt": (hub_signed.dumps(mine), state),
        "too old": (_signed_at(monkeypatch, state_signed, mine, now - STATE_MAX_AGE - 60), state),
        "another state": (state_cookie, state + "x"),
        "a state that is not ASCII": (state_cookie, "é" + state[1:]),
        **{f"garbage {g[:10]!r}": (g, state) for g in GARBAGE},
    }
    for what, (value, sent) in refused.items():
        with pytest.raises(ServiceError) as e:
            callback(value, sent)
        assert (e.value.status, e.value.code) == (403, "oauth_state"), what
    assert callback(_signed_at(monkeypatch, state_signed, mine, now - STATE_MAX_AGE + 60)).status_code == 303

    # signing out ends the session: a copy of the cookie is nobody's, the hub not asked
    copy = signin_cookie
    out = Response()
    hub.logout(_request({hub.cookie_name: signin_cookie}), out)
    assert any(h.startswith(f'{hub.cookie_name}="";') for h in out.headers.getlist("set-cookie"))
    hub.asked.clear()
    assert who(copy) is None and hub.asked == []


def test_a_browser_behind_a_password_proxy_is_not_taken_for_a_token_guesser(svc):
    anon = client(svc, Authorization=BASIC)  # signed out, behind a proxy that asks for a password
    for _ in range(15):
        r = anon.get("api/me")
        assert r.status_code == 401 and r.json()["error"] == "not_signed_in", r.text


def test_signing_in_again_and_again_keeps_only_the_newest_browsers(svc):
    from autograder.service.database import MAX_SESSIONS

    first, _ = signed_in(svc, "alice")
    for _ in range(MAX_SESSIONS):
        signed_in(svc, "alice")
    assert first.get("api/me").status_code == 401
    newest, _ = signed_in(svc, "alice")
    assert newest.get("api/me").json()["name"] == "alice"


# ---------------------------------------------------------------- forwarded headers, slow clients, limits


def test_x_forwarded_for_is_nobodys_word_unless_a_proxy_is_named(tmp_path):
    roster = write_roster(tmp_path / "roster.csv")
    for proxy, stopped in (((), True), (("--forwarded-allow-ips", "127.0.0.1"), False)):
        data = tmp_path / f"data{len(proxy)}"
        tokens(roster, data)
        with serve("--roster", roster, "--workers", 0, *proxy, data=data) as (url, _, log):
            statuses = []
            for i in range(12):  # a local process writing a new address each time
                r = httpx.get(
                    url + "api/me", headers={"Authorization": "Bearer wrong", "X-Forwarded-For": f"203.0.113.{i}"}
                )
                statuses.append(r.status_code)
            assert (429 in statuses) == stopped, (proxy, statuses)
            assert ("believing X-Forwarded-*" in log.read_text()) == bool(proxy)


def _raw(svc):
    u = urllib.parse.urlsplit(svc.url)
    s = socket.create_connection((u.hostname, u.port), timeout=10)
    return s


def _read_all(s, limit=30):
    s.settimeout(limit)
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except (TimeoutError, ConnectionResetError):
            break
        if not chunk:
            break
        out += chunk
    return out


def test_a_client_that_sends_slowly_is_cut_off_and_the_service_keeps_answering(svc):
    path = urllib.parse.urlsplit(svc.url).path
    # headers that never end, a byte now and then
    s, t = _raw(svc), time.monotonic()
    s.sendall(f"GET {path}healthz HTTP/1.1\r\nHost: x\r\n".encode())
    for _ in range(3):
        time.sleep(0.4)
        s.sendall(b"X-Slow: 1\r\n")
    answer = _read_all(s)
    took = time.monotonic() - t
    assert answer.startswith(b"HTTP/1.1 408") and b"no-store" in answer and b"nosniff" in answer, answer[:300]
    assert 1.4 <= took < 6, took
    # a connection that says nothing
    s, t = _raw(svc), time.monotonic()
    assert _read_all(s).startswith(b"HTTP/1.1 408") and time.monotonic() - t < 6
    # an upload trickled in by a signed-in script: closed after the body's time, nothing accepted
    who = "bob"
    before = count(svc, who)
    s, t = _raw(svc), time.monotonic()
    s.sendall(
        (
            f"POST {path}api/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {svc.tokens[who]}\r\n"
            f"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n"
        ).encode()
    )
    closed = False
    while time.monotonic() - t < 10:
        try:
            s.sendall(b"x" * 50)
        except (BrokenPipeError, ConnectionResetError):
            closed = True
            break
        s.settimeout(0.3)
        try:
            if s.recv(65536) == b"":
                closed = True
                break
        except TimeoutError:
            pass
        except ConnectionResetError:
            closed = True
            break
    took = time.monotonic() - t
    assert closed and 1.9 <= took < 6, (closed, took)
    assert count(svc, who) == before
    assert httpx.get(svc.url + "healthz").status_code == 200


def test_connections_past_the_limit_are_refused_at_once_and_the_limit_frees(svc):
    held = [_raw(svc) for _ in range(8)]
    try:
        s = _raw(svc)
        answer = _read_all(s, 5)
        assert answer.startswith(b"HTTP/1.1 503") and b"Content-Security-Policy" in answer and b"no-store" in answer, (
            answer
        )
    finally:
        for h in held:
            h.close()
    time.sleep(0.3)
    assert httpx.get(svc.url + "healthz").status_code == 200
    answer = _read_all(_send(svc, b"NOT HTTP AT ALL\r\n\r\n"), 5)
    assert answer.startswith(b"HTTP/1.1 400") and b"nosniff" in answer, answer


def test_a_client_that_does_not_read_its_answers_is_cut_off(svc):
    u = urllib.parse.urlsplit(svc.url)
    path = u.path
    s = socket.create_connection((u.hostname, u.port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a client whose buffers fill at once
    s.settimeout(5)
    n = 20000  # answers far beyond what the kernel's buffers hold
    try:
        s.sendall(f"GET {path}healthz HTTP/1.1\r\nHost: x\r\n\r\n".encode() * n)  # and never read
    except TimeoutError:
        pass
    time.sleep(5)
    answers = _read_all(s, 10).count(b"HTTP/1.1 200")
    assert 0 < answers < n, answers  # closed while it did not read
    assert httpx.get(svc.url + "healthz").status_code == 200


def _send(svc, data):
    s = _raw(svc)
    s.sendall(data)
    return s


# ---------------------------------------------------------------- headers, errors, pages


def test_every_private_answer_and_every_refusal_carries_no_store_and_the_security_headers(svc):
    teacher = client(svc, svc.tokens["teacher"])
    answers = {
        "export": teacher.get("instructor/export.csv"),
        "page": teacher.get("instructor"),
        "redirect": client(svc).get("upload"),
        "401": client(svc).get("api/me"),
        "404": teacher.get("api/submissions/nope"),
        "405": teacher.put("api/me"),
    }
    path = urllib.parse.urlsplit(svc.url).path
    raw = _read_all(
        _send(
            svc,
            (
                f"POST {path}api/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                f"{svc.tokens['alice']}\r\nContent-Type: multipart/form-data; boundary=b\r\n"
                f"Content-Length: {1 << 30}\r\n\r\nxx"
            ).encode(),
        ),
        10,
    )
    head = raw.split(b"\r\n\r\n", 1)[0].decode().lower()
    assert head.startswith("http/1.1 413"), head  # refused before anything reads the body
    assert answers["export"].status_code == 200
    for what, r in answers.items():
        for header, value in (
            ("cache-control", "no-store"),
            ("x-content-type-options", "nosniff"),
            ("content-security-policy", "default-src 'none'"),
            ("x-frame-options", "DENY"),
        ):
            assert value in r.headers.get(header, ""), (what, r.status_code, dict(r.headers))
            assert f"{header}: {value.lower()}" in head, (header, head)


def test_no_page_shows_a_path_of_the_server(svc):
    teacher = client(svc, svc.tokens["teacher"])
    secret_paths = {str(svc.data), str(svc.data.resolve()), str(svc.where), str(ROOT)}
    for page in ("instructor", "instructor/dashboard", "submissions", "upload", "api/submissions", "healthz"):
        r = teacher.get(page)
        assert r.status_code == 200, (page, r.status_code)
        for p in secret_paths:
            assert p not in r.text, (page, p)


def test_one_next_rule_for_every_sign_in():
    from autograder.service.auth import safe_next

    base = "/services/seqgrader/"
    kept = ["/services/seqgrader/", "/services/seqgrader/upload", "/services/seqgrader/submissions?student=a%20b"]
    refused = [
        "https://evil.example/",
        "//evil.example/",
        "/services/seqgrader/../../hub/x",
        "/services/seqgrader/%2e%2e/%2e%2e/hub/x",
        "/services/seqgrader/%252e%252e/hub",
        "/services/seqgrader/./x",
        "/services/seqgrader/..",
        "/services/seqgrader//evil.example",
        "/services/seqgrader/\\evil",
        "/services/seqgrader/%5cevil",
        "/services/seqgrader/x\r\nSet-Cookie: a=b",
        "/hub/admin",
        "",
        "javascript:alert(1)",
        "/services/seqgraderx/",
        "/services/seqgrader/%0d%0a",
    ]
    for v in kept:
        assert safe_next(base, v) == v, v
    for v in refused:
        assert safe_next(base, v) == base, v


def test_a_hub_that_does_not_answer_shows_none_of_its_internals_and_next_stays_on_the_service(tmp_path):
    port = free_port()
    env = {
        "JUPYTERHUB_API_TOKEN": "the-service-token",
        "JUPYTERHUB_API_URL": f"http://127.0.0.1:{port}/hub/api",
        "JUPYTERHUB_SERVICE_PREFIX": "/services/seqgrader/",
        "JUPYTERHUB_CLIENT_ID": "service-seqgrader",
    }
    with serve("--base-url", "/services/seqgrader/", "--workers", 0, data=tmp_path / "data", env=env) as (url, _, log):
        r = httpx.get(url + "api/me", headers={"Authorization": "token someone"})
        assert r.status_code == 502 and r.json()["error"] == "hub_unavailable", r.text
        for internal in (str(port), "127.0.0.1", "hub/api", socket.gethostname(), "Connection refused", "Errno"):
            assert internal not in r.text, (internal, r.text)
        assert "JupyterHub" in log.read_text()  # the instructor's log says what failed
        # the OAuth state cookie sent as the sign-in cookie is nobody's: refused before the hub is asked
        state_cookie = httpx.get(url + "oauth_login", follow_redirects=False).cookies["service-seqgrader-oauth-state"]
        r = httpx.get(url + "api/me", headers={"Cookie": f"service-seqgrader={state_cookie}"})
        assert r.status_code == 401 and r.json()["error"] == "not_signed_in", r.text
        for asked in ("/services/seqgrader/../../hub/x", "/services/seqgrader/%2e%2e/%2e%2e/hub/x"):
            r = httpx.get(url + "oauth_login", params={"next": asked}, follow_redirects=False)
            assert r.status_code == 302
            value = r.headers["set-cookie"].split(";")[0].split("=", 1)[1].strip('"')
            state = _payload(value)
            assert state["next"] == "/services/seqgrader/", (asked, state)


# ---------------------------------------------------------------- a new token, a new key (last: they change the tokens)


def test_a_new_token_or_a_new_key_signs_out_every_copy_of_the_old_sign_in(svc):
    alice, _ = signed_in(svc, "alice")
    bob, _ = signed_in(svc, "bob")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "tokens",
            "--roster",
            str(svc.roster),
            "--data",
            str(svc.data),
            "--rotate",
            "alice",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    fresh = dict(line.split(",", 1) for line in done.stdout.split())
    assert alice.get("api/me").status_code == 401 and bob.get("api/me").status_code == 200
    assert client(svc, svc.tokens["alice"]).get("api/me").status_code == 401
    assert client(svc, fresh["alice"]).get("api/me").json()["name"] == "alice"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "tokens",
            "--roster",
            str(svc.roster),
            "--data",
            str(svc.data),
            "--new-key",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    newest = dict(line.split(",", 1) for line in done.stdout.split())
    assert all(newest[p] != fresh[p] for p in newest)
    assert bob.get("api/me").status_code == 401  # every browser signed out
    for p in newest:
        assert client(svc, fresh[p]).get("api/me").status_code in (401, 429)
    svc.tokens.update(newest)
