"""The grading loop of the service: threads of the service's process that take queued submissions
(database.claim) and grade them on warm grading processes, never a `grade` process per submission.

    LocalGrader    one LocalPool per assignment (batch/pool.py: the processes of grade-batch, each
                   importing torch once, sandboxing every submission, and running the self-check
                   before its first score), `processes` processes in all (an idle one of another
                   assignment stops when one is needed); `grade(assignment, path, student)` -> the
                   pool's result
    DaskGrader     the same on a Dask cluster (batch/cluster.py: run_dask, one submission at a time)
    GradingLoop    `threads` loops claim -> grade -> database.finish, a lease renewer, and the
                   requeueing of what a dead process left in `grading` (at start and every lease);
                   an idle loop waits on `wake`, which the upload routes set, so an upload this
                   process accepts is claimed at once; `poll` seconds otherwise (uploads another
                   process on the same database accepted)

A result becomes "graded" with its report, or "not_graded" with the reason, and then the
submission's attempt is given back: a report where nothing could be graded (a corrupt notebook,
nothing loadable: report/model.not_graded_reason), or no report at all (the self-check failed here,
a grading process died, the pool stopped).
"""

import json
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

from .. import safe
from ..report.model import not_graded_reason
from ..store import one_line
from . import database

# how the reason of a submission the grader itself could not grade begins (the self-check failed
# here, no grading process could start): the whole reason is for the instructor (their pages, the
# CSV, the log); a student reads app.GRADER_FAULT_WORDS instead
GRADER_FAULT = "the grader cannot grade here"


def log(message):
    """One line on stderr: safe to show (a path or a name a student sent holds no escape) and short."""
    print(
        f"{datetime.now().isoformat(timespec='seconds')} seqgrader serve: {safe.one_line(message, 2000)}",
        file=sys.stderr,
        flush=True,
    )


def budget(course, exercises):
    """Seconds one submission may take: every exercise at its time limit, plus a load each (as grade-batch)."""
    return sum(course.exercises[ex].timeout + course.load_timeout + 5 for ex in exercises) + 60


class LocalGrader:
    """Warm grading processes on this machine, one LocalPool per assignment (made when first needed)."""

    def __init__(self, course, course_file, processes, log_path):
        self.course, self.course_file = course, course_file
        self.processes, self.log_path = processes, log_path
        self.pools = {}
        self.lock = threading.Lock()

    def pool(self, assignment):
        """The LocalPool of `assignment`, made on first use (with no process yet); its processes
        work in "/" and read the course by its absolute path."""
        from ..batch.pool import LocalPool

        with self.lock:
            if assignment not in self.pools:
                exercises = self.course.assignment(assignment)
                options = {"language": None, "max_examples": None, "exercises": exercises, "share": True}
                # cwd "/": nothing of the service's folders (the data, the course) is a grading
                # process's own; it gets the course by its absolute path, and no secret of the
                # service's environment (batch/pool.py's _child_env)
                self.pools[assignment] = LocalPool(
                    self.processes,
                    1,
                    str(Path(self.course_file).resolve()),
                    options,
                    budget(self.course, exercises),
                    self.log_path,
                    cwd="/",
                )
            return self.pools[assignment]

    def warm_up(self, assignments):
        """Start a process in the pool of each of `assignments`, in turn, until `processes` run in all."""
        for a in assignments:
            with self.lock:
                if sum(p.size() for p in self.pools.values()) >= self.processes:
                    return  # no more than `processes` in all
            self.pool(a).warm_up(1)

    def grade(self, assignment, path, student):
        """Grade the submission at `path` on `assignment`'s pool, an idle process of another pool
        stopped to make room if need be; returns the pool's result dict."""
        pool = self.pool(assignment)
        self._make_room(pool)
        return pool.grade(SimpleNamespace(path=Path(path), student=student))

    def _make_room(self, pool):
        """`processes` grading processes in all, whatever the number of assignments: when `pool`
        has no idle process and the others hold them all, one of theirs that is idle stops."""
        with self.lock:
            others = [p for p in self.pools.values() if p is not pool]
        if pool.has_idle() or pool.size() + sum(p.size() for p in others) < self.processes:
            return
        for other in sorted(others, key=lambda p: -p.size()):
            if other.retire_idle():
                return

    def close(self):
        """Stop every pool's processes and forget the pools."""
        with self.lock:
            pools, self.pools = list(self.pools.values()), {}
        for p in pools:
            p.close()


class DaskGrader:
    """A Dask cluster's warm grading processes (batch/cluster.py), one submission per call; one
    client of the scheduler for every grading thread (made at the first call, again if it closed)."""

    def __init__(self, address, course, course_file):
        self.address, self.course, self.course_file = address, course, course_file
        self.client = None
        self.lock = threading.Lock()

    def warm_up(self, assignments):
        """Nothing: a Dask worker starts its processes with its first task of the course."""
        pass

    def _client(self):
        from ..batch.cluster import connect

        with self.lock:
            if self.client is None or self.client.status != "running":
                self.client = connect(self.address)
            return self.client

    def grade(self, assignment, path, student):
        """Grade the submission at `path` on the cluster (`run_dask`); returns its result dict, or a
        retryable error when the cluster returned nothing."""
        from ..batch.cluster import run_dask
        from ..batch.discover import Item

        exercises = self.course.assignment(assignment)
        options = {"language": None, "max_examples": None, "exercises": exercises, "share": True}
        results = run_dask(
            self.address,
            [Item(student, Path(path))],
            self.course_file,
            self.course,
            options,
            budget(self.course, exercises),
            client=self._client(),
        )
        try:
            for _item, res in results:
                return res
        finally:
            results.close()
        return {"error": "the Dask cluster returned nothing", "retry": True}

    def close(self):
        """Close the client of the scheduler, if there is one (a scheduler gone already is no error)."""
        with self.lock:
            client, self.client = self.client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - a scheduler gone already
                pass


