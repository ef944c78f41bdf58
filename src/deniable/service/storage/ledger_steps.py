"""The steps of a ledger spend on SQL, each inside a write transaction the caller opened
(:func:`~deniable.service.storage._sql.retrying`): the unit of the totals, the question
records, the respondent rows locked in key order, who was charged, and the writes.
:class:`~deniable.service.storage.SqlLedgerStore` runs them as one check-and-spend
(:func:`spend_in`), and :class:`~deniable.service.storage.ServiceStore` in the transaction
that stores the reports (the recipe is the docstring of
:mod:`deniable.service.storage.ledger`).

The statements are SQLAlchemy Core, built once per dialect (:func:`~deniable.service.
storage._sql.per_dialect`).  The locks are those of the recipe: on PostgreSQL the question
rows and the respondent rows are inserted if missing and locked ``FOR UPDATE``, each in
key order (``COLLATE "C"``: byte order, whatever the database's collation); SQLite's
writers hold the database's write lock from ``BEGIN IMMEDIATE`` on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from deniable.accounting import (
    UNKNOWN_UNIT,
    History,
    Keys,
    QuestionRecord,
    SpendPlan,
    SpendRequest,
    check_unit,
)
from deniable.service.storage._sql import (
    Floats,
    Mask,
    array,
    dialect_insert,
    encode_keys,
    json_columns,
    json_listed,
    listed,
    member,
    per_dialect,
)
from deniable.service.storage.db import is_postgres
from deniable.service.storage.tables import (
    ledger_charged,
    ledger_meta,
    ledger_question,
    ledger_respondent,
    ledger_spend_seq,
    reports,
    surveys,
)

__all__ = [
    "UNIT_COLUMNS",
    "charged_keys",
    "claim_unit",
    "ledger_history",
    "ledger_write_ctes",
    "ledger_write_params",
    "lock_respondents",
    "question_records",
    "record_rows",
    "require_unit",
    "service_charges",
    "spend_in",
    "stored_unit",
    "unbounded_questions",
    "unit_of",
    "write_charged",
    "write_records",
    "write_spent",
]

_lq, _lr, _lc, _meta = ledger_question.c, ledger_respondent.c, ledger_charged.c, ledger_meta.c
#: ``first`` of a new respondent row on PostgreSQL: the spend's number times 2**32 plus the
#: key's position in the spend (so that respondents are ranked by their first charge)
_SPEND_STRIDE = 2**32


def _by_key(column: Any, postgres: bool) -> Any:
    """Key order: bytewise on PostgreSQL (``COLLATE "C"``), SQLite's own (binary) there."""
    return sa.collate(column, "C") if postgres else column


# --------------------------------------------------------------------------- statements


@per_dialect
def _records_stmt(postgres: bool) -> sa.Select[Any]:
    """The question rows of the names bound to ``names``."""
    return sa.select(_lq.name, _lq.epsilon, _lq.memoized, _lq.charges).where(
        member(_lq.name, "names", postgres)
    )


@per_dialect
def _lock_records(postgres: bool) -> tuple[Any, Any]:
    """PostgreSQL: insert the missing question rows (in name order), then lock them all."""
    names = sa.func.unnest(array("names", sa.Text)).table_valued("n").render_derived(name="t")
    insert = (
        dialect_insert(postgres, ledger_question)
        .from_select(
            ["name", "epsilon", "memoized", "charges"],
            sa.select(names.c.n, sa.null(), sa.false(), sa.literal(0, sa.BigInteger)).order_by(
                _by_key(names.c.n, postgres)
            ),
        )
        .on_conflict_do_nothing()
    )
    lock = (
        sa.select(_lq.name, _lq.epsilon, _lq.memoized, _lq.charges)
        .where(member(_lq.name, "names", postgres))
        .order_by(_by_key(_lq.name, postgres))
        .with_for_update()
    )
    return insert, lock


@per_dialect
def _spent_stmt(postgres: bool) -> sa.Select[Any]:
    """The totals of the keys bound to ``keys``."""
    return sa.select(_lr.key, _lr.spent).where(member(_lr.key, "keys", postgres))


