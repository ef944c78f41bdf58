"""Sums of doubles rounded upward, never below the exact sum: what a privacy budget needs so
that floating point can never under-count what was spent (see ``_ledger``)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = ["add_up"]


def add_up(a: npt.ArrayLike, b: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``a + b`` elementwise, rounded upward: never below the exact sum of the two doubles.

    TwoSum (Knuth 1969, TAOCP vol. 2, 4.2.2): ``s = a + b``, ``bb = s - a``,
    ``err = (a - (s - bb)) + (b - bb)`` is the exact rounding error ``a + b - s`` (for finite
    sums); where ``err > 0`` the rounded sum is below the exact one and is moved up by one
    double.

    >>> float(add_up(0.1, 0.2)), float(add_up(0.5, 0.25))
    (0.30000000000000004, 0.75)
    >>> float(add_up(0.2, 0.1)) > 0.3
    True
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        s = x + y
        bb = s - x
        err = (x - (s - bb)) + (y - bb)  # NaN for infinite sums: left as they are
        # the largest double moved up is inf: still never below the exact sum
        out: npt.NDArray[np.float64] = np.where(err > 0, np.nextafter(s, math.inf), s)
    return out
