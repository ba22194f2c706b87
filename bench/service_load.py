"""Benchmark: a class submitting to `seqgrader serve` at once, on this machine (loopback only).

    .venv/bin/python bench/service_load.py [--students 60] [--attempts 3] [--within 120] [--workers 2]
                                           [--seed 0] [--limit 1200] [--keep DIR]

Starts `seqgrader serve --roster ... --workers W` (W warm grading processes, a SQLite database in a
fresh data folder), then S students, each a thread, each sending A distinct submissions at random
moments of the first `--within` seconds (one submission of a student waits for the previous one's
grade, as a student reading their report does).  A submission is one file, as students upload:
one .py holding the five core exercises or one notebook (bench/class_speed.py's class: the
reference, correct variants written differently, catalogued mistakes, now and then an endless loop
or a syntax error).  Each student polls its submission as the kit's submit.py does (0.5 s, growing to
3 s).  It prints

  queue wait       from the upload's acceptance to the start of its grading (the database's times)
  grading          from the start to the end of the grading
  to feedback      from sending the upload to the student seeing the grade (the client's clock: what a
                   student waits, polling included); p50, p95, max of each
  throughput       submissions graded per minute, from the first upload to the last grade
  lost             uploads not answered 202, submissions never finished, graded ones without exactly
                   one result, results of unfinished ones, gradings started more than once
  same scores      every submission graded again by `seqgrader grade-batch` (the same files, a fresh
                   output folder): the service's score equals grade-batch's, graded or not alike

and writes all of it to out/service-load.json.  Everything stops by itself: the students after
their last submission, the whole run after --limit seconds (what is unfinished then counts as lost).
Nothing here is a test; run it on a quiet machine (or say what else ran).
"""

import argparse
import csv
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

ASSIGNMENT = "sequence-models"


def write_submissions(folder, students, attempts, seed):
    """{(student, attempt): path}: distinct files, one per submission."""
    from class_speed import EXERCISES, ingredients, notebook, student_files

    rng = random.Random(seed)
    parts = ingredients()
    out = {}
    n = 0
    for s in range(students):
        for a in range(attempts):
            files, _ = student_files(rng, parts, n)
            n += 1
            source = "\n\n".join(files[ex] for ex in EXERCISES)
            name = f"s{s:03d}-{a}"
            if rng.random() < 0.5:
                path = folder / f"{name}.ipynb"
                path.write_text(notebook(source), encoding="utf-8")
            else:
                path = folder / f"{name}.py"
                path.write_text(source, encoding="utf-8")
            out[(f"s{s:03d}", a)] = path
    return out


def percentiles(values):
    if not values:
        return {"n": 0}
    v = sorted(values)

    def q(p):
        return v[min(len(v) - 1, int(round(p * (len(v) - 1))))]

    return {
        "n": len(v),
        "p50": round(q(0.5), 2),
        "p95": round(q(0.95), 2),
        "max": round(v[-1], 2),
        "mean": round(statistics.fmean(v), 2),
    }


