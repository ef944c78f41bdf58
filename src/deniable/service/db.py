"""Moved: engines and migrations are :mod:`deniable.service.storage.db` (issue 15).  This
module re-exports its public names so that ``from deniable.service.db import make_engine``
keeps working (docs/changes.md)."""

from __future__ import annotations

from deniable.service.storage.db import (
    BUSY_TIMEOUT_MS,
    SYNCHRONOUS,
    create_private_file,
    database_url,
    is_postgres,
    is_sqlite,
    make_engine,
    migrate,
    read_tx,
    write_tx,
)

__all__ = [
    "BUSY_TIMEOUT_MS",
    "SYNCHRONOUS",
    "create_private_file",
    "database_url",
    "is_postgres",
    "is_sqlite",
    "make_engine",
    "migrate",
    "read_tx",
    "write_tx",
]
