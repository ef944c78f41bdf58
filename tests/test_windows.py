"""Budgets per period: the window spec, the pure decision, the ledger's bad input, and the
accounting of a device across windows (the stores' contract: tests/test_windows_stores.py)."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from zoneinfo import ZoneInfo

import pytest

from _window_contract import Clock
from deniable.accounting import (
    BudgetWindow,
    Charge,
    PrivacyAccountant,
    RandomizedResponse,
    WindowedLedger,
    decide_charge,
    window_account,
)
from deniable.exceptions import ParameterError, ParameterTypeError, PrivacyError

DAY = 86400.0


def ts(*args: int, tz: str = "UTC") -> float:
    return datetime(*args, tzinfo=ZoneInfo(tz)).timestamp()  # type: ignore[misc]


# --------------------------------------------------------------------------- the spec


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"kind": "month", "epsilon": 1.0}, ParameterError, r"`kind` must be one of 'day', "),
        ({"kind": "day", "epsilon": -1.0}, ParameterError, r"`epsilon` .* \(0, inf\), got -1.0"),
        ({"kind": "day", "epsilon": 0.0}, ParameterError, r"`epsilon` .* got 0.0"),
        ({"kind": "day", "epsilon": math.inf}, ParameterError, r"`epsilon` .* got inf"),
        ({"kind": "day", "epsilon": "1"}, ParameterTypeError, "`epsilon`"),
        ({"kind": "day", "epsilon": 1.0, "delta": 1.0}, ParameterError, r"`delta` .* \[0, 1\)"),
        ({"kind": "rolling", "epsilon": 1.0, "length": 0}, ParameterError, r"`length` .* got 0"),
        (
            {"kind": "rolling", "epsilon": 1.0, "length": timedelta(seconds=-5)},
            ParameterError,
            r"`length` .* got -5.0",
        ),
        ({"kind": "rolling", "epsilon": 1.0}, ParameterTypeError, r"`length` .* got NoneType"),
        ({"kind": "day", "epsilon": 1.0, "length": 60}, ParameterError, "rolling windows only"),
        ({"kind": "day", "epsilon": 1.0, "tz": "Mars/Olympus"}, ParameterError, "`tz` must be"),
        (
            {"kind": "rolling", "epsilon": 1.0, "length": 60, "tz": "Europe/Paris"},
            ParameterError,
            "calendar windows only",
        ),
    ],
)
def test_bad_specs_name_the_parameter(kwargs: dict, error: type, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(error, match=message):
        BudgetWindow(**kwargs)


def test_a_spec_round_trips_through_its_key() -> None:
    for w in (
        BudgetWindow("day", 0.1 + 0.2, tz="Europe/Paris"),
        BudgetWindow("week", 1.0, delta=1e-7),
        BudgetWindow("rolling", 2.0, length=timedelta(hours=36)),
    ):
        assert BudgetWindow.from_key(w.key) == w


def test_calendar_windows_in_a_zone() -> None:
    # 23:30 UTC on Saturday 28 November 2026 is 00:30 on Sunday 29 in Paris (UTC+1)
    t = ts(2026, 11, 28, 23, 30)
    assert BudgetWindow("day", 1.0).window_of(t) == (ts(2026, 11, 28), ts(2026, 11, 29))
    paris = BudgetWindow("day", 1.0, tz="Europe/Paris")
    assert paris.window_of(t) == (
        ts(2026, 11, 29, tz="Europe/Paris"),
        ts(2026, 11, 30, tz="Europe/Paris"),
    )
    # ISO weeks begin on Monday: 23 November 2026
    assert BudgetWindow("week", 1.0).window_of(t) == (ts(2026, 11, 23), ts(2026, 11, 30))
    # the day daylight saving time ends in Paris has 25 hours
    lo, hi = paris.window_of(ts(2026, 10, 25, 12, tz="Europe/Paris"))
    assert hi - lo == 25 * 3600


def test_a_calendar_day_lets_two_caps_through_across_midnight_a_rolling_day_does_not() -> None:
    before, after = ts(2026, 11, 28, 23, 59), ts(2026, 11, 29, 0, 1)
    day = BudgetWindow("day", 1.0)
    rolling = BudgetWindow("rolling", 1.0, length=DAY)
    assert decide_charge([day], [Charge(before, 1.0)], Charge(after, 1.0)) is None
    assert decide_charge([rolling], [Charge(before, 1.0)], Charge(after, 1.0)) is not None


def test_every_recorded_spec_must_admit() -> None:
    old, new = BudgetWindow("day", 0.5), BudgetWindow("day", 2.0)
    assert decide_charge([new], [Charge(0.0, 0.5)], Charge(1.0, 0.5)) is None
    assert "cap epsilon 0.5 per day" in str(
        decide_charge([old, new], [Charge(0.0, 0.5)], Charge(1.0, 0.5))
    )


def test_deltas_are_capped_too() -> None:
    w = BudgetWindow("day", 10.0, delta=1e-6)
    assert decide_charge([w], [Charge(0.0, 1.0, 5e-7)], Charge(1.0, 1.0, 5e-7)) is None
    refused = decide_charge([w], [Charge(0.0, 1.0, 5e-7)], Charge(1.0, 1.0, 6e-7))
    assert refused is not None and "delta 6e-07" in refused
    # a window without delta refuses every charge with one
    assert decide_charge([BudgetWindow("day", 1.0)], [], Charge(0.0, 0.1, 1e-9)) is not None


# --------------------------------------------------------------------------- the ledger


def test_bad_charges_are_refused_with_nothing_charged() -> None:
    ledger = WindowedLedger(BudgetWindow("day", 1.0), clock=Clock())
    with pytest.raises(ParameterError, match="`epsilon`"):
        ledger.charge("d", -0.5)
    with pytest.raises(PrivacyError, match="epsilon inf can reveal"):
        ledger.charge("d", math.inf)
    with pytest.raises(ParameterError, match="`reports`"):
        ledger.charge("d", 0.1, reports=0)
    with pytest.raises(ParameterError, match=r"`delta` must be in \[0, 1\)"):
        ledger.charge("d", 0.1, delta=-1e-9)
    with pytest.raises(PrivacyError, match="delta"):
        ledger.charge("d", 0.1, delta=1e-9)  # the window has no delta
    with pytest.raises(ParameterTypeError, match="`device`"):
        ledger.charge(1.5, 0.1)
    with pytest.raises(ParameterTypeError, match="`device`"):
        ledger.charge(True, 0.1)
    with pytest.raises(ParameterError, match="`device`"):
        ledger.charge("", 0.1)
    assert ledger.store.charges("d") == []
    assert ledger.store.windows() == []


def test_naive_datetimes_are_refused() -> None:
    naive = WindowedLedger(BudgetWindow("day", 1.0), clock=lambda: datetime(2026, 11, 28))
    with pytest.raises(ParameterError, match="`clock\\(\\)` must be a timezone-aware datetime"):
        naive.charge("d", 0.1)
    ledger = WindowedLedger(BudgetWindow("day", 1.0), clock=Clock())
    with pytest.raises(ParameterError, match="`at` must be a timezone-aware datetime"):
        ledger.spent("d", at=datetime(2026, 11, 28))
    with pytest.raises(ParameterTypeError, match="`at`"):
        ledger.remaining("d", at=1_700_000_000)
    with pytest.raises(ParameterTypeError, match="`window`"):
        WindowedLedger("day")  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match="`clock`"):
        WindowedLedger(BudgetWindow("day", 1.0), clock=5)  # type: ignore[arg-type]


def test_several_reports_cost_their_sum_rounded_up() -> None:
    ledger = WindowedLedger(BudgetWindow("day", 0.3), clock=Clock())
    # three reports of the double 0.1 cost more than the double 0.3: refused, not rounded
    with pytest.raises(PrivacyError):
        ledger.charge("d", 0.1, reports=3)
    ledger.charge("d", 0.125, reports=2)
    assert ledger.spent("d") == 0.25


def test_spent_and_remaining_at_a_stated_time() -> None:
    clock = Clock(datetime(2026, 11, 28, 12, tzinfo=UTC))
    ledger = WindowedLedger(BudgetWindow("day", 1.0), clock=clock)
    ledger.charge("d", 0.75)
    yesterday = datetime(2026, 11, 27, 12, tzinfo=UTC)
    assert ledger.spent("d", at=yesterday) == 0.0
    assert ledger.remaining("d", at=yesterday) == 1.0
    assert ledger.remaining("d") == 0.25


# --------------------------------------------------------------------------- across windows


def test_the_account_across_windows() -> None:
    day = BudgetWindow("day", 1.0)
    charges = [Charge(0.0, 0.5), Charge(60.0, 0.5), Charge(DAY, 1.0), Charge(5 * DAY, 1.0)]
    acct = window_account(day, charges)
    assert acct.n_windows == 3
    assert [(w.start, w.end, w.epsilon, w.charges) for w in acct.windows] == [
        (0.0, DAY, 1.0, 2), (DAY, 2 * DAY, 1.0, 1), (5 * DAY, 6 * DAY, 1.0, 1)
    ]  # fmt: skip
    assert acct.basic_epsilon == 3.0 and acct.basic_delta == 0.0
    # the tight composition of the charges: two of 0.5 and two of 1, as randomized
    # response events (the worst case of an epsilon-DP mechanism), by another route
    rr = PrivacyAccountant([RandomizedResponse(0.5, count=2), RandomizedResponse(1.0, count=2)])
    assert acct.epsilon(1e-6) == pytest.approx(rr.epsilon(1e-6), rel=1e-9)
    assert acct.epsilon(1e-6) < acct.basic_epsilon
    assert acct.epsilon(1e-6, method="basic") == 3.0
    # T = 3 windows each at the cap: 3 uses of a 1-DP mechanism
    cap = PrivacyAccountant([RandomizedResponse(1.0, count=3)])
    assert acct.bound(1e-6) == pytest.approx(cap.epsilon(1e-6), rel=1e-9)
    assert acct.epsilon(1e-6) <= acct.bound(1e-6) <= 3.0
    with pytest.raises(ParameterError, match="`method`"):
        acct.epsilon(1e-6, method="magic")


def test_the_account_of_approximate_charges_and_rolling_tiles() -> None:
    rolling = BudgetWindow("rolling", 1.0, delta=1e-6, length=100.0)
    charges = [Charge(0.0, 0.5, 2e-7), Charge(99.0, 0.5, 2e-7), Charge(100.0, 0.25, 1e-7)]
    acct = window_account(rolling, charges)
    # tiles [0, 100) and [100, 200): each inside one rolling window, so under the cap
    assert [(w.start, w.epsilon, w.charges) for w in acct.windows] == [
        (0.0, 1.0, 2),
        (100.0, 0.25, 1),
    ]
    assert acct.basic_epsilon == 1.25
    assert acct.basic_delta == pytest.approx(5e-7, rel=1e-12)
    assert acct.basic_delta >= 2e-7 + 2e-7 + 1e-7
    assert acct.epsilon(1e-5) <= acct.basic_epsilon
    assert window_account(rolling, []).n_windows == 0
    assert window_account(rolling, []).bound(1e-6) == 0.0


def test_the_ledger_accounts_its_device() -> None:
    clock = Clock()
    ledger = WindowedLedger(BudgetWindow("day", 1.0), clock=clock)
    for _ in range(4):
        ledger.charge("d", 1.0)
        clock.move(days=1)
    acct = ledger.account("d")
    assert acct.n_windows == 4 and acct.basic_epsilon == 4.0
    assert ledger.account("other").n_windows == 0


def test_rolling_windows_are_exact_at_their_edge() -> None:
    # two charges of 0.75 under a cap of 1 per rolling `length`: refused exactly when the
    # second comes less than `length` after the first, decided on the exact rationals of
    # the doubles (the float `t - length` rounds across the edge in about 1 pair in 14 here)
    rng = random.Random(20261128)
    for _ in range(2000):
        first, length = rng.uniform(1.7e9, 1.9e9), rng.uniform(1.0, 1e6)
        second = first + length
        for _ in range(rng.randint(0, 3)):
            second = math.nextafter(second, rng.choice([-math.inf, math.inf]))
        w = BudgetWindow("rolling", 1.0, length=length)
        closer = Fraction(second) - Fraction(first) < Fraction(length)
        refused = decide_charge([w], [Charge(first, 0.75)], Charge(second, 0.75)) is not None
        assert refused == closer, (first, second, length)
        # and the other way round: the later charge first (a lagging clock)
        back = decide_charge([w], [Charge(second, 0.75)], Charge(first, 0.75)) is not None
        assert back == closer, (first, second, length)
        acct = window_account(w, [Charge(first, 0.75), Charge(second, 0.75)])
        assert acct.n_windows == (1 if closer else 2)


@pytest.mark.parametrize(
    "tz", ["UTC", "Europe/Paris", "America/Havana", "America/Santiago", "Australia/Lord_Howe"]
)
def test_every_time_lies_in_its_calendar_window(tz: str) -> None:
    # zones whose clocks change at midnight (Havana, Santiago) or by half an hour (Lord Howe)
    rng = random.Random(tz)  # a str seed is hashed deterministically (sha512)
    day, week = BudgetWindow("day", 1.0, tz=tz), BudgetWindow("week", 1.0, tz=tz)
    for _ in range(3000):
        t = rng.uniform(ts(2020, 1, 1), ts(2030, 1, 1))
        lo, hi = day.window_of(t)
        assert lo <= t < hi and 22 * 3600 <= hi - lo <= 26 * 3600
        wlo, whi = week.window_of(t)
        assert wlo <= lo and hi <= whi and datetime.fromtimestamp(wlo, ZoneInfo(tz)).weekday() == 0
    # the edges themselves: a window's end is the next window's start
    assert day.window_of(hi)[0] == hi


def test_a_charge_is_checked() -> None:
    with pytest.raises(ParameterError, match="`epsilon`"):
        Charge(0.0, -1.0)
    with pytest.raises(ParameterError, match="`at` must be a finite"):
        Charge(math.inf, 1.0)
    with pytest.raises(ParameterError, match="`delta` of a charge"):
        Charge(0.0, 1.0, 1.5)
