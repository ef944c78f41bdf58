"""Association between two randomized-response items, from their joint estimate, with
delta-method standard errors under simple random sampling or the survey design.

For two binary items with joint table ``p[a, b]`` (``a`` the first item, ``b`` the second):

* odds ratio ``p11 p00 / (p10 p01)``, its interval on the log scale (Woolf 1955;
  Christofides 2005 for randomized response);
* relative risk ``P(b = 1 | a = 1) / P(b = 1 | a = 0)``, log scale, and the risk difference
  ``P(b = 1 | a = 1) - P(b = 1 | a = 0)``;
* the correlation of the true answers, phi ``(p11 p00 - p10 p01) / sqrt(p1. p0. p.1 p.0)``:
  for binary items it is Fox & Tracy's (1984) corrected correlation (RRreg's ``RRcor``):
  the reports' covariance divided by both channels' slopes ``P1 - P0``, over the true
  answers' standard deviations; and, for comparison, the uncorrected correlation of the
  reports, attenuated toward 0 by the randomization.

For items of any number of values, Cramer's V ``sqrt(phi^2 / min(r - 1, c - 1))`` with
``phi^2 = sum (p_ab - p_a. p_.b)^2 / (p_a. p_.b)`` (Cramer 1946).  Every SE is the delta
method, ``grad f^T V grad f`` with ``V`` the joint estimate's covariance (the gradient by
central differences).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import format_number, to_jsonable
from deniable.common import validation as v
from deniable.estimation._joint_results import JOINT_ESTIMATORS, JointEstimate, quantile
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.results import ConfidenceInterval, Result, Table

__all__ = ["Association", "AssociationMeasure", "association", "pair_of"]

FloatArray = npt.NDArray[np.float64]


def pair_of(joint: Any, items: Any) -> JointEstimate:
    """The two-item joint estimate of ``items`` (a pair of indices) from ``joint``."""
    if not isinstance(joint, JointEstimate):
        raise ParameterTypeError(
            f"`joint` must be a JointEstimate (from joint_estimate), got {type(joint).__name__}."
        )
    pair = tuple(items)
    if len(pair) != 2:
        raise ParameterError(f"`items` must be a pair of item indices, got {items!r}.")
    if pair == (0, 1) and len(joint.shape) == 2:
        return joint
    return joint.marginal(pair)


def _odds_ratio(p: FloatArray) -> float:
    return float(math.log(p[3] * p[0] / (p[2] * p[1])))


def _conditional(p: FloatArray) -> tuple[float, float]:
    return float(p[3] / (p[2] + p[3])), float(p[1] / (p[0] + p[1]))


def _log_relative_risk(p: FloatArray) -> float:
    a, b = _conditional(p)
    return math.log(a / b)


def _risk_difference(p: FloatArray) -> float:
    a, b = _conditional(p)
    return a - b


def _phi(p: FloatArray) -> float:
    r1, c1 = p[2] + p[3], p[1] + p[3]
    r0, c0 = p[0] + p[1], p[0] + p[2]
    return float((p[3] * p[0] - p[2] * p[1]) / math.sqrt(r0 * r1 * c0 * c1))


def _cramers_v(shape: tuple[int, int]) -> Callable[[FloatArray], float]:
    def f(p: FloatArray) -> float:
        t = p.reshape(shape)
        expected = np.outer(t.sum(axis=1), t.sum(axis=0))
        phi2 = float(np.sum((t - expected) ** 2 / expected))
        return math.sqrt(max(phi2, 0.0) / (min(shape) - 1))

    return f


def _delta(f: Callable[[FloatArray], float], p: FloatArray, cov: FloatArray) -> tuple[float, float]:
    """``(f(p), se)`` by the delta method (central differences); NaN where undefined."""
    with np.errstate(all="ignore"):
        try:
            value = f(p)
        except (ValueError, ZeroDivisionError):
            return math.nan, math.nan
        if not math.isfinite(value):
            return math.nan, math.nan
        grad = np.empty(p.size)
        for j in range(p.size):
            h = 1e-6 * max(abs(float(p[j])), 1e-3)
            up, down = p.copy(), p.copy()
            up[j] += h
            down[j] -= h
            try:
                grad[j] = (f(up) - f(down)) / (2 * h)
            except (ValueError, ZeroDivisionError):
                return value, math.nan
        var = float(grad @ cov @ grad)
    return value, math.sqrt(var) if var >= 0 else math.nan


@dataclass(frozen=True)
class AssociationMeasure:
    """One measure: ``value`` with ``se`` (on the ``scale`` the interval is built on:
    ``log`` for the odds ratio and relative risk) and the interval ``ci``."""

    name: str
    label: str
    value: float
    se: float
    scale: str
    ci: ConfidenceInterval


@dataclass(frozen=True, eq=False)
class Association(Result):
    """Measures of association between two randomized-response items (see
    :func:`association`); ``result["odds_ratio"]`` is one :class:`AssociationMeasure`."""

    items: tuple[str, ...]
    shape: tuple[int, int]
    measures: tuple[AssociationMeasure, ...]
    estimator: str
    level: float
    n: int
    df: float
    variance_method: str
    design: str
    notes: tuple[str, ...] = ()

    def __getitem__(self, name: str) -> AssociationMeasure:
        names = [m.name for m in self.measures]
        return self.measures[names.index(v.choice("name", name, names))]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: each measure's value, SE (and its scale) and interval."""
        out = {
            "items": list(self.items), "shape": list(self.shape), "estimator": self.estimator,
            "level": self.level, "n": self.n, "df": self.df,
            "variance_method": self.variance_method, "design": self.design,
            "measures": [
                {"name": m.name, "estimate": m.value, "se": m.se, "se_scale": m.scale,
                 "ci": m.ci} for m in self.measures
            ],
            "notes": list(self.notes),
        }  # fmt: skip
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self) -> Table:
        """One row per measure."""
        rows = tuple(
            (m.label, format_number(m.value, 6),
             format_number(m.se, 6) + (" (log)" if m.scale == "log" else ""), m.ci.format(6))
            for m in self.measures
        )  # fmt: skip
        return Table(
            ("measure", "estimate", "SE", f"{self.level:.0%} CI"), rows,
            title=f"Association of {' and '.join(self.items)} ({self.estimator} estimate; "
            f"{self.design})",
            notes=(f"SE: {self.variance_method}, delta method", *self.notes), align="lrrr",
        )  # fmt: skip


