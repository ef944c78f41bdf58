"""The SQL plumbing the service's stores share: respondent keys as text, list parameters,
statements built once per dialect, write transactions retried on a deadlock (and joined
by a nested call on the same database), and the array types the stores pass.

Every statement is SQLAlchemy Core (no SQL in strings).  The statements that run on every
submission are built once per dialect (:func:`per_dialect`) with named bind parameters, so
that SQLAlchemy compiles each once and finds it in its cache afterwards.  A list parameter
(:func:`member`) is one bound value however long the list: a JSON array read with
``json_each`` on SQLite, an array read with ``unnest`` on PostgreSQL (a semi-join, never
``= ANY(array)``: on a table last analyzed when it was small, that filter compares every
row with every element of the array).

Keys are kept as text (:func:`encode_key`): ``i<decimal>`` for an integer, ``s<text>`` for
a string, ``b<hex>`` for bytes, so ``0`` and ``"0"`` stay different respondents and an
integer is the same key however it is passed.
"""

from __future__ import annotations

import functools
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

from deniable.accounting import Keys, respondent_keys
from deniable.exceptions import DataError, ParameterTypeError
from deniable.service.storage.db import is_postgres, make_engine, write_tx

__all__ = [
    "ATTEMPTS",
    "CHUNK",
    "EngineStore",
    "Floats",
    "Ints",
    "Mask",
    "Rollback",
    "array",
    "chunks",
    "decode_key",
    "decoded",
    "dialect_insert",
    "encode_key",
    "encode_keys",
    "engine_of",
    "json_columns",
    "json_elements",
    "json_listed",
    "listed",
    "member",
    "per_dialect",
    "retrying",
]

#: Keys per statement (SQLite allows 32766 bound values, PostgreSQL 65535).
CHUNK = 5000
#: Attempts of a transaction that failed on a deadlock or a serialization failure.
ATTEMPTS = 8

T = TypeVar("T")

#: The arrays the stores pass: integers (ids, indices, reports), totals, masks.
Ints = npt.NDArray[np.int64]
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


def decoded(texts: Sequence[str]) -> Keys:
    if not texts:
        return np.zeros(0, dtype=np.int64)
    return respondent_keys([decode_key(t) for t in texts], unique=False)


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# --------------------------------------------------------------------------- statements


def dialect_insert(conn: Connection | bool, table: sa.Table) -> Any:
    """An ``INSERT`` of the connection's dialect (for ``ON CONFLICT``); ``conn`` may be
    the answer of :func:`~deniable.service.storage.db.is_postgres` instead."""
    postgres = conn if isinstance(conn, bool) else is_postgres(conn)
    return (pg.insert if postgres else sqlite.insert)(table)


def member(
    column: Any, name: str, postgres: bool, kind: Any = sa.Text, *, as_json: bool = False
) -> Any:
    """``column IN (<the list bound to name>)``: one bind parameter, a JSON array read with
    ``json_each`` on SQLite, an array of ``kind`` read with ``unnest`` on PostgreSQL (with
    ``as_json``: a JSON array there too, :func:`json_elements`).  Bind the values with
    :func:`listed` (``as_json``: :func:`json_listed`)."""
    if postgres and as_json:
        return column.in_(sa.select(sa.cast(json_elements(name).column, kind)))
    if postgres:
        values = sa.cast(sa.bindparam(name), pg.ARRAY(kind))
        return column.in_(sa.select(sa.func.unnest(values)))
    each = sa.func.json_each(sa.bindparam(name, type_=sa.Text)).table_valued("value")
    return column.in_(sa.select(each.c.value))


def listed(postgres: bool, values: Iterable[Any]) -> Any:
    """The value of a :func:`member` list parameter."""
    return list(values) if postgres else json_listed(values)


def json_listed(values: Iterable[Any]) -> str:
    """The value of a JSON list parameter (:func:`json_elements`, :func:`json_columns`,
    :func:`member` with ``as_json``): the values as one JSON array."""
    return json.dumps(list(values), separators=(",", ":"))


def _json_param(name: str) -> Any:
    return sa.cast(sa.bindparam(name, type_=sa.Text), sa.JSON)


