"""The service's commands, added to `seqgrader` by autograder/cli.py:

seqgrader serve   the grading web service (uvicorn), with its grading threads
seqgrader tokens  the roster's tokens, one `student,token` line per person
"""

import os
import re
import socket
import sys
import threading
from pathlib import Path

from ..errors import ConfigError, GraderError
from ..options import add_course_option

DATA_DEFAULT = "seqgrader-data"

SERVE_HELP = """\
Run the grading web service: students upload a notebook or a Python file (a page, or
POST /api/submissions), the service grades it on warm grading processes it keeps (the same
sandboxed processes as grade-batch; or a Dask cluster with --dask-scheduler) and shows the report
`grade --html` writes; instructors see the whole class and export a CSV. The HTTP interface is
described in docs/service.md.

Data: --data DIR (default ./seqgrader-data) holds the uploads (under generated names), the
grading processes' log and, unless --db names another database, the SQLite database service.db.
--db takes any SQLAlchemy URL: sqlite:///PATH or postgresql+psycopg://USER:PASSWORD@HOST/DB. The
schema is brought up to date on start (Alembic migrations shipped in the package).

Sign-in: --roster CSV (columns student, role) lets the people listed sign in with the tokens
`seqgrader tokens` prints; with JUPYTERHUB_API_TOKEN set (a JupyterHub service) or --jupyterhub,
JupyterHub signs people in.

Attempts, windows, deadlines and what students see come from course.yml's `service:` key
(autograder/config.py). A submission that cannot be graded costs no attempt. Every accepted upload
is on disk and in the database before the answer; a service killed while grading grades the
submission again when it starts, once. Several services may share one database."""


