"""The HTTP layer: routes that parse, authorise (auth.current_user, declared once for the whole
protected router) and answer; the database keeps the data, the grading loop grades.

    create_app(service) -> FastAPI      `service`: a Service (below), built by cli.py

Every route lives under the base URL (``--base-url``, e.g. /services/seqgrader/ behind
JupyterHub's proxy, which forwards the prefix), and every link of every page is written from it.
Every error is JSON {"error": code, "message": "<Chinese> / <English>"} (store and auth raise
ServiceError); a browser that is not signed in is sent to the sign-in page instead of a 401.
The API is described in docs/service.md.
"""

import csv
import io
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, File, Form, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import NotSignedIn, ServiceError
from ..safe import csv_cell
from ..templates import environment
from . import database
from .auth import COOKIE, COOKIE_DAYS, Failures, User, check_csrf, client_address, current_user, safe_next, same_origin
from .connections import SECURITY_HEADERS
from .views import UploadRefused, check_upload, shown_report

MB = 1 << 20


@dataclass
class Service:
    """What the routes need: the database, the course, the data folder, who may sign in."""

    engine: Any
    course: Any
    data: Path
    roster: Any  # auth.Roster
    base_url: str = "/"
    max_upload: int = 5 * MB
    authenticator: Any = None  # JupyterHub mode: see auth.py
    grading: Any = None  # grading_loop.GradingLoop (None: this process only accepts; another grades)
    language: str = "both"
    failures: Any = None  # auth.Failures: wrong tokens per client address (made by create_app)

    @property
    def uploads(self):
        """The folder the uploaded files are kept in (under the data folder)."""
        return Path(self.data) / "submissions"

    @property
    def prefix(self):
        """The base URL without its trailing slash ("" at the root)."""
        return self.base_url.rstrip("/")


def normalise_base(url):
    """The base URL as "/" or "/prefix/": one leading and one trailing slash."""
    url = "/" + (url or "/").strip("/")
    return url if url == "/" else url + "/"


# ---------------------------------------------------------------- errors


def error_response(e):
    """A ServiceError as the API's JSON answer, with the security headers."""
    return JSONResponse(
        {"error": e.code, "message": e.message}, status_code=e.status, headers={**SECURITY_HEADERS, **(e.headers or {})}
    )


def _wants_page(request):
    return "/api/" not in request.url.path and request.method in ("GET", "HEAD")


def _local_next(svc, value):
    """`value` if it is a path of this service, else the home page (no open redirect)."""
    return safe_next(svc.base_url, value)


