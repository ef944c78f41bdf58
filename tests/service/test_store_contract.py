"""The SQL ledger and memo stores pass the store contract (tests/_store_contract.py) on
SQLite and PostgreSQL, threads included; each store is a fresh migrated database."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from _store_contract import LedgerStoreContract, MemoStoreContract
from deniable.service.stores import SqlLedgerStore, SqlMemoStore


@pytest.fixture
def _engines() -> Iterator[list[SqlLedgerStore | SqlMemoStore]]:
    made: list[SqlLedgerStore | SqlMemoStore] = []
    yield made
    for s in made:
        s.engine.dispose()


class TestSqlLedgerStore(LedgerStoreContract):
    @pytest.fixture
    def make_store(  # type: ignore[override]
        self, fresh_db: Callable[[], str], _engines: list[SqlLedgerStore | SqlMemoStore]
    ) -> Callable[[], SqlLedgerStore]:
        def make() -> SqlLedgerStore:
            store = SqlLedgerStore(fresh_db())
            _engines.append(store)
            return store

        return make


class TestSqlMemoStore(MemoStoreContract):
    @pytest.fixture
    def make_store(  # type: ignore[override]
        self, fresh_db: Callable[[], str], _engines: list[SqlLedgerStore | SqlMemoStore]
    ) -> Callable[[], SqlMemoStore]:
        def make() -> SqlMemoStore:
            store = SqlMemoStore(fresh_db())
            _engines.append(store)
            return store

        return make
