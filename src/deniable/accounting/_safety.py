"""Rounding toward safety: the margins and root finder every conversion shares.

Every epsilon or delta a conversion returns must be *at least* the true value.  Formulas are
evaluated in floating point, so each result is pushed up by a documented margin:

* ``MARGIN = 2**-36`` (about 1.5e-11) relative, plus ``MARGIN`` times the sum of the absolute
  values of the terms that were added (so a result obtained by cancellation is pushed up by
  more than the rounding error of its largest term);
* a delta that underflows to 0 while its true value is positive is returned as the smallest
  positive double, ``5e-324``;
* a positive result in the subnormal range (below ``MIN_NORMAL``, where a double has lost
  relative precision) is moved up by one more representable double, and a positive quantity
  that would underflow to 0 (``rho = eps tanh(eps/2)`` for ``eps = 1e-300``) is computed in
  scaled arithmetic (:func:`half_square_up`), never returned as 0;
* a result whose true value overflows a double is ``inf``; an exponential that overflows is
  ``inf`` (:func:`exp_or_inf`, :func:`expm1_or_inf`), never an ``OverflowError``;
* roots are bracketed and the side that is safe is returned (:func:`upper_root`).

The margins exceed the accumulated rounding error of the formulas here (tens of ulps, i.e.
~1e-14 relative) by three orders of magnitude and change printed values only in the 11th
significant digit.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "MARGIN",
    "MIN_NORMAL",
    "TINY",
    "UNIT",
    "FloatArray",
    "exp_or_inf",
    "exp_up",
    "expm1_or_inf",
    "half_square_up",
    "half_square_up_array",
    "up",
    "upper_root",
]

MARGIN = 2.0**-36
TINY = math.ulp(0.0)  # 5e-324, the smallest positive double
MIN_NORMAL = sys.float_info.min  # 2.2e-308: below it a double has lost relative precision
UNIT = 2.0**-53  # the unit roundoff of a double: the bound on one operation's relative error
FloatArray = npt.NDArray[np.float64]
_MAX_EXP = math.log(sys.float_info.max)  # 709.78: exp of more overflows


def up(x: float, scale: float = 0.0) -> float:
    """``x`` pushed up by ``MARGIN`` relative plus ``MARGIN * scale`` absolute; 0 and inf stay.

    A positive result below ``MIN_NORMAL`` (subnormal: an absolute rounding error of up to
    half of ``TINY``) is moved up by one more double.
    """
    if x == math.inf or (x == 0.0 and scale == 0.0):
        return x
    out = x + MARGIN * (abs(x) + scale)
    if 0.0 < out < MIN_NORMAL:
        out = math.nextafter(out, math.inf)
    return out


def exp_or_inf(x: float) -> float:
    """``e^x``, or ``inf`` where it overflows a double (``x > 709.78``)."""
    return math.exp(x) if x <= _MAX_EXP else math.inf


def expm1_or_inf(x: float) -> float:
    """``e^x - 1``, or ``inf`` where it overflows a double."""
    return math.expm1(x) if x <= _MAX_EXP else math.inf


def half_square_up(x: float, factor: float = 1.0) -> float:
    """``factor * x^2 / 2`` rounded up, for ``x >= 0`` and ``factor >= 0``.

    Computed on the mantissa (``x = m 2^e``, ``m`` in [1/2, 1)) and scaled by ``2^(2e)``
    exactly, so it never underflows to 0 for ``x, factor > 0`` (``TINY`` at worst) and is
    ``inf`` only where the true value overflows.

    >>> half_square_up(1e-300) > 0, half_square_up(3.0) >= 4.5, half_square_up(1e200)
    (True, True, inf)
    """
    if x == 0.0 or factor == 0.0:
        return 0.0
    if math.isinf(x) or math.isinf(factor):
        return math.inf
    m, e = math.frexp(x)
    # two roundings (factor * m, then * m; / 2 is exact): two steps up cover them
    core = math.nextafter(math.nextafter(factor * m * m / 2, math.inf), math.inf)
    try:
        out = math.ldexp(core, 2 * e)  # exact unless it over- or underflows
    except OverflowError:
        return math.inf
    if out < MIN_NORMAL:  # rounded to a subnormal (or to 0): one step up
        out = math.nextafter(out, math.inf)
    return out


def half_square_up_array(x: float, factor: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """:func:`half_square_up` of ``x`` for every entry of ``factor`` (finite, ``>= 0``)."""
    fac = np.asarray(factor, dtype=np.float64)
    if x == 0.0:
        return np.zeros_like(fac)
    m, e = math.frexp(x)
    core = np.nextafter(np.nextafter(fac * (m * m / 2), math.inf), math.inf)
    with np.errstate(over="ignore", under="ignore"):
        out: Any = np.ldexp(core, 2 * e)
    out = np.where((out < MIN_NORMAL) & (fac > 0), np.nextafter(out, math.inf), out)
    return np.asarray(out, dtype=np.float64)


def exp_up(log_x: float, scale: float = 0.0, cap: float = 1.0) -> float:
    """``exp(log_x)`` rounded up (``scale`` bounds the absolute error of ``log_x``), at most
    ``cap``; a positive value that underflows is returned as ``TINY``."""
    if log_x == -math.inf:
        return 0.0
    if log_x >= math.log(cap):
        return cap
    # a huge ``scale`` (an unreliable log) can push the exponent past log(cap): cap, no overflow
    val = math.exp(min(log_x + MARGIN * (abs(log_x) + scale + 1.0), math.log(cap)))
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
