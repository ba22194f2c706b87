"""Who is asking: one dependency, `current_user`, that every route but the public ones (/healthz,
the sign-in page) goes through; the app's protected router declares it for all its routes, so no
route can forget it (tests/test_service.py checks every route).

    User              name, role ("student" | "instructor"), how they signed in (`via`)
    Roster            the people of a roster CSV (columns `student`, `role`) and their tokens
    current_user()    the dependency: the first of
                        1. ``Authorization: Bearer TOKEN`` (a roster token),
                        2. the sign-in cookie (set by the sign-in page from a token; signed),
                        3. the authenticator (JupyterHub mode: autograder/service/hub.py)
                      and NotSignedIn otherwise (API: 401 JSON; pages: to the sign-in page)
    check_csrf()      a request signed in by a cookie (ours or the Hub's) that changes something
                      must come from this site (same_origin) and carry the page's forms token; a
                      request signed in by a header (a roster or Hub token) needs neither
    safe_next()       where a sign-in may lead afterwards: a path of this service, nothing else

Sessions: a sign-in cookie names a session row (database.sessions); signing out deletes it, and a
new token or leaving the roster deletes the person's, so a copied cookie stops working with them.

Signed cookies: itsdangerous (`signed()`, `unsign()`): a JSON payload, the time it was signed and
an HMAC-SHA256 of both, under a key derived from a secret and a salt that names the cookie's
purpose, so a cookie of one purpose (or signed with another secret) is refused as another's.
The roster's sign-in cookie ({"name", "gen", "nonce"}; salt SIGNIN_SALT) is signed with the
service's key and read for COOKIE_DAYS at most; the JupyterHub mode's cookies are hub.py's.
A cookie that is tampered with, cut short, too old, of another purpose or garbage reads as
nobody's (None), never as an error.

Tokens: a person's token is HMAC(the service's key, name:generation), so `seqgrader tokens`
prints the same token every time until `--rotate` adds one to the generation (the old token and
cookies made with it stop working).  The database holds the sha256 of each token; the key is in
the database too, so whoever reads the database can make tokens: keep it as private as the grades.

The authenticator seam (JupyterHub mode).  Any object with

    async def user(self, request) -> User | None      the Hub's OAuth cookie, or an
                                                      ``Authorization: token <API token>`` header
    router                                            a fastapi APIRouter (its /oauth_callback),
                                                      mounted under the base URL; may be None
    def login_url(self, request, next) -> str         where a browser goes to sign in
    def logout(self, request, response)               optional: end its sign-in (its session)
    def logout_url(self) -> str                       optional: where signing out leads

passed as ``create_app(..., authenticator=...)``.  `serve` builds one from
``autograder.service.hub.Hub(base_url=..., engine=...)`` when JUPYTERHUB_API_TOKEN is set (or
with --jupyterhub).
"""

import base64
import csv
import hashlib
import hmac
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from fastapi import Request
from itsdangerous import BadData, URLSafeTimedSerializer
from sqlalchemy import select, update
from starlette.concurrency import run_in_threadpool

from ..errors import NotSignedIn, ServiceError
from . import database

ROLES = ("student", "instructor")
COOKIE = "seqgrader-signin"
COOKIE_DAYS = 14
SIGNIN_SALT = "seqgrader roster sign-in cookie"


HEADER_VIAS = ("bearer", "hub-token")  # signed in by a header no browser adds by itself


@dataclass(frozen=True)
class User:
    name: str
    role: str = "student"  # "student" | "instructor"
    via: str = "bearer"  # "bearer" | "cookie" | what the authenticator says ("hub-cookie", "hub-token")
    nonce: str = field(default="", compare=False)  # the cookie's, for its forms' token

    @property
    def instructor(self):
        """Whether this person may see the whole class."""
        return self.role == "instructor"


# ---------------------------------------------------------------- the roster and its tokens


