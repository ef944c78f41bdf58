"""Integer noise for released counts, sampled exactly: :class:`DiscreteLaplaceMechanism` and
:class:`DiscreteGaussianMechanism` (Canonne, Kamath & Steinke 2020; the samplers live in
``_exact_sampling``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.accounting import ZCDP, ApproxDP
from deniable.common import validation as v
from deniable.exceptions import ParameterError
from deniable.mechanisms._exact_sampling import discrete_gaussian, discrete_laplace, to_int64
from deniable.mechanisms._noise_common import (
    _check_noise,
    _exact_positive,
    _float_up,
    _int_sensitivity,
    _integer_values,
    _LaplaceEpsilon,
)
from deniable.mechanisms._noise_continuous import _analytic_sigma, _zcdp_sigma
from deniable.randomness import resolve_rng

__all__ = [
    "MAX_CURVE_SIGMA",
    "MAX_SIGMA",
    "MIN_SIGMA",
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
]


class _IntegerNoise:
    """Integer noise sampled exactly from fair bits, added to integer values; a subclass
    draws it in ``_draw(gen, n)``."""

    def _draw(self, gen: Any, n: int) -> Any:
        raise NotImplementedError  # pragma: no cover

    def noise(self, size: int, *, rng: Any = None) -> npt.NDArray[np.int64]:
        """``size`` exact draws of the mechanism's noise (integers)."""
        n = v.integer("size", size, minimum=0)
        return to_int64(self._draw(resolve_rng(rng), n))

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.int64]:
        """Integer ``values`` plus the mechanism's exact noise (noise drawn without reading
        the values)."""
        x = _integer_values(values)
        return x + self.noise(x.size, rng=rng)