def association(
    joint: JointEstimate, *, items: Any = (0, 1), estimator: str = "moment", level: float = 0.95
) -> Association:
    """Measures of association between two items of a joint estimate.

    Parameters
    ----------
    joint : from :func:`joint_estimate` (simple random sampling or a survey design: the
        SEs follow it).
    items : the pair of items (indices into ``joint.items``); the others are summed out.
    estimator : ``"moment"`` (the unbiased estimate; a measure is NaN where a cell it
        needs is <= 0) or ``"mle"`` (the MLE on the simplex).
    level : the intervals' confidence level (normal quantile under simple random
        sampling, Student t with the design's df otherwise).

    Returns
    -------
    Association
        Two binary items: ``odds_ratio``, ``relative_risk`` (both with log-scale SEs and
        intervals), ``risk_difference``, ``correlation`` (phi of the true answers, Fox &
        Tracy's corrected correlation), ``report_correlation`` (uncorrected, of the
        reports) and ``cramers_v``; otherwise ``cramers_v``.

    Examples
    --------
    >>> from deniable.designs import Custom
    >>> from deniable.estimation import joint_estimate
    >>> direct = Custom(1.0, 0.0)
    >>> a = [0, 0, 0, 1, 1, 1, 0, 1]
    >>> b = [0, 0, 1, 1, 1, 0, 0, 1]
    >>> result = association(joint_estimate([direct, direct], [a, b]))
    >>> round(result["odds_ratio"].value, 6)  # (3 * 3) / (1 * 1)
    9.0
    """
    v.choice("estimator", estimator, JOINT_ESTIMATORS)
    lvl = v.level(level)
    pair = pair_of(joint, items)
    p, cov = pair.estimate(estimator)
    shape = (pair.shape[0], pair.shape[1])
    q = quantile(lvl, pair.df)
    notes: list[str] = []
    measures: list[AssociationMeasure] = []

    def add(name: str, label: str, f: Callable[[FloatArray], float], log: bool = False,
            values: FloatArray = p, covariance: FloatArray = cov) -> None:  # fmt: skip
        value, se = _delta(f, values, covariance)
        lo, hi = value - q * se, value + q * se
        if log:
            value, lo, hi = math.exp(value), math.exp(lo), math.exp(hi)
        measures.append(
            AssociationMeasure(
                name, label, value, se, "log" if log else "", ConfidenceInterval(lo, hi)
            )
        )

    if shape == (2, 2):
        add("odds_ratio", "odds ratio", _odds_ratio, log=True)
        add("relative_risk", "relative risk", _log_relative_risk, log=True)
        add("risk_difference", "risk difference", _risk_difference)
        add("correlation", "correlation (phi; Fox-Tracy corrected)", _phi)
        reports = pair.report_shares
        if reports is not None and reports.size == 4 and pair.report_covariance is not None:
            add("report_correlation", "correlation of the reports (uncorrected)", _phi,
                values=reports, covariance=pair.report_covariance)  # fmt: skip
        if (p <= 0).any():
            notes.append(
                f"the {estimator} estimate has a cell <= 0: the odds ratio and relative risk "
                "are not defined (NaN); use estimator='mle' or more respondents."
            )
    add("cramers_v", "Cramer's V", _cramers_v(shape))
    notes.append(
        "Cramer's V is biased upward (its square's expectation exceeds the truth by about "
        "(r - 1)(c - 1) / n under multinomial sampling, more under randomized response; "
        "Bergsma 2013), and near 0 its delta-method interval is not valid (V is not "
        "differentiable at independence): test independence with independence_test."
    )
    if estimator == "mle" and pair.mle_boundary:
        notes.append("the MLE is on the boundary of the simplex: its SEs are not valid (NaN).")
    return Association(
        pair.items, shape, tuple(measures), estimator, lvl, pair.n, pair.df,
        pair.variance_method, pair.design, tuple(notes),
    )  # fmt: skip
