"""Per-device budgets per period: :class:`WindowedLedger`.

A facade over a :class:`~deniable.accounting.WindowStore` (in memory by default, SQL in the
service), with a clock.  Every charge is made *now*, at the clock's time: a report released
today counts in today's window, never in a past window with budget left.  The clock is
injected (a callable returning a timezone-aware datetime), so tests move time without
sleeping.

This module is pure accounting: it never imports a mechanism.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from deniable.accounting._window_account import WindowAccount, window_account
from deniable.accounting._window_stores import (
    InMemoryWindowStore,
    WindowRequest,
    WindowStore,
    device_key,
)
from deniable.accounting._windows import (
    BudgetWindow,
    Charge,
    charge_cost,
    decide_charge,
    epoch_seconds,
    window_totals,
)
from deniable.common import validation as v
from deniable.exceptions import ParameterError, ParameterTypeError, PrivacyError

__all__ = ["WindowedLedger"]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class WindowedLedger:
    """At most ``window.epsilon`` (and ``window.delta``) per device per window.

    Parameters
    ----------
    window : BudgetWindow
        The spec: a calendar day or ISO week in a stated zone, or a rolling length.
    store : WindowStore, optional
        Where the charges live (default a new :class:`InMemoryWindowStore`).  A store keeps
        every spec it has enforced, and a charge must fit under all of them: a ledger with a
        changed spec on a store with charges adds a constraint, never resets a budget.
    clock : callable, optional
        Returns the current time as a timezone-aware datetime (default
        ``datetime.now(timezone.utc)``).

    Notes
    -----
    Within a window, charges add by basic composition, rounded upward, and a charge is
    admitted while the total stays ``<= cap``.  Across windows the device's loss is the
    composition over the windows it took part in (:meth:`account`): a per-window cap
    bounds the loss per window only.

    Examples
    --------
    >>> from datetime import datetime, timedelta, timezone
    >>> now = [datetime(2026, 11, 28, 23, 0, tzinfo=timezone.utc)]
    >>> ledger = WindowedLedger(BudgetWindow("day", 1.0), clock=lambda: now[0])
    >>> ledger.charge("dev-1", 0.5, reports=2)      # two reports of epsilon 0.5: the cap
    >>> ledger.charge("dev-1", 0.25)
    Traceback (most recent call last):
    ...
    deniable.exceptions.PrivacyError: device 'dev-1': epsilon 1 already spent in day
    2026-11-28 (UTC) under the cap epsilon 1 per day (UTC); a charge of epsilon 0.25 would
    exceed it; nothing was charged.
    >>> now[0] += timedelta(hours=2)                # the next day
    >>> ledger.remaining("dev-1")
    1.0
    """

    __slots__ = ("_clock", "_store", "_window")

    def __init__(
        self,
        window: BudgetWindow,
        *,
        store: WindowStore | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        if not isinstance(window, BudgetWindow):
            raise ParameterTypeError(
                f"`window` must be a BudgetWindow (e.g. BudgetWindow('day', 1.0)), got "
                f"{type(window).__name__} {window!r}."
            )
        v.instance_or_none(
            "store", store, WindowStore, "a WindowStore (e.g. InMemoryWindowStore())"
        )
        if clock is not None and not callable(clock):
            raise ParameterTypeError(
                f"`clock` must be a callable returning an aware datetime, got {clock!r}."
            )
        self._window = window
        self._store: WindowStore = InMemoryWindowStore() if store is None else store
        self._clock = _utc_now if clock is None else clock

    def __repr__(self) -> str:
        return f"WindowedLedger({self._window.describe()}, store={self._store!r})"

    @property
    def window(self) -> BudgetWindow:
        """This ledger's spec."""
        return self._window

    @property
    def store(self) -> WindowStore:
        """Where the charges live."""
        return self._store

    def now(self) -> float:
        """The clock's time, in seconds since the epoch."""
        return epoch_seconds("clock()", self._clock())

    def _at(self, at: Any) -> float:
        return self.now() if at is None else epoch_seconds("at", at)

    def charge(self, device: Any, epsilon: float, *, delta: float = 0.0, reports: int = 1) -> None:
        """Charge ``device`` for ``reports`` releases of an ``epsilon``-LDP (or
        ``(epsilon, delta)``) report now: ``reports * epsilon`` (rounded up) and
        ``reports * delta``, or refuse with :class:`~deniable.exceptions.PrivacyError`
        (nothing charged) if that would take any window containing now past its cap."""
        key = device_key(device)
        eps = v.positive("epsilon", epsilon, allow_zero=True, allow_inf=True)
        dlt = v.real("delta", delta)
        if not 0 <= dlt < 1:
            raise ParameterError(f"`delta` must be in [0, 1), got {delta!r}.")
        n = v.integer("reports", reports, minimum=1)
        if eps == math.inf:
            raise PrivacyError(
                f"device {key!r}: a report of epsilon inf can reveal the true value; no window "
                "cap admits it; nothing was charged."
            )
        cost = Charge(self.now(), charge_cost(eps, n), min(charge_cost(dlt, n), 1.0))
        refused = self._store.charge(key, WindowRequest(self._window, cost))
        if refused is not None:
            raise PrivacyError(f"device {key!r}: {refused}; nothing was charged.")

    def spent(self, device: Any, *, at: Any = None) -> float:
        """Epsilon charged to ``device`` in this ledger's window containing ``at`` (default
        now; for a rolling window, the window ending at ``at``)."""
        charges = self._store.charges(device_key(device))
        # the first candidate window is the one containing ``at`` (ending at it, rolling)
        return window_totals(self._window, charges, self._at(at))[0][0]

    def remaining(self, device: Any, *, at: Any = None) -> float:
        """The largest epsilon a charge of ``device`` at ``at`` (default now) would be
        admitted with, under every spec the store enforces; 0 if none."""
        key = device_key(device)
        t = self._at(at)
        charges = self._store.charges(key)
        specs = self._store.windows()
        if self._window not in specs:
            specs.append(self._window)
        room = min(w.epsilon - eps for w in specs for eps, _ in window_totals(w, charges, t))
        room = max(room, 0.0)
        # rounded down until a charge of exactly ``room`` is admitted (a few doubles at most:
        # the upward sums exceed the exact ones by one double each)
        for _ in range(64):
            if room <= 0 or decide_charge(specs, charges, Charge(t, room)) is None:
                return room
            room = max(math.nextafter(room, 0.0), 0.0)
        return 0.0

    def account(self, device: Any) -> WindowAccount:
        """``device``'s loss across the windows it took part in (basic and tight
        composition: :class:`WindowAccount`)."""
        return window_account(self._window, self._store.charges(device_key(device)))
