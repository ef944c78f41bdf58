"""Design-based results: :class:`SurveyEstimate` (one number: a prevalence, a ratio, a mean)
and :class:`SurveyFrequencies` (the ``k`` frequencies of a categorical design or a frequency
oracle).

Intervals: ``t`` (the default: ``value +- t_{df} se`` with the design's degrees of freedom,
as R's ``confint(svymean(...), df = degf(design))``), ``wald`` (normal quantile),
``exact`` (Clopper & Pearson 1934, only for an equal-probability unclustered design; the
result says why otherwise) and ``korn-graubard`` (Korn & Graubard 1998: Clopper-Pearson at
the effective sample size ``lambda (1 - lambda) / V(lambda)``, scaled by ``(t_{n-1} /
t_{df})^2``: R's ``svyciprop(method = "beta")``), both mapped through the design's channel
and clipped to [0, 1].
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable import results
from deniable.common import format_interval, format_number, to_jsonable
from deniable.common import validation as v
from deniable.exceptions import ParameterError
from deniable.results import ConfidenceInterval, Result, Table, binomial_interval, map_interval

__all__ = ["DomainEstimates", "SurveyEstimate", "SurveyFrequencies"]

FloatArray = npt.NDArray[np.float64]


def korn_graubard(lam: float, var: float, n: int, df: float, level: float) -> tuple[float, float]:
    """Korn & Graubard's (1998) interval for a share ``lam`` with design variance ``var``
    from ``n`` respondents: Clopper-Pearson at ``n* = lam (1 - lam) / var * (t_{n-1} /
    t_df)^2`` (R's ``svyciprop(method = "beta")``)."""
    from scipy import stats

    alpha = 1 - v.level(level)
    if not (var > 0 and df >= 1 and n > 1):
        return (math.nan, math.nan)
    ratio = stats.t.ppf(alpha / 2, n - 1) / stats.t.ppf(alpha / 2, df)
    n_eff = lam * (1 - lam) / var * ratio * ratio
    lo = 0.0 if lam <= 0 else float(stats.beta.ppf(alpha / 2, n_eff * lam, n_eff * (1 - lam) + 1))
    hi = (
        1.0
        if lam >= 1
        else float(stats.beta.ppf(1 - alpha / 2, n_eff * lam + 1, n_eff * (1 - lam)))
    )
    return (lo, hi)


@dataclass(frozen=True)
class SurveyEstimate(Result):
    """One design-based estimate: a prevalence (de-biased randomized response), a ratio or a
    mean, with its design-based SE, degrees of freedom, design effect and intervals.

    Attributes
    ----------
    parameter : what is estimated (``prevalence``, ``ratio``, ...).
    value : the estimate (Hajek's weighted estimate for a prevalence: may leave [0, 1]).
    se : its design-based standard error (:attr:`variance_method`).
    df : degrees of freedom of the variance (``#PSUs - #strata``, or the replicates').
    n : respondents in the estimate (in the domain, for a domain).
    variance_method : ``Taylor linearization`` or the replicate method.
    design : one line describing the design.
    deff : the design effect, ``se^2`` over the variance of simple random sampling (with
        replacement) of the same ``n`` with the same randomized response: ``s_w^2 / n``,
        ``s_w^2`` the weighted variance of the de-biased reports (Kish 1965).
    total, se_total : the Horvitz-Thompson total (the estimated number with the trait) and
        its SE, where it applies.
    population : the sum of the weights (in the domain).
    lambda_hat, p_yes_given_1, p_yes_given_0 : the weighted share of "yes" reports and the
        channel, where the estimate de-biases a binary report.
    exact_counts : ``(yes, n)`` where the exact interval is valid, else ``None``.
    exact_reason : why the exact interval is not offered (empty when it is).
    notes : further remarks.
    """

    parameter: str
    value: float
    se: float
    df: float
    n: int
    variance_method: str
    design: str
    deff: float = math.nan
    total: float | None = None
    se_total: float | None = None
    population: float | None = None
    lambda_hat: float | None = None
    p_yes_given_1: float | None = None
    p_yes_given_0: float | None = None
    exact_counts: tuple[int, int] | None = None
    exact_reason: str = ""
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def bounded(self) -> float:
        """:attr:`value` clipped to [0, 1] (a prevalence)."""
        return min(max(self.value, 0.0), 1.0)

    @property
    def se_report(self) -> float | None:
        """The SE of the weighted share of "yes" reports: ``se * |P1 - P0|``."""
        if self.p_yes_given_1 is None or self.p_yes_given_0 is None:
            return None
        return self.se * abs(self.p_yes_given_1 - self.p_yes_given_0)

    @property
    def interval_methods(self) -> tuple[str, ...]:
        """The intervals offered: ``t``, ``wald``, and ``korn-graubard`` and ``exact`` where
        they apply."""
        out = ["t", "wald"]
        if self.lambda_hat is not None:
            out.append("korn-graubard")
        if self.exact_counts is not None:
            out.append("exact")
        return tuple(out)

    def ci(self, level: float = 0.95, method: str = "t") -> ConfidenceInterval:
        """Two-sided interval at ``level`` (see the module docstring for the methods)."""
        lvl = v.level(level)
        if method == "exact" and self.exact_counts is None:
            raise ParameterError(f"`method` 'exact' is not offered here: {self.exact_reason}")
        v.choice("method", method, self.interval_methods)
        if method in results.SYMMETRIC_INTERVALS:
            return results.t_interval(self.value, self.se, self.df, lvl, method)
        p1, p0 = float(self.p_yes_given_1 or 0.0), float(self.p_yes_given_0 or 0.0)
        if method == "exact":
            yes, n = self.exact_counts  # type: ignore[misc]
            return map_interval(binomial_interval(yes, n, lvl, "exact"), p0, p1 - p0)
        var = (self.se_report or 0.0) ** 2
        lam = float(self.lambda_hat)  # type: ignore[arg-type]
        return map_interval(korn_graubard(lam, var, self.n, self.df, lvl), p0, p1 - p0)

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        """Plain JSON: every attribute, and each offered interval at ``level``."""
        out: dict[str, Any] = {
            "parameter": self.parameter, "estimate": self.value, "se": self.se,
            "df": self.df, "n": self.n, "variance_method": self.variance_method,
            "design": self.design, "deff": self.deff, "level": level,
        }  # fmt: skip
        for name in ("total", "se_total", "population", "lambda_hat", "p_yes_given_1",
                     "p_yes_given_0"):  # fmt: skip
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.lambda_hat is not None:
            out["estimate_bounded"] = self.bounded
            out["se_report"] = self.se_report
        for m in self.interval_methods:
            out[f"ci_{m.replace('-', '_')}"] = self.ci(level, m)
        out["exact_reason"] = self.exact_reason
        out["notes"] = list(self.notes)
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self, level: float = 0.95) -> Table:
        """The estimate for people, with every offered interval at ``level``."""
        rows: list[tuple[str, str]] = [("design", self.design)]
        if self.lambda_hat is not None:
            rows.append(("weighted share of yes reports", format_number(self.lambda_hat, 6)))
        rows.append((f"estimate ({self.parameter})", format_number(self.value, 6)))
        rows.append((f"SE ({self.variance_method})", format_number(self.se, 6)))
        rows.append(("degrees of freedom", format_number(float(self.df), 0)))
        rows.append(("design effect", format_number(self.deff, 4)))
        if self.total is not None:
            rows.append(("total (Horvitz-Thompson)", format_number(self.total, 2)))
            rows.append(("SE of the total", format_number(self.se_total, 2)))
        for m in self.interval_methods:
            rows.append((f"{level:.0%} CI ({m})", self.ci(level, m).format(6)))
        if self.exact_reason:
            rows.append(("exact interval", f"not offered: {self.exact_reason}"))
        rows.extend(("note", note) for note in self.notes)
        title = f"Design-based estimate of the {self.parameter} from {self.n} respondents"
        return Table.pairs(rows, title=title)


