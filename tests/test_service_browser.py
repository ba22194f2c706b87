"""The service in a real browser (Debian's Chromium over the DevTools pipe, tests/chromium.py), as
students and an instructor use it: sign in (with a roster token on the service's sign-in page, and
through JupyterHub's own login form and OAuth), upload a notebook on the upload page, watch its
status page turn into the report, read the report; a student who opens another student's report
gets nothing of it.  Each person browses in a browser context of their own (their own cookies).

The screenshots are kept in out/service-browser/ (CI keeps out/ as its artifacts)."""

import sys
import time

import nbformat
import pytest

from .chromium import Chromium, ChromiumError
from .conftest import ROOT
from .servers import MASKS, jupyterhub, serve, tokens, wait_http, write_roster

OUT = ROOT / "out" / "service-browser"
ASSIGNMENT = "sequence-models"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    OUT.mkdir(parents=True, exist_ok=True)
    with Chromium(tmp_path_factory.mktemp("chromium-profile")) as b:
        yield b


def notebook(folder, name, without_diagonal=False):
    """A student's notebook: the masks exercise done (or with the diagonal missing)."""
    code = MASKS.replace(".tril()", ".tril(-1)") if without_diagonal else MASKS
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# 掩码 Masks"), nbformat.v4.new_code_cell(code)]
    )
    path = folder / name
    nbformat.write(nb, str(path))
    return path


def wait_for(page, expression, timeout=300, reload=False):
    """Poll `expression` in the page (which may be loading) until it is true; `reload`: follow the
    page's own "reload this page" link between two polls, as a student waiting for a report does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if page.eval(expression):
                return
            if reload and page.eval("document.querySelector('#reload') !== null"):
                page.act("document.querySelector('#reload').click()")
        except ChromiumError:  # the page was between two loads
            pass
        time.sleep(0.5)
    raise AssertionError(f"{expression} did not become true within {timeout} s on {page.url()}:\n{page.text()[:2000]}")


def upload_and_read_report(page, base, path, shots):
    """On the upload page: choose the assignment and the file, send; reload the status page until the
    report is there.  Returns the report page's text."""
    page.goto(base + "upload")
    assert page.url() == base + "upload", page.url()
    page.eval(f"document.querySelector('#assignment').value = {ASSIGNMENT!r}")
    page.set_file("#file", path)
    page.screenshot(OUT / f"{shots}-upload.png")
    page.act("document.querySelector('form[action$=\"upload\"]').submit()")
    assert "/submissions/" in page.url(), (page.url(), page.text()[:1000])
    page.screenshot(OUT / f"{shots}-status.png")
    wait_for(page, "document.querySelector('#scores') !== null", reload=True)
    page.eval("document.fonts.ready.then(() => true)")
    page.screenshot(OUT / f"{shots}-report.png")
    return page.text()


def assert_not_shown(page, url, secret):
    page.goto(url)
    text = page.text()
    assert "not_found" in text and "There is no such page or submission" in text, text[:1000]
    assert secret not in text and page.eval("document.querySelector('#scores') === null")


def test_roster_sign_in_upload_status_and_report_in_chromium(browser, tmp_path):
    data = tmp_path / "data"
    roster = write_roster(tmp_path / "roster.csv")
    tok = tokens(roster, data)
    with serve("--roster", roster, "--workers", 1, data=data) as (base, _, _):
        reports = {}
        for student, bad in (("alice", False), ("bob", True)):
            page = browser.open_url(base + "upload", context=browser.new_context())
            # not signed in: the sign-in page, which comes back to the upload page afterwards
            assert page.url().startswith(base + "signin?next="), page.url()
            page.screenshot(OUT / f"roster-{student}-signin.png")
            page.eval(f"document.querySelector('#token').value = {tok[student]!r}")
            page.act("document.querySelector('form[action$=\"signin\"]').submit()")
            text = upload_and_read_report(page, base, notebook(tmp_path, f"{student}.ipynb", bad), f"roster-{student}")
            assert student in text and "masks" in text, text[:1000]
            reports[student] = (page.url(), page)
        alice_text, bob_text = reports["alice"][1].text(), reports["bob"][1].text()
        assert "因果掩码去掉了对角线" in bob_text and "causal mask excludes the diagonal" in bob_text
        assert "causal mask excludes the diagonal" not in alice_text
        # alice opens bob's report, bob opens alice's: nothing of it
        assert_not_shown(reports["alice"][1], reports["bob"][0], "causal mask excludes the diagonal")
        reports["alice"][1].screenshot(OUT / "roster-alice-opens-bob.png")
        assert_not_shown(reports["bob"][1], reports["alice"][0], "alice.ipynb")
        # the instructor signs in and reads both
        page = browser.open_url(base + "signin", context=browser.new_context())
        page.eval(f"document.querySelector('#token').value = {tok['teacher']!r}")
        page.act("document.querySelector('form[action$=\"signin\"]').submit()")
        for student in ("alice", "bob"):
            page.goto(reports[student][0])
            wait_for(page, "document.querySelector('#scores') !== null", timeout=30)
            assert f"{student}.ipynb" in page.text()


def test_jupyterhub_login_form_then_oauth_upload_and_report_in_chromium(browser, tmp_path):
    data = tmp_path / "data"
    cmd = [sys.executable, "-m", "autograder", "serve", "--data", str(data), "--workers", "1"]
    with jupyterhub(cmd, cwd=ROOT) as hub:
        wait_http(hub.service_url + "healthz", timeout=120)
        base = hub.service_url
        pages = {}
        for user in ("alice", "bob", "teacher"):
            page = browser.open_url(base + "upload", context=browser.new_context())
            # the service sends the browser to the hub, whose login form comes back through OAuth
            assert page.url().startswith(hub.url + "hub/login"), page.url()
            if user == "alice":
                page.screenshot(OUT / "hub-login.png")
            page.eval(
                f"document.querySelector('#username_input').value = {user!r};"
                f"document.querySelector('#password_input').value = {hub.password!r}"
            )
            page.act("document.querySelector('#username_input').form.submit()")
            wait_for(page, f"location.href === {base + 'upload'!r}", timeout=60)
            pages[user] = page
        reports = {}
        for user, bad in (("alice", False), ("bob", True)):
            text = upload_and_read_report(pages[user], base, notebook(tmp_path, f"{user}.ipynb", bad), f"hub-{user}")
            assert user in text and ("causal mask excludes the diagonal" in text) == bad, text[:2000]
            reports[user] = pages[user].url()
        assert_not_shown(pages["bob"], reports["alice"], "alice.ipynb")
        pages["bob"].screenshot(OUT / "hub-bob-opens-alice.png")
        for user in ("alice", "bob"):  # the instructor, a member of the hub's group, reads both
            pages["teacher"].goto(reports[user])
            wait_for(pages["teacher"], "document.querySelector('#scores') !== null", timeout=30)
            assert f"{user}.ipynb" in pages["teacher"].text()
        pages["teacher"].goto(base + "instructor")
        pages["teacher"].screenshot(OUT / "hub-teacher-class.png")
        assert "alice" in pages["teacher"].text() and "bob" in pages["teacher"].text()
        # signing out of the service signs out of the hub too (else the hub signs the browser in again)
        page = pages["alice"]
        page.goto(base + "submissions")
        page.act("document.querySelector('form[action$=\"signout\"]').submit()")
        wait_for(page, f"!location.href.startsWith({base!r})", timeout=30)
        page.goto(base + "submissions")
        assert page.url().startswith(hub.url + "hub/login"), page.url()
