"""Dashboard logins held on the server: a login is a session that logout revokes.

A login creates a session: 32 random bytes (the session id), of which the server keeps only
the SHA-256 and an expiry time, in a small SQLite table of its own (SQLAlchemy Core).
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
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer
from sqlalchemy.engine import Engine
from sqlalchemy.pool import StaticPool

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

_metadata = sa.MetaData()
_sessions = sa.Table(
    "sessions",
    _metadata,
    sa.Column("digest", sa.Text, primary_key=True),
    sa.Column("expires", sa.Float),
)
_EXPIRES = sa.select(_sessions.c.expires).where(_sessions.c.digest == sa.bindparam("digest"))


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
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self._closer: weakref.finalize[Any, Any] | None = None

    def _db(self) -> Engine:
        if self._engine is None:
            if self.path is None:  # one connection, kept: the database lives in it
                engine = sa.create_engine(
                    "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}
                )
            else:
                create_private_file(self.path)
                engine = sa.create_engine(
                    f"sqlite:///{self.path}",
                    connect_args={"timeout": 30.0, "check_same_thread": False},
                )
            _metadata.create_all(engine)  # only if missing
            self._engine = engine
            # an app dropped without a shutdown (a test's, a reloaded one) still closes its
            # connections: Python 3.13 warns about a sqlite3 connection only collected
            self._closer = weakref.finalize(self, engine.dispose)
        return self._engine

    def create(self, lifetime: float) -> str:
        """A new session valid for ``lifetime`` seconds: its id (shown once, in the cookie)."""
        session = secrets.token_urlsafe(32)
        now = time.time()
        with self._lock, self._db().begin() as conn:
            conn.execute(sa.delete(_sessions).where(_sessions.c.expires <= now))
            conn.execute(
                sa.insert(_sessions).values(digest=_digest(session), expires=now + lifetime)
            )
        return session

    def is_live(self, session: str) -> bool:
        """Whether ``session`` is registered and has not expired."""
        if self.path is not None and self._engine is None and not self.path.exists():
            return False  # nobody has logged in yet: do not create the file for a look-up
        with self._lock, self._db().connect() as conn:
            expires = conn.execute(_EXPIRES, {"digest": _digest(session)}).scalar()
        return expires is not None and float(expires) > time.time()

    def revoke(self, session: str) -> None:
        """Forget ``session``: its cookie no longer logs anyone in."""
        with self._lock, self._db().begin() as conn:
            conn.execute(sa.delete(_sessions).where(_sessions.c.digest == _digest(session)))

    def close(self) -> None:
        """Close the connection (a later call opens it again)."""
        with self._lock:
            if self._closer is not None:
                self._closer()  # disposes of the engine once, and detaches the finalizer
                self._closer = None
            self._engine = None


def registry(app: Any) -> SessionRegistry:
    """The app's :class:`SessionRegistry` (``app.state.sessions``; made on first use from
    ``settings.sessions_file``)."""
    found = getattr(app.state, "sessions", None)
    if found is None:
        path = getattr(app.state.settings, "sessions_file", None)
        found = app.state.sessions = SessionRegistry(path)
    return found
