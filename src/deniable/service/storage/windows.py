"""Budgets per period on SQL: :class:`SqlWindowStore`, the library's
:class:`~deniable.accounting.WindowStore` on SQLite and PostgreSQL (tables ``window_spec``,
``window_device``, ``window_charge``: migration 0006).

How :meth:`SqlWindowStore.charge` is one atomic check-and-charge (one transaction, through
:func:`~deniable.service.storage._sql.retrying`):

1. **the device's row** is inserted if missing and locked (``SELECT ... FOR UPDATE`` on
   PostgreSQL; SQLite has one writer at a time: the transaction begins ``BEGIN
   IMMEDIATE``), so two charges of one device run one after the other;
2. every recorded spec and the device's charges near the charge's time (within the
   longest spec's :attr:`~deniable.accounting.BudgetWindow.reach`: no other charge can
   share a window with it) are read *after* the lock (PostgreSQL's ``READ COMMITTED``
   gives each statement the newest committed data: a spec or a charge committed by the
   charge that held the lock before is seen);
3. the decision is :func:`~deniable.accounting.decide_charge` (pure Python: a retry
   decides again on what it reads);
4. admitted: the ledger's spec is recorded if new (``ON CONFLICT DO NOTHING``) and the
   charge inserted; refused: the transaction rolls back, leaving nothing (not the device's
   row, not the spec).

Charges of different devices never wait for each other except on a new spec's row.
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from deniable.accounting import BudgetWindow, Charge, WindowRequest
from deniable.service.storage._sql import (
    EngineStore,
    Rollback,
    dialect_insert,
    encode_key,
    retrying,
)
from deniable.service.storage.db import is_postgres, read_tx
from deniable.service.storage.tables import window_charge, window_device, window_spec

__all__ = ["SqlWindowStore"]

_c, _d, _s = window_charge.c, window_device.c, window_spec.c


def _specs(conn: Connection) -> list[BudgetWindow]:
    rows = conn.execute(sa.select(_s.spec).order_by(_s.id)).scalars()
    return [BudgetWindow.from_key(k) for k in rows]


def _charges(conn: Connection, key: str, near: tuple[float, float] | None = None) -> list[Charge]:
    """The charges of ``key``, oldest first; with ``near = (t, reach)`` only those less than
    ``reach`` (plus a second of slack) from ``t``: the only ones that can share a window
    with a charge at ``t``."""
    stmt = sa.select(_c.at, _c.epsilon, _c.delta).where(_c.key == key)
    if near is not None:
        t, reach = near
        stmt = stmt.where(_c.at >= t - reach - 1.0, _c.at <= t + reach + 1.0)
    rows = conn.execute(stmt.order_by(_c.at, _c.id))
    return [Charge(float(at), float(eps), float(dlt)) for at, eps, dlt in rows]


class SqlWindowStore(EngineStore):
    """A :class:`~deniable.accounting.WindowStore` in a SQL database (SQLite or PostgreSQL)
    whose schema :func:`~deniable.service.storage.db.migrate` created; safe under threads
    and processes (module docstring).  ``bind`` is a database URL or an engine."""

    def charge(self, device: int | str, request: WindowRequest) -> str | None:
        key = encode_key(device)

        def work(conn: Connection) -> None:
            conn.execute(
                dialect_insert(conn, window_device).values(key=key).on_conflict_do_nothing()
            )
            if is_postgres(conn):
                conn.execute(sa.select(_d.key).where(_d.key == key).with_for_update())
            specs = _specs(conn)
            reach = max(w.reach for w in [*specs, request.window])
            refused = request.decide(specs, _charges(conn, key, (request.charge.at, reach)))
            if refused is not None:
                raise Rollback(refused)
            if request.window not in specs:
                conn.execute(
                    dialect_insert(conn, window_spec)
                    .values(spec=request.window.key, recorded_at=time.time())
                    .on_conflict_do_nothing()
                )
            c = request.charge
            conn.execute(
                window_charge.insert().values(key=key, at=c.at, epsilon=c.epsilon, delta=c.delta)
            )

        refused: str | None = retrying(self._engine, work)
        return refused

    def charges(self, device: int | str) -> list[Charge]:
        with read_tx(self._engine) as conn:
            return _charges(conn, encode_key(device))

    def windows(self) -> list[BudgetWindow]:
        with read_tx(self._engine) as conn:
            return _specs(conn)