def _deadline_text(t):
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _in(seconds):
    seconds = max(0, int(seconds))
    h, m = divmod((seconds + 59) // 60, 60)
    return (f"{h} 小时 {m} 分钟" if h else f"{m} 分钟"), (f"{h} h {m} min" if h else f"{m} min")


# ---------------------------------------------------------------- the app


def create_app(svc: Service) -> FastAPI:
    """The FastAPI application of `svc`: its pages, its API, sign-in and the error answers."""
    svc.base_url = normalise_base(svc.base_url)
    if svc.failures is None:
        svc.failures = Failures()
    P = svc.prefix
    app = FastAPI(title="seqgrader", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = svc
    templates = environment()  # autograder/templates/: every page of the product, escaped by default

    def page(request, name, status=200, **context):
        user = getattr(request.state, "user", None)
        context.update(
            base=svc.base_url,
            user=user,
            course_language=svc.language,
            forms_token=svc.roster.forms_token(user) if user else "",
        )
        return HTMLResponse(templates.get_template(name).render(**context), status_code=status)

    # ---- answers of every kind

    @app.exception_handler(ServiceError)
    async def _service_error(request, e):
        if isinstance(e, NotSignedIn) and svc.authenticator is not None and not _wants_page(request):
            e = ServiceError(
                401,
                "not_signed_in",
                "请先登录：在 JupyterHub 的笔记本里用 submit.py，或在请求头中附上 "
                "Authorization: token $JUPYTERHUB_API_TOKEN；浏览器请先登录 JupyterHub。",
                "Sign in first: from a JupyterHub notebook use submit.py, or send the header "
                "Authorization: token $JUPYTERHUB_API_TOKEN; in a browser, sign in to JupyterHub.",
                {"WWW-Authenticate": "token"},
            )
        if isinstance(e, NotSignedIn) and _wants_page(request):
            where = str(request.url.path) + (f"?{request.url.query}" if request.url.query else "")
            if svc.authenticator is not None:
                return RedirectResponse(svc.authenticator.login_url(request, where), status_code=303)
            return RedirectResponse(f"{svc.base_url}signin?next={_quote(where)}", status_code=303)
        return error_response(e)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request, e):
        if e.status_code == 404:
            return error_response(_not_found())
        if e.status_code == 405:
            return error_response(
                ServiceError(
                    405, "method_not_allowed", "这个地址不接受这种请求方法。", "This address does not take this method."
                )
            )
        if e.status_code == 400:  # the form parser's: too many fields or files, a field over 1 MB
            return error_response(
                ServiceError(
                    400,
                    "bad_form",
                    f"表单无法读取：{e.detail}",
                    f"The form cannot be read: {e.detail} (a submission is multipart form data with the fields "
                    f"`assignment` and `file`).",
                )
            )
        return error_response(ServiceError(e.status_code, "http_error", str(e.detail), str(e.detail)))

    @app.exception_handler(Exception)
    async def _unexpected(request, e):
        from .grading_loop import log

        log(f"{request.method} {request.url.path} failed: {type(e).__name__}: {e}")
        return error_response(
            ServiceError(
                500,
                "internal_error",
                "服务出错了：请稍后再试；如果一直这样，请告诉教师。",
                "The service failed: try again in a moment, and tell your instructor if it keeps failing.",
            )
        )

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request, e):
        missing = [".".join(str(x) for x in err.get("loc", [])[1:]) for err in e.errors()]
        return error_response(
            ServiceError(
                422,
                "bad_request",
                f"请求缺少或写错了这些字段：{', '.join(missing)}。",
                f"The request lacks or misspells these fields: {', '.join(missing)} (a submission is multipart form "
                f"data with the fields `assignment` and `file`).",
            )
        )

    app.add_middleware(BodyLimit, limit=svc.max_upload + 64 * 1024)
    app.add_middleware(HeadAsGet)
    app.add_middleware(SecurityHeaders)  # the outermost: the 413 above gets them too

    public = APIRouter()
    protected = APIRouter(dependencies=[Depends(current_user)])

    # ---- public: health, signing in

    @public.get("/healthz")
    def healthz():
        return {
            "status": "ok",
            "queue": database.counts(svc.engine),
            "grading": svc.grading is not None,
            "base_url": svc.base_url,
        }

    @public.get("/signin", response_class=HTMLResponse)
    def signin_page(request: Request, next: str = ""):
        if svc.authenticator is not None:
            return RedirectResponse(svc.authenticator.login_url(request, _local_next(svc, next)), status_code=303)
        return page(request, "signin.html", next=_local_next(svc, next))

    @public.post("/signin")
    def signin(request: Request, token: str = Form(""), next: str = Form("")):
        if not same_origin(request):  # nobody is signed in by another site's form
            return error_response(
                ServiceError(
                    403,
                    "cross_site",
                    "拒绝来自其他网站的表单。",
                    "A form sent from another site is refused (cross-site request).",
                )
            )
        address = client_address(request)
        wait = svc.failures.wait(address)
        if wait:
            e = svc.failures.refusal(wait)
            response = page(request, "signin.html", status=429, next=_local_next(svc, next), error=(e.zh, e.en))
            response.headers.update(e.headers)
            return response
        row = svc.roster.by_token(token.strip())
        if row is None:
            svc.failures.add(address)
            return page(
                request,
                "signin.html",
                status=401,
                next=_local_next(svc, next),
                error=(
                    "令牌不对：请检查后再输入，或向教师索取。",
                    "This token is not right: check it, or ask your instructor for yours.",
                ),
            )
        response = RedirectResponse(_local_next(svc, next), status_code=303)
        response.set_cookie(
            COOKIE,
            svc.roster.cookie_for(row),
            max_age=COOKIE_DAYS * 86400,
            path=svc.base_url,
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
        )
        return response

    # ---- pages

    @protected.get("/", response_class=HTMLResponse)
    def home(user: User = Depends(current_user)):
        return RedirectResponse(f"{svc.base_url}{'instructor' if user.instructor else 'submissions'}", status_code=303)

    @protected.post("/signout")
    async def signout(request: Request, csrf: str = Form(""), user: User = Depends(current_user)):
        check_csrf(request, user, csrf)
        hub = svc.authenticator
        if user.via.startswith("hub") and hub is not None:  # the seam's optional sign-out
            where = hub.logout_url() if hasattr(hub, "logout_url") else svc.base_url
            response = RedirectResponse(where, status_code=303)
            if hasattr(hub, "logout"):
                await run_in_threadpool(hub.logout, request, response)
            return response
        if user.via == "cookie":  # its session ends here: a copy of the cookie is nobody's
            await run_in_threadpool(svc.roster.sign_out, user)
        response = RedirectResponse(f"{svc.base_url}signin", status_code=303)
        response.delete_cookie(COOKIE, path=svc.base_url)
        return response

    @protected.get("/upload", response_class=HTMLResponse)
    def upload_page(request: Request, assignment: str = "", user: User = Depends(current_user)):
        return page(request, "upload.html", assignments=_assignments(svc, user), chosen=assignment)

    @protected.post("/upload")
    async def upload_form(
        request: Request,
        assignment: str = Form(""),
        csrf: str = Form(""),
        file: UploadFile | None = File(None),
        user: User = Depends(current_user),
    ):
        check_csrf(request, user, csrf)
        try:
            out = await _submit(svc, user, assignment, file)
        except ServiceError as e:
            return page(
                request,
                "upload.html",
                status=e.status,
                assignments=_assignments(svc, user),
                chosen=assignment,
                error=(e.zh, e.en),
            )
        if svc.grading is not None:
            svc.grading.wake.set()
        return RedirectResponse(f"{svc.base_url}submissions/{out['id']}", status_code=303)

    @protected.get("/submissions", response_class=HTMLResponse)
    def list_page(
        request: Request, assignment: str | None = None, student: str | None = None, user: User = Depends(current_user)
    ):
        rows = database.listing(svc.engine, (student or None) if user.instructor else user.name, assignment or None)
        return page(request, "list.html", rows=rows, assignments=_assignments(svc, user))

    @protected.get("/submissions/{sid}", response_class=HTMLResponse)
    def submission_page(request: Request, sid: str, user: User = Depends(current_user)):
        row = _own(svc, user, sid)
        if row["status"] in ("queued", "grading"):
            return page(request, "status.html", row=row, position=_position(svc, row))
        report = database.report_of(svc.engine, sid)
        if report is None:  # not graded, and no report: the grader could not grade it
            return page(request, "status.html", row=row, reason=reason_words(row, user))
        from ..report.html import render_html

        rules = svc.course.rules(row["assignment"])
        shown = shown_report(json.loads(report), rules, row["filename"], svc.language, row["stored"])
        menu = {"base": svc.base_url, "user": user, "forms_token": svc.roster.forms_token(user)}
        return HTMLResponse(render_html(shown, svc.language, menu=menu))

    @protected.get("/instructor", response_class=HTMLResponse)
    def instructor_page(request: Request, assignment: str | None = None, user: User = Depends(current_user)):
        _instructors_only(user)
        from .classview import class_view

        names = svc.course.assignment_names()
        chosen = assignment if assignment in names else names[0]
        return page(request, "instructor.html", view=class_view(svc, chosen), assignments=names, chosen=chosen)

    @protected.get("/instructor/dashboard", response_class=HTMLResponse)
    def dashboard(assignment: str | None = None, user: User = Depends(current_user)):
        _instructors_only(user)
        from .classview import dashboard_html

        names = svc.course.assignment_names()
        return HTMLResponse(dashboard_html(svc, assignment if assignment in names else names[0]))

    @protected.get("/instructor/export.csv")
    def export(assignment: str | None = None, user: User = Depends(current_user)):
        _instructors_only(user)
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(
            [
                "id",
                "student",
                "assignment",
                "file",
                "submitted_at",
                "status",
                "score",
                "max_score",
                "attempt_charged",
                "graded_at",
                "reason",
            ]
        )
        for r in reversed(database.listing(svc.engine, None, assignment or None, limit=1_000_000)):
            w.writerow(
                [
                    r["id"],
                    csv_cell(r["student"]),
                    csv_cell(r["assignment"]),
                    csv_cell(r["filename"]),
                    _iso(r["created_at"]),
                    r["status"],
                    "" if r["score"] is None else f"{r['score']:g}",
                    "" if r["max_score"] is None else f"{r['max_score']:g}",
                    int(bool(r["charged"])),
                    _iso(r["finished_at"]),
                    csv_cell((r["reason"] or "").replace(r["stored"], r["filename"])),
                ]
            )
        return Response(
            buf.getvalue(),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": 'attachment; filename="submissions.csv"'},
        )

    # ---- the API

    @protected.get("/api/me")
    def me(user: User = Depends(current_user)):
        return {"name": user.name, "role": user.role}

    @protected.get("/api/assignments")
    def assignments(user: User = Depends(current_user)):
        return {"assignments": _assignments(svc, user)}

    @protected.post("/api/submissions", status_code=202)
    async def submit(
        request: Request,
        assignment: str = Form(""),
        file: UploadFile | None = File(None),
        user: User = Depends(current_user),
    ):
        check_csrf(request, user, request.headers.get("x-csrf-token"))  # a cookie's: needs the forms token
        out = await _submit(svc, user, assignment, file)
        if svc.grading is not None:
            svc.grading.wake.set()
        return JSONResponse(out, status_code=202)

    @protected.get("/api/submissions")
    def list_api(assignment: str | None = None, student: str | None = None, user: User = Depends(current_user)):
        who = (student or None) if user.instructor else user.name
        memo = {}
        return {
            "submissions": [_public(svc, r, user, memo) for r in database.listing(svc.engine, who, assignment or None)]
        }

    @protected.get("/api/submissions/{sid}")
    def one(sid: str, user: User = Depends(current_user)):
        return _public(svc, _own(svc, user, sid), user)

    @protected.get("/api/submissions/{sid}/report")
    def report_json(sid: str, user: User = Depends(current_user)):
        row = _own(svc, user, sid)
        report = database.report_of(svc.engine, sid)
        if report is None:
            raise ServiceError(
                404,
                "no_report",
                "这份提交还没有报告（还在排队或评分中，或无法评分）。",
                "This submission has no report (it is queued or being graded, or it could not be "
                "graded: see its status).",
            )
        return shown_report(
            json.loads(report), svc.course.rules(row["assignment"]), row["filename"], svc.language, row["stored"]
        )

    if P:

        @public.get("", include_in_schema=False)
        def bare_prefix():
            return RedirectResponse(svc.base_url, status_code=308)

    app.include_router(public, prefix=P)
    app.include_router(protected, prefix=P)
    app.state.routers = {"public": public, "protected": protected}  # what tests/test_service.py walks
    if svc.authenticator is not None and getattr(svc.authenticator, "router", None) is not None:
        app.include_router(svc.authenticator.router, prefix=P)
    return app