def read_roster(path):
    """[(name, role)] of a roster CSV with columns `student` and `role` (student | instructor)."""
    from ..errors import ConfigError

    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise ConfigError(f"cannot read the roster {path}: {e}") from None
    out, seen = [], set()
    for n, row in enumerate(rows, 2):
        name = (row.get("student") or "").strip()
        role = (row.get("role") or "student").strip().lower() or "student"
        if not name:
            raise ConfigError(f"{path}:{n}: no name in the `student` column (the columns are: student,role)")
        if role not in ROLES:
            raise ConfigError(f"{path}:{n}: role {role!r} of {name!r}: write student or instructor")
        if name in seen:
            raise ConfigError(f"{path}:{n}: {name!r} is listed twice")
        seen.add(name)
        out.append((name, role))
    if not out:
        raise ConfigError(f"{path} lists nobody (the columns are: student,role)")
    return out


def make_token(key, name, generation):
    """The person's sign-in token: an HMAC of the name and the token's generation under the service key."""
    mac = hmac.new(bytes.fromhex(key), f"token\0{name}\0{generation}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac[:24]).decode().rstrip("=")


def sync_roster(engine, roster, rotate=()):
    """Make the database's people the roster's: new names added, roles updated, people no longer
    listed deactivated (their tokens stop working); `rotate`: names (or "*" for all) whose token is
    replaced.  Returns [(name, role, token)] in the roster's order."""
    key = database.secret(engine)
    rotate = set(rotate)
    out, ended = [], []
    with engine.begin() as conn:
        have = {r.name: r for r in conn.execute(select(database.people))}
        listed = {name for name, _ in roster}
        for name, role in roster:
            old = have.get(name)
            gen = 0 if old is None else old.generation + (1 if ("*" in rotate or name in rotate) else 0)
            if old is not None and gen != old.generation:
                ended.append(name)  # a new token: the browsers signed in with the old one are signed out
            token = make_token(key, name, gen)
            values = dict(role=role, active=True, generation=gen, token_hash=database.hash_token(token))
            if old is None:
                conn.execute(database.people.insert().values(name=name, created_at=database.now(), **values))
            else:
                conn.execute(update(database.people).where(database.people.c.name == name).values(**values))
            out.append((name, role, token))
        for name, old in have.items():
            if name not in listed and old.token_hash is not None:
                conn.execute(update(database.people).where(database.people.c.name == name).values(active=False))
        database.close_sessions(conn, ended + [name for name in have if name not in listed])
    return out


class Roster:
    """Roster mode: tokens and the sign-in cookie, checked against the database."""

    def __init__(self, engine):
        self.engine = engine
        self.key = bytes.fromhex(database.secret(engine))
        self._cookies = signed(self.key, SIGNIN_SALT)

    def by_token(self, token):
        """The active person whose token this is, as a User, or None."""
        if not token:
            return None
        with self.engine.begin() as conn:
            row = conn.execute(
                select(database.people).where(
                    database.people.c.token_hash == database.hash_token(token), database.people.c.active.is_(True)
                )
            ).first()
        return row

    # ---- the cookie: name, generation and a nonce, signed with the time (itsdangerous)

    def cookie_for(self, row):
        """A new session of `row`'s person, as the cookie that carries it."""
        nonce = database.open_session(self.engine, row.name, COOKIE_DAYS * 86400)
        return self._cookies.dumps({"name": row.name, "gen": row.generation, "nonce": nonce})

    def from_cookie(self, value):
        """The person a sign-in cookie names, while its session lives and its generation is the person's; else None."""
        data = unsign(self._cookies, value, COOKIE_DAYS * 86400)
        if data is None:
            return None
        name, gen, nonce = data.get("name"), data.get("gen"), data.get("nonce")
        if not (isinstance(name, str) and isinstance(gen, int) and isinstance(nonce, str) and nonce):
            return None
        with self.engine.begin() as conn:  # the person, only while this cookie's session lives
            row = conn.execute(
                select(database.people, database.sessions.c.expires_at)
                .join(database.sessions, database.sessions.c.name == database.people.c.name)
                .where(
                    database.sessions.c.id == database.hash_token(nonce),
                    database.people.c.name == name,
                    database.people.c.active.is_(True),
                )
            ).first()
        if row is None or database.aware(row.expires_at) <= database.now() or row.generation != gen:
            return None  # signed out, rotated, or no longer on the roster
        return User(row.name, row.role, via="cookie", nonce=nonce)

    def sign_out(self, user):
        """End the session of `user`'s cookie: the cookie, wherever it was copied, is nobody's."""
        database.close_session(self.engine, user.nonce)

    def forms_token(self, user):
        """The token every form of a page for `user` carries (checked by check_csrf): an HMAC of
        the cookie's nonce under the service's key, made again to check it, never read back."""
        mac = hmac.new(self.key, f"forms:{user.name}:{user.nonce}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")


# ---------------------------------------------------------------- signed cookies


def signed(secret, salt):
    """The serializer of one kind of signed cookie: `secret` (bytes or str) and `salt` (what the
    cookie is for) give its HMAC-SHA256 key."""
    return URLSafeTimedSerializer(
        secret, salt=salt, signer_kwargs={"key_derivation": "hmac", "digest_method": hashlib.sha256}
    )


def unsign(serializer, value, max_age):
    """The dict a cookie of `serializer`'s kind carries, if it was signed by it less than
    `max_age` seconds ago; None for anything else (tampered, cut short, too old, another
    purpose's or another key's, not a dict, garbage)."""
    if not value or not isinstance(value, str):
        return None
    try:
        data = serializer.loads(value, max_age=max_age)
    except (BadData, UnicodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# ---------------------------------------------------------------- guessing tokens


class Failures:
    """Failed sign-ins (a wrong token on the sign-in page, an Authorization header that signs
    nobody in: a Bearer token nobody has, a Hub token the Hub does not know) per client
    address: `limit` of them within `window` seconds, and that address may try no token until the
    oldest is `window` seconds old (429 with Retry-After).  A browser already signed in (its
    cookie) is not stopped.  Behind a proxy the address is the client's only when the proxy is
    believed (--forwarded-allow-ips); otherwise everyone behind it shares one limit."""

    MAX_ADDRESSES = 10_000  # remembered at once; the oldest are forgotten first

    def __init__(self, limit=10, window=60.0):
        self.limit, self.window = limit, window
        self._seen = {}
        self._lock = threading.Lock()

    def wait(self, address):
        """Seconds until `address` may try a token again; 0 when it may now."""
        now = time.monotonic()
        with self._lock:
            times = self._seen.get(address)
            if not times:
                return 0
            while times and times[0] <= now - self.window:
                times.popleft()
            if not times:
                del self._seen[address]
                return 0
            return self.window - (now - times[0]) if len(times) >= self.limit else 0

    def add(self, address):
        """Count one failed sign-in from `address` (the last `limit` are kept per address)."""
        now = time.monotonic()
        with self._lock:
            times = self._seen.pop(address, None) or deque(maxlen=self.limit)
            times.append(now)
            self._seen[address] = times  # the most recent last
            while len(self._seen) > self.MAX_ADDRESSES:
                del self._seen[next(iter(self._seen))]

    def refusal(self, wait):
        """The 429 answer that says how many seconds to wait."""
        seconds = max(1, int(wait + 0.999))
        return ServiceError(
            429,
            "too_many_failures",
            f"这个地址的错误令牌太多了：请在 {seconds} 秒后再试。",
            f"Too many wrong tokens from this address: try again in {seconds} s.",
            {"Retry-After": str(seconds)},
        )


def client_address(request):
    """The address the request came from (the proxy's, behind a proxy)."""
    return request.client.host if request.client else "unknown"


# ---------------------------------------------------------------- the dependency


def _bearer(request):
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


async def current_user(request: Request) -> User:
    """The one dependency every protected route goes through.  A Bearer token that is no roster
    token is the authenticator's to judge (JupyterHub takes its API tokens as Bearer too)."""
    cached = getattr(request.state, "user", None)
    if cached is not None:
        return cached
    app = request.app.state.service
    user = None
    token = _bearer(request)
    failures = app.failures
    # a token of ours, or the Hub's ("token ..."): a proxy's "Basic ..." is no attempt at either
    sent = request.headers.get("authorization", "").partition(" ")[0].lower() in ("bearer", "token")
    if sent:
        wait = failures.wait(client_address(request))
        if wait:
            raise failures.refusal(wait)
    if token is not None:
        row = await run_in_threadpool(app.roster.by_token, token)
        if row is not None:
            user = User(row.name, row.role, via="bearer")
    if user is None and token is None and request.cookies.get(COOKIE):
        user = await run_in_threadpool(app.roster.from_cookie, request.cookies[COOKIE])
    if user is None and app.authenticator is not None:
        user = await app.authenticator.user(request)  # a Hub token may come as Bearer too
    if user is None and sent:
        failures.add(client_address(request))
    if user is None and token is not None:
        raise ServiceError(
            401,
            "bad_token",
            "令牌无效或已被更换：请向教师索取新的令牌。",
            "This token is not valid (or was replaced): ask your instructor for yours.",
        )
    if user is None:
        raise NotSignedIn()
    if user.role not in ROLES:
        user = User(user.name, "student", user.via, user.nonce)
    request.state.user = user
    return user


def check_csrf(request, user, sent):
    """A request that changes something, signed in by a cookie (ours or the Hub's: any way but a
    header, HEADER_VIAS), must come from this site and carry the page's forms token.  Keyed on how
    this request was signed in, never on which headers it has: a browser behind a proxy that
    asks for a password sends `Authorization: Basic ...` by itself, on every request."""
    if user.via in HEADER_VIAS:
        return
    if not same_origin(request):
        raise ServiceError(
            403,
            "cross_site",
            "拒绝来自其他网站的表单。",
            "A form sent from another site is refused (cross-site request).",
        )
    want = request.app.state.service.roster.forms_token(user)
    if not sent or not hmac.compare_digest(str(sent).encode(), want.encode()):  # bytes: any characters sent
        raise ServiceError(
            403,
            "csrf",
            "表单已过期：请重新打开页面再提交。",
            "This form is out of date or did not come from this site: reload the page and send it again.",
        )


def same_origin(request):
    """False when the browser says the request comes from another site: Sec-Fetch-Site (sent by
    every current browser) other than same-origin or none, else an Origin that is not this
    service's.  A client that sends neither (a script) is no browser another site can drive."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    return origin is None or origin in allowed_origins(request)


def allowed_origins(request):
    """The origins a state-changing request signed in by a cookie may come from: this host's."""
    host = request.headers.get("host", "")
    return {f"http://{host}", f"https://{host}"}


def safe_next(base_url, value):
    """`value` if it is a path of this service (under `base_url`), else `base_url`: never another
    site (`//host`, `https:`, a backslash), never a path that climbs out of the service (`/../`,
    `/./`, or either hidden behind %-escapes), never a control character."""
    from urllib.parse import unquote, urlsplit

    value = str(value or "")
    parts = urlsplit(value)
    path = parts.path
    decoded = unquote(unquote(path))
    segments = decoded.split("/")
    if (
        parts.scheme
        or parts.netloc
        or not value.startswith(base_url)
        or value.startswith("//")
        or "\\" in decoded
        or not value.isprintable()
        or not decoded.isprintable()
        or "." in segments
        or ".." in segments
        or "//" in decoded
    ):
        return base_url
    return value
