"""Means of bounded numbers under epsilon-LDP: Duchi et al.'s mechanism and the piecewise
mechanism, each exact in its epsilon and unbiased.

A number ``x`` in ``[lower, upper]`` is first mapped to ``t = 2 (x - lower) / (upper -
lower) - 1`` in ``[-1, 1]``; the estimates are mapped back.

**Duchi, Jordan & Wainwright (2018)**, one dimension: report ``+C`` with probability ``1/2 +
t / (2 C)``, else ``-C``, with ``C = (e^eps + 1) / (e^eps - 1)``; ``E[report] = t`` and
``Var = C^2 - t^2``.  Implemented with one word: ``+C`` iff ``word >> 11 < 2**52 +
floor(t D)``, ``D = t_hi - 2**52``, ``t_hi = floor(2**53 L / (L + 1))`` with ``L`` a proven
lower bound of ``e^eps`` (``deniable.randomness.exp_lower_bound``).  Every
threshold lies in ``[2**53 - t_hi, t_hi]``, so the implemented epsilon is ``ln(t_hi / (2**53
- t_hi)) <= eps``, and the estimator uses the implemented ``C = 2**52 / D``.  The tally is
``(n_minus, n_plus)``.

**The piecewise mechanism** (Wang, Xiao, Yang, Zhao, Hu, Yang, Lee & Li, ICDE 2019): report a
value near ``t`` with high probability and anywhere in ``[-C, C]`` otherwise; the report's
density is ``e^eps`` times higher on a window of width ``C - 1`` around ``t`` than outside
it, and ``E[report] = t``.  Here on a grid of ``N = 4096`` points with exact integer
probabilities: a window of ``w`` points (``w / N`` close to ``1 / (e^(eps/2) + 1)``, the
continuous optimum) starting at ``s``; each point of the window has probability ``alpha /
2**64``, every other point ``beta / 2**64``, with ``w alpha + (N - w) beta = 2**64`` and
``alpha / beta <= e^eps``, so one 64-bit word picks the point exactly and the implemented
epsilon is ``ln(alpha / beta)``.  The window's start is ``s = floor(sigma) + B`` with
``sigma = (t + 1) (N - w) / 2`` and ``B`` Bernoulli(``frac(sigma)``) from a second word, so
``E[s] = sigma``; ``E[u | t]`` is linear in ``t`` and the estimate ``(u - (N - 1) / 2) /
c1`` is exactly unbiased.  The tally is ``(n, sum u, sum u^2)`` in int64 (``u < 4096``: a
tally holds up to ``5.9 * 10**10`` reports, the ``10**18`` limit of a tally's cells).

Standard errors: the empirical variance of the reports (plug-in, divides by n; unbiased,
n - 1), which includes the spread of the true values (the SE for a population the
respondents are a sample of); :meth:`variance` gives the exact variance for given values.
Intervals: Wald, and a conservative one (Clopper-Pearson for Duchi's share of ``+C``,
conservative by Hoeffding 1956; Hoeffding's inequality for the piecewise mechanism's
bounded reports).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import Tally, expit
from deniable.exceptions import DataError, ParameterError
from deniable.oracles._numeric_base import (
    _TWO52,
    _TWO53,
    _TWO64,
    GRID,
    FloatArray,
    _BoundedMean,
    _Interval,
    check_window,
    window_epsilon,
    window_reports,
    window_weights,
)
from deniable.randomness import CHUNK, exp_lower_bound, random_words, resolve_rng
from deniable.results import Estimate, beta_quantile_bounds

__all__ = [
    "DuchiMechanism",
    "PiecewiseMechanism",
]


@dataclass(frozen=True)
class DuchiMechanism(_BoundedMean):
    """Duchi, Jordan & Wainwright's (2018) mechanism for the mean of numbers in ``[lower,
    upper]`` (module docstring): report ``+C`` or ``-C``.

    >>> m = DuchiMechanism(1.0, lower=0, upper=10)
    >>> est = m.estimate(m.randomize(np.full(40_000, 7.0), rng=1))
    >>> abs(est.value - 7.0) < 4 * est.se, est.interval_methods
    (True, ('wald', 'exact'))
    """

    name: ClassVar[str] = "duchi"

    def __post_init__(self) -> None:
        self._check_bounds()
        if self._t_hi <= _TWO52:
            raise ParameterError(
                f"`epsilon` must be at least 2**-51 for {self.name!r} (below it the "
                f"randomizer's thresholds cannot differ), got {self.epsilon!r}."
            )

    @cached_property
    def _t_hi(self) -> int:
        """The threshold of ``t = 1``: the largest integer with ``t_hi / (2**53 - t_hi) <=
        e^eps``, i.e. ``floor(2**53 L / (1 + L))`` for a proven lower bound ``L`` of
        ``e^eps`` (so the implemented ratio is at most ``e^eps`` exactly, whatever ``eps``),
        and at most ``2**53 - 1``."""
        # Proof note (threshold rounding toward privacy, docs/architecture.md#proof-notes).
        # Claim: every report's likelihood ratio is at most e^eps exactly.  Argument: the
        # threshold of t is 2**52 + floor(t D), D = t_hi - 2**52, nondecreasing in t, so
        # every threshold lies in [2**53 - t_hi, t_hi] and the worst ratio is t_hi / (2**53 -
        # t_hi) (for +C; the same for -C); x / (2**53 - x) increases in x, so t_hi = floor(2**53
        # L / (1 + L)) gives t_hi / (2**53 - t_hi) <= L < e^eps (L: exp_lower_bound; above
        # eps = 700 the bound at 700 is smaller still).  Checked by tests/test_implemented_
        # epsilon.py::test_duchi_realises_at_most_its_epsilon_over_the_whole_range.
        low = exp_lower_bound(min(self.epsilon, 700.0))
        return min(_TWO53 - 1, math.floor(_TWO53 * low / (1 + low)))

    @property
    def thresholds(self) -> tuple[int, int]:
        """``(t_lo, t_hi)``: the thresholds of ``t = -1`` and ``t = 1``."""
        return _TWO53 - self._t_hi, self._t_hi

    @property
    def bound(self) -> float:
        """The implemented ``C = 2**52 / (t_hi - 2**52)``: reports are ``+-C``."""
        return _TWO52 / (self._t_hi - _TWO52)

    @property
    def implemented_epsilon(self) -> float:
        # ln(t_hi / t_lo): t_hi / t_lo <= e^eps holds exactly (see _t_hi); the float log can
        # land an ulp above eps, so state the proven bound
        t_lo, t_hi = self.thresholds
        return min(math.log(t_hi / t_lo), self.epsilon)

    @property
    def n_cells(self) -> int:
        return 2

    @property
    def n_reports(self) -> int:
        return 2

    @property
    def words_per_report(self) -> int:
        return 1

    def _threshold(self, t: FloatArray) -> npt.NDArray[np.uint64]:
        d = float(self._t_hi - _TWO52)
        return (np.floor(t * d) + float(_TWO52)).astype(np.uint64)

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.uint8]:
        """Reports for numbers in ``[lower, upper]``: 1 for ``+C``, 0 for ``-C``; report
        ``i`` uses word ``i``."""
        t = self._unit(values)
        gen = resolve_rng(rng)
        out = np.empty(t.size, dtype=np.uint8)
        for start in range(0, t.size, CHUNK):
            stop = min(start + CHUNK, t.size)
            words = random_words(gen, stop - start)
            thresholds = self._threshold(t[start:stop]) << np.uint64(11)
            out[start:stop] = words < thresholds
        return out

    def report_distribution(self, value: float) -> FloatArray:
        """``[P(-C), P(+C)]`` for one value, as implemented."""
        t = self._unit([value])
        plus = int(self._threshold(t)[0]) / _TWO53
        return np.array([1 - plus, plus])

    def report_values(self) -> FloatArray:
        """The value each report stands for, on the scale of ``[lower, upper]``."""
        c = self.bound
        return np.array([self._to_value(-c), self._to_value(c)])

    def variance(self, values: npt.ArrayLike) -> float:
        """Exact variance of the mean estimate for these true values: ``sum (C^2 - t_i^2) /
        n^2`` on the ``[-1, 1]`` scale, times ``((upper - lower) / 2)^2``."""
        t = self._unit(values)
        n = t.size
        if n == 0:
            raise DataError("`values` must hold at least one number.")
        c = self.bound
        return float(np.sum(c * c - t * t) / (n * n) * self._scale() ** 2)

    def estimate(self, data: Any) -> Estimate:
        """The mean of the numbers, unbiased, with both empirical SEs, the Wald interval and
        the exact one (Clopper-Pearson for the share of ``+C`` reports, mapped)."""
        tally = self._as_tally(data)  # a tally (n_minus, n_plus) of at least one report
        n = tally.n
        plus = int(tally.counts[1])
        c = self.bound
        mean_t = c * (2 * plus / n - 1)
        var = c * c - mean_t * mean_t  # each report is +-C: E[Y^2] = C^2
        var = max(var, 0.0)
        intervals = {"exact": _Interval("exact", self, (plus, n))}
        return self._estimate(n, mean_t, var, var * n / (n - 1) if n > 1 else math.nan, intervals)

    def _interval(self, method: str, data: tuple[int, ...], level: float) -> tuple[float, float]:
        plus, n = data
        lo, hi = beta_quantile_bounds([plus], n, (1 - v.level(level)) / 2)
        c = self.bound
        return self._map_interval(c * (2 * float(lo[0]) - 1), c * (2 * float(hi[0]) - 1))


@dataclass(frozen=True)
class PiecewiseMechanism(_BoundedMean):
    """The piecewise mechanism (Wang et al., ICDE 2019) for the mean of numbers in
    ``[lower, upper]``, on an exact grid of 4096 report values (module docstring).

    >>> m = PiecewiseMechanism(2.0)
    >>> m.window, round(m.implemented_epsilon, 9) <= 2.0
    (1102, True)
    >>> est = m.estimate(m.randomize(np.full(40_000, -0.5), rng=1))
    >>> abs(est.value + 0.5) < 4 * est.se
    True
    """

    name: ClassVar[str] = "piecewise"

    def __post_init__(self) -> None:
        self._check_bounds()
        check_window(self._weights, self.epsilon, self.name, f"{GRID} values")

    @cached_property
    def window(self) -> int:
        """``w``: grid points of the high-probability window, ``round(N / (e^(eps/2) + 1))``
        in ``[1, N - 1]``."""
        return min(GRID - 1, max(1, round(GRID * expit(-self.epsilon / 2))))

    @cached_property
    def _weights(self) -> tuple[int, int]:
        """``(alpha, beta)``: integers with ``w alpha + (N - w) beta = 2**64`` and ``alpha /
        beta`` the largest such ratio at most ``e^eps`` (toward privacy)."""
        return window_weights(self.window, GRID - self.window, self.epsilon)

    @property
    def weights(self) -> tuple[int, int]:
        """``(alpha, beta)``: a grid point's probability is ``alpha / 2**64`` in the window,
        ``beta / 2**64`` outside."""
        return self._weights

    @property
    def implemented_epsilon(self) -> float:
        return window_epsilon(self._weights, self.epsilon)

    @cached_property
    def _linear(self) -> tuple[float, float]:
        """``(c0, c1)``: ``E[u | t] = c0 + c1 t``."""
        alpha, beta = self._weights
        w, rest = self.window, GRID - self.window
        c1 = (alpha - beta) * w * rest / 2.0**65
        return (GRID - 1) / 2, c1

    @property
    def bound(self) -> float:
        """The largest report on the ``[-1, 1]`` scale: ``((N - 1) / 2) / c1``."""
        c0, c1 = self._linear
        return c0 / c1

    @property
    def n_cells(self) -> int:
        return 3

    @property
    def n_reports(self) -> int:
        return GRID

    @property
    def words_per_report(self) -> int:
        return 2

    def _start(self, t: FloatArray) -> tuple[FloatArray, npt.NDArray[np.uint64]]:
        """``(floor(sigma), floor(frac(sigma) 2**53))`` of ``sigma = (t + 1) (N - w) / 2``."""
        sigma = (t + 1.0) * ((GRID - self.window) / 2)
        whole = np.floor(sigma)
        return whole, np.floor((sigma - whole) * 2.0**53).astype(np.uint64)

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.uint16]:
        """Grid reports ``u`` in ``0..4095`` for numbers in ``[lower, upper]``; report ``i``
        uses words ``2 i`` (rounding the window's start) and ``2 i + 1`` (the point)."""
        return window_reports(self._unit(values), self._start, self._weights, self.window, rng)

    def report_distribution(self, value: float) -> FloatArray:
        """``P[u | value]`` for the 4096 grid values, as implemented."""
        t = self._unit([value])
        whole, frac = self._start(t)
        s0, up = int(whole[0]), int(frac[0]) / _TWO53
        alpha, beta = self._weights
        out = np.zeros(GRID)
        for s, weight in ((s0, 1 - up), (s0 + 1, up)):
            if weight == 0:
                continue
            probs = np.full(GRID, beta / _TWO64)
            probs[s : s + self.window] = alpha / _TWO64
            out += weight * probs
        return out

    def report_values(self) -> FloatArray:
        """The value each grid report stands for, on the scale of ``[lower, upper]``."""
        c0, c1 = self._linear
        t = (np.arange(GRID) - c0) / c1
        return np.asarray(self.lower + (t + 1.0) * self._scale(), dtype=np.float64)

    def tally(self, reports: npt.ArrayLike) -> Tally:
        """``(n, sum u, sum u^2)`` of the grid reports, exactly in int64."""
        arr = v.reports_array("reports", reports, categories=GRID).astype(np.int64)
        n = int(arr.size)
        total = int(arr.sum())
        squares = int(np.dot(arr, arr))
        return Tally([n, total, squares], mechanism=self.key)

    def _reports_in(self, tally: Tally) -> int:
        return int(tally.counts[0])

    def variance(self, values: npt.ArrayLike) -> float:
        """Exact variance of the mean estimate for these true values (the implemented grid
        mechanism), on the scale of ``[lower, upper]``."""
        t = self._unit(values)
        if t.size == 0:
            raise DataError("`values` must hold at least one number.")
        grid = np.arange(GRID, dtype=np.float64)
        _, c1 = self._linear
        total = 0.0
        for ti in np.unique(t, return_counts=False):
            probs = self.report_distribution(self._to_value(float(ti)))
            mean = float(probs @ grid)
            var = float(probs @ (grid - mean) ** 2)
            total += var * int(np.count_nonzero(t == ti))
        return total / (c1 * c1) / t.size**2 * self._scale() ** 2

    def estimate(self, data: Any) -> Estimate:
        """The mean of the numbers, unbiased, with both empirical SEs, the Wald interval and
        Hoeffding's (the reports are bounded by :attr:`bound`)."""
        tally = self._as_tally(data)  # (n, sum u, sum u^2) of at least one report
        n, total, squares = (int(c) for c in tally.counts)
        c0, c1 = self._linear
        mean_t = (total / n - c0) / c1
        ss = max(Fraction(squares * n - total * total, n), Fraction(0))  # exact: sum (u - mean)^2
        var_plug = float(ss / n) / (c1 * c1)
        var_unbiased = float(ss / (n - 1)) / (c1 * c1) if n > 1 else math.nan
        intervals = {"hoeffding": _Interval("hoeffding", self, (n, total))}
        return self._estimate(n, mean_t, var_plug, var_unbiased, intervals)

    def _interval(self, method: str, data: tuple[int, ...], level: float) -> tuple[float, float]:
        n, total = data
        c0, c1 = self._linear
        mean_t = (total / n - c0) / c1
        alpha = 1 - v.level(level)
        half = self.bound * math.sqrt(2 * math.log(2 / alpha) / n)
        return self._map_interval(mean_t - half, mean_t + half)
