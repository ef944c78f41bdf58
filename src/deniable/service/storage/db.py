"""Database engines and migrations: SQLite (the embedded default) and PostgreSQL.

:func:`database_url` maps the URLs people write (``postgres://``, ``postgresql://``, as
hosting platforms put in ``DATABASE_URL``) to SQLAlchemy's psycopg 3 driver
(``postgresql+psycopg://``).  :func:`make_engine` sets every SQLite connection up for a
server: write-ahead logging (readers never block the writer), ``synchronous=NORMAL`` (a
committed transaction survives a killed process; ``?synchronous=full`` in the URL makes it
survive a power loss too, at an fsync per commit), a busy timeout (a writer waits for the
lock instead of failing), foreign keys on.  PostgreSQL connections make no server-side
prepared statements (a plan made while a table was small would stay).  Transactions on SQLite
begin ``DEFERRED`` unless the connection asks for ``BEGIN IMMEDIATE`` with the execution
option ``sqlite_begin="IMMEDIATE"`` (:func:`write_tx`): every transaction that writes
takes the write lock at its start, so two writers never read, plan and then collide.

:func:`migrate` runs the Alembic migrations (``alembic upgrade head``) with a
programmatic configuration: no ``alembic.ini`` is needed.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from deniable.exceptions import ParameterError

__all__ = [
    "BUSY_TIMEOUT_MS",
    "SYNCHRONOUS",
    "checkpoint",
    "create_private_file",
    "database_url",
    "dispose",
    "is_busy",
    "is_postgres",
    "is_sqlite",
    "make_engine",
    "migrate",
    "nowait_engine",
    "read_tx",
    "write_tx",
]

#: How long a SQLite writer waits for the write lock before failing (milliseconds).
BUSY_TIMEOUT_MS = 60_000

_SCHEMES = ("sqlite", "postgresql", "postgres")


def database_url(url: str) -> str:
    """``url`` with PostgreSQL mapped to the psycopg 3 driver; an unsupported scheme is a
    :class:`~deniable.exceptions.ParameterError` naming the supported ones.

    >>> database_url("postgres://u:p@db:5432/survey")
    'postgresql+psycopg://u:p@db:5432/survey'
    >>> database_url("sqlite:///data/deniable.db")
    'sqlite:///data/deniable.db'
    """
    if not isinstance(url, str) or "://" not in url:
        raise ParameterError(
            "`database_url` must be a database URL (sqlite:///path/to/file.db or "
            f"postgresql://user:password@host/dbname), got {url!r}."
        )
    scheme, rest = url.split("://", 1)
    base = scheme.split("+", 1)[0].lower()
    if base not in _SCHEMES:
        raise ParameterError(
            "`database_url` must start with sqlite://, postgresql:// or postgres:// "
            f"(the supported databases), got {scheme + '://'!r}."
        )
    if base == "sqlite":
        return url
    if "+" in scheme and scheme.split("+", 1)[1] != "psycopg":
        raise ParameterError(
            "`database_url` must use the psycopg driver for PostgreSQL (postgresql:// or "
            f"postgresql+psycopg://), got {scheme + '://'!r}."
        )
    return f"postgresql+psycopg://{rest}"


def is_sqlite(bind: Engine | Connection) -> bool:
    """Whether ``bind`` talks to SQLite."""
    return bind.dialect.name == "sqlite"


def is_postgres(bind: Engine | Connection) -> bool:
    """Whether ``bind`` talks to PostgreSQL."""
    return bind.dialect.name == "postgresql"


#: SQLite's ``synchronous`` levels a URL may ask for (``?synchronous=full``).
SYNCHRONOUS = ("NORMAL", "FULL", "EXTRA")


#: What :func:`make_engine` made each SQLite engine of: the URL (without ``synchronous``),
#: the ``synchronous`` level and the keyword arguments (for :func:`nowait_engine`).
_SQLITE_ENGINES: weakref.WeakKeyDictionary[Engine, tuple[str, str, dict[str, Any]]] = (
    weakref.WeakKeyDictionary()
)
_NOWAIT: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()
_NOWAIT_LOCK = threading.Lock()


def _sqlite_setup(
    engine: Engine, synchronous: str, busy_timeout_ms: int, autocheckpoint: bool
) -> None:
    # Connection set-up and transaction control, which SQLAlchemy Core has no statements
    # for: the pragmas on the driver's connection, and BEGIN as SQLAlchemy's documentation
    # does it for pysqlite (the only SQL of the service not written as Core; the values
    # are constants or checked against SYNCHRONOUS and the two modes)
    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        # let SQLAlchemy's "begin" event below emit BEGIN: pysqlite's own implicit
        # transactions would begin DEFERRED, too late for the write lock
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        try:
            cur.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            cur.execute("PRAGMA journal_mode = WAL")
            cur.execute(f"PRAGMA synchronous = {synchronous}")
            cur.execute("PRAGMA foreign_keys = ON")
            if not autocheckpoint:  # its commits never copy the log back: checkpoint()
                cur.execute("PRAGMA wal_autocheckpoint = 0")
        finally:
            cur.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
        conn.exec_driver_sql("BEGIN IMMEDIATE" if mode == "IMMEDIATE" else "BEGIN DEFERRED")


def create_private_file(path: Path) -> None:
    """Create ``path`` empty with mode ``0600`` (and its directory ``0700``) if it does not
    exist; an existing file is left as it is."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def make_engine(
    url: str, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS, autocheckpoint: bool = True, **kwargs: Any
) -> Engine:
    """An engine for ``url`` (see the module docstring); a new SQLite file is created
    ``0600`` (owner only; its ``-wal`` and ``-shm`` files follow its mode), in a directory
    created ``0700``.  ``busy_timeout_ms``: how long a SQLite connection waits for another
    writer's lock; ``autocheckpoint=False``: a SQLite connection's commits never copy the
    write-ahead log back into the database (which waits for the disk), someone else must
    (:func:`checkpoint`).  ``kwargs`` go to :func:`sqlalchemy.create_engine`."""
    full = database_url(url)
    if full.startswith("sqlite"):
        parsed = sa.engine.make_url(full)
        sync = str(parsed.query.get("synchronous", "NORMAL")).upper()
        if sync not in SYNCHRONOUS:
            raise ParameterError(
                f"`synchronous` in a SQLite URL must be one of {', '.join(SYNCHRONOUS)} (any "
                f"case), got {parsed.query['synchronous']!r}."
            )
        full = parsed.difference_update_query(["synchronous"]).render_as_string(hide_password=False)
        path = parsed.database
        if path and path != ":memory:" and not path.startswith("file:"):
            # 0600 before SQLite opens it: its -wal and -shm files take the file's mode
            create_private_file(Path(path))
        lite = {"check_same_thread": False, "timeout": busy_timeout_ms / 1000}
        engine = sa.create_engine(full, connect_args=lite, **kwargs)
        _sqlite_setup(engine, sync, busy_timeout_ms, autocheckpoint)
        _SQLITE_ENGINES[engine] = (full, sync, dict(kwargs))
        return engine
    # a ping before each use (a round trip per transaction) keeps reads working after a
    # server restart; a write whose connection is lost before its commit also runs again
    # once on a fresh one (_sql.retrying).  Pass pool_pre_ping=False to trade the first
    # read after a restart for that round trip.
    kwargs.setdefault("pool_pre_ping", True)
    # no server-side prepared statements: a generic plan made while a table was small (a new
    # survey) would go on treating it as small once it is large; plan every execution
    args: dict[str, Any] = dict(kwargs.pop("connect_args", {}))
    args.setdefault("prepare_threshold", None)
    return sa.create_engine(full, connect_args=args, **kwargs)


