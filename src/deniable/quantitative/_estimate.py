"""The mean of de-scrambled values, from a simple random sample or under a sample design.

Every design here turns each report ``Z_i`` into a de-scrambled value ``X^_i`` with
``E[X^_i | X_i] = X_i`` (e.g. ``Z_i - E[S]`` for additive scrambling).  The mean is their
average, and since the ``X^_i`` are independent across respondents with variance
``Var X^`` (the answer's variance plus the scrambling's), the variance of the mean from a
simple random sample (with replacement) is ``Var X^ / n``, estimated without bias by
``s^2 / n`` with ``s^2`` their sample variance (Pollock & Bek 1976; Chaudhuri 2011,
ch. 5).  Under a sample design the scrambling is one more stage of sampling, independent
of the first, so the ``X^_i`` are the linearization variables: the Hajek mean ``sum w X^ /
sum w`` and its Taylor (Woodruff 1971) or replicate variance are
:func:`deniable.sampling.survey_ratio` of ``X^`` over ones (Chaudhuri 2011, ch. 11; RRTCS
estimates the same way).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.exceptions import DataError, ParameterError
from deniable.quantitative._results import NumberEstimate
from deniable.sampling import ReplicateDesign, SampleDesign, survey_ratio

__all__ = [
    "check_sample_design",
    "estimate_mean",
    "finite_array",
    "finite_result",
    "scale_of",
]

FloatArray = npt.NDArray[np.float64]


def finite_array(name: str, values: Any, *, show: bool = True) -> FloatArray:
    """``values`` as a 1-D float array of finite numbers (a scalar is one value).  With
    ``show=False`` a message names the row but never the value (a true answer)."""
    arr = np.asarray(values)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.dtype.kind not in "biuf":
        raise DataError(
            f"`{name}` must be a 1-D array of numbers, got shape {arr.shape} dtype {arr.dtype}."
        )
    if arr.size == 0:
        raise DataError(f"`{name}` must hold at least one number, got none.")
    out = arr.astype(np.float64)
    bad = ~np.isfinite(out)
    if bad.any():
        i = int(np.argmax(bad))
        what = f"{float(out[i])!r} at row {i}" if show else f"a value that is not at row {i}"
        raise DataError(f"`{name}` must hold finite numbers, got {what}.")
    return out


def scale_of(values: FloatArray) -> float:
    """The largest absolute value (1 for all zeros): means and variances are computed on
    ``values / scale`` and scaled back, so that squares of huge values cannot overflow."""
    top = float(np.max(np.abs(values))) if values.size else 0.0
    return top if top > 0 else 1.0


def finite_result(name: str, values: FloatArray, what: str) -> FloatArray:
    """``values``, or ``DataError`` naming the first row where ``what`` is not finite (a
    value past the largest double)."""
    bad = ~np.isfinite(values)
    if bad.any():
        raise DataError(
            f"`{name}` is too large at row {int(np.argmax(bad))}: its {what} is past the "
            "largest floating-point number."
        )
    return values


def check_sample_design(sample_design: Any) -> None:
    """Refuse a ``sample_design`` that is neither ``None`` nor a design of
    :mod:`deniable.sampling` (``ParameterTypeError``)."""
    v.instance_or_none(
        "sample_design",
        sample_design,
        SampleDesign | ReplicateDesign,
        "a SampleDesign or a ReplicateDesign (deniable.sampling)",
    )


def _population(population: Any) -> float | None:
    if population is None:
        return None
    return v.positive("population", population)


def _domain(domain: Any, n: int) -> npt.NDArray[np.bool_] | None:
    if domain is None:
        return None
    arr = np.asarray(domain)
    if arr.ndim != 1 or arr.dtype.kind not in "biu" or arr.size != n:
        raise DataError(
            f"`domain` must be a 1-D boolean array with one entry per report ({n}), got "
            f"shape {arr.shape} dtype {arr.dtype}."
        )
    if arr.dtype.kind != "b" and not np.isin(arr, (0, 1)).all():
        raise DataError("`domain` must hold only True/False (or 1/0).")
    return arr.astype(bool)


def _scaled(c: float, value: float, se: float, extra_variance: float) -> tuple[float, float]:
    """``(c value, sqrt((c se)^2 + extra))``, refused past the largest double."""
    with np.errstate(over="ignore"):
        out_value = c * value
        out_se = float(np.hypot(c * se, math.sqrt(extra_variance)))
    if not (math.isfinite(out_value) and math.isfinite(out_se)):
        raise DataError(
            "`reports` are too large: their mean or its standard error is past the largest "
            "floating-point number."
        )
    return out_value, out_se


def estimate_mean(
    descrambled: FloatArray,
    design: str,
    *,
    sample_design: Any = None,
    population: Any = None,
    domain: Any = None,
    parameter: str = "mean",
    notes: tuple[str, ...] = (),
    extra_variance: float = 0.0,
) -> NumberEstimate:
    """The mean of ``descrambled`` (one unbiased value per respondent) with its SE, from a
    simple random sample or under ``sample_design`` (a SampleDesign or a ReplicateDesign),
    and ``population`` times it as the total.  ``extra_variance``: the variance of an
    independent estimate the values were computed with (added to the mean's)."""
    finite_result("reports", descrambled, "de-scrambled value")
    n_all = descrambled.size
    mask = _domain(domain, n_all)
    c = scale_of(descrambled)
    big_n = _population(population)
    if sample_design is not None:
        check_sample_design(sample_design)
        res = survey_ratio(descrambled / c, np.ones(n_all), sample_design, domain=mask)
        value, se = _scaled(c, float(res.value), float(res.se), extra_variance)
        return NumberEstimate(
            parameter, value, se, res.df, res.n, res.variance_method, design,
            sample_design=res.design, deff=float(res.deff), population=big_n,
            total=None if big_n is None else big_n * value,
            se_total=None if big_n is None else big_n * se,
            notes=(*notes, *res.notes),
        )  # fmt: skip
    x = (descrambled if mask is None else descrambled[mask]) / c
    n = x.size
    if n < 2:
        raise DataError(
            f"the mean's standard error needs at least 2 reports (in the domain), got {n}."
        )
    s2 = float(x.var(ddof=1))
    value, se = _scaled(c, float(x.mean()), math.sqrt(s2 / n), extra_variance)
    se_plug_in = _scaled(c, 0.0, math.sqrt(s2 * (n - 1) / n / n), extra_variance)[1]
    if big_n is not None and mask is None and big_n < n:
        raise ParameterError(
            f"`population` must be at least the number of reports ({n}), got {big_n:g}."
        )
    return NumberEstimate(
        parameter, value, se, float(n - 1), n, "simple random sample", design,
        se_plug_in=se_plug_in, population=big_n,
        total=None if big_n is None else big_n * value,
        se_total=None if big_n is None else big_n * se, notes=notes,
    )  # fmt: skip