def json_elements(name: str) -> Any:
    """PostgreSQL: the elements of the JSON array bound to ``name``, as text, in a
    table-valued function (``json_array_elements_text``, column ``value``).

    A JSON array is the cheaper way to bind a list: the driver binds one string (dumped
    by :func:`json.dumps`), where a Python list becomes an array parameter element by
    element, in Python (some 45 microseconds of CPU per list of 25, as much as the rest
    of a short statement's execution).  But the planner counts 100 elements in any JSON
    array, and the elements of an array parameter exactly: where a list drives a join
    to a table that grows (the ledger's rows by key), an array keeps the plan a look-up
    per element; use JSON where the plan does not depend on the count (an insert's rows,
    look-ups in ``LATERAL`` subqueries, a small table's rows)."""
    return sa.func.json_array_elements_text(_json_param(name)).table_valued("value")


def json_columns(name: str, kinds: Sequence[Any], *, alias: str = "u") -> tuple[Any, list[Any]]:
    """PostgreSQL: the rows of the JSON array of arrays bound to ``name`` (one inner array
    per row, bound with :func:`json_listed`): the table-valued function to select from
    (``json_array_elements``) and its columns, the ``i``-th element of each row cast to
    ``kinds[i]``.  A float goes through its shortest decimal repr (Python's ``json``),
    which PostgreSQL reads back to the same double exactly."""
    rows = sa.func.json_array_elements(_json_param(name)).table_valued("value")
    rows = rows.render_derived(name=alias)
    columns = [
        sa.cast(rows.c.value.op("->>", return_type=sa.Text)(sa.literal_column(str(i))), kind)
        for i, kind in enumerate(kinds)
    ]
    return rows, columns


def array(name: str, kind: Any) -> Any:
    """A bound array parameter of ``kind`` (PostgreSQL)."""
    return sa.cast(sa.bindparam(name), pg.ARRAY(kind))


def per_dialect(build: Callable[[bool], T]) -> Callable[[Connection], T]:
    """``build(postgres)`` made once per dialect: the decorated function takes a
    connection and returns the statement (or statements) for its database."""
    made = functools.cache(build)

    def of(conn: Connection) -> T:
        return made(conn.dialect.name == "postgresql")

    of.__doc__ = build.__doc__
    return of


def engine_of(bind: str | Engine) -> Engine:
    """An engine for a URL, or the engine given."""
    return make_engine(bind) if isinstance(bind, str) else bind


class EngineStore:
    """What every SQL store has: its engine (from a URL or given) and a ``repr`` that shows
    the URL with the password hidden."""

    _engine: Engine

    def __init__(self, bind: str | Engine) -> None:
        self._engine = engine_of(bind)

    @property
    def engine(self) -> Engine:
        """The engine (a connection pool)."""
        return self._engine

    def __repr__(self) -> str:
        url = self._engine.url.render_as_string(hide_password=True)
        return f"{type(self).__name__}({url!r})"


# --------------------------------------------------------------------------- transactions


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


class _Lost(Exception):
    """The connection to the server was lost before the transaction's commit was sent."""


def retrying(engine: Engine, work: Callable[[Connection], T]) -> T:
    """Run ``work(conn)`` in a write transaction (:func:`write_tx`) and commit; if it raises
    :class:`Rollback`, roll back and return its value.  On PostgreSQL, a deadlock or
    serialization failure rolls back and runs the work again (a few times), and so does,
    once, a connection lost before the commit (a pooled connection to a server that has
    restarted: engines do not ping a connection before each use); a connection lost
    during the commit is raised (whether it committed is unknown).

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
    reconnected = False
    for attempt in range(ATTEMPTS):
        try:
            with write_tx(engine) as conn:
                active[key] = conn
                try:
                    return work(conn)
                except DBAPIError as exc:
                    if exc.connection_invalidated and not reconnected:
                        raise _Lost from exc  # before the commit: nothing was written
                    raise
                finally:
                    del active[key]
        except Rollback as back:
            return back.value  # type: ignore[no-any-return]
        except _Lost:
            reconnected = True  # once, on a fresh connection (the pool dropped the others)
            continue
        except DBAPIError as exc:
            code = getattr(exc.orig, "sqlstate", None)
            if code not in ("40001", "40P01") or attempt == ATTEMPTS - 1:
                raise
            time.sleep(0.001 * 2**attempt)
    raise AssertionError("unreachable")  # pragma: no cover
