"""`seqgrader serve --dask-scheduler`: a real `dask scheduler` and one `dask worker` on
127.0.0.1 (their own processes, this checkout importable by the worker), the real service in
front of them; a correct and a wrong submission get the scores `seqgrader grade` gives, and
nothing is left running afterwards."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import ROOT, real_place
from .servers import _children, free_port
from .test_service import PLANTED, SOLUTION, Service, _cmd, _course_folder, submit, tokens, wait_done

DASK = Path(sys.executable).with_name("dask")


def _stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def cluster():
    place = real_place("dask")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ, PYTHONPATH=str(ROOT), DASK_DISTRIBUTED__WORKER__DAEMON="False")
    log = open(place / "dask.log", "ab")
    procs = [
        subprocess.Popen(
            [
                str(DASK),
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--dashboard-address",
                ":0",
                "--no-show",
            ],
            stdout=log,
            stderr=log,
            cwd=place,
            env=env,
        )
    ]
    try:
        procs.append(
            subprocess.Popen(
                [
                    str(DASK),
                    "worker",
                    address,
                    "--host",
                    "127.0.0.1",
                    "--nthreads",
                    "2",
                    "--nworkers",
                    "1",
                    "--no-dashboard",
                    "--local-directory",
                    str(place / "dw"),
                ],
                stdout=log,
                stderr=log,
                cwd=place,
                env=env,
            )
        )
        from distributed import Client

        deadline = time.monotonic() + 120
        while True:
            assert all(p.poll() is None for p in procs), (place / "dask.log").read_text(errors="replace")
            try:
                with Client(address, timeout=5) as c:
                    if c.scheduler_info().get("workers"):
                        break
            except (OSError, TimeoutError):
                pass
            assert time.monotonic() < deadline, (place / "dask.log").read_text(errors="replace")
            time.sleep(0.5)
        yield address, place, procs
    finally:
        family = {pid for p in procs for pid in _children(p.pid)}
        for p in reversed(procs):
            _stop(p)
        log.close()
        time.sleep(1)
        left = [
            pid
            for pid in family
            if Path(f"/proc/{pid}").exists()
            and "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:1]
        ]
        shutil.rmtree(place, ignore_errors=True)
        assert not left, f"processes left behind by the Dask cluster: {left}"


def _grade(course, tmp_path, name, text):
    (tmp_path / name).write_text(text, encoding="utf-8")
    out = tmp_path / f"{name}.json"
    done = subprocess.run(
        _cmd("grade", str(tmp_path / name), "--course", str(course), "--json", str(out), "-q"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def test_the_service_grades_on_a_dask_cluster_as_grade_does(cluster, tmp_path):
    address, place, _ = cluster
    course = _course_folder(place / "course")
    data = place / "data"
    toks = tokens(course, data)
    service = Service(course, data, "--dask-scheduler", address).start()
    try:
        alice = service.client(toks["alice"])
        ids = {}
        for name, text in (("correct.py", SOLUTION), ("planted.py", PLANTED)):
            r = submit(alice, name, text)
            assert r.status_code == 202, r.text
            ids[name] = r.json()["id"]
        got = {name: wait_done(alice, sid, timeout=400) for name, sid in ids.items()}
        for name, text in (("correct.py", SOLUTION), ("planted.py", PLANTED)):
            expected = _grade(course, tmp_path, name, text)
            assert got[name]["status"] == "graded", (got[name], service.log()[-3000:])
            assert got[name]["score"] == expected["score"] and got[name]["max_score"] == expected["max_score"]
            report = alice.get(f"api/submissions/{ids[name]}/report").json()
            assert {t["name"]: t["passed"] for e in report["exercises"] for t in e["tests"]} == {
                t["name"]: t["passed"] for e in expected["exercises"] for t in e["tests"]
            }
        assert got["correct.py"]["score"] == 20 > got["planted.py"]["score"]
        assert "grading on tcp://127.0.0.1" in service.log()
        alice.close()
    finally:
        kids = set(_children(service.proc.pid))
        service.stop()
    assert service.proc.returncode is not None
    assert not [pid for pid in kids if Path(f"/proc/{pid}").exists()], "the service left processes behind"
