"""The symmetric interval ``value ± q · se`` of a design-based estimate, with ``q`` the
Student t quantile (the estimate's degrees of freedom) or the standard normal one: one
helper for every estimate that offers ``t`` and ``wald`` intervals."""

from __future__ import annotations

from typing import overload

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.results._estimate import normal_quantile, t_quantile
from deniable.results._interval import ConfidenceInterval

__all__ = ["SYMMETRIC_INTERVALS", "t_interval"]

#: The methods of :func:`t_interval`: ``t`` (Student t) and ``wald`` (standard normal).
SYMMETRIC_INTERVALS = ("t", "wald")

FloatArray = npt.NDArray[np.float64]


@overload
def t_interval(
    value: float, se: float, df: float, level: float = ..., method: str = ...
) -> ConfidenceInterval: ...
@overload
def t_interval(
    value: FloatArray, se: FloatArray, df: float, level: float = ..., method: str = ...
) -> FloatArray: ...
def t_interval(
    value: float | FloatArray,
    se: float | FloatArray,
    df: float,
    level: float = 0.95,
    method: str = "t",
) -> ConfidenceInterval | FloatArray:
    """Two-sided interval ``value ± q · se`` at ``level``.

    ``q`` is the ``(1 + level) / 2`` quantile of Student's t with ``df`` degrees of freedom
    (``method="t"``; for a design-based estimate, ``df`` is the number of PSUs minus the
    number of strata, Korn & Graubard 1999, sec. 5.2; NaN bounds when ``df < 1``) or of
    the standard normal distribution (``method="wald"``).

    Parameters
    ----------
    value, se : the estimate and its standard error: floats (a
        :class:`ConfidenceInterval`) or arrays of one shape ``(k,)`` (a ``(k, 2)`` array of
        ``[low, high]`` rows).
    df : degrees of freedom of the t quantile (ignored by ``wald``).
    level : in (0, 1).
    method : ``"t"`` or ``"wald"``.

    Examples
    --------
    >>> t_interval(10.0, 2.0, df=4, level=0.95).format(3)
    '[4.447, 15.553]'
    >>> t_interval(10.0, 2.0, df=4, method="wald").format(3)
    '[6.080, 13.920]'
    """
    lvl = v.level(level)
    v.choice("method", method, SYMMETRIC_INTERVALS)
    q = t_quantile(lvl, df) if method == "t" else normal_quantile(lvl)
    if isinstance(value, np.ndarray) or isinstance(se, np.ndarray):
        return np.stack([value - q * se, value + q * se], axis=1)
    return ConfidenceInterval(value - q * se, value + q * se)
