"""The service's database: the tables, the queue and the attempts, in portable SQL (SQLite or
PostgreSQL through SQLAlchemy 2; the schema itself comes from migrations/, run on start).

    people        one row per person who may sign in: name, role ("student" | "instructor"),
                  the sha256 of their token and its generation (`tokens --rotate` adds one)
    keys          the service's secret key (signs the sign-in cookie and derives the tokens)
    sessions      one row per signed-in browser: the sha256 of its cookie's nonce, whose it is and
                  until when.  A cookie counts only while its row is there: signing out, a new
                  token and leaving the roster delete rows, so a copied cookie dies with them
    submissions   one row per accepted upload: who, which assignment, the file on disk (a generated
                  name), the queue's state and lease, and whether it holds one of the attempts
    results       at most one row per submission (its primary key is the submission's): the
                  report and the score.  A second result for the same submission cannot be written

The queue is the submissions table.  A row's `status` goes

    queued --claim()--> grading --finish()--> graded | not_graded
                           |
                           +-- requeue_abandoned(): the lease ran out, or its owner process is gone
                           +-- release(): its own process could not finish it (the database failed)

`claim()` takes the oldest queued row for this process: on PostgreSQL through
``SELECT ... FOR UPDATE SKIP LOCKED``, on SQLite through one guarded ``UPDATE ... WHERE
status = 'queued'`` (SQLite runs one writer at a time: every transaction here starts with BEGIN
IMMEDIATE).  Either way the UPDATE names the row's old status, so two processes never both take
it.  A claim sets `lease_owner` (host:pid:nonce of the process) and `lease_until`; the grading
process renews the lease while it grades (`renew()`), and `finish()` writes the result only while
it still holds the lease, in the same transaction as the result row.

Attempts: `accept()` counts the charged submissions of the window and inserts the new row (charged)
in one transaction, holding the person's row locked (PostgreSQL) or the database's write lock
(SQLite), so two uploads at once cannot both take the last attempt.  `finish()` gives the attempt
back (`charged` false) when the submission ends "not graded".
"""

import hashlib
import os
import socket
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    func,
    select,
    update,
)

metadata = MetaData()

