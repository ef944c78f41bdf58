"""Conversions between privacy measures, each rounded toward safety.

Every function returns a value that is never below the true one (see ``_safety``): never a
negative, NaN or infinite epsilon where a finite one exists, and ``inf`` (never a finite number)
where the input carries no guarantee.

What comes back, by one rule (``docs/accounting.md``): a conversion *to a measure*
(``pure_to_zcdp``, ``*_to_approx``, ``compose_gdp``) returns the measure object; ``*_epsilon``
and ``*_delta`` return a Python ``float``; a Renyi curve (``*_rdp``) returns a ``float`` for a
scalar order and an array for an array of orders.  A measure argument is the measure object
or its parameter as a number (``ZCDP(0.5)`` or ``0.5``).

References
----------
* Bun & Steinke (2016), "Concentrated differential privacy: simplifications, extensions, and
  lower bounds", Prop. 1.3 (zCDP -> (eps, delta)) and Prop. 1.4 (eps-DP -> eps^2/2-zCDP).
* Steinke (2024), "Tight RDP & zCDP bounds from pure DP" (differentialprivacy.org): the Renyi
  curve of randomized response bounds every eps-DP mechanism; sharp rho = eps tanh(eps/2).
* Mironov (2017), "Renyi differential privacy", Prop. 3 (RDP -> (eps, delta)), Table II
  (Laplace mechanism).
* Canonne, Kamath & Steinke (2020), "The discrete Gaussian for differential privacy",
  Prop. 12 (improved RDP -> (eps, delta)); the same bound is in Asoodeh, Liao, Calmon,
  Kosut & Sankar (2021) and Balle, Barthe, Gaboardi, Hsu & Sato (2020).
* Dong, Roth & Su (2019), "Gaussian differential privacy", Cor. 2.13 (mu-GDP <-> (eps, delta)).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from deniable.accounting._measures import GDP, ZCDP, ApproxDP, PureDP
from deniable.accounting._rdp import (
    check_delta,
    check_epsilon,
    pure_epsilon,
    rdp_curve_delta,
    rdp_curve_epsilon,
    to_approx,
)
from deniable.accounting._safety import MARGIN, TINY, exp_up, half_square_up, up, upper_root
from deniable.common import validation as v

__all__ = [
    "compose_gdp",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_to_approx",
    "pure_to_zcdp",
    "zcdp_delta",
    "zcdp_epsilon",
    "zcdp_to_approx",
]

_METHODS = ("improved", "classic")


# ---------------------------------------------------------------- checks
def _rho(rho: float | ZCDP) -> float:
    return (
        rho.rho
        if isinstance(rho, ZCDP)
        else v.positive("rho", rho, allow_zero=True, allow_inf=True)
    )


def _mu(mu: float | GDP) -> float:
    return mu.mu if isinstance(mu, GDP) else v.positive("mu", mu, allow_zero=True, allow_inf=True)


# ---------------------------------------------------------------- pure DP
def pure_to_zcdp(epsilon: float | PureDP, method: str = "sharp") -> ZCDP:
    """The zCDP guarantee implied by ``epsilon``-DP (a float or a :class:`PureDP`).

    ``method="sharp"`` (default): ``rho = eps * tanh(eps / 2)``, attained by binary randomized
    response as ``alpha -> 1`` (its KL divergence), and sufficient for every eps-DP mechanism
    because the RR Renyi curve bounds them all and ``D_alpha / alpha`` of that curve is largest
    as ``alpha -> 1`` (Steinke 2024).  ``method="classic"``: ``rho = eps^2 / 2`` (Bun & Steinke
    2016, Prop. 1.4).

    For every ``epsilon > 0`` the result is positive and never below the true value: where
    ``eps^2 / 2`` would underflow (``eps < 1e-150``) it is computed in scaled arithmetic
    (``eps tanh(eps/2) <= eps^2 / 2``; the smallest positive double at worst), and where it
    overflows (classic, ``eps > 1.9e154``) it is ``inf``.

    >>> round(pure_to_zcdp(1.0).rho, 6), pure_to_zcdp(1.0, method="classic").rho
    (0.462117, 0.5)
    >>> pure_to_zcdp(1e-300).rho > 0
    True
    """
    eps = pure_epsilon(epsilon)
    v.choice("method", method, ("sharp", "classic"))
    if eps == math.inf:
        return ZCDP(math.inf)
    if method == "classic" or eps < 2.0**-500:
        # eps^2 / 2 in scaled arithmetic: no underflow to 0; for tiny eps it bounds the sharp
        # value (tanh(x) <= x) to within a relative eps^2 / 12
        return ZCDP(half_square_up(eps))
    # eps * tanh(eps/2) = eps * (1 - e^-eps) / (1 + e^-eps), stable for every eps
    return ZCDP(up(eps * -math.expm1(-eps) / (1 + math.exp(-eps))))


# ---------------------------------------------------------------- zCDP -> (eps, delta)
def zcdp_epsilon(rho: float | ZCDP, delta: float, method: str = "improved") -> float:
    """``epsilon(delta)`` of ``rho``-zCDP.

    ``"classic"``: ``rho + 2 sqrt(rho ln(1/delta))`` (Bun & Steinke 2016, Prop. 1.3);
    ``"improved"`` (default): the Canonne–Kamath–Steinke conversion of the curve
    ``eps(alpha) = rho alpha`` minimised over a continuous alpha (never above classic).

    >>> round(zcdp_epsilon(0.5, 1e-6, method="classic"), 4)
    5.7565
    >>> zcdp_epsilon(0.5, 1e-6) < zcdp_epsilon(0.5, 1e-6, method="classic")
    True
    """
    r = _rho(rho)
    d = check_delta(delta)
    v.choice("method", method, _METHODS)
    if r in (0.0, math.inf):
        return r
    log_inv = -math.log(d)
    root = math.sqrt(r * log_inv)
    classic = up(r + 2 * root, r + 2 * root)
    if method == "classic":
        return classic
    improved = rdp_curve_epsilon(lambda a: r * a * (1 + MARGIN), d, "improved")
    return min(classic, improved)


def zcdp_delta(rho: float | ZCDP, epsilon: float, method: str = "improved") -> float:
    """``delta(epsilon)`` of ``rho``-zCDP: ``"classic"`` ``exp(-(eps - rho)^2 / (4 rho))`` for
    ``eps > rho`` (else 1); ``"improved"`` the CKS conversion over a continuous alpha.

    >>> zcdp_delta(0.0, 0.1), zcdp_delta(math.inf, 1.0)
    (0.0, 1.0)
    """
    r = _rho(rho)
    eps = check_epsilon(epsilon)
    v.choice("method", method, _METHODS)
    if r == 0.0 or eps == math.inf:
        return 0.0
    if r == math.inf:
        return 1.0
    classic = 1.0 if eps <= r else _classic_zcdp_delta(r, eps)
    if method == "classic":
        return classic
    return min(classic, rdp_curve_delta(lambda a: r * a * (1 + MARGIN), eps, "improved"))


def _classic_zcdp_delta(r: float, eps: float) -> float:
    """``exp(-(eps - r)^2 / (4 r))`` for ``eps > r``, rounded up; the smallest positive double
    where it underflows (also when ``(eps - r)^2`` overflows a double)."""
    z = (eps - r) / (2 * math.sqrt(r))
    log_d = -(z * z)  # float products give inf (not an error) on overflow
    if log_d == -math.inf:
        return TINY
    # rounding of eps - r relative to eps + r, squared: |log_d| ((eps + r) / (eps - r))^2
    ratio = (eps + r) / (eps - r)
    scale = abs(log_d) * ratio * ratio
    return exp_up(log_d, scale) if math.isfinite(scale) else 1.0


def zcdp_to_approx(
    rho: float | ZCDP,
    *,
    delta: float | None = None,
    epsilon: float | None = None,
    method: str = "improved",
) -> ApproxDP:
    """An ``(epsilon, delta)`` guarantee from ``rho``-zCDP, given exactly one of the two.

    >>> zcdp_to_approx(0.5, delta=1e-6, method="classic").epsilon > 5.75
    True
    """
    return to_approx(
        lambda d: zcdp_epsilon(rho, d, method),
        lambda e: zcdp_delta(rho, e, method),
        delta,
        epsilon,
    )


# ---------------------------------------------------------------- GDP
def gdp_delta(mu: float | GDP, epsilon: float) -> float:
    """Exact ``delta(epsilon)`` of ``mu``-GDP (Dong, Roth & Su 2019, Cor. 2.13):
    ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, computed in log space.

    >>> round(gdp_delta(1.0, 0.0), 6)  # 2 Phi(1/2) - 1
    0.382925
    """
    from scipy import special

    m = _mu(mu)
    eps = check_epsilon(epsilon)
    if m == 0.0 or eps == math.inf:
        return 0.0
    if m == math.inf:
        return 1.0
    a = -eps / m + m / 2
    b = -eps / m - m / 2
    la = float(special.log_ndtr(a))
    lb = eps + float(special.log_ndtr(b))
    if la == -math.inf:
        return TINY
    ratio = -math.expm1(lb - la)  # 1 - e^eps Phi(b) / Phi(a), in (0, 1)
    slack = MARGIN * (abs(la) + abs(lb) + eps + 1.0)
    return exp_up(la + math.log(min(1.0, ratio + slack)), abs(la))


def gdp_epsilon(mu: float | GDP, delta: float) -> float:
    """Exact ``epsilon(delta)`` of ``mu``-GDP: the root of :func:`gdp_delta` by bisection,
    returning the upper end of the bracket.

    >>> eps = gdp_epsilon(1.0, 1e-6)
    >>> gdp_delta(1.0, eps) <= 1e-6 < gdp_delta(1.0, eps * (1 - 1e-9))
    True
    """
    m = _mu(mu)
    d = check_delta(delta)
    if m in (0.0, math.inf):
        return m
    hi = (m * m / 2 + m * math.sqrt(2 * -math.log(d))) * 1.01 + 1e-300
    while gdp_delta(m, hi) > d:
        hi *= 2
        if hi > 1e300:
            return math.inf
    return upper_root(lambda e: gdp_delta(m, e), d, 0.0, hi)


def gdp_to_approx(
    mu: float | GDP, *, delta: float | None = None, epsilon: float | None = None
) -> ApproxDP:
    """An ``(epsilon, delta)`` guarantee from ``mu``-GDP, given exactly one of the two."""
    return to_approx(lambda d: gdp_epsilon(mu, d), lambda e: gdp_delta(mu, e), delta, epsilon)


def compose_gdp(mus: Iterable[float | GDP]) -> GDP:
    """Composition of Gaussian DP: ``mu = sqrt(sum mu_i^2)`` (Dong, Roth & Su 2019, Cor. 3.3).

    Computed with ``math.hypot`` (scaled: no overflow or underflow of the squares), so the
    result is finite whenever the true value is, and positive when any ``mu_i`` is.

    >>> compose_gdp([3.0, 4.0]).mu == up(5.0)
    True
    >>> compose_gdp([1e300, 1e300]).mu < math.inf
    True
    """
    vals = [_mu(m) for m in mus]
    if any(m == math.inf for m in vals):
        return GDP(math.inf)
    # hypot is within one ulp; up() adds MARGIN relative (and a step in the subnormal range)
    return GDP(up(math.hypot(*vals)))