@dataclass(frozen=True, eq=False)
class SurveyFrequencies(Result):
    """Design-based frequencies of ``k`` values (a categorical design or a frequency
    oracle): ``values = (lambda_w - q) / (p - q)`` from the weighted support shares
    ``lambda_w``, their covariance, degrees of freedom, design effects and Horvitz-Thompson
    totals.  :meth:`category` gives value ``j`` as a :class:`SurveyEstimate`."""

    values: FloatArray
    covariance: FloatArray
    df: float
    n: int
    variance_method: str
    design: str
    deff: FloatArray
    lambda_hat: FloatArray
    p: FloatArray
    q: FloatArray
    totals: FloatArray
    se_totals: FloatArray
    population: float
    exact_counts: npt.NDArray[np.int64] | None = None
    exact_reason: str = ""
    mechanism: str = ""

    @property
    def k(self) -> int:
        """Number of values."""
        return int(self.values.size)

    @property
    def se(self) -> FloatArray:
        """Design-based standard errors, the square roots of the covariance's diagonal."""
        return np.sqrt(np.maximum(np.diag(self.covariance), 0.0))

    def ci(self, level: float = 0.95, method: str = "t") -> FloatArray:
        """``(k, 2)`` intervals: ``t`` (the design's df) or ``wald``, not clipped."""
        return results.t_interval(self.values, self.se, self.df, level, method)

    def category(self, j: int) -> SurveyEstimate:
        """Value ``j`` as the binary item "the report supports ``j`` or not"."""
        j = v.integer("j", j, minimum=0, maximum=self.k - 1)
        counts = None if self.exact_counts is None else (int(self.exact_counts[j]), self.n)
        return SurveyEstimate(
            f"frequency of {j}", float(self.values[j]), float(self.se[j]), self.df, self.n,
            self.variance_method, self.design, float(self.deff[j]), float(self.totals[j]),
            float(self.se_totals[j]), self.population, float(self.lambda_hat[j]),
            float(self.p[j]), float(self.q[j]), counts, self.exact_reason,
        )  # fmt: skip

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        """Plain JSON: per value the estimate, SE, t interval, design effect and total."""
        out = {
            "mechanism": self.mechanism, "n": self.n, "k": self.k, "df": self.df,
            "variance_method": self.variance_method, "design": self.design,
            "estimate": self.values, "se": self.se, "ci_t": self.ci(level, "t"),
            "deff": self.deff, "lambda_hat": self.lambda_hat, "totals": self.totals,
            "se_totals": self.se_totals, "population": self.population, "level": level,
            "exact_reason": self.exact_reason,
        }  # fmt: skip
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self, level: float = 0.95) -> Table:
        """One row per value: estimate, SE, t interval, design effect."""
        ci = self.ci(level, "t")
        se = self.se
        rows = tuple(
            (str(j), format_number(float(self.values[j]), 6), format_number(float(se[j]), 6),
             format_interval(ci[j], 6), format_number(float(self.deff[j]), 4))
            for j in range(self.k)
        )  # fmt: skip
        return Table(
            ("value", "estimate", "SE", f"{level:.0%} CI (t, df = {self.df:g})", "deff"),
            rows, title=f"{self.mechanism}: design-based frequencies from {self.n} respondents "
            f"({self.design})", notes=(f"SE: {self.variance_method}",), align="rrrrr",
        )  # fmt: skip