def _quote(text):
    from urllib.parse import quote

    return quote(text, safe="/")


def _iso(t):
    t = database.aware(t)
    return t.isoformat(timespec="seconds") if t else ""


def _not_found():
    return ServiceError(
        404,
        "not_found",
        "没有这个页面或这份提交（或者它不是你的）。",
        "There is no such page or submission (or it is not yours).",
    )


def _instructors_only(user):
    if not user.instructor:
        raise _not_found()  # a student learns nothing, not even that the page exists


def _own(svc, user, sid):
    """The submission `sid` if `user` may see it (theirs, or an instructor); 404 otherwise."""
    row = database.get(svc.engine, sid) if len(sid) <= 64 else None
    if row is None or (not user.instructor and row["student"] != user.name):
        raise _not_found()
    return row


def _position(svc, row):
    return database.queued_ahead(svc.engine, row) if row["status"] == "queued" else 0


GRADER_FAULT_WORDS = (
    "评分程序在这台机器上暂时无法评分（不是你的代码的问题），已告知教师；请稍后再提交。",
    "the grader cannot grade on this machine just now (nothing to do with your code); your "
    "instructor can see why. Submit again later.",
)


def reason_words(row, user):
    """(zh, en) of why a submission was not graded, as `user` may read it: the file under the name
    it was sent with; a fault of the grader itself told to a student in general words (its reason
    names the instructor's files)."""
    from .grading_loop import GRADER_FAULT

    reason = (row["reason"] or "").replace(row["stored"], row["filename"])
    if reason.startswith(GRADER_FAULT) and not user.instructor:
        return GRADER_FAULT_WORDS
    return reason, reason