class GradingLoop:
    """`threads` grading loops and their housekeeping, for the service process `owner`."""

    def __init__(self, engine, grader, uploads, threads=1, lease=60.0, poll=1.0, owner=None):
        self.engine, self.grader, self.uploads = engine, grader, Path(uploads)
        self.threads, self.lease, self.poll = threads, lease, poll
        self.owner = owner or database.owner_id()
        self.wake = threading.Event()
        self.stop = threading.Event()
        self._threads = []
        self.graded = 0

    def start(self):
        """Queue again what a stopped process left in grading, then start the `threads` grading
        loops and the lease renewer (daemon threads)."""
        back, given_up = database.requeue_abandoned(self.engine, self.owner)
        if back or given_up:
            log(
                f"{len(back)} submission(s) left in grading by a stopped process queued again"
                + (f", {len(given_up)} given up (interrupted {database.MAX_CLAIMS} times)" if given_up else "")
            )
        for i in range(self.threads):
            t = threading.Thread(target=self._loop, name=f"grading-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        t = threading.Thread(target=self._housekeeping, name="leases", daemon=True)
        t.start()
        self._threads.append(t)

    def close(self):
        """Stop the loops (an idle one at once) and the grader's processes; a submission cut short
        goes back to the queue when its lease ends."""
        self.stop.set()
        self.wake.set()
        self.grader.close()

    def _housekeeping(self):
        last_requeue = time.monotonic()
        while not self.stop.wait(self.lease / 4):
            try:
                database.renew(self.engine, self.owner, self.lease)
                if time.monotonic() - last_requeue >= self.lease:
                    last_requeue = time.monotonic()
                    back, _ = database.requeue_abandoned(self.engine, self.owner)
                    if back:
                        log(f"{len(back)} abandoned submission(s) queued again")
                        self.wake.set()
            except Exception as e:  # noqa: BLE001 - the database may be away a moment: try again later
                log(f"could not renew the leases: {type(e).__name__}: {one_line(e, 200)}")

    def _loop(self):
        while not self.stop.is_set():
            # cleared before the queue is read: an upload accepted after that read sets it again,
            # and the wait below returns at once (no upload waits for the next poll)
            self.wake.clear()
            try:
                row = database.claim(self.engine, self.owner, self.lease)
            except Exception as e:  # noqa: BLE001 - the database may be away a moment
                log(f"could not read the queue: {type(e).__name__}: {one_line(e, 200)}")
                row = None
            if row is None:
                self.wake.wait(self.poll)  # set by the upload routes (app.py), or `poll` seconds
                continue
            try:
                if row["claims"] > database.MAX_CLAIMS:  # released again and again: something here fails on it
                    database.finish(
                        self.engine,
                        self.owner,
                        row["id"],
                        None,
                        graded=False,
                        reason=f"grading was interrupted {row['claims'] - 1} times",
                    )
                    continue
                self.grade_one(row)
            except Exception as e:  # noqa: BLE001 - the database failed us: the row goes back to the queue
                log(f"grading {row['id']} failed: {type(e).__name__}: {one_line(e, 300)}; queued again")
                try:
                    database.release(self.engine, self.owner, row["id"])
                except Exception:  # noqa: BLE001 - then a later start (or its MAX_CLAIMS) settles it
                    pass
                self.stop.wait(self.poll)

    def grade_one(self, row):
        """Grade the claimed submission `row` and store the result: "graded" with its report, else
        "not_graded" with the reason (nothing while the service stops); a result whose lease was
        lost is dropped."""
        sid = row["id"]
        path = self.uploads / row["stored"]
        log(f"grading {sid} ({row['student']}, {row['assignment']}, try {row['claims']})")
        start = time.monotonic()
        try:
            res = self.grader.grade(row["assignment"], path, row["student"])
        except Exception as e:  # noqa: BLE001 - no process could start (GraderError), or the pool is closed
            res = {"fatal": f"{type(e).__name__}: {one_line(e, 300)}", "retry": True}
        if self.stop.is_set() and "report" not in res:
            return  # the service is stopping: the row goes back to the queue when its lease ends
        report = res.get("report")
        if report is not None:
            report["student"] = row["student"]
            reason = not_graded_reason(report)
            ok = database.finish(
                self.engine,
                self.owner,
                sid,
                json.dumps(report, ensure_ascii=False),
                graded=reason is None,
                score=report.get("score"),
                max_score=report.get("max_score"),
                reason=reason,
            )
            what = (
                f"graded {report.get('score', 0):g}/{report.get('max_score', 0):g}"
                if reason is None
                else f"not graded: {one_line(reason, 200)}"
            )
        else:
            reason = res.get("fatal") or res.get("error") or "unknown failure"
            if res.get("fatal"):
                reason = f"{GRADER_FAULT}: {reason}"
            ok = database.finish(self.engine, self.owner, sid, None, graded=False, reason=one_line(reason, 1000))
            what = f"not graded: {one_line(reason, 200)}"
        if ok:
            self.graded += 1
            log(f"{sid}: {what} ({time.monotonic() - start:.1f} s)")
        else:
            log(f"{sid}: the lease was lost while grading; the result is dropped (another process grades it)")
