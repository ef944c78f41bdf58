"""The SQL window store keeps the window store contract (tests/_window_contract.py) on
SQLite and PostgreSQL, threads included; and what only a database has: a new store object
on the same database (a restart) keeps every charge and spec, a refused charge leaves no
row, and another process's charges count."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa

from _window_contract import Clock, WindowStoreContract
from deniable.accounting import BudgetWindow, WindowedLedger
from deniable.exceptions import PrivacyError
from deniable.service.storage import SqlWindowStore


@pytest.fixture
def _engines() -> Iterator[list[SqlWindowStore]]:
    made: list[SqlWindowStore] = []
    yield made
    for s in made:
        s.engine.dispose()


class TestSqlWindowStore(WindowStoreContract):
    @pytest.fixture
    def make_store(  # type: ignore[override]
        self, fresh_db: Callable[[], str], _engines: list[SqlWindowStore]
    ) -> Callable[[], SqlWindowStore]:
        def make() -> SqlWindowStore:
            store = SqlWindowStore(fresh_db())
            _engines.append(store)
            return store

        return make


def test_a_restart_keeps_what_was_spent(
    fresh_db: Callable[[], str], _engines: list[SqlWindowStore]
) -> None:
    url, clock = fresh_db(), Clock()
    spec = BudgetWindow("rolling", 1.0, length=timedelta(hours=6))
    first = SqlWindowStore(url)
    _engines.append(first)
    WindowedLedger(spec, store=first, clock=clock).charge("d", 0.75)
    first.engine.dispose()
    again = SqlWindowStore(url)  # a new process would build exactly this
    _engines.append(again)
    ledger = WindowedLedger(BudgetWindow("day", 5.0), store=again, clock=clock)
    assert ledger.spent("d") == 0.75
    assert again.windows() == [spec]
    with pytest.raises(PrivacyError, match="rolling window of 21600 s"):
        ledger.charge("d", 0.5)


def test_a_refused_charge_leaves_no_row(
    fresh_db: Callable[[], str], _engines: list[SqlWindowStore]
) -> None:
    store = SqlWindowStore(fresh_db())
    _engines.append(store)
    ledger = WindowedLedger(BudgetWindow("day", 1.0), store=store, clock=Clock())
    with pytest.raises(PrivacyError):
        ledger.charge("new", 1.5)
    with store.engine.connect() as conn:
        counts = [
            conn.execute(sa.text(f"SELECT count(*) FROM {t}")).scalar_one()
            for t in ("window_spec", "window_device", "window_charge")
        ]
    assert counts == [0, 0, 0]


_CHILD = """
import sys
from datetime import datetime, timezone
from deniable.accounting import BudgetWindow, WindowedLedger
from deniable.exceptions import PrivacyError
from deniable.service.storage import SqlWindowStore
clock = lambda: datetime(2026, 11, 28, 12, tzinfo=timezone.utc)
ledger = WindowedLedger(BudgetWindow("day", 1.0), store=SqlWindowStore(sys.argv[1]), clock=clock)
n = 0
for _ in range(40):
    try:
        ledger.charge("shared", 1 / 32)
        n += 1
    except PrivacyError:
        pass
print(n)
"""


def test_processes_never_pass_the_cap_together(
    fresh_db: Callable[[], str], _engines: list[SqlWindowStore]
) -> None:
    # two processes try 40 charges of 1/32 each (80) under a cap of 1: exactly 32 pass
    url = fresh_db()
    procs = [
        subprocess.Popen([sys.executable, "-c", _CHILD, url], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(int(o) for o in outs) == 32
    store = SqlWindowStore(url)
    _engines.append(store)
    assert sum(c.epsilon for c in store.charges("shared")) == 1.0


def test_a_long_history_is_read_near_the_charge_only_and_nothing_is_missed(
    fresh_db: Callable[[], str], _engines: list[SqlWindowStore]
) -> None:
    # 60 days of charges, then a week in Paris whose Sunday is 25 hours long (the end of
    # daylight saving time on 25 October 2026): every charge of the week counts
    store = SqlWindowStore(fresh_db())
    _engines.append(store)
    clock = Clock(datetime(2026, 8, 20, 12, tzinfo=UTC))
    week = WindowedLedger(BudgetWindow("week", 1.0, tz="Europe/Paris"), store=store, clock=clock)
    while clock.now < datetime(2026, 10, 19, tzinfo=UTC):
        week.charge("d", 0.125)
        clock.move(days=1)
    paris = ZoneInfo("Europe/Paris")
    clock.now = datetime(2026, 10, 19, 0, 30, tzinfo=paris)  # Monday 00:30, Paris
    week.charge("d", 0.5)
    clock.now = datetime(2026, 10, 25, 23, 30, tzinfo=paris)  # Sunday 23:30, the 25th hour
    week.charge("d", 0.5)
    with pytest.raises(PrivacyError, match=r"week 2026-W43 \(Europe/Paris\)"):
        week.charge("d", 2.0**-20)
    clock.now = datetime(2026, 10, 26, 0, 0, tzinfo=paris)  # the next Monday
    week.charge("d", 1.0)
    assert len(store.charges("d")) == 60 + 3
