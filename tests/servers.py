"""Real servers for the service's tests, started on 127.0.0.1 and stopped again:

    with postgres() as url:                   # Debian's PostgreSQL in a temporary folder
        ...                                   # url = "postgresql+psycopg://seqgrader:...@127.0.0.1:PORT/seqgrader"

    with jupyterhub(service_cmd) as hub:      # a real JupyterHub (and configurable-http-proxy from npm)
        hub.url                               # its public URL, "http://127.0.0.1:PORT/"
        hub.service_url                       # the service's public URL, hub.url + "services/seqgrader/"
        hub.token("alice")                    # a new API token of that user (the hub's REST API, as admin)
        hub.password                          # every user's password on the hub's login form

The hub knows three users: `alice` and `bob` (students) and `teacher` (in the group `instructors`),
who sign in with one shared password (DummyAuthenticator's).  It starts the service as a managed
service (its command, with JUPYTERHUB_API_TOKEN, JUPYTERHUB_SERVICE_PREFIX and the rest in its
environment) behind the proxy at /services/seqgrader/, with no confirmation page on OAuth, and every
user may use it (the `user` role plus `access:services!service=seqgrader`).  Nobody has a notebook
server: the tests need none.

Both stop everything they started and fail when a process they started outlives them.  PostgreSQL
refuses to run as root, so as root it runs as the `postgres` system user (or `nobody`) in a folder
that user owns.  `free_port()` and `wait_http()` are for the tests that start the service itself."""

import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

SERVICE = "seqgrader"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, timeout=60, proc=None, ok=(200,), log=None):
    """Wait until `url` answers with one of `ok` (a 3xx counts when it is listed); fail early when
    `proc` exits, with the end of `log` (a file) in the message."""
    opener = urllib.request.build_opener(_NoRedirect)
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{url}: the server exited with status {proc.returncode}" + _tail(log))
        try:
            with opener.open(url, timeout=5) as r:
                if r.status in ok:
                    return r.status
                last = r.status
        except urllib.error.HTTPError as e:
            if e.code in ok:
                return e.code
            last = e.code
        except (urllib.error.URLError, OSError) as e:
            last = e
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout} s (last: {last})" + _tail(log))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


def _tail(log, n=4000):
    if log and Path(log).exists():
        return "\n--- " + str(log) + " ---\n" + Path(log).read_text(errors="replace")[-n:]
    return ""


# ---------------------------------------------------------------- processes


