"""The dashboard's login limit: failed logins per client address, in this process.

After :data:`LOGIN_FAILURES` failed logins from one address within :data:`LOGIN_WINDOW`
seconds, every login from that address is refused until the window has passed, so that an
admin password cannot be guessed online (the admin token, 32 random bytes, cannot be).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

__all__ = ["LOGIN_FAILURES", "LOGIN_WINDOW", "LoginFailures", "login_failures"]

#: Failed logins allowed from one client address in any :data:`LOGIN_WINDOW` seconds; past
#: that every login from the address is refused (429) until the window has passed, so that a
#: password cannot be guessed online (the admin token is 32 random bytes: no guessing).
LOGIN_FAILURES = 10
LOGIN_WINDOW = 60.0
#: The clock (tests replace it).
clock = time.monotonic


class LoginFailures:
    """Recent failed logins per client address (in this process)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.times: dict[str, deque[float]] = {}

    def blocked(self, who: str, now: float) -> bool:
        with self.lock:
            window = self.times.get(who)
            while window and window[0] <= now - LOGIN_WINDOW:
                window.popleft()
            if window is not None and not window:
                del self.times[who]
            return window is not None and len(window) >= LOGIN_FAILURES

    def failed(self, who: str, now: float) -> None:
        with self.lock:
            if len(self.times) > 100_000:  # many addresses: forget those that went quiet
                for key in [k for k, w in self.times.items() if w[-1] <= now - LOGIN_WINDOW]:
                    del self.times[key]
            self.times.setdefault(who, deque()).append(now)

    def succeeded(self, who: str) -> None:
        with self.lock:
            self.times.pop(who, None)


def login_failures(request: Any) -> LoginFailures:
    """The app's table of failed logins (made on first use, kept in ``app.state``)."""
    state = request.app.state
    failures = getattr(state, "dashboard_login_failures", None)
    if failures is None:
        failures = state.dashboard_login_failures = LoginFailures()
    return failures
