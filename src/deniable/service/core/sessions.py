"""Dashboard logins held on the server: a login is a session that logout revokes.

A login creates a session: 32 random bytes (the session id), of which the server keeps only
the SHA-256 and an expiry time, in a small SQLite table of its own (stdlib ``sqlite3``).
The browser gets the id in the ``deniable_admin`` cookie, signed with a key derived from
the admin token (itsdangerous, HMAC-SHA256, with a timestamp), so that

* a cookie is valid only while its session is registered and unexpired: logging out
  deletes the session, and a copy of the cookie made before stops working at once;
* a new admin token invalidates every cookie (the key changes), as before.

Where the sessions live (``settings.sessions_file``): in memory when it is None (one
process: the library's default, and the tests'), or in a file, created ``0600``, which the
worker processes of ``deniable serve --workers N`` share and which keeps logins across a
restart (``deniable serve`` uses ``<data dir>/sessions.db`` unless told otherwise).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

from deniable.service.storage.db import create_private_file

__all__ = [
    "ADMIN_COOKIE",
    "ADMIN_COOKIE_MAX_AGE",
    "SessionRegistry",
    "cookie_session",
    "registry",
    "sign_session",
]

#: The name of the dashboard's login cookie.
ADMIN_COOKIE = "deniable_admin"
#: How long a dashboard login lasts, in seconds (12 hours).
ADMIN_COOKIE_MAX_AGE = 12 * 3600
_COOKIE_SALT = "deniable.dashboard.session"


def _serializer(admin_token: str) -> URLSafeTimedSerializer:
    # the signing key is derived from the admin token: a new token invalidates every login
    key = hmac.new(
        admin_token.encode("utf-8"), b"deniable dashboard cookie", hashlib.sha256
    ).hexdigest()
    return URLSafeTimedSerializer(key, salt=_COOKIE_SALT)


def sign_session(admin_token: str, session: str) -> str:
    """The cookie value of ``session``: the id, signed and timestamped."""
    return _serializer(admin_token).dumps(session)


def cookie_session(admin_token: str, value: str | None, max_age: int) -> str | None:
    """The session id in a cookie value whose signature and age check out, else None (it
    may still have been revoked: ask the :class:`SessionRegistry`)."""
    if not value:
        return None
    try:
        session = _serializer(admin_token).loads(value, max_age=max_age)
    except (SignatureExpired, BadSignature):
        return None
    return session if isinstance(session, str) and session else None


def _digest(session: str) -> str:
    return hashlib.sha256(session.encode("utf-8")).hexdigest()


class SessionRegistry:
    """The live dashboard sessions: ``sha256(id)`` and the expiry (Unix time) of each.

    Parameters
    ----------
    path : Path, optional
        The SQLite file (created ``0600`` on the first login, with its directory) shared by
        every process that opens it; None keeps the sessions in this process's memory.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = None if path is None else Path(path)
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            if self.path is None:
                target = ":memory:"
            else:
                create_private_file(self.path)
                target = str(self.path)
            conn = sqlite3.connect(
                target, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS sessions (digest TEXT PRIMARY KEY, expires REAL)"
            )
            self._conn = conn
        return self._conn

    def create(self, lifetime: float) -> str:
        """A new session valid for ``lifetime`` seconds: its id (shown once, in the cookie)."""
        session = secrets.token_urlsafe(32)
        now = time.time()
        with self._lock:
            db = self._db()
            db.execute("DELETE FROM sessions WHERE expires <= ?", (now,))
            db.execute("INSERT INTO sessions VALUES (?, ?)", (_digest(session), now + lifetime))
        return session

    def is_live(self, session: str) -> bool:
        """Whether ``session`` is registered and has not expired."""
        if self.path is not None and self._conn is None and not self.path.exists():
            return False  # nobody has logged in yet: do not create the file for a look-up
        with self._lock:
            row = (
                self._db()
                .execute("SELECT expires FROM sessions WHERE digest = ?", (_digest(session),))
                .fetchone()
            )
        return row is not None and float(row[0]) > time.time()

    def revoke(self, session: str) -> None:
        """Forget ``session``: its cookie no longer logs anyone in."""
        with self._lock:
            self._db().execute("DELETE FROM sessions WHERE digest = ?", (_digest(session),))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def registry(app: Any) -> SessionRegistry:
    """The app's :class:`SessionRegistry` (``app.state.sessions``; made on first use from
    ``settings.sessions_file``)."""
    found = getattr(app.state, "sessions", None)
    if found is None:
        path = getattr(app.state.settings, "sessions_file", None)
        found = app.state.sessions = SessionRegistry(path)
    return found
