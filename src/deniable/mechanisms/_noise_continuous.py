"""Floating-point noise for released tallies: :class:`LaplaceMechanism` and
:class:`GaussianMechanism` (with the exact Gaussian (eps, delta) curve of Balle & Wang 2018).

The noise is floating point; see ``_noise`` for why counts should prefer the discrete
mechanisms (Mironov 2012).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.accounting import GDP, ZCDP, ApproxDP
from deniable.common import validation as v
from deniable.exceptions import ParameterError
from deniable.mechanisms._noise_common import (
    _TINY,
    _check_noise,
    _finite_noise,
    _float_up,
    _LaplaceEpsilon,
    _open_uniform,
    _raise_until,
    _real_values,
    _sensitivity,
    _up,
)
from deniable.randomness import random_words, resolve_rng

__all__ = ["GaussianMechanism", "LaplaceMechanism"]


@dataclass(frozen=True)
class LaplaceMechanism(_LaplaceEpsilon):
    """Add Laplace noise of scale ``b``: density ``exp(-|x| / b) / (2b)``.

    ``epsilon = sensitivity / scale`` (pure DP); expected absolute error ``E|X| = b``.
    The noise is floating point (see the module note on Mironov 2012); for integer counts
    :class:`DiscreteLaplaceMechanism` gives the same guarantee exactly.

    Reference: Dwork, McSherry, Nissim & Smith (2006).

    >>> LaplaceMechanism.from_epsilon(0.5).scale
    2.0
    >>> LaplaceMechanism(2.0).expected_abs_error
    2.0
    """

    scale: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        _check_noise(self, "scale", exact=False)

    @classmethod
    def from_epsilon(cls, epsilon: float, sensitivity: float = 1.0) -> LaplaceMechanism:
        """The Laplace mechanism with ``b = sensitivity / epsilon`` (rounded up)."""
        eps = v.positive("epsilon", epsilon)
        delta_f = _sensitivity(sensitivity)
        scale = _finite_noise(
            _float_up(Fraction(delta_f) / Fraction(eps)),
            "scale sensitivity / epsilon",
            f"`epsilon` = {eps:g} and `sensitivity` = {delta_f:g}",
            "give a larger `epsilon` or a smaller `sensitivity`",
        )
        return cls(scale, delta_f)

    @property
    def expected_abs_error(self) -> float:
        # E|X| = b for Laplace(0, b)
        return self.scale

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.float64]:
        """``values`` plus independent Laplace(``scale``) noise; one 64-bit word per value."""
        x = _real_values(values)
        words = random_words(resolve_rng(rng), x.size)
        magnitude = -np.log(_open_uniform(words)) * self.scale
        sign = 1.0 - 2.0 * (words & np.uint64(1)).astype(np.float64)
        return np.asarray(x + sign * magnitude, dtype=np.float64)


def _gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """Balle & Wang (2018), Thm. 8: the exact delta(eps) of the Gaussian mechanism,
    ``Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D)``, computed in log space.

    It depends on ``s / D`` only.  It is positive for every finite ``eps``: where it
    underflows (a huge ``eps``, where ``Phi(a)`` underflows or the two terms cancel in double
    precision) the smallest positive double is returned, never 0 or NaN; where ``s / D``
    leaves the doubles it is the limit (1 as ``s / D -> 0``, the smallest double as ``s / D
    -> inf``).
    """
    from scipy import special

    ratio = sigma / sensitivity  # s / D: overflows to inf or underflows to 0 at the extremes
    if ratio == 0:
        return 1.0
    if math.isinf(ratio):
        return _TINY
    half = 0.5 / ratio  # inf only when ratio is subnormal
    shift = epsilon * ratio if epsilon else 0.0
    a, b = half - shift, -half - shift
    log_a = float(special.log_ndtr(a)) if not math.isnan(a) else -math.inf
    log_b = float(special.log_ndtr(b))
    if log_a == -math.inf:
        return _TINY  # delta <= Phi(a), which underflows
    gap = epsilon + log_b - log_a
    if gap >= 0:
        return _TINY
    return max(float(math.exp(log_a) * -math.expm1(gap)), _TINY)


@dataclass(frozen=True)
class GaussianMechanism:
    """Add Gaussian noise ``N(0, sigma^2)``.

    * zCDP: ``rho = sensitivity^2 / (2 sigma^2)`` (Bun & Steinke 2016, Prop. 1.6);
    * Gaussian DP: ``mu = sensitivity / sigma`` (Dong, Roth & Su 2019);
    * (eps, delta): exact curve of Balle & Wang (2018, Thm. 8),
      ``delta(eps) = Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D)``;
    * expected absolute error ``sigma * sqrt(2 / pi)``.

    >>> g = GaussianMechanism.from_epsilon_delta(0.5, 1e-6)
    >>> classic = GaussianMechanism.from_epsilon_delta(0.5, 1e-6, method="classic")
    >>> g.sigma < classic.sigma
    True
    >>> GaussianMechanism.from_zcdp(0.5).sigma
    1.0
    """

    sigma: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        _check_noise(self, "sigma", exact=False)

    @classmethod
    def from_epsilon_delta(
        cls,
        epsilon: float,
        delta: float,
        sensitivity: float = 1.0,
        method: str = "analytic",
    ) -> GaussianMechanism:
        """The smallest ``sigma`` (rounded up) giving (``epsilon``, ``delta``)-DP.

        ``method="analytic"`` (default): Balle & Wang (2018), Thm. 8, solved for ``sigma`` by
        root finding; valid for every ``epsilon > 0``.  ``method="classic"``:
        ``sigma = sensitivity * sqrt(2 ln(1.25 / delta)) / epsilon`` (Dwork & Roth 2014,
        Thm. A.1), proved only for ``epsilon < 1``; larger ``epsilon`` raises.
        """
        eps = v.positive("epsilon", epsilon)
        dlt = v.probability("delta", delta, low_open=True, high_open=True)
        delta_f = _sensitivity(sensitivity)
        v.choice("method", method, ("analytic", "classic"))
        if method == "classic":
            if eps >= 1:
                raise ParameterError(
                    "`epsilon` must be in (0, 1) for method='classic' (Dwork & Roth, "
                    f"Thm. A.1), got {eps}; use method='analytic'."
                )
            sigma = delta_f * (math.sqrt(2 * math.log(1.25 / dlt)) / eps)
            inputs = f"`epsilon` = {eps:g}, `delta` = {dlt:g} and `sensitivity` = {delta_f:g}"
            sigma = _finite_noise(_up(sigma, 4), "sigma", inputs, _HINT)
            return cls(sigma, delta_f)
        return cls(_analytic_sigma(eps, dlt, delta_f), delta_f)

    @classmethod
    def from_zcdp(cls, rho: float, sensitivity: float = 1.0) -> GaussianMechanism:
        """``sigma = sensitivity / sqrt(2 rho)`` (rounded up): exactly ``rho``-zCDP."""
        r = v.positive("rho", rho)
        delta_f = _sensitivity(sensitivity)
        sigma = _zcdp_sigma(r, delta_f)
        return cls(sigma, delta_f)

    @property
    def rho(self) -> float:
        # rho = Delta^2 / (2 sigma^2): the Renyi divergence of two shifted Gaussians / alpha
        return _float_up(Fraction(self.sensitivity) ** 2 / (2 * Fraction(self.sigma) ** 2))

    @property
    def mu(self) -> float:
        # mu = Delta / sigma: the shift in units of the noise's standard deviation
        return _float_up(Fraction(self.sensitivity) / Fraction(self.sigma))

    @property
    def zcdp(self) -> ZCDP:
        """``ZCDP(rho)``."""
        return ZCDP(self.rho)

    @property
    def gdp(self) -> GDP:
        """``GDP(mu)``: the Gaussian mechanism is exactly ``mu``-GDP."""
        return GDP(self.mu)

    def approx_dp(self, delta: float) -> ApproxDP:
        """``ApproxDP(epsilon_for_delta(delta), delta)`` from the exact curve."""
        return ApproxDP(self.epsilon_for_delta(delta), delta)

    def delta_for_epsilon(self, epsilon: float) -> float:
        """The exact ``delta(epsilon)`` (Balle & Wang 2018, Thm. 8)."""
        eps = v.positive("epsilon", epsilon, allow_zero=True)
        return _gaussian_delta(self.sigma, eps, self.sensitivity)

    def epsilon_for_delta(self, delta: float) -> float:
        """The smallest ``epsilon`` (rounded up) with ``delta(epsilon) <= delta``."""
        from scipy import optimize

        dlt = v.probability("delta", delta, low_open=True, high_open=True)

        def excess(eps: float) -> float:
            return _gaussian_delta(self.sigma, eps, self.sensitivity) - dlt

        if excess(0.0) <= 0:
            return 0.0
        hi = 1.0
        while excess(hi) > 0:
            hi *= 2
            if hi > sys.float_info.max / 4:
                return math.inf  # the true epsilon (about mu^2 / 2) overflows a double
        eps = float(optimize.brentq(excess, 0.0, hi, xtol=1e-300, rtol=1e-14))
        return _raise_until(lambda e: excess(e) <= 0, eps, "epsilon", step=16)

    @property
    def expected_abs_error(self) -> float:
        # E|X| = sigma sqrt(2/pi) for X ~ N(0, sigma^2)
        return self.sigma * math.sqrt(2 / math.pi)

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.float64]:
        """``values`` plus independent N(0, ``sigma``^2) noise (Box--Muller, two words each)."""
        x = _real_values(values)
        words = random_words(resolve_rng(rng), 2 * x.size).reshape(2, x.size)
        u1, u2 = _open_uniform(words[0]), _open_uniform(words[1])
        z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * math.pi * u2)
        return np.asarray(x + self.sigma * z, dtype=np.float64)


_HINT = "give a target nearer the middle (a larger or smaller epsilon, delta or sensitivity)"


def _zcdp_sigma(rho: float, sensitivity: float) -> float:
    """The smallest double ``sigma`` with ``sensitivity^2 / (2 sigma^2) <= rho``."""
    twice = 2 * rho
    if math.isinf(twice):  # split so that 2 rho does not overflow
        sigma = sensitivity / math.sqrt(2.0) / math.sqrt(rho)
    else:
        sigma = sensitivity / math.sqrt(twice)
    inputs = f"`rho` = {rho:g} and `sensitivity` = {sensitivity:g}"
    sigma = _finite_noise(sigma, "sigma", inputs, _HINT)
    target = Fraction(rho)
    return _raise_until(
        lambda s: Fraction(sensitivity) ** 2 / (2 * Fraction(s) ** 2) <= target, sigma, "sigma"
    )


def _analytic_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest sigma with Balle--Wang delta(eps) <= delta, found by root finding on the
    ratio ``sigma / sensitivity`` (delta depends on it only), rounded up; a sigma beyond the
    doubles is one ``ParameterError`` naming the inputs."""
    from scipy import optimize

    inputs = f"`epsilon` = {epsilon:g}, `delta` = {delta:g} and `sensitivity` = {sensitivity:g}"

    def excess(log_ratio: float) -> float:
        return _gaussian_delta(math.exp(log_ratio), epsilon, 1.0) - delta

    lo, hi = -1.0, 1.0
    while excess(lo) <= 0:  # delta -> 1 as the ratio -> 0, so this ends
        lo -= 2.0
        if lo < -740:  # pragma: no cover - delta < 1 is above every delta of a tiny ratio
            raise ParameterError(f"{inputs}: no sigma within the doubles meets the target.")
    while excess(hi) > 0:
        hi += 2.0
        if hi > 709:
            _finite_noise(math.inf, "sigma / sensitivity", inputs, _HINT)
    ratio = math.exp(float(optimize.brentq(excess, lo, hi, xtol=1e-15, rtol=1e-15)))
    sigma = _finite_noise(ratio * sensitivity, "sigma", inputs, _HINT)
    # brentq's answer may sit a hair on the unsafe side: step up until delta(sigma) <= delta
    # with a relative margin for the rounding of log_ndtr (~1e-15); near delta = 1, where
    # delta hardly moves with sigma, the step grows (never an endless loop)
    return _raise_until(
        lambda s: _gaussian_delta(s, epsilon, sensitivity) <= delta * (1 - 1e-12),
        sigma,
        "sigma",
        step=64,
    )