people = Table(
    "people",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("role", String(20), nullable=False),
    Column("active", Boolean, nullable=False, default=True),
    Column("token_hash", String(64), unique=True),
    Column("generation", Integer, nullable=False, default=0),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

keys = Table(
    "keys", metadata, Column("name", String(50), primary_key=True), Column("value", String(200), nullable=False)
)

sessions = Table(
    "sessions",
    metadata,
    Column("id", String(64), primary_key=True),  # sha256 of the cookie's nonce
    Column("name", String(200), nullable=False, index=True),
    Column("expires_at", DateTime(timezone=True), nullable=False),
)

submissions = Table(
    "submissions",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("student", String(200), nullable=False, index=True),
    Column("assignment", String(200), nullable=False),
    Column("filename", String(300), nullable=False),  # as uploaded: shown (escaped), never a path
    Column("stored", String(100), nullable=False),  # the file under the data folder: a generated name
    Column("status", String(20), nullable=False, index=True),
    Column("charged", Boolean, nullable=False),  # holds one of the student's attempts
    Column("created_at", DateTime(timezone=True), nullable=False, index=True),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Column("lease_owner", String(200)),
    Column("lease_until", DateTime(timezone=True)),
    Column("claims", Integer, nullable=False, default=0),  # how many times grading started
    Column("score", Float),
    Column("max_score", Float),
    Column("reason", Text),  # why it was not graded
)

results = Table(
    "results",
    metadata,
    Column("submission_id", String(32), ForeignKey("submissions.id"), primary_key=True),
    Column("report", Text, nullable=False),  # the contract's JSON report
    Column("score", Float),
    Column("max_score", Float),
    Column("graded_by", String(200), nullable=False),  # the lease owner that wrote it
    Column("created_at", DateTime(timezone=True), nullable=False),
)

STATUSES = ("queued", "grading", "graded", "not_graded")
MAX_SESSIONS = 20  # signed-in browsers per person; signing in once more ends the oldest
MAX_CLAIMS = 3  # a submission whose grading was interrupted this often is not graded (it may be the cause)


def now():
    """The current time, in UTC."""
    return datetime.now(UTC)


def aware(t):
    """A datetime read back from the database, in UTC (SQLite gives it back without a zone,
    PostgreSQL in the connection's time zone)."""
    if t is None:
        return None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _row(row):
    """A row as a dict, its times in UTC."""
    return {k: aware(v) if isinstance(v, datetime) else v for k, v in row._mapping.items()}


# ---------------------------------------------------------------- the engine


def sqlite_url(folder):
    """The SQLite URL of service.db in `folder` (an absolute path)."""
    return f"sqlite:///{os.path.abspath(os.path.join(folder, 'service.db'))}"


def make_engine(url):
    """An engine for `url`; on SQLite: WAL, a busy timeout, and BEGIN IMMEDIATE for every
    transaction (one writer at a time, taken at the start, so no transaction fails half-way on a
    lock it cannot upgrade)."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 60, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _connect(dbapi_connection, _record):
            dbapi_connection.isolation_level = None  # the transactions are ours (BEGIN below)
            cur = dbapi_connection.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=60000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn):
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    return create_engine(url, pool_pre_ping=True)


def migrate(engine):
    """Bring the schema to the newest migration (alembic upgrade head), under a lock so that two
    processes starting at once do not both create it."""
    from alembic import command
    from alembic.config import Config

    here = os.path.dirname(os.path.abspath(__file__))
    cfg = Config(os.path.join(here, "alembic.ini"))
    cfg.set_main_option("script_location", os.path.join(here, "migrations"))
    with engine.begin() as conn:  # SQLite: BEGIN IMMEDIATE holds the write lock throughout
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(704245)")  # any fixed number of ours
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


# ---------------------------------------------------------------- who runs this process


def owner_id():
    """host:pid:nonce: who holds a lease (the nonce tells a restarted process with the same pid)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def owner_gone(owner, me):
    """True when `owner` was a process of this host that is no longer running (or this process's
    own pid under another nonce: an earlier life of it)."""
    try:
        host, pid, nonce = owner.rsplit(":", 2)
        pid = int(pid)
    except (ValueError, AttributeError):
        return False
    my_host, my_pid, _ = me.rsplit(":", 2)
    if host != my_host:
        return False  # another machine's: only its lease tells
    if pid == int(my_pid):
        return owner != me
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


# ---------------------------------------------------------------- keys and tokens


def secret(engine, name="signing"):
    """The service's secret key `name`, made on first use (one value for every process on the DB)."""
    with engine.begin() as conn:
        row = conn.execute(select(keys.c.value).where(keys.c.name == name)).first()
        if row is not None:
            return row.value
        value = os.urandom(32).hex()
        conn.execute(keys.insert().values(name=name, value=value))
        return value


def new_secret(engine, name="signing"):
    """Replace the key `name`: every token made from it and every cookie signed with it stop
    working, and every session ends."""
    with engine.begin() as conn:
        conn.execute(keys.delete().where(keys.c.name == name))
        conn.execute(keys.insert().values(name=name, value=os.urandom(32).hex()))
        conn.execute(sessions.delete())


def open_session(engine, name, seconds):
    """A new session of `name` for `seconds`: the nonce its cookie carries (signed).  Sessions
    past their end are deleted on the way."""
    nonce = os.urandom(16).hex()
    at = now()
    with engine.begin() as conn:
        conn.execute(sessions.delete().where(sessions.c.expires_at < at))
        conn.execute(
            sessions.insert().values(id=hash_token(nonce), name=name, expires_at=at + timedelta(seconds=seconds))
        )
        old = (
            conn.execute(
                select(sessions.c.id)
                .where(sessions.c.name == name)
                .order_by(sessions.c.expires_at.desc())
                .offset(MAX_SESSIONS)
            )
            .scalars()
            .all()
        )
        if old:  # a person signing in again and again keeps their newest browsers only
            conn.execute(sessions.delete().where(sessions.c.id.in_(old)))
    return nonce


def session_of(engine, nonce):
    """The name whose live session `nonce` is, or None."""
    if not nonce:
        return None
    with engine.begin() as conn:
        row = conn.execute(
            select(sessions.c.name, sessions.c.expires_at).where(sessions.c.id == hash_token(str(nonce)))
        ).first()
    return row.name if row is not None and aware(row.expires_at) > now() else None


def close_session(engine, nonce):
    """End the session `nonce` (signing out); a nonce with no session changes nothing."""
    with engine.begin() as conn:
        conn.execute(sessions.delete().where(sessions.c.id == hash_token(str(nonce))))


def close_sessions(conn, names):
    """(In the caller's transaction.)  Every session of these people ends."""
    if names:
        conn.execute(sessions.delete().where(sessions.c.name.in_(list(names))))


def hash_token(token):
    """The sha256 hex digest of `token`: what the database keeps of a token or a session's nonce."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass
class Person:
    name: str
    role: str
    generation: int = 0


# ---------------------------------------------------------------- submissions


def new_id():
    """A new random id, 32 hex digits."""
    return uuid.uuid4().hex


class AttemptsUsed(Exception):
    """No attempt is left: `next_at` is when the next one comes (None: not before the deadline)."""

    def __init__(self, used, allowed, next_at):
        super().__init__(f"{used} of {allowed} attempts used")
        self.used, self.allowed, self.next_at = used, allowed, next_at


def attempts_used(conn, student, assignment, window, at):
    """(how many charged submissions count now, the oldest of them that counts)."""
    q = select(func.count(), func.min(submissions.c.created_at)).where(
        submissions.c.student == student, submissions.c.assignment == assignment, submissions.c.charged.is_(True)
    )
    if window is not None:
        q = q.where(submissions.c.created_at > at - window)
    n, oldest = conn.execute(q).one()
    return n, aware(oldest)


def attempts_left(engine, student, assignment, rules, at=None):
    """How many attempts `student` has left for `assignment` now (None: no limit)."""
    if rules.attempts is None:
        return None
    with engine.begin() as conn:
        n, _ = attempts_used(conn, student, assignment, rules.window_length, at or now())
    return max(0, rules.attempts - n)


def _lock_person(conn, name, role):
    """The person's row, locked until the transaction ends (PostgreSQL: FOR UPDATE; SQLite holds
    the whole database's write lock anyway); made when a JupyterHub user submits the first time."""
    row = conn.execute(select(people.c.name).where(people.c.name == name).with_for_update()).first()
    if row is None:
        conn.execute(people.insert().values(name=name, role=role, active=True, generation=0, created_at=now()))
        conn.execute(select(people.c.name).where(people.c.name == name).with_for_update()).first()


def accept(engine, *, sid, student, role, assignment, filename, stored, rules, limited=True, at=None):
    """Insert a queued submission, charging one attempt, in one transaction; AttemptsUsed when none
    is left.  Returns the attempts left after this one (None: no limit)."""
    at = at or now()
    with engine.begin() as conn:
        _lock_person(conn, student, role)
        left = None
        if limited and rules.attempts is not None:
            window = rules.window_length
            used, oldest = attempts_used(conn, student, assignment, window, at)
            if used >= rules.attempts:
                next_at = None
                if window is not None:  # the oldest charged attempt of the window leaves it
                    inside = conn.execute(
                        select(submissions.c.created_at)
                        .where(
                            submissions.c.student == student,
                            submissions.c.assignment == assignment,
                            submissions.c.charged.is_(True),
                            submissions.c.created_at > at - window,
                        )
                        .order_by(submissions.c.created_at.desc())
                        .limit(1)
                        .offset(rules.attempts - 1)
                    ).first()
                    next_at = aware(inside.created_at if inside else oldest) + window
                raise AttemptsUsed(used, rules.attempts, next_at)
            left = rules.attempts - used - 1
        conn.execute(
            submissions.insert().values(
                id=sid,
                student=student,
                assignment=assignment,
                filename=filename,
                stored=stored,
                status="queued",
                charged=bool(limited and rules.attempts is not None),
                created_at=at,
                claims=0,
            )
        )
    return left


def claim(engine, me, lease):
    """Take the oldest queued submission for process `me` (status grading, a lease of `lease`
    seconds); its row as a dict, or None when nothing is queued."""
    with engine.begin() as conn:
        q = (
            select(submissions.c.id)
            .where(submissions.c.status == "queued")
            .order_by(submissions.c.created_at, submissions.c.id)
            .limit(1)
        )
        if conn.dialect.name == "postgresql":
            q = q.with_for_update(skip_locked=True)
        row = conn.execute(q).first()
        if row is None:
            return None
        t = now()
        done = conn.execute(
            update(submissions)
            .where(submissions.c.id == row.id, submissions.c.status == "queued")
            .values(
                status="grading",
                lease_owner=me,
                lease_until=t + timedelta(seconds=lease),
                started_at=t,
                claims=submissions.c.claims + 1,
            )
        )
        if done.rowcount != 1:
            return None  # another process took it between the two statements (not on SQLite)
        return _row(conn.execute(select(submissions).where(submissions.c.id == row.id)).one())


def renew(engine, me, lease):
    """Extend the leases `me` holds (called while it grades)."""
    with engine.begin() as conn:
        conn.execute(
            update(submissions)
            .where(submissions.c.status == "grading", submissions.c.lease_owner == me)
            .values(lease_until=now() + timedelta(seconds=lease))
        )


def finish(engine, me, sid, report_json, *, graded, score=None, max_score=None, reason=None):
    """Write the result of a submission `me` grades, and its new status, in one transaction; a
    submission not graded gives its attempt back.  False (nothing written) when `me` no longer
    holds its lease (another process took it over)."""
    t = now()
    with engine.begin() as conn:
        values = dict(
            status="graded" if graded else "not_graded",
            finished_at=t,
            lease_owner=None,
            lease_until=None,
            score=score if graded else None,
            max_score=max_score,
            reason=None if graded else reason,
        )
        if not graded:
            values["charged"] = False
        done = conn.execute(
            update(submissions)
            .where(submissions.c.id == sid, submissions.c.status == "grading", submissions.c.lease_owner == me)
            .values(**values)
        )
        if done.rowcount != 1:
            return False
        if report_json is not None:
            conn.execute(
                results.insert().values(
                    submission_id=sid, report=report_json, score=score, max_score=max_score, graded_by=me, created_at=t
                )
            )
    return True


def release(engine, me, sid):
    """Give a submission `me` holds back to the queue (its grading failed in the service itself)."""
    with engine.begin() as conn:
        conn.execute(
            update(submissions)
            .where(submissions.c.id == sid, submissions.c.status == "grading", submissions.c.lease_owner == me)
            .values(status="queued", lease_owner=None, lease_until=None)
        )


def requeue_abandoned(engine, me):
    """Rows left in `grading` by a process that died (its lease ran out, or it was a process of
    this host that is gone) go back to the queue; one interrupted MAX_CLAIMS times is not graded
    (it may be what killed them).  Returns the ids requeued."""
    t = now()
    back, given_up = [], []
    with engine.begin() as conn:
        rows = conn.execute(
            select(submissions.c.id, submissions.c.lease_owner, submissions.c.lease_until, submissions.c.claims).where(
                submissions.c.status == "grading"
            )
        ).all()
        for r in rows:
            if r.lease_owner == me:
                continue
            expired = r.lease_until is None or aware(r.lease_until) < t
            if not (expired or owner_gone(r.lease_owner or "", me)):
                continue
            guard = (
                submissions.c.id == r.id,
                submissions.c.status == "grading",
                submissions.c.lease_owner.is_(None)
                if r.lease_owner is None
                else submissions.c.lease_owner == r.lease_owner,
            )
            if r.claims >= MAX_CLAIMS:
                conn.execute(
                    update(submissions)
                    .where(*guard)
                    .values(
                        status="not_graded",
                        charged=False,
                        lease_owner=None,
                        lease_until=None,
                        finished_at=t,
                        reason=f"grading was interrupted {r.claims} times (the grading process died each time)",
                    )
                )
                given_up.append(r.id)
            else:
                conn.execute(
                    update(submissions).where(*guard).values(status="queued", lease_owner=None, lease_until=None)
                )
                back.append(r.id)
    return back, given_up


def get(engine, sid):
    """The submission `sid` as a dict, its times in UTC, or None."""
    with engine.begin() as conn:
        row = conn.execute(select(submissions).where(submissions.c.id == sid)).first()
        return _row(row) if row else None


def report_of(engine, sid):
    """The JSON text of submission `sid`'s report, or None when it has none."""
    with engine.begin() as conn:
        row = conn.execute(select(results.c.report).where(results.c.submission_id == sid)).first()
        return row.report if row else None


def listing(engine, student=None, assignment=None, limit=1000):
    """Submissions, newest first (of `student`, of `assignment` where given)."""
    q = select(submissions).order_by(submissions.c.created_at.desc(), submissions.c.id).limit(limit)
    if student is not None:
        q = q.where(submissions.c.student == student)
    if assignment is not None:
        q = q.where(submissions.c.assignment == assignment)
    with engine.begin() as conn:
        return [_row(r) for r in conn.execute(q)]


def latest_reports(engine, assignment):
    """{student: (submission row, report JSON)} of each student's newest submission of `assignment`
    that has a report (graded, or not graded with the report of why); only those reports are read."""
    q = (
        select(submissions.c.id, submissions.c.student)
        .join(results, results.c.submission_id == submissions.c.id)
        .where(submissions.c.assignment == assignment)
        .order_by(submissions.c.created_at, submissions.c.id)
    )
    with engine.begin() as conn:
        newest = {r.student: r.id for r in conn.execute(q)}
        out = {}
        ids = list(newest.values())
        for start in range(0, len(ids), 500):
            rows = conn.execute(
                select(submissions, results.c.report)
                .join(results, results.c.submission_id == submissions.c.id)
                .where(submissions.c.id.in_(ids[start : start + 500]))
            )
            for r in rows:
                m = _row(r)
                out[m["student"]] = (m, m.pop("report"))
    return out


def queued_ahead(engine, row):
    """How many queued submissions came before `row`."""
    with engine.begin() as conn:
        return conn.execute(
            select(func.count()).where(submissions.c.status == "queued", submissions.c.created_at < row["created_at"])
        ).scalar_one()


def counts(engine):
    """{status: how many submissions have it}; a status no submission has is left out."""
    with engine.begin() as conn:
        return dict(conn.execute(select(submissions.c.status, func.count()).group_by(submissions.c.status)).all())
