"""Sign-in through JupyterHub: the service as a JupyterHub service, behind the hub's proxy at
JUPYTERHUB_SERVICE_PREFIX (e.g. /services/seqgrader/).

`Hub` is the service's authenticator when it runs under a hub (`seqgrader serve` picks it when
JUPYTERHUB_API_TOKEN is set): `await hub.user(request)` says who is asking, or None.

- A notebook or a script sends `Authorization: token <a JupyterHub API token>` (in a notebook,
  JUPYTERHUB_API_TOKEN; `Bearer` is accepted too, as JupyterHub accepts it).
- A browser signs in with OAuth: `login_url(request, next)` leads to PREFIX/oauth_login, which keeps
  a random state and a PKCE verifier in a short-lived signed cookie and sends the browser to the
  hub's /hub/api/oauth2/authorize; the hub sends it back to PREFIX/oauth_callback with a code, which
  must come with the same state; the code becomes the user's token, kept in a signed HttpOnly
  cookie on the prefix (SameSite=Lax; a cookie on a cross-site request that changes something is
  not accepted) that names a session in the service's database (database.sessions): signing out
  ends it, so a copy of the cookie is nobody's afterwards.

Either way the token is identified with the hub by jupyterhub.services.auth.HubOAuth's
`user_for_token` (cached for `cache_max_age` seconds), the way JupyterHub's own services do it; the
state and the signed cookies are this module's, so that several processes of the service (which
share the service's API token, and so the cookies' key) accept each other's.

The two cookies are itsdangerous's (auth.signed / auth.unsign): JSON, the time it was signed and
an HMAC-SHA256, under a key derived from the service's API token and a salt per cookie
(STATE_SALT, SIGNIN_SALT), so the state cookie is never taken for the sign-in cookie nor the
other way round, and neither is taken for the roster mode's.  The state cookie
({"state", "next", "verifier"}) is read for STATE_MAX_AGE seconds, the sign-in cookie
({"token", "nonce"}) for COOKIE_MAX_AGE and only while its session lives.

Who may use the service: a token must carry the service's access scope
(`access:services!service=NAME`, the hub's JUPYTERHUB_OAUTH_ACCESS_SCOPES).  JupyterHub 5 and 6
give users no service by default, so the hub grants it, e.g. to everyone:

    c.JupyterHub.load_roles = [{"name": "user", "scopes": ["self", "access:services!service=seqgrader"]}]
    c.JupyterHub.services = [{"name": "seqgrader", "url": "http://127.0.0.1:8765",
                              "command": ["seqgrader", "serve", "--port", "8765"], "oauth_no_confirm": True}]
    c.Spawner.server_token_scopes = ["access:servers!server", "users:activity!user",
                                     "access:services!service=seqgrader"]   # JUPYTERHUB_API_TOKEN in notebooks

(JupyterHub 6 can say the first line as `c.JupyterHub.extra_user_scopes = {"access:services!service=seqgrader"}`.)
The service's own token needs no role: the hub's answer about a token (GET /hub/api/user) always
holds the user's name, `admin` and groups.  Instructors are the members of the group
`instructors_group` (default: $SEQGRADER_INSTRUCTORS_GROUP, else "instructors") and the hub's
admins; every other user the hub knows is a student.

The User it returns says how it came (`via`: "hub-token" or "hub-cookie"); a cookie's User carries
the cookie's own random nonce, from which the service makes the token its forms must send back.
"""

import hashlib
import hmac
import os
import secrets
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from ..errors import ConfigError, ServiceError
from ..safe import one_line
from . import database
from .auth import safe_next, same_origin, signed, unsign

STATE_MAX_AGE = 600  # seconds from the redirect to the hub to the callback
COOKIE_MAX_AGE = 7 * 24 * 3600  # the sign-in cookie; the hub's token inside may expire sooner
STATE_SALT = "seqgrader hub oauth state cookie"
SIGNIN_SALT = "seqgrader hub sign-in cookie"