def _public(svc, row, user, memo=None):
    """A submission as the API shows it to `user` (`memo`: attempts left per student and
    assignment, for a list)."""
    out = {
        "id": row["id"],
        "assignment": row["assignment"],
        "student": row["student"],
        "file": row["filename"],
        "status": row["status"],
        "submitted_at": _iso(row["created_at"]),
        "score": row["score"] if row["status"] == "graded" else None,
        "max_score": row["max_score"],
        "report_url": f"{svc.base_url}submissions/{row['id']}",
        "attempt_charged": bool(row["charged"]),
    }
    if row["status"] == "not_graded":
        zh, en = reason_words(row, user)
        out["reason"] = en
        out["message"] = (
            f"这份提交无法评分，不计入提交次数：{zh} / This submission could not be graded and costs no attempt: {en}"
        )
    key = (row["student"], row["assignment"])
    memo = {} if memo is None else memo
    if key not in memo:
        memo[key] = database.attempts_left(
            svc.engine, row["student"], row["assignment"], svc.course.rules(row["assignment"])
        )
    out["attempts_left"] = memo[key]
    return out


def _assignments(svc, user):
    out = []
    for name in svc.course.assignment_names():
        rules = svc.course.rules(name)
        left = None if user.instructor else database.attempts_left(svc.engine, user.name, name, rules)
        out.append(
            {
                "name": name,
                "exercises": svc.course.assignment(name),
                "attempts": rules.attempts,
                "window": rules.window,
                "attempts_left": left,
                "deadline": rules.deadline.isoformat() if rules.deadline else None,
                "closed": bool(rules.deadline and datetime.now(UTC) > rules.deadline),
            }
        )
    return out