def parse_size(text):
    """Bytes from "5MB", "500kB", "2M" or a plain number of bytes."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)(?:i?[bB])?\s*", str(text))
    if not m:
        raise ConfigError(f"--max-upload {text!r}: write a size such as 5MB, 500kB or 1048576")
    factor = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
    return int(float(m.group(1)) * factor)


def _database(args):
    from .database import sqlite_url

    data = Path(args.data)
    _private(data)
    url = args.db or os.environ.get("SEQGRADER_DB") or sqlite_url(data)
    if url.startswith("sqlite:///") and not url.startswith("sqlite:///:memory:"):
        db = Path(url[len("sqlite:///") :])
        db.parent.mkdir(parents=True, exist_ok=True)
        _made_private([db, Path(f"{db}-wal"), Path(f"{db}-shm"), Path(f"{db}-journal")])
    return url


def _private(data):
    """Everything this process (and the grading processes it starts) writes is private to its
    user, whatever the umask it was given: 0700 folders, 0600 files.  The data folder holds the
    key that makes every token, and every upload; what is already there and readable by other
    users is made private, and said."""
    os.umask(0o077)
    data = Path(data)
    data.mkdir(parents=True, exist_ok=True)
    _made_private([data, *data.rglob("*")])


def _made_private(paths):
    import stat

    from .grading_loop import log

    opened, stuck = [], []
    for p in paths:
        try:
            st = p.lstat()
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o077:
            continue
        try:
            os.chmod(p, stat.S_IMODE(st.st_mode) & 0o700)
            opened.append(p)
        except OSError:
            stuck.append(p)
    if opened or stuck:
        log(
            f"WARNING: {len(opened) + len(stuck)} file(s) of the service's data could be read by other users of this "
            f"machine (e.g. {(opened + stuck)[0]}): "
            + ("made private now (0700 / 0600); " if opened else "")
            + (f"{len(stuck)} could not be changed by this user: change them yourself; " if stuck else "")
            + "whoever read the database has the key of every token: give everyone new ones with `seqgrader tokens "
            "--roster CSV --new-key`"
        )


def _engine(args):
    from .database import make_engine, migrate

    url = _database(args)
    try:
        engine = make_engine(url)
        migrate(engine)
    except ImportError as e:
        raise GraderError(
            f"the database {_safe(url)} needs a driver that is not installed: {e} (pip install 'seqgrader[service]')"
        ) from None
    except Exception as e:  # noqa: BLE001 - say which database, then stop
        if isinstance(e, GraderError):
            raise
        raise GraderError(f"cannot open the database {_safe(url)}: {type(e).__name__}: {e}") from None
    return engine, url


def _safe(url):
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


def _hub(base_url, engine, instructors_group=None):
    try:
        from .hub import Hub
    except ImportError as e:
        raise GraderError(
            f"JupyterHub sign-in (JUPYTERHUB_API_TOKEN is set, or --jupyterhub) needs the module "
            f"autograder.service.hub, which this installation cannot import ({e}); run with --roster "
            f"CSV and without JUPYTERHUB_API_TOKEN to sign in with tokens"
        ) from None
    return Hub(base_url=base_url, engine=engine, instructors_group=instructors_group)


def cmd_serve(args):
    """`seqgrader serve`: the options and the course checked, then the web service (uvicorn) and its
    grading loops run until stopped; returns 0."""
    try:
        import uvicorn

        from .app import Service, create_app
        from .auth import Roster, read_roster, sync_roster
        from .grading_loop import DaskGrader, GradingLoop, LocalGrader, log
    except ImportError as e:
        raise GraderError(
            f"`seqgrader serve` needs the service's packages: pip install 'seqgrader[service]' ({e})"
        ) from None
    from ..config import find_course, load_course

    course_file = find_course(args.course)
    course = load_course(course_file)
    for name in course.assignment_names():
        for ex in course.assignment(name):
            course.reference(ex)  # a missing reference: one clear error now
    max_upload = parse_size(args.max_upload)
    from ..load.submission import MAX_FILE_BYTES

    if max_upload > MAX_FILE_BYTES:  # the service parses what it accepts: its memory is bounded by this
        raise ConfigError(
            f"--max-upload {args.max_upload}: at most {MAX_FILE_BYTES >> 20}MB (the grader reads no larger file)"
        )
    hub_mode = args.jupyterhub or bool(os.environ.get("JUPYTERHUB_API_TOKEN"))
    if not hub_mode and not args.roster:
        raise ConfigError(
            "nobody could sign in: give --roster CSV (columns student,role), or run under JupyterHub "
            "(JUPYTERHUB_API_TOKEN set) or with --jupyterhub"
        )
    base_url = args.base_url or os.environ.get("JUPYTERHUB_SERVICE_PREFIX") or "/"
    host, port = args.host, args.port
    if (host is None or port is None) and os.environ.get("JUPYTERHUB_SERVICE_URL"):
        from urllib.parse import urlparse

        u = urlparse(os.environ["JUPYTERHUB_SERVICE_URL"])
        host, port = host or u.hostname, port or u.port
    host = host or "127.0.0.1"
    port = 8000 if port is None else port  # 0: a free port, named in the first log line

    engine, url = _engine(args)
    data = Path(args.data).resolve()
    if args.roster:
        people = sync_roster(engine, read_roster(args.roster))
        log(f"roster {args.roster}: {len(people)} people")
    authenticator = _hub(base_url, engine, args.instructors_group) if hub_mode else None
    workers = args.workers if args.workers is not None else (os.cpu_count() or 1)  # as grade-batch
    if workers < 0:
        raise ConfigError(f"--workers {workers}: write 0 or more")
    if args.poll <= 0:
        raise ConfigError(f"--poll {args.poll:g}: write a number of seconds above 0")
    if args.max_connections < 1:
        raise ConfigError(f"--max-connections {args.max_connections}: write 1 or more")
    for option, value in (("--header-timeout", args.header_timeout), ("--body-timeout", args.body_timeout)):
        if not value > 0:
            raise ConfigError(f"{option} {value:g}: write a number of seconds above 0")
    if workers == 0:
        grader = None
    elif args.dask_scheduler:
        grader = DaskGrader(args.dask_scheduler, course, course_file)
    else:
        grader = LocalGrader(course, course_file, workers, data / "workers.log")
    loop = None
    if grader is not None:
        loop = GradingLoop(engine, grader, data / "submissions", threads=workers, lease=args.lease, poll=args.poll)
    svc = Service(
        engine=engine,
        course=course,
        data=data,
        roster=Roster(engine),
        base_url=base_url,
        max_upload=max_upload,
        authenticator=authenticator,
        grading=loop,
        language=course.language,
    )
    app = create_app(svc)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        raise GraderError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    port = sock.getsockname()[1]  # --port 0: the free port the system chose
    if loop is not None:
        loop.start()
        first = [a for a in course.assignment_names() if a in course.service] or course.assignment_names()[:1]
        threading.Thread(target=grader.warm_up, args=(first,), name="warm-up", daemon=True).start()
    log(
        f"serving {Path(course_file).resolve()} on http://{host}:{port}{svc.base_url} (database {_safe(url)}, data {data}, "
        + ("JupyterHub sign-in" if authenticator else "roster tokens")
        + (f", believing X-Forwarded-* from {args.forwarded_allow_ips}" if args.forwarded_allow_ips else "")
        + (
            f", grading on {args.dask_scheduler}"
            if args.dask_scheduler
            else f", {workers} grading process(es)"
            if loop
            else ", no grading here"
        )
        + ")"
    )
    from .connections import guarded

    proxy = args.forwarded_allow_ips  # no proxy named: X-Forwarded-* are nobody's word
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        proxy_headers=bool(proxy),
        forwarded_allow_ips=proxy or None,
        http=guarded(args.max_connections, args.header_timeout, args.body_timeout),
    )
    server = _uvicorn_server()(config)
    try:
        server.run(sockets=[sock])
    finally:
        if loop is not None:
            loop.close()
        log("stopped")
    return 0


def _uvicorn_server():
    import contextlib

    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, except that a SIGTERM or Ctrl-C it has shut down on is not raised again
        afterwards (uvicorn does, which would end the process before the grading processes are
        stopped and the log says so)."""

        @contextlib.contextmanager
        def capture_signals(self):
            with super().capture_signals():
                try:
                    yield
                finally:
                    self.stopped_by = list(getattr(self, "_captured_signals", []))
                    getattr(self, "_captured_signals", []).clear()

    return Server