class Hub:
    """The authenticator of `seqgrader serve` under JupyterHub (see autograder/service/auth.py for
    the seam).  `base_url`: the service's prefix (default: JUPYTERHUB_SERVICE_PREFIX); `engine`,
    the service's database, keeps the sessions of the sign-in cookies (the hub is the one who
    knows people)."""

    def __init__(self, base_url=None, engine=None, *, instructors_group=None, api_token=None, cache_max_age=60):
        from jupyterhub.services.auth import HubOAuth

        if engine is None:
            raise ConfigError(
                "JupyterHub sign-in needs the service's database (its sessions: a browser that signs "
                "out is signed out everywhere)"
            )
        self.engine = engine

        self.instructors_group = instructors_group or os.environ.get("SEQGRADER_INSTRUCTORS_GROUP") or "instructors"
        api_token = api_token or os.environ.get("JUPYTERHUB_API_TOKEN")
        if not api_token:
            raise ConfigError(
                "JupyterHub sign-in needs the service's JupyterHub API token in JUPYTERHUB_API_TOKEN "
                "(the hub sets it for a service it starts; for one started otherwise, give the "
                "service's `api_token` of jupyterhub_config.py)"
            )
        # the hub names a service's OAuth client "service-NAME"; a service the hub starts is told it
        name = os.environ.get("JUPYTERHUB_SERVICE_NAME") or "seqgrader"
        client = os.environ.get("JUPYTERHUB_CLIENT_ID") or f"service-{name}"
        kwargs = {"cache_max_age": cache_max_age, "api_token": api_token, "oauth_client_id": client}
        if base_url:
            kwargs["base_url"] = base_url
        self.auth = HubOAuth(**kwargs)
        self.prefix = self.auth.base_url  # JUPYTERHUB_SERVICE_PREFIX, with a slash at both ends
        # the cookies' key: the service's API token's (every process of the service has it), never the token itself
        key = hmac.new(self.auth.api_token.encode(), b"seqgrader sign-in cookies", hashlib.sha256).digest()
        self._state_cookies = signed(key, STATE_SALT)
        self._signin_cookies = signed(key, SIGNIN_SALT)
        self.cookie_name = self.auth.cookie_name
        self.state_cookie_name = self.auth.state_cookie_name
        self.router = APIRouter()
        self.router.add_api_route("/oauth_login", self.oauth_login, methods=["GET"], include_in_schema=False)
        self.router.add_api_route("/oauth_callback", self.oauth_callback, methods=["GET"], include_in_schema=False)

    # ------------------------------------------------------------ who is asking
    async def user(self, request: Request):
        """The User of this request, or None: a token in the Authorization header, else the
        sign-in cookie.  A token the hub does not know, or one without access to this service,
        is nobody."""
        token, via, nonce = _header_token(request), "hub-token", ""
        if token is None:
            kept = self._signin(request)
            if kept is None:
                return None
            if request.method not in ("GET", "HEAD", "OPTIONS") and not same_origin(request):
                return None  # a change asked from another site (check_csrf would refuse it too)
            token, via, nonce = kept["token"], "hub-cookie", kept["nonce"]
            if await run_in_threadpool(database.session_of, self.engine, nonce) is None:
                return None  # signed out: a copy of the cookie is nobody's
        model = await self._identify(token, request)
        return self._as_user(model, via, nonce)

    async def _identify(self, token, request, use_cache=True):
        from tornado.web import HTTPError

        try:
            return await self.auth.user_for_token(
                token, use_cache=use_cache, sync=False, session_id=request.cookies.get("jupyterhub-session-id", "")
            )
        except HTTPError as e:  # the hub cannot be reached or refuses the service's own token
            _log_hub_error("identifying a token", e)  # the hub's address and errors are the log's, not the page's
            raise ServiceError(
                502,
                "hub_unavailable",
                "JupyterHub 暂时无法确认你的身份，请稍后再试。",
                "JupyterHub cannot say who you are just now; try again in a moment.",
            ) from None

    def _as_user(self, model, via="hub-token", nonce=""):
        from jupyterhub.services.auth import check_scopes

        from .auth import User

        if not model or model.get("kind", "user") != "user":
            return None
        if self.auth.access_scopes and not check_scopes(self.auth.access_scopes, set(model.get("scopes", []))):
            return None
        instructor = bool(model.get("admin")) or self.instructors_group in (model.get("groups") or [])
        return User(model["name"], "instructor" if instructor else "student", via=via, nonce=nonce)

    # ------------------------------------------------------------ signing in with a browser
    def login_url(self, request, next="/"):
        """Where a browser goes to sign in: this service's OAuth start, with `next`."""
        return f"{self.prefix}oauth_login?{urlencode({'next': next})}"

    async def oauth_login(self, request: Request, next: str = ""):
        """Send the browser to the hub's authorization page, with a state and a PKCE challenge kept in a signed cookie."""
        verifier, challenge, method = self.auth.generate_pkce_code_challenge()
        state = secrets.token_urlsafe(16)
        target = (
            self.auth.login_url
            + "&"
            + urlencode({"state": state, "code_challenge": challenge, "code_challenge_method": method})
        )
        response = RedirectResponse(target, status_code=302)
        self._set_cookie(
            response,
            request,
            self.state_cookie_name,
            self._state_cookies.dumps({"state": state, "next": self._safe_next(next), "verifier": verifier}),
            STATE_MAX_AGE,
        )
        return response

    async def oauth_callback(
        self, request: Request, code: str = "", state: str = "", error: str = "", error_description: str = ""
    ):
        """Finish the OAuth sign-in: check the state, exchange the code for a token, set the sign-in cookie."""
        if error:
            why = one_line(error_description or error, 200)  # from the query string: anyone's words
            raise ServiceError(
                400, "oauth_refused", f"JupyterHub 没有让你登录：{why}", f"JupyterHub did not sign you in: {why}"
            )
        kept = unsign(self._state_cookies, request.cookies.get(self.state_cookie_name), STATE_MAX_AGE)
        sent = kept.get("state") if kept else None
        if not code or not state or not isinstance(sent, str) or not hmac.compare_digest(sent.encode(), state.encode()):
            raise ServiceError(
                403,
                "oauth_state",
                "登录过程没有按原样返回（状态不匹配，或超过了十分钟）：请重新登录。",
                "The sign-in did not come back as it left (its state does not match, or it took "
                "more than ten minutes): sign in again.",
            )
        from tornado.web import HTTPError

        try:
            token = await self.auth.token_for_code(code, code_verifier=kept.get("verifier"), sync=False)
        except HTTPError as e:
            _log_hub_error("exchanging a sign-in code", e)
            raise ServiceError(
                403,
                "oauth_code",
                "JupyterHub 没有接受这次登录：请重新登录。",
                "JupyterHub did not accept the sign-in: sign in again.",
            ) from None
        user = self._as_user(await self._identify(token, request, use_cache=False))
        if user is None:
            raise ServiceError(
                403,
                "not_allowed",
                "你的 JupyterHub 账号不能使用这个服务：请联系课程老师。",
                "Your JupyterHub account may not use this service: ask the course staff.",
            )
        nonce = await run_in_threadpool(database.open_session, self.engine, user.name, COOKIE_MAX_AGE)
        response = RedirectResponse(self._safe_next(kept.get("next")), status_code=303)
        response.delete_cookie(self.state_cookie_name, path=self.auth.cookie_path)
        cookie = self._signin_cookies.dumps({"token": token, "nonce": nonce})
        self._set_cookie(response, request, self.cookie_name, cookie, COOKIE_MAX_AGE)
        return response

    def logout(self, request, response):
        """End this browser's session and forget its cookie (the hub's own sign-in stays: see
        logout_url).  In a thread: it writes to the database."""
        kept = self._signin(request)
        if kept is not None:
            database.close_session(self.engine, kept["nonce"])
        response.delete_cookie(self.cookie_name, path=self.auth.cookie_path)

    def logout_url(self):
        """The hub's sign-out page: signing out of the service alone would sign the browser in
        again at once, through the hub's own sign-in."""
        return f"{self.auth.hub_prefix}logout"

    def _safe_next(self, next):
        """Only a path of the service (auth.safe_next, as the roster's sign-in)."""
        return safe_next(self.prefix, next)

    # ------------------------------------------------------------ signed cookies
    def _signin(self, request):
        """{"token", "nonce"} of this request's sign-in cookie, if it is one this service signed
        less than COOKIE_MAX_AGE ago; else None.  Its session is the caller's to check."""
        kept = unsign(self._signin_cookies, request.cookies.get(self.cookie_name), COOKIE_MAX_AGE)
        if kept is None:
            return None
        token, nonce = kept.get("token"), kept.get("nonce")
        if not (isinstance(token, str) and token and isinstance(nonce, str) and nonce):
            return None
        return {"token": token, "nonce": nonce}

    def _set_cookie(self, response, request, name, value, max_age):
        secure = request.url.scheme == "https"  # behind a proxy that is believed: what it says (--forwarded-allow-ips)
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            path=self.auth.cookie_path,
            httponly=True,
            samesite="lax",
            secure=secure,
        )


def _header_token(request):
    value = request.headers.get("authorization", "")
    kind, _, token = value.partition(" ")
    if kind.lower() in ("token", "bearer") and token.strip():
        return token.strip()
    return None


def _log_hub_error(what, e):
    from .grading_loop import log

    log(f"JupyterHub: {what} failed: {e.log_message or e}")
