"""Limits on new sessions: the two limits a survey's session endpoint applies
(:class:`SessionLimits`), each a :class:`~deniable.service.core.limiter.SlidingWindowLimiter`
(the service's one limiter, also behind the rate limit and the admin-guess throttle).

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
from typing import Any, NamedTuple

from deniable.service.core.limiter import SlidingWindowLimiter

__all__ = ["Refusal", "SessionLimits", "client_key", "session_limits"]


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
    """The session limits of one app (see the module docstring), from its settings; a limit
    of 0 is off (``per_address`` or ``per_survey`` is then None)."""

    def __init__(self, settings: Any) -> None:
        window = float(getattr(settings, "session_window_seconds", 600.0))
        self.window = window
        self.per_address = _limiter(int(getattr(settings, "session_limit_per_address", 30)), window)
        self.per_survey = _limiter(int(getattr(settings, "session_limit_per_survey", 6000)), window)
        self._secret = secrets.token_bytes(32)

    def admit(self, host: str | None, survey_id: str, *, anonymous: bool) -> Refusal | None:
        """Count a session request from ``host`` to the survey and return ``None``; or, past
        a limit, count nothing and return the :class:`Refusal`."""
        who = client_key(host, self._secret)
        per_address, per_survey = self.per_address, self.per_survey
        survey = per_survey if anonymous else None
        if per_address is not None and (wait := per_address.wait(who)) > 0:
            return self._refusal(
                "your network address", per_address.limit, "session_limit_per_address", wait
            )
        if survey is not None and (wait := survey.wait(survey_id)) > 0:
            return self._refusal(
                f"survey {survey_id!r} from all addresses together", survey.limit,
                "session_limit_per_survey", wait,
            )  # fmt: skip
        if per_address is not None:
            per_address.record(who)
        if survey is not None:
            survey.record(survey_id)
        return None

    def _refusal(self, who: str, limit: int, setting: str, wait: float) -> Refusal:
        retry = max(1, math.ceil(wait))
        return Refusal(
            f"too many new sessions from {who}: at most {limit} in {self.window:g} seconds "
            f"(settings.{setting}); retry after {retry} s",
            retry,
        )


def _limiter(limit: int, window: float) -> SlidingWindowLimiter | None:
    return None if limit <= 0 else SlidingWindowLimiter(limit, window)


def session_limits(app: Any) -> SessionLimits:
    """The app's :class:`SessionLimits` (made from its settings on first use)."""
    found: SessionLimits | None = getattr(app.state, "session_limits", None)
    if found is None:
        found = app.state.session_limits = SessionLimits(app.state.settings)
    return found
