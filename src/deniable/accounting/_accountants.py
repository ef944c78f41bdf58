"""One accountant per composition method, shaped like ``dp_accounting``'s.

An accountant reads privacy events (``_events``, ``_event_tree``) and answers the total
privacy loss by one method.  Every accountant has the same four calls:

* ``supports(event)``: whether it can account ``event`` (its structure, its kinds of
  mechanism and the neighbouring ``relation``); ``unsupported(event)`` says why not;
* ``compose(event, count=1)``: account ``count`` more uses of ``event`` (refused with
  :class:`~deniable.exceptions.PrivacyError` when unsupported); returns the accountant, so
  calls chain: ``BasicAccountant().compose(e).epsilon(1e-6)``;
* ``epsilon(delta)`` and ``delta(epsilon)``: the total, never below the true value.

Accountants are mutable, like a ledger (``compose`` adds to the one object: dropping its
result loses nothing); ``copy()`` takes a snapshot and ``ledger`` is everything composed so
far, as one event.  The methods (``ACCOUNTANTS``): ``basic``, ``advanced``, ``kov`` (this
module: pure-DP closed forms), ``rdp``, ``zcdp``, ``gdp`` (``_rdp_accountants``), ``pld``
and ``optimal`` (``_pld_accountants``).

The two additive accountants also price the budget ledger (``_pricing``):
:meth:`BasicAccountant.price` and :meth:`ZCDPAccountant.price` are what one event costs in
their unit (``epsilon``, ``rho``), and their ``total`` adds costs rounded up.
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.accounting._composition import (
    advanced_composition,
    basic_composition,
    kov_composition,
)
from deniable.accounting._event_tree import Composed, Event, SelfComposed, Unit, expand
from deniable.accounting._events import EventBase
from deniable.accounting._exact_sum import add_up
from deniable.accounting._rdp import check_delta, check_epsilon
from deniable.accounting._safety import up, upper_root
from deniable.accounting._units import (
    RELATIONS,
    approx_parts,
    is_blatant,
    is_free,
    is_gaussian,
    relation_problem,
)
from deniable.common import validation as v
from deniable.exceptions import ParameterTypeError, PrivacyError

__all__ = [
    "Accountant",
    "AdvancedAccountant",
    "BasicAccountant",
    "KOVAccountant",
    "Units",
    "as_float",
]


def as_float(count: int) -> float:
    """A count as a float; ``inf`` beyond the largest double (a sum that large is ``inf``)."""
    return float(count) if count < 2**1023 else math.inf


@dataclass(frozen=True)
class Units:
    """The units an accountant holds that cost something, with their uses, and the two
    facts that decide every method at once: some unit reveals the record (``blatant``), or
    the pure losses sum beyond the largest double (``overflows``)."""

    units: tuple[Unit, ...]

    @classmethod
    def of(cls, composed: list[tuple[Event, int]]) -> Units:
        merged: list[Unit] = []
        for event, count in composed:
            merged.extend((u, c) for u, c in expand(event, count) if not is_free(u, c))
        return cls(tuple(merged))

    @cached_property
    def blatant(self) -> bool:
        return any(is_blatant(u) for u, _ in self.units)

    @cached_property
    def pure(self) -> tuple[list[float], list[int]]:
        """The epsilons and uses of every unit (``inf`` for Gaussian kinds)."""
        return [approx_parts(u)[0] for u, _ in self.units], [c for _, c in self.units]

    @cached_property
    def delta_sum(self) -> float:
        """``sum uses * delta`` over the approximate-DP units, rounded up (0 without any)."""
        total = math.fsum(as_float(c) * approx_parts(u)[1] for u, c in self.units)
        return min(1.0, up(total)) if total > 0 else 0.0

    @cached_property
    def gaussian(self) -> bool:
        return any(is_gaussian(u) for u, _ in self.units)

    @cached_property
    def overflows(self) -> bool:
        """The losses of the pure-DP units sum beyond the largest double (1.8e308): every
        route then needs a loss no double holds, and the answers are the safe ``inf`` /
        ``delta = 1``."""
        pairs = [(approx_parts(u)[0], c) for u, c in self.units if not is_gaussian(u)]
        return (
            bool(pairs)
            and basic_composition([e for e, _ in pairs], counts=[c for _, c in pairs]) == math.inf
        )

    @cached_property
    def basic(self) -> float:
        """Basic composition of every unit: a bound at ``delta = 0`` (``inf`` with a Gaussian
        or an approximate-DP unit)."""
        if self.delta_sum > 0:
            return math.inf
        eps, cnt = self.pure
        return basic_composition(eps, counts=cnt)


class Accountant(ABC):
    """Total privacy loss by one method (module docstring).  ``relation`` is the
    neighbouring relation events are read under: ``"replace"`` (the default) or
    ``"add_remove"``."""

    #: The method's name, as :class:`~deniable.accounting.PrivacyAccountant` spells it.
    method: ClassVar[str]

    def __init__(self, *, relation: str = "replace") -> None:
        self._relation = v.choice("relation", relation, RELATIONS)
        self._composed: list[tuple[Event, int]] = []
        self._units: Units | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(relation={self._relation!r}, events={len(self._composed)})"

    @property
    def relation(self) -> str:
        """The neighbouring relation events are read under."""
        return self._relation

    # ----------------------------------------------------------------- events
    def unsupported(self, event: Any) -> str | None:
        """Why this accountant cannot account ``event``, or ``None`` if it can."""
        if not isinstance(event, EventBase):
            return f"{type(event).__name__} is not a privacy event"
        for unit, count in expand(event):  # type: ignore[arg-type]
            if is_free(unit, count):
                continue  # costs nothing under any relation and any method
            reason = relation_problem(unit, self._relation) or self._unit_problem(unit)
            if reason is not None:
                return f"{type(unit).__name__}: {reason}"
        return None

    def supports(self, event: Any) -> bool:
        """Whether :meth:`compose` accepts ``event``."""
        return self.unsupported(event) is None

    def _unit_problem(self, unit: Any) -> str | None:
        """Why this method cannot read ``unit`` (beyond the relation); subclasses say."""
        return None

    def compose(self, event: Event, count: int = 1) -> Any:
        """Account ``count`` uses of ``event``; returns this accountant."""
        if not isinstance(event, EventBase):
            raise ParameterTypeError(
                f"`event` must be a privacy event (e.g. RandomizedResponse(1.0)), got "
                f"{type(event).__name__} {event!r}."
            )
        c = v.integer("count", count, minimum=0)
        reason = self.unsupported(event)
        if reason is not None:
            raise PrivacyError(
                f"the {self.method!r} accountant (relation {self._relation!r}) cannot account "
                f"{event!r}: {reason}."
            )
        self._composed.append((event, c))
        self._units = None
        return self

    @property
    def ledger(self) -> Composed:
        """Everything composed so far, as one event."""
        return Composed(tuple(e if c == 1 else SelfComposed(e, c) for e, c in self._composed))

    def copy(self) -> Any:
        """A snapshot: composing into it leaves this accountant as it is."""
        out = copy.copy(self)
        out._composed = list(self._composed)
        out._units = None
        return out

    @property
    def units(self) -> Units:
        """The composed units that cost something (cached until the next compose)."""
        if self._units is None:
            self._units = Units.of(self._composed)
        return self._units

    # ----------------------------------------------------------------- answers
    def epsilon(self, delta: float) -> float:
        """Total epsilon at ``delta`` (in (0, 1)); never below the true value."""
        d = check_delta(delta)
        s = self.units
        if not s.units:
            return 0.0
        if s.blatant or s.overflows:
            return math.inf
        return self._epsilon(d)

    def delta(self, epsilon: float) -> float:
        """Total delta at ``epsilon``; never below the true value (1 is vacuous)."""
        t = check_epsilon(epsilon)
        s = self.units
        if not s.units or t == math.inf:
            return 0.0
        if s.blatant or s.overflows:
            return 1.0
        return self._delta(t)

    @abstractmethod
    def _epsilon(self, delta: float) -> float: ...

    @abstractmethod
    def _delta(self, epsilon: float) -> float: ...


class _PureAccountant(Accountant):
    """A closed form over the pure epsilons of the units; approximate-DP units add their
    deltas (``sum uses * delta``, Dwork, Rothblum & Vadhan 2010, Thm III.3; Kairouz, Oh &
    Viswanath 2015, Thm 3.5), and Gaussian kinds have no pure epsilon (``inf``)."""

    _exact_or_nothing: ClassVar[bool] = False

    def _rest(self, delta: float) -> float | None:
        """What is left of ``delta`` for the closed form after the units' deltas (rounded
        down), or ``None`` when nothing is."""
        used = self.units.delta_sum
        if used == 0:
            return delta
        rest = math.nextafter(delta - used, 0.0)
        return rest if rest > 0 else None

    def _bound(self, delta: float) -> float:
        raise NotImplementedError

    def _epsilon(self, delta: float) -> float:
        s = self.units
        if s.gaussian:
            return math.inf  # Gaussian noise has no pure-DP epsilon
        rest = self._rest(delta)
        return math.inf if rest is None else self._bound(rest)

    def _delta(self, epsilon: float) -> float:
        s = self.units
        if s.gaussian:
            return 1.0
        eps, cnt = s.pure
        used = s.delta_sum
        if epsilon >= basic_composition(eps, counts=cnt):
            return used
        if self._exact_or_nothing:
            return 1.0  # basic composition says nothing below its epsilon
        return min(1.0, used + _invert_in_delta(self._bound, epsilon))


class BasicAccountant(_PureAccountant):
    """Basic composition: ``sum uses * epsilon`` (Dwork, McSherry, Nissim & Smith 2006),
    the exact rational sum rounded up; approximate-DP units add their deltas.

    >>> from deniable.accounting import RandomizedResponse
    >>> BasicAccountant().compose(RandomizedResponse(0.5), 10).epsilon(1e-6)
    5.0
    """

    method = "basic"
    _exact_or_nothing = True
    #: What :meth:`price` counts, and what a ledger that prices by this method keeps.
    unit = "epsilon"

    def _bound(self, delta: float) -> float:
        eps, cnt = self.units.pure
        return basic_composition(eps, counts=cnt)

    @staticmethod
    def price(event: Event) -> float:
        """What ``event`` costs under basic composition: its total pure epsilon (rounded up;
        ``inf`` without a pure-DP guarantee).

        >>> from deniable.accounting import PureEpsilon
        >>> BasicAccountant.price(PureEpsilon(0.5, count=3))
        1.5
        """
        units = Units.of([(event, 1)])
        if units.blatant or units.delta_sum > 0:
            return math.inf if units.units else 0.0
        eps, cnt = units.pure
        return basic_composition(eps, counts=cnt) if eps else 0.0

    @staticmethod
    def total(spent: npt.ArrayLike, cost: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """``spent + cost`` elementwise, rounded up (TwoSum): basic composition adds."""
        return add_up(spent, cost)


class AdvancedAccountant(_PureAccountant):
    """Advanced composition (Dwork, Rothblum & Vadhan 2010, Thm III.3), reported as the
    minimum with basic composition."""

    method = "advanced"

    def _bound(self, delta: float) -> float:
        eps, cnt = self.units.pure
        return advanced_composition(eps, delta, counts=cnt)


class KOVAccountant(_PureAccountant):
    """The Kairouz, Oh & Viswanath (2015) bounds, Thm 3.4 (equal) and 3.5 (different
    epsilons), reported as the minimum with basic composition."""

    method = "kov"

    def _bound(self, delta: float) -> float:
        eps, cnt = self.units.pure
        return kov_composition(eps, delta, counts=cnt)


def _invert_in_delta(eps_of: Callable[[float], float], target: float) -> float:
    """Smallest delta (rounded up) with ``eps_of(delta) <= target``; 1.0 if none below 1."""
    top = 1.0 - 2.0**-53
    if eps_of(top) > target:
        return 1.0
    return upper_root(eps_of, target, 1e-300, top)