def student(name, token, files, start_at, base, t0, results, deadline):
    """One student: each submission at its moment (after the previous one's grade), then polled."""
    from tests.servers import call

    for attempt, (at, path) in enumerate(zip(start_at, files)):
        wait = t0 + at - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        sent = time.monotonic()
        try:
            status, view, _ = call(
                "POST",
                base + "api/submissions",
                f"Bearer {token}",
                file=path,
                fields={"assignment": ASSIGNMENT},
                timeout=120,
            )
        except Exception as e:  # noqa: BLE001 - counted as lost, with why
            status, view = None, {"error": f"{type(e).__name__}: {e}"}
        entry = {
            "student": name,
            "attempt": attempt,
            "file": path.name,
            "sent": sent - t0,
            "post_status": status,
            "post_seconds": time.monotonic() - sent,
            "id": view.get("id"),
            "status": None,
        }
        results.append(entry)
        if status != 202:
            entry["error"] = view
            continue
        delay = 0.5
        while time.monotonic() < deadline:
            time.sleep(delay)
            delay = min(delay * 1.5, 3.0)
            try:
                st, v, _ = call("GET", f"{base}api/submissions/{entry['id']}", f"Bearer {token}")
            except Exception:  # noqa: BLE001 - a slow answer: ask again
                continue
            if st == 200 and v["status"] in ("graded", "not_graded"):
                entry.update(
                    status=v["status"],
                    score=v["score"],
                    seen=time.monotonic() - t0,
                    to_feedback=time.monotonic() - sent,
                )
                break


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--students", type=int, default=60)
    p.add_argument("--attempts", type=int, default=3)
    p.add_argument("--within", type=float, default=120.0, help="seconds over which the submissions start")
    p.add_argument("--workers", type=int, default=2, help="grading processes of the service")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=float, default=1200.0, help="seconds after which everything stops")
    p.add_argument("--keep", metavar="DIR", help="keep the submissions, data folder and grade-batch output here")
    args = p.parse_args()

    from tests.servers import serve, tokens, write_roster

    top = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="seqgrader-load-"))
    top.mkdir(parents=True, exist_ok=True)
    subs_dir = top / "submissions"
    shutil.rmtree(subs_dir, ignore_errors=True)
    subs_dir.mkdir()
    files = write_submissions(subs_dir, args.students, args.attempts, args.seed)
    names = [f"s{s:03d}" for s in range(args.students)]
    roster = write_roster(top / "roster.csv", [(n, "student") for n in names] + [("teacher", "instructor")])
    data = top / "data"
    shutil.rmtree(data, ignore_errors=True)
    tok = tokens(roster, data)
    rng = random.Random(args.seed + 1)
    plan = {n: sorted(rng.uniform(0, args.within) for _ in range(args.attempts)) for n in names}
    print(
        f"{len(files)} submissions of {args.students} students ({args.attempts} each within {args.within:g} s), "
        f"service with {args.workers} grading process(es); {os.cpu_count()} cores here",
        flush=True,
    )

    results = []
    started = time.monotonic()
    with serve("--roster", roster, "--workers", args.workers, data=data, timeout=300) as (base, _, log):
        t0 = time.monotonic()
        deadline = started + args.limit
        threads = [
            threading.Thread(
                target=student,
                args=(n, tok[n], [files[(n, a)] for a in range(args.attempts)], plan[n], base, t0, results, deadline),
                daemon=True,
            )
            for n in names
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        run_seconds = time.monotonic() - t0
        db = data / "service.db"
        with sqlite3.connect(db) as conn:
            rows = conn.execute(
                "SELECT id, status, created_at, started_at, finished_at, claims, score FROM submissions"
            ).fetchall()
            # a graded submission has its one result (a "not graded" one has one too when the grader
            # wrote a report saying why, none when there is no report); nothing else has one
            graded_without_result = conn.execute(
                "SELECT count(*) FROM submissions s WHERE s.status = 'graded' AND "
                "(SELECT count(*) FROM results r WHERE r.submission_id = s.id) != 1"
            ).fetchone()[0]
            unfinished_with_result = conn.execute(
                "SELECT count(*) FROM results r JOIN submissions s ON s.id = r.submission_id "
                "WHERE s.status NOT IN ('graded', 'not_graded')"
            ).fetchone()[0]
    service_log = log.read_text() if log.exists() else ""

    def ts(text):
        return datetime.fromisoformat(text).timestamp() if text else None

    db_rows = {
        r[0]: {
            "status": r[1],
            "created": ts(r[2]),
            "started": ts(r[3]),
            "finished": ts(r[4]),
            "claims": r[5],
            "score": r[6],
        }
        for r in rows
    }
    queue = [r["started"] - r["created"] for r in db_rows.values() if r["started"] and r["created"]]
    grading = [r["finished"] - r["started"] for r in db_rows.values() if r["finished"] and r["started"]]
    server_total = [r["finished"] - r["created"] for r in db_rows.values() if r["finished"] and r["created"]]
    feedback = [e["to_feedback"] for e in results if e.get("to_feedback") is not None]
    finished = [r["finished"] for r in db_rows.values() if r["finished"]]
    created = [r["created"] for r in db_rows.values() if r["created"]]
    span = (max(finished) - min(created)) if finished and created else None
    lost = {
        "not_accepted": [e for e in results if e["post_status"] != 202],
        "never_finished": [e for e in results if e["post_status"] == 202 and e["status"] is None],
        "graded_without_its_result": graded_without_result,
        "unfinished_with_a_result": unfinished_with_result,
        "graded_twice": [i for i, r in db_rows.items() if (r["claims"] or 0) > 1],
        "missing_rows": len(files) - len(db_rows),
    }

    # the same files graded by the command line, once each
    out = top / "grade-batch"
    shutil.rmtree(out, ignore_errors=True)
    b0 = time.monotonic()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade-batch",
            str(subs_dir),
            "--out",
            str(out),
            "--workers",
            str(args.workers),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=max(600, args.limit),
    )
    batch_seconds = time.monotonic() - b0
    batch = {}
    if (out / "grades.csv").exists():
        with open(out / "grades.csv", newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                batch[row["student"]] = row
    mismatches = []
    for e in results:
        if e.get("status") is None:
            continue
        stem = Path(e["file"]).stem
        row = batch.get(stem)
        theirs = row.get("total") if row else None
        theirs = float(theirs) if theirs not in (None, "") else None
        ours = e.get("score") if e["status"] == "graded" else None
        if row is None or (theirs is None) != (ours is None) or (ours is not None and abs(ours - theirs) > 1e-9):
            mismatches.append({"file": e["file"], "service": ours, "grade-batch": theirs, "status": e["status"]})

    summary = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "submissions": len(files),
        "students": args.students,
        "attempts": args.attempts,
        "within": args.within,
        "workers": args.workers,
        "cores": os.cpu_count(),
        "run_seconds": round(run_seconds, 1),
        "queue_wait": percentiles(queue),
        "grading": percentiles(grading),
        "server_total": percentiles(server_total),
        "to_feedback": percentiles(feedback),
        "post_seconds": percentiles([e["post_seconds"] for e in results]),
        "throughput_per_minute": round(len(finished) / span * 60, 1) if span else None,
        "graded": sum(1 for r in db_rows.values() if r["status"] == "graded"),
        "not_graded": sum(1 for r in db_rows.values() if r["status"] == "not_graded"),
        "lost": {k: (len(v) if isinstance(v, list) else v) for k, v in lost.items()},
        "grade_batch": {"returncode": r.returncode, "seconds": round(batch_seconds, 1), "rows": len(batch)},
        "score_mismatches": mismatches,
        "goal": {
            "p50_under_10s": bool(feedback) and percentiles(feedback)["p50"] < 10,
            "p95_under_60s": bool(feedback) and percentiles(feedback)["p95"] < 60,
        },
    }
    (ROOT / "out").mkdir(exist_ok=True)
    (ROOT / "out" / "service-load.json").write_text(json.dumps({**summary, "results": results}, indent=1))
    print(json.dumps(summary, indent=1))
    if r.returncode not in (0, 1):
        print(r.stderr[-3000:], file=sys.stderr)
    if any(summary["lost"].values()) or mismatches:
        print("LOST OR DIFFERENT: see out/service-load.json\n" + service_log[-3000:], file=sys.stderr)
    if not args.keep:
        shutil.rmtree(top, ignore_errors=True)
    ok = not any(summary["lost"].values()) and not mismatches
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
