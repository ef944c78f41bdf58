"""The steps of a ledger spend on SQL, each inside a write transaction the caller opened
(:func:`~deniable.service.storage._sql.retrying`): the unit of the totals, the question records, the
respondent rows locked in key order, who was charged, and the writes.
:class:`~deniable.service.storage.ledger.SqlLedgerStore` runs them as one check-and-spend
(:func:`spend_in`), and :class:`~deniable.service.storage.store.ServiceStore` in the transaction
that stores the reports (the recipe is the docstring of ``deniable.service.storage.ledger``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.engine import Connection

from deniable.accounting import History, QuestionRecord, SpendPlan, SpendRequest
from deniable.accounting._keys import Keys
from deniable.accounting._pricing import UNKNOWN_UNIT, check_unit
from deniable.service.storage._sql import encode_keys, in_list, listed, many, q
from deniable.service.storage.db import is_postgres

__all__ = [
    "charged_keys",
    "claim_unit",
    "ledger_history",
    "lock_respondents",
    "question_records",
    "require_unit",
    "service_charges",
    "spend_in",
    "stored_unit",
    "write_charged",
    "write_records",
    "write_spent",
]

Floats = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


def question_records(
    conn: Connection, names: Sequence[str], *, lock: bool
) -> dict[str, QuestionRecord | None]:
    """The records of ``names`` (``None``: never charged).  With ``lock`` on PostgreSQL,
    each question's row is inserted if missing and locked ``FOR UPDATE`` (in name order)."""
    rows: list[Any]
    if lock and is_postgres(conn):
        q(
            conn,
            "INSERT INTO ledger_question (name, epsilon, memoized, charges) "
            "SELECT n, NULL, false, 0 FROM unnest(?::text[]) AS t(n) "
            'ORDER BY n COLLATE "C" ON CONFLICT DO NOTHING',
            [list(names)],
        )
        rows = q(
            conn,
            "SELECT name, epsilon, memoized, charges FROM ledger_question "
            f'WHERE name {in_list(conn)} ORDER BY name COLLATE "C" FOR UPDATE',
            [listed(conn, names)],
        ).all()
    else:
        rows = q(
            conn,
            f"SELECT name, epsilon, memoized, charges FROM ledger_question WHERE name "
            f"{in_list(conn)}",
            [listed(conn, names)],
        ).all()
    out: dict[str, QuestionRecord | None] = dict.fromkeys(names)
    for name, eps, memoized, charges in rows:
        if eps is not None:
            out[name] = QuestionRecord(name, float(eps), bool(memoized), int(charges))
    return out


def lock_respondents(conn: Connection, enc: Sequence[str]) -> tuple[Floats, set[str]]:
    """The totals of ``enc`` (0 for a new key) and the set of new keys.

    On PostgreSQL the missing rows are inserted (``spent`` 0, ``first`` from the sequence
    and the key's position in ``enc``) and every row is locked ``FOR UPDATE``, both in key
    order; on SQLite (the write lock already held) nothing is inserted."""
    spent_of: dict[str, float]
    if is_postgres(conn):
        new = set(
            q(
                conn,
                "INSERT INTO ledger_respondent (key, spent, first) "
                "SELECT k, 0, (SELECT nextval('ledger_spend_seq')) * 4294967296 + n - 1 "
                "FROM unnest(?::text[]) WITH ORDINALITY AS t(k, n) "
                'ORDER BY k COLLATE "C" ON CONFLICT DO NOTHING RETURNING key',
                [list(enc)],
            ).scalars()
        )
        spent_of = dict(
            q(
                conn,
                f"SELECT key, spent FROM ledger_respondent WHERE key {in_list(conn)} "
                'ORDER BY key COLLATE "C" FOR UPDATE',
                [listed(conn, enc)],
            ).all()
        )
    else:
        spent_of = dict(
            q(
                conn,
                f"SELECT key, spent FROM ledger_respondent WHERE key {in_list(conn)}",
                [listed(conn, enc)],
            ).all()
        )
        new = {k for k in enc if k not in spent_of}
    spent = np.fromiter((spent_of.get(k, 0.0) for k in enc), dtype=np.float64, count=len(enc))
    return spent, new


