"""Limits on new sessions: a sliding-window counter per key (:class:`SlidingWindowLimiter`)
and the two limits a survey's session endpoint applies (:class:`SessionLimits`).

A session is a respondent; a client that can open thousands of them can answer thousands of
times (ballot stuffing).  ``POST /api/surveys/{id}/sessions`` therefore counts, in any
sliding window of ``session_window_seconds`` (default 600):

* the session requests from one client address (``session_limit_per_address``, default
  30): an IPv4 address, or the /64 prefix of an IPv6 one (one machine usually holds a whole
  /64); every request counts, an invitation that turns out invalid too;
* the sessions of one anonymous survey (``session_limit_per_survey``, default 6000), from
  all clients together: a ceiling on how fast a survey can be stuffed from many addresses.
  Invitation surveys are not counted here (each session needs an invitation).

Past a limit the answer is 429 with ``Retry-After`` (the seconds until the window lets the
next request in), and nothing is created.  A limit of 0 turns it off.  The counters live in
the process, like the per-token rate limit: with ``--workers N`` each process counts its
own.  Addresses are held only as keyed hashes (a random key per process), never logged.
Behind a reverse proxy every client has the proxy's address unless uvicorn reads the
forwarded one (``FORWARDED_ALLOW_IPS``, docs/service.md).

These limits slow one client down; they do not stop a patient attacker with many
addresses.  For a survey whose result matters, admit respondents by invitation, and read
each estimate with its robustness statement (docs/robustness.md).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["Refusal", "SessionLimits", "SlidingWindowLimiter", "client_key", "session_limits"]


class SlidingWindowLimiter:
    """At most ``limit`` events per key in any ``window`` seconds (``limit`` 0: no limit).

    :meth:`wait` says how long a key must wait before its next event would be allowed (0:
    now), :meth:`record` counts an event.  At most ``max_keys`` keys are kept: past that,
    keys whose window is empty are dropped first, then the least recently seen.
    Thread-safe.
    """

    def __init__(
        self,
        limit: int,
        window: float,
        *,
        max_keys: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = int(limit)
        self.window = float(window)
        self.max_keys = int(max_keys)
        self.clock = clock
        self._events: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def _current(self, key: str, now: float) -> deque[float] | None:
        events = self._events.get(key)
        if events is None:
            return None
        while events and events[0] <= now - self.window:
            events.popleft()
        return events

    def wait(self, key: str) -> float:
        """Seconds until ``key`` may have another event (0.0: now)."""
        if self.limit <= 0:
            return 0.0
        now = self.clock()
        with self._lock:
            events = self._current(key, now)
            if events is None or len(events) < self.limit:
                return 0.0
            return max(0.0, events[len(events) - self.limit] + self.window - now)

    def record(self, key: str) -> None:
        """Count one event of ``key`` now."""
        if self.limit <= 0:
            return
        now = self.clock()
        with self._lock:
            events = self._current(key, now)
            if events is None:
                if len(self._events) >= self.max_keys:
                    self._shrink(now)
                events = self._events[key] = deque()
            events.append(now)
            self._events.move_to_end(key)

    def _shrink(self, now: float) -> None:
        """Make room for one more key: drop the keys with an empty window, then the least
        recently seen."""
        for key in [k for k, e in self._events.items() if not e or e[-1] <= now - self.window]:
            del self._events[key]
        while len(self._events) >= self.max_keys:
            self._events.popitem(last=False)

    def __len__(self) -> int:
        return len(self._events)


def client_key(host: str | None, secret: bytes) -> str:
    """The key of a client address: IPv4 as it is, IPv6 by its /64 prefix (an IPv4-mapped
    IPv6 address as its IPv4), hashed with ``secret``; anything else (a test client's name,
    a Unix socket) hashed as it is."""
    text = host or "unknown"
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        pass
    else:
        if isinstance(address, ipaddress.IPv6Address):
            mapped = address.ipv4_mapped
            text = (
                str(mapped)
                if mapped is not None
                else str(ipaddress.ip_network(f"{address}/64", strict=False))
            )
        else:
            text = str(address)
    return hmac.new(secret, text.encode("utf-8"), hashlib.sha256).hexdigest()


class Refusal(NamedTuple):
    """A session request past a limit: the message (naming the limit) and the seconds to
    wait (``Retry-After``)."""

    message: str
    retry_after: int


class SessionLimits:
    """The session limits of one app (see the module docstring), from its settings."""

    def __init__(self, settings: Any) -> None:
        window = float(getattr(settings, "session_window_seconds", 600.0))
        self.window = window
        self.per_address = SlidingWindowLimiter(
            int(getattr(settings, "session_limit_per_address", 30)), window
        )
        self.per_survey = SlidingWindowLimiter(
            int(getattr(settings, "session_limit_per_survey", 6000)), window
        )
        self._secret = secrets.token_bytes(32)

    def admit(self, host: str | None, survey_id: str, *, anonymous: bool) -> Refusal | None:
        """Count a session request from ``host`` to the survey and return ``None``; or, past
        a limit, count nothing and return the :class:`Refusal`."""
        who = client_key(host, self._secret)
        by_address = self.per_address.wait(who)
        by_survey = self.per_survey.wait(survey_id) if anonymous else 0.0
        if by_address > 0:
            return self._refusal(
                "your network address", self.per_address.limit, "session_limit_per_address",
                by_address,
            )  # fmt: skip
        if by_survey > 0:
            return self._refusal(
                f"survey {survey_id!r} from all addresses together", self.per_survey.limit,
                "session_limit_per_survey", by_survey,
            )  # fmt: skip
        self.per_address.record(who)
        if anonymous:
            self.per_survey.record(survey_id)
        return None

    def _refusal(self, who: str, limit: int, setting: str, wait: float) -> Refusal:
        retry = max(1, math.ceil(wait))
        return Refusal(
            f"too many new sessions from {who}: at most {limit} in {self.window:g} seconds "
            f"(settings.{setting}); retry after {retry} s",
            retry,
        )


def session_limits(app: Any) -> SessionLimits:
    """The app's :class:`SessionLimits` (made from its settings on first use)."""
    found: SessionLimits | None = getattr(app.state, "session_limits", None)
    if found is None:
        found = app.state.session_limits = SessionLimits(app.state.settings)
    return found