def _children(pid):
    """Every live descendant of `pid`, as {pid: start time} (start time tells a reused pid apart)."""
    parent = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                stat = (p / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            parent[int(p.name)] = (int(fields[1]), fields[19])
    found, todo = {}, [pid]
    while todo:
        me = todo.pop()
        for child, (ppid, start) in parent.items():
            if ppid == me and child not in found:
                found[child] = start
                todo.append(child)
    return found


def _alive(pid, start):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[19] == start and fields[0] != "Z"


def stop(proc, descendants, sig=signal.SIGTERM, timeout=30, what="server"):
    """Stop `proc` with `sig`, wait, and make sure none of `descendants` (from _children, taken
    while it ran) is left; kill what is, and fail."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise RuntimeError(f"the {what} did not stop within {timeout} s of {sig.name}") from None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p, s) for p, s in descendants.items()):
        time.sleep(0.1)
    left = [p for p, s in descendants.items() if _alive(p, s)]
    for p in left:
        with contextlib.suppress(OSError):
            os.kill(p, signal.SIGKILL)
    if left:
        names = [
            Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:120]
            for p in left
            if Path(f"/proc/{p}/cmdline").exists()
        ]
        raise RuntimeError(f"the {what} left {len(left)} process(es) running after it stopped: {names}")


# ---------------------------------------------------------------- PostgreSQL


def postgres_bin():
    """The folder of Debian's PostgreSQL server programs (the newest installed), or one on PATH."""
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if versions:
        return versions[-1].parent
    found = shutil.which("postgres")
    if found:
        return Path(found).resolve().parent
    raise RuntimeError(
        "PostgreSQL's server is not installed: the service's database tests run a real one. "
        "Install Debian's package with `apt-get install -y postgresql` (bin/setup does it as root)."
    )


def _unprivileged():
    """As root: (uid, gid) of a user PostgreSQL accepts to run as; otherwise None (run as we are)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        return pw.pw_uid, pw.pw_gid
    raise RuntimeError("running as root, and neither the `postgres` nor the `nobody` user exists to run PostgreSQL as")


@contextlib.contextmanager
def postgres(database="seqgrader", user="seqgrader"):
    """A PostgreSQL server of its own on a free loopback port, with `database` owned by `user`
    (password authentication); yields its SQLAlchemy URL and removes everything afterwards."""
    import psycopg

    bindir = postgres_bin()
    as_user = _unprivileged()
    top = Path(tempfile.mkdtemp(prefix="seqgrader-pg-"))
    password = secrets.token_hex(12)
    run_as = {}
    if as_user:
        os.chown(top, *as_user)
        run_as = dict(user=as_user[0], group=as_user[1], extra_groups=[])
    data, log = top / "data", top / "postgres.log"
    pwfile = top / "pw"
    pwfile.write_text(password + "\n")
    if as_user:
        os.chown(pwfile, *as_user)
    proc = None
    try:
        r = subprocess.run(
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                user,
                f"--pwfile={pwfile}",
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
            ],
            capture_output=True,
            text=True,
            cwd=top,
            timeout=120,
            **run_as,
        )
        if r.returncode:
            raise RuntimeError(f"initdb failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        port = free_port()
        with open(log, "w") as logf:
            if as_user:
                os.chown(log, *as_user)
            proc = subprocess.Popen(
                [
                    str(bindir / "postgres"),
                    "-D",
                    str(data),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(port),
                    "-k",
                    str(top),
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "full_page_writes=off",
                    "-c",
                    "max_connections=200",
                ],
                stdout=logf,
                stderr=subprocess.STDOUT,
                cwd=top,
                **run_as,
            )
        conninfo = dict(host="127.0.0.1", port=port, user=user, password=password)
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"postgres exited with status {proc.returncode}" + _tail(log))
            try:
                with psycopg.connect(dbname="postgres", autocommit=True, connect_timeout=3, **conninfo) as conn:
                    conn.execute(f'CREATE DATABASE "{database}" OWNER "{user}"')
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise RuntimeError("postgres did not accept connections within 60 s" + _tail(log)) from None
                time.sleep(0.2)
        kids = _children(proc.pid)
        yield f"postgresql+psycopg://{user}:{password}@127.0.0.1:{port}/{database}"
        kids.update(_children(proc.pid))
        stop(proc, kids, sig=signal.SIGINT, what="PostgreSQL server")  # SIGINT: the fast shutdown
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(top, ignore_errors=True)


# ---------------------------------------------------------------- JupyterHub

USERS = ("alice", "bob", "teacher")
INSTRUCTORS = ("teacher",)

HUB_CONFIG = """\
import json
c = get_config()  # noqa: F821
settings = json.loads({settings!r})
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = settings["port"]
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = settings["hub_port"]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:%d" % settings["proxy_api_port"]
c.ConfigurableHTTPProxy.pid_file = settings["dir"] + "/proxy.pid"
c.ConfigurableHTTPProxy.command = [settings["chp"]]
c.JupyterHub.db_url = "sqlite:///" + settings["dir"] + "/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = settings["dir"] + "/cookie_secret"
c.JupyterHub.pid_file = settings["dir"] + "/jupyterhub.pid"
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = settings["password"]
c.Authenticator.allowed_users = set(settings["users"])
c.JupyterHub.load_groups = {{"instructors": {{"users": settings["instructors"]}}}}
# nobody gets a notebook server here; a login lands on the service, not on a spawn page
c.JupyterHub.default_url = "/services/" + settings["service"] + "/"
c.JupyterHub.load_roles = [
    # every user may use the service (JupyterHub 5 and 6 grant no service to users by default)
    {{"name": "user", "scopes": ["self", "access:services!service=" + settings["service"]]}},
    # the tests' own client: makes each user's API token
    {{"name": "test-client", "scopes": ["tokens", "read:users"], "services": ["test-client"]}},
]
c.JupyterHub.services = [
    {{"name": settings["service"], "url": settings["service_url"], "command": settings["command"],
      "environment": settings["environment"], "cwd": settings["cwd"], "oauth_no_confirm": True,
      "display": True}},
    {{"name": "test-client", "api_token": settings["admin_token"]}},
]
"""


class Hub:
    def __init__(self, url, service_url, admin_token, password, directory):
        self.url, self.service_url, self.password, self.dir = url, service_url, password, directory
        self._admin = admin_token
        self.api = url + "hub/api/"

    def request(self, method, path, body=None, token=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.api + path,
            data=data,
            method=method,
            headers={"Authorization": f"token {token or self._admin}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"null")

    def token(self, user, note="service tests"):
        """A new API token of `user` (with all of the user's permissions, as a token the user makes
        on the hub's token page)."""
        return self.request("POST", f"users/{user}/tokens", {"note": note})["token"]

    def log(self):
        return _tail(self.dir / "jupyterhub.log", 20000)


@contextlib.contextmanager
def jupyterhub(service_cmd, *, environment=None, cwd=None, service=SERVICE, timeout=90):
    """A real JupyterHub on free loopback ports that runs `service_cmd` as its managed service
    `service` (on a free port of its own, given to it as JUPYTERHUB_SERVICE_URL); yields a Hub."""
    chp = shutil.which("configurable-http-proxy")
    if not chp:
        raise RuntimeError(
            "configurable-http-proxy (npm) is not installed: the JupyterHub tests run a real hub. "
            "Install it with `npm install -g configurable-http-proxy` (bin/setup does it as root)."
        )
    jupyterhub_bin = Path(sys.executable).parent / "jupyterhub"
    top = Path(tempfile.mkdtemp(prefix="seqgrader-hub-"))
    port, hub_port, proxy_api_port, service_port = (free_port() for _ in range(4))
    settings = dict(
        port=port,
        hub_port=hub_port,
        proxy_api_port=proxy_api_port,
        dir=str(top),
        chp=chp,
        password=secrets.token_hex(8),
        users=list(USERS),
        instructors=list(INSTRUCTORS),
        service=service,
        service_url=f"http://127.0.0.1:{service_port}",
        command=list(service_cmd),
        environment=dict(environment or {}),
        cwd=str(cwd or os.getcwd()),
        admin_token=secrets.token_hex(24),
    )
    (top / "jupyterhub_config.py").write_text(HUB_CONFIG.format(settings=json.dumps(settings)))
    log = top / "jupyterhub.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTERHUB_")}
    proc = None
    try:
        with open(log, "w") as logf:
            proc = subprocess.Popen(
                [str(jupyterhub_bin), "-f", str(top / "jupyterhub_config.py")],
                cwd=top,
                env=env,
                stdout=logf,
                stderr=subprocess.STDOUT,
            )
        url = f"http://127.0.0.1:{port}/"
        hub = Hub(url, f"{url}services/{service}/", settings["admin_token"], settings["password"], top)
        wait_http(url + "hub/health", timeout=timeout, proc=proc, log=log)
        kids = _children(proc.pid)
        yield hub
        kids.update(_children(proc.pid))
        stop(proc, kids, what="hub")
    finally:
        if proc is not None and proc.poll() is None:
            for p in _children(proc.pid):
                with contextlib.suppress(OSError):
                    os.kill(p, signal.SIGKILL)
            proc.kill()
            proc.wait()
        shutil.rmtree(top, ignore_errors=True)


