"""The review web app (FastAPI on Starlette): pages, the JSON API under ``/api``, media, static files.

Handlers are plain ``def`` functions: FastAPI runs them in its thread pool, so the synchronous
database work (SQLAlchemy sessions, argon2) never blocks the event loop. Nothing is kept in the
process between requests: sessions are signed cookies, throttling and all data are in the database,
so ``--workers N`` and several servers behind one proxy see the same state.

Request pipeline, outermost first: security headers (CSP without inline scripts, no framing, no
sniffing) -> CSRF and Origin check on every unsafe method -> routes.
"""

from __future__ import annotations

import asyncio
import email.message
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import DataError as SQLAlchemyDataError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rescue_bench.review import agreement, api, overlap_routes, pages, practice_routes, rating_routes
from rescue_bench.review.config import ReviewConfig
from rescue_bench.review.db import Database, check_schema, private_sqlite_file
from rescue_bench.review.deps import Auth, AuthError, State
from rescue_bench.review.errors import Conflict, ReviewError, Throttled
from rescue_bench.review.limits import MAX_DEPTH, UPLOADS, field_of, value_problem
from rescue_bench.review.security import CSRF_HEADER, csrf_matches

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSRF_EXEMPT = frozenset({"/api/login"})
"""Unsafe routes without a CSRF token: login has no session yet. It accepts JSON only and checks the
Origin, so a cross-site form cannot post to it (see docs/review.md)."""

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
DOCS_CSP = CSP.replace("script-src 'self'", "script-src 'self' 'unsafe-inline'").replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")
"""The OpenAPI page's HTML (FastAPI's) starts Swagger UI from an inline script."""


def _same_origin(origin: str, host: str | None, scheme: str) -> bool:
    """Whether an ``Origin`` header names this server as the request reached it: the same scheme
    (``http`` vs ``https``: a plain-HTTP page of the same host is another origin) and the same host and
    port. ``scheme`` is the request's (behind a trusted proxy, its ``X-Forwarded-Proto``)."""
    try:
        parts = urlsplit(origin)
        return bool(host) and parts.scheme.lower() == scheme.lower() and parts.netloc.lower() == (host or "").lower()
    except ValueError:
        return False


def _host_name(header: str | None) -> str | None:
    """The host name of a ``Host`` header (port and IPv6 brackets removed, lower case)."""
    if not header:
        return None
    text = header.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        return text[1:end] if end > 0 else None
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


def _json_response(detail: str, status: int, **more: str | None) -> Response:
    """An error answered before any route: ``{"detail": ..., **more}``."""
    response = JSONResponse({"detail": detail, **more}, status_code=status)
    response.headers["content-security-policy"] = CSP
    response.headers["x-content-type-options"] = "nosniff"
    response.headers["cache-control"] = "no-store"
    return response


