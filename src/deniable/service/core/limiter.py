"""The service's one limiter: at most so many events per key in a sliding window.

:class:`SlidingWindowLimiter` counts requests per token (the rate limit), wrong admin
tokens and failed logins per client address (:mod:`deniable.service.core.security`), and is
meant for any other count a route needs (sessions per client, ...).  It is re-exported by
:mod:`deniable.service.core.security`.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Mapping

from deniable.exceptions import ParameterError

__all__ = ["SlidingWindowLimiter", "retry_after"]


class SlidingWindowLimiter:
    """At most ``limit`` events per key in any sliding window of ``window`` seconds.

    Keys are anything hashable (a token's :func:`token_key`, a client address, a pair of
    address and survey); each key keeps the times of its last ``limit`` events, so memory is
    O(keys * limit).  At most ``max_keys`` keys are kept: past that, the keys whose events
    have all left the window are forgotten first, then the oldest keys.  Thread-safe (sync
    routes run in a thread pool); the windows live in this process.

    >>> now = [0.0]
    >>> limiter = SlidingWindowLimiter(2, 60.0, clock=lambda: now[0])
    >>> limiter.acquire("a"), limiter.acquire("a"), limiter.acquire("a")
    (0.0, 0.0, 60.0)
    >>> now[0] = 30.0; limiter.acquire("b"), limiter.wait("a")
    (0.0, 30.0)
    >>> now[0] = 60.0; limiter.acquire("a")
    0.0

    Parameters
    ----------
    limit : int
        Events allowed per key in any window; at least 1.
    window : float
        The window's length in seconds; positive.
    clock : callable, optional
        Returns the time in seconds (default :func:`time.monotonic`; tests pass their own).
    max_keys : int, optional
        How many keys to keep at most (default 100,000).
    """

    def __init__(
        self,
        limit: int,
        window: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 100_000,
    ) -> None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ParameterError(f"`limit` must be an integer of at least 1, got {limit!r}.")
        if not (isinstance(window, (int, float)) and math.isfinite(window) and window > 0):
            raise ParameterError(f"`window` must be a positive number of seconds, got {window!r}.")
        self.limit, self.window, self.clock, self.max_keys = limit, float(window), clock, max_keys
        self._events: dict[Hashable, deque[float]] = {}
        self._lock = threading.Lock()

    def _current(self, key: Hashable, now: float) -> deque[float] | None:
        events = self._events.get(key)
        if events is not None:
            while events and events[0] <= now - self.window:
                events.popleft()
        return events

    def _wait(self, events: deque[float] | None, n: int, now: float) -> float:
        held = len(events) if events is not None else 0
        if held + n <= self.limit:
            return 0.0
        if n > self.limit or events is None:
            return self.window
        # the oldest event that must leave the window before n more fit
        return max(events[held + n - self.limit - 1] + self.window - now, 0.0) or self.window

    def _record(self, key: Hashable, n: int, now: float) -> None:
        events = self._events.get(key)
        if events is None:
            if len(self._events) >= self.max_keys:
                self._forget(now)
            events = self._events[key] = deque(maxlen=self.limit)
        events.extend([now] * min(n, self.limit))

    def _forget(self, now: float) -> None:
        for key in [k for k, e in self._events.items() if not e or e[-1] <= now - self.window]:
            del self._events[key]
        while len(self._events) >= self.max_keys:
            del self._events[next(iter(self._events))]

    def wait(self, key: Hashable, n: int = 1) -> float:
        """Seconds until ``n`` more events of ``key`` fit (0.0 if they fit now)."""
        now = self.clock()
        with self._lock:
            return self._wait(self._current(key, now), n, now)

    def acquire(self, key: Hashable, n: int = 1) -> float:
        """Record ``n`` events of ``key`` if they fit and return 0.0; else record nothing and
        return the seconds to wait."""
        now = self.clock()
        with self._lock:
            wait = self._wait(self._current(key, now), n, now)
            if wait == 0.0:
                self._record(key, n, now)
            return wait

    def acquire_many(self, counts: Mapping[Hashable, int]) -> tuple[Hashable, float] | None:
        """Record the events of every key if all of them fit, and return None; else record
        nothing and return the first key that does not fit with its seconds to wait."""
        now = self.clock()
        with self._lock:
            for key, n in counts.items():
                wait = self._wait(self._current(key, now), n, now)
                if wait > 0.0:
                    return key, wait
            for key, n in counts.items():
                self._record(key, n, now)
            return None

    def record(self, key: Hashable, n: int = 1) -> None:
        """Record ``n`` events of ``key`` whether or not they fit (a failure to count)."""
        now = self.clock()
        with self._lock:
            self._current(key, now)
            self._record(key, n, now)

    def forget(self, key: Hashable) -> None:
        """Drop every event of ``key``."""
        with self._lock:
            self._events.pop(key, None)


def retry_after(seconds: float) -> str:
    """A ``Retry-After`` value: whole seconds, rounded up, at least 1."""
    return str(max(1, math.ceil(seconds)))
