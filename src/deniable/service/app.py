"""The application factory: :func:`create_app` builds the FastAPI app of the service.

The app holds its settings and its store in ``app.state`` (``settings``, ``store``), serves
the JSON API (:mod:`deniable.service.api`), the dashboard (:mod:`deniable.service.dashboard`),
the respondent and interviewer pages and ``/static``, and wraps everything in the
middleware below (outermost first):

1. :class:`~deniable.service.logging.AccessLogMiddleware`: one JSON log line per request
   (method, route template, status, duration; never the raw path, a body or a header);
2. :class:`SecurityHeadersMiddleware`: the strict CSP, ``nosniff``, ``no-referrer``,
   ``frame-ancestors 'none'`` on every response, ``Cache-Control: no-store`` on all but
   ``/static``;
3. :class:`CatchAllMiddleware`: an unexpected exception becomes a 500 ``{"error": ...}``
   and one log line with its type and place, never its message (which may quote values);
4. :class:`BodyLimitMiddleware`: a body over ``settings.max_body_bytes`` is a 413 before
   any route sees it (the declared ``Content-Length`` and the bytes actually streamed are
   both counted);
5. :class:`RateLimitMiddleware`: at most ``settings.rate_limit_per_minute`` requests per
   Bearer token in any sliding 60-second window (429 with ``Retry-After``); in memory,
   per process.

``/docs`` is a plain HTML page rendered on the server from the OpenAPI schema, so that it
needs no script and the strict CSP holds there too (FastAPI's Swagger UI would need
inline script and a CDN, which this CSP forbids and a privacy tool should not call);
``/openapi.json`` is the schema itself.
"""

from __future__ import annotations

import html
import json
import logging
import secrets
import time
from collections import deque
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

import deniable
from deniable.exceptions import DeniableError
from deniable.service import api, dashboard
from deniable.service.logging import (
    AccessLogMiddleware,
    ASGIApp,
    Message,
    Receive,
    Scope,
    Send,
    exception_fields,
    log_event,
)
from deniable.service.security import bearer_token, token_key

__all__ = [
    "CSP",
    "STATIC_DIR",
    "BodyLimitMiddleware",
    "CatchAllMiddleware",
    "RateLimitMiddleware",
    "SecurityHeadersMiddleware",
    "create_app",
    "open_store",
]

#: The Content-Security-Policy of every response: the page runs only its own script.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_STATIC_CACHE = "public, max-age=86400"
STATIC_DIR = Path(str(resources.files("deniable.service"))) / "static"


async def _send_json(send: Send, status: int, body: dict[str, Any], headers: Any = ()) -> None:
    raw = json.dumps(body).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(raw)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": raw})


class SecurityHeadersMiddleware:
    """Adds the security headers to every HTTP response (errors included)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = str(scope.get("path", "")).startswith("/static/")

        async def add_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if not (k.lower() == b"cache-control" and not static)
                ]
                headers += [
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    (b"cross-origin-opener-policy", b"same-origin"),
                ]
                if static:
                    if not any(k.lower() == b"cache-control" for k, _ in headers):
                        headers.append((b"cache-control", _STATIC_CACHE.encode()))
                else:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, add_headers)


class CatchAllMiddleware:
    """An exception that escaped the routes: a 500 ``{"error"}`` (if nothing was sent yet)
    and a log line with the exception's type and place; never re-raised, so the server
    prints no traceback (whose text could quote a value)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            log_event("error", level=logging.ERROR, **exception_fields(exc))
            if not started:
                await _send_json(send, 500, {"error": "internal error (logged)"})


