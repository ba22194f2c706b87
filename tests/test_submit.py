"""The kit's submit.py (autograder/nbgrader_course/kit_submit.py, standard library only) against a
real `seqgrader serve` with roster tokens: from the command line with --url/--token, from the
environment, from the submit.json `student-kit --service-url` writes, and from a notebook cell in a
real kernel (where it cannot make a browser save, so the file's age decides).  It prints the score,
the fix list and the report's link, Chinese first; every refusal of the service is printed as the
service's own message (401, 413, 415, 429 with when the next attempt comes)."""

import json
import os
import re
import subprocess
import sys
import time

import nbformat
import pytest
import yaml

from autograder.cli import main
from autograder.nbgrader_course import kit_submit
from autograder.nbgrader_course.build import KIT_SUBMIT

from .servers import MASKS, masks_submission, serve, tokens, write_roster

ASSIGNMENT = "sequence-models"


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """The built-in course with 3 attempts an hour on the assignment, uploads up to 40 kB."""
    top = tmp_path_factory.mktemp("submit-service")
    course = top / "course"
    assert main(["init-course", str(course), "-q"]) == 0
    config = yaml.safe_load((course / "course.yml").read_text(encoding="utf-8"))
    config["service"] = {ASSIGNMENT: {"attempts": 3, "window": "1h"}}
    (course / "course.yml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    data = top / "data"
    roster = write_roster(top / "roster.csv")
    tok = tokens(roster, data)
    with serve("--course", course, "--roster", roster, "--workers", 1, "--max-upload", "40kB", data=data) as (
        url,
        _,
        log,
    ):
        yield {"url": url, "tokens": tok, "log": log}


def run_submit(folder, *args, env=None):
    """`python submit.py ARGS` in `folder` (a copy of the kit's), with only `env` around it."""
    if not (folder / "submit.py").exists():
        (folder / "submit.py").write_bytes(KIT_SUBMIT.read_bytes())
    r = subprocess.run(
        [sys.executable, "-I", "submit.py", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
        timeout=600,
    )
    return r.returncode, r.stdout + r.stderr


def test_settings_come_from_the_flags_then_the_environment_then_jupyterhub_then_submit_json(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "submit.json").write_text(json.dumps({"url": "http://kit/", "token": "t-kit", "assignment": "a-kit"}))
    hub = {
        "JUPYTERHUB_API_TOKEN": "t-hub",
        "JUPYTERHUB_PUBLIC_URL": "https://hub.example.edu",
        "JUPYTERHUB_BASE_URL": "/jh/",
    }
    env = {"SEQGRADER_URL": "http://env", "SEQGRADER_TOKEN": "t-env", **hub}
    s = kit_submit.settings
    assert s("http://flag", "t-flag", "a", env) == ("http://flag/", "Bearer t-flag", "a", "--url")
    assert s(None, None, None, env) == ("http://env/", "Bearer t-env", "a-kit", "SEQGRADER_URL")
    assert s(None, None, None, hub) == (
        "https://hub.example.edu/jh/services/seqgrader/",
        "token t-hub",
        "a-kit",
        "JupyterHub",
    )
    assert s(None, None, None, {}) == ("http://kit/", "Bearer t-kit", "a-kit", "submit.json")
    # under a hub that does not say its public address, submit.json's address with the hub's token
    assert s(None, None, None, {"JUPYTERHUB_API_TOKEN": "t-hub"}) == (
        "http://kit/",
        "token t-hub",
        "a-kit",
        "submit.json",
    )
    (tmp_path / "submit.json").unlink()
    with pytest.raises(kit_submit.SubmitError, match="SEQGRADER_URL"):
        s(None, None, None, {})


def test_from_the_command_line_it_prints_the_score_the_fixes_and_the_link(service, tmp_path):
    work = masks_submission(tmp_path, "masks.py", without_diagonal=True)
    rc, out = run_submit(
        tmp_path, work.name, "--assignment", ASSIGNMENT, "--url", service["url"], "--token", service["tokens"]["alice"]
    )
    assert rc == 0, out
    lines = out.splitlines()
    assert any(
        ln.startswith("提交磁盘上的 masks.py") and "/ sending masks.py as saved on disk" in ln for ln in lines
    ), out
    assert re.search(r"已提交（编号 \w+），还可以提交 2 次 / submitted \(id \w+\); 2 attempt\(s\) left", out), out
    assert re.search(r"总分 / Score: \d+ / 100", out), out
    fixes = lines.index(next(ln for ln in lines if ln.startswith("要修改的地方 / What to fix (")))
    assert "causal_mask" in lines[fixes + 1] and "diagonal" in lines[fixes + 1], out
    assert re.search(rf"完整报告 / Full report: {re.escape(service['url'])}submissions/\w+", out), out
    assert "Traceback" not in out


def test_the_environment_and_submit_json_say_where_and_who(service, tmp_path):
    masks_submission(tmp_path, "masks.py")
    rc, out = run_submit(
        tmp_path,
        "masks.py",
        "--assignment",
        ASSIGNMENT,
        env={"SEQGRADER_URL": service["url"], "SEQGRADER_TOKEN": service["tokens"]["alice"]},
    )
    assert rc == 0 and "[SEQGRADER_URL: " in out and "总分 / Score: 20 / 100" in out, out
    kit = tmp_path / "kit"
    assert main(["student-kit", str(kit), "--service-url", service["url"], "-q"]) == 0
    settings = json.loads((kit / "submit.json").read_text())
    (kit / "submit.json").write_text(json.dumps({**settings, "token": service["tokens"]["alice"]}))
    (kit / "masks.py").write_text(MASKS)
    rc, out = run_submit(kit, "masks.py")  # the assignment too comes from submit.json
    assert rc == 0 and "[submit.json: " in out and "总分 / Score: 20 / 100" in out, out
    # three attempts an hour: the fourth is refused, with the service's message and when to come back
    rc, out = run_submit(kit, "masks.py")
    assert rc == 1 and "(429)" in out and "3 attempts per 1h" in out, out
    assert re.search(r"下一次可以提交的时间：\d\d:\d\d:\d\d \(\d+ s\) / you can submit again at \d\d:\d\d:\d\d", out), (
        out
    )


def test_the_services_refusals_are_printed_as_the_service_says_them(service, tmp_path):
    url, bob = service["url"], service["tokens"]["bob"]
    masks_submission(tmp_path, "masks.py")
    rc, out = run_submit(tmp_path, "masks.py", "--assignment", ASSIGNMENT, "--url", url, "--token", "wrong")
    assert rc == 1 and "(401)" in out and "This token is not valid" in out and "检查你的令牌" in out, out
    (tmp_path / "big.py").write_text(MASKS + "\n# " + "x" * 50_000 + "\n")
    rc, out = run_submit(tmp_path, "big.py", "--assignment", ASSIGNMENT, "--url", url, "--token", bob)
    assert rc == 1 and "(413)" in out and "limit" in out, out
    (tmp_path / "code.ipynb").write_text(MASKS)
    rc, out = run_submit(tmp_path, "code.ipynb", "--assignment", ASSIGNMENT, "--url", url, "--token", bob)
    assert rc == 1 and "(415)" in out and "upload it as .py" in out, out
    rc, out = run_submit(tmp_path, "masks.py", "--assignment", "no-such", "--url", url, "--token", bob)
    assert rc == 1 and "(422)" in out and "no assignment 'no-such'" in out, out
    rc, out = run_submit(tmp_path, "notes.txt", "--url", url, "--token", bob)
    assert rc == 1 and "no such file" in out, out
    status, listing, _ = _listing(url, bob)
    assert status == 200 and listing["submissions"] == []  # nothing refused was kept, no attempt used


def _listing(url, token):
    from .servers import call

    return call("GET", f"{url}api/submissions", f"Bearer {token}")


def test_in_a_notebook_it_sends_a_file_just_saved_and_asks_to_save_an_old_one(service, tmp_path):
    (tmp_path / "submit.py").write_bytes(KIT_SUBMIT.read_bytes())
    work = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(MASKS)])
    nbformat.write(work, str(tmp_path / "masks.ipynb"))
    cell = (
        f"from submit import submit\n"
        f"view = submit('masks.ipynb', assignment={ASSIGNMENT!r}, url={service['url']!r}, "
        f"token={service['tokens']['bob']!r})\n"
        f"print('sent:', view is not None)"
    )

    def run_cell():
        from nbclient import NotebookClient

        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
        NotebookClient(
            nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
        outputs = nb.cells[0].outputs
        return "".join(o.get("text", "") for o in outputs if o.output_type == "stream"), outputs

    old = time.time() - 3600
    os.utime(tmp_path / "masks.ipynb", (old, old))  # saved an hour ago: edits since may be unsaved
    out, outputs = run_cell()
    assert "sent: False" in out and "Ctrl+S" in out and "没能自动保存 masks.ipynb" in out, out
    assert any("application/javascript" in o.get("data", {}) for o in outputs), outputs  # it asked the browser
    os.utime(tmp_path / "masks.ipynb")  # the student pressed Ctrl+S
    out, _ = run_cell()
    assert "sent: True" in out and "总分 / Score: 20 / 100" in out and "完整报告 / Full report" in out, out
