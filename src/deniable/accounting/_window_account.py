"""The accounting of a device across budget windows: :class:`WindowAccount`.

A per-window cap bounds the privacy loss **per window only**.  A device that took part in
``T`` windows has released, over all of them, the composition of every charge it paid:

* by **basic composition** (Dwork & Roth 2014, Thm 3.14) its loss is at most the sum of its
  charges' epsilons and deltas (:attr:`WindowAccount.basic_epsilon`,
  :attr:`WindowAccount.basic_delta`), which is at most ``T * epsilon_cap`` (and
  ``T * delta_cap``) whatever it was charged;
* by the **tight composition** of the accounting package (:meth:`WindowAccount.epsilon`,
  through :class:`~deniable.accounting.PrivacyAccountant` and its accountants: ``optimal``
  is exact for charges whose epsilons share a lattice (Kairouz, Oh & Viswanath 2015,
  Thm 3.3), and a pessimistic privacy loss distribution otherwise), its loss at a stated
  ``delta`` is that of its charges composed as ``epsilon``-DP (or ``(epsilon, delta)``-DP)
  mechanisms;
* the worst case of ``T`` windows each spent to the cap (:meth:`WindowAccount.bound`) is
  the tight composition of ``T`` ``(epsilon_cap, delta_cap)``-DP mechanisms: each window's
  charges together are ``(epsilon_cap, delta_cap)``-DP by basic composition within it.

The windows a device took part in are its calendar windows holding a charge; for a rolling
window of length ``L``, the charges are cut into consecutive tiles ``[a, a + L)`` from its
first charge not yet covered (each tile lies within one rolling window, so it holds at most
the cap).

This module is pure accounting: it never imports a mechanism.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from deniable.accounting._accountant import COMPOSITION_METHODS, PrivacyAccountant
from deniable.accounting._event_tree import Event
from deniable.accounting._events import EpsilonDelta, PureEpsilon
from deniable.accounting._exact_sum import add_up
from deniable.accounting._windows import BudgetWindow, Charge, within
from deniable.common import validation as v

__all__ = ["WindowAccount", "WindowTotal", "window_account"]


@dataclass(frozen=True)
class WindowTotal:
    """One window a device took part in: ``[start, end)`` (seconds since the epoch), its
    charges' total ``epsilon`` and ``delta`` (rounded upward) and their number."""

    start: float
    end: float
    epsilon: float
    delta: float
    charges: int


def _events(charges: tuple[Charge, ...]) -> list[Event]:
    counts = Counter((c.epsilon, c.delta) for c in charges if c.epsilon > 0 or c.delta > 0)
    out: list[Event] = []
    for (eps, dlt), n in sorted(counts.items()):
        out.append(EpsilonDelta(eps, dlt, count=n) if dlt > 0 else PureEpsilon(eps, count=n))
    return out


@dataclass(frozen=True)
class WindowAccount:
    """A device's privacy loss across the windows of ``window`` it took part in (module
    docstring).

    >>> from deniable.accounting import BudgetWindow, Charge
    >>> day = BudgetWindow("day", 1.0)
    >>> acct = window_account(day, [Charge(0.0, 0.5), Charge(10.0, 0.5), Charge(86400.0, 1.0)])
    >>> acct.n_windows, acct.basic_epsilon
    (2, 2.0)
    >>> [w.epsilon for w in acct.windows]
    [1.0, 1.0]
    >>> acct.epsilon(1e-6) <= acct.basic_epsilon   # tight composition of the 3 charges
    True
    """

    window: BudgetWindow
    charges: tuple[Charge, ...]
    windows: tuple[WindowTotal, ...]

    @property
    def n_windows(self) -> int:
        """``T``: the number of windows the device took part in."""
        return len(self.windows)

    @property
    def basic_epsilon(self) -> float:
        """The sum of every charge's epsilon (rounded upward): the device's pure-DP loss by
        basic composition."""
        total = 0.0
        for w in self.windows:
            total = float(add_up(total, w.epsilon))
        return total

    @property
    def basic_delta(self) -> float:
        """The sum of every charge's delta (rounded upward), at most 1."""
        total = 0.0
        for w in self.windows:
            total = float(add_up(total, w.delta))
        return min(total, 1.0)

    def accountant(self) -> PrivacyAccountant:
        """The device's charges as privacy events (``PureEpsilon`` or ``EpsilonDelta``)."""
        return PrivacyAccountant(tuple(_events(self.charges)))

    def epsilon(self, delta: float, method: str = "optimal") -> float:
        """The device's loss at ``delta`` (in ``(0, 1)``) over every charge, by ``method``
        (one of ``COMPOSITION_METHODS``; ``"optimal"`` by default); never below the truth."""
        m = v.choice("method", method, COMPOSITION_METHODS)
        return self.accountant().epsilon(delta, m)

    def bound(self, delta: float, method: str = "optimal") -> float:
        """The loss at ``delta`` of ``n_windows`` windows each spent to the cap: the
        composition of ``T`` ``(epsilon_cap, delta_cap)``-DP mechanisms by ``method``."""
        m = v.choice("method", method, COMPOSITION_METHODS)
        if not self.windows:
            return 0.0
        w, n = self.window, self.n_windows
        event = (
            EpsilonDelta(w.epsilon, w.delta, count=n)
            if w.delta
            else PureEpsilon(w.epsilon, count=n)
        )
        return PrivacyAccountant((event,)).epsilon(delta, m)


def _grouped(
    window: BudgetWindow, charges: list[Charge]
) -> dict[tuple[float, float], list[Charge]]:
    """The charges (in time order) by the window they fall in: calendar windows, or greedy
    tiles ``[a, a + length)`` that each begin at the first charge not yet covered."""
    groups: dict[tuple[float, float], list[Charge]] = {}
    tile: tuple[float, float] | None = None
    for c in charges:
        if window.kind != "rolling":
            span = window.window_of(c.at)
        else:
            if tile is None or not within(tile[0], c.at, window.length):
                tile = (c.at, c.at + window.length)
            span = tile
        groups.setdefault(span, []).append(c)
    return groups


def window_account(window: BudgetWindow, charges: list[Charge]) -> WindowAccount:
    """The :class:`WindowAccount` of a device's ``charges`` under ``window``."""
    ordered = sorted(charges, key=lambda c: (c.at, c.epsilon, c.delta))
    totals: list[WindowTotal] = []
    for (lo, hi), group in sorted(_grouped(window, ordered).items()):
        eps = dlt = 0.0
        for c in group:
            eps, dlt = float(add_up(eps, c.epsilon)), float(add_up(dlt, c.delta))
        totals.append(WindowTotal(lo, hi, eps, dlt, len(group)))
    return WindowAccount(window, tuple(ordered), tuple(totals))
