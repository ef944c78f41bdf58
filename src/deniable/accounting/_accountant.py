"""The explicit privacy accountant: events in, total epsilon / delta out, by any method.

:class:`PrivacyAccountant` is a thin facade over the per-method accountants
(``ACCOUNTANTS``: ``_accountants``, ``_rdp_accountants``, ``_pld_accountants``): it holds
its events as a frozen value (:meth:`PrivacyAccountant.add` returns a new one), chooses the
accountant of the method asked for, and puts every method side by side
(:meth:`PrivacyAccountant.compare`).  No global state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from deniable.accounting._accountants import (
    Accountant,
    AdvancedAccountant,
    BasicAccountant,
    KOVAccountant,
    Units,
)
from deniable.accounting._composition import CompositionRow, CompositionTable
from deniable.accounting._event_tree import Event
from deniable.accounting._events import EventBase, Gaussian
from deniable.accounting._measures import GDP, ZCDP
from deniable.accounting._optimal import OptimalAccountant
from deniable.accounting._pld import PrivacyLossDistribution
from deniable.accounting._pld_accountants import PLDAccountant
from deniable.accounting._rdp import alpha_array, check_delta, check_epsilon, scalar_or_array
from deniable.accounting._rdp_accountants import GDPAccountant, RDPAccountant, ZCDPAccountant
from deniable.accounting._units import RELATIONS
from deniable.common import format_epsilon
from deniable.common import validation as v
from deniable.exceptions import ParameterTypeError, PrivacyError

__all__ = ["ACCOUNTANTS", "COMPOSITION_METHODS", "PrivacyAccountant", "make_accountant"]

#: The accountant of each method, by name.
ACCOUNTANTS: dict[str, type[Accountant]] = {
    a.method: a
    for a in (
        BasicAccountant,
        AdvancedAccountant,
        KOVAccountant,
        OptimalAccountant,
        PLDAccountant,
        RDPAccountant,
        ZCDPAccountant,
        GDPAccountant,
    )
}
COMPOSITION_METHODS = ("basic", "advanced", "kov", "optimal", "pld", "rdp", "zcdp", "gdp", "best")
_ROUTES = {
    "basic": "sum of epsilons",
    "advanced": "Dwork-Rothblum-Vadhan 2010, min with basic",
    "kov": "Kairouz-Oh-Viswanath 2015, Thm 3.4/3.5",
    "rdp": "Renyi curves summed, CKS 2020 conversion",
    "zcdp": "rho summed, CKS 2020 conversion",
    "gdp": "exact (Dong-Roth-Su 2019)",
}


def make_accountant(method: str, *, step: float = 1e-4, relation: str = "replace") -> Accountant:
    """A new, empty accountant of ``method`` (one of ``ACCOUNTANTS``; ``step`` is the grid
    of ``pld`` and ``optimal``).

    >>> from deniable.accounting import RandomizedResponse
    >>> make_accountant("kov").compose(RandomizedResponse(0.1), 100).epsilon(1e-6) < 10
    True
    """
    m = v.choice("method", method, tuple(ACCOUNTANTS))
    if m in ("pld", "optimal"):
        return ACCOUNTANTS[m](step=step, relation=relation)  # type: ignore[call-arg]
    return ACCOUNTANTS[m](relation=relation)


@dataclass(frozen=True)
class PrivacyAccountant:
    """Total privacy loss of a sequence of events (one respondent's view).

    Methods: ``"basic"``, ``"advanced"``, ``"kov"`` (pure-DP bounds; ``inf`` with Gaussian
    events, which have no pure-DP epsilon), ``"optimal"`` (the default: the exact answer
    wherever one exists, else the pessimistic PLD; :meth:`route` says which),
    ``"pld"`` (pessimistic discretisation with ``step``), ``"rdp"``, ``"zcdp"``, ``"gdp"``
    (Gaussian events only) and ``"best"`` (minimum of all that apply).  Each method is an
    accountant of its own (:meth:`accountant`, ``ACCOUNTANTS``); events are read under the
    neighbouring ``relation`` (``"replace"``, the default, or ``"add_remove"``, which
    Poisson-sampled events need).

    The exact routes of ``"optimal"``, in order: one binary RR group, the binomial sum
    (Kairouz, Oh & Viswanath 2015, Thm 3.3); one k-ary RR group, its exact three-atom PLD on
    the lattice ``epsilon Z``; several RR groups whose epsilons share a lattice, the exact
    lattice PLD; only Gaussian events, the exact GDP composition (Dong, Roth & Su 2019,
    Cor. 2.13 and 3.3).  Anything else (Laplace, epsilons without a common lattice, mixed
    kinds, sampled events) goes through the pessimistic PLD, an upper bound
    (:meth:`epsilon_bounds` brackets the truth).

    >>> from deniable.accounting import RandomizedResponse
    >>> acct = PrivacyAccountant([RandomizedResponse(0.5, count=10)])
    >>> acct.epsilon(1e-6, method="basic")
    5.0
    >>> acct.epsilon(1e-6) <= acct.epsilon(1e-6, method="rdp")
    True
    >>> acct.route()
    'exact: binomial sum (KOV 2015 Thm 3.3)'
    """

    events: tuple[Event, ...] = ()
    step: float = 1e-4
    relation: str = "replace"
    _cache: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.events, EventBase):
            raise ParameterTypeError(
                f"`events` must be a sequence of privacy events, got one event {self.events!r}"
                " (wrap it in a list)."
            )
        try:
            evs = tuple(self.events)
        except TypeError:
            raise ParameterTypeError(
                f"`events` must be a sequence of privacy events, got {type(self.events).__name__}"
                f" {self.events!r}."
            ) from None
        for e in evs:
            if not isinstance(e, EventBase):
                raise ParameterTypeError(
                    "`events` must hold privacy events (RandomizedResponse, Laplace, Gaussian, "
                    f"...), got {type(e).__name__} {e!r}."
                )
        object.__setattr__(self, "events", evs)
        object.__setattr__(self, "step", v.positive("step", self.step))
        object.__setattr__(self, "relation", v.choice("relation", self.relation, RELATIONS))

    def __hash__(self) -> int:
        return hash((self.events, self.step, self.relation))

    def add(self, *events: Event) -> PrivacyAccountant:
        """A new accountant with ``events`` appended."""
        return replace(self, events=self.events + tuple(events))

    def accountant(self, method: str) -> Accountant:
        """The accountant of ``method`` holding these events (a fresh copy: composing into it
        leaves this value alone); refused with :class:`~deniable.exceptions.PrivacyError`
        when ``method`` cannot account them."""
        out: Accountant = self._accountant(v.choice("method", method, tuple(ACCOUNTANTS))).copy()
        return out

    def _accountant(self, method: str) -> Any:
        key = f"acct-{method}"
        if key not in self._cache:
            acct = make_accountant(method, step=self.step, relation=self.relation)
            for e in self.events:
                acct.compose(e)
            self._cache[key] = acct
        return self._cache[key]

    # ----------------------------------------------------------------- summaries
    @property
    def _units(self) -> Units:
        if "units" not in self._cache:
            self._cache["units"] = Units.of([(e, 1) for e in self.events])
        out: Units = self._cache["units"]
        return out

    @property
    def lattice(self) -> float | None:
        """The common lattice step of the RR epsilons, if the optimum is computed exactly."""
        return self._optimal.lattice if self._supports("optimal") else None

    @property
    def _optimal(self) -> OptimalAccountant:
        out: OptimalAccountant = self._accountant("optimal")
        return out

    @property
    def optimal_is_exact(self) -> bool:
        """Whether ``method="optimal"`` is the exact optimum (no discretisation)."""
        return self._supports("optimal") and self._optimal.exact_kind() is not None

    def _supports(self, method: str) -> bool:
        probe = make_accountant(method, relation=self.relation)
        return all(probe.supports(e) for e in self.events)

    def route(self, method: str = "optimal") -> str:
        """How ``method`` computes its answer for these events, in words (for ``"optimal"``:
        which exact route, or that the pessimistic PLD is used).

        >>> from deniable.accounting import Gaussian, Laplace, RandomizedResponse
        >>> PrivacyAccountant([Gaussian(2.0, count=4)]).route()
        'exact: GDP composition (Dong-Roth-Su 2019)'
        >>> PrivacyAccountant([RandomizedResponse(1.0, k=4, count=3)]).route()
        'exact: k-ary RR PLD on the lattice epsilon Z'
        >>> PrivacyAccountant([Laplace(1.0)]).route()
        'not exact here: pessimistic PLD (see pld)'
        """
        m = v.choice("method", method, COMPOSITION_METHODS)
        if m == "optimal":
            return self._optimal.route()
        if m == "pld":
            return f"pessimistic PLD, step {self.grid_step():g}"
        if m == "best":
            return "the smallest of " + ", ".join(self._applicable())
        return _ROUTES[m]

    def zcdp(self) -> ZCDP:
        """The zCDP guarantee: sharp ``eps tanh(eps/2)`` per pure-DP use, ``mu^2/2`` per
        Gaussian use, summed."""
        out: ZCDP = self._accountant("zcdp").zcdp()
        return out

    def rdp_curve(self, alphas: Any) -> Any:
        """The summed Renyi curve at ``alphas`` (k-ary RR, Laplace and Gaussian exactly): a
        ``float`` for a scalar order, an array of the same shape for an array of orders.

        >>> from deniable.accounting import RandomizedResponse
        >>> acct = PrivacyAccountant([RandomizedResponse(1.0, count=2)])
        >>> acct.rdp_curve(math.inf), acct.rdp_curve([2.0, math.inf]).shape
        (2.0, (2,))
        """
        curve = self._accountant("rdp")._curve
        return scalar_or_array(curve(alpha_array(alphas)), alphas)

    def gdp(self) -> GDP:
        """The composed Gaussian-DP guarantee; only for Gaussian events."""
        if not all(isinstance(u, Gaussian) for u, _ in self._units.units):
            raise PrivacyError(
                "`method` 'gdp' needs Gaussian events only; use 'pld', 'rdp' or 'zcdp'."
            )
        out: GDP = self._accountant("gdp").gdp()
        return out

    # ----------------------------------------------------------------- PLDs
    def pld(self, rounding: str = "up") -> PrivacyLossDistribution:
        """The discretised PLD of all events (``rounding`` ``"up"`` or ``"down"``)."""
        out: PrivacyLossDistribution = self._accountant("pld").pld(rounding)
        return out

    def exact_pld(self) -> PrivacyLossDistribution | None:
        """The exact PLD when every event is RR, in one group (any epsilon: the lattice
        ``epsilon Z``) or on a common lattice, else None."""
        return self._optimal.exact_pld()

    def grid_step(self) -> float:
        """The discretisation step used by ``pld``: ``step``, coarsened so the composed grid
        has at most 2^20 points."""
        out: float = self._accountant("pld").grid_step()
        return out

    def epsilon_bounds(self, delta: float) -> tuple[float, float]:
        """``(lower, upper)`` bracket on the exact optimal epsilon at ``delta`` from the
        optimistic and pessimistic discretisations (equal when the PLD is exact)."""
        d = check_delta(delta)
        return self._optimal.epsilon_bounds(d)

    # ----------------------------------------------------------------- answers
    def epsilon(self, delta: float, method: str = "optimal") -> float:
        """Total epsilon at ``delta`` (in (0, 1)) by ``method``; never below the true value."""
        d = check_delta(delta)
        m = v.choice("method", method, COMPOSITION_METHODS)
        s = self._units
        if not s.units:
            return 0.0
        if s.blatant or s.overflows:
            return math.inf
        if m == "best":
            return min(self.epsilon(d, x) for x in self._applicable())
        if m == "gdp":
            self.gdp()  # the message of the facade: Gaussian events only
        out: float = self._accountant(m).epsilon(d)
        return out

    def delta(self, epsilon: float, method: str = "optimal") -> float:
        """Total delta at ``epsilon`` by ``method``; never below the true value (1 is vacuous)."""
        t = check_epsilon(epsilon)
        m = v.choice("method", method, COMPOSITION_METHODS)
        s = self._units
        if not s.units or t == math.inf:
            return 0.0
        if s.blatant or s.overflows:
            return 1.0
        if m == "best":
            return min(self.delta(t, x) for x in self._applicable())
        if m == "gdp":
            self.gdp()
        out: float = self._accountant(m).delta(t)
        return out

    def compare(self, delta: float, description: str = "") -> CompositionTable:
        """Every applicable method side by side at ``delta``."""
        d = check_delta(delta)
        rows = []
        for m in self._applicable(with_pure=True):
            rows.append(CompositionRow(m, self.epsilon(d, m), self._note(m, d)))
        skipped = [m for m in ("optimal", "pld") if self._limit(m) is not None]
        if skipped:
            total = sum(c for _, c in self._units.units)
            description += (
                f"{'; ' if description else ''}{' and '.join(skipped)} not computed "
                f"(count {total} is beyond their size limit)"
            )
        return CompositionTable(d, tuple(rows), description)

    # ----------------------------------------------------------------- helpers
    def _limit(self, method: str) -> str | None:
        if not self._supports(method):
            return None
        out: str | None = self._accountant(method).limit()
        return out

    def _applicable(self, with_pure: bool = False) -> list[str]:
        s = self._units
        out = [] if s.gaussian and not with_pure else ["basic", "advanced", "kov"]
        out += [m for m in ("optimal", "pld") if self._supports(m) and self._limit(m) is None]
        out += ["rdp", "zcdp"]
        if s.units and all(isinstance(u, Gaussian) for u, _ in s.units):
            out.append("gdp")
        return [m for m in out if self._supports(m)]

    def _note(self, m: str, d: float) -> str:
        s = self._units
        if m in ("basic", "advanced", "kov") and s.gaussian:
            return "n/a: Gaussian noise has no pure-DP epsilon"
        if s.blatant:
            return "an event has epsilon = inf"
        if s.overflows:
            return "the losses sum beyond the largest double"
        if m == "optimal":
            if not s.units:
                return "exact: every question has epsilon = 0"
            return self.route("optimal")
        if m == "zcdp":
            return f"rho = {self.zcdp().rho:.4g}, CKS 2020 conversion"
        if m == "pld":
            if not s.units:
                return "pessimistic PLD"
            lo = max(p.epsilon(d) for p in self._accountant("pld").plds("down"))
            return f"pessimistic PLD, step {self.grid_step():g}; true value >= {format_epsilon(lo)}"
        return _ROUTES[m]
