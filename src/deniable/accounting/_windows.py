"""Budgets per period: a window spec (:class:`BudgetWindow`) and the pure decision whether a
device may be charged now (:func:`decide_charge`).

A window spec says "at most ``epsilon`` (and ``delta``) per device per window", with three
kinds of window:

* ``"day"``: calendar days ``[00:00, 24:00)`` in the time zone ``tz`` (``"UTC"`` by
  default, or any IANA name, e.g. ``"Europe/Paris"``; a day of a daylight-saving change is
  23 or 25 hours long);
* ``"week"``: ISO weeks, Monday 00:00 to the next Monday 00:00 in ``tz``;
* ``"rolling"``: *every* half-open interval ``(s - length, s]`` of the stated ``length``,
  whatever ``s``: a charge at ``t`` counts against every such window that contains ``t``,
  so no two charges less than ``length`` apart may together exceed the cap (no ``2 eps``
  across a boundary, as a calendar window allows at 23:59 and 00:00).

Times are seconds since the Unix epoch (doubles, as the service stores them); the public
entry points take timezone-aware :class:`~datetime.datetime` values.

**Exactness.**  The sums are rounded upward (:func:`~deniable.accounting.add_up`, TwoSum),
never below the exact sum of the charges, and admission is ``sum <= cap``: a charge that
reaches the cap exactly passes, and the next one, however small, is refused.  For a rolling
window the check runs over every window that contains ``t``: the total of the window
ending at ``s`` changes only where a charge enters it, so its largest value over
``s in [t, t + length)`` is reached at ``s = t`` or at a charge time in ``(t, t + length)``
(charges may arrive out of order from several processes), and those are the candidates.

**Several specs.**  A store keeps every spec it has enforced, and a charge must fit under
all of them (:func:`decide_charge` takes the list): changing a stream's window (cap, kind,
length, zone) can only add a constraint, never reset what a device has spent.  Within one
window the charges compose by basic composition (Dwork & Roth 2014, Thm 3.14); across
windows see :mod:`deniable.accounting._window_account`.

This module is pure accounting: it never imports a mechanism.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from deniable.accounting._exact_sum import add_up
from deniable.common import validation as v
from deniable.exceptions import ParameterError, ParameterTypeError

__all__ = [
    "WINDOW_KINDS",
    "BudgetWindow",
    "Charge",
    "charge_cost",
    "decide_charge",
    "epoch_seconds",
    "window_totals",
    "within",
]

#: The kinds of budget window.
WINDOW_KINDS = ("day", "week", "rolling")


def epoch_seconds(name: str, when: Any) -> float:
    """A timezone-aware datetime as seconds since the epoch; a naive one is refused (its
    window would depend on the machine's zone)."""
    if not isinstance(when, datetime):
        raise ParameterTypeError(
            f"`{name}` must be a timezone-aware datetime, got {type(when).__name__} {when!r}."
        )
    if when.tzinfo is None or when.utcoffset() is None:
        raise ParameterError(
            f"`{name}` must be a timezone-aware datetime (e.g. datetime.now(timezone.utc)); a "
            f"naive datetime has no window, got {when!r}."
        )
    return when.timestamp()


def _fmt(x: float) -> str:
    return f"{x:.12g}"


@dataclass(frozen=True)
class BudgetWindow:
    """At most ``epsilon`` (and ``delta``) per device per window.

    Parameters
    ----------
    kind : str
        ``"day"`` (calendar day in ``tz``), ``"week"`` (ISO week, from Monday, in ``tz``) or
        ``"rolling"`` (every interval of ``length``).
    epsilon : float
        The cap on the epsilons charged to one device in one window, in ``(0, inf)``.
    delta : float
        The cap on the deltas, in ``[0, 1)``; ``0`` (the default) refuses every charge with
        a ``delta``.
    length : timedelta or float, optional
        The length of a rolling window (a timedelta or seconds, ``> 0``); only for
        ``"rolling"``.
    tz : str
        The zone of calendar windows (an IANA name); only ``"UTC"`` for ``"rolling"``.

    Examples
    --------
    >>> from datetime import timedelta
    >>> BudgetWindow("day", 1.0)
    BudgetWindow(kind='day', epsilon=1.0, delta=0.0, length=None, tz='UTC')
    >>> BudgetWindow("rolling", 2.0, length=timedelta(days=7)).length
    604800.0
    >>> BudgetWindow("month", 1.0)
    Traceback (most recent call last):
    ...
    deniable.exceptions.ParameterError: `kind` must be one of 'day', 'week', 'rolling', got 'month'.
    """

    kind: str
    epsilon: float
    delta: float = 0.0
    length: Any = None
    tz: str = "UTC"

    def __post_init__(self) -> None:
        kind = v.choice("kind", self.kind, WINDOW_KINDS)
        eps = v.real("epsilon", self.epsilon)
        if not 0 < eps < math.inf:
            raise ParameterError(
                f"`epsilon` (the cap per window) must be in (0, inf), got {self.epsilon!r}."
            )
        d = v.real("delta", self.delta)
        if not 0 <= d < 1:
            raise ParameterError(f"`delta` (the cap per window) must be in [0, 1), got {d!r}.")
        length = self.length
        if kind == "rolling":
            if isinstance(length, timedelta):
                length = length.total_seconds()
            elif length is None or isinstance(length, bool) or not isinstance(length, numbers.Real):
                raise ParameterTypeError(
                    "`length` of a rolling window must be a timedelta or seconds, got "
                    f"{type(length).__name__} {length!r}."
                )
            length = float(length)
            if not 0 < length < math.inf:
                raise ParameterError(
                    f"`length` of a rolling window must be in (0, inf) seconds, got {length!r}."
                )
        elif length is not None:
            raise ParameterError(
                f"`length` applies to rolling windows only; a {kind!r} window is a calendar "
                f"{kind}, got length {length!r}."
            )
        if not isinstance(self.tz, str):
            raise ParameterTypeError(f"`tz` must be an IANA zone name, got {self.tz!r}.")
        if kind == "rolling" and self.tz != "UTC":
            raise ParameterError(
                f"`tz` applies to calendar windows only (a rolling window is a length), got "
                f"{self.tz!r}."
            )
        try:
            ZoneInfo(self.tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise ParameterError(
                f"`tz` must be an IANA time zone name (e.g. 'UTC', 'Europe/Paris'), got "
                f"{self.tz!r}."
            ) from None
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", d)
        object.__setattr__(self, "length", length)

    @property
    def key(self) -> str:
        """The spec as canonical text (how a store records it); :meth:`from_key` reads it."""
        return json.dumps(
            {
                "kind": self.kind,
                "epsilon": self.epsilon,
                "delta": self.delta,
                "length": self.length,
                "tz": self.tz,
            },
            sort_keys=True,
        )

    @classmethod
    def from_key(cls, key: str) -> BudgetWindow:
        """The spec :attr:`key` wrote."""
        d = json.loads(key)
        return cls(d["kind"], d["epsilon"], d["delta"], d["length"], d["tz"])

    def describe(self) -> str:
        """One line: ``epsilon 1 per day (UTC)``."""
        cap = f"epsilon {_fmt(self.epsilon)}"
        if self.delta:
            cap += f", delta {_fmt(self.delta)}"
        if self.kind == "rolling":
            return f"{cap} per rolling {_fmt(self.length)} s"
        return f"{cap} per {self.kind} ({self.tz})"

    @property
    def reach(self) -> float:
        """Seconds beyond which two charges never share a window: ``length`` (rolling), two
        days (a calendar day may have 25 hours), eight days (a week)."""
        if self.kind == "rolling":
            return float(self.length)
        return 2 * 86400.0 if self.kind == "day" else 8 * 86400.0

    def window_of(self, t: float) -> tuple[float, float]:
        """The calendar window ``[start, end)`` that contains ``t`` (seconds since the epoch);
        for a rolling window, the one that ends at ``t``: ``(t - length, t]``.

        >>> BudgetWindow("week", 1.0).window_of(86400.0 * 4)  # 1970-01-05 was a Monday
        (345600.0, 950400.0)
        """
        if self.kind == "rolling":
            return t - self.length, t
        zone = ZoneInfo(self.tz)
        day = datetime.fromtimestamp(t, zone).date()
        if self.kind == "week":
            day -= timedelta(days=day.weekday())
        span = 7 if self.kind == "week" else 1
        start = datetime(day.year, day.month, day.day, tzinfo=zone)
        end = start.date() + timedelta(days=span)
        stop = datetime(end.year, end.month, end.day, tzinfo=zone)
        return start.timestamp(), stop.timestamp()

    def label(self, t: float) -> str:
        """The window of ``t`` as people read it: ``day 2026-11-28 (UTC)``."""
        if self.kind == "rolling":
            return f"rolling window of {_fmt(self.length)} s"
        start = datetime.fromtimestamp(self.window_of(t)[0], ZoneInfo(self.tz))
        if self.kind == "week":
            year, week, _ = start.isocalendar()
            return f"week {year}-W{week:02d} ({self.tz})"
        return f"day {start.date().isoformat()} ({self.tz})"


@dataclass(frozen=True)
class Charge:
    """One charge of a device: at ``at`` (seconds since the epoch), ``epsilon`` and
    ``delta`` (the total of the reports charged together)."""

    at: float
    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        at = v.real("at", self.at)
        if not math.isfinite(at):
            raise ParameterError(f"`at` must be a finite time in seconds, got {self.at!r}.")
        eps = v.positive("epsilon", self.epsilon, allow_zero=True)
        dlt = v.real("delta", self.delta)
        if not 0 <= dlt <= 1:
            raise ParameterError(f"`delta` of a charge must be in [0, 1], got {self.delta!r}.")
        object.__setattr__(self, "at", at)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", dlt)


def charge_cost(epsilon: float, reports: int) -> float:
    """``reports * epsilon`` rounded upward (never below the exact product): the basic
    composition of ``reports`` releases of an ``epsilon``-LDP report.

    >>> charge_cost(0.1, 3) > 0.3
    True
    """
    c = epsilon * reports
    if math.isfinite(c) and Fraction(c) < Fraction(epsilon) * reports:
        c = math.nextafter(c, math.inf)
    return c


def within(earlier: float, later: float, length: float) -> bool:
    """``later - earlier < length``, decided exactly (a float subtraction may round across
    the boundary; exact rationals decide where it could)."""
    d = later - earlier
    margin = 4 * math.ulp(max(abs(earlier), abs(later), length))
    if d < length - margin:
        return True
    if d > length + margin:
        return False
    return Fraction(later) - Fraction(earlier) < Fraction(length)


def _total(
    window: BudgetWindow, charges: list[Charge], lo: float, hi: float
) -> tuple[float, float]:
    """Upward sums of the epsilons and deltas of the charges in the calendar window
    ``[lo, hi)``, or in the rolling window ``(hi - length, hi]``, in a fixed order."""
    eps = dlt = 0.0
    for c in charges:
        if window.kind == "rolling":
            inside = c.at <= hi and within(c.at, hi, window.length)
        else:
            inside = lo <= c.at < hi
        if inside:
            eps = float(add_up(eps, c.epsilon))
            dlt = float(add_up(dlt, c.delta))
    return eps, dlt


def window_totals(
    window: BudgetWindow, charges: list[Charge], t: float
) -> list[tuple[float, float]]:
    """The totals ``(epsilon, delta)`` of every window of ``window`` that contains ``t``
    whose total can be largest (module docstring): one calendar window; for a rolling
    window those ending at ``t`` and at each charge time in ``(t, t + length)``."""
    ordered = sorted(charges, key=lambda c: (c.at, c.epsilon, c.delta))
    if window.kind != "rolling":
        lo, hi = window.window_of(t)
        return [_total(window, ordered, lo, hi)]
    ends = [t] + [c.at for c in ordered if t < c.at and within(t, c.at, window.length)]
    return [_total(window, ordered, s - window.length, s) for s in ends]


def decide_charge(windows: list[BudgetWindow], charges: list[Charge], new: Charge) -> str | None:
    """Whether ``new`` fits under every spec of ``windows`` given the device's ``charges``:
    ``None`` if it does, else the reason (the first spec it would exceed).  Pure, so a store
    may retry it.

    >>> day = BudgetWindow("day", 1.0)
    >>> decide_charge([day], [Charge(0.0, 0.75)], Charge(60.0, 0.25)) is None
    True
    >>> print(decide_charge([day], [Charge(0.0, 0.75)], Charge(60.0, 0.5)))
    epsilon 0.75 already spent in day 1970-01-01 (UTC) under the cap epsilon 1 per day (UTC);
    a charge of epsilon 0.5 would exceed it
    """
    for w in windows:
        for eps, dlt in window_totals(w, charges, new.at):
            over_eps = float(add_up(eps, new.epsilon)) > w.epsilon
            over_delta = float(add_up(dlt, new.delta)) > w.delta
            if over_eps or over_delta:
                spent = f"epsilon {_fmt(eps)}" + (f", delta {_fmt(dlt)}" if dlt else "")
                asked = f"epsilon {_fmt(new.epsilon)}" + (
                    f", delta {_fmt(new.delta)}" if new.delta else ""
                )
                return (
                    f"{spent} already spent in {w.label(new.at)} under the cap "
                    f"{w.describe()}; a charge of {asked} would exceed it"
                )
    return None