@per_dialect
def _lock_respondent_rows(postgres: bool) -> tuple[Any, Any]:
    """PostgreSQL: insert the missing respondent rows in key order (``first`` from the
    spend sequence, read once per statement, and the key's position), returning the keys
    inserted; then lock every row of the keys in key order."""
    keys = (
        sa.func.unnest(array("keys", sa.Text))
        .table_valued("k", with_ordinality="n")
        .render_derived(name="t")
    )
    spend = sa.select(ledger_spend_seq.next_value()).scalar_subquery()
    first = spend * sa.literal(_SPEND_STRIDE, sa.BigInteger) + keys.c.n - 1
    insert = (
        dialect_insert(postgres, ledger_respondent)
        .from_select(
            ["key", "spent", "first"],
            sa.select(keys.c.k, sa.literal(0.0, sa.Float(53)), first).order_by(
                _by_key(keys.c.k, postgres)
            ),
        )
        .on_conflict_do_nothing()
        .returning(_lr.key)
    )
    lock = (
        sa.select(_lr.key, _lr.spent)
        .where(member(_lr.key, "keys", postgres))
        .order_by(_by_key(_lr.key, postgres))
        .with_for_update()
    )
    return insert, lock


#: The columns that say the unit of the totals (:func:`unit_of`): the recorded unit, and
#: whether any total exists; to read in one statement, alone or beside other columns.
UNIT_COLUMNS = (
    sa.select(_meta.value).where(_meta.name == "unit").scalar_subquery(),
    sa.exists().select_from(ledger_respondent),
)
_UNIT = sa.select(*UNIT_COLUMNS)
#: ``stored`` of :func:`claim_unit` when the caller has not read the unit.
UNREAD = object()
_UNIT_VALUE = sa.select(_meta.value).where(_meta.name == "unit")
_MAX_FIRST = sa.select(sa.func.max(_lr.first))
_SERVICE_CHARGES = sa.select(reports.c.survey_id, reports.c.question_id, reports.c.respondent_id)


@per_dialect
def _claim_unit_stmt(postgres: bool) -> Any:
    return (
        dialect_insert(postgres, ledger_meta)
        .values(name="unit", value=sa.bindparam("unit", type_=sa.Text))
        .on_conflict_do_nothing()
    )


@per_dialect
def _charged_stmts(postgres: bool) -> tuple[Any, Any]:
    """The ``ledger_charged`` keys of a question, and the respondents of a survey question
    among ids (the service's charges: its reports)."""
    charged = sa.select(_lc.key).where(
        _lc.question == sa.bindparam("question"), member(_lc.key, "keys", postgres)
    )
    r = reports.c
    answered = sa.select(r.respondent_id).where(
        r.survey_id == sa.bindparam("sid"),
        r.question_id == sa.bindparam("qid"),
        member(r.respondent_id, "ids", postgres, sa.BigInteger),
    )
    return charged, answered


@per_dialect
def _write_spent_stmts(postgres: bool) -> tuple[Any, Any]:
    """The new totals (PostgreSQL: of the rows locked already, one statement of two arrays;
    SQLite: an upsert per row, ``first`` for a new row), and the deletion of rows inserted
    only to be locked."""
    if postgres:
        new = (
            sa.func.unnest(array("s", sa.Float(53)), array("k", sa.Text))
            .table_valued("s", "k")
            .render_derived(name="u")
        )
        write = sa.update(ledger_respondent).values(spent=new.c.s).where(_lr.key == new.c.k)
    else:
        insert = dialect_insert(postgres, ledger_respondent)
        write = insert.on_conflict_do_update(
            index_elements=[_lr.key], set_={"spent": insert.excluded.spent}
        )
    drop = sa.delete(ledger_respondent).where(member(_lr.key, "keys", postgres))
    return write, drop


@per_dialect
def _charged_insert(postgres: bool) -> Any:
    return dialect_insert(postgres, ledger_charged).on_conflict_do_nothing()


@per_dialect
def _record_upserts(postgres: bool) -> tuple[Any, Any]:
    """Upserts of question rows: charges as given, and charges added to the stored ones.
    On PostgreSQL one statement for all the rows, from one JSON array of ``[name, epsilon,
    memoized, charges]`` rows (``records``, :func:`record_rows`): an ``executemany`` sends
    a statement per row (a group of single reports touches up to one row per question)."""
    out = []
    for add in (False, True):
        insert = dialect_insert(postgres, ledger_question)
        if postgres:
            _, columns = json_columns("records", [sa.Text, sa.Float(53), sa.Boolean, sa.BigInteger])
            insert = insert.from_select(
                ["name", "epsilon", "memoized", "charges"], sa.select(*columns)
            )
        x = insert.excluded
        out.append(
            insert.on_conflict_do_update(
                index_elements=[_lq.name],
                set_={
                    "epsilon": x.epsilon,
                    "memoized": x.memoized,
                    "charges": _lq.charges + x.charges if add else x.charges,
                },
            )
        )
    return out[0], out[1]


