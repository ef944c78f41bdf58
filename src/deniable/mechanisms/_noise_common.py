"""Helpers shared by the noise mechanisms: rounding toward safety, exact rationals, checks
of the released values and of the sensitivity, uniform doubles from 64-bit words, and the
pure-DP guarantee of Laplace noise (:class:`_LaplaceEpsilon`)."""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.accounting import PureDP
from deniable.common import validation as v
from deniable.exceptions import DataError, ParameterError

_TWO_M53 = 2.0**-53
_MAX_DOUBLE = Fraction(sys.float_info.max)
_TINY = math.ulp(0.0)  # the smallest positive double


def _up(x: float, steps: int = 1) -> float:
    """``x`` moved ``steps`` representable doubles towards +inf (round toward safety)."""
    for _ in range(steps):
        x = math.nextafter(x, math.inf)
    return x


def _raise_until(ok: Any, x: float, what: str, step: int = 1) -> float:
    """The first of ``x``, then ``x`` moved up ``step`` doubles at a time, where ``ok``
    holds; after 1,000 such steps the step doubles each time, so even a start far from the
    answer ends within about 1,100 steps (about 200 doublings cover every double)."""
    for _ in range(1000):
        if ok(x):
            return x
        x = _up(x, step)
    size = float(step)
    while not ok(x):
        if not math.isfinite(x):  # pragma: no cover - ok holds long before
            raise ParameterError(f"no {what} within the doubles meets the target.")
        x += math.ulp(x) * size
        size *= 2
    return x


def _finite_noise(value: float, what: str, inputs: str, hint: str) -> float:
    """``value`` (a noise scale or sigma) if a positive finite double, else one error naming
    the ``inputs`` that asked for it and what to ask instead (``hint``)."""
    if value == 0 or not math.isfinite(value):
        side = "above the largest double (1.8e308)" if value else "below the smallest double"
        raise ParameterError(f"{inputs} need a noise {what} {side}; {hint}.")
    return value


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
            raise DataError(
                f"`values` must hold integers, got a number that is not at index "
                f"{int(np.flatnonzero(~ok)[0])} (values are not shown in errors)."
            )
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


def _check_noise(mech: Any, noise: str, *, exact: bool) -> None:
    """Check a frozen noise mechanism's noise parameter ``noise`` (``"scale"`` or
    ``"sigma"``) and its ``sensitivity``, in that order, and store what the checks return:
    a real > 0 each, or with ``exact`` (discrete noise) a noise parameter of
    :func:`_exact_positive` and an integer sensitivity >= 1."""
    value = getattr(mech, noise)
    checked: Fraction | float
    sensitivity: int | float
    if exact:
        checked, sensitivity = _exact_positive(noise, value), _int_sensitivity(mech.sensitivity)
    else:
        checked, sensitivity = v.positive(noise, value), _sensitivity(mech.sensitivity)
    object.__setattr__(mech, noise, checked)
    object.__setattr__(mech, "sensitivity", sensitivity)


def _exact_positive(name: str, value: Any) -> Fraction:
    """A positive finite real (int, float or Fraction) as the exact rational it denotes."""
    if isinstance(value, Fraction):
        if value <= 0:
            raise ParameterError(f"`{name}` must be in (0, inf), got {value}.")
        return value
    return Fraction(v.positive(name, value))


class _LaplaceEpsilon:
    """The pure-DP guarantee of Laplace noise, continuous or discrete, of scale ``scale``
    for a query of sensitivity ``sensitivity``."""

    scale: Fraction | float
    sensitivity: float

    @property
    def epsilon(self) -> float:
        # eps = Delta / b: the densities (pmfs) at x and x + Delta differ by e^(Delta / b)
        return _float_up(Fraction(self.sensitivity) / Fraction(self.scale))

    @property
    def guarantee(self) -> PureDP:
        """The privacy guarantee, ``PureDP(epsilon)``."""
        return PureDP(self.epsilon)
