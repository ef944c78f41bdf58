"""The privacy-loss-distribution accountant, ``pld`` (``_accountants`` says how
accountants work).

``pld`` convolves the units' loss distributions on a grid, losses rounded up (pessimistic:
every delta an upper bound; proof note ``proofs/pld_discretization.md``).  A sampled unit
has a distribution for each direction (a record removed, a record added; Zhu, Dong & Wang
2022), and the answer is the larger of the two compositions: the neighbouring pair is fixed
for the whole composition, so every use sees the same direction.

``optimal`` (``_optimal``) takes the exact answer wherever one exists, else this PLD.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from deniable.accounting._accountants import Accountant, as_float
from deniable.accounting._conversions import compose_gdp
from deniable.accounting._event_tree import PoissonSampled, SampledWithoutReplacement, inner_uses
from deniable.accounting._events import (
    DiscreteLaplace,
    Gaussian,
    Laplace,
    PureEpsilon,
    RandomizedResponse,
)
from deniable.accounting._pairs import MAX_PAIR_USES, Pair, approx_pair, discrete_laplace_pair
from deniable.accounting._pld import (
    MAX_KARY_PLD_COUNT,
    MAX_PLD_COUNT,
    PrivacyLossDistribution,
    compose_all,
    rr_pld,
)
from deniable.accounting._pld_noise import gaussian_pld, laplace_pld
from deniable.accounting._rdp import check_delta
from deniable.accounting._sampling import compose_truncated, sampled_gaussian_pld
from deniable.accounting._units import (
    approx_parts,
    base_pair,
    is_gaussian,
    rate,
    sampled_mu,
)
from deniable.common import validation as v
from deniable.exceptions import ParameterError

__all__ = ["CLOSED_FORMS", "PLDAccountant"]

_MAX_GRID = 2**20  # entries of a discretised PLD; the step is coarsened beyond this
CLOSED_FORMS = "basic, advanced, kov, rdp and zcdp take any count"
_TAIL_LOG = math.log(2 / 1e-30)  # Bernstein width of a composed sampled unit (memory only)


class PLDAccountant(Accountant):
    """Privacy loss distributions convolved on a grid of ``step`` (coarsened so that the
    composed grid has at most 2^20 points), losses rounded up (module docstring).

    >>> from deniable.accounting import Laplace
    >>> round(PLDAccountant().compose(Laplace(1.0), 3).epsilon(1e-6), 3)
    3.0
    """

    method = "pld"

    def __init__(self, *, step: float = 1e-4, relation: str = "replace") -> None:
        super().__init__(relation=relation)
        self._step = v.positive("step", step)
        self._cache: dict[str, Any] = {}

    @property
    def step(self) -> float:
        """The requested grid step (``grid_step()`` is the one used)."""
        return self._step

    def compose(self, event: Any, count: int = 1) -> Any:
        out = super().compose(event, count)
        self._cache.clear()
        return out

    def copy(self) -> Any:
        out = super().copy()
        out._cache = {}
        return out

    def _unit_problem(self, unit: Any) -> str | None:
        if not isinstance(unit, PoissonSampled | SampledWithoutReplacement):
            return None
        inner, uses = inner_uses(unit)
        if isinstance(unit, SampledWithoutReplacement) and is_gaussian(unit):
            return (
                "no loss distribution is known for a Gaussian sampled without replacement; "
                "use the 'rdp' accountant (Wang, Balle & Kasiviswanathan 2019)"
            )
        if not isinstance(inner, Gaussian) and uses > MAX_PAIR_USES:
            return f"at most {MAX_PAIR_USES} uses on one sample (got {uses})"
        return None

    # ----------------------------------------------------------------- size and grid
    def limit(self) -> str | None:
        """Why this method would take too long or too much memory here (``None``: it will
        not)."""
        s = self.units
        if s.blatant or s.overflows:
            return None
        pure = [(u, c) for u, c in s.units if not isinstance(u, Gaussian)]
        total = sum(c for _, c in pure)
        kary = sum(c for u, c in pure if isinstance(u, RandomizedResponse) and u.k > 2)
        if total > MAX_PLD_COUNT:
            return (
                f"`count` must be an integer in [0, {v.fmt_limit(MAX_PLD_COUNT)}] in all for "
                f"method {self.method!r} (a privacy loss distribution with a point per loss "
                f"value; {CLOSED_FORMS}), got {total}."
            )
        if kary > MAX_KARY_PLD_COUNT:
            return (
                f"`count` must be an integer in [0, {MAX_KARY_PLD_COUNT}] in all for k-ary "
                f"questions (k > 2) with method {self.method!r} (time quadratic in the count; "
                f"{CLOSED_FORMS}), got {kary}."
            )
        return None

    def _check_size(self) -> None:
        reason = self.limit()
        if reason is not None:
            raise ParameterError(reason)

    def grid_step(self) -> float:
        """The discretisation step used: ``step``, coarsened so the composed grid has at most
        2^20 points."""
        # each part's span is divided by the grid size before summing, so that a huge
        # epsilon (1e300) does not overflow the total
        per_point = 0.0
        mu2 = 0.0
        for unit, count in self.units.units:
            if isinstance(unit, Gaussian):
                mu2 += as_float(count) * (unit.mu * unit.mu)
            elif isinstance(unit, PoissonSampled) and (rate(unit) < 1 or is_gaussian(unit)):
                per_point += _sampled_width(unit, count, self._step) / _MAX_GRID
            else:
                eps = approx_parts(unit)[0]
                per_point += 2 * as_float(count) * (eps / _MAX_GRID)
        if mu2:
            per_point += (2 * 37.5 * math.sqrt(mu2) + 2) / _MAX_GRID
        return max(self._step, per_point) if math.isfinite(per_point) else self._step

    # ----------------------------------------------------------------- distributions
    def plds(self, rounding: str = "up") -> tuple[PrivacyLossDistribution, ...]:
        """The discretised PLD of everything composed (``rounding`` ``"up"`` or ``"down"``):
        one, or two (a record removed, a record added) when a unit is Poisson-sampled."""
        v.choice("rounding", rounding, ("up", "down"))
        key = f"pld-{rounding}"
        if key not in self._cache:
            self._cache[key] = self._build(rounding)
        out: tuple[PrivacyLossDistribution, ...] = self._cache[key]
        return out

    def pld(self, rounding: str = "up") -> PrivacyLossDistribution:
        """The discretised PLD of everything composed, when it is one distribution (no
        Poisson-sampled unit; else :meth:`plds`)."""
        parts = self.plds(rounding)
        if len(parts) != 1:
            raise ParameterError(
                "these events have a loss distribution for each direction (a record removed, "
                "one added): use plds(), which gives both."
            )
        return parts[0]

    def _build(self, rounding: str) -> tuple[PrivacyLossDistribution, ...]:
        h = self.grid_step()
        common: list[PrivacyLossDistribution] = []
        removed: list[PrivacyLossDistribution] = []
        added: list[PrivacyLossDistribution] = []
        mus: list[float] = []
        for unit, count in self.units.units:
            if isinstance(unit, RandomizedResponse | PureEpsilon):
                k = unit.k if isinstance(unit, RandomizedResponse) else 2
                common.append(rr_pld(unit.epsilon, k=k, count=count, step=h, rounding=rounding))
            elif isinstance(unit, Laplace):
                common.append(
                    laplace_pld(
                        unit.scale,
                        sensitivity=unit.sensitivity,
                        count=count,
                        step=h,
                        rounding=rounding,
                    )
                )
            elif isinstance(unit, Gaussian):
                mus.append(math.sqrt(as_float(count)) * unit.mu)
            elif isinstance(unit, DiscreteLaplace):
                pair = discrete_laplace_pair(unit.scale, unit.sensitivity)
                common.append(compose_truncated(pair.pld(h, rounding), count))
            elif isinstance(unit, PoissonSampled) and is_gaussian(unit) and rate(unit) < 1:
                mu, q = sampled_mu(unit), rate(unit)
                for side, out in (("remove", removed), ("add", added)):
                    one = sampled_gaussian_pld(mu, q, direction=side, step=h, rounding=rounding)
                    out.append(compose_truncated(one, count))
            elif isinstance(unit, PoissonSampled) and is_gaussian(unit):
                mus.append(math.sqrt(as_float(count)) * sampled_mu(unit))
            elif isinstance(unit, PoissonSampled):
                inner, uses = inner_uses(unit)
                pair, q = base_pair(inner, uses), rate(unit)
                removed.append(compose_truncated(pair.remove(q).pld(h, rounding), count))
                added.append(compose_truncated(pair.add(q).pld(h, rounding), count))
            else:  # EpsilonDelta, or sampled without replacement: the (eps', delta') pair
                common.append(_approx_pld(*approx_parts(unit), count, h, rounding))
        if mus:
            # Gaussian PLDs compose exactly: N(mu^2/2, mu^2) with mu = sqrt(sum mu_i^2), taken
            # from the GDP composition (hypot: no underflow of a tiny mu^2, no overflow)
            mu = compose_gdp(mus).mu if rounding == "up" else math.hypot(*mus)
            common.append(gaussian_pld(1.0, sensitivity=mu, step=h, rounding=rounding))
        if not removed:
            if not common:
                return (rr_pld(0.0, step=h, rounding=rounding),)
            return (compose_all(common),)
        return tuple(compose_all(common + side) for side in (removed, added))

    def epsilon_bounds(self, delta: float) -> tuple[float, float]:
        """``(lower, upper)`` bracket on the exact optimal epsilon at ``delta`` from the
        optimistic and pessimistic discretisations."""
        d = check_delta(delta)
        if not self.units.units:
            return 0.0, 0.0
        if self.units.blatant or self.units.overflows:
            return math.inf, math.inf
        return (
            max(p.epsilon(d) for p in self.plds("down")),
            max(p.epsilon(d) for p in self.plds("up")),
        )

    def _epsilon(self, delta: float) -> float:
        self._check_size()
        out = max(p.epsilon(delta) for p in self.plds("up"))
        return min(out, self.units.basic)  # delta(basic) = 0 exactly

    def _delta(self, epsilon: float) -> float:
        self._check_size()
        if epsilon >= self.units.basic:
            return 0.0
        return max(p.delta(epsilon) for p in self.plds("up"))


def _approx_pld(
    eps: float, dlt: float, count: int, h: float, rounding: str
) -> PrivacyLossDistribution:
    """``count`` uses of the ``(eps, dlt)`` pair (binary RR's when ``dlt = 0``)."""
    if dlt == 0:
        return rr_pld(eps, count=count, step=h, rounding=rounding)
    if count <= MAX_PAIR_USES:
        return approx_pair(eps, dlt, uses=count).pld(h, rounding)
    return compose_truncated(approx_pair(eps, dlt).pld(h, rounding), count)


def _sampled_width(unit: PoissonSampled, count: int, step: float) -> float:
    """About how wide the composed loss distribution of ``count`` uses of a Poisson-sampled
    unit stays after truncation (Bernstein: ``2 sqrt(2 count var L)`` plus two single
    spans): it sets the grid step, so memory, never the bound."""
    if is_gaussian(unit):
        mu, q = sampled_mu(unit), rate(unit)
        if q == 1.0:
            return 2 * 37.5 * math.sqrt(as_float(count)) * mu + 2
        rough = max(step, (mu * (mu + 12) + 1) / 4096)
        pairs = [
            sampled_gaussian_pld(mu, q, direction=d, step=rough, rounding="up")
            for d in ("remove", "add")
        ]
        moments = [_moments(p.losses, p.probs) for p in pairs]
    else:
        inner, uses = inner_uses(unit)
        pair = base_pair(inner, uses)
        moments = [_pair_moments(x) for x in (pair.remove(rate(unit)), pair.add(rate(unit)))]
    var = max(m[1] for m in moments)
    span = max(m[2] for m in moments)
    return 2 * math.sqrt(2 * as_float(count) * var * _TAIL_LOG) + 2 * span


def _pair_moments(pair: Pair) -> tuple[float, float, float]:
    live = (pair.p > 0) & np.isfinite(pair.loss)
    return _moments(pair.loss[live], pair.p[live])


def _moments(losses: Any, probs: Any) -> tuple[float, float, float]:
    total = float(probs.sum())
    if total <= 0 or losses.size == 0:
        return 0.0, 0.0, 0.0
    mean = float(losses @ probs) / total
    var = float(((losses - mean) ** 2) @ probs) / total
    return mean, var, float(losses.max() - losses.min())
