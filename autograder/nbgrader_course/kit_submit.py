"""提交作业，几秒钟后看到成绩 / Submit your work to the grading service and read your score.

在笔记本的一个单元格里 / in a notebook cell:

    from submit import submit
    submit("masks.ipynb")                          # 或 or: submit("masks.ipynb", assignment="sequence-models")

在终端里 / on the command line:

    python submit.py masks.ipynb [--assignment NAME] [--url URL] [--token TOKEN]

它先保存笔记本（在 Jupyter 里它请浏览器保存；保存不了就看文件的修改时间，太旧就请你先按 Ctrl+S），
再把文件发给评分服务，等评分结束，打印分数、要修改的地方和完整报告的链接。
It saves the notebook first (in Jupyter it asks the browser to save; where that does not work it looks
at the file's modification time, and asks you to press Ctrl+S when the file is older than your last
change could be), sends the file, waits for the grade, and prints the score, what to fix and a link to
the full report.

服务的地址和你的令牌 / Where the service is, and who you are, in this order:
  1. --url / --token (submit(url=..., token=...))
  2. the environment: SEQGRADER_URL, SEQGRADER_TOKEN
  3. JupyterHub: JUPYTERHUB_API_TOKEN, sent as `Authorization: token ...`; the address is the hub's
     (JUPYTERHUB_PUBLIC_URL) + JUPYTERHUB_BASE_URL + services/seqgrader/
  4. submit.json beside this file or in the current folder ({"url", "token", "assignment"}), which
     `seqgrader student-kit DIR --service-url URL` writes
Only the Python standard library is used.  (Written by seqgrader; do not edit.)
"""

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from html.parser import HTMLParser
from pathlib import Path

SERVICE = "seqgrader"
WAIT_SECONDS = 900  # give up waiting for a grade after this long (the submission stays queued)
SAVED_RECENTLY = 30  # seconds: a file saved this recently counts as saved
STATUS_WORDS = {
    "queued": ("排队中", "queued"),
    "grading": ("评分中", "grading"),
    "graded": ("已评分", "graded"),
    "not_graded": ("未评分", "not graded"),
}


class SubmitError(Exception):
    """What went wrong, already said in both languages; `submit` prints it, the command exits 1."""


def say(zh, en):
    """`zh` and `en` on one line: "zh / en"."""
    return f"{zh} / {en}"


# ---------------------------------------------------------------- where and who


def _settings_file():
    for folder in (Path.cwd(), Path(__file__).resolve().parent):
        f = folder / "submit.json"
        if f.is_file():
            try:
                data = json.loads(f.read_text(encoding="utf-8"))
            except ValueError as e:
                raise SubmitError(say(f"{f} 不是有效的 JSON：{e}", f"{f} is not valid JSON: {e}")) from None
            return data if isinstance(data, dict) else {}
    return {}


def settings(url=None, token=None, assignment=None, env=None):
    """(url, Authorization header value or None, assignment or None, where the url came from)."""
    env = os.environ if env is None else env
    saved = _settings_file()
    where = "--url"
    if not url and env.get("SEQGRADER_URL"):
        url, where = env["SEQGRADER_URL"], "SEQGRADER_URL"
    if not url and env.get("JUPYTERHUB_API_TOKEN") and env.get("JUPYTERHUB_PUBLIC_URL"):
        base = env.get("JUPYTERHUB_BASE_URL") or "/"
        url = urllib.parse.urljoin(env["JUPYTERHUB_PUBLIC_URL"], base.rstrip("/") + f"/services/{SERVICE}/")
        where = "JupyterHub"
    if not url and saved.get("url"):
        url, where = saved["url"], "submit.json"
    if not url:
        raise SubmitError(
            say(
                "不知道评分服务在哪里：用 --url 指定，或设置 SEQGRADER_URL，或问助教要 submit.json",
                "where is the grading service? Give --url, set SEQGRADER_URL, or ask your course staff for submit.json",
            )
        )
    if token:
        header = f"Bearer {token}"
    elif env.get("SEQGRADER_TOKEN"):
        header = f"Bearer {env['SEQGRADER_TOKEN']}"
    elif env.get("JUPYTERHUB_API_TOKEN"):
        header = f"token {env['JUPYTERHUB_API_TOKEN']}"
    elif saved.get("token"):
        header = f"Bearer {saved['token']}"
    else:
        header = None
    return url.rstrip("/") + "/", header, assignment or saved.get("assignment"), where


# ---------------------------------------------------------------- saving

SAVE_JS = """(function () {
  if (window.IPython && IPython.notebook) { IPython.notebook.save_checkpoint(); return; }
  var app = window.jupyterapp || window.jupyterlab;
  if (app && app.commands) { app.commands.execute('docmanager:save'); return; }
  var mac = /Mac/.test(navigator.platform);
  document.activeElement && document.activeElement.dispatchEvent(new KeyboardEvent('keydown',
    {key: 's', code: 'KeyS', keyCode: 83, ctrlKey: !mac, metaKey: mac, bubbles: true}));
})();"""


