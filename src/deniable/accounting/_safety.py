"""Rounding toward safety: the margins and root finder every conversion shares.

Every epsilon or delta a conversion returns must be *at least* the true value.  Formulas are
evaluated in floating point, so each result is pushed up by a documented margin:

* ``MARGIN = 2**-36`` (about 1.5e-11) relative, plus ``MARGIN`` times the sum of the absolute
  values of the terms that were added (so a result obtained by cancellation is pushed up by
  more than the rounding error of its largest term);
* a delta that underflows to 0 while its true value is positive is returned as the smallest
  positive double, ``5e-324``;
* roots are bracketed and the side that is safe is returned (:func:`upper_root`).

The margins exceed the accumulated rounding error of the formulas here (tens of ulps, i.e.
~1e-14 relative) by three orders of magnitude and change printed values only in the 11th
significant digit.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["MARGIN", "TINY", "exp_up", "up", "upper_root"]

MARGIN = 2.0**-36
TINY = math.ulp(0.0)  # 5e-324, the smallest positive double


def up(x: float, scale: float = 0.0) -> float:
    """``x`` pushed up by ``MARGIN`` relative plus ``MARGIN * scale`` absolute; 0 and inf stay."""
    if x == math.inf or (x == 0.0 and scale == 0.0):
        return x
    return x + MARGIN * (abs(x) + scale)


def exp_up(log_x: float, scale: float = 0.0, cap: float = 1.0) -> float:
    """``exp(log_x)`` rounded up (``scale`` bounds the absolute error of ``log_x``), at most
    ``cap``; a positive value that underflows is returned as ``TINY``."""
    if log_x == -math.inf:
        return 0.0
    if log_x >= math.log(cap):
        return cap
    val = math.exp(log_x + MARGIN * (abs(log_x) + scale + 1.0))
    return min(cap, max(val, TINY))


def upper_root(
    f: Callable[[float], float], target: float, lo: float, hi: float, *, rtol: float = 1e-12
) -> float:
    """Smallest-found ``x`` in ``[lo, hi]`` with ``f(x) <= target`` for a non-increasing ``f``.

    Requires ``f(hi) <= target``.  Bisection keeps ``f(hi) <= target`` as an invariant, so the
    returned ``hi`` is always on the safe side of the root; stops when the bracket is narrower
    than ``rtol * hi`` (or 1e-300).
    """
    if f(lo) <= target:
        return lo
    for _ in range(2000):
        if hi - lo <= max(rtol * abs(hi), 1e-300):
            break
        mid = (
            lo + (hi - lo) / 2
            if hi - lo < 4 * max(abs(lo), 1.0)
            else math.sqrt(max(lo, 1e-300) * hi)
        )
        if mid <= lo or mid >= hi:
            break
        if f(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi
