"""The SQL ledger and memo stores pass the store contract (tests/_store_contract.py) on
SQLite and PostgreSQL, threads included; each store is a fresh migrated database."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from _store_contract import LedgerStoreContract, MemoStoreContract
from deniable.accounting import BudgetLedger, ZCDPComposition
from deniable.designs import Warner
from deniable.exceptions import PrivacyError
from deniable.mechanisms import MemoizedRandomizer
from deniable.service.storage import SqlLedgerStore, SqlMemoStore


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


# a process that spends from a pure-epsilon ledger on the database, then exits
_PURE_SPENDER = """
import sys
from deniable.accounting import BudgetLedger
from deniable.service.storage import SqlLedgerStore
store = SqlLedgerStore(sys.argv[1])
BudgetLedger(cap=2.0, store=store).spend(["ann"], "q", 0.5)
store.engine.dispose()
"""


def test_the_unit_of_a_sql_store_holds_across_processes_and_restarts(
    fresh_db: Callable[[], str],
) -> None:
    url = fresh_db()
    done = subprocess.run(
        [sys.executable, "-c", _PURE_SPENDER, url], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    for _ in range(2):  # this process, then "restarted" with a new engine
        store = SqlLedgerStore(url)
        try:
            with pytest.raises(PrivacyError, match=r"totals in epsilon .* counts rho"):
                BudgetLedger(cap=2.0, store=store, composition=ZCDPComposition())
            assert BudgetLedger(cap=2.0, store=store).spent("ann") == 0.5
        finally:
            store.engine.dispose()
