"""`seqgrader serve` as a JupyterHub service: a real JupyterHub (tests/servers.py) with two students
and an instructor starts the service itself (JUPYTERHUB_API_TOKEN set: hub sign-in), and people
reach it through the hub's proxy at /services/seqgrader/ with their own JupyterHub API tokens
(`Authorization: token ...`, as a notebook sends JUPYTERHUB_API_TOKEN).  A student sees only their
own submissions, the instructor (a member of the hub's group `instructors`) everyone's, and the
kit's submit.py finds the service from the hub's environment."""

import re
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from autograder.nbgrader_course.build import KIT_SUBMIT

from .conftest import ROOT
from .servers import call, jupyterhub, masks_submission, wait_graded, wait_http

ASSIGNMENT = "sequence-models"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    data = tmp_path_factory.mktemp("hub-service")
    cmd = [sys.executable, "-m", "autograder", "serve", "--data", str(data), "--workers", "1"]
    with jupyterhub(cmd, cwd=ROOT) as h:
        try:
            wait_http(h.service_url + "healthz", timeout=120)  # the hub starts the service and routes to it
        except RuntimeError as e:
            raise RuntimeError(f"{e}\n{h.log()}") from None
        h.tokens = {u: h.token(u) for u in ("alice", "bob", "teacher")}
        yield h


def auth(hub, user):
    return f"token {hub.tokens[user]}"


def test_each_hub_user_is_known_with_their_role_and_nobody_else_is(hub):
    for user, role in (("alice", "student"), ("bob", "student"), ("teacher", "instructor")):
        status, me, _ = call("GET", hub.service_url + "api/me", auth(hub, user))
        assert (status, me) == (200, {"name": user, "role": role})
    for header in (None, "token not-a-token", f"token {hub.tokens['alice']}x"):
        status, answer, _ = call("GET", hub.service_url + "api/me", header)
        assert status == 401 and answer["error"] == "not_signed_in" and answer["message"], (header, answer)
        if header is None:  # what to do under a hub: its token, not a roster's
            assert "JUPYTERHUB_API_TOKEN" in answer["message"] and "Bearer YOUR_TOKEN" not in answer["message"]
    # a token of alice's that may not use the service (no access:services scope) is nobody's
    narrow = hub.request("POST", "users/alice/tokens", {"scopes": ["read:users:name!user=alice"]})["token"]
    status, answer, _ = call("GET", hub.service_url + "api/me", f"token {narrow}")
    assert status == 401, answer


def test_students_see_their_own_submissions_and_the_instructor_sees_both(hub, tmp_path):
    sent = {}
    for user, bad in (("alice", False), ("bob", True)):
        f = masks_submission(tmp_path, f"{user}.py", without_diagonal=bad)
        status, view, _ = call(
            "POST", hub.service_url + "api/submissions", auth(hub, user), file=f, fields={"assignment": ASSIGNMENT}
        )
        assert status == 202 and view["status"] == "queued", view
        sent[user] = view["id"]
    for user, other in (("alice", "bob"), ("bob", "alice")):
        status, answer, _ = call("GET", f"{hub.service_url}api/submissions/{sent[other]}", auth(hub, user))
        assert status == 404 and answer["error"] == "not_found", answer
        status, _, _ = call("GET", f"{hub.service_url}api/submissions/{sent[other]}/report", auth(hub, user))
        assert status == 404
        status, mine, _ = call("GET", f"{hub.service_url}api/submissions?assignment={ASSIGNMENT}", auth(hub, user))
        assert status == 200 and {s["id"] for s in mine["submissions"]} == {sent[user]}
    status, everyone, _ = call("GET", f"{hub.service_url}api/submissions?assignment={ASSIGNMENT}", auth(hub, "teacher"))
    assert status == 200 and {sent["alice"], sent["bob"]} <= {s["id"] for s in everyone["submissions"]}
    done = wait_graded(hub.service_url, auth(hub, "teacher"), list(sent.values()))
    assert done[sent["alice"]]["status"] == done[sent["bob"]]["status"] == "graded"
    assert done[sent["alice"]]["score"] > done[sent["bob"]]["score"] > 0
    assert {done[sent[u]]["student"] for u in sent} == {"alice", "bob"}