class GuardMiddleware:
    """Before any route: the ``Host`` header must be an allowed host; the URL may hold no NUL byte;
    every unsafe request passes the CSRF token and Origin checks, and its body the size limit and
    the strict JSON check (:mod:`rescue_bench.review.limits`). Security headers on every response."""

    def __init__(self, app: ASGIApp, review_state: State):
        self.app = app
        self.state = review_state
        hosts = {h.strip().lower().strip("[]") for h in review_state.config.allowed_hosts if h.strip()}
        self.any_host = "*" in hosts
        self.hosts = frozenset(hosts - {"*"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        path = scope.get("path", "")
        if not self.any_host and _host_name(request.headers.get("host")) not in self.hosts:
            # DNS rebinding: a page of another site resolving its name to this server
            await _json_response("unknown host (see serve --allowed-host)", 400)(scope, receive, send)
            return
        if "\x00" in path or b"%00" in scope.get("query_string", b"") or b"%00" in scope.get("raw_path", b""):
            await _json_response("a NUL byte in the URL", 400)(scope, receive, send)
            return
        if scope["method"] not in SAFE_METHODS:
            origin = request.headers.get("origin")
            problem = None
            if origin and not _same_origin(origin, request.headers.get("host"), request.url.scheme):
                problem = "cross-origin request refused"
            elif path in CSRF_EXEMPT:
                if not is_json_type(request.headers.get("content-type", "")):
                    problem = "send JSON (Content-Type: application/json)"
            else:
                session_data = self.state.session_data(request)
                if session_data is None:
                    # no session at all: the caller must log in (401, the page's re-login signal);
                    # a CSRF refusal (403) is for a live session sent without its token
                    await _json_response("not logged in", 401)(scope, receive, send)
                    return
                if not csrf_matches(session_data, request.headers.get(CSRF_HEADER)):
                    problem = f"missing or wrong {CSRF_HEADER} header"
            if problem:
                await _json_response(problem, 403)(scope, receive, send)
                return
            checked = await self._checked_body(request, receive)
            if isinstance(checked, Response):
                await checked(scope, receive, send)
                return
            receive = _replay(checked, receive)
        csp = DOCS_CSP if path in ("/api/docs", "/api/docs/oauth2-redirect") else CSP
        started = time.perf_counter()

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                extra = {
                    b"content-security-policy": csp.encode(),
                    b"x-content-type-options": b"nosniff",
                    b"x-frame-options": b"DENY",
                    b"referrer-policy": b"same-origin",
                    # time from receiving the request to answering it, for the benchmark and browser dev tools
                    b"server-timing": f"app;dur={(time.perf_counter() - started) * 1000:.1f}".encode(),
                }
                if not path.startswith(("/static/", "/media/", "/api/docs-static/")):
                    extra[b"cache-control"] = b"no-store"
                headers.extend((k, v) for k, v in extra.items() if k not in names)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    async def _checked_body(self, request: Request, receive: Receive) -> bytes | Response:
        """The whole body if it is within the size limit and strict JSON holding only storable
        values, whatever its declared type (FastAPI parses ``application/JSON``,
        ``application/x+json`` ... as JSON, and no route reads anything else); else the 413 / 400
        / 422 answer."""
        config = self.state.config
        limit, max_chars = UPLOADS.get((request.method, request.url.path), (config.max_body_bytes, config.max_field_chars))
        too_big = _json_response(f"request body larger than {limit} bytes", 413)
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > limit:
            return too_big
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return too_big
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body:  # every route of the app reads its body as JSON: any other body is refused here too
            problem = strict_json_problem(body, max_chars=max_chars)
            if problem is not None:
                status, detail, field = problem
                return _json_response(detail, status, field=field)
        return body


def is_json_type(content_type: str) -> bool:
    """What FastAPI parses as JSON: ``application/json`` or ``application/...+json``, in any case,
    with parameters (read as FastAPI reads it, with :class:`email.message.Message`)."""
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (subtype == "json" or subtype.endswith("+json"))


def strict_json_problem(body: bytes, *, max_chars: int) -> tuple[int, str, str] | None:
    """``(status, message, field)`` when ``body`` is not JSON or holds a value that may not be stored."""
    if _too_deep(body):
        return 422, f"nested deeper than {MAX_DEPTH} levels", "body"
    try:
        data = json.loads(body)  # NaN and 1e999 parse here, so the walk below can name their field
    except (ValueError, RecursionError):
        return 400, "the body is not JSON", "body"
    found = value_problem(data, max_chars=max_chars)
    if found is None:
        return None
    where, what = found
    return 422, f"{where or 'body'}: {what}", field_of(where)


def _too_deep(body: bytes) -> bool:
    """More nesting than :data:`MAX_DEPTH` (counted on the bytes: a parser would recurse first)."""
    if body.count(b"[") + body.count(b"{") <= MAX_DEPTH:
        return False
    depth, in_string, escaped = 0, False, False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


def _replay(body: bytes, original: Receive) -> Receive:
    """A ``receive`` that hands the app the body already read, then passes on the real one (disconnect)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await original()

    return receive


def _warm(db: Database) -> None:
    """Off the request path, at start: the agreement page's library, the pages' templates, and the
    rows the agreement report reads (so its first page, too, shows within 0.3 s)."""
    agreement.preload()
    pages.compile_templates()
    try:
        with db.read() as session:
            agreement.database_report(session, n_resamples=0, use_bertscore=False)
    except Exception:  # noqa: BLE001 - a warm-up only: the page computes it when asked, and says what fails
        logging.getLogger(__name__).debug("agreement warm-up failed", exc_info=True)


def create_app(config: ReviewConfig, *, check: bool = True) -> FastAPI:
    """The ASGI app for ``config`` (the database must be initialised: ``rescue review init``)."""

    db = Database(config.db_url)
    if check:
        private_sqlite_file(db.url)  # the signing secret inside must not be readable by others
        check_schema(db)
    review_state = State(config, db)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        import anyio.to_thread

        # Fewer threads than anyio's default 40: the handlers are CPU-bound Python between short
        # database calls, so more threads only queue on the GIL, and a writer that holds the SQLite
        # lock then waits for the GIL at every call (measured at 50 annotators: save p95 206 -> see
        # docs/benchmarks.md). PostgreSQL's pool (10 + 30 overflow) is larger than this.
        anyio.to_thread.current_default_thread_limiter().total_tokens = config.threads
        asyncio.get_running_loop().run_in_executor(None, _warm, db)
        yield

    app = FastAPI(
        lifespan=lifespan,
        title="rescue review",
        summary="Review RESCUE-Bench drafts row by row; the JSON API behind the pages.",
        description=api.API_DESCRIPTION,
        version="1",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # served below, to admins only
    )
    app.state.review = review_state
    app.include_router(api.router)
    app.include_router(overlap_routes.api)
    app.include_router(rating_routes.api)
    app.include_router(pages.router)
    app.include_router(overlap_routes.pages)
    app.include_router(rating_routes.pages)
    app.include_router(practice_routes.api)  # the practice page: a person as therapist
    app.include_router(practice_routes.pages)
    app.mount("/static", StaticFiles(directory=str(resources.files("rescue_bench.review").joinpath("static"))), name="static")
    _mount_docs(app)

    @app.exception_handler(AuthError)
    def _auth_error(request: Request, exc: AuthError) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": "not logged in"}, status_code=401)
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        from urllib.parse import quote

        return RedirectResponse(f"/login?next={quote(target, safe='/')}", status_code=303)

    @app.exception_handler(SQLAlchemyDataError)
    def _data_error(request: Request, exc: SQLAlchemyDataError) -> Response:
        # the last line of defence (the limits refuse such values first): never a 500, never the SQL
        message = "a value the database cannot store"
        if not request.url.path.startswith("/api/"):
            return pages.error_page(request, 422, message)
        return JSONResponse({"detail": message}, status_code=422)

    @app.exception_handler(ReviewError)
    def _review_error(request: Request, exc: ReviewError) -> Response:
        body: dict[str, Any] = {"detail": exc.message}
        headers = {}
        if isinstance(exc, Conflict):
            body.update(exc.current.model_dump())
        if isinstance(exc, Throttled):
            headers["Retry-After"] = str(max(1, int(exc.retry_after + 0.999)))
        field = getattr(exc, "field", None)
        if field:
            body["field"] = field
        if not request.url.path.startswith("/api/"):
            return pages.error_page(request, exc.status, exc.message)
        return JSONResponse(body, status_code=exc.status, headers=headers)

    app.add_middleware(GuardMiddleware, review_state=review_state)
    return app


def _mount_docs(app: FastAPI) -> None:
    """The OpenAPI page at ``/api/docs`` and its ``/api/openapi.json``, for admins only (they list every
    route and model: a map for an attacker); Swagger UI is served locally (fastapi-offline's copy)."""
    from fastapi.openapi.docs import get_swagger_ui_html


    static = Path(str(resources.files("fastapi_offline").joinpath("static")))
    app.mount("/api/docs-static", StaticFiles(directory=str(static)), name="docs-static")

    docs_routes = APIRouter(include_in_schema=False)

    @docs_routes.get("/api/openapi.json")
    def openapi(auth: Auth) -> Response:
        auth.admin()
        return JSONResponse(app.openapi())  # the schema itself: a document, not one of the API's models

    @docs_routes.get("/api/docs")
    def docs(auth: Auth) -> Response:
        auth.admin()
        return get_swagger_ui_html(
            openapi_url="/api/openapi.json",
            title="rescue review API",
            swagger_js_url="/api/docs-static/swagger-ui-bundle.js",
            swagger_css_url="/api/docs-static/swagger-ui.css",
            swagger_favicon_url="/static/favicon.svg",
        )

    app.include_router(docs_routes)


def app_from_env() -> FastAPI:
    """Factory used by ``rescue review serve --workers N`` (each worker reads the settings from env)."""
    return create_app(ReviewConfig.from_env())
