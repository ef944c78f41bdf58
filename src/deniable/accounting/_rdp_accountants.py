"""The Renyi, zero-concentrated and Gaussian DP accountants (``_accountants`` says how
accountants work).

* ``rdp``: the units' Renyi curves summed (k-ary RR, Laplace, discrete Laplace and Gaussian
  exactly; subsampled units by ``_sampling``), converted to ``(epsilon, delta)`` over a
  continuous order (Canonne, Kamath & Steinke 2020, Prop. 12).
* ``zcdp``: ``rho`` summed (sharp ``eps tanh(eps/2)`` per pure-DP use, Steinke 2024;
  ``mu^2 / 2`` per Gaussian use), converted the same way.  Subsampling does not amplify
  zCDP: a sampled Gaussian is charged the Gaussian's ``rho`` (sampling never hurts, by joint
  convexity), a sampled pure-DP mechanism the ``rho`` of its amplified epsilon.
* ``gdp``: Gaussian events only, ``mu = sqrt(sum uses mu_i^2)``, exact (Dong, Roth & Su
  2019, Cor. 3.3).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.accounting._accountants import Accountant, as_float
from deniable.accounting._conversions import (
    compose_gdp,
    gdp_delta,
    gdp_epsilon,
    pure_to_zcdp,
    zcdp_delta,
    zcdp_epsilon,
)
from deniable.accounting._event_tree import (
    Event,
    PoissonSampled,
    SampledWithoutReplacement,
    inner_uses,
)
from deniable.accounting._events import (
    MAX_CHANNEL_PAIRS,
    Channel,
    DiscreteLaplace,
    EpsilonDelta,
    Gaussian,
    Laplace,
    NonPrivate,
    PureEpsilon,
    RandomizedResponse,
)
from deniable.accounting._exact_sum import add_up
from deniable.accounting._measures import GDP, ZCDP
from deniable.accounting._pairs import MAX_PAIR_USES, Pair, discrete_laplace_pair
from deniable.accounting._rdp import (
    FloatArray,
    alpha_array,
    laplace_rdp,
    rdp_curve_delta,
    rdp_curve_epsilon,
    rr_rdp,
    scalar_or_array,
)
from deniable.accounting._safety import MARGIN, half_square_up, up
from deniable.accounting._sampling import (
    MAX_SAMPLED_ORDER,
    poisson_gaussian_rdp,
    wor_rdp,
)
from deniable.accounting._units import (
    approx_parts,
    base_pair,
    gaussian_mu,
    is_gaussian,
    rate,
    sampled_mu,
)

__all__ = ["GDPAccountant", "RDPAccountant", "ZCDPAccountant"]

_NO_DELTA = "an (epsilon, delta) guarantee with delta > 0 has no Renyi or zCDP bound"


def _renyi_problem(unit: Any) -> str | None:
    """What the RDP and zCDP accountants cannot read in ``unit`` (``None``: nothing)."""
    if isinstance(unit, EpsilonDelta) and unit.delta > 0:
        return _NO_DELTA
    if isinstance(unit, PoissonSampled | SampledWithoutReplacement):
        return _sampled_problem(unit)
    return None


def _sampled_problem(unit: Any) -> str | None:
    """What no Renyi-type accountant reads inside a sampled unit."""
    inner, uses = inner_uses(unit)
    if isinstance(inner, EpsilonDelta) and inner.delta > 0:
        return _NO_DELTA
    if not isinstance(inner, Gaussian) and uses > MAX_PAIR_USES:
        return f"at most {MAX_PAIR_USES} uses on one sample (got {uses})"
    return None


class RDPAccountant(Accountant):
    """Renyi curves summed, converted over a continuous order (module docstring).

    >>> from deniable.accounting import Gaussian, PoissonSampled
    >>> acct = RDPAccountant(relation="add_remove")
    >>> round(acct.compose(PoissonSampled(0.01, Gaussian(1.0)), 1000).epsilon(1e-5), 2)
    2.11
    """

    method = "rdp"

    def _unit_problem(self, unit: Any) -> str | None:
        return _renyi_problem(unit)

    def curve(self, alphas: Any) -> Any:
        """The summed Renyi curve at ``alphas``: a ``float`` for a scalar order, an array of
        the same shape for an array of orders."""
        return scalar_or_array(self._curve(alpha_array(alphas)), alphas)

    def _curve(self, a: FloatArray) -> FloatArray:
        total = np.zeros_like(a)
        with np.errstate(over="ignore", invalid="ignore"):
            for unit, count in self.units.units:
                part = np.asarray(unit_rdp(unit, a))
                # a zero divergence stays 0 under any count (no inf * 0)
                total = total + np.where(part == 0, 0.0, as_float(count) * part)
        out: FloatArray = np.nan_to_num(total * (1 + MARGIN), nan=math.inf, posinf=math.inf)
        return out

    def _epsilon(self, delta: float) -> float:
        return rdp_curve_epsilon(self._curve, delta)

    def _delta(self, epsilon: float) -> float:
        return rdp_curve_delta(self._curve, epsilon)


def unit_rdp(unit: Any, a: FloatArray) -> Any:
    """The Renyi curve of one use of ``unit`` at the orders ``a`` (rounded up)."""
    if isinstance(unit, NonPrivate):
        return np.full(a.shape, math.inf)
    if isinstance(unit, RandomizedResponse):
        return rr_rdp(unit.epsilon, a, k=unit.k)
    if isinstance(unit, PureEpsilon | EpsilonDelta):
        return rr_rdp(unit.epsilon, a, k=2)
    if isinstance(unit, Laplace):
        return laplace_rdp(unit.pure_epsilon, a)
    if isinstance(unit, DiscreteLaplace):
        if unit.pure_epsilon == math.inf:
            return np.full(a.shape, math.inf)
        return discrete_laplace_pair(unit.scale, unit.sensitivity).renyi(a)
    if isinstance(unit, Gaussian):
        return a * half_square_up(unit.mu) * (1 + MARGIN)
    if isinstance(unit, Channel):
        return channel_rdp(unit, a)
    inner, uses = inner_uses(unit)
    q = rate(unit)
    if isinstance(unit, PoissonSampled):
        if isinstance(inner, Gaussian):
            return poisson_gaussian_rdp(sampled_mu(unit), q, a)
        if approx_parts(inner)[0] == math.inf:
            return np.full(a.shape, math.inf)
        pair = base_pair(inner, uses)
        return np.maximum(pair.remove(q).renyi(a), pair.add(q).renyi(a))
    # without replacement: the inner curve at the integer orders, then WBK 2019 Thm 9
    orders = np.arange(MAX_SAMPLED_ORDER + 1, dtype=float)
    base = np.zeros_like(orders)
    base[2:] = as_float(uses) * np.asarray(unit_rdp(inner, orders[2:]))
    return wor_rdp(base, q, a)


def channel_rdp(unit: Channel, a: FloatArray) -> FloatArray:
    """The largest Renyi divergence between the report distributions of two truths, at
    each order (exact: every output pair of one use is one of these pairs).  A channel too
    large for that, or with an infinite epsilon, takes binary RR's curve at its epsilon."""
    eps = unit.pure_epsilon
    m = np.array(unit.matrix)
    k = m.shape[1]
    if eps == math.inf or k * k * m.shape[0] > MAX_CHANNEL_PAIRS:
        out: FloatArray = np.asarray(rr_rdp(eps, a, k=2), dtype=np.float64)
        return out
    best = np.zeros_like(a)
    with np.errstate(divide="ignore"):
        logs = np.log(m)
    for x in range(k):
        for y in range(k):
            if x == y:
                continue
            p, q = m[:, x], m[:, y]
            live = p > 0
            pair = Pair(p[live], q[live], logs[live, x] - logs[live, y])
            best = np.maximum(best, pair.renyi(a))
    return best


