"""Noise for released tallies (central model): Laplace, Gaussian, discrete Laplace and discrete
Gaussian, with their privacy parameters and expected absolute error.

The continuous mechanisms add floating-point noise (inverse-CDF Laplace, Box--Muller
Gaussian).  Floating-point samplers of continuous noise leak through the pattern of
representable doubles (Mironov 2012), so for counts prefer the discrete mechanisms: they add
*integer* noise drawn by the exact samplers of Canonne, Kamath & Steinke (2020), built only
from fair 64-bit words, rational Bernoulli trials and integer arithmetic -- no float is ever
sampled (the samplers live in ``_exact_sampling``).  Every sampler draws its noise without
looking at the values it is added to.

References
----------
* Dwork, McSherry, Nissim & Smith (2006), Calibrating noise to sensitivity.
* Dwork & Roth (2014), The Algorithmic Foundations of Differential Privacy, Thm. A.1.
* Mironov (2012), On significance of the least significant bits for differential privacy.
* Balle & Wang (2018), Improving the Gaussian mechanism for differential privacy, Thm. 8.
* Bun & Steinke (2016), Concentrated differential privacy, Prop. 1.6.
* Canonne, Kamath & Steinke (2020), The discrete Gaussian for differential privacy,
  Algorithms 1--3 and Sec. 2.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import optimize, special

from deniable import _validation as v
from deniable.accounting._exact_sampling import discrete_gaussian, discrete_laplace, to_int64
from deniable.accounting._measures import GDP, ZCDP, ApproxDP, PureDP
from deniable.exceptions import DataError, ParameterError
from deniable.randomness import random_words, resolve_rng

__all__ = [
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "NoiseErrorTable",
    "noise_error_table",
    "plot_noise_error",
]

_TWO_M53 = 2.0**-53
_MAX_DOUBLE = Fraction(sys.float_info.max)
_TINY = math.ulp(0.0)  # the smallest positive double


def _up(x: float, steps: int = 1) -> float:
    """``x`` moved ``steps`` representable doubles towards +inf (round toward safety)."""
    for _ in range(steps):
        x = math.nextafter(x, math.inf)
    return x


def _float_up(q: Fraction) -> float:
    """The smallest double >= ``q`` (``inf`` beyond the largest double)."""
    if q > _MAX_DOUBLE:
        return math.inf
    f = float(q)
    return f if Fraction(f) >= q else math.nextafter(f, math.inf)


def _real_values(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    arr = np.asarray(values)
    if arr.dtype.kind not in "biuf":
        raise DataError(f"`values` must hold real numbers, got dtype {arr.dtype}.")
    return np.atleast_1d(arr.astype(np.float64))


def _integer_values(values: npt.ArrayLike) -> npt.NDArray[np.int64]:
    arr = np.atleast_1d(np.asarray(values))
    if arr.dtype.kind == "f":
        ok = np.isfinite(arr) & (arr == np.floor(arr))
        if not np.all(ok):
            raise DataError(f"`values` must hold integers, got {arr[~ok][0]!r}.")
    elif arr.dtype.kind not in "biu":
        raise DataError(f"`values` must hold integers, got dtype {arr.dtype}.")
    if arr.size and (np.max(np.abs(arr.astype(np.float64))) >= 2.0**61):
        raise DataError("`values` must be integers below 2**61 in absolute value.")
    return arr.astype(np.int64)


def _open_uniform(words: npt.NDArray[np.uint64]) -> npt.NDArray[np.float64]:
    """Doubles in (0, 1) from the top 53 bits of each word: (k + 1/2) / 2**53."""
    return ((words >> np.uint64(11)).astype(np.float64) + 0.5) * _TWO_M53


def _sensitivity(value: Any) -> float:
    return v.positive("sensitivity", value)


def _int_sensitivity(value: Any) -> int:
    return v.integer("sensitivity", value, minimum=1)


def _exact_positive(name: str, value: Any) -> Fraction:
    """A positive finite real (int, float or Fraction) as the exact rational it denotes."""
    if isinstance(value, Fraction):
        if value <= 0:
            raise ParameterError(f"`{name}` must be in (0, inf), got {value}.")
        return value
    return Fraction(v.positive(name, value))


# --- continuous mechanisms --------------------------------------------------------------------


@dataclass(frozen=True)
class LaplaceMechanism:
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
        object.__setattr__(self, "scale", v.positive("scale", self.scale))
        object.__setattr__(self, "sensitivity", _sensitivity(self.sensitivity))

    @classmethod
    def from_epsilon(cls, epsilon: float, sensitivity: float = 1.0) -> LaplaceMechanism:
        """The Laplace mechanism with ``b = sensitivity / epsilon`` (rounded up)."""
        eps = v.positive("epsilon", epsilon)
        delta_f = _sensitivity(sensitivity)
        return cls(_float_up(Fraction(delta_f) / Fraction(eps)), delta_f)

    @property
    def epsilon(self) -> float:
        # eps = Delta / b: the log density ratio |x - y| / b is at most Delta / b
        return _float_up(Fraction(self.sensitivity) / Fraction(self.scale))

    @property
    def guarantee(self) -> PureDP:
        """The privacy guarantee, ``PureDP(epsilon)``."""
        return PureDP(self.epsilon)

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

    It is positive for every finite ``eps``: where it underflows (a huge ``eps``, where
    ``Phi(a)`` underflows or the two terms cancel in double precision) the smallest positive
    double is returned, never 0 or NaN.
    """
    a = sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
    b = -sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
    log_a, log_b = float(special.log_ndtr(a)), float(special.log_ndtr(b))
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
        object.__setattr__(self, "sigma", v.positive("sigma", self.sigma))
        object.__setattr__(self, "sensitivity", _sensitivity(self.sensitivity))

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
            sigma = delta_f * math.sqrt(2 * math.log(1.25 / dlt)) / eps
            return cls(_up(sigma, 4), delta_f)
        return cls(_analytic_sigma(eps, dlt, delta_f), delta_f)

    @classmethod
    def from_zcdp(cls, rho: float, sensitivity: float = 1.0) -> GaussianMechanism:
        """``sigma = sensitivity / sqrt(2 rho)`` (rounded up): exactly ``rho``-zCDP."""
        r = v.positive("rho", rho)
        delta_f = _sensitivity(sensitivity)
        sigma = delta_f / math.sqrt(2 * r)
        while Fraction(delta_f) ** 2 / (2 * Fraction(sigma) ** 2) > Fraction(r):
            sigma = _up(sigma)
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
        eps = float(optimize.brentq(excess, 0.0, hi, xtol=1e-14, rtol=1e-14))
        while excess(eps) > 0:
            eps = _up(eps, 16)
        return eps

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


