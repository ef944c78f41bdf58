"""The contract every :class:`~deniable.accounting.WindowStore` keeps, run on the in-memory
store (tests/test_windows_stores.py) and on the SQL store on SQLite and PostgreSQL
(tests/service/test_windows_sql.py).  A subclass provides the fixture ``make_store`` (a
factory of fresh, empty stores)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from deniable.accounting import BudgetWindow, WindowedLedger, WindowStore
from deniable.exceptions import PrivacyError

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


class Clock:
    """A clock the test moves by hand (no sleeps)."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def move(self, **kw: float) -> None:
        self.now += timedelta(**kw)


class WindowStoreContract:
    make_store: Callable[[], WindowStore]

    @pytest.fixture
    def make_store(self) -> Callable[[], WindowStore]:  # pragma: no cover - overridden
        raise NotImplementedError

    def test_the_charge_that_reaches_the_cap_passes_the_next_tiny_one_is_refused(
        self, make_store: Callable[[], Any]
    ) -> None:
        clock = Clock()
        ledger = WindowedLedger(BudgetWindow("day", 1.0), store=make_store(), clock=clock)
        for eps in (0.5, 0.25, 0.25):  # exact in binary: the total reaches 1.0 exactly
            ledger.charge("d", eps)
        assert ledger.spent("d") == 1.0
        assert ledger.remaining("d") == 0.0
        for tiny in (1e-12, 5e-324):
            with pytest.raises(PrivacyError, match=r"device 'd': epsilon 1 already spent"):
                ledger.charge("d", tiny)
        ledger.charge("d", 0.0)  # a free report costs nothing and is admitted
        assert ledger.spent("d") == 1.0

    def test_a_sum_that_rounds_down_to_the_cap_is_refused(
        self, make_store: Callable[[], Any]
    ) -> None:
        # 1.0 + 2**-53 rounds to 1.0 in doubles; the exact sum is past the cap
        ledger = WindowedLedger(BudgetWindow("day", 1.0), store=make_store(), clock=Clock())
        ledger.charge(7, 1.0)
        with pytest.raises(PrivacyError):
            ledger.charge(7, 2.0**-53)
        assert ledger.spent(7) == 1.0

    def test_concurrent_charges_never_pass_the_cap(self, make_store: Callable[[], Any]) -> None:
        # 8 threads try 24 charges of 1/64 each (192) under a cap of 1: exactly 64 pass
        store = make_store()
        ledger = WindowedLedger(BudgetWindow("day", 1.0), store=store, clock=Clock())
        passed: list[int] = []

        def work() -> None:
            n = 0
            for _ in range(24):
                try:
                    ledger.charge("hot", 1 / 64)
                    n += 1
                except PrivacyError:
                    pass
            passed.append(n)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(passed) == 64
        assert ledger.spent("hot") == 1.0
        assert len(store.charges("hot")) == 64

    def test_windows_roll_over_with_the_clock(self, make_store: Callable[[], Any]) -> None:
        clock = Clock(datetime(2026, 11, 29, 23, 59, 59, tzinfo=UTC))  # a Sunday
        store = make_store()
        day = WindowedLedger(BudgetWindow("day", 1.0), store=store, clock=clock)
        day.charge("d", 1.0)
        with pytest.raises(PrivacyError, match=r"day 2026-11-29 \(UTC\)"):
            day.charge("d", 0.5)
        clock.move(seconds=1)  # Monday 00:00:00: a new day
        day.charge("d", 1.0)
        assert day.spent("d") == 1.0

    def test_a_rolling_window_holds_across_a_calendar_boundary(
        self, make_store: Callable[[], Any]
    ) -> None:
        clock = Clock(datetime(2026, 11, 28, 23, 59, tzinfo=UTC))
        ledger = WindowedLedger(
            BudgetWindow("rolling", 1.0, length=timedelta(days=1)), store=make_store(), clock=clock
        )
        ledger.charge("d", 1.0)
        clock.move(minutes=2)  # a new calendar day; the same rolling window
        with pytest.raises(PrivacyError, match="rolling window of 86400 s"):
            ledger.charge("d", 0.125)
        clock.move(hours=23, minutes=57, seconds=59)  # 1 s short of a day after the charge
        with pytest.raises(PrivacyError):
            ledger.charge("d", 0.125)
        clock.move(seconds=1)  # exactly one day later: (t - 1 day, t] no longer holds it
        ledger.charge("d", 1.0)

    def test_a_clock_moved_back_cannot_pass_a_later_window(
        self, make_store: Callable[[], Any]
    ) -> None:
        # another process's clock may lag: a charge dated before a later charge must fit
        # every rolling window containing it, including those ending after it
        clock = Clock()
        ledger = WindowedLedger(
            BudgetWindow("rolling", 1.0, length=100.0), store=make_store(), clock=clock
        )
        ledger.charge("d", 0.75)
        clock.move(seconds=-60)
        with pytest.raises(PrivacyError):
            ledger.charge("d", 0.5)
        clock.move(seconds=-50)  # 110 s before the charge: no window of 100 s holds both
        ledger.charge("d", 0.5)

    def test_a_changed_spec_never_resets_what_was_spent(
        self, make_store: Callable[[], Any]
    ) -> None:
        store, clock = make_store(), Clock()
        first = WindowedLedger(BudgetWindow("day", 1.0), store=store, clock=clock)
        first.charge("d", 0.75)
        # a looser cap on the same store: the first spec still binds
        looser = WindowedLedger(BudgetWindow("day", 2.0), store=store, clock=clock)
        assert looser.spent("d") == 0.75
        with pytest.raises(PrivacyError, match=r"cap epsilon 1 per day \(UTC\)"):
            looser.charge("d", 0.5)
        assert looser.remaining("d") == 0.25
        looser.charge("d", 0.25)  # admitted under both: the looser spec is recorded too
        assert [w.epsilon for w in store.windows()] == [1.0, 2.0]
        # another kind and length, the next day: the charges made under the old specs
        # count in the new rolling week
        clock.move(days=1)
        weekly = WindowedLedger(
            BudgetWindow("rolling", 0.5, length=timedelta(days=7)), store=store, clock=clock
        )
        assert weekly.spent("d") == 1.0
        assert weekly.remaining("d") == 0.0
        with pytest.raises(PrivacyError, match="rolling window"):
            weekly.charge("d", 0.125)
        # a refused spec binds nothing and no refused charge is stored
        assert [w.epsilon for w in store.windows()] == [1.0, 2.0]
        assert [c.epsilon for c in store.charges("d")] == [0.75, 0.25]

    def test_two_ledgers_on_one_store_share_every_charge(
        self, make_store: Callable[[], Any]
    ) -> None:
        store, clock = make_store(), Clock()
        spec = BudgetWindow("week", 1.0, tz="Europe/Paris")
        a = WindowedLedger(spec, store=store, clock=clock)
        b = WindowedLedger(spec, store=store, clock=clock)
        a.charge(10**12, 0.5)
        b.charge(10**12, 0.5)
        with pytest.raises(PrivacyError, match=r"week 2026-W48 \(Europe/Paris\)"):
            a.charge(10**12, 0.5)
        assert a.spent(10**12) == b.spent(10**12) == 1.0
        assert a.account(10**12).basic_epsilon == 1.0
        # other devices are untouched; 7 and "7" are two devices
        b.charge(7, 1.0)
        b.charge("7", 1.0)
        assert a.remaining(8) == 1.0