class ZCDPAccountant(Accountant):
    """``rho`` summed, converted at the end (module docstring).

    >>> from deniable.accounting import PureEpsilon
    >>> round(ZCDPAccountant().compose(PureEpsilon(1.0)).rho(), 6)
    0.462117
    """

    method = "zcdp"
    #: What :meth:`price` counts, and what a ledger that prices by this method keeps.
    unit = "rho"

    def _unit_problem(self, unit: Any) -> str | None:
        return _renyi_problem(unit)

    def rho(self) -> float:
        """The total ``rho``, rounded up."""
        total = 0.0
        for unit, count in self.units.units:
            total += as_float(count) * unit_rho(unit)
        return up(total) if math.isfinite(total) else math.inf

    def zcdp(self) -> ZCDP:
        """The zCDP guarantee of everything composed."""
        return ZCDP(self.rho())

    def _epsilon(self, delta: float) -> float:
        return zcdp_epsilon(self.rho(), delta)

    def _delta(self, epsilon: float) -> float:
        return zcdp_delta(self.rho(), epsilon)

    @staticmethod
    def price(event: Event) -> float:
        """What ``event`` costs in ``rho``: one use of a pure ``eps`` is the sharp
        ``eps tanh(eps/2)`` (:func:`~deniable.accounting.pure_to_zcdp`); several uses or
        units are summed and rounded up.

        >>> from deniable.accounting import PureEpsilon
        >>> round(ZCDPAccountant.price(PureEpsilon(1.0)), 6)
        0.462117
        """
        acct = ZCDPAccountant()
        units = acct.compose(event).units
        if units.blatant:
            return math.inf
        if len(units.units) == 1 and units.units[0][1] == 1:
            return unit_rho(units.units[0][0])  # one use: nothing added, nothing rounded
        return acct.rho()

    @staticmethod
    def total(spent: npt.ArrayLike, cost: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """``spent + cost`` elementwise, rounded up (TwoSum): zCDP's ``rho`` adds (Bun &
        Steinke 2016, Lemma 2.3)."""
        return add_up(spent, cost)


def unit_rho(unit: Any) -> float:
    """The zCDP ``rho`` of one use of ``unit`` (rounded up)."""
    if is_gaussian(unit):
        mu = unit.mu if isinstance(unit, Gaussian) else sampled_mu(unit)
        # mu^2 / 2 per Gaussian use, scaled so that a tiny mu does not underflow to 0
        return half_square_up(mu)
    return pure_to_zcdp(approx_parts(unit)[0]).rho


class GDPAccountant(Accountant):
    """Gaussian DP of Gaussian events only, composed exactly (module docstring)."""

    method = "gdp"

    def _unit_problem(self, unit: Any) -> str | None:
        if isinstance(unit, Gaussian | NonPrivate):
            return None
        return "the 'gdp' accountant takes Gaussian events only; use 'pld', 'rdp' or 'zcdp'"

    def gdp(self) -> GDP:
        """The composed Gaussian-DP guarantee."""
        mus = [math.sqrt(as_float(c)) * gaussian_mu(u) for u, c in self.units.units]
        return compose_gdp(mus)

    def _epsilon(self, delta: float) -> float:
        return gdp_epsilon(self.gdp(), delta)

    def _delta(self, epsilon: float) -> float:
        return gdp_delta(self.gdp(), epsilon)
