"""The ASGI types the service's middleware is written against, and :class:`HttpMiddleware`,
the base of every middleware that acts on HTTP requests only."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["ASGIApp", "HttpMiddleware", "Message", "Receive", "Scope", "Send"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class HttpMiddleware:
    """An ASGI middleware around ``app`` that hands every scope other than an HTTP request
    (lifespan, websocket) on untouched and an HTTP request to :meth:`http`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one HTTP request (here: pass it on)."""
        await self.app(scope, receive, send)
