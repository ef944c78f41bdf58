"""Fixtures of the service tests: the database backends.

* ``pg_server`` (session): a throwaway PostgreSQL server (tests/service/_pg.py, the code
  ``scripts/pg`` runs).  Without PostgreSQL binaries the tests that need it FAIL (never
  skip): under CI always, and locally with a message saying to run ``scripts/test``, which
  installs them.
* ``db_url`` (parametrized ``sqlite`` / ``postgres``): the URL of a fresh, empty database
  (a new SQLite file in ``tmp_path``, or a new database on the session's server).
* ``fresh_db``: a factory of URLs of fresh databases already migrated (copies of a migrated
  template: fast enough to call once per trial).
* ``store``: a migrated :class:`~deniable.service.storage.ServiceStore` on ``db_url`` with
  the demo survey loaded.
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _pg import PgServer, PgUnavailable, start

from deniable.service.storage import ServiceStore
from deniable.survey import demo_survey

BACKENDS = ["sqlite", "postgres"]
_COUNTER = itertools.count()
TEMPLATE = "deniable_template"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    try:
        server = start(fast=True)
    except PgUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


def _create_database(server: PgServer, template: str | None = None) -> str:
    import psycopg

    name = f"t{next(_COUNTER)}"
    with psycopg.connect(server.url, autocommit=True) as conn:
        extra = f" TEMPLATE {template} STRATEGY FILE_COPY" if template else ""
        conn.execute(f"CREATE DATABASE {name}{extra}")  # type: ignore[arg-type]
    return server.url_of(name)


def _drop_databases(server: PgServer, urls: list[str]) -> None:
    """Drop the databases a test made (closing what still connects to them)."""
    import psycopg

    with psycopg.connect(server.url, autocommit=True) as conn:
        for url in urls:
            name = url.rsplit("/", 1)[1]
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def pg_template(pg_server: PgServer) -> str:
    """The name of a migrated template database on the session's server."""
    import psycopg

    with psycopg.connect(pg_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {TEMPLATE}")  # type: ignore[arg-type]
    store = ServiceStore(pg_server.url_of(TEMPLATE))
    store.migrate()
    store.close()
    return TEMPLATE


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite database file to copy."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    store = ServiceStore(f"sqlite:///{path}")
    store.migrate()
    store.close()
    return path


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path}/deniable.db"
        return
    server = request.getfixturevalue("pg_server")
    url = _create_database(server)
    yield url
    _drop_databases(server, [url])


@pytest.fixture
def fresh_db(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[], str]]:
    if backend == "sqlite":
        template = request.getfixturevalue("sqlite_template")

        def make_sqlite() -> str:
            path = tmp_path / f"db{next(_COUNTER)}.db"
            shutil.copyfile(template, path)
            return f"sqlite:///{path}"

        yield make_sqlite
        return
    server = request.getfixturevalue("pg_server")
    template_name = request.getfixturevalue("pg_template")
    made: list[str] = []

    def make_pg() -> str:
        made.append(_create_database(server, template_name))
        return made[-1]

    yield make_pg
    _drop_databases(server, made)


@pytest.fixture
def store(db_url: str) -> Iterator[ServiceStore]:
    s = ServiceStore(db_url)
    s.migrate()
    s.load_survey(demo_survey())
    try:
        yield s
    finally:
        s.close()