def stored_unit(conn: Connection) -> str | None:
    """The unit of the store's totals (``ledger_meta``'s ``unit``): ``None`` while nothing
    is spent, ``UNKNOWN_UNIT`` for totals spent before units were recorded."""
    # one statement, one snapshot: a spend committing in between (its unit and its totals
    # together) is seen whole or not at all
    unit, legacy = q(
        conn,
        "SELECT (SELECT value FROM ledger_meta WHERE name = 'unit'), "
        "EXISTS (SELECT 1 FROM ledger_respondent)",
    ).one()
    if unit is not None:
        return str(unit)
    return UNKNOWN_UNIT if legacy else None


def claim_unit(conn: Connection, unit: str) -> str:
    """The unit of the store's totals, recorded as ``unit`` if the store has none (inside
    the spend's write transaction, before any other lock: rolled back with a refused
    spend; a concurrent first spend of another unit waits for this one and then reads
    its unit)."""
    stored = stored_unit(conn)
    if stored is not None:
        return stored
    q(
        conn,
        "INSERT INTO ledger_meta (name, value) VALUES ('unit', ?) ON CONFLICT DO NOTHING",
        [unit],
    )
    return str(q(conn, "SELECT value FROM ledger_meta WHERE name = 'unit'").scalar_one())


def require_unit(conn: Connection, unit: str) -> None:
    """:func:`claim_unit`, refused (:class:`~deniable.exceptions.PrivacyError` naming both
    units) if the store's totals are in another unit."""
    check_unit(claim_unit(conn, unit), unit)


def charged_keys(conn: Connection, question: str, enc: Sequence[str]) -> set[str]:
    """The keys of ``enc`` charged for ``question`` before: the ``ledger_charged`` rows,
    and for a survey question (``"<survey>/<question>"``) its respondents' stored reports
    (the service records a charge as the report itself, see :func:`service_charges`)."""
    found = set(
        q(
            conn,
            f"SELECT key FROM ledger_charged WHERE question = ? AND key {in_list(conn)}",
            [question, listed(conn, enc)],
        ).scalars()
    )
    sid, slash, qid = question.partition("/")
    if slash:
        prefix = f"s{sid}:"
        ids = {
            int(k[len(prefix) :]): k
            for k in enc
            if k.startswith(prefix) and k[len(prefix) :].isascii() and k[len(prefix) :].isdigit()
        }
        if ids:
            found.update(
                ids[int(i)]
                for i in q(
                    conn,
                    "SELECT respondent_id FROM reports WHERE survey_id = ? AND question_id = ? "
                    f"AND respondent_id {in_list(conn, 'bigint')}",
                    [sid, qid, listed(conn, ids)],
                ).scalars()
            )
    return found


def service_charges(conn: Connection) -> list[tuple[str, str]]:
    """Every ``(question, key)`` the survey service charged: one per stored report (the
    service keeps no ``ledger_charged`` row for them: the report is the record)."""
    rows = q(conn, "SELECT survey_id, question_id, respondent_id FROM reports").all()
    return [(f"{s}/{qid}", f"s{s}:{r}") for s, qid, r in rows]