@dataclass(frozen=True, eq=False)
class DomainEstimates(Result):
    """Estimates for each domain (subpopulation) of one design, like R's ``svyby``: each
    domain's variance computed on the full design (respondents outside the domain count as
    zeros), not on the subset.  ``estimates[label]`` is a :class:`SurveyEstimate` or
    :class:`SurveyFrequencies`."""

    estimates: dict[Any, SurveyEstimate | SurveyFrequencies]

    def __getitem__(self, label: Any) -> SurveyEstimate | SurveyFrequencies:
        return self.estimates[label]

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        """Plain JSON: ``{"domains": [{"domain": label, ...estimate...}, ...]}``."""
        rows = [{"domain": to_jsonable(k), **e.to_dict(level)} for k, e in self.estimates.items()]
        return {"domains": rows}

    def table(self, level: float = 0.95) -> Table:
        """One row per domain (a single estimate each) or one section per domain."""
        first = next(iter(self.estimates.values()), None)
        if not isinstance(first, SurveyEstimate):
            sections = tuple(e.table(level) for e in self.estimates.values())
            return Table((), (), title="Estimates by domain", sections=sections)
        rows = []
        for label, est in self.estimates.items():
            assert isinstance(est, SurveyEstimate)
            rows.append((str(label), est.n, format_number(est.value, 6),
                         format_number(est.se, 6), est.ci(level, "t").format(6),
                         format_number(est.deff, 4)))  # fmt: skip
        return Table(
            ("domain", "n", "estimate", "SE", f"{level:.0%} CI (t)", "deff"), tuple(rows),
            title=f"Estimates of the {first.parameter} by domain ({first.design})",
            notes=(f"SE: {first.variance_method}, each domain on the full design",),
        )  # fmt: skip
