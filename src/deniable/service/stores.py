"""The library's store protocols on SQL: :class:`SqlLedgerStore` (a
:class:`~deniable.accounting.LedgerStore`) and :class:`SqlMemoStore` (a
:class:`~deniable.mechanisms.MemoStore`), on SQLite and PostgreSQL.

Keys are kept as text (:func:`encode_key`): ``i<decimal>`` for an integer, ``s<text>`` for
a string, ``b<hex>`` for bytes, so ``0`` and ``"0"`` stay different respondents and an
integer is the same key however it is passed.

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

The functions taking a ``conn`` run inside a transaction the caller opened with
:func:`~deniable.service.db.write_tx`, so that the service's report insert and the budget
spend commit together (:class:`~deniable.service.storage.ServiceStore`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from deniable.accounting import (
    History,
    InMemoryLedgerStore,
    QuestionRecord,
    SpendPlan,
    SpendRequest,
    SpentSummary,
)
from deniable.accounting._keys import KeyIndex, Keys, respondent_keys
from deniable.exceptions import DataError, ParameterTypeError
from deniable.mechanisms import InMemoryMemoStore
from deniable.service.db import is_postgres, make_engine, read_tx, write_tx
from deniable.service.models import (
    ledger_charged,
    ledger_question,
    ledger_respondent,
    memo,
    memo_question,
)

__all__ = [
    "Rollback",
    "SqlLedgerStore",
    "SqlMemoStore",
    "charged_keys",
    "decode_key",
    "encode_key",
    "encode_keys",
    "in_list",
    "ledger_history",
    "listed",
    "lock_respondents",
    "many",
    "q",
    "question_records",
    "retrying",
    "service_charges",
    "spend_in",
    "write_charged",
    "write_records",
    "write_spent",
]

#: Keys per statement (SQLite allows 32766 bound values, PostgreSQL 65535).
CHUNK = 5000
#: Attempts of a transaction that failed on a deadlock or a serialization failure.
ATTEMPTS = 8

T = TypeVar("T")
Floats = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


# --------------------------------------------------------------------------- keys


def encode_key(key: Any) -> str:
    """A canonical respondent key as text (see the module docstring).

    >>> encode_key(7), encode_key("7"), encode_key(b"\\x00a")
    ('i7', 's7', 'b0061')
    """
    if type(key) is int or isinstance(key, np.integer):
        return f"i{int(key)}"
    if isinstance(key, str):
        return "s" + key
    if isinstance(key, bytes):
        return "b" + key.hex()
    raise ParameterTypeError(
        "`respondents` of a SQL store must be integer ids, string tokens or bytes, got "
        f"{type(key).__name__} {key!r}."
    )


def decode_key(text: str) -> Any:
    """The key :func:`encode_key` encoded.

    >>> decode_key("i-5"), decode_key("stok"), decode_key("b0061")
    (-5, 'tok', b'\\x00a')
    """
    tag, body = text[:1], text[1:]
    if tag == "i":
        return int(body)
    if tag == "s":
        return body
    if tag == "b":
        return bytes.fromhex(body)
    raise DataError(f"the store holds a key it cannot read: {text!r}.")


def encode_keys(keys: Keys) -> list[str]:
    """Every key of a canonical key array, encoded."""
    if keys.dtype != object:
        return [f"i{k}" for k in keys.tolist()]
    return [encode_key(k) for k in keys.tolist()]


def _decoded(texts: Sequence[str]) -> Keys:
    if not texts:
        return np.zeros(0, dtype=np.int64)
    return respondent_keys([decode_key(t) for t in texts], unique=False)


def _chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _insert(conn: Connection, table: sa.Table) -> Any:
    """An ``INSERT`` of the connection's dialect (for ``ON CONFLICT``)."""
    return (pg.insert if is_postgres(conn) else sqlite.insert)(table)


