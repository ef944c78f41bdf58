"""The SQL ledger and memo stores pass the store contract (tests/_store_contract.py) on
SQLite and PostgreSQL, threads included; each store is a fresh migrated database."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import pytest

from _store_contract import LedgerStoreContract, MemoStoreContract
from deniable.accounting import BudgetLedger
from deniable.designs import Warner
from deniable.exceptions import PrivacyError
from deniable.mechanisms import MemoizedRandomizer
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


def test_the_memo_and_the_ledger_commit_together(
    fresh_db: Callable[[], str], _engines: list[SqlLedgerStore | SqlMemoStore]
) -> None:
    # a memoized round charging a ledger in the same database: the memo store's create()
    # charges the ledger store inside the memo's transaction (on SQLite a second
    # transaction would wait for the first's write lock until the busy timeout)
    url = fresh_db()
    memo_store, ledger_store = SqlMemoStore(url), SqlLedgerStore(url)
    _engines += [memo_store, ledger_store]
    memo = MemoizedRandomizer(Warner(0.75), store=memo_store)
    ledger = BudgetLedger(cap=1.5, store=ledger_store)
    who = ["ann", 10**12, "bob"]
    first = memo.randomize(who, [1, 0, 1], question="q", rng=1, ledger=ledger)
    again = memo.randomize(who[::-1], [0, 1, 0], question="q", rng=2, ledger=ledger)
    assert again[::-1].tolist() == first.tolist()
    assert ledger.spent(who).tolist() == [math.log(3)] * 3
    # a charge the ledger refuses stores no report, and charges nobody
    wide = MemoizedRandomizer(Warner(0.75), store=memo_store)
    with pytest.raises(PrivacyError):
        wide.randomize(["cy", "ann"], [1, 1], question="r", rng=3, ledger=ledger)
    assert wide.memoized("r", ["cy", "ann"]).tolist() == [False, False]
    assert ledger.spent(["cy", "ann"]).tolist() == [0.0, math.log(3)]
    assert set(ledger_store.questions()) == {"q"}
