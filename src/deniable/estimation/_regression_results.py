"""Results of the randomized-response regressions, shaped like statsmodels' results.

A :class:`RegressionResult` holds the maximum-likelihood estimates, the covariance matrix
under each standard-error convention it supports, the log-likelihood and the data needed for
likelihood-ratio tests.  ``params``, ``bse``, ``tvalues``, ``pvalues`` are pandas Series
indexed by term name, ``conf_int()`` a DataFrame (columns ``0`` and ``1`` as in
statsmodels), ``summary()`` a text table, ``to_dict()`` plain JSON.

Standard-error conventions (``se_type``), all evaluated at the MLE ``theta_hat``:

* ``observed``: the inverse of the observed information ``-d^2 l / d theta^2``;
* ``expected``: the inverse of the expected (Fisher) information ``E[s s']``;
* ``opg``: the inverse of the outer product of the per-respondent scores ``sum_i s_i s_i'``
  (Berndt, Hall, Hall & Hausman 1974).

All three estimate the same asymptotic covariance when the model is right.

Degrees of freedom follow statsmodels: ``df_model`` counts the regressors excluding the
constant, ``df_resid = nobs - (number of mean-model coefficients, constant included)``;
``k_params`` counts every estimated parameter (with ``sigma`` and ``pi`` of the linear
model), the ``k`` of AIC and BIC.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import to_jsonable
from deniable.common import validation as v
from deniable.designs import BinaryDesign
from deniable.estimation._regression_design import SamplingInfo, t_quantile
from deniable.estimation._regression_stats import (
    SE_TYPES,
    FitData,
    LRTest,
    Prevalence,
    logit_interval,
    zquantile,
)
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.results import Result, Table

__all__ = ["SE_TYPES", "FitData", "LRTest", "Prevalence", "RegressionResult", "logit_interval"]

Array = npt.NDArray[np.float64]


def _pd() -> Any:
    from deniable.estimation._regression_data import require_data_extras

    return require_data_extras()[0]


@dataclass(frozen=True, eq=False)
class RegressionResult(Result):
    """A randomized-response regression fitted by maximum likelihood.

    Attributes
    ----------
    model : ``"logistic-rr"`` or ``"linear-rr"``.
    formula : the formula fitted.
    outcome : name of the outcome column.
    terms : names of the regression coefficients (the first ``len(terms)`` of ``theta``).
    theta : every estimated parameter: coefficients, then the ancillary ones (``sigma``...).
    covariances : covariance of ``theta`` under each supported SE convention (``SE_TYPES``).
    se_type : the convention behind ``bse``, ``pvalues``, ``conf_int`` (see :meth:`with_se`).
    llf : maximized log-likelihood.
    nobs : number of respondents used (rows with missing values dropped: ``n_dropped``).
    design : the randomized-response design of the randomized rows (a one-group binary
        design, or a two-group design for :class:`TwoGroupRRResult`).
    converged : whether the Newton iterations met the tolerance.
    iterations : EM and Newton iterations used.
    tolerance : convergence tolerance on the Newton decrement ``g' H^-1 g / 2``.
    sampling : how the covariance used the survey design (``None``: simple random
        sampling, model-based SEs and the normal reference); under a design ``llf`` is the
        weighted pseudo-log-likelihood, the reference distribution Student's t with
        ``sampling.df`` degrees of freedom, and AIC, BIC and likelihood-ratio tests are not
        available.
    """

    model: str
    formula: str
    outcome: str
    terms: tuple[str, ...]
    theta: Array = field(repr=False)
    covariances: Mapping[str, Array] = field(repr=False)
    se_type: str
    llf: float
    nobs: int
    design: BinaryDesign
    converged: bool
    iterations: Mapping[str, int] = field(repr=False)
    tolerance: float = field(repr=False)
    n_dropped: int = field(default=0, repr=False)
    notes: tuple[str, ...] = field(default=(), repr=False)
    data: FitData | None = field(default=None, repr=False)
    sampling: SamplingInfo | None = field(default=None, repr=False)

    #: The first line of :meth:`summary`.
    title: ClassVar[str] = "Randomized-response regression results"

    def __post_init__(self) -> None:
        if self.se_type not in self.covariances:
            v.choice("se", self.se_type, tuple(self.covariances))

    # ------------------------------------------------------------------ numbers

    @property
    def k_params(self) -> int:
        """Number of estimated parameters (coefficients and ancillary)."""
        return int(self.theta.size)

    @property
    def k_constant(self) -> int:
        """1 if the mean model has a constant, explicit or implied, else 0.

        A constant is implied when the all-ones vector lies in the column space of the design
        matrix (``0 + C(g)`` with every level of ``g``), as statsmodels counts it.
        """
        if self.data is None:
            return int("Intercept" in self.terms)
        X = self.data.X
        ones = np.ones(X.shape[0])
        coef, *_ = np.linalg.lstsq(X, ones, rcond=None)
        return int(float(np.linalg.norm(X @ coef - ones)) <= 1e-8 * math.sqrt(X.shape[0]))

    @property
    def df_model(self) -> int:
        """Model degrees of freedom: the regressors excluding the constant.

        statsmodels' convention (``df_model = rank(X) - k_constant``): the coefficients of
        the mean model (the randomized predictor's included) minus 1 for a constant.  The
        ancillary parameters (``sigma``, ``pi`` of the linear model) are not counted;
        :attr:`k_params` counts every estimated parameter (the ``k`` of AIC and BIC).
        """
        return len(self.terms) - self.k_constant

    @property
    def df_resid(self) -> int:
        """Residual degrees of freedom: ``nobs`` minus the mean-model coefficients, constant
        included (statsmodels' ``nobs - rank(X)``); under a survey design the design's
        degrees of freedom plus 1 minus the coefficients (R's ``svyglm``)."""
        if self.sampling is not None:
            return self.sampling.df
        return self.nobs - len(self.terms)

    @property
    def cov(self) -> Array:
        """Covariance of ``theta`` under ``se_type``."""
        return self.covariances[self.se_type]

    def _quantile(self, level: float) -> float:
        """Two-sided quantile of the reference distribution (normal, or t under a design)."""
        if self.sampling is None:
            return zquantile(level)
        return t_quantile(level, self.sampling.df)

    def _pvalue(self, stat: Any) -> Any:
        """Two-sided p-values of the statistics ``stat``."""
        from scipy import stats

        if self.sampling is None:
            return 2 * stats.norm.sf(np.abs(stat))
        df = self.sampling.df
        return 2 * stats.t.sf(np.abs(stat), df) if df >= 1 else np.full_like(stat, np.nan)

    @property
    def se_description(self) -> str:
        """What the covariance behind ``bse`` is."""
        if self.sampling is not None:
            return self.sampling.se_description(self.se_type)
        return SE_TYPES[self.se_type]

    def _coef(self) -> Array:
        return self.theta[: len(self.terms)]

    def _se(self) -> Array:
        d = np.diag(self.cov)[: len(self.terms)]
        return np.sqrt(np.where(d >= 0, d, np.nan))

    @property
    def params(self) -> Any:
        """Coefficients (pandas Series indexed by term)."""
        return _pd().Series(self._coef(), index=list(self.terms), name="coef")

    @property
    def bse(self) -> Any:
        """Standard errors under ``se_type`` (pandas Series)."""
        return _pd().Series(self._se(), index=list(self.terms), name="bse")

    @property
    def tvalues(self) -> Any:
        """``coef / se`` (z statistics; t statistics under a survey design)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            z = self._coef() / self._se()
        return _pd().Series(z, index=list(self.terms), name="z")

    @property
    def pvalues(self) -> Any:
        """Two-sided p-values of ``coef = 0`` from the normal distribution (Student's t with
        the design's degrees of freedom under a survey design)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            p = self._pvalue(self._coef() / self._se())
        return _pd().Series(p, index=list(self.terms), name="pvalue")

    def conf_int(self, *, level: float = 0.95) -> Any:
        """Wald intervals ``coef -+ z se`` at confidence ``level``, ``z`` the two-sided
        normal quantile, or Student's t with the design's degrees of freedom under a survey
        design (DataFrame, columns ``0`` and ``1`` as in statsmodels, whose ``alpha`` is
        ``1 - level``)."""
        z = self._quantile(v.level(level))
        coef, se = self._coef(), self._se()
        return _pd().DataFrame({0: coef - z * se, 1: coef + z * se}, index=list(self.terms))

    def cov_params(self) -> Any:
        """Covariance of the coefficients under ``se_type`` (DataFrame)."""
        k = len(self.terms)
        return _pd().DataFrame(self.cov[:k, :k], index=list(self.terms), columns=list(self.terms))

    @property
    def aic(self) -> float:
        """``2 k - 2 llf`` (NaN under a survey design: a pseudo-likelihood)."""
        return math.nan if self.sampling else 2 * self.k_params - 2 * self.llf

    @property
    def bic(self) -> float:
        """``k ln(n) - 2 llf`` (NaN under a survey design: a pseudo-likelihood)."""
        return math.nan if self.sampling else self.k_params * math.log(self.nobs) - 2 * self.llf

    @property
    def se_types(self) -> tuple[str, ...]:
        """SE conventions this result carries."""
        return tuple(self.covariances)

    def with_se(self, se: str) -> RegressionResult:
        """The same fit with standard errors from another convention (no refit)."""
        v.choice("se", se, self.se_types)
        return dataclasses.replace(self, se_type=se)

    # ------------------------------------------------------------------ tests

    def lr_test(self, other: RegressionResult) -> LRTest:
        """Likelihood-ratio test between this model and ``other``, one nested in the other.

        Both must be the same kind of model fitted to the same respondents, outcome and
        design, and the column space of the smaller design matrix must lie in that of the
        larger (checked numerically).  The order does not matter.
        """
        from scipy import stats

        if not isinstance(other, RegressionResult):
            raise ParameterTypeError(
                f"`other` must be a RegressionResult, got {type(other).__name__}."
            )
        if self.sampling is not None or getattr(other, "sampling", None) is not None:
            raise ParameterError(
                "`other`: a likelihood-ratio test needs a likelihood; a fit under a "
                "`sample_design` maximizes a weighted pseudo-likelihood, whose ratio is not "
                "chi-squared (compare coefficients by their design-based Wald tests)."
            )
        if other.model != self.model:
            raise ParameterError(
                f"`other` must be a {self.model} model to be nested, got a {other.model} model."
            )
        a, b = self.data, other.data
        if a is None or b is None:
            raise ParameterError("`other`: both results must keep their data to be compared.")
        same = (
            self.nobs == other.nobs
            and np.array_equal(a.y, b.y)
            and np.array_equal(a.p1, b.p1)
            and np.array_equal(a.p0, b.p0)
            and (
                (a.reports is None and b.reports is None)
                or (
                    a.reports is not None
                    and b.reports is not None
                    and np.array_equal(a.reports, b.reports)
                )
            )
        )
        if not same:
            raise ParameterError(
                "`other` must be fitted to the same respondents, outcome and design "
                f"(nobs {self.nobs} and {other.nobs}); models on different data are not nested."
            )
        if self.k_params == other.k_params:
            raise ParameterError(
                f"`other` must have a different number of parameters to be nested, both have "
                f"{self.k_params}."
            )
        full, small = (self, other) if self.k_params > other.k_params else (other, self)
        assert full.data is not None and small.data is not None
        Xf, Xs = full.data.X, small.data.X
        coef, *_ = np.linalg.lstsq(Xf, Xs, rcond=None)
        resid = np.linalg.norm(Xs - Xf @ coef) / max(1.0, float(np.linalg.norm(Xs)))
        if resid > 1e-8:
            raise ParameterError(
                f"`other` is not nested: the columns of {small.formula!r} are not linear "
                f"combinations of those of {full.formula!r}."
            )
        stat = max(0.0, 2.0 * (full.llf - small.llf))
        df = full.k_params - small.k_params
        return LRTest(
            statistic=stat,
            df=df,
            pvalue=float(stats.chi2.sf(stat, df)),
            llf_full=full.llf,
            llf_restricted=small.llf,
            full=full.formula,
            restricted=small.formula,
        )

    # ------------------------------------------------------------------ output

    def _ancillary_rows(self, level: float) -> list[tuple[str, float, float, float, float]]:
        """``(name, estimate, se, lower, upper)`` of the ancillary parameters."""
        return []

    def _extra_lines(self, level: float) -> list[str]:
        """Lines printed below the coefficient table."""
        return []

    def _extra_dict(self, level: float) -> dict[str, Any]:
        return {}

    def _header(self) -> list[str]:
        """The summary's lines above the coefficients (a subclass may add its own)."""
        from deniable.estimation._regression_table import header_lines

        return header_lines(self)

    def summary(self, level: float = 0.95) -> str:
        """A statsmodels-style text table: header, then coef, std err, z (t under a survey
        design), P>|z|, interval."""
        from deniable.estimation._regression_table import summary_text

        return summary_text(self, v.level(level))

    def __str__(self) -> str:
        return self.summary()

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        """Plain JSON: the model, the design, fit statistics and each coefficient's row."""

        lvl = v.level(level)
        d = self.design
        ci = self.conf_int(level=lvl).to_numpy()
        coefs = []
        for i, t in enumerate(self.terms):
            coef, se = float(self._coef()[i]), float(self._se()[i])
            zval = coef / se if se > 0 else math.nan
            coefs.append(
                {
                    "term": t,
                    "coef": (coef),
                    "se": (se),
                    "z": (zval),
                    "pvalue": (
                        float(self._pvalue(np.float64(zval))) if math.isfinite(zval) else math.nan
                    ),
                    "ci": [(ci[i, 0]), (ci[i, 1])],
                }
            )
        out: dict[str, Any] = {
            "model": self.model,
            "formula": self.formula,
            "outcome": self.outcome,
            "design": d.name,
            "parameters": {k: x for k, x in d.parameters().items()},
            "p_yes_given_1": getattr(d, "p_yes_given_1", None),
            "p_yes_given_0": getattr(d, "p_yes_given_0", None),
            "epsilon": (d.epsilon),
            "nobs": self.nobs,
            "n_dropped": self.n_dropped,
            "llf": (self.llf),
            "aic": (self.aic),
            "bic": (self.bic),
            "df_model": self.df_model,
            "df_resid": self.df_resid,
            "k_params": self.k_params,
            "se_type": self.se_type,
            "se_description": self.se_description,
            "level": lvl,
            "converged": self.converged,
            "iterations": dict(self.iterations),
            "tolerance": self.tolerance,
            "coefficients": coefs,
        }
        anc = self._ancillary_rows(lvl)
        if anc:
            out["ancillary"] = [
                {
                    "name": n,
                    "estimate": (e),
                    "se": (s),
                    "ci": [(lo), (hi)],
                }
                for n, e, s, lo, hi in anc
            ]
        if self.sampling is not None:
            out["sample_design"] = self.sampling.to_dict()
        out.update(self._extra_dict(lvl))
        if self.notes:
            out["notes"] = list(self.notes)
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self, level: float = 0.95) -> Table:
        """The fit for people: model, formula, design and ε, respondents, convergence, the
        prevalence, then the coefficients with their intervals at ``level`` (the
        statsmodels-style text is :meth:`summary`)."""
        from deniable.estimation._regression_table import regression_table

        return regression_table(self, v.level(level))
