"""A real headless Chromium (Debian's `chromium`) driven over the DevTools protocol through a pipe
(--remote-debugging-pipe: no port, no extra package): one browser for many pages, each opened at
a given window size, its screenshot taken as a person would see it, and JavaScript evaluated in it
to read the DOM (a Promise is awaited: its value comes back).  Used by tests/test_report_views.py
and tests/test_accessibility.py.

    with Chromium(profile_dir) as browser:
        page = browser.open(path, size=(1280, 800))
        page.screenshot(png_path)            # what fits in the window
        page.eval("document.title")          # any JSON-able value
        page.eval("document.fonts.ready.then(() => 1)")   # a Promise: its value once it settles
        page.run_script(source)              # a whole script (a library), as a <script> would run it

and, for a web service, pages of their own cookie jar that follow links, forms and redirects:

    context = browser.new_context()      # a separate profile: its own cookies (one per person)
    page = browser.open_url(url, context=context)
    page.act("document.querySelector('form').submit()")   # run, then wait for the next page's load
    page.set_file("#file", path)         # choose a file in an <input type=file>

A page opened with bypass_csp=True ignores the site's Content-Security-Policy, so that a test can
run its own script in a page whose policy allows none (the service's).
"""

import base64
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--font-render-hinting=none",
]


class ChromiumError(RuntimeError):
    pass


class Chromium:
    def __init__(self, profile, timeout=60):
        if not Path(CHROMIUM).exists():
            raise ChromiumError(
                "chromium is not installed: these tests render the reports in a real browser. "
                "Install Debian's package with `apt-get install -y chromium fonts-wqy-zenhei` "
                "(bin/setup does it when run as root)."
            )
        self.timeout = timeout
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def fds():  # the child reads commands on fd 3 and writes answers on fd 4
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=fds,
            pass_fds=(3, 4),
            close_fds=True,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._id = 0
        self._buf = b""
        self._events = []

    # ------------------------------------------------------------ the protocol
    def send(self, method, params=None, session=None):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        want = self._id
        while True:
            m = self._read()
            if m.get("id") == want:
                if "error" in m:
                    raise ChromiumError(f"{method}: {m['error']}")
                return m.get("result", {})
            self._events.append(m)

    def wait_event(self, method, session=None):
        for i, m in enumerate(self._events):
            if m.get("method") == method and m.get("sessionId") == session:
                return self._events.pop(i)
        while True:
            m = self._read()
            if m.get("method") == method and m.get("sessionId") == session:
                return m
            self._events.append(m)

    def _read(self):
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._from_child], [], [], max(0.0, left))
            if not ready:
                raise ChromiumError("no answer from chromium")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise ChromiumError(f"chromium exited (status {self.proc.poll()})")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\0", 1)
        return json.loads(line)

    # ------------------------------------------------------------ pages
    def open(self, path, size=(1280, 800)):
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        self.send("Page.enable", session=session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        self.send("Page.navigate", {"url": Path(path).resolve().as_uri()}, session=session)
        self.wait_event("Page.loadEventFired", session)
        page.eval("document.fonts.ready.then(() => true)")
        return page

    def new_context(self):
        return self.send("Target.createBrowserContext", {"disposeOnDetach": True})["browserContextId"]

    def open_url(self, url, size=(1280, 800), context=None, bypass_csp=False):
        params = {"url": "about:blank"}
        if context:
            params["browserContextId"] = context
        target = self.send("Target.createTarget", params)["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        self.send("Page.enable", session=session)
        if bypass_csp:  # before the first navigation: it holds for every page this one loads
            self.send("Page.setBypassCSP", {"enabled": True}, session=session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        page.goto(url)
        return page

    def forget(self, method, session):
        """Drop the events of `method` already received for `session` (an earlier page's load)."""
        self._events = [m for m in self._events if not (m.get("method") == method and m.get("sessionId") == session)]

    def close(self):
        try:
            self.send("Browser.close")
        except (ChromiumError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Page:
    def __init__(self, browser, target, session):
        self.browser, self.target, self.session = browser, target, session

    def eval(self, expression):
        res = self.browser.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session=self.session,
        )
        if "exceptionDetails" in res:
            raise ChromiumError(f"JavaScript failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    def run_script(self, source):
        """Run a whole script in the page (its global names stay defined), as a <script> would."""
        self.eval(f"{source}\n;true")

    def goto(self, url):
        self.browser.forget("Page.loadEventFired", self.session)
        self.browser.send("Page.navigate", {"url": url}, session=self.session)
        self.browser.wait_event("Page.loadEventFired", self.session)

    def act(self, expression):
        """Run `expression` (a click, a form's submit), then wait for the page it leads to."""
        self.browser.forget("Page.loadEventFired", self.session)
        self.eval(expression)
        self.browser.wait_event("Page.loadEventFired", self.session)

    def set_file(self, selector, path):
        res = self.browser.send(
            "Runtime.evaluate", {"expression": f"document.querySelector({json.dumps(selector)})"}, session=self.session
        )
        self.browser.send(
            "DOM.setFileInputFiles",
            {"files": [str(Path(path).resolve())], "objectId": res["result"]["objectId"]},
            session=self.session,
        )

    def url(self):
        return self.eval("location.href")

    def text(self):
        return self.eval("document.body ? document.body.innerText : ''")

    def screenshot(self, path):
        data = self.browser.send("Page.captureScreenshot", {"format": "png"}, session=self.session)["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

    def close(self):
        self.browser.send("Target.closeTarget", {"targetId": self.target})
