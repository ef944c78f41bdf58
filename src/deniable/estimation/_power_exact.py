"""Exact binomial tests of a report probability: critical regions and power, vectorized in n.

The number ``Y`` of "yes" reports among ``n`` is ``Binomial(n, lambda)``.  The level-``alpha``
test of ``lambda = lambda0`` rejects

* ``upper``: when ``Y >= c_hi``, ``c_hi`` the smallest count with ``P0(Y >= c_hi) <= alpha``;
* ``lower``: when ``Y <= c_lo``, ``c_lo`` the largest count with ``P0(Y <= c_lo) <= alpha``;
* ``both``: equal tails, each at ``alpha / 2`` (the test dual to the Clopper-Pearson interval).

Its size ``P0(reject)`` is at most ``alpha`` and its power is ``P1(reject)`` under
``Binomial(n, lambda1)``.  Neither is monotone in ``n`` (Chernick & Liu 2002): the size jumps
as the critical count moves, so the power curve is saw-toothed.

:func:`randomized_power_bound` bounds that power from above by a quantity that *is*
nondecreasing in ``n``, which lets a search for the least ``n`` reaching a power skip the
sizes that provably cannot.

Comparisons with ``alpha`` allow a relative ``1e-12`` so that a tail probability equal to
``alpha`` in exact arithmetic (``P(Y = 5) = 1/32`` at ``n = 5``, ``lambda0 = 1/2``) is not
lost to floating-point rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["TAILS", "exact_power_table", "randomized_power_bound"]

TAILS = ("upper", "lower", "both")
_REL = 1e-12

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def _upper_count(n: IntArray, lam0: float, a: float) -> IntArray:
    """Smallest ``c`` in ``[0, n + 1]`` with ``P(Y >= c) <= a`` (``n + 1``: never reject)."""
    from scipy import stats

    lim = a * (1 + _REL)
    c = np.asarray(stats.binom.isf(a, n, lam0), dtype=np.int64) + 1  # scipy: sf(c - 1) <= a
    c = np.clip(c, 0, n + 1)
    for _ in range(3):  # repair float noise in scipy's inversion: a step or two at most
        worse = (c <= n) & (stats.binom.sf(c - 1, n, lam0) > lim)
        c = np.where(worse, c + 1, c)
        better = (c > 0) & (stats.binom.sf(c - 2, n, lam0) <= lim)
        c = np.where(better, c - 1, c)
    return c


def _lower_count(n: IntArray, lam0: float, a: float) -> IntArray:
    """Largest ``c`` in ``[-1, n]`` with ``P(Y <= c) <= a`` (``-1``: never reject)."""
    from scipy import stats

    lim = a * (1 + _REL)
    c = np.asarray(stats.binom.ppf(a, n, lam0), dtype=np.int64)  # smallest with cdf >= a
    c = np.clip(c, -1, n)
    for _ in range(3):
        worse = (c >= 0) & (stats.binom.cdf(c, n, lam0) > lim)
        c = np.where(worse, c - 1, c)
        better = (c < n) & (stats.binom.cdf(c + 1, n, lam0) <= lim)
        c = np.where(better, c + 1, c)
    return c


def _reject_probability(n: IntArray, lo: IntArray, hi: IntArray, lam: float) -> FloatArray:
    """``P(Y <= lo) + P(Y >= hi)`` under ``Binomial(n, lam)`` (empty tails count 0)."""
    from scipy import stats

    low = np.where(lo >= 0, stats.binom.cdf(lo, n, lam), 0.0)
    high = np.where(hi <= n, stats.binom.sf(hi - 1, n, lam), 0.0)
    out: FloatArray = np.minimum(low + high, 1.0)
    return out


def exact_power_table(
    n: npt.ArrayLike, lam0: float, lam1: float, tail: str, alpha: float
) -> tuple[FloatArray, FloatArray, IntArray, IntArray]:
    """``(power, size, c_lo, c_hi)`` of the exact test at every sample size in ``n``.

    The test rejects when the yes count is ``<= c_lo`` or ``>= c_hi`` (``c_lo = -1`` and
    ``c_hi = n + 1`` mark an empty tail); ``tail`` is ``upper``, ``lower`` or ``both``.

    >>> pw, size, lo, hi = exact_power_table([10], 0.5, 0.8, "upper", 0.05)
    >>> int(lo[0]), int(hi[0]), round(float(size[0]), 6)      # P(Y >= 9) = 11/1024
    (-1, 9, 0.010742)
    """
    nn: Any = np.atleast_1d(np.asarray(n, dtype=np.int64))
    empty_lo = np.full(nn.shape, -1, dtype=np.int64)
    empty_hi = nn + 1
    if tail == "upper":
        lo, hi = empty_lo, _upper_count(nn, lam0, alpha)
    elif tail == "lower":
        lo, hi = _lower_count(nn, lam0, alpha), empty_hi
    else:
        lo, hi = _lower_count(nn, lam0, alpha / 2), _upper_count(nn, lam0, alpha / 2)
    return (
        _reject_probability(nn, lo, hi, lam1),
        _reject_probability(nn, lo, hi, lam0),
        lo,
        hi,
    )


def _randomized_tail(n: IntArray, lam0: float, lam1: float, upper: bool, a: float) -> FloatArray:
    """Power at ``lam1`` of the randomized one-sided test of size exactly ``a``."""
    from scipy import stats

    if upper:
        c = _upper_count(n, lam0, a)
        edge = c - 1  # the count rejected with probability gamma
        taken = np.where(c <= n, stats.binom.sf(c - 1, n, lam0), 0.0)
        beyond = np.where(c <= n, stats.binom.sf(c - 1, n, lam1), 0.0)
    else:
        c = _lower_count(n, lam0, a)
        edge = c + 1
        taken = np.where(c >= 0, stats.binom.cdf(c, n, lam0), 0.0)
        beyond = np.where(c >= 0, stats.binom.cdf(c, n, lam1), 0.0)
    at_edge0 = stats.binom.pmf(edge, n, lam0)
    with np.errstate(divide="ignore", invalid="ignore"):
        gamma = np.where(at_edge0 > 0, np.clip((a - taken) / at_edge0, 0.0, 1.0), 0.0)
    out: FloatArray = np.minimum(beyond + gamma * stats.binom.pmf(edge, n, lam1), 1.0)
    return out


def randomized_power_bound(
    n: npt.ArrayLike, lam0: float, lam1: float, tail: str, alpha: float
) -> FloatArray:
    """An upper bound on the exact test's power, nondecreasing in ``n`` when ``lambda1``
    lies on the rejecting side of ``lambda0`` (the only case a sample-size search meets).

    One-sided: the power of the randomized Neyman-Pearson test of size exactly ``alpha``
    (randomizing on the boundary count).  It is the most powerful level-``alpha`` test of
    ``lambda0`` against ``lambda1`` (Neyman & Pearson 1933), so it bounds the exact
    (non-randomized, size <= alpha) test, and it is nondecreasing in ``n``: with ``n + 1``
    reports, ignoring the last and applying the ``n``-report test is one level-``alpha``
    test among those it beats.  Two-sided (equal tails): the tail away from ``lambda1``
    rejects with probability at most its size ``alpha / 2`` (the binomial is stochastically
    ordered in ``lambda``), so the bound is the one-sided bound at ``alpha / 2`` toward
    ``lambda1`` plus ``alpha / 2``.

    >>> pw, *_ = exact_power_table(range(1, 200), 0.5, 0.6, "upper", 0.05)
    >>> bool((randomized_power_bound(range(1, 200), 0.5, 0.6, "upper", 0.05) >= pw).all())
    True
    """
    nn: Any = np.atleast_1d(np.asarray(n, dtype=np.int64))
    if tail == "both":
        toward_up = lam1 >= lam0
        return np.minimum(_randomized_tail(nn, lam0, lam1, toward_up, alpha / 2) + alpha / 2, 1.0)
    return _randomized_tail(nn, lam0, lam1, tail == "upper", alpha)
