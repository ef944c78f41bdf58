"""Connections that idle or trickle are closed: the HTTP protocol of ``deniable serve``.

uvicorn closes an idle keep-alive connection, but not one that sends a header byte every
few seconds (slowloris: each byte restarts its keep-alive timer, and it has no timer for
headers or bodies), nor one that declares a body and trickles it, and it accepts every
connection it is offered until the process runs out of file descriptors.
:class:`GuardedHttpProtocol`, uvicorn's httptools protocol with three bounds, closes them:

* **headers**: a request's line and headers must be complete within ``header_timeout``
  seconds of the connection's opening (or of the previous response, on a kept-alive
  connection), however slowly they come, and hold at most :data:`MAX_HEADER_BYTES`;
  otherwise the connection is closed (with ``408``, or ``431`` for too large a head, if any
  of the request had arrived);
* **bodies**: a request's body must be complete within ``body_timeout`` seconds of its
  headers; otherwise the server answers ``408`` (if it has not answered yet) and closes
  the connection, and the request is logged with status 408;
* **connections**: at most ``max_connections`` open at once in the process; one more is
  answered ``503`` with ``Retry-After: 1`` and closed at once, before a byte of it is
  read, so the descriptors of a process never exceed the cap and a few spare.

The bounds come from the settings (:mod:`deniable.service.core.settings`) through the
environment (:func:`limits_environment`, which ``deniable serve`` puts in ``os.environ``
before uvicorn starts, for its worker processes too), and are read once per process.
Closed connections are logged as ``connection`` events (what and how many), at most one
line per kind every :data:`LOG_EVERY` seconds.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from deniable.exceptions import ParameterError
from deniable.service.core.logging import TIMED_OUT, log_event

__all__ = [
    "MAX_HEADER_BYTES",
    "SPARE_DESCRIPTORS",
    "ConnectionLimits",
    "GuardedHttpProtocol",
    "ensure_descriptors",
    "limits_environment",
]

#: The most bytes a request's line and headers may hold.
MAX_HEADER_BYTES = 64 * 1024
#: Descriptors a server process needs beside its connections (database, logs, listener).
SPARE_DESCRIPTORS = 64
#: Closed or refused connections are logged at most once per kind in this many seconds.
LOG_EVERY = 10.0
_ENV = {
    "max_connections": "DENIABLE_MAX_CONNECTIONS",
    "header_timeout": "DENIABLE_HEADER_TIMEOUT",
    "body_timeout": "DENIABLE_BODY_TIMEOUT",
}


@dataclass(frozen=True)
class ConnectionLimits:
    """The bounds of :class:`GuardedHttpProtocol` (defaults: the settings' defaults)."""

    max_connections: int = 1000
    header_timeout: float = 10.0
    body_timeout: float = 30.0

    @classmethod
    def from_environment(cls, environ: Any = None) -> ConnectionLimits:
        """The limits in ``environ`` (default ``os.environ``), defaults where unset."""
        env = os.environ if environ is None else environ
        base = cls()
        return cls(
            max_connections=int(env.get(_ENV["max_connections"], base.max_connections)),
            header_timeout=float(env.get(_ENV["header_timeout"], base.header_timeout)),
            body_timeout=float(env.get(_ENV["body_timeout"], base.body_timeout)),
        )


def limits_environment(settings: Any) -> dict[str, str]:
    """The variables that carry ``settings``' connection limits to the protocol."""
    return {var: str(getattr(settings, name)) for name, var in _ENV.items()}


def ensure_descriptors(max_connections: int) -> None:
    """Make sure this process may open ``max_connections`` connections and
    :data:`SPARE_DESCRIPTORS` more files: raise the soft limit on open files up to the hard
    limit if need be.

    Raises
    ------
    ParameterError
        When even the hard limit is too low, naming the setting and both numbers.
    """
    try:
        import resource
    except ImportError:  # not POSIX: nothing to check
        return
    need = int(max_connections) + SPARE_DESCRIPTORS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return
    if hard == resource.RLIM_INFINITY or hard >= need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
        return
    raise ParameterError(
        f"`max_connections` (DENIABLE_MAX_CONNECTIONS) must be at most {hard - SPARE_DESCRIPTORS}"
        f" here: a server process may open only {hard} files (ulimit -Hn), {SPARE_DESCRIPTORS} "
        f"of them for its own use; got {max_connections}."
    )


class _Tally:
    """Counts closed connections per kind and logs them at most every LOG_EVERY s."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.logged: dict[str, float] = {}

    def add(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        now = time.monotonic()
        if now - self.logged.get(kind, -LOG_EVERY) >= LOG_EVERY:
            level = logging.INFO if kind == "idle" else logging.WARNING
            log_event("connection", level=level, closed=kind, count=self.counts.pop(kind))
            self.logged[kind] = now


_tally = _Tally()


def _response(status: int, reason: str, message: str, extra: bytes = b"") -> bytes:
    body = json.dumps({"error": message}).encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n".encode()
        + extra
        + b"\r\n"
        + body
    )


_HEADERS, _BODY, _APP = "headers", "body", "app"


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools HTTP/1.1 protocol with deadlines for headers and bodies and a
    cap on open connections (see the module docstring); pass it as uvicorn's ``http``."""

    limits: ConnectionLimits | None = None  # read from the environment on first use

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cls = type(self)
        if cls.limits is None:
            cls.limits = ConnectionLimits.from_environment()
        self.bounds: ConnectionLimits = cls.limits
        # uvicorn would refuse (503) the request of the last allowed connection: the cap is
        # enforced when a connection is accepted instead
        self.limit_concurrency = None
        self._stage = _HEADERS
        self._head_bytes = 0
        self._deadline: asyncio.TimerHandle | None = None
        self._refused = False

    # ------------------------------------------------------------------ timers
    def _arm(self, seconds: float, stage: str) -> None:
        self._disarm()
        self._stage = stage
        self._deadline = self.loop.call_later(seconds, self._expired, stage)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _close_with(self, raw: bytes | None, kind: str) -> None:
        _tally.add(kind)
        if not self.transport.is_closing():
            if raw is not None:
                self.transport.write(raw)
            self.transport.close()

    def _expired(self, stage: str) -> None:
        self._deadline = None
        if stage == _HEADERS:
            partial = self._head_bytes > 0
            message = f"request headers: not complete within {self.bounds.header_timeout:g} s"
            raw = _response(408, "Request Timeout", message) if partial else None
            self._close_with(raw, "header_timeout" if partial else "idle")
            return
        cycle = self.cycle
        answered = cycle is not None and cycle.response_started
        if cycle is not None and not cycle.response_complete:
            cycle.scope[TIMED_OUT] = 408  # type: ignore[literal-required]
            cycle.disconnected = True  # the app's receive() says the client went away
            cycle.message_event.set()
        message = f"request body: not complete within {self.bounds.body_timeout:g} s"
        self._close_with(None if answered else _response(408, "Request Timeout", message),
                         "body_timeout")  # fmt: skip

    # ------------------------------------------------------------------ connection
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.bounds.max_connections:
            self._refused = True
            self.transport = transport
            message = (
                f"too many connections (at most {self.bounds.max_connections} per server "
                "process): try again"
            )
            raw = _response(503, "Service Unavailable", message, b"retry-after: 1\r\n")
            self._close_with(raw, "max_connections")
            return
        super().connection_made(transport)
        self._arm(self.bounds.header_timeout, _HEADERS)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._refused:
            return
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._stage == _HEADERS:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._stage == _HEADERS and self._head_bytes > MAX_HEADER_BYTES:
            message = f"request headers: at most {MAX_HEADER_BYTES} bytes"
            self._disarm()
            self._close_with(_response(431, "Request Header Fields Too Large", message),
                             "header_size")  # fmt: skip

    # ------------------------------------------------------------------ parser events
    def on_headers_complete(self) -> None:
        self._arm(self.bounds.body_timeout, _BODY)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        if self._stage == _BODY:
            if self.cycle is not None and self.cycle.response_complete:
                # answered before its body ended (kept alive): wait for the next request
                self._head_bytes = 0
                self._arm(self.bounds.header_timeout, _HEADERS)
            else:
                self._disarm()
                self._stage = _APP
        super().on_message_complete()

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)
        super().on_response_complete()
        if not pipelined and not self.transport.is_closing() and self._stage != _BODY:
            # waiting for the next request's headers (kept alive): the same deadline
            self._head_bytes = 0
            self._arm(self.bounds.header_timeout, _HEADERS)