def test_the_kit_submit_script_finds_the_service_under_jupyterhub(hub, tmp_path):
    (tmp_path / "submit.py").write_bytes(KIT_SUBMIT.read_bytes())
    work = masks_submission(tmp_path, "masks.py", without_diagonal=True)
    env = {
        "PATH": "/usr/bin:/bin",
        "JUPYTERHUB_API_TOKEN": hub.tokens["bob"],
        "JUPYTERHUB_PUBLIC_URL": hub.url,
        "JUPYTERHUB_BASE_URL": "/",
    }
    r = subprocess.run(
        [sys.executable, "-I", "submit.py", work.name, "--assignment", ASSIGNMENT],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert f"[JupyterHub: {hub.service_url}]" in out
    assert "总分 / Score:" in out and "要修改的地方 / What to fix" in out, out
    assert "causal_mask" in out and "diagonal" in out, out
    assert f"{hub.service_url}submissions/" in out
    status, mine, _ = call("GET", f"{hub.service_url}api/submissions", auth(hub, "bob"))
    assert status == 200 and any(s["file"] == "masks.py" and s["status"] == "graded" for s in mine["submissions"]), mine


def _oauth_sign_in(hub, user):
    """JupyterHub's login form and the OAuth round trip, as a browser without JavaScript does it:
    returns the cookie jar's opener, signed in to the service."""
    import http.cookiejar
    import urllib.parse

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    r = opener.open(urllib.request.Request(hub.service_url + "upload", headers={"Accept": "text/html"}))
    assert r.url.startswith(hub.url + "hub/login"), r.url
    html = r.read().decode()
    form = {"username": user, "password": hub.password}
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', html)
    if xsrf:
        form["_xsrf"] = xsrf.group(1)
    action = re.search(r'<form action="([^"]+)"', html).group(1).replace("&amp;", "&")
    r = opener.open(urllib.parse.urljoin(r.url, action), urllib.parse.urlencode(form).encode())
    assert r.url == hub.service_url + "upload", r.url
    return opener, jar


def test_the_oauth_cookie_signs_in_and_counts_only_for_this_site(hub, tmp_path):
    from autograder.nbgrader_course.kit_submit import multipart

    opener, jar = _oauth_sign_in(hub, "alice")
    assert any(
        c.name == "service-seqgrader" and c.path == "/services/seqgrader/" and c.has_nonstandard_attr("HttpOnly")
        for c in jar
    ), [(c.name, c.path) for c in jar]
    me = opener.open(hub.service_url + "api/me")
    assert me.status == 200 and b'"alice"' in me.read()
    body, ctype = multipart({"assignment": ASSIGNMENT}, "file", masks_submission(tmp_path, "masks.py"))

    def post(headers):
        req = urllib.request.Request(
            hub.service_url + "api/submissions", data=body, method="POST", headers={"Content-Type": ctype, **headers}
        )
        try:
            return opener.open(req).status
        except urllib.error.HTTPError as e:
            return e.code

    # another site's page making alice's browser send a submission: the cookie does not count
    assert post({"Sec-Fetch-Site": "cross-site"}) == 401
    assert post({"Origin": "http://evil.example"}) == 401
    # from the service's own page: with the page's forms token (as the upload form sends it)
    same_site = {"Sec-Fetch-Site": "same-origin", "Origin": hub.url.rstrip("/")}
    assert post(same_site) == 403
    page = opener.open(hub.service_url + "upload").read().decode()
    forms_token = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    assert post({**same_site, "X-CSRF-Token": forms_token}) == 202
    # a callback that does not carry the state this browser left with is refused
    try:
        opener.open(hub.service_url + "oauth_callback?code=forged&state=forged")
        raise AssertionError("a forged callback was accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 403 and b"oauth_state" in e.read()


def test_the_sign_in_leaves_for_the_hub_with_a_state_and_pkce_and_never_returns_elsewhere(hub):
    import urllib.parse

    from itsdangerous import URLSafeTimedSerializer

    from .servers import _NoRedirect

    opener = urllib.request.build_opener(_NoRedirect)
    for asked, kept in (
        ("/services/seqgrader/upload", "/services/seqgrader/upload"),
        ("https://evil.example/", "/services/seqgrader/"),
        ("//evil.example/x", "/services/seqgrader/"),
        ("/hub/admin", "/services/seqgrader/"),
    ):
        url = hub.service_url + "oauth_login?" + urllib.parse.urlencode({"next": asked})
        try:
            opener.open(url)
            raise AssertionError("no redirect")
        except urllib.error.HTTPError as e:
            assert e.code == 302
            where, cookie = e.headers["Location"], e.headers["Set-Cookie"]
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(where).query)
        assert where.startswith("/hub/api/oauth2/authorize?") and query["client_id"] == ["service-seqgrader"]
        assert query["code_challenge_method"] == ["S256"] and query["redirect_uri"] == [
            "/services/seqgrader/oauth_callback"
        ]
        name, value = cookie.split(";")[0].split("=", 1)
        assert (
            name == "service-seqgrader-oauth-state" and "HttpOnly" in cookie and "Path=/services/seqgrader/" in cookie
        )
        valid, state = URLSafeTimedSerializer(b"not the key").loads_unsafe(value.strip('"'))  # signed, not secret
        assert not valid and set(state) == {"state", "next", "verifier"}, state
        assert state["state"] == query["state"][0] and state["next"] == kept, (asked, state)


def test_signing_out_ends_the_session_a_copied_hub_cookie_carries_and_no_changed_cookie_signs_in(hub):
    import urllib.parse

    from .servers import _NoRedirect

    opener, jar = _oauth_sign_in(hub, "bob")
    real = next(c.value for c in jar if c.name == "service-seqgrader")

    def me(value, name="service-seqgrader"):
        req = urllib.request.Request(hub.service_url + "api/me", headers={"Cookie": f"{name}={value}"})
        try:
            with urllib.request.urlopen(req) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    status, said = me(real)  # a copy of bob's cookie, in another browser
    assert status == 200 and '"bob"' in said, said
    try:
        urllib.request.build_opener(_NoRedirect).open(hub.service_url + "oauth_login")
        raise AssertionError("no redirect")
    except urllib.error.HTTPError as e:
        state_cookie = e.headers["Set-Cookie"].split(";")[0].split("=", 1)[1].strip('"')
    j = len(real) // 3
    for what, value in (
        ("tampered", real[:j] + ("A" if real[j] != "A" else "B") + real[j + 1 :]),
        ("cut short", real.rsplit(".", 1)[0]),
        ("the OAuth state cookie", state_cookie),
        ("garbage", "x.y.z"),
    ):
        status, said = me(value)
        assert status == 401 and '"not_signed_in"' in said, (what, status, said)
    # bob signs out on the service's page (a form with its token), leaving the redirect to the hub's sign-out
    page = opener.open(hub.service_url + "upload").read().decode()
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    leave = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect)
    try:
        leave.open(
            urllib.request.Request(
                hub.service_url + "signout",
                data=urllib.parse.urlencode({"csrf": csrf}).encode(),
                headers={"Origin": hub.url.rstrip("/")},
            )
        )
        raise AssertionError("no redirect")
    except urllib.error.HTTPError as e:
        assert e.code == 303 and e.headers["Location"].endswith("/hub/logout"), (e.code, e.headers["Location"])
        assert any(h.startswith('service-seqgrader="";') for h in e.headers.get_all("Set-Cookie")), e.headers
    status, said = me(real)
    assert status == 401 and '"not_signed_in"' in said, said  # the copy is nobody's now


def test_a_hub_that_does_not_answer_is_said_so_and_nobody_is_signed_in(tmp_path):
    from .servers import free_port, serve

    env = {
        "JUPYTERHUB_API_TOKEN": "the-service-token",
        "JUPYTERHUB_API_URL": f"http://127.0.0.1:{free_port()}/hub/api",
        "JUPYTERHUB_SERVICE_PREFIX": "/services/seqgrader/",
        "JUPYTERHUB_CLIENT_ID": "service-seqgrader",
    }
    with serve("--base-url", "/services/seqgrader/", "--workers", 0, data=tmp_path / "data", env=env) as (url, _, _):
        status, answer, _ = call("GET", url + "api/me", "token someone")
        assert status == 502 and answer["error"] == "hub_unavailable", answer
        assert "JupyterHub" in answer["message"] and "try again" in answer["message"]
        status, answer, _ = call("GET", url + "api/me")  # no token, no cookie: not signed in, the hub not asked
        assert status == 401 and answer["error"] == "not_signed_in"