def _analytic_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest sigma with Balle--Wang delta(eps) <= delta, found by root finding, rounded up."""

    def excess(log_sigma: float) -> float:
        return _gaussian_delta(math.exp(log_sigma), epsilon, sensitivity) - delta

    lo, hi = math.log(sensitivity) - 1.0, math.log(sensitivity) + 1.0
    while excess(lo) <= 0:
        lo -= 2.0
    while excess(hi) > 0:
        hi += 2.0
    sigma = math.exp(float(optimize.brentq(excess, lo, hi, xtol=1e-15, rtol=1e-15)))
    # brentq's answer may sit a hair on the unsafe side: step up until delta(sigma) <= delta
    # with a relative margin for the rounding of log_ndtr (~1e-15).
    while _gaussian_delta(sigma, epsilon, sensitivity) > delta * (1 - 1e-12):
        sigma = _up(sigma, 64)
    return sigma


# --- discrete mechanisms (exact samplers) -----------------------------------------------------


@dataclass(frozen=True)
class DiscreteLaplaceMechanism:
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
        object.__setattr__(self, "scale", _exact_positive("scale", self.scale))
        object.__setattr__(self, "sensitivity", _int_sensitivity(self.sensitivity))

    @classmethod
    def from_epsilon(cls, epsilon: float, sensitivity: int = 1) -> DiscreteLaplaceMechanism:
        """``t = sensitivity / epsilon``, as an exact rational: ``epsilon`` is met exactly."""
        eps = _exact_positive("epsilon", epsilon)
        delta_f = _int_sensitivity(sensitivity)
        return cls(Fraction(delta_f) / eps, delta_f)

    @property
    def epsilon(self) -> float:
        # eps = Delta / t: neighbouring outputs' probabilities differ by e^(|shift| / t)
        return _float_up(Fraction(self.sensitivity) / Fraction(self.scale))

    @property
    def guarantee(self) -> PureDP:
        """The privacy guarantee, ``PureDP(epsilon)``."""
        return PureDP(self.epsilon)

    @property
    def expected_abs_error(self) -> float:
        # E|X| = 2 q / (1 - q^2) with q = e^(-1/t): sum of k q^k, normalised
        q = math.exp(-1 / float(self.scale))
        return 2 * q / ((1 - q) * (1 + q))

    def pmf(self, k: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """``P(X = k) = (1 - q) / (1 + q) q^|k|``, ``q = e^(-1/t)``."""
        q = math.exp(-1 / float(self.scale))
        kk = np.abs(np.asarray(k, dtype=np.float64))
        return np.asarray((1 - q) / (1 + q) * q**kk, dtype=np.float64)

    def noise(self, size: int, *, rng: Any = None) -> npt.NDArray[np.int64]:
        """``size`` exact discrete Laplace draws (integers)."""
        n = v.integer("size", size, minimum=0)
        t = Fraction(self.scale)
        out = discrete_laplace(resolve_rng(rng), t.numerator, t.denominator, n)
        return to_int64(out)

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.int64]:
        """Integer ``values`` plus exact discrete Laplace noise (noise drawn without reading
        the values)."""
        x = _integer_values(values)
        return x + self.noise(x.size, rng=rng)


def _discrete_gaussian_log_weights(sigma2: float, k: npt.NDArray[np.float64]) -> Any:
    return -(k * k) / (2 * sigma2)


def _discrete_gaussian_log_norm(sigma2: float) -> float:
    """log of Z = sum_k exp(-k^2 / (2 sigma^2)).

    For sigma >= 2 by Poisson summation, Z = sigma sqrt(2 pi) (1 + 2 sum_j exp(-2 pi^2 sigma^2
    j^2)), whose correction is below 1e-34; otherwise by direct summation.
    """
    sigma = math.sqrt(sigma2)
    if sigma >= 2:
        corr = 2 * sum(math.exp(-2 * math.pi**2 * sigma2 * j * j) for j in (1, 2, 3))
        return math.log(sigma * math.sqrt(2 * math.pi)) + math.log1p(corr)
    k = np.arange(-60, 61, dtype=np.float64)
    return float(special.logsumexp(_discrete_gaussian_log_weights(sigma2, k)))


@dataclass(frozen=True)
class DiscreteGaussianMechanism:
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
        object.__setattr__(self, "sigma", _exact_positive("sigma", self.sigma))
        object.__setattr__(self, "sensitivity", _int_sensitivity(self.sensitivity))

    @classmethod
    def from_zcdp(cls, rho: float, sensitivity: int = 1) -> DiscreteGaussianMechanism:
        """The smallest double ``sigma`` with ``sensitivity^2 / (2 sigma^2) <= rho``."""
        r = v.positive("rho", rho)
        delta_f = _int_sensitivity(sensitivity)
        sigma = delta_f / math.sqrt(2 * r)
        while Fraction(delta_f) ** 2 / (2 * Fraction(sigma) ** 2) > Fraction(r):
            sigma = _up(sigma)
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
        start = _analytic_sigma(eps, dlt, float(delta_f))

        def ok(sigma: float) -> bool:
            return _dg_delta(sigma * sigma, eps, delta_f) <= dlt * (1 - 1e-9)

        lo, hi = start / 2, start
        while not ok(hi):
            lo, hi = hi, hi * 2
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
        return _dg_delta(float(self.sigma2), eps, self.sensitivity)

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

    def noise(self, size: int, *, rng: Any = None) -> npt.NDArray[np.int64]:
        """``size`` exact discrete Gaussian draws (integers)."""
        n = v.integer("size", size, minimum=0)
        s2 = self.sigma2
        out = discrete_gaussian(resolve_rng(rng), s2.numerator, s2.denominator, n)
        return to_int64(out)

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.int64]:
        """Integer ``values`` plus exact discrete Gaussian noise (noise drawn without reading
        the values)."""
        x = _integer_values(values)
        return x + self.noise(x.size, rng=rng)


def _dg_delta(sigma2: float, epsilon: float, sensitivity: int) -> float:
    """Hockey stick D_{e^eps}(N_Z(0, s2) || N_Z(Delta, s2)), summed over positive terms.

    The privacy loss at k is ``(Delta^2 - 2 k Delta) / (2 s2)`` (decreasing in k), so the
    positive part is ``k < Delta/2 - eps s2 / Delta``; each term is
    ``p(k) (1 - exp(eps - loss(k)))`` (no cancellation).  Terms further than 40 sigma below
    the cut underflow and are dropped.  The other direction is the same by symmetry.
    """
    sigma = math.sqrt(sigma2)
    cut = sensitivity / 2 - epsilon * sigma2 / sensitivity
    k_hi = math.ceil(cut) - 1
    k_lo = min(k_hi, math.floor(-40 * sigma) - 2)
    k_lo = max(k_lo, k_hi - math.ceil(80 * sigma) - 4)
    k = np.arange(k_lo, k_hi + 1, dtype=np.float64)
    loss = (sensitivity * sensitivity - 2 * k * sensitivity) / (2 * sigma2)
    gap = np.minimum(epsilon - loss, 0.0)
    log_p = _discrete_gaussian_log_weights(sigma2, k) - _discrete_gaussian_log_norm(sigma2)
    terms = np.exp(log_p) * -np.expm1(gap)
    # relative slack for the rounding of exp / expm1 (a few ulps per term)
    return float(np.sum(terms) * (1 + 1e-12))


# --- comparison table and plot ---------------------------------------------------------------


_COLUMNS = (
    "laplace",
    "discrete_laplace",
    "gaussian",
    "gaussian_classic",
    "discrete_gaussian",
)


@dataclass(frozen=True)
class NoiseErrorTable:
    """Expected absolute error of a released count against epsilon, one row per epsilon.

    Columns: ``laplace`` and ``discrete_laplace`` (pure ``epsilon``-DP); ``gaussian``
    (analytic, Balle & Wang), ``gaussian_classic`` (``None`` where ``epsilon >= 1``: the
    classic bound is not proved there) and ``discrete_gaussian`` (exact curve), all
    (``epsilon``, ``delta``)-DP.
    """

    epsilons: tuple[float, ...]
    delta: float
    sensitivity: int
    columns: dict[str, tuple[float | None, ...]]

    def rows(self) -> list[dict[str, float | None]]:
        """One dict per epsilon: ``{"epsilon": ..., "laplace": ..., ...}``."""
        out: list[dict[str, float | None]] = []
        for i, eps in enumerate(self.epsilons):
            row: dict[str, float | None] = {"epsilon": eps}
            row.update({name: self.columns[name][i] for name in _COLUMNS})
            out.append(row)
        return out

    def __str__(self) -> str:
        head = ("epsilon", *_COLUMNS)
        lines = [
            f"expected |error| of a count (sensitivity {self.sensitivity}, "
            f"delta {self.delta:g} for the Gaussians)",
            "  ".join(f"{h:>17}" for h in head),
        ]
        for row in self.rows():
            cells = [f"{row['epsilon']:>17g}"]
            for name in _COLUMNS:
                value = row[name]
                cells.append(f"{'n/a':>17}" if value is None else f"{value:>17.4f}")
            lines.append("  ".join(cells))
        return "\n".join(lines)


def noise_error_table(
    epsilons: npt.ArrayLike, *, delta: float = 1e-6, sensitivity: int = 1
) -> NoiseErrorTable:
    """Expected absolute error of each mechanism calibrated to each ``epsilon``.

    >>> t = noise_error_table([0.5, 1.0])
    >>> t.rows()[1]["laplace"], t.rows()[1]["gaussian_classic"] is None
    (1.0, True)
    """
    eps_list = tuple(
        v.positive("epsilons", e) for e in np.atleast_1d(np.asarray(epsilons, dtype=float))
    )
    dlt = v.probability("delta", delta, low_open=True, high_open=True)
    delta_f = _int_sensitivity(sensitivity)
    cols: dict[str, list[float | None]] = {name: [] for name in _COLUMNS}
    for eps in eps_list:
        cols["laplace"].append(LaplaceMechanism.from_epsilon(eps, delta_f).expected_abs_error)
        cols["discrete_laplace"].append(
            DiscreteLaplaceMechanism.from_epsilon(eps, delta_f).expected_abs_error
        )
        cols["gaussian"].append(
            GaussianMechanism.from_epsilon_delta(eps, dlt, delta_f).expected_abs_error
        )
        cols["gaussian_classic"].append(
            GaussianMechanism.from_epsilon_delta(
                eps, dlt, delta_f, method="classic"
            ).expected_abs_error
            if eps < 1
            else None
        )
        cols["discrete_gaussian"].append(
            DiscreteGaussianMechanism.from_epsilon_delta(eps, dlt, delta_f).expected_abs_error
        )
    return NoiseErrorTable(eps_list, dlt, delta_f, {k: tuple(c) for k, c in cols.items()})


def plot_noise_error(table: NoiseErrorTable, *, ax: Any = None) -> Any:
    """Plot a :class:`NoiseErrorTable` (log-log); returns the matplotlib ``Axes``.

    Needs matplotlib: ``pip install deniable[plot]``.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(
            "plot_noise_error needs matplotlib; install the `plot` extra: "
            "pip install deniable[plot]"
        ) from err
    if ax is None:
        _, ax = plt.subplots()
    for name in _COLUMNS:
        pairs = [(e, y) for e, y in zip(table.epsilons, table.columns[name], strict=True) if y]
        if pairs:
            xs, ys = zip(*pairs, strict=True)
            ax.plot(xs, ys, marker="o", label=name.replace("_", " "))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("expected |error| of a count")
    ax.set_title(f"Noise for a released count (delta = {table.delta:g} for Gaussians)")
    ax.legend()
    return ax
