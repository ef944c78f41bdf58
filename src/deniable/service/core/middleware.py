"""The service's ASGI middleware (:func:`deniable.service.app.create_app` stacks them).

Each is a plain ASGI class (no Starlette ``BaseHTTPMiddleware``: it would buffer streaming
responses and hide disconnects), outermost first as the app wraps them:

* :class:`HeadMiddleware`: HEAD works wherever GET does (the GET is run, its body dropped);
* :class:`SecurityHeadersMiddleware`: CSP, ``nosniff``, ... on every response;
* :class:`CatchAllMiddleware`: an escaped exception is a 500 ``{"error"}`` and one log line;
* :class:`SlashRedirectMiddleware`: ``/path/`` to ``/path`` with a relative ``Location``;
* :class:`BodyLimitMiddleware`: a body over the limit is a 413 before any route reads it;
* :class:`RateLimitMiddleware`: requests per Bearer token in a sliding window (429).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.requests import ClientDisconnect
from starlette.routing import BaseRoute, Match

from deniable.service.core.asgi import ASGIApp, HttpMiddleware, Message, Receive, Scope, Send
from deniable.service.core.logging import (
    exception_fields,
    log_event,
)
from deniable.service.core.security import (
    TOKEN_KEY,
    SlidingWindowLimiter,
    retry_after,
    scope_bearer,
    token_key,
)

__all__ = [
    "CSP",
    "BodyLimitMiddleware",
    "CatchAllMiddleware",
    "HeadMiddleware",
    "RateLimitMiddleware",
    "SecurityHeadersMiddleware",
    "SlashRedirectMiddleware",
]

#: The Content-Security-Policy of every response: the page runs only its own script.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
#: Static files (the page's ES modules under unversioned URLs) are reused only after
#: revalidation by their ETag, so that a browser never runs an old module beside new ones.
_STATIC_CACHE = "no-cache"


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


class SecurityHeadersMiddleware(HttpMiddleware):
    """Adds the security headers to every HTTP response (errors included)."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
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


class CatchAllMiddleware(HttpMiddleware):
    """An exception that escaped the routes: a 500 ``{"error"}`` (if nothing was sent yet)
    and a log line with the exception's type and place; never re-raised, so the server
    prints no traceback (whose text could quote a value)."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except ClientDisconnect:  # the client went away: nothing to answer, nothing wrong
            return
        except Exception as exc:
            log_event("error", level=logging.ERROR, **exception_fields(exc))
            if not started:
                await _send_json(send, 500, {"error": "internal error (logged)"})


class BodyLimitMiddleware(HttpMiddleware):
    """Refuses a request body over ``limit`` bytes with 413 ``{"error"}``.

    The body is read here (at most ``limit + 1`` bytes) and handed on whole, so a body
    without a ``Content-Length`` (chunked) is counted as well as a declared one.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        super().__init__(app)
        self.limit = int(limit)

    async def _refuse(self, send: Send) -> None:
        await _send_json(
            send,
            413,
            {"error": f"request body: at most {self.limit} bytes (settings.max_body_bytes)"},
            [(b"connection", b"close")],
        )

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
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


class RateLimitMiddleware(HttpMiddleware):
    """At most ``limiter.limit`` requests per Bearer token in any window of
    ``limiter.window`` seconds (429 with ``Retry-After`` past it).

    Keyed by the token's sha256 (no token is held in memory), of the first ``Authorization``
    header (the one the routes authenticate); the hash is left in the scope
    (:data:`~deniable.service.core.security.TOKEN_KEY`) for the route to look its token up
    by, not hashed twice.  Requests without a token are not limited here (behind a reverse
    proxy every client has the proxy's address: limit those there).  The batch endpoint
    counts each of its reports against its own token in the same limiter
    (``app.state.rate_limiter``).  The windows live in this process: with
    several workers, each enforces its own.
    """

    def __init__(self, app: ASGIApp, limiter: SlidingWindowLimiter) -> None:
        super().__init__(app)
        self.limiter = limiter

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = scope_bearer(scope)
        if token is None:
            await self.app(scope, receive, send)
            return
        key = token_key(token)
        scope[TOKEN_KEY] = (token, key)
        wait = self.limiter.acquire(key)
        if wait > 0:
            retry = retry_after(wait)
            await _send_json(
                send,
                429,
                {
                    "error": f"header `Authorization`: at most {self.limiter.limit} requests per "
                    f"minute per token; retry after {retry} s"
                },
                [(b"retry-after", retry.encode())],
            )
            return
        await self.app(scope, receive, send)


class HeadMiddleware(HttpMiddleware):
    """HEAD wherever GET: a HEAD request is run as a GET (same checks, same status and
    headers, ``Content-Length`` included) and the body is dropped.  FastAPI routes a GET
    route for GET only; this makes every one of them, the pages and ``/static`` alike,
    answer HEAD (RFC 9110, 9.3.2) without a second route each."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") != "HEAD":
            await self.app(scope, receive, send)
            return
        inner = dict(scope)
        inner["method"] = "GET"

        async def headless(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        try:
            await self.app(inner, receive, headless)
        finally:
            if "route" in inner:  # for the access log: the route that served it
                scope["route"] = inner["route"]


_UNSAFE_TARGET = (b"//", b"/\\")


class SlashRedirectMiddleware:
    """``GET /dashboard/`` redirects (308) to ``/dashboard``, with a **relative**
    ``Location`` made of the request's own path and query, never of its ``Host`` header
    (Starlette's own slash redirect writes an absolute URL from ``Host``, so a request with
    a forged ``Host`` would be sent to any site).  Only a path that one of ``routes``
    serves is a target, and never one that a browser would read as another host
    (``//x``, ``/\\x``); everything else goes on (to a 404)."""

    def __init__(self, app: ASGIApp, routes: list[BaseRoute]) -> None:
        self.app = app
        self.routes = routes

    def _routed(self, scope: Scope, path: str) -> bool:
        probe = {**scope, "path": path}
        return any(route.matches(probe)[0] == Match.FULL for route in self.routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") in ("GET", "HEAD"):
            path = str(scope.get("path", ""))
            raw = bytes(scope.get("raw_path") or path.encode("utf-8"))
            target, raw_target = path.rstrip("/"), raw.rstrip(b"/")
            if (
                len(path) > 1
                and path.endswith("/")
                and raw.endswith(b"/")
                and raw_target.startswith(b"/")
                and not raw_target.startswith(_UNSAFE_TARGET)
                and not target.startswith(("//", "/\\"))
                and self._routed(scope, target)
            ):
                query = bytes(scope.get("query_string") or b"")
                location = raw_target + (b"?" + query if query else b"")
                await send(
                    {
                        "type": "http.response.start",
                        "status": 308,
                        "headers": [(b"location", location), (b"content-length", b"0")],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)