def cmd_tokens(args):
    """`seqgrader tokens`: the database's people made the roster's (the tokens or the key asked for
    replaced), then `name,token` printed for each; returns 0."""
    from .auth import read_roster, sync_roster

    engine, _ = _engine(args)
    rotate = ["*"] if args.rotate_all else (args.rotate or [])
    if args.new_key:
        from .database import new_secret

        new_secret(engine)  # every token and every sign-in made with the old key stops working
    roster = read_roster(args.roster)
    unknown = [n for n in rotate if n != "*" and n not in {name for name, _ in roster}]
    if unknown:
        raise ConfigError(f"--rotate: not on the roster: {', '.join(unknown)}")
    for name, _role, token in sync_roster(engine, roster, rotate=rotate):
        print(f"{name},{token}")
    sys.stdout.flush()
    return 0


def add_parser(sub):
    """Add the `serve` and `tokens` subcommands to `sub`; returns `serve`'s parser."""
    import argparse

    from .connections import BODY_TIMEOUT, HEADER_TIMEOUT, MAX_CONNECTIONS

    s = sub.add_parser(
        "serve",
        help="the grading web service (upload, queue, reports, the class's view)",
        description=SERVE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_course_option(s)
    s.add_argument(
        "--data",
        metavar="DIR",
        default=DATA_DEFAULT,
        help=f"folder for the uploads, the log and the SQLite database (default: ./{DATA_DEFAULT})",
    )
    s.add_argument(
        "--db",
        metavar="URL",
        help="database URL (default: sqlite:///DATA/service.db; also "
        "postgresql+psycopg://USER:PASSWORD@HOST/DB; or $SEQGRADER_DB)",
    )
    s.add_argument("--host", help="address to listen on (default: 127.0.0.1, or JUPYTERHUB_SERVICE_URL's)")
    s.add_argument("--port", type=int, help="port (default: 8000, or JUPYTERHUB_SERVICE_URL's)")
    s.add_argument(
        "--base-url",
        metavar="PREFIX",
        help="the path every route lives under, e.g. /services/seqgrader/ (default: "
        "$JUPYTERHUB_SERVICE_PREFIX, else /)",
    )
    s.add_argument(
        "--roster",
        metavar="CSV",
        help="who may sign in with a token: columns student, role (student or instructor); see `seqgrader tokens`",
    )
    s.add_argument(
        "--jupyterhub",
        action="store_true",
        help="sign in through JupyterHub (the default when JUPYTERHUB_API_TOKEN is set)",
    )
    s.add_argument(
        "--instructors-group",
        metavar="GROUP",
        help="under JupyterHub: the hub group whose members (and the hub's admins) are instructors "
        "(default: $SEQGRADER_INSTRUCTORS_GROUP, else instructors)",
    )
    s.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="submissions graded at once: grading threads and warm grading processes (default: the "
        "number of cores, as grade-batch; 0: this process accepts submissions and another one on "
        "the same database grades them)",
    )
    s.add_argument(
        "--dask-scheduler",
        metavar="ADDRESS",
        help="grade on a Dask cluster (tcp://HOST:8786) instead of local grading processes",
    )
    s.add_argument("--max-upload", metavar="SIZE", default="5MB", help="largest file accepted (default 5MB)")
    s.add_argument(
        "--lease",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long a submission being graded stays claimed without news from its process; "
        "renewed while it grades (default 60)",
    )
    s.add_argument(
        "--poll",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="how often an idle grading thread reads the queue for uploads another service on the same "
        "database accepted; an upload this service accepts is graded at once (default 1)",
    )
    s.add_argument(
        "--forwarded-allow-ips",
        metavar="IPS",
        help="the proxy in front of the service (its addresses, comma-separated, or *): its "
        "X-Forwarded-For and X-Forwarded-Proto are believed. Default: none, every client is "
        "the address it connects from (any local process could write those headers)",
    )
    s.add_argument(
        "--max-connections",
        type=int,
        default=MAX_CONNECTIONS,
        metavar="N",
        help=f"connections open at once; one more is answered 503 (default {MAX_CONNECTIONS})",
    )
    s.add_argument(
        "--header-timeout",
        type=float,
        default=HEADER_TIMEOUT,
        metavar="SECONDS",
        help=f"how long a request's headers may take to arrive, then 408 and closed (default {HEADER_TIMEOUT:g})",
    )
    s.add_argument(
        "--body-timeout",
        type=float,
        default=BODY_TIMEOUT,
        metavar="SECONDS",
        help=f"how long a request's body (an upload) may take to arrive, then closed (default {BODY_TIMEOUT:g})",
    )
    s.set_defaults(func=cmd_serve)

    t = sub.add_parser(
        "tokens",
        help="print the roster's sign-in tokens (student,token), making them if needed",
        description="Print one line `student,token` per person of the roster, for `seqgrader serve "
        "--roster`. The tokens are stable: printing them again gives the same ones, until "
        "--rotate replaces a person's (their old token and sign-ins stop working). The "
        "database keeps only a hash of each token. People no longer on the roster cannot "
        "sign in any more.",
    )
    t.add_argument("--roster", metavar="CSV", required=True, help="columns student, role (student or instructor)")
    t.add_argument(
        "--data",
        metavar="DIR",
        default=DATA_DEFAULT,
        help=f"the service's data folder, for its SQLite database (default: ./{DATA_DEFAULT})",
    )
    t.add_argument("--db", metavar="URL", help="database URL (default: sqlite:///DATA/service.db, or $SEQGRADER_DB)")
    t.add_argument("--rotate", action="append", metavar="NAME", help="give NAME a new token (repeatable)")
    t.add_argument("--rotate-all", action="store_true", help="give everyone a new token")
    t.add_argument(
        "--new-key",
        action="store_true",
        help="replace the service's key, from which every token is made: everyone gets a new token and "
        "is signed out (for a key that others may have read)",
    )
    t.set_defaults(func=cmd_tokens)
    return s