async def _submit(svc, user, assignment, file):
    """Check an upload, write it under the data folder with a generated name, and insert its row
    (charging an attempt) before answering; the answer's dict, or ServiceError."""
    names = svc.course.assignment_names()
    if assignment not in names:
        said = assignment if len(assignment) <= 80 else assignment[:80] + "…"  # never a megabyte echoed back
        raise ServiceError(
            422,
            "unknown_assignment",
            f"没有名为 “{said}” 的作业；可选：{', '.join(names)}。",
            f"There is no assignment {said!r}; choose one of: {', '.join(names)}.",
        )
    rules = svc.course.rules(assignment)
    at = datetime.now(UTC)
    if rules.deadline and at > rules.deadline and not user.instructor:
        raise ServiceError(
            403,
            "deadline_passed",
            f"作业 {assignment} 的截止时间（{_deadline_text(rules.deadline)}）已过，不再接受提交。",
            f"The deadline of {assignment} ({_deadline_text(rules.deadline)}) has passed: no more "
            f"submissions are accepted.",
        )
    if file is None or not file.filename:
        raise ServiceError(
            422,
            "no_file",
            "请选择要上传的文件（.ipynb 或 .py）。",
            "Choose the file to upload (.ipynb or .py) in the field `file`.",
        )
    data = await file.read(svc.max_upload + 1)
    if len(data) > svc.max_upload:
        raise _too_large(svc)
    try:
        kind = check_upload(file.filename, data)
    except UploadRefused as e:
        raise ServiceError(415, "unsupported_file", e.zh, e.en) from None
    return await run_in_threadpool(_keep, svc, user, assignment, rules, file.filename, kind, data, at)


def _keep(svc, user, assignment, rules, filename, kind, data, at):
    """The upload on disk (fsynced, under a generated name), then its row: both before the 202.
    In a thread: the database may make it wait for another process's transaction."""
    sid = database.new_id()
    stored = f"{sid}.{'py' if kind == 'py' else 'ipynb'}"  # never the uploaded name
    path = svc.uploads / stored
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{stored}.tmp")
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:  # private, whatever the umask
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)  # the new name itself survives a crash
    finally:
        os.close(folder)
    try:
        left = database.accept(
            svc.engine,
            sid=sid,
            student=user.name,
            role=user.role,
            assignment=assignment,
            filename=_display_name(filename),
            stored=stored,
            rules=rules,
            limited=not user.instructor,
            at=at,
        )
    except database.AttemptsUsed as e:
        path.unlink(missing_ok=True)
        raise _attempts_used(e, rules, at) from None
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return {
        "id": sid,
        "status": "queued",
        "attempts_left": left,
        "report_url": f"{svc.base_url}submissions/{sid}",
        "status_url": f"{svc.base_url}api/submissions/{sid}",
    }