# ---------------------------------------------------------------- the service itself

ROOT = Path(__file__).resolve().parent.parent


def write_roster(path, people=(("alice", "student"), ("bob", "student"), ("teacher", "instructor"))):
    Path(path).write_text("student,role\n" + "".join(f"{n},{r}\n" for n, r in people), encoding="utf-8")
    return Path(path)


def tokens(roster, data, db=None):
    """{name: token} from `seqgrader tokens` (the real command line)."""
    cmd = [sys.executable, "-m", "autograder", "tokens", "--roster", str(roster), "--data", str(data)]
    r = subprocess.run(cmd + (["--db", db] if db else []), capture_output=True, text=True, timeout=120, cwd=ROOT)
    if r.returncode:
        raise RuntimeError(f"seqgrader tokens failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return dict(line.split(",", 1) for line in r.stdout.split())


@contextlib.contextmanager
def serve(*args, data, port=None, env=None, timeout=120):
    """`seqgrader serve --data DATA --port PORT ARGS...` on 127.0.0.1, ready (its /healthz answers);
    yields (its URL, the process, its log file); stopped with SIGTERM afterwards, with its grading
    processes."""
    port = port or free_port()
    Path(data).mkdir(parents=True, exist_ok=True)
    log = Path(data) / f"serve-{port}.log"
    base = next((args[i + 1] for i, a in enumerate(args) if a == "--base-url"), "/").strip("/")
    url = f"http://127.0.0.1:{port}/" + (base + "/" if base else "")
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTERHUB_")}
    full_env.update(env or {})
    with open(log, "w") as logf:
        proc = subprocess.Popen(
            [sys.executable, "-m", "autograder", "serve", "--data", str(data), "--port", str(port), *map(str, args)],
            stdout=logf,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env=full_env,
        )
    try:
        wait_http(url + "healthz", timeout=timeout, proc=proc, log=log)
        kids = _children(proc.pid)
        yield url, proc, log
        kids.update(_children(proc.pid))
        stop(proc, kids, what="service")
        said = log.read_text(errors="replace").rstrip().splitlines()
        # SIGTERM: a clean stop, its grading processes first, and the log says so
        assert proc.returncode == 0 and said and said[-1].endswith("seqgrader serve: stopped"), (
            proc.returncode,
            said[-5:],
        )
    finally:
        if proc.poll() is None:
            for p in _children(proc.pid):
                with contextlib.suppress(OSError):
                    os.kill(p, signal.SIGKILL)
            proc.kill()
            proc.wait()


def call(method, url, auth=None, file=None, fields=None, timeout=60):
    """(status, JSON answer or {}, headers) of one request to the service; `auth` is the whole
    Authorization header ("Bearer ..." or "token ..."); `file`: a path sent as the multipart field
    `file` with `fields` beside it."""
    from autograder.nbgrader_course.kit_submit import _json, _request, multipart

    body = ctype = None
    if file is not None:
        body, ctype = multipart(fields or {}, "file", Path(file))
    status, raw, headers = _request(method, url, auth, body, ctype, timeout=timeout)
    return status, _json(status, raw), headers


def wait_graded(base, auth, ids, timeout=600):
    """{id: the API's answer} once every submission of `ids` is graded or not graded."""
    deadline = time.monotonic() + timeout
    done = {}
    while True:
        for sid in ids:
            if sid not in done:
                status, view, _ = call("GET", f"{base}api/submissions/{sid}", auth)
                assert status == 200, (status, view)
                if view["status"] in ("graded", "not_graded"):
                    done[sid] = view
        if len(done) == len(ids):
            return done
        if time.monotonic() > deadline:
            raise AssertionError(f"not graded within {timeout} s: {sorted(set(ids) - set(done))}")
        time.sleep(0.5)


MASKS = (ROOT / "solutions" / "masks.py").read_text(encoding="utf-8")


def masks_submission(folder, name="masks.py", without_diagonal=False):
    """A .py submission with the reference masks (the other exercises of the assignment missing):
    quick to grade; `without_diagonal`: causal_mask forgets the diagonal (a catalogued mistake)."""
    code = MASKS.replace(".tril()", ".tril(-1)") if without_diagonal else MASKS
    assert code != MASKS or not without_diagonal
    path = Path(folder) / name
    path.write_text(code, encoding="utf-8")
    return path
