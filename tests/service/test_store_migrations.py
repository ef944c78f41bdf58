"""Migrations: on an empty database ``migrate`` creates the schema of
:mod:`deniable.service.storage.tables` (Alembic's ``compare_metadata`` finds no difference), and
migrating again changes nothing; on SQLite the connections are set up for a server.
Revision 0002 on a database written at revision 0001: memo reports get a NULL mechanism
(refused until adopted) except RAPPOR's old layout, moved to the new one; the ledger
store's unit is recorded where the survey service wrote every total, else refused until
stated."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext

import deniable.service
from _memo_layouts import BASE, old_rappor_layout
from deniable.accounting import BudgetLedger, ZCDPComposition
from deniable.accounting._keys import respondent_keys
from deniable.designs import Warner
from deniable.exceptions import ParameterError, PrivacyError
from deniable.mechanisms import InMemoryMemoStore, MemoizedRandomizer
from deniable.oracles import Rappor, RapporClient
from deniable.service.storage import ServiceStore, SqlLedgerStore, SqlMemoStore, encode_key
from deniable.service.storage.db import make_engine, migrate
from deniable.service.storage.tables import metadata


def _schema(engine: sa.Engine) -> dict[str, object]:
    inspector = sa.inspect(engine)
    return {
        t: (
            [(c["name"], str(c["type"]), c["nullable"]) for c in inspector.get_columns(t)],
            inspector.get_pk_constraint(t),
            sorted(map(str, inspector.get_indexes(t))),
            sorted(map(str, inspector.get_unique_constraints(t))),
            sorted(map(str, inspector.get_foreign_keys(t))),
        )
        for t in sorted(inspector.get_table_names())
    }


def test_migrate_creates_the_models_and_is_idempotent(db_url: str) -> None:
    store = ServiceStore(db_url)
    assert sa.inspect(store.engine).get_table_names() == []
    store.migrate()
    tables = set(sa.inspect(store.engine).get_table_names())
    assert tables == set(metadata.tables) | {"alembic_version"}
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
        version = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one()
    assert diff == [], diff
    assert version == "0007"
    before = _schema(store.engine)
    store.migrate()
    assert _schema(store.engine) == before
    store.close()


def test_sqlite_connections_are_set_up_for_a_server(tmp_path: object) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/sub/dir/x.db")  # the directory is created
    with engine.connect() as conn:
        pragmas = {
            p: conn.exec_driver_sql(f"PRAGMA {p}").scalar()
            for p in ("journal_mode", "foreign_keys", "busy_timeout", "synchronous")
        }
    assert pragmas == {"journal_mode": "wal", "foreign_keys": 1, "busy_timeout": 60000,
                       "synchronous": 1}  # fmt: skip
    engine.dispose()


def test_sqlite_synchronous_from_the_url(tmp_path: object) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/x.db?synchronous=full")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2
    engine.dispose()
    with pytest.raises(ParameterError, match=r"`synchronous` .* NORMAL, FULL, EXTRA .* got 'off'"):
        make_engine(f"sqlite:///{tmp_path}/x.db?synchronous=off")


# --------------------------------------------------------------------------- revision 0002


@pytest.fixture
def at_0001(db_url: str) -> Iterator[sa.Engine]:
    """An engine on a database migrated to revision 0001 only (as the previous version
    left it)."""
    engine = make_engine(db_url)
    cfg = Config()
    cfg.set_main_option(
        "script_location", str(Path(deniable.service.__file__).parent / "storage" / "migrations")
    )
    with engine.connect() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001")
        conn.commit()
    yield engine
    engine.dispose()


def _insert(engine: sa.Engine, table: str, rows: list[dict[str, object]]) -> None:
    with engine.begin() as conn:
        conn.execute(sa.table(table, *map(sa.column, rows[0])).insert(), rows)


def _old_memo_rows(old: dict[str, tuple[object, np.ndarray]]) -> list[dict[str, object]]:  # type: ignore[type-arg]
    rows = []
    for question, (index, reports) in old.items():
        for key, report in zip(index.keys().tolist(), reports.tolist(), strict=True):  # type: ignore[attr-defined]
            rows.append({"question": question, "key": encode_key(key), "report": report})
    return rows


def test_0002_keeps_memo_reports_and_moves_rappors_layout(at_0001: sa.Engine) -> None:
    warner = Warner(0.75).key
    ids, values = np.arange(60), [f"v{i % 3}" for i in range(60)]
    first, second = Rappor(**BASE), Rappor(**{**BASE, "p": 0.3})  # a second PRR of old
    old = {**old_rappor_layout(first, ids, values, 1), **old_rappor_layout(second, ids, values, 2)}
    plain = [
        {"question": "smokes", "key": encode_key(k), "report": r} for k, r in (("ann", 1), (7, 0))
    ]
    _insert(at_0001, "memo", plain + _old_memo_rows(old))
    migrate(at_0001)
    with at_0001.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    assert diff == [], diff
    store = SqlMemoStore(at_0001)
    # a report of 0001 has no mechanism: refused for any, until stated
    with pytest.raises(
        PrivacyError, match=r"respondent 'ann' holds a permanent report stored before"
    ):
        store.lookup("smokes", respondent_keys(["ann"], unique=True), mechanism=warner)
    memo = MemoizedRandomizer(Warner(0.75), store=store)
    with pytest.raises(PrivacyError, match=re.escape("store.adopt('smokes', mechanism)")):
        memo.randomize(["ann", 7], [1, 1], question="smokes", rng=1)
    assert store.adopt("smokes", warner) == 2 and store.adopt("smokes", warner) == 0
    assert memo.randomize(["ann", 7], [0, 0], question="smokes", rng=1).tolist() == [1, 0]
    # RAPPOR's old layout is read by the new client, whatever its p: the first layout's PRRs
    kept = RapporClient(first, InMemoryMemoStore())
    kept.permanent(ids, values, rng=1)
    for p in (0.25, 0.3, 0.5):
        client = RapporClient(Rappor(**{**BASE, "p": p}), store)
        np.testing.assert_array_equal(client.permanent(ids, values), kept.permanent(ids, values))
        np.testing.assert_array_equal(client.cohorts_of(ids), kept.cohorts_of(ids))
    # the second layout's rows that could not move stay where they were; the first's moved
    with at_0001.connect() as conn:
        left = set(
            conn.execute(
                sa.text("SELECT DISTINCT question FROM memo WHERE question LIKE 'rappor/rappor{%'")
            ).scalars()
        )
    assert left and all(q.startswith(f"rappor/{second.key}/") for q in left)


def test_0002_records_epsilon_where_the_service_wrote_every_total(at_0001: sa.Engine) -> None:
    _insert(at_0001, "ledger_respondent", [{"key": "sdemo:1", "spent": 1.0, "first": 0}])
    migrate(at_0001)
    ledgers = SqlLedgerStore(at_0001)
    assert ledgers.history(respondent_keys(["demo:1"], unique=True)).unit == "epsilon"
    with pytest.raises(PrivacyError, match=r"totals in epsilon .* counts rho"):
        BudgetLedger(cap=2.0, store=ledgers, composition=ZCDPComposition())
    BudgetLedger(cap=2.0, store=ledgers).spend(["demo:1"], "q", 0.5)
    assert ledgers.history(respondent_keys(["demo:1"], unique=True)).spent.tolist() == [1.5]


def test_0002_leaves_a_ledgers_totals_without_a_unit_until_stated(at_0001: sa.Engine) -> None:
    # a BudgetLedger spent here (a ledger_charged row): its composition was not recorded
    _insert(at_0001, "ledger_respondent", [{"key": "sann", "spent": 0.5, "first": 0}])
    _insert(at_0001, "ledger_charged", [{"question": "q", "key": "sann"}])
    migrate(at_0001)
    ledgers = SqlLedgerStore(at_0001)
    for composition in (None, ZCDPComposition()):
        with pytest.raises(PrivacyError, match="written before stores recorded their unit"):
            BudgetLedger(cap=2.0, store=ledgers, composition=composition)
    ledgers.adopt_unit("rho")
    ledger = BudgetLedger(cap=2.0, store=ledgers, composition=ZCDPComposition())
    assert ledger.spent("ann") == 0.5
    with pytest.raises(ParameterError, match="records its totals in rho, got 'epsilon'"):
        ledgers.adopt_unit("epsilon")
    with pytest.raises(PrivacyError, match=r"totals in rho .* counts epsilon"):
        BudgetLedger(cap=2.0, store=ledgers)