def nowait_engine(engine: Engine) -> Engine | None:
    """A second engine on the same SQLite database as ``engine`` whose connections never
    wait for the write lock (``busy_timeout`` 0: ``BEGIN IMMEDIATE`` fails at once with
    ``SQLITE_BUSY`` while another connection writes) nor for the disk (no automatic
    checkpoint at a commit: the caller runs :func:`checkpoint` elsewhere), for writing from
    a thread that must not block (the event loop: :mod:`deniable.service.core.batching`);
    made once per engine.

    None unless ``engine`` is a SQLite database in a file made by :func:`make_engine` with
    ``synchronous=NORMAL`` (the default): its commits write to the write-ahead log without
    waiting for the disk, while ``FULL`` or ``EXTRA`` wait for an fsync at every commit, and
    a PostgreSQL commit for the server.
    """
    twin = _NOWAIT.get(engine)
    if twin is not None:
        return twin
    made = _SQLITE_ENGINES.get(engine)
    if made is None:
        return None
    full, sync, kwargs = made
    path = sa.engine.make_url(full).database
    if sync != "NORMAL" or not path or path == ":memory:" or path.startswith("file:"):
        return None
    with _NOWAIT_LOCK:
        twin = _NOWAIT.get(engine)
        if twin is None:
            twin = _NOWAIT[engine] = make_engine(
                full, busy_timeout_ms=0, autocheckpoint=False, **kwargs
            )
        return twin