def many(conn: Connection, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """``sql`` (placeholders ``?``) executed once per row with the driver's ``executemany``:
    the bulk path, without SQLAlchemy's per-row parameter processing (only plain ints,
    floats and strings go through it)."""
    if not rows:
        return
    if is_postgres(conn):
        sql = sql.replace("?", "%s")
    conn.exec_driver_sql(sql, list(rows))


class Rollback(Exception):
    """Raised by the work of :func:`retrying` to roll its transaction back and return
    ``value`` (a refused spend: nothing may stay, not even the rows inserted to lock)."""

    def __init__(self, value: Any) -> None:
        super().__init__("rollback")
        self.value = value


_ACTIVE = threading.local()


def _active() -> dict[str, Connection]:
    conns: dict[str, Connection] | None = getattr(_ACTIVE, "conns", None)
    if conns is None:
        conns = _ACTIVE.conns = {}
    return conns


def retrying(engine: Engine, work: Callable[[Connection], T]) -> T:
    """Run ``work(conn)`` in a write transaction (:func:`write_tx`) and commit; if it raises
    :class:`Rollback`, roll back and return its value.  On PostgreSQL, a deadlock or
    serialization failure rolls back and runs the work again (a few times).

    Called while this thread is already inside such a transaction on the same database (a
    memo store's ``create`` charging the ledger store), the work joins that transaction
    (in a savepoint) instead of opening a second one, which on SQLite would wait for the
    first's write lock forever: the memo and the charge then commit together."""
    key = engine.url.render_as_string(hide_password=False)
    active = _active()
    outer = active.get(key)
    if outer is not None:
        try:
            with outer.begin_nested():
                return work(outer)
        except Rollback as back:
            return back.value  # type: ignore[no-any-return]
    for attempt in range(ATTEMPTS):
        try:
            with write_tx(engine) as conn:
                active[key] = conn
                try:
                    return work(conn)
                finally:
                    del active[key]
        except Rollback as back:
            return back.value  # type: ignore[no-any-return]
        except DBAPIError as exc:
            code = getattr(exc.orig, "sqlstate", None)
            if code not in ("40001", "40P01") or attempt == ATTEMPTS - 1:
                raise
            time.sleep(0.001 * 2**attempt)
    raise AssertionError("unreachable")  # pragma: no cover


# --------------------------------------------------------------------------- ledger steps
# Plain SQL through the driver (no SQLAlchemy compilation per call: these run on every
# submission).  ``?`` placeholders become ``%s`` on PostgreSQL; a list parameter is a JSON
# array read with ``json_each`` on SQLite and an array on PostgreSQL.


def q(conn: Connection, text: str, params: Sequence[Any] = ()) -> Any:
    """Execute ``text`` (``?`` placeholders) with positional ``params``; the result."""
    if is_postgres(conn):
        text = text.replace("?", "%s")
    return conn.exec_driver_sql(text, tuple(params))


def in_list(conn: Connection, kind: str = "text") -> str:
    """``IN`` a list parameter: ``IN (SELECT unnest(?::kind[]))`` on PostgreSQL, ``IN
    (SELECT value FROM json_each(?))`` on SQLite.  (A semi-join, never ``= ANY(array)``:
    on a table last analyzed when it was small, that filter compares every row with every
    element of the array.)"""
    if is_postgres(conn):
        return f"IN (SELECT unnest(?::{kind}[]))"
    return "IN (SELECT value FROM json_each(?))"


def listed(conn: Connection, values: Iterable[Any]) -> Any:
    """A list parameter for :func:`in_list`."""
    return list(values) if is_postgres(conn) else json.dumps(list(values))


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
    return History(spent, charged, record)


def spend_in(conn: Connection, keys: Keys, request: SpendRequest) -> SpendPlan:
    """One check-and-spend inside ``conn``'s write transaction (the caller commits; on a
    refused plan the caller must roll back, which drops the rows inserted to be locked)."""
    enc = encode_keys(keys)
    name = request.question
    record = question_records(conn, [name], lock=True)[name]
    spent, new = lock_respondents(conn, enc)
    charged_set = charged_keys(conn, name, enc)
    charged = np.fromiter((k in charged_set for k in enc), dtype=np.bool_, count=len(enc))
    plan = request.plan(History(spent, charged, record))
    if not plan.refused:
        write_spent(conn, enc, plan.write, plan.new_spent, new)
        write_charged(conn, [(name, k) for k, w in zip(enc, plan.write.tolist(), strict=True) if w])
        assert plan.record is not None
        write_records(conn, [plan.record], add=False)
    return plan


# --------------------------------------------------------------------------- stores


def _engine(bind: str | Engine) -> Engine:
    return make_engine(bind) if isinstance(bind, str) else bind


class SqlLedgerStore:
    """A :class:`~deniable.accounting.LedgerStore` in a SQL database (SQLite or
    PostgreSQL) whose schema :func:`~deniable.service.db.migrate` created; safe under
    threads and processes (see the module docstring).

    ``bind`` is a database URL or an engine (shared with the service).  :meth:`snapshot`
    returns an :class:`~deniable.accounting.InMemoryLedgerStore`.
    """

    def __init__(self, bind: str | Engine) -> None:
        self._engine = _engine(bind)

    @property
    def engine(self) -> Engine:
        """The engine (a connection pool)."""
        return self._engine

    def __repr__(self) -> str:
        return f"SqlLedgerStore({self._engine.url.render_as_string(hide_password=True)!r})"

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

    def questions(self) -> dict[str, QuestionRecord]:
        with read_tx(self._engine) as conn:
            return _records(conn)

    def respondents(self) -> Keys:
        r = ledger_respondent.c
        with read_tx(self._engine) as conn:
            texts = list(conn.execute(sa.select(r.key).order_by(r.first)).scalars())
        return _decoded(texts)

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
        index = KeyIndex()
        keys = _decoded([k for k, _ in rows])
        pos = {k: i for i, (k, _) in enumerate(rows)}
        if keys.size:
            index.add(keys, np.full(keys.size, -1, dtype=np.int64))
        flags: dict[str, npt.NDArray[np.bool_]] = {
            q: np.zeros(len(rows), dtype=np.bool_) for q in records
        }
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


Reports = npt.NDArray[np.int64]


class SqlMemoStore:
    """A :class:`~deniable.mechanisms.MemoStore` in a SQL database (SQLite or PostgreSQL):
    one permanent report per (question, key), a unique primary key, and creators of one
    question serialized (``BEGIN IMMEDIATE`` on SQLite; the question's row locked ``FOR
    UPDATE`` on PostgreSQL).  :meth:`snapshot` returns an
    :class:`~deniable.mechanisms.InMemoryMemoStore`."""

    def __init__(self, bind: str | Engine) -> None:
        self._engine = _engine(bind)

    @property
    def engine(self) -> Engine:
        """The engine (a connection pool)."""
        return self._engine

    def __repr__(self) -> str:
        return f"SqlMemoStore({self._engine.url.render_as_string(hide_password=True)!r})"

    def get_or_create(
        self, question: str, keys: Keys, create: Callable[[Mask], npt.ArrayLike]
    ) -> Reports:
        enc = encode_keys(keys)

        def work(conn: Connection) -> Reports:
            if is_postgres(conn):
                conn.execute(
                    pg.insert(memo_question).values(name=question).on_conflict_do_nothing()
                )
                conn.execute(
                    sa.select(memo_question.c.name)
                    .where(memo_question.c.name == question)
                    .with_for_update()
                ).one()
            stored = _memo_lookup(conn, question, enc)
            missing = stored < 0
            n_new = int(np.count_nonzero(missing))
            new = np.asarray(create(missing.copy()))
            if new.shape != (n_new,) or (n_new and (new.dtype.kind not in "iu" or new.min() < 0)):
                raise DataError(
                    f"`create` must return {n_new} non-negative integer reports (one per "
                    f"missing key), got dtype {new.dtype} and shape {new.shape}."
                )
            if n_new:
                fresh = [k for k, m in zip(enc, missing.tolist(), strict=True) if m]
                conn.execute(
                    _insert(conn, memo).on_conflict_do_nothing(),
                    [
                        {"question": question, "key": k, "report": int(v)}
                        for k, v in zip(fresh, new.tolist(), strict=True)
                    ],
                )
                # what is stored is what counts (the protocol: never the fresh draws)
                stored = _memo_lookup(conn, question, enc)
            return stored

        return retrying(self._engine, work)

    def lookup(self, question: str, keys: Keys) -> Reports:
        with read_tx(self._engine) as conn:
            return _memo_lookup(conn, question, encode_keys(keys))

    def forget(self, question: str) -> None:
        def work(conn: Connection) -> None:
            conn.execute(sa.delete(memo).where(memo.c.question == question))

        retrying(self._engine, work)

    def snapshot(self) -> InMemoryMemoStore:
        m = memo.c
        with read_tx(self._engine) as conn:
            rows = conn.execute(sa.select(m.question, m.key, m.report).order_by(m.question)).all()
        by_q: dict[str, tuple[list[str], list[int]]] = {}
        for q, k, rep in rows:
            ks, rs = by_q.setdefault(q, ([], []))
            ks.append(k)
            rs.append(int(rep))
        state: dict[str, tuple[KeyIndex, Reports]] = {}
        for q, (ks, rs) in by_q.items():
            index = KeyIndex()
            keys = _decoded(ks)
            index.add(keys, np.full(keys.size, -1, dtype=np.int64))
            state[q] = (index, np.array(rs, dtype=np.int64))
        out = InMemoryMemoStore.__new__(InMemoryMemoStore)
        out.__setstate__({"memo": state})
        return out


def _memo_lookup(conn: Connection, question: str, enc: Iterable[str]) -> Reports:
    m = memo.c
    enc = list(enc)
    found: dict[str, int] = {}
    for part in _chunks(enc):
        found.update(
            conn.execute(
                sa.select(m.key, m.report).where(m.question == question, m.key.in_(part))
            ).all()
        )
    return np.fromiter((found.get(k, -1) for k in enc), dtype=np.int64, count=len(enc))