class BodyLimitMiddleware:
    """Refuses a request body over ``limit`` bytes with 413 ``{"error"}``.

    The body is read here (at most ``limit + 1`` bytes) and handed on whole, so a body
    without a ``Content-Length`` (chunked) is counted as well as a declared one.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = int(limit)

    async def _refuse(self, send: Send) -> None:
        await _send_json(
            send,
            413,
            {"error": f"request body: at most {self.limit} bytes (settings.max_body_bytes)"},
            [(b"connection", b"close")],
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for key, value in scope.get("headers", []):
            if key == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _send_json(send, 400, {"error": "header `Content-Length`: not a number"})
                    return
                if declared > self.limit:
                    await self._refuse(send)
                    return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._refuse(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class RateLimitMiddleware:
    """At most ``per_minute`` requests per Bearer token in any 60-second window.

    A sliding window of request times per token (keyed by the token's sha256, so no token
    is held in memory); requests without a token are not limited here (behind a reverse
    proxy every client has the proxy's address: limit those there).  The windows live in
    this process: with several workers, each enforces its own.  ``per_minute <= 0`` turns
    the limit off.
    """

    WINDOW = 60.0

    def __init__(self, app: ASGIApp, per_minute: int) -> None:
        self.app = app
        self.per_minute = int(per_minute)
        self.windows: dict[str, deque[float]] = {}
        self._calls = 0

    def _prune(self, now: float) -> None:
        cutoff = now - self.WINDOW
        for key in [k for k, w in self.windows.items() if not w or w[-1] <= cutoff]:
            del self.windows[key]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.per_minute <= 0:
            await self.app(scope, receive, send)
            return
        token = bearer_token(_HeaderView(scope))  # type: ignore[arg-type]
        if token is None:
            await self.app(scope, receive, send)
            return
        now = time.monotonic()
        self._calls += 1
        if self._calls % 10_000 == 0:
            self._prune(now)
        window = self.windows.setdefault(token_key(token), deque())
        while window and window[0] <= now - self.WINDOW:
            window.popleft()
        if len(window) >= self.per_minute:
            retry = max(1, int(window[0] + self.WINDOW - now) + 1)
            await _send_json(
                send,
                429,
                {
                    "error": f"header `Authorization`: at most {self.per_minute} requests per "
                    f"minute per token; retry after {retry} s"
                },
                [(b"retry-after", str(retry).encode())],
            )
            return
        window.append(now)
        await self.app(scope, receive, send)


class _HeaderView:
    """Just enough of a Request for :func:`bearer_token`: its headers."""

    def __init__(self, scope: Scope) -> None:
        self.headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }


def _field(loc: Any) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        where, rest = parts[0], parts[1:]
        if not rest:
            return "body" if where == "body" else where
        dotted = ""
        for p in rest:
            dotted += f"[{p}]" if p.isdigit() else (f".{p}" if dotted else p)
        return dotted if where == "body" else f"{where} {dotted}"
    return ".".join(parts) or "body"


def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    first = errors[0] if errors else {}
    if first.get("type") == "json_invalid":
        ctx = first.get("ctx") or {}
        return JSONResponse(
            {"error": f"body: malformed JSON ({ctx.get('error', 'cannot be parsed')})"},
            status_code=400,
        )
    if first.get("type") == "missing" and tuple(first.get("loc", ())) == ("body",):
        return JSONResponse({"error": "body: a JSON object is required"}, status_code=422)
    messages = [f"`{_field(e.get('loc', ()))}`: {e.get('msg', 'invalid')}" for e in errors[:5]]
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return JSONResponse({"error": "; ".join(messages) + more}, status_code=422)


def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
    if exc.status_code == 404 and message == "Not Found":
        message = "no such path"
    elif exc.status_code == 405 and message == "Method Not Allowed":
        message = f"method {request.method} is not allowed on this path"
    return JSONResponse({"error": message}, status_code=exc.status_code, headers=exc.headers)


def _library_error(request: Request, exc: Exception) -> JSONResponse:
    # the store refusing bad input (a report out of range, ...): the client's own values
    return JSONResponse({"error": str(exc)}, status_code=422)


def _docs_page(app: FastAPI) -> str:
    schema = app.openapi()
    rows = []
    for path, ops in schema.get("paths", {}).items():
        for method, op in ops.items():
            summary = op.get("summary", "")
            doc = op.get("description", "")
            codes = ", ".join(sorted(op.get("responses", {})))
            rows.append(
                f"<section><h2><code>{html.escape(method.upper())} {html.escape(path)}</code>"
                f"</h2><p>{html.escape(summary)}</p><pre>{html.escape(doc)}</pre>"
                f"<p>Responses: {html.escape(codes)}</p></section>"
            )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(app.title)} API</title>"
        '<link rel="stylesheet" href="/static/style.css"></head><body><main>'
        f"<h1>{html.escape(app.title)} {html.escape(app.version)}: HTTP API</h1>"
        '<p>The machine-readable schema: <a href="/openapi.json">/openapi.json</a>. '
        'Errors are <code>{"error": "..."}</code> with a 4xx status.</p>'
        + "".join(rows)
        + "</main></body></html>"
    )


def _page(name: str) -> FileResponse:
    path = STATIC_DIR / name
    if not path.is_file():
        raise StarletteHTTPException(404, f"the page {name} is not installed")
    return FileResponse(path, media_type="text/html; charset=utf-8")


def create_app(settings: Any, store: Any = None) -> FastAPI:
    """Build the service's app.

    Parameters
    ----------
    settings : Settings
        The service's settings (:mod:`deniable.service.settings`).  Without an admin token
        one is generated for this app (``deniable serve`` generates and prints it first).
    store : ServiceStore, optional
        The store to use, migrated and holding its surveys.  By default one is opened at
        ``settings.database_url``, migrated, and the settings' survey (the demo survey
        unless ``survey_file`` names one) is loaded into it.
    """
    if not getattr(settings, "admin_token", None):
        settings = settings.model_copy(update={"admin_token": secrets.token_urlsafe(32)})
    if store is None:
        store = open_store(settings)
    app = FastAPI(
        title="deniable survey service",
        version=deniable.__version__,
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.settings = settings
    app.state.store = store
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(DeniableError, _library_error)

    @app.get("/healthz", summary="Liveness")
    def healthz() -> dict[str, bool]:
        """``{"ok": true}`` while the process serves."""
        return {"ok": True}

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(_docs_page(app))

    @app.get("/s/{survey_id}", include_in_schema=False)
    def respondent_page(request: Request, survey_id: str) -> FileResponse:
        api.get_survey(request, survey_id)
        return _page("respondent.html")

    @app.get("/interviewer/{survey_id}", include_in_schema=False)
    def interviewer_page(request: Request, survey_id: str) -> FileResponse:
        api.get_survey(request, survey_id)
        return _page("interviewer.html")

    app.include_router(api.router)
    app.include_router(dashboard.router)
    if STATIC_DIR.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    # add_middleware wraps: the last added is the outermost
    app.add_middleware(RateLimitMiddleware, per_minute=int(settings.rate_limit_per_minute))
    app.add_middleware(BodyLimitMiddleware, limit=int(settings.max_body_bytes))
    app.add_middleware(CatchAllMiddleware)
    app.add_middleware(SecurityHeadersMiddleware)
    app.add_middleware(AccessLogMiddleware)
    return app


def open_store(settings: Any) -> Any:
    """The store at ``settings.database_url``, migrated, with the settings' survey loaded."""
    from deniable.service.storage import ServiceStore

    store = ServiceStore(settings.database_url)
    store.migrate()
    store.load_survey(settings.survey())
    return store
