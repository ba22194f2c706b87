"""`seqgrader serve` on a real PostgreSQL server (Debian's, started by tests/servers.py): uploads are
graded with the score `seqgrader grade` gives the same file, and two services on one database (and
one data folder) share the queue: each submission is graded exactly once, by one of them."""

import json

import sqlalchemy as sa

from .conftest import run_grade
from .servers import call, masks_submission, postgres, serve, tokens, wait_graded, write_roster

ASSIGNMENT = "sequence-models"


def test_two_services_on_one_postgresql_database_grade_each_submission_once(tmp_path):
    good = masks_submission(tmp_path, "good.py")
    bad = masks_submission(tmp_path, "bad.py", without_diagonal=True)
    expected = {}
    for f in (good, bad):  # the command line's score for each file, graded on its own
        proc, report = run_grade(f, tmp_path / f.stem, "--assignment", ASSIGNMENT, "-q")
        assert proc.returncode == 0 and report is not None, proc.stderr[-2000:]
        expected[f.name] = report["score"]
    assert expected["good.py"] > expected["bad.py"] > 0, expected

    with postgres() as db:
        data = tmp_path / "data"
        roster = write_roster(tmp_path / "roster.csv")
        tok = tokens(roster, data, db)
        assert set(tok) == {"alice", "bob", "teacher"}
        with (
            serve("--db", db, "--roster", roster, "--workers", 1, data=data) as (one, _, log_one),
            serve("--db", db, "--roster", roster, "--workers", 1, data=data) as (two, _, log_two),
        ):
            sent = {}
            for i in range(8):  # alternately to each service, from both students, both files
                base, student, f = (one, two)[i % 2], ("alice", "bob")[i // 2 % 2], (good, bad)[i // 4]
                status, view, _ = call(
                    "POST",
                    base + "api/submissions",
                    f"Bearer {tok[student]}",
                    file=f,
                    fields={"assignment": ASSIGNMENT},
                )
                assert status == 202 and view["status"] == "queued", (status, view)
                sent[view["id"]] = (student, f.name)
            done = wait_graded(one, f"Bearer {tok['teacher']}", list(sent), timeout=600)
            # each service shows what the other graded: one database
            for sid, (student, _) in sent.items():
                status, view, _ = call("GET", f"{two}api/submissions/{sid}", f"Bearer {tok[student]}")
                assert status == 200 and view == {**done[sid], "attempts_left": view["attempts_left"]}
            logs = log_one.read_text() + log_two.read_text()

        for sid, (_student, name) in sent.items():
            view = done[sid]
            assert view["status"] == "graded", (view, logs[-3000:])
            assert view["score"] == expected[name], (name, view["score"], expected[name])
        engine = sa.create_engine(db)
        try:
            with engine.connect() as conn:
                rows = conn.execute(
                    sa.text(
                        "SELECT s.id, s.claims, r.graded_by, r.report FROM submissions s "
                        "JOIN results r ON r.submission_id = s.id"
                    )
                ).all()
                n_results = conn.execute(sa.text("SELECT count(*) FROM results")).scalar()
        finally:
            engine.dispose()
    assert n_results == len(sent) and {r.id for r in rows} == set(sent)
    assert all(r.claims == 1 for r in rows), [(r.id, r.claims) for r in rows]  # nobody graded one twice
    graders = {r.graded_by for r in rows}
    assert len(graders) == 2, f"one service graded everything: {graders}\n{logs[-3000:]}"
    for r in rows:  # the report stored is the one whose score the API gives
        assert json.loads(r.report)["score"] == expected[sent[r.id][1]]
