"""The review web app (FastAPI on Starlette): pages, the JSON API under ``/api``, media, static files.

Handlers are plain ``def`` functions: FastAPI runs them in its thread pool, so the synchronous
database work (SQLAlchemy sessions, argon2) never blocks the event loop. Nothing is kept in the
process between requests: sessions are signed cookies, throttling and all data are in the database,
so ``--workers N`` and several servers behind one proxy see the same state.

Request pipeline, outermost first: security headers (CSP without inline scripts, no framing, no
sniffing) -> CSRF and Origin check on every unsafe method -> routes.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rescue_bench.review import api, overlap_routes, pages, practice_routes, rating_routes
from rescue_bench.review.config import ReviewConfig
from rescue_bench.review.context import AuthError, State
from rescue_bench.review.db import Database, check_schema
from rescue_bench.review.errors import Conflict, ReviewError, Throttled
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


def _same_origin(origin: str, host: str | None) -> bool:
    try:
        return bool(host) and urlsplit(origin).netloc.lower() == (host or "").lower()
    except ValueError:
        return False


class GuardMiddleware:
    """Security headers on every response; CSRF token and Origin checks on every unsafe request."""

    def __init__(self, app: ASGIApp, review_state: State):
        self.app = app
        self.state = review_state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        path = scope.get("path", "")
        if scope["method"] not in SAFE_METHODS:
            origin = request.headers.get("origin")
            problem = None
            if origin and not _same_origin(origin, request.headers.get("host")):
                problem = "cross-origin request refused"
            elif path in CSRF_EXEMPT:
                if "application/json" not in request.headers.get("content-type", ""):
                    problem = "send JSON (Content-Type: application/json)"
            elif not csrf_matches(self.state.session_data(request), request.headers.get(CSRF_HEADER)):
                problem = f"missing or wrong {CSRF_HEADER} header"
            if problem:
                response = JSONResponse({"detail": problem}, status_code=403)
                await self._with_headers(response, path)(scope, receive, send)
                return
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

    def _with_headers(self, response: Response, path: str) -> Response:
        response.headers["content-security-policy"] = CSP
        response.headers["x-content-type-options"] = "nosniff"
        response.headers["cache-control"] = "no-store"
        return response


def create_app(config: ReviewConfig, *, check: bool = True) -> FastAPI:
    """The ASGI app for ``config`` (the database must be initialised: ``rescue review init``)."""

    db = Database(config.db_url)
    if check:
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
        yield

    app = FastAPI(
        lifespan=lifespan,
        title="rescue review",
        summary="Review RESCUE-Bench drafts row by row; the JSON API behind the pages.",
        description=api.API_DESCRIPTION,
        version="1",
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/openapi.json",
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

    @app.exception_handler(ReviewError)
    def _review_error(request: Request, exc: ReviewError) -> Response:
        body: dict[str, Any] = {"detail": exc.message}
        headers = {}
        if isinstance(exc, Conflict):
            body.update(exc.current)
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
    """The OpenAPI page at ``/api/docs``, with Swagger UI served locally (fastapi-offline's copy)."""
    from fastapi.openapi.docs import get_swagger_ui_html

    static = Path(str(resources.files("fastapi_offline").joinpath("static")))
    app.mount("/api/docs-static", StaticFiles(directory=str(static)), name="docs-static")

    @app.get("/api/docs", include_in_schema=False)
    def docs() -> Response:
        return get_swagger_ui_html(
            openapi_url="/api/openapi.json",
            title="rescue review API",
            swagger_js_url="/api/docs-static/swagger-ui-bundle.js",
            swagger_css_url="/api/docs-static/swagger-ui.css",
            swagger_favicon_url="/static/favicon.svg",
        )


def app_from_env() -> FastAPI:
    """Factory used by ``rescue review serve --workers N`` (each worker reads the settings from env)."""
    return create_app(ReviewConfig.from_env())
