"""The dashboard's login limit: failed logins per client address, in this process.

After ``settings.admin_guess_limit`` (:data:`LOGIN_FAILURES`, 10) failed logins from one
address within ``settings.admin_guess_window`` (:data:`LOGIN_WINDOW`, 60) seconds, every
login from that address is refused (429 with ``Retry-After``), the right secret included,
until the oldest failure has left the window, so that an admin password cannot be guessed
online (the admin token, at least 128 random bits, cannot be guessed at all).  A success
does not clear the count: behind a proxy or a NAT, the admin's own logins must not reset
a guesser's.  Wrong Bearer admin tokens are counted apart, alike
(:func:`deniable.service.core.security.admin_guesses`).
"""

from __future__ import annotations

import time
from typing import Any

from deniable.service.core.limiter import SlidingWindowLimiter

__all__ = ["LOGIN_FAILURES", "LOGIN_WINDOW", "login_failures"]

#: Failed logins allowed from one client address in any window, unless the settings say.
LOGIN_FAILURES = 10
#: The window, in seconds, unless the settings say.
LOGIN_WINDOW = 60.0
#: The clock (tests replace it).
clock = time.monotonic


def login_failures(request: Any) -> SlidingWindowLimiter:
    """The app's count of failed logins per client address (made on first use, kept in
    ``app.state``)."""
    state = request.app.state
    failures: SlidingWindowLimiter | None = getattr(state, "dashboard_login_failures", None)
    if failures is None:
        settings = state.settings
        failures = state.dashboard_login_failures = SlidingWindowLimiter(
            int(getattr(settings, "admin_guess_limit", LOGIN_FAILURES)),
            float(getattr(settings, "admin_guess_window", LOGIN_WINDOW)),
            clock=lambda: clock(),
        )
    return failures