def ledger_write_ctes(conn: Connection) -> tuple[Any, Any, Any]:
    """On PostgreSQL, what :func:`write_spent` and :func:`write_records` (``add=True``)
    write, as three CTEs to attach to another write (``add_cte``: one statement, one round
    trip): the new totals, the lock rows dropped and the question rows' charges added.
    Their parameters: :func:`ledger_write_params` (empty arrays write nothing)."""
    write, drop = _write_spent_stmts(conn)
    upsert = _record_upserts(conn)[1]
    return write.cte("spent_w"), drop.cte("dropped_w"), upsert.cte("records_w")


def ledger_write_params(
    enc: Sequence[str],
    paid: Mask,
    totals: Floats,
    new: set[str],
    records: Sequence[QuestionRecord],
) -> dict[str, Any]:
    """The parameters of :func:`ledger_write_ctes`: those :func:`write_spent` and
    :func:`write_records` would bind on PostgreSQL (records in name order)."""
    keys = [k for k, p in zip(enc, paid.tolist(), strict=True) if p]
    return {
        "s": totals.tolist(),
        "k": keys,
        "keys": sorted(new.difference(keys)),
        "records": record_rows(records),
    }


def record_rows(records: Sequence[QuestionRecord]) -> str:
    """The ``records`` parameter of the PostgreSQL upserts: ``[name, epsilon, memoized,
    charges]`` in name order, each epsilon as the text of its shortest repr (read back
    exactly, and ``inf``, which JSON has no number for)."""
    ordered = sorted(records, key=lambda r: r.question)
    return json_listed(
        [r.question, repr(float(r.epsilon)), bool(r.memoized), int(r.charges)] for r in ordered
    )


# --------------------------------------------------------------------------- steps


def question_records(
    conn: Connection, names: Sequence[str], *, lock: bool
) -> dict[str, QuestionRecord | None]:
    """The records of ``names`` (``None``: never charged).  With ``lock`` on PostgreSQL,
    each question's row is inserted if missing and locked ``FOR UPDATE`` (in name order)."""
    postgres = is_postgres(conn)
    rows: Sequence[Any]
    if lock and postgres:
        insert, select = _lock_records(conn)
        conn.execute(insert, {"names": list(names)})
        rows = conn.execute(select, {"names": listed(postgres, names)}).all()
    else:
        rows = conn.execute(_records_stmt(conn), {"names": listed(postgres, names)}).all()
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
    postgres = is_postgres(conn)
    if postgres:
        insert, lock = _lock_respondent_rows(conn)
        new = set(conn.execute(insert, {"keys": list(enc)}).scalars())
        spent_of = dict(conn.execute(lock, {"keys": list(enc)}).all())
    else:
        found = conn.execute(_spent_stmt(conn), {"keys": listed(postgres, enc)})
        spent_of = dict(found.all())
        new = {k for k in enc if k not in spent_of}
    spent = np.fromiter((spent_of.get(k, 0.0) for k in enc), dtype=np.float64, count=len(enc))
    return spent, new


def stored_unit(conn: Connection) -> str | None:
    """The unit of the store's totals (``ledger_meta``'s ``unit``): ``None`` while nothing
    is spent, ``UNKNOWN_UNIT`` for totals spent before units were recorded."""
    # one statement, one snapshot: a spend committing in between (its unit and its totals
    # together) is seen whole or not at all
    unit, legacy = conn.execute(_UNIT).one()
    return unit_of(unit, legacy)


def unit_of(unit: Any, legacy: Any) -> str | None:
    """The unit of the totals from the values of :data:`UNIT_COLUMNS`."""
    if unit is not None:
        return str(unit)
    return UNKNOWN_UNIT if legacy else None


def claim_unit(conn: Connection, unit: str, stored: Any = UNREAD) -> str:
    """The unit of the store's totals, recorded as ``unit`` if the store has none (inside
    the spend's write transaction, before any other lock: rolled back with a refused
    spend; a concurrent first spend of another unit waits for this one and then reads
    its unit).  ``stored``: the unit as :func:`unit_of` read it in this transaction, if
    the caller read it already."""
    if stored is UNREAD:
        stored = stored_unit(conn)
    if stored is not None:
        return str(stored)
    conn.execute(_claim_unit_stmt(conn), {"unit": unit})
    return str(conn.execute(_UNIT_VALUE).scalar_one())


def require_unit(conn: Connection, unit: str, stored: Any = UNREAD) -> None:
    """:func:`claim_unit`, refused (:class:`~deniable.exceptions.PrivacyError` naming both
    units) if the store's totals are in another unit."""
    check_unit(claim_unit(conn, unit, stored), unit)