def in_notebook():
    """True in an IPython kernel (Jupyter), where the browser can be asked to save."""
    return "ipykernel" in sys.modules and "get_ipython" in dir(__import__("builtins"))


def save_first(path, wait=5.0):
    """In a notebook: ask the browser to save, and wait for the file to change.  Returns what
    happened: "saved" (the file changed just now), "recent" (saved in the last SAVED_RECENTLY
    seconds) or "stale" (older: the student is asked to save)."""
    before = path.stat().st_mtime
    if in_notebook() and path.suffix == ".ipynb":
        try:
            from IPython.display import Javascript, display

            display(Javascript(SAVE_JS))
        except Exception:  # noqa: BLE001 - no frontend to ask: the modification time decides
            pass
        deadline = time.time() + wait
        while time.time() < deadline:
            if path.stat().st_mtime != before:
                time.sleep(0.3)  # the frontend writes the file in one go; let it finish
                return "saved"
            time.sleep(0.2)
    age = time.time() - path.stat().st_mtime
    return "recent" if age <= SAVED_RECENTLY else "stale"


# ---------------------------------------------------------------- HTTP


def _request(method, url, header, body=None, content_type=None, timeout=60):
    headers = {"Accept": "application/json", "User-Agent": "seqgrader-submit"}
    if header:
        headers["Authorization"] = header
    if content_type:
        headers["Content-Type"] = content_type
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise SubmitError(
            say(f"连不上评分服务 {url}：{reason}", f"cannot reach the grading service at {url}: {reason}")
        ) from e


def _json(status, body):
    try:
        data = json.loads(body or b"null")
    except ValueError:
        data = None
    return data if isinstance(data, dict) else {}


def service_error(status, body, headers):
    """The service's own message, with what to do."""
    data = _json(status, body)
    message = data.get("message") or (body or b"").decode("utf-8", "replace").strip()[:300] or f"HTTP {status}"
    lines = [f"评分服务拒绝了这次请求 / the grading service refused ({status}): {message}"]
    if status == 401:
        lines.append(
            say(
                "检查你的令牌（--token、SEQGRADER_TOKEN 或 JupyterHub 的登录）",
                "check your token (--token, SEQGRADER_TOKEN or your JupyterHub sign-in)",
            )
        )
    elif status == 429:
        retry = headers.get("Retry-After") if headers else None
        if retry:
            when = _retry_time(retry)
            lines.append(say(f"下一次可以提交的时间：{when}", f"you can submit again at {when}"))
    return SubmitError("\n".join(lines))


def _retry_time(value):
    try:
        seconds = int(float(value))
    except ValueError:
        return value  # an HTTP date, as the service wrote it
    at = time.strftime("%H:%M:%S", time.localtime(time.time() + seconds))
    return f"{at} ({seconds} s)"


def multipart(fields, file_field, path):
    """(body, Content-Type) of a multipart/form-data request: `fields` as text parts, then `path`'s
    bytes as the file `file_field` (typed as a notebook or as Python)."""
    boundary = "seqgrader-" + uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    ctype = "application/x-ipynb+json" if path.suffix == ".ipynb" else "text/x-python"
    filename = path.name.replace('"', "_")
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; filename="{filename}"\r\n'
        f"Content-Type: {ctype}\r\n\r\n".encode()
        + path.read_bytes()
        + b"\r\n"
    )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


# ---------------------------------------------------------------- the report's fix list


class _FixList(HTMLParser):
    """The items of the report page's "what to fix" list (<li class="fix">), as text."""

    def __init__(self):
        super().__init__()
        self.items, self._depth, self._skip = [], 0, 0

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if tag == "li" and "fix" in classes and not self._depth:
            self._depth = 1
            self.items.append("")
        elif self._depth:
            self._depth += tag not in ("br", "img", "wbr")
            if tag == "a" and "more" in classes:
                self._skip = self._depth

    def handle_endtag(self, tag):
        if self._depth:
            if self._skip == self._depth:
                self._skip = 0
            self._depth -= 1

    def handle_data(self, data):
        if self._depth and not self._skip:
            self.items[-1] += data


def fix_lines(view, url, header):
    """The one-line fixes: the service's own list when it sends one, else the report page's."""
    fixes = view.get("fixes")
    if isinstance(fixes, list):
        return [f if isinstance(f, str) else _fix_text(f) for f in fixes]
    report = view.get("report_url")
    if not report:
        return []
    status, body, _ = _request("GET", urllib.parse.urljoin(url, report), header, timeout=60)
    if status != 200:
        return []
    parser = _FixList()
    parser.feed(body.decode("utf-8", "replace"))
    return [" ".join(item.split()) for item in parser.items if item.strip()]


def _fix_text(f):
    head = f.get("function", "?")
    where = f.get("exercise", "")
    line = " / ".join(x for x in (f.get("zh"), f.get("en")) if x)
    return f"{head} ({where}): {line}" if where else f"{head}: {line}"


# ---------------------------------------------------------------- submit