def write_spent(
    conn: Connection, enc: Sequence[str], paid: Mask, totals: Floats, new: set[str]
) -> None:
    """Write the new totals of the keys ``enc[paid]`` (``totals``, one per paid key, in
    order); drop the rows of new keys that were not charged (PostgreSQL's lock rows)."""
    keys = [k for k, p in zip(enc, paid.tolist(), strict=True) if p]
    vals = totals.tolist()
    pg_ = is_postgres(conn)
    update = [(s, k) for s, k in zip(vals, keys, strict=True) if pg_ or k not in new]
    if pg_ and update:  # one statement (the rows are locked already)
        q(
            conn,
            "UPDATE ledger_respondent AS l SET spent = u.s "
            "FROM unnest(?::float8[], ?::text[]) AS u(s, k) WHERE l.key = u.k",
            [[s for s, _ in update], [k for _, k in update]],
        )
    else:
        many(conn, "UPDATE ledger_respondent SET spent = ? WHERE key = ?", update)
    if pg_:
        unpaid = new.difference(keys)
        if unpaid:
            q(
                conn,
                f"DELETE FROM ledger_respondent WHERE key {in_list(conn)}",
                [listed(conn, unpaid)],
            )
        return
    fresh = [(k, s) for s, k in zip(vals, keys, strict=True) if k in new]
    if fresh:
        top = q(conn, "SELECT max(first) FROM ledger_respondent").scalar()
        base = 0 if top is None else int(top) + 1
        pos = {k: i for i, k in enumerate(enc)}
        many(
            conn,
            "INSERT INTO ledger_respondent (key, spent, first) VALUES (?, ?, ?)",
            [(k, s, base + pos[k]) for k, s in fresh],
        )


def write_charged(conn: Connection, pairs: Sequence[tuple[str, str]]) -> None:
    """Mark ``(question, key)`` pairs charged."""
    many(
        conn,
        "INSERT INTO ledger_charged (question, key) VALUES (?, ?) ON CONFLICT DO NOTHING",
        pairs,
    )


def write_records(conn: Connection, records: Sequence[QuestionRecord], *, add: bool) -> None:
    """Write question records: their charges as given, or (``add``) added to the stored
    ones (a writer that did not lock the question's row), in name order."""
    charges = "ledger_question.charges + excluded.charges" if add else "excluded.charges"
    many(
        conn,
        "INSERT INTO ledger_question (name, epsilon, memoized, charges) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (name) DO UPDATE SET epsilon = excluded.epsilon, "
        f"memoized = excluded.memoized, charges = {charges}",
        [
            (r.question, r.epsilon, r.memoized, r.charges)
            for r in sorted(records, key=lambda r: r.question)
        ],
    )


def ledger_history(
    conn: Connection, enc: Sequence[str], question: str | None, record: QuestionRecord | None
) -> History:
    """The totals and charged flags of ``enc`` for ``question`` (read in ``conn``)."""
    spent_of = dict(
        q(
            conn,
            f"SELECT key, spent FROM ledger_respondent WHERE key {in_list(conn)}",
            [listed(conn, enc)],
        ).all()
    )
    charged_set = set() if question is None else charged_keys(conn, question, enc)
    spent = np.fromiter((spent_of.get(k, 0.0) for k in enc), dtype=np.float64, count=len(enc))
    charged = np.fromiter((k in charged_set for k in enc), dtype=np.bool_, count=len(enc))
    return History(spent, charged, record, stored_unit(conn))


def spend_in(conn: Connection, keys: Keys, request: SpendRequest) -> SpendPlan:
    """One check-and-spend inside ``conn``'s write transaction (the caller commits; on a
    refused plan the caller must roll back, which drops the rows inserted to be locked)."""
    enc = encode_keys(keys)
    name = request.question
    unit = claim_unit(conn, request.composition.unit)
    record = question_records(conn, [name], lock=True)[name]
    spent, new = lock_respondents(conn, enc)
    charged_set = charged_keys(conn, name, enc)
    charged = np.fromiter((k in charged_set for k in enc), dtype=np.bool_, count=len(enc))
    plan = request.plan(History(spent, charged, record, unit))
    if not plan.refused:
        write_spent(conn, enc, plan.write, plan.new_spent, new)
        write_charged(conn, [(name, k) for k, w in zip(enc, plan.write.tolist(), strict=True) if w])
        assert plan.record is not None
        write_records(conn, [plan.record], add=False)
    return plan