def charged_keys(conn: Connection, question: str, enc: Sequence[str]) -> set[str]:
    """The keys of ``enc`` charged for ``question`` before: the ``ledger_charged`` rows,
    and for a survey question (``"<survey>/<question>"``) its respondents' stored reports
    (the service records a charge as the report itself, see :func:`service_charges`)."""
    postgres = is_postgres(conn)
    charged, answered = _charged_stmts(conn)
    found = set(
        conn.execute(charged, {"question": question, "keys": listed(postgres, enc)}).scalars()
    )
    sid, slash, qid = question.partition("/")
    if slash and (sid, qid) not in unbounded_questions(conn, sid):
        prefix = f"s{sid}:"
        ids = {
            int(k[len(prefix) :]): k
            for k in enc
            if k.startswith(prefix) and k[len(prefix) :].isascii() and k[len(prefix) :].isdigit()
        }
        if ids:
            params = {"sid": sid, "qid": qid, "ids": listed(postgres, ids)}
            found.update(ids[int(i)] for i in conn.execute(answered, params).scalars())
    return found


def service_charges(conn: Connection) -> list[tuple[str, str]]:
    """Every ``(question, key)`` the survey service charged: one per stored report (the
    service keeps no ``ledger_charged`` row for them: the report is the record)."""
    rows = conn.execute(_SERVICE_CHARGES).all()
    free = unbounded_questions(conn)  # outside the cap: a report there is no charge
    return [(f"{s}/{qid}", f"s{s}:{r}") for s, qid, r in rows if (s, qid) not in free]


def unbounded_questions(conn: Connection, survey_id: str | None = None) -> set[tuple[str, str]]:
    """``(survey id, question id)`` of every unbounded question (a two-group design,
    outside the cap: its reports are never charged) of the stored survey definitions (of
    ``survey_id`` only, if given)."""
    stmt = sa.select(surveys.c.id, surveys.c.definition)
    if survey_id is not None:
        stmt = stmt.where(surveys.c.id == survey_id)
    return {
        (sid, str(q["id"]))
        for sid, definition in conn.execute(stmt)
        for q in definition.get("questions", [])
        if q.get("unbounded") is True
    }


def write_spent(
    conn: Connection, enc: Sequence[str], paid: Mask, totals: Floats, new: set[str]
) -> None:
    """Write the new totals of the keys ``enc[paid]`` (``totals``, one per paid key, in
    order); drop the rows of new keys that were not charged (PostgreSQL's lock rows)."""
    keys = [k for k, p in zip(enc, paid.tolist(), strict=True) if p]
    vals = totals.tolist()
    postgres = is_postgres(conn)
    write, drop = _write_spent_stmts(conn)
    if postgres:
        if keys:  # one statement (the rows are locked already)
            conn.execute(write, {"s": vals, "k": keys})
        unpaid = new.difference(keys)
        if unpaid:
            conn.execute(drop, {"keys": listed(postgres, unpaid)})
        return
    if not keys:
        return
    # a new key's ``first``: after every row there is, by its position in ``enc``
    base = 0
    if new.intersection(keys):
        top = conn.execute(_MAX_FIRST).scalar()
        base = 0 if top is None else int(top) + 1
    pos = {k: i for i, k in enumerate(enc)}
    conn.execute(
        write,
        [{"key": k, "spent": s, "first": base + pos[k]} for k, s in zip(keys, vals, strict=True)],
    )


def write_charged(conn: Connection, pairs: Sequence[tuple[str, str]]) -> None:
    """Mark ``(question, key)`` pairs charged."""
    if pairs:
        conn.execute(_charged_insert(conn), [{"question": q, "key": k} for q, k in pairs])


def write_records(conn: Connection, records: Sequence[QuestionRecord], *, add: bool) -> None:
    """Write question records: their charges as given, or (``add``) added to the stored
    ones (a writer that did not lock the question's row), in name order."""
    if not records:
        return
    upsert = _record_upserts(conn)[1 if add else 0]
    ordered = sorted(records, key=lambda r: r.question)
    if is_postgres(conn):  # one statement of one JSON array
        conn.execute(upsert, {"records": record_rows(ordered)})
        return
    conn.execute(
        upsert,
        [
            {"name": r.question, "epsilon": r.epsilon, "memoized": r.memoized,
             "charges": r.charges}
            for r in ordered
        ],
    )  # fmt: skip


def ledger_history(
    conn: Connection, enc: Sequence[str], question: str | None, record: QuestionRecord | None
) -> History:
    """The totals and charged flags of ``enc`` for ``question`` (read in ``conn``)."""
    found = conn.execute(_spent_stmt(conn), {"keys": listed(is_postgres(conn), enc)})
    spent_of: dict[str, float] = dict(found.all())
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
