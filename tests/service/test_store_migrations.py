"""Migrations: on an empty database ``migrate`` creates the schema of
:mod:`deniable.service.models` (Alembic's ``compare_metadata`` finds no difference), and
migrating again changes nothing; on SQLite the connections are set up for a server."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from deniable.exceptions import ParameterError
from deniable.service.db import make_engine
from deniable.service.models import metadata
from deniable.service.storage import ServiceStore


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
    assert version == "0002_survey_closed"
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
