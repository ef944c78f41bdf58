"""Telemetry streams on SQL: :class:`SqlStreamStore` keeps each stream's spec and its
devices' token hashes (tables ``stream_spec`` and ``stream_device``: migration 0007).

What it never holds: a report.  A stream's reports go to its Parquet partitions only
(:func:`deniable.distributed.append_reports`), and its devices' budgets to the window store
(:class:`~deniable.service.storage.SqlWindowStore`).  A spec is stored once and never
changed (:meth:`SqlStreamStore.put_spec` inserts if absent and returns what is stored,
atomically); a device's token is kept as its SHA-256 only
(:func:`~deniable.service.storage.hash_token`).
"""

from __future__ import annotations

import secrets
import time

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from deniable.service.storage._sql import EngineStore, dialect_insert, retrying
from deniable.service.storage.db import read_tx
from deniable.service.storage.tables import stream_device, stream_spec

__all__ = ["SqlStreamStore"]

_s, _d = stream_spec.c, stream_device.c


class SqlStreamStore(EngineStore):
    """Stream specs and device tokens in a SQL database (SQLite or PostgreSQL) whose schema
    :func:`~deniable.service.storage.db.migrate` created.  ``bind`` is a URL or an
    engine."""

    def put_spec(self, stream: str, spec: str) -> tuple[bool, str]:
        """Store ``spec`` (canonical JSON text) for ``stream`` unless one is stored; return
        ``(created, stored)``: whether this call stored it, and the stored text (another
        spec when the stream was stored with one: the caller refuses the change)."""

        def work(conn: Connection) -> tuple[bool, str]:
            done = conn.execute(
                dialect_insert(conn, stream_spec)
                .values(id=stream, spec=spec, created_at=time.time())
                .on_conflict_do_nothing()
                .returning(_s.id)
            ).first()
            stored = conn.execute(sa.select(_s.spec).where(_s.id == stream)).scalar_one()
            return done is not None, str(stored)

        result: tuple[bool, str] = retrying(self._engine, work)
        return result

    def spec(self, stream: str) -> str | None:
        """The stored spec of ``stream``, or None."""
        with read_tx(self._engine) as conn:
            got = conn.execute(sa.select(_s.spec).where(_s.id == stream)).scalar_one_or_none()
        return None if got is None else str(got)

    def streams(self) -> list[str]:
        """The ids of the stored streams, sorted."""
        with read_tx(self._engine) as conn:
            return [str(x) for x in conn.execute(sa.select(_s.id).order_by(_s.id)).scalars()]

    def add_devices(self, stream: str, token_hashes: list[str]) -> list[str]:
        """Register one device of ``stream`` per token hash; return their new device ids
        (random, ``d-`` and 16 hex digits), in order."""
        devices = [f"d-{secrets.token_hex(8)}" for _ in token_hashes]
        now = time.time()
        rows = [
            {"token_hash": h, "stream": stream, "device": d, "created_at": now}
            for h, d in zip(token_hashes, devices, strict=True)
        ]

        def work(conn: Connection) -> None:
            if rows:
                conn.execute(stream_device.insert(), rows)

        retrying(self._engine, work)
        return devices

    def device(self, stream: str, token_hash: str) -> str | None:
        """The device of ``stream`` whose token has the SHA-256 ``token_hash``, or None (an
        unknown token, or another stream's)."""
        stmt = sa.select(_d.device).where(_d.token_hash == token_hash, _d.stream == stream)
        with read_tx(self._engine) as conn:
            got = conn.execute(stmt).scalar_one_or_none()
        return None if got is None else str(got)

    def devices(self, stream: str) -> int:
        """How many devices ``stream`` has."""
        stmt = sa.select(sa.func.count()).select_from(stream_device)
        with read_tx(self._engine) as conn:
            return int(conn.execute(stmt.where(_d.stream == stream)).scalar_one())