def submit(notebook, assignment=None, url=None, token=None, wait=True, out=print):
    """Save, send and wait: prints the score, what to fix and the report's link.  Returns the
    service's last answer about the submission (a dict), or None when nothing was sent."""
    try:
        return _submit(Path(notebook), assignment, url, token, wait, out)
    except SubmitError as e:
        out(str(e))
        return None


def _submit(path, assignment, url, token, wait, out):
    if not path.is_file():
        raise SubmitError(say(f"找不到文件 {path}", f"no such file: {path}"))
    if path.suffix not in (".ipynb", ".py"):
        raise SubmitError(
            say(f"只能提交 .ipynb 或 .py 文件，不是 {path.name}", f"submit an .ipynb or .py file, not {path.name}")
        )
    url, header, assignment, where = settings(url, token, assignment)
    saved = save_first(path)
    stamp = time.strftime("%H:%M:%S", time.localtime(path.stat().st_mtime))
    if saved == "saved":
        out(say(f"已保存 {path.name}", f"saved {path.name}"))
    elif saved == "stale" and in_notebook():
        raise SubmitError(
            say(
                f"没能自动保存 {path.name}（磁盘上的文件是 {stamp} 保存的）：先按 Ctrl+S（Mac 上 ⌘S）保存，再运行这个单元格",
                f"could not save {path.name} for you (the file on disk was saved at {stamp}): press "
                f"Ctrl+S (⌘S on a Mac), then run this cell again",
            )
        )
    else:
        out(say(f"提交磁盘上的 {path.name}（{stamp} 保存）", f"sending {path.name} as saved on disk at {stamp}"))
    fields = {"assignment": assignment} if assignment else {}
    body, ctype = multipart(fields, "file", path)
    status, answer, headers = _request("POST", url + "api/submissions", header, body, ctype, timeout=120)
    if status not in (200, 201, 202):
        raise service_error(status, answer, headers)
    view = _json(status, answer)
    sid = view.get("id")
    left = view.get("attempts_left")
    zh, en = f"已提交（编号 {sid}）", f"submitted (id {sid})"
    if left is not None:
        zh, en = zh + f"，还可以提交 {left} 次", en + f"; {left} attempt(s) left"
    out(say(zh, en) + f"  [{where}: {url}]")
    if not wait:
        return view
    view = _wait(url, header, sid, view, out)
    _print_result(url, header, view, out)
    return view


def _wait(url, header, sid, view, out):
    start, last, delay = time.time(), None, 0.5
    while view.get("status") in ("queued", "grading"):
        if view["status"] != last:
            last = view["status"]
            out(f"  {say(*STATUS_WORDS[last])} … ({time.time() - start:.0f} s)")
        if time.time() - start > WAIT_SECONDS:
            raise SubmitError(
                say(
                    f"等了 {WAIT_SECONDS // 60} 分钟还没评完；稍后打开 {url}submissions/{sid} 看结果",
                    f"not graded after {WAIT_SECONDS // 60} minutes; open {url}submissions/{sid} later",
                )
            )
        time.sleep(delay)
        delay = min(delay * 1.5, 3.0)
        status, body, headers = _request("GET", f"{url}api/submissions/{sid}", header)
        if status != 200:
            raise service_error(status, body, headers)
        view = _json(status, body)
    out(
        f"  {say(*STATUS_WORDS.get(view.get('status'), (view.get('status'), view.get('status'))))} "
        f"({time.time() - start:.0f} s)"
    )
    return view


def _print_result(url, header, view, out):
    report = urllib.parse.urljoin(url, view.get("report_url") or f"submissions/{view.get('id')}")
    if view.get("status") == "graded":
        out(say("总分", "Score") + f": {view.get('score'):g} / {view.get('max_score'):g}")
        fixes = fix_lines(view, url, header)
        if fixes:
            out(say("要修改的地方", "What to fix") + f" ({len(fixes)}):")
            for i, line in enumerate(fixes, 1):
                out(f"  {i}. {line}")
        elif view.get("score") == view.get("max_score"):
            out(say("全部测试通过！", "Every test passed!"))
    else:
        out(
            say("这份提交没有被评分（这不是 0 分）", "This submission was not graded (this is not a zero)")
            + (f": {view['message']}" if view.get("message") else "")
        )
    out(say("完整报告", "Full report") + f": {report}")


def main(argv=None):
    """`python submit.py NOTEBOOK`: `submit` from the command line; exit status 0 when the work was
    sent, 1 when it was not."""
    p = argparse.ArgumentParser(prog="python submit.py", description=__doc__.split("\n\n")[0])
    p.add_argument("notebook", help="the .ipynb (or .py) file to submit")
    p.add_argument("--assignment", help="the assignment's name (default: submit.json's)")
    p.add_argument("--url", help="the grading service, e.g. https://grader.example.edu/")
    p.add_argument("--token", help="your token (default: SEQGRADER_TOKEN, JupyterHub's, or submit.json's)")
    p.add_argument("--no-wait", action="store_true", help="send, and do not wait for the grade")
    args = p.parse_args(argv)
    view = submit(args.notebook, args.assignment, args.url, args.token, wait=not args.no_wait)
    return 0 if view is not None else 1


if __name__ == "__main__":
    sys.exit(main())
