"""The ``optimal`` accountant: the exact total wherever one exists, else the pessimistic
PLD of ``pld`` (``_pld_accountants``); :meth:`OptimalAccountant.route` says which.

Proof note: ``proofs/optimal_composition.md`` (the claim, Kairouz, Oh & Viswanath 2015,
Thm 3.3, and the tests that check it).
"""

from __future__ import annotations

import math

from deniable.accounting._accountants import as_float
from deniable.accounting._composition import (
    MAX_EXACT_COUNT,
    common_lattice,
    optimal_rr_delta,
    optimal_rr_epsilon,
)
from deniable.accounting._conversions import compose_gdp, gdp_delta, gdp_epsilon
from deniable.accounting._events import Gaussian, PureEpsilon, RandomizedResponse
from deniable.accounting._measures import GDP
from deniable.accounting._pld import PrivacyLossDistribution, compose_all, rr_pld
from deniable.accounting._pld_accountants import CLOSED_FORMS, PLDAccountant
from deniable.accounting._rdp import check_delta
from deniable.accounting._units import gaussian_mu
from deniable.common import validation as v

__all__ = ["OptimalAccountant"]


class OptimalAccountant(PLDAccountant):
    """The exact answer wherever one exists, else the pessimistic PLD.

    The exact routes, in order: one binary RR group (``PureEpsilon`` events too: binary RR
    is their worst case), the binomial sum (Kairouz, Oh & Viswanath 2015, Thm 3.3); one
    k-ary RR group, its exact three-atom PLD on the lattice ``epsilon Z``; several RR groups
    whose epsilons share a lattice, the exact lattice PLD; only Gaussian events, the exact
    GDP composition (Dong, Roth & Su 2019, Cor. 2.13 and 3.3).

    >>> from deniable.accounting import RandomizedResponse
    >>> acct = OptimalAccountant().compose(RandomizedResponse(0.1), 1000)
    >>> round(acct.epsilon(1e-6), 4), acct.route()
    (19.3447, 'exact: binomial sum (KOV 2015 Thm 3.3)')
    """

    method = "optimal"

    @property
    def rr_groups(self) -> dict[tuple[float, int], int] | None:
        """``{(epsilon, k): total count}`` if every unit is randomized response (or a pure
        epsilon, read as binary RR), else ``None``."""
        groups: dict[tuple[float, int], int] = {}
        for unit, count in self.units.units:
            if isinstance(unit, PureEpsilon):
                key = (unit.epsilon, 2)
            elif isinstance(unit, RandomizedResponse):
                key = (unit.epsilon, unit.k)
            else:
                return None
            groups[key] = groups.get(key, 0) + count
        return groups

    @property
    def lattice(self) -> float | None:
        """The common lattice step of the RR epsilons, if the optimum is computed exactly."""
        groups = self.rr_groups
        if not groups or self.units.blatant:
            return None
        keys = list(groups)
        return common_lattice([e for e, _ in keys], counts=[groups[k] for k in keys])

    def exact_kind(self) -> str | None:
        """The exact route: ``"none"`` (nothing composed), ``"blatant"``, ``"binomial"``,
        ``"rr-pld"`` (one k-ary group), ``"lattice"``, ``"gdp"``; or ``None`` (the
        pessimistic PLD)."""
        s = self.units
        if not s.units:
            return "none"
        if s.blatant or s.overflows:
            return "blatant"
        if all(isinstance(u, Gaussian) for u, _ in s.units):
            return "gdp"
        groups = self.rr_groups
        if groups is None:
            return None
        if len(groups) == 1:
            return "binomial" if next(iter(groups))[1] == 2 else "rr-pld"
        return "lattice" if self.lattice is not None else None

    def route(self) -> str:
        """How the answer is computed here, in words."""
        kind = self.exact_kind()
        if kind == "lattice":
            return f"exact: lattice PLD, step {self.lattice:g}"
        return {
            "none": "exact: every event has epsilon = 0",
            "blatant": "exact: an event has epsilon = inf (or the losses overflow)",
            "binomial": "exact: binomial sum (KOV 2015 Thm 3.3)",
            "rr-pld": "exact: k-ary RR PLD on the lattice epsilon Z",
            "gdp": "exact: GDP composition (Dong-Roth-Su 2019)",
        }.get(kind or "", "not exact here: pessimistic PLD (see pld)")

    def single_binary(self) -> tuple[float, int] | None:
        """``(epsilon, count)`` when everything is one binary RR group."""
        groups = self.rr_groups
        if groups and len(groups) == 1:
            (e, k), c = next(iter(groups.items()))
            if k == 2:
                return e, c
        return None

    def limit(self) -> str | None:
        s = self.units
        if s.blatant or s.overflows:
            return None
        single = self.single_binary()
        if single is not None:
            if single[1] <= MAX_EXACT_COUNT:
                return None
            return (
                f"`count` must be an integer in [0, {v.fmt_limit(MAX_EXACT_COUNT)}] for method "
                f"'optimal' "
                f"(an exact sum of count + 1 binomial terms; {CLOSED_FORMS}), got {single[1]}."
            )
        return super().limit()

    def gdp(self) -> GDP:
        """The composed Gaussian-DP guarantee (Gaussian events only)."""
        return compose_gdp([math.sqrt(as_float(c)) * gaussian_mu(u) for u, c in self.units.units])

    def exact_pld(self) -> PrivacyLossDistribution | None:
        """The exact PLD when every event is RR, in one group (any epsilon: the lattice
        ``epsilon Z``) or on a common lattice, else None."""
        if "pld-exact" not in self._cache:
            groups, g = self.rr_groups, self.lattice
            pld = None
            if groups and len(groups) == 1 and not self.units.blatant:
                (e, k), c = next(iter(groups.items()))
                pld = rr_pld(e, k=k, count=c)  # exact, on the lattice e Z
            elif groups and g is not None:
                parts = [
                    rr_pld(e, k=k, count=c, step=g, rounding="exact")
                    for (e, k), c in groups.items()
                ]
                pld = compose_all(parts)
            self._cache["pld-exact"] = pld
        res: PrivacyLossDistribution | None = self._cache["pld-exact"]
        return res

    def exact_epsilon(self, delta: float) -> float | None:
        """The exact epsilon at ``delta`` where an exact route exists, else ``None``."""
        s = self.units
        if not s.units:
            return 0.0
        if s.blatant:
            return math.inf
        self._check_size()
        return self._exact("epsilon", delta)

    def _exact(self, what: str, x: float) -> float | None:
        """``epsilon(delta = x)`` or ``delta(epsilon = x)`` (``what``) by the exact route:
        optimal composition of one binary RR, the GDP closed form, or the exact PLD; ``None``
        when none applies."""
        single = self.single_binary()
        if single is not None:
            rr = optimal_rr_epsilon if what == "epsilon" else optimal_rr_delta
            return rr(single[0], x, count=single[1])
        if self.exact_kind() == "gdp":
            return (gdp_epsilon if what == "epsilon" else gdp_delta)(self.gdp(), x)
        exact = self.exact_pld()
        return None if exact is None else float(getattr(exact, what)(x))

    def epsilon_bounds(self, delta: float) -> tuple[float, float]:
        d = check_delta(delta)
        exact = self.exact_epsilon(d)
        if exact is not None:
            return exact, exact
        return super().epsilon_bounds(d)

    def _epsilon(self, delta: float) -> float:
        self._check_size()
        exact = self.exact_epsilon(delta)
        if exact is None:
            return super()._epsilon(delta)
        return min(exact, self.units.basic)

    def _delta(self, epsilon: float) -> float:
        self._check_size()
        if epsilon >= self.units.basic:
            return 0.0
        exact = self._exact("delta", epsilon)
        if exact is not None:
            return exact
        return max(p.delta(epsilon) for p in self.plds("up"))