@dataclass(frozen=True)
class DiscreteLaplaceMechanism(_IntegerNoise, _LaplaceEpsilon):
    """Add discrete Laplace noise on the integers: ``P(X = x) ∝ exp(-|x| / t)``.

    ``epsilon = sensitivity / t`` (pure DP; Canonne, Kamath & Steinke 2020, Sec. 2).
    Expected absolute error ``E|X| = 2 e^(-1/t) / (1 - e^(-2/t))``.

    ``scale`` (``t``) may be an int, a float or a :class:`fractions.Fraction`; it is kept as the
    exact rational it denotes and sampled exactly (CKS 2020, Algorithm 2) from fair bits.

    >>> m = DiscreteLaplaceMechanism.from_epsilon(0.5)
    >>> m.scale, m.epsilon
    (Fraction(2, 1), 0.5)
    >>> m.randomize([10, 20], rng=1).dtype
    dtype('int64')
    """

    scale: Fraction | float
    sensitivity: int = 1

    def __post_init__(self) -> None:
        _check_noise(self, "scale", exact=True)

    @classmethod
    def from_epsilon(cls, epsilon: float, sensitivity: int = 1) -> DiscreteLaplaceMechanism:
        """``t = sensitivity / epsilon``, as an exact rational: ``epsilon`` is met exactly."""
        eps = _exact_positive("epsilon", epsilon)
        delta_f = _int_sensitivity(sensitivity)
        return cls(Fraction(delta_f) / eps, delta_f)

    @property
    def expected_abs_error(self) -> float:
        # E|X| = 2 q / (1 - q^2) with q = e^(-1/t): sum of k q^k, normalised; that is
        # 1 / sinh(1/t), about t for a large t (inf once t is beyond the doubles)
        inv = _inverse_scale(self.scale)
        if inv == 0:
            return math.inf
        # past 700 sinh overflows: 1 / sinh(x) = 2 e^-x / (1 - e^-2x), and e^-2x is 0 there
        return 2 * math.exp(-inv) if inv > 700 else 1 / math.sinh(inv)

    def pmf(self, k: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """``P(X = k) = (1 - q) / (1 + q) q^|k|``, ``q = e^(-1/t)``."""
        inv = _inverse_scale(self.scale)
        kk = np.abs(np.asarray(k, dtype=np.float64))
        # (1 - q) / (1 + q) = tanh(1 / (2t)), without the cancellation of 1 - q
        return np.asarray(math.tanh(inv / 2) * np.exp(-inv * kk), dtype=np.float64)

    def _draw(self, gen: Any, n: int) -> Any:
        """``n`` exact discrete Laplace draws (CKS 2020, Algorithm 2)."""
        t = Fraction(self.scale)
        return discrete_laplace(gen, t.numerator, t.denominator, n)


def _inverse_scale(scale: Fraction | float) -> float:
    """``1 / t`` as a double (0 when ``t`` is beyond the doubles, inf below them)."""
    t = Fraction(scale)
    return _float_up(1 / t) if t < Fraction(1) else float(1 / t)


#: The largest sigma of a discrete Gaussian whose exact (epsilon, delta) curve is computed:
#: the curve is summed over about 14 sigma integers, up to 80 times per calibration.
MAX_CURVE_SIGMA = 1e5
#: The range of sigma of a discrete Gaussian: its pmf and expected error are computed in
#: doubles from sigma^2 (below the range the noise is 0 almost surely).
MIN_SIGMA = 1e-100
MAX_SIGMA = 1e100


def _check_sigma(sigma: float, inputs: str, *, curve: bool) -> None:
    """One ``ParameterError`` naming ``inputs`` when ``sigma`` is outside what is computed."""
    if not sigma >= MIN_SIGMA:
        raise ParameterError(
            f"{inputs} need a discrete Gaussian with sigma below {MIN_SIGMA:g} (noise that is "
            "0 almost surely); give a smaller epsilon or rho, or a larger delta."
        )
    if not sigma <= MAX_SIGMA:
        raise ParameterError(
            f"{inputs} need a discrete Gaussian with sigma above {MAX_SIGMA:g}, beyond the "
            "range its pmf is computed in; give a larger epsilon or rho, or a smaller "
            "sensitivity."
        )
    if curve and not sigma <= MAX_CURVE_SIGMA:
        raise ParameterError(
            f"{inputs} need a discrete Gaussian with sigma above {MAX_CURVE_SIGMA:g}, whose "
            "exact (epsilon, delta) curve is summed term by term (one term per integer "
            f"within about 14 sigma): at most sigma = {MAX_CURVE_SIGMA:g} is computed; give "
            "a larger epsilon or delta or a smaller sensitivity, calibrate to rho without "
            "delta, or use the continuous gaussian (within 1e-4 of it at such sigma)."
        )


def _discrete_gaussian_log_weights(sigma2: float, k: npt.NDArray[np.float64]) -> Any:
    return -(k * k) / (2 * sigma2)


def _discrete_gaussian_log_norm(sigma2: float) -> float:
    """log of Z = sum_k exp(-k^2 / (2 sigma^2)).

    For sigma >= 2 by Poisson summation, Z = sigma sqrt(2 pi) (1 + 2 sum_j exp(-2 pi^2 sigma^2
    j^2)), whose correction is below 1e-34; otherwise by direct summation.
    """
    from scipy import special

    sigma = math.sqrt(sigma2)
    if sigma >= 2:
        corr = 2 * sum(math.exp(-2 * math.pi**2 * sigma2 * j * j) for j in (1, 2, 3))
        return math.log(sigma * math.sqrt(2 * math.pi)) + math.log1p(corr)
    k = np.arange(-60, 61, dtype=np.float64)
    return float(special.logsumexp(_discrete_gaussian_log_weights(sigma2, k)))


@dataclass(frozen=True)
class DiscreteGaussianMechanism(_IntegerNoise):
    """Add discrete Gaussian noise on the integers: ``P(X = x) ∝ exp(-x^2 / (2 sigma^2))``.

    ``rho = sensitivity^2 / (2 sigma^2)`` zCDP (Canonne, Kamath & Steinke 2020, Thm. 4), for
    integer sensitivity.  The exact (eps, delta) curve is the hockey-stick divergence of the
    noise and its shift, summed over the integers (:meth:`delta_for_epsilon`).  Expected
    absolute error: the pmf summed (no closed form).

    Sampling is exact (CKS 2020, Algorithm 3): discrete Laplace proposals accepted with
    probability ``exp(-(|y| - sigma^2/t)^2 / (2 sigma^2))``, all in rational arithmetic, with
    ``sigma^2`` the exact square of the given ``sigma`` (int, float or Fraction).

    >>> m = DiscreteGaussianMechanism.from_zcdp(0.5)
    >>> m.sigma, m.rho
    (Fraction(1, 1), 0.5)
    """

    sigma: Fraction | float
    sensitivity: int = 1

    def __post_init__(self) -> None:
        _check_noise(self, "sigma", exact=True)
        if not MIN_SIGMA <= self.sigma <= MAX_SIGMA:
            raise ParameterError(
                f"`sigma` must be in [{MIN_SIGMA:g}, {MAX_SIGMA:g}] (the range the pmf is "
                f"computed in), got {float(self.sigma):g}."
            )

    @classmethod
    def from_zcdp(cls, rho: float, sensitivity: int = 1) -> DiscreteGaussianMechanism:
        """The smallest double ``sigma`` with ``sensitivity^2 / (2 sigma^2) <= rho``."""
        r = v.positive("rho", rho)
        delta_f = _int_sensitivity(sensitivity)
        sigma = _zcdp_sigma(r, float(delta_f))
        _check_sigma(sigma, f"`rho` = {r:g} and `sensitivity` = {delta_f}", curve=False)
        return cls(Fraction(sigma), delta_f)

    @classmethod
    def from_epsilon_delta(
        cls, epsilon: float, delta: float, sensitivity: int = 1
    ) -> DiscreteGaussianMechanism:
        """The smallest ``sigma`` (bisected, rounded up) whose exact curve gives
        ``delta(epsilon) <= delta``."""
        eps = v.positive("epsilon", epsilon)
        dlt = v.probability("delta", delta, low_open=True, high_open=True)
        delta_f = _int_sensitivity(sensitivity)
        inputs = f"`epsilon` = {eps:g}, `delta` = {dlt:g} and `sensitivity` = {delta_f}"
        start = _analytic_sigma(eps, dlt, float(delta_f))
        # the discrete Gaussian needs about the continuous one's sigma (within a factor 2)
        _check_sigma(start / 2, inputs, curve=True)

        def ok(sigma: float) -> bool:
            return _dg_delta(sigma * sigma, eps, delta_f) <= dlt * (1 - 1e-9)

        lo, hi = start / 2, min(start, MAX_CURVE_SIGMA)
        while not ok(hi):
            if hi >= MAX_CURVE_SIGMA:
                _check_sigma(math.inf, inputs, curve=True)
            lo, hi = hi, min(hi * 2, MAX_CURVE_SIGMA)
        while ok(lo) and lo > 1e-3:
            lo, hi = lo / 2, lo
        while hi - lo > 1e-9 * hi:
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if ok(mid) else (mid, hi)
        return cls(Fraction(hi), delta_f)

    @property
    def sigma2(self) -> Fraction:
        """``sigma^2`` as an exact rational."""
        return Fraction(self.sigma) ** 2

    @property
    def rho(self) -> float:
        # rho = Delta^2 / (2 sigma^2) (CKS 2020, Thm. 4), rounded up
        return _float_up(Fraction(self.sensitivity) ** 2 / (2 * self.sigma2))

    @property
    def zcdp(self) -> ZCDP:
        """``ZCDP(rho)``."""
        return ZCDP(self.rho)

    def epsilon_for_delta(self, delta: float) -> float:
        """The smallest ``epsilon`` (bisected, rounded up) with ``delta(epsilon) <= delta``."""
        dlt = v.probability("delta", delta, low_open=True, high_open=True)
        s2, sens = float(self.sigma2), self.sensitivity
        _check_sigma(math.sqrt(s2), f"this mechanism's sigma = {float(self.sigma):g}", curve=True)

        def ok(eps: float) -> bool:
            return _dg_delta(s2, eps, sens) <= dlt

        if ok(0.0):
            return 0.0
        lo, hi = 0.0, 1.0
        while not ok(hi):
            lo, hi = hi, hi * 2
        while hi - lo > 1e-12 * hi:
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if ok(mid) else (mid, hi)
        return hi

    def approx_dp(self, delta: float) -> ApproxDP:
        """``ApproxDP(epsilon_for_delta(delta), delta)`` from the exact curve."""
        return ApproxDP(self.epsilon_for_delta(delta), delta)

    def delta_for_epsilon(self, epsilon: float) -> float:
        """Exact ``delta(eps) = sum_k max(0, p(k) - e^eps p(k - Delta))`` over the integers."""
        eps = v.positive("epsilon", epsilon, allow_zero=True)
        s2 = float(self.sigma2)
        _check_sigma(math.sqrt(s2), f"this mechanism's sigma = {float(self.sigma):g}", curve=True)
        return _dg_delta(s2, eps, self.sensitivity)

    def pmf(self, k: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """``P(X = k) = exp(-k^2 / (2 sigma^2)) / Z``."""
        s2 = float(self.sigma2)
        kk = np.asarray(k, dtype=np.float64)
        log_p = _discrete_gaussian_log_weights(s2, kk) - _discrete_gaussian_log_norm(s2)
        return np.asarray(np.exp(log_p), dtype=np.float64)

    @property
    def expected_abs_error(self) -> float:
        """``E|X| = 2 sum_{k>=1} k p(k)``, summed to ``k = 40 sigma`` (the rest underflows);
        for ``sigma > 1e5`` by Euler--Maclaurin, ``sum_{k>=1} k e^(-k^2/(2s^2)) =
        s^2 - 1/12 - 1/(240 s^2) + O(s^-4)``."""
        s2 = float(self.sigma2)
        sigma = math.sqrt(s2)
        log_z = _discrete_gaussian_log_norm(s2)
        if sigma > 1e5:
            return 2 * (s2 - 1 / 12 - 1 / (240 * s2)) / math.exp(log_z)
        k = np.arange(1, math.ceil(40 * sigma) + 2, dtype=np.float64)
        return float(2 * np.sum(k * np.exp(_discrete_gaussian_log_weights(s2, k) - log_z)))

    def _draw(self, gen: Any, n: int) -> Any:
        """``n`` exact discrete Gaussian draws (CKS 2020, Algorithm 3)."""
        s2 = self.sigma2
        return discrete_gaussian(gen, s2.numerator, s2.denominator, n)


def _dg_delta(sigma2: float, epsilon: float, sensitivity: int) -> float:
    """Hockey stick D_{e^eps}(N_Z(0, s2) || N_Z(Delta, s2)), summed over positive terms.

    The privacy loss at k is ``(Delta^2 - 2 k Delta) / (2 s2)`` (decreasing in k), so the
    positive part is ``k < Delta/2 - eps s2 / Delta``; each term is
    ``p(k) (1 - exp(eps - loss(k)))`` (no cancellation).  Terms further than 40 sigma below
    the cut underflow and are dropped.  The other direction is the same by symmetry.
    """
    sigma = math.sqrt(sigma2)
    cut = sensitivity / 2 - epsilon * sigma2 / sensitivity
    if cut < -40 * sigma - 2:  # every positive term underflows
        return 0.0
    k_hi = math.ceil(cut) - 1
    k_lo = min(k_hi, math.floor(-40 * sigma) - 2)
    k_lo = max(k_lo, k_hi - math.ceil(80 * sigma) - 4)
    # below the largest weight of the range (at min(k_hi, 0)) by a factor e^-92 (1e-40),
    # terms cannot move the sum's double: about 14 sigma terms instead of 80 sigma
    peak = min(k_hi, 0)
    k_lo = max(k_lo, math.floor(-math.sqrt(peak * peak + 184.0 * sigma2)) - 1)
    k = np.arange(k_lo, k_hi + 1, dtype=np.float64)
    loss = (sensitivity * sensitivity - 2 * k * sensitivity) / (2 * sigma2)
    gap = np.minimum(epsilon - loss, 0.0)
    log_p = _discrete_gaussian_log_weights(sigma2, k) - _discrete_gaussian_log_norm(sigma2)
    terms = np.exp(log_p) * -np.expm1(gap)
    # relative slack for the rounding of exp / expm1 (a few ulps per term)
    return float(np.sum(terms) * (1 + 1e-12))
