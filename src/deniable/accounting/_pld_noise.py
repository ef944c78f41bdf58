"""Privacy loss distributions of noise mechanisms (Laplace, Gaussian), discretised on a grid
with losses rounded up (pessimistic) or down (optimistic); ``_pld`` says how PLDs work.
"""

from __future__ import annotations

import math

import numpy as np

from deniable.accounting._pld import (
    PrivacyLossDistribution,
    check_grid,
    grid_index,
    identity_pld,
)
from deniable.accounting._safety import UNIT
from deniable.common import validation as v

__all__ = ["gaussian_pld", "laplace_pld"]

_GAUSS_Z = 37.5  # Gaussian loss truncated at mean + 37.5 sd: tail ~ 5e-308 goes to +inf


def _mechanism_args(
    sensitivity: float, count: int, step: float, rounding: str
) -> tuple[float, int, float]:
    """The checked ``sensitivity``, ``count`` and ``step`` of a noise mechanism's PLD (and
    ``rounding`` checked to be ``up`` or ``down``)."""
    sens = v.positive("sensitivity", sensitivity, allow_zero=True)
    c = v.integer("count", count, minimum=0)
    h = v.positive("step", step)
    v.choice("rounding", rounding, ("up", "down"))
    return sens, c, h


def laplace_pld(
    scale: float,
    *,
    sensitivity: float = 1.0,
    count: int = 1,
    step: float = 1e-4,
    rounding: str = "up",
) -> PrivacyLossDistribution:
    """The PLD of ``count`` uses of the Laplace mechanism (pessimistic discretisation).

    For ``P = Lap(0, b)``, ``Q = Lap(s, b)`` and ``e = s/b`` the loss is ``+e`` with probability
    1/2, ``-e`` with probability ``e^{-e}/2``, and between them has CDF
    ``P(L <= t) = e^{-(e - t)/2} / 2`` (Koskela et al. 2020).

    >>> pld = laplace_pld(1.0, step=1e-3)
    >>> abs(pld.mass() - 1) < 1e-12
    True
    """
    b = v.positive("scale", scale, allow_zero=True, allow_inf=True)
    sens, c, h = _mechanism_args(sensitivity, count, step, rounding)
    eps = math.inf if b == 0 and sens > 0 else (0.0 if sens == 0 or b == math.inf else sens / b)
    if c == 0 or eps == 0.0:
        return identity_pld(h, rounding)
    if eps == math.inf:
        return PrivacyLossDistribution(h, 0, np.zeros(1), inf_mass=1.0, rounding=rounding)
    check_grid(2 * c * eps, h, "a Laplace PLD")
    lo, hi = grid_index(-eps, h, rounding), grid_index(eps, h, rounding)
    probs = np.zeros(hi - lo + 1)
    probs[0] += 0.5 * math.exp(-eps)
    probs[-1] += 0.5
    # continuous part on (-eps, eps): mass of ((i-1)h, ih] (up) or [ih, (i+1)h) (down)
    idx = np.arange(lo, hi + 1)
    left = idx - 1 if rounding == "up" else idx
    a = np.clip(left * h, -eps, eps)
    z = np.clip((left + 1) * h, -eps, eps)
    # e^{(z-eps)/2} - e^{(a-eps)/2} written with exponents <= 0: no overflow for a huge eps
    probs += 0.5 * np.exp((z - eps) / 2) * -np.expm1(-(z - a) / 2)
    one = PrivacyLossDistribution(
        h, lo, probs, rounding=rounding, rel_error=8 * UNIT, slack=4 * UNIT * eps
    )
    return one.self_compose(c)


def gaussian_pld(
    sigma: float,
    *,
    sensitivity: float = 1.0,
    count: int = 1,
    step: float = 1e-4,
    rounding: str = "up",
) -> PrivacyLossDistribution:
    """The PLD of ``count`` uses of the Gaussian mechanism (pessimistic discretisation).

    With ``mu = sqrt(count) * sensitivity / sigma`` (the count-fold composition is exactly
    Gaussian) the loss is ``N(mu^2/2, mu^2)``; mass beyond 37.5 standard deviations above the
    mean goes to ``+inf`` (up) or is dropped (down), below 37.5 below is clamped.

    >>> pld = gaussian_pld(1.0, step=1e-3)
    >>> abs(pld.mass() - 1) < 1e-9
    True
    """
    from scipy import special

    sd = v.positive("sigma", sigma, allow_zero=True, allow_inf=True)
    sens, c, h = _mechanism_args(sensitivity, count, step, rounding)
    if sd == 0 and sens > 0:
        return PrivacyLossDistribution(h, 0, np.zeros(1), inf_mass=1.0, rounding=rounding)
    mu = 0.0 if sens == 0 or sd == math.inf else math.sqrt(c) * sens / sd
    if c == 0 or mu == 0.0:
        return identity_pld(h, rounding)
    mean, s = mu * mu / 2, mu
    if mean == math.inf:
        # mu > 1.9e154: the loss N(mu^2/2, mu^2) exceeds every double with probability 1 to
        # double precision (it is below 1.8e308 only mu/2 standard deviations under its mean)
        return PrivacyLossDistribution(h, 0, np.zeros(1), inf_mass=1.0, rounding=rounding)
    check_grid(2 * _GAUSS_Z * s + 2 * h, h, "a Gaussian PLD")
    lo = math.floor((mean - _GAUSS_Z * s) / h)
    hi = math.ceil((mean + _GAUSS_Z * s) / h)
    idx = np.arange(lo, hi + 1)
    left = (idx - 1 if rounding == "up" else idx) * h
    right = left + h
    za, zb = (left - mean) / s, (right - mean) / s
    upper_side = za >= 0
    mass = np.where(
        upper_side, special.ndtr(-za) - special.ndtr(-zb), special.ndtr(zb) - special.ndtr(za)
    )
    tail_hi = float(special.ndtr(-(right[-1] - mean) / s))
    tail_lo = float(special.ndtr((left[0] - mean) / s))
    inf_mass = 0.0
    if rounding == "up":
        mass[0] += tail_lo
        inf_mass = tail_hi
    return PrivacyLossDistribution(
        h,
        lo,
        np.maximum(mass, 0.0),
        inf_mass=inf_mass,
        rounding=rounding,
        abs_error=mass.size * UNIT,
        slack=4 * UNIT * (abs(mean) + _GAUSS_Z * s),
    )
