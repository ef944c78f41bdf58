"""Structured logs: one JSON object per line, never a token, an answer or a report value.

Every request is logged once, when its response has been sent, as::

    {"time": "2026-11-25T09:40:00.123Z", "level": "INFO", "logger": "deniable.service",
     "event": "request", "method": "POST", "path": "/api/surveys/{survey_id}/reports",
     "status": 201, "duration_ms": 1.84}

``path`` is the route's *template*, never the raw path (a path may carry a token an
operator pasted by mistake), and the query string is not logged at all.  A request that got
no response is logged with the status it ended with: ``499`` when the client went away
first (closed the connection in the middle of its body, say: nginx's "client closed
request"; not a server error), ``408`` when the server closed it because its body did not
arrive in time (:mod:`deniable.service.core.connections`).  Nothing of a
request's body or headers is logged.  A request that raised is logged with the exception's
type and where it was raised (file and line), not its message: messages may quote values.

:func:`configure_logging` (called by ``deniable serve``) sends every logger's records
through :class:`JsonFormatter`, uvicorn's included; uvicorn's own access log is switched
off (it logs raw paths) and this module's middleware logs requests instead.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import traceback
from datetime import UTC, datetime
from typing import IO, Any

from deniable.service.core.asgi import HttpMiddleware, Message, Receive, Scope, Send

__all__ = [
    "CLIENT_CLOSED",
    "LOGGER",
    "TIMED_OUT",
    "AccessLogMiddleware",
    "JsonFormatter",
    "configure_logging",
    "log_event",
    "route_template",
]

#: The name of the service's logger.
LOGGER = "deniable.service"
#: The status logged for a request whose client went away before it was answered.
CLIENT_CLOSED = 499
#: The scope key the connection guard sets when it timed a request out (its value: 408).
TIMED_OUT = "deniable.timed_out"

_logger = logging.getLogger(LOGGER)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time (UTC, ms), level, logger, event, and the record's
    ``fields`` (from :func:`log_event`).

    An exception attached to a record is rendered as its type and the innermost frame's
    file and line, never its message or traceback text.
    """

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC)
        out: dict[str, Any] = {
            "time": stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "event": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            out.update(fields)
        if record.exc_info and record.exc_info[0] is not None:
            out.update(exception_fields(record.exc_info[1]))
        return json.dumps(out, default=str, separators=(",", ":"))


def exception_fields(exc: BaseException | None) -> dict[str, Any]:
    """The type of ``exc`` and where it was raised, without its message."""
    if exc is None:
        return {}
    out: dict[str, Any] = {"exception": type(exc).__qualname__}
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        out["at"] = f"{last.filename}:{last.lineno}"
    return out


def log_event(event: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log ``event`` with ``fields`` (plain JSON values; never a secret or a report)."""
    _logger.log(level, event, extra={"fields": fields})


def configure_logging(level: int | str = logging.INFO, stream: IO[str] | None = None) -> None:
    """Send every log record (the root logger's) as JSON lines to ``stream`` (stderr).

    Replaces the root logger's handlers, and makes uvicorn's loggers propagate to it.
    """
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        lg = logging.getLogger(name)
        lg.handlers.clear()
        lg.propagate = True
    logging.getLogger("uvicorn.access").disabled = True  # raw paths: we log templates


def route_template(scope: Scope) -> str:
    """The path template of the route that served ``scope`` (``/api/surveys/{survey_id}``),
    ``/static/{path}`` for static files, or ``<unmatched>``: never the raw path."""
    route = scope.get("route")
    template = getattr(route, "path", None)
    if isinstance(template, str) and template:
        return template
    path = scope.get("path", "")
    if isinstance(path, str) and path.startswith("/static/"):
        return "/static/{path}"
    return "<unmatched>"


class AccessLogMiddleware(HttpMiddleware):
    """ASGI middleware: one ``request`` event per HTTP request, after its response."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        start = time.perf_counter()
        method = scope.get("method")
        status: int | None = None
        gone = False

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        async def watch_receive() -> Message:
            nonlocal gone
            message = await receive()
            if message["type"] == "http.disconnect":
                gone = True
            return message

        try:
            await self.app(scope, watch_receive, send_status)
        finally:
            if status is None:  # no response: why
                timed_out = scope.get(TIMED_OUT)
                status = int(timed_out) if timed_out else CLIENT_CLOSED if gone else 500
            log_event(
                "request",
                method=method,
                path=route_template(scope),
                status=status,
                duration_ms=round((time.perf_counter() - start) * 1000, 2),
            )