def checkpoint(engine: Engine) -> None:
    """Copy what a SQLite database's write-ahead log holds back into the database, as far
    as no reader needs it (``PRAGMA wal_checkpoint(PASSIVE)``: it waits for no one, and
    writers go on meanwhile); nothing on another database."""
    if not is_sqlite(engine):
        return
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")


def dispose(engine: Engine) -> None:
    """Close the pooled connections of ``engine`` and of its :func:`nowait_engine`."""
    with _NOWAIT_LOCK:
        twin = _NOWAIT.pop(engine, None)
    if twin is not None:
        twin.dispose()
    engine.dispose()


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's ``SQLITE_BUSY`` (another connection holds the lock)."""
    orig = getattr(exc, "orig", exc)
    code = getattr(orig, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF == 5  # SQLITE_BUSY and its extended codes


@contextmanager
def write_tx(engine: Engine) -> Iterator[Connection]:
    """A transaction that will write: ``BEGIN IMMEDIATE`` on SQLite (the write lock from the
    start), a plain ``BEGIN`` on PostgreSQL (whose writers lock rows).  Commits on success,
    rolls back on any error."""
    with engine.connect() as conn:
        if is_sqlite(conn):
            conn = conn.execution_options(sqlite_begin="IMMEDIATE")
        with conn.begin():
            yield conn


@contextmanager
def read_tx(engine: Engine) -> Iterator[Connection]:
    """A read-only transaction: one consistent snapshot on both backends (SQLite's
    deferred transaction; PostgreSQL ``REPEATABLE READ``)."""
    with engine.connect() as conn:
        if is_postgres(conn):
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            yield conn


_MIGRATE_LOCK = threading.Lock()
#: PostgreSQL's advisory lock of migrations (a fixed id).
_MIGRATION_LOCK = 7340158


def migrate(engine: Engine) -> None:
    """Bring the database to the newest schema (``alembic upgrade head``); a database that
    is already there is left alone.  Concurrent migrations of one database (several workers
    starting at once) are serialized: by an advisory lock on PostgreSQL, by taking the write
    lock first on SQLite."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    # the env script reads the connection from here, never from an ini file or the environment
    with _MIGRATE_LOCK, engine.connect() as conn:
        if is_sqlite(conn):  # the write lock first: a second process waits, then finds head
            conn = conn.execution_options(sqlite_begin="IMMEDIATE")
        if is_postgres(conn):
            conn.execute(sa.select(sa.func.pg_advisory_lock(_MIGRATION_LOCK)))
            conn.commit()
        try:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
            conn.commit()
        finally:
            if is_postgres(conn):
                conn.execute(sa.select(sa.func.pg_advisory_unlock(_MIGRATION_LOCK)))
                conn.commit()


def default_sqlite_url(data_dir: str | os.PathLike[str]) -> str:
    """``sqlite:///<data_dir>/deniable.db`` with an absolute path."""
    return f"sqlite:///{Path(data_dir).resolve() / 'deniable.db'}"