def _display_name(name):
    name = str(name).replace("\\", "/").rsplit("/", 1)[-1]
    return "".join(ch for ch in name if ch.isprintable())[:200] or "submission"


def _too_large(svc):
    mb = svc.max_upload / MB
    return ServiceError(
        413,
        "too_large",
        f"文件超过了 {mb:g} MB 的上限：请清除笔记本的输出（Cell → All Output → Clear）后再上传。",
        f"The file is over the {mb:g} MB limit: clear the notebook's outputs (Cell > All Output > "
        f"Clear) and upload it again.",
    )


def _attempts_used(e, rules, at):
    """The 429 of AttemptsUsed `e`: when the next attempt comes (Retry-After, and the time in the
    message), or that none comes (no window, or the next one would come after the deadline)."""
    if e.next_at is None:
        return ServiceError(
            429,
            "no_attempts_left",
            f"这个作业的 {e.allowed} 次提交机会已经用完。",
            f"You have used all {e.allowed} attempts of this assignment.",
        )
    if rules.deadline is not None and e.next_at > rules.deadline:
        return ServiceError(
            429,
            "no_attempts_left",
            f"{rules.window} 内的 {e.allowed} 次提交机会已用完，截止时间（{_deadline_text(rules.deadline)}）"
            f"之前不会再有新的机会。",
            f"You have used your {e.allowed} attempts per {rules.window}, and the next one would come "
            f"after the deadline ({_deadline_text(rules.deadline)}).",
        )
    wait = (e.next_at - at).total_seconds()
    zh_in, en_in = _in(wait)
    return ServiceError(
        429,
        "no_attempts_left",
        f"{rules.window} 内的 {e.allowed} 次提交机会已用完；下一次机会在 {_deadline_text(e.next_at)}（{zh_in}后）。",
        f"You have used your {e.allowed} attempts per {rules.window}; the next one comes at "
        f"{_deadline_text(e.next_at)} (in {en_in}).",
        {"Retry-After": str(max(1, int(wait + 0.999)))},
    )


class SecurityHeaders:
    """An ASGI middleware: every answer carries SECURITY_HEADERS (those it does not set itself)."""

    HEADERS = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_headers(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                have = {k.lower() for k, _ in headers}
                message = {**message, "headers": headers + [(k, v) for k, v in self.HEADERS if k not in have]}
            await send(message)

        await self.app(scope, receive, with_headers)


class HeadAsGet:
    """An ASGI middleware: HEAD is answered as GET is (same status and headers), without the body."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "HEAD":
            return await self.app(scope, receive, send)

        async def headers_only(message):
            if message["type"] == "http.response.body":
                if not message.get("more_body"):
                    await send({"type": "http.response.body", "body": b""})
                return
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)


class BodyLimit:
    """An ASGI middleware: a request body over `limit` bytes is refused with 413 as it arrives
    (by its Content-Length, or by counting), before anything parses it."""

    def __init__(self, app, limit):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        svc = scope["app"].state.service if "app" in scope else None
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await self._refuse(scope, send, svc)
        seen, over, refused = 0, False, False

        async def counted():
            nonlocal seen, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:  # read no more: whatever the app answers, the answer is 413
                    over = True
                    return {"type": "http.disconnect"}
            return message

        async def answer(message):
            nonlocal refused
            if not over:
                return await send(message)
            if not refused:
                refused = True
                await self._refuse(scope, send, svc)

        try:
            await self.app(scope, counted, answer)
        except Exception:
            if not over:
                raise
            if not refused:
                await self._refuse(scope, send, svc)

    async def _refuse(self, scope, send, svc):
        e = (
            _too_large(svc)
            if svc is not None
            else ServiceError(413, "too_large", "文件太大。", "The file is too large.")
        )
        body = json.dumps({"error": e.code, "message": e.message}, ensure_ascii=False).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
