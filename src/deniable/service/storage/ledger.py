"""The ledger store on SQL: :class:`SqlLedgerStore`, the library's
:class:`~deniable.accounting.LedgerStore` on SQLite and PostgreSQL (its sibling, the memo
store, is :mod:`deniable.service.storage.memo`), over the shared plumbing of
:mod:`deniable.service.storage._sql` (keys as text, list parameters, retried
transactions) and the steps of :mod:`deniable.service.storage.ledger_steps`.

How :meth:`SqlLedgerStore.spend` is one atomic check-and-spend (the recipe of the
protocol's docstring):

* **SQLite** has one writer at a time: the transaction begins ``BEGIN IMMEDIATE`` (the write
  lock first), then reads, plans and writes.
* **PostgreSQL**: in one transaction, the question's row is inserted if missing (``ON
  CONFLICT DO NOTHING``) and locked (``SELECT ... FOR UPDATE``); the missing respondent rows
  are inserted in key order and every respondent row is locked in key order (a fixed order:
  two spends never wait for each other in a cycle); then read, plan (pure Python), write.
  A row inserted only to be locked disappears with the transaction when the spend is
  refused, and is deleted when a partial spend does not charge it, so the protocol never
  shows a respondent who was never charged.  A deadlock or serialization failure (which
  the fixed order should prevent) rolls back and retries the whole transaction: the plan is
  a pure function of what was read.

**The unit of the totals** (``epsilon`` or ``rho``) is the row ``unit`` of ``ledger_meta``,
written by the first spend (:func:`~deniable.service.storage.ledger_steps.claim_unit`, the
first statement of the transaction, so a refused spend leaves none) and read with the
totals in one statement; a spend of another unit is refused, as is one over totals
written before units were recorded (migration 0002: :meth:`SqlLedgerStore.adopt_unit`
states their unit).

The steps take a ``conn`` and run inside a transaction the caller opened with
:func:`~deniable.service.storage._sql.retrying`, so that the service's report insert and
the budget spend commit together (:class:`~deniable.service.storage.ServiceStore`).
"""

from __future__ import annotations

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from deniable.accounting import (
    History,
    InMemoryLedgerStore,
    KeyIndex,
    Keys,
    QuestionRecord,
    SpendPlan,
    SpendRequest,
    SpentSummary,
    adopted_unit,
)
from deniable.service.storage._sql import (
    EngineStore,
    Mask,
    Rollback,
    decoded,
    dialect_insert,
    encode_keys,
    retrying,
)
from deniable.service.storage.db import read_tx
from deniable.service.storage.ledger_steps import (
    ledger_history,
    service_charges,
    spend_in,
    stored_unit,
)
from deniable.service.storage.tables import (
    ledger_charged,
    ledger_meta,
    ledger_question,
    ledger_respondent,
)

__all__ = ["SqlLedgerStore"]


# --------------------------------------------------------------------------- stores


class SqlLedgerStore(EngineStore):
    """A :class:`~deniable.accounting.LedgerStore` in a SQL database (SQLite or
    PostgreSQL) whose schema :func:`~deniable.service.storage.db.migrate` created; safe under
    threads and processes (see the module docstring).

    ``bind`` is a database URL or an engine (shared with the service).  :meth:`snapshot`
    returns an :class:`~deniable.accounting.InMemoryLedgerStore`.
    """

    def spend(self, keys: Keys, request: SpendRequest) -> SpendPlan:
        def work(conn: Connection) -> SpendPlan:
            plan = spend_in(conn, keys, request)
            if plan.refused:
                raise Rollback(plan)
            return plan

        return retrying(self._engine, work)

    def history(self, keys: Keys, question: str | None = None) -> History:
        enc = encode_keys(keys)
        with read_tx(self._engine) as conn:
            record = None if question is None else _record(conn, question)
            return ledger_history(conn, enc, question, record)

    def adopt_unit(self, unit: str) -> None:
        """State the unit of totals spent before units were recorded (a database migrated
        from revision 0001 where a ``BudgetLedger`` spent): an explicit statement, to make
        only if they are in ``unit``.  A recorded unit is never changed."""

        def work(conn: Connection) -> None:
            new = adopted_unit(stored_unit(conn), unit)
            insert = dialect_insert(conn, ledger_meta).values(name="unit", value=new)
            conn.execute(
                insert.on_conflict_do_update(
                    index_elements=[ledger_meta.c.name], set_={"value": insert.excluded.value}
                )
            )

        retrying(self._engine, work)

    def questions(self) -> dict[str, QuestionRecord]:
        with read_tx(self._engine) as conn:
            return _records(conn)

    def respondents(self) -> Keys:
        r = ledger_respondent.c
        with read_tx(self._engine) as conn:
            texts = list(conn.execute(sa.select(r.key).order_by(r.first)).scalars())
        return decoded(texts)

    def summary(self, threshold: float) -> SpentSummary:
        s = ledger_respondent.c.spent
        stmt = sa.select(
            sa.func.count(),
            sa.func.sum(s),
            sa.func.min(s),
            sa.func.max(s),
            sa.func.sum(sa.case((s >= float(threshold), 1), else_=0)),
        )
        with read_tx(self._engine) as conn:
            n, total, lo, hi, hit = conn.execute(stmt).one()
        if not n:
            return SpentSummary(0, 0.0, 0.0, 0.0, 0)
        return SpentSummary(int(n), float(total), float(lo), float(hi), int(hit or 0))

    def snapshot(self) -> InMemoryLedgerStore:
        r, c = ledger_respondent.c, ledger_charged.c
        with read_tx(self._engine) as conn:
            rows = conn.execute(sa.select(r.key, r.spent).order_by(r.first)).all()
            charged = [(a, b) for a, b in conn.execute(sa.select(c.question, c.key))]
            charged += service_charges(conn)
            records = _records(conn)
            unit = stored_unit(conn)
        index = KeyIndex()
        keys = decoded([k for k, _ in rows])
        pos = {k: i for i, (k, _) in enumerate(rows)}
        if keys.size:
            index.add(keys, np.full(keys.size, -1, dtype=np.int64))
        flags: dict[str, Mask] = {q: np.zeros(len(rows), dtype=np.bool_) for q in records}
        for name, k in charged:
            if k in pos:
                flags.setdefault(name, np.zeros(len(rows), dtype=np.bool_))[pos[k]] = True
        out = InMemoryLedgerStore.__new__(InMemoryLedgerStore)
        out.__setstate__(
            {
                "index": index,
                "spent": np.array([s for _, s in rows], dtype=np.float64),
                "charged": flags,
                "records": records,
                "unit": unit,
            }
        )
        return out


def _record(conn: Connection, question: str) -> QuestionRecord | None:
    q = ledger_question.c
    row = conn.execute(
        sa.select(q.epsilon, q.memoized, q.charges).where(
            q.name == question, q.epsilon.is_not(None)
        )
    ).first()
    if row is None:
        return None
    return QuestionRecord(question, float(row.epsilon), bool(row.memoized), int(row.charges))


def _records(conn: Connection) -> dict[str, QuestionRecord]:
    q = ledger_question.c
    rows = conn.execute(
        sa.select(q.name, q.epsilon, q.memoized, q.charges)
        .where(q.epsilon.is_not(None))
        .order_by(q.name)
    )
    return {
        name: QuestionRecord(name, float(eps), bool(memoized), int(charges))
        for name, eps, memoized, charges in rows
    }
