"""The memo store on SQL: :class:`SqlMemoStore`, the library's
:class:`~deniable.mechanisms.MemoStore` on SQLite and PostgreSQL (see its docstring for the
recipe of one atomic get-or-create)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.engine import Connection

from deniable.accounting import KeyIndex, Keys
from deniable.mechanisms import InMemoryMemoStore, checked_mechanism, checked_reports, mismatch
from deniable.service.storage._sql import (
    EngineStore,
    Ints,
    Mask,
    chunks,
    decoded,
    dialect_insert,
    encode_keys,
    listed,
    member,
    retrying,
)
from deniable.service.storage.db import is_postgres, read_tx
from deniable.service.storage.tables import memo, memo_question

__all__ = ["SqlMemoStore"]

#: A report of each key (-1 where none is stored).
Reports = Ints


class SqlMemoStore(EngineStore):
    """A :class:`~deniable.mechanisms.MemoStore` in a SQL database (SQLite or PostgreSQL):
    one permanent report per (question, key) with the key of the mechanism that drew it, a
    unique primary key, and creators of one question serialized (``BEGIN IMMEDIATE`` on
    SQLite; the question's row locked ``FOR UPDATE`` on PostgreSQL).  A report of another
    mechanism, or one stored before reports carried their mechanism (``mechanism`` NULL,
    migration 0002), is refused (:meth:`adopt` states its mechanism).  :meth:`snapshot`
    returns an :class:`~deniable.mechanisms.InMemoryMemoStore`."""

    def get_or_create(
        self,
        question: str,
        keys: Keys,
        create: Callable[[Mask], npt.ArrayLike],
        *,
        mechanism: str,
    ) -> Reports:
        asked = checked_mechanism(mechanism)
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
            stored = _memo_lookup(conn, question, keys, enc, asked)
            missing = stored < 0
            n_new = int(np.count_nonzero(missing))
            new = np.asarray(create(missing.copy()))
            checked_reports(new, n_new)
            if n_new:
                fresh = [k for k, m in zip(enc, missing.tolist(), strict=True) if m]
                conn.execute(
                    dialect_insert(conn, memo).on_conflict_do_nothing(),
                    [
                        {"question": question, "key": k, "report": int(v), "mechanism": asked}
                        for k, v in zip(fresh, new.tolist(), strict=True)
                    ],
                )
                # what is stored is what counts (the protocol: never the fresh draws)
                stored = _memo_lookup(conn, question, keys, enc, asked)
            return stored

        return retrying(self._engine, work)

    def lookup(self, question: str, keys: Keys, *, mechanism: str) -> Reports:
        asked = checked_mechanism(mechanism)
        with read_tx(self._engine) as conn:
            return _memo_lookup(conn, question, keys, encode_keys(keys), asked)

    def adopt(self, question: str, mechanism: str) -> int:
        """Record ``mechanism`` as the mechanism of every report of ``question`` stored
        before reports carried one (migration 0002); the number of reports adopted.  An
        explicit statement: only make it if that mechanism drew them."""
        asked = checked_mechanism(mechanism)

        def work(conn: Connection) -> int:
            done = conn.execute(
                sa.update(memo)
                .where(memo.c.question == question, memo.c.mechanism.is_(None))
                .values(mechanism=asked)
            )
            return int(done.rowcount)

        return retrying(self._engine, work)

    def forget(self, question: str) -> None:
        def work(conn: Connection) -> None:
            conn.execute(sa.delete(memo).where(memo.c.question == question))

        retrying(self._engine, work)

    def snapshot(self) -> InMemoryMemoStore:
        m = memo.c
        with read_tx(self._engine) as conn:
            rows = conn.execute(
                sa.select(m.question, m.key, m.report, m.mechanism).order_by(m.question)
            ).all()
        by_q: dict[str, tuple[list[str], list[int], list[str | None]]] = {}
        for q_, k, rep, mech in rows:
            ks, rs, ms = by_q.setdefault(q_, ([], [], []))
            ks.append(k)
            rs.append(int(rep))
            ms.append(mech)
        state: dict[str, tuple[Any, ...]] = {}
        for q_, (ks, rs, ms) in by_q.items():
            index = KeyIndex()
            keys = decoded(ks)
            index.add(keys, np.full(keys.size, -1, dtype=np.int64))
            kinds = list(dict.fromkeys(ms))
            codes = np.array([kinds.index(x) for x in ms], dtype=np.int32)
            state[q_] = (index, np.array(rs, dtype=np.int64), codes, kinds)
        out = InMemoryMemoStore.__new__(InMemoryMemoStore)
        out.__setstate__({"version": 2, "memo": state})
        return out


def _memo_lookup(
    conn: Connection, question: str, keys: Keys, enc: Sequence[str], asked: str
) -> Reports:
    """The stored report of each key (``-1``: none); a report of another mechanism than
    ``asked`` is refused (:func:`~deniable.mechanisms._memo_store.mismatch`, naming the
    first such key of the call).

    One statement, compiled once, run per chunk of keys with the chunk bound as one list
    (``key IN (...)`` over ``json_each`` or ``unnest``: :func:`member`); the rows fetched
    at once, matched to the keys by one dict, and checked and placed as arrays."""
    m = memo.c
    postgres = is_postgres(conn)
    query = sa.select(m.key, m.report, m.mechanism).where(
        m.question == question, member(m.key, "keys", postgres)
    )
    rows: list[Any] = []
    for part in chunks(enc):
        rows += conn.execute(query, {"keys": listed(postgres, part)}).all()
    out = np.full(len(enc), -1, dtype=np.int64)
    if not rows:
        return out
    row_of = {k: i for i, (k, _, _) in enumerate(rows)}
    at = np.fromiter((row_of.get(k, -1) for k in enc), dtype=np.int64, count=len(enc))
    hit = np.flatnonzero(at >= 0)
    kinds = np.array([r[2] for r in rows], dtype=object)[at[hit]]
    bad = np.flatnonzero(kinds != asked)
    if bad.size:
        first = int(bad[0])
        raise mismatch(question, keys[int(hit[first])], kinds[first], asked)
    out[hit] = np.array([r[1] for r in rows], dtype=np.int64)[at[hit]]
    return out
