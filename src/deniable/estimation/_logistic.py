"""Logistic regression with a randomized-response outcome: ``logistic_rr``.

The true answer follows a logistic model, ``P(T = 1 | x) = expit(x' beta)``; the analyst sees
only the randomized report ``y``, with

    P(y = 1 | x) = c expit(x' beta) + d,     c = P(yes | 1) - P(yes | 0),  d = P(yes | 0),

from any one-group binary design.  ``beta`` is estimated by maximum likelihood (EM start,
then Newton; see ``deniable.estimation`` for the derivatives), with
standard errors from the observed information, the expected information or the outer product
of the scores.

A direct-questioning group can be analysed beside the randomized one: a 0/1 column marks the
respondents asked directly, whose channel is ``c = 1, d = 0``.  The fit then tests whether
randomization changed the answers: it compares the model with and without a shift ``delta``
of the logit in the direct group,

    P(T = 1 | x, direct) = expit(x' beta + delta * direct),

by a likelihood-ratio test of ``delta = 0``.  ``delta < 0`` means fewer admissions when asked
directly than the randomized answers imply (the usual sign of evasive answering).

References
----------
G. S. Maddala (1983), Limited-Dependent and Qualitative Variables in Econometrics, CUP.
P. G. M. van der Heijden & G. van Gils (1996), Some logistic regression models for randomized
response data, Proc. 11th Int. Workshop on Statistical Modelling, 341-348.
D. W. Heck & M. Moshagen (2018), RRreg: an R package for correlation and regression analyses
of randomized response data, J. Stat. Software 85(2) (``RRlog``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from deniable.common import validation as v
from deniable.designs import BinaryDesign
from deniable.estimation._formula import check_formula, evaluation_context
from deniable.estimation._regression_data import (
    Array,
    binary_values,
    check_design,
    check_finite,
    check_se,
    columns_list,
    model_data,
    require_data_extras,
)
from deniable.estimation._regression_logit import fit_logit, logit_information
from deniable.estimation._regression_results import FitData, RegressionResult, logit_interval
from deniable.estimation._regression_stats import SE_TYPES, LRTest, Prevalence, invert_information
from deniable.exceptions import DataError

__all__ = ["DirectTest", "LogisticRRResult", "logistic_rr"]


@dataclass(frozen=True)
class DirectTest:
    """Did randomization change the answers?  The direct-questioning shift ``delta``.

    ``delta`` is the shift of the logit of the true prevalence in the direct group
    (``x' beta + delta``) against the randomized group; ``lr`` the likelihood-ratio test of
    ``delta = 0`` (1 degree of freedom), ``se`` and ``pvalue_wald`` its Wald counterpart under
    the fit's SE convention.
    """

    column: str
    delta: float
    se: float
    pvalue_wald: float
    lr: LRTest
    n_direct: int
    n_randomized: int

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict."""
        return {
            "column": self.column,
            "delta": self.delta,
            "se": self.se,
            "pvalue_wald": self.pvalue_wald,
            "lr_statistic": self.lr.statistic,
            "df": self.lr.df,
            "pvalue": self.lr.pvalue,
            "n_direct": self.n_direct,
            "n_randomized": self.n_randomized,
        }

    def __str__(self) -> str:
        return (
            f"Direct questioning ({self.column!r}): {self.n_direct} direct, "
            f"{self.n_randomized} randomized.\n"
            f"  logit shift in the direct group: delta = {self.delta:.4f} (SE {self.se:.4f}); "
            f"LR chi2(1) = {self.lr.statistic:.4f}, p = {self.lr.pvalue:.4g}"
        )


@dataclass(frozen=True, eq=False)
class LogisticRRResult(RegressionResult):
    """Result of :func:`logistic_rr`: a :class:`RegressionResult` with predictions.

    ``direct_test`` is set when a direct-questioning column was given and both groups have
    respondents.
    """

    title: ClassVar[str] = "Logistic regression with a randomized outcome"

    direct: str | None = field(default=None, repr=False)
    direct_test: DirectTest | None = field(default=None, repr=False)
    spec: Any = field(default=None, repr=False, compare=False)
    index: Any = field(default=None, repr=False, compare=False)

    def _matrix(self, data: Any) -> Array:
        if data is None:
            assert self.data is not None
            return self.data.X
        pd, formulaic = require_data_extras()
        frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(dict(data))
        # The formula was checked when fitted; checked again here because the stored spec is
        # evaluated on new data, and only in the restricted context.
        used = list(check_formula(self.formula).covariates)
        absent = [c for c in used if c not in frame.columns]
        if absent:
            raise DataError(
                f"`data` for prediction lacks the column{'s' if len(absent) > 1 else ''} "
                f"{', '.join(repr(c) for c in absent)} that the formula uses "
                f"(columns: {columns_list(frame)})."
            )
        missing = int(frame[used].isna().any(axis=1).sum()) if used else 0
        if missing:
            raise DataError(f"`data` has missing values in the covariates: {missing} rows.")
        try:
            with np.errstate(all="ignore"):  # check_finite names a transform's NaN / inf
                mm = self.spec.get_model_matrix(
                    frame, context=evaluation_context(), na_action="ignore"
                )
        except formulaic.errors.FormulaicError as exc:
            first = str(exc).splitlines()[0]
            raise DataError(f"`data` cannot be used for prediction: {first}") from None
        X = np.asarray(mm.to_numpy(dtype=np.float64))
        check_finite(X, self.terms, what="the covariate")
        return X

    def predict(self, data: Any = None, *, level: float = 0.95) -> Any:
        """Predicted prevalence ``expit(x' beta)`` per row, with SE and interval (DataFrame).

        The interval is ``expit(x' beta -+ z se(x' beta))`` with ``se(x' beta)^2 = x' V x``
        (delta method on the logit scale, mapped back, so it stays in (0, 1)); ``se`` is the
        delta-method SE of the prevalence itself, ``p (1 - p) se(x' beta)``.  ``data=None``
        predicts for the rows fitted.
        """
        from scipy import stats
        from scipy.special import expit

        lvl = v.level(level)
        X = self._matrix(data)
        k = len(self.terms)
        V = self.cov[:k, :k]
        eta = X @ self._coef()
        se_eta = np.sqrt(np.einsum("ij,jk,ik->i", X, V, X))
        z = float(stats.norm.ppf(0.5 + lvl / 2))
        p = expit(eta)
        pd = require_data_extras()[0]
        index = None if data is not None else self.index
        return pd.DataFrame(
            {
                "prevalence": p,
                "se": p * (1 - p) * se_eta,
                "lower": expit(eta - z * se_eta),
                "upper": expit(eta + z * se_eta),
            },
            index=index,
        )

    def prevalence(self, level: float = 0.95, *, data: Any = None) -> Prevalence:
        """Average predicted prevalence ``m = mean_i expit(x_i' beta)`` over the rows fitted
        (or over the rows of ``data``).

        ``se(m)^2 = g' V g`` with ``g = mean_i p_i (1 - p_i) x_i``: the uncertainty of
        ``beta``, given the covariates of these rows (their own sampling variation is not
        added).  The interval is built on the logit scale (``se / (m (1 - m))``) and mapped
        back, so it stays in (0, 1).
        """
        from scipy.special import expit

        lvl = v.level(level)
        X = self._matrix(data)
        k = len(self.terms)
        p = expit(X @ self._coef())
        m = float(p.mean())
        g = (X * (p * (1 - p))[:, None]).mean(axis=0)
        se = float(math.sqrt(max(0.0, float(g @ self.cov[:k, :k] @ g))))
        lo, hi = logit_interval(m, se / (m * (1 - m)) if 0 < m < 1 else math.inf, lvl)
        return Prevalence(m, se, lo, hi, lvl, "mean predicted prevalence")

    def _extra_lines(self, level: float) -> list[str]:
        lines = [str(self.prevalence(level=level))]
        if self.direct_test is not None:
            lines.append(str(self.direct_test))
        return lines

    def _extra_dict(self, level: float) -> dict[str, Any]:
        out: dict[str, Any] = {"prevalence": self.prevalence(level=level).to_dict()}
        if self.direct is not None:
            out["direct"] = self.direct
        if self.direct_test is not None:
            out["direct_test"] = self.direct_test.to_dict()
        return out


def _channel(design: BinaryDesign, direct: Array | None, n: int) -> tuple[Array, Array]:
    p1 = np.full(n, design.p_yes_given_1)
    p0 = np.full(n, design.p_yes_given_0)
    if direct is not None:
        p1[direct == 1] = 1.0
        p0[direct == 1] = 0.0
    return p1, p0


def _direct_test(
    column: str,
    ind: Array,
    X: Array,
    y: Array,
    p1: Array,
    p0: Array,
    llf: float,
    beta: Array,
    se: str,
    tol: float,
    max_iter: int,
) -> DirectTest:
    """Fit with and without the direct-group shift and compare them."""
    from scipy import stats

    match = [j for j in range(X.shape[1]) if np.array_equal(X[:, j], ind)]
    if match:  # the formula already has the indicator: drop it for the restricted model
        j = match[0]
        Xr = np.delete(X, j, axis=1)
        small = fit_logit(Xr, y, p1, p0, tol=tol, max_iter=max_iter)
        llf_full, llf_small, full_beta, Xf = llf, small.llf, beta, X
    else:
        Xf = np.column_stack([X, ind])
        j = X.shape[1]
        big = fit_logit(Xf, y, p1, p0, tol=tol, max_iter=max_iter, start=np.append(beta, 0.0))
        llf_full, llf_small, full_beta = big.llf, llf, big.beta
    cov = invert_information(logit_information(Xf, y, p1, p0, full_beta)[se])
    delta, se_delta = float(full_beta[j]), float(math.sqrt(max(cov[j, j], 0.0)))
    stat = max(0.0, 2 * (llf_full - llf_small))
    lr = LRTest(
        statistic=stat,
        df=1,
        pvalue=float(stats.chi2.sf(stat, 1)),
        llf_full=llf_full,
        llf_restricted=llf_small,
        full=f"with a logit shift for {column!r}",
        restricted="same prevalence model in both groups",
    )
    n_direct = int(ind.sum())
    return DirectTest(
        column=column,
        delta=delta,
        se=se_delta,
        pvalue_wald=float(2 * stats.norm.sf(abs(delta / se_delta))) if se_delta > 0 else math.nan,
        lr=lr,
        n_direct=n_direct,
        n_randomized=int(ind.size) - n_direct,
    )


def logistic_rr(
    formula: str,
    data: Any,
    design: BinaryDesign,
    *,
    direct: str | None = None,
    se: str = "observed",
    tol: float = 1e-10,
    max_iter: int = 100,
) -> LogisticRRResult:
    """Logistic regression of a randomized binary outcome on covariates.

    Parameters
    ----------
    formula : ``"y ~ x1 + x2"`` (formulaic syntax: ``C(g)`` for categories, ``x1:x2``
        interactions, ``0 +`` to drop the intercept, ``I(x**2)``, ``log(x)``, ``poly(x, 2)``
        ...); ``y`` is the column of 0/1 reports.  A formula is data, not code: anything
        outside the documented formula language (attribute access, other calls, dunder
        names, string literals) raises a ``ParameterError`` before it is evaluated.
    data : a pandas DataFrame (rows with a missing value in a used column are dropped).
    design : the one-group binary design that randomized the reports.
    direct : a 0/1 column marking respondents asked directly (channel ``P1 = 1, P0 = 0``);
        the result then carries ``direct_test``, the test of whether randomization changed
        the answers (see the module docstring).
    se : ``"observed"`` (default), ``"expected"`` or ``"opg"``; all three are computed and
        :meth:`RegressionResult.with_se` switches between them.
    tol : convergence tolerance on the Newton decrement (log-likelihood units).
    max_iter : maximum number of Newton iterations.

    Notes
    -----
    A ``RuntimeWarning`` is issued (and the note kept in ``notes``) when the iterations do
    not converge or the MLE lies on the boundary (a fitted prevalence within 1e-11 of 0 or
    1: no finite MLE, e.g. fewer yes reports than ``P0`` implies).

    The model is ``P(y = 1 | x) = (P1 - P0) expit(x' beta) + P0`` (Maddala 1983; Heck &
    Moshagen 2018, RRreg's ``RRlog``).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from deniable import ForcedResponse, logistic_rr
    >>> rng = np.random.default_rng(1)
    >>> design = ForcedResponse(1/6, 1/6)
    >>> x = rng.normal(size=4000)
    >>> truth = rng.random(4000) < 1 / (1 + np.exp(-(-1 + 0.8 * x)))
    >>> df = pd.DataFrame({"y": design.randomize(truth, rng=rng), "x": x})
    >>> fit = logistic_rr("y ~ x", df, design)
    >>> fit.params.round(2).to_dict()
    {'Intercept': -0.98, 'x': 0.68}
    >>> bool(abs(fit.params["x"] - 0.8) < 4 * fit.bse["x"])
    True
    """
    d = check_design(design)
    se = check_se(se, tuple(SE_TYPES))
    tol = v.positive("tol", tol)
    max_iter = v.integer("max_iter", max_iter, minimum=1)
    extras = {} if direct is None else {"direct": direct}
    md = model_data(formula, data, outcome="binary", extras=extras)
    ind = None
    if direct is not None:
        ind = binary_values(direct, md.extras[direct], what="the direct-questioning column")
    p1, p0 = _channel(d, ind, md.y.size)
    fit = fit_logit(md.X, md.y, p1, p0, tol=tol, max_iter=max_iter)
    info = logit_information(md.X, md.y, p1, p0, fit.beta)
    covs = {k: invert_information(m) for k, m in info.items()}
    notes: list[str] = []
    if not fit.converged:
        notes.append(f"Newton iterations did not reach the tolerance {tol:g} in {max_iter} steps.")
    if fit.boundary:
        notes.append(
            "Some fitted prevalences are within 1e-11 of 0 or 1: the MLE is on the boundary "
            "or does not exist (e.g. fewer yes reports than P(yes|0) implies); the SEs of "
            "the coefficients concerned are meaningless."
        )
    for note in notes:
        warnings.warn(note, RuntimeWarning, stacklevel=2)
    test = None
    if ind is not None:
        assert direct is not None
        if 0 < ind.sum() < ind.size:
            test = _direct_test(
                direct, ind, md.X, md.y, p1, p0, fit.llf, fit.beta, se, tol, max_iter
            )
        else:
            group = "direct" if ind.sum() else "randomized"
            notes.append(f"Every respondent is in the {group} group: no test of the groups.")
    return LogisticRRResult(
        model="logistic-rr",
        formula=formula,
        outcome=md.outcome,
        terms=md.terms,
        theta=fit.beta,
        covariances=covs,
        se_type=se,
        llf=fit.llf,
        nobs=int(md.y.size),
        design=d,
        converged=fit.converged,
        iterations={"EM": fit.em_iterations, "Newton": fit.newton_iterations},
        tolerance=tol,
        n_dropped=md.n_dropped,
        notes=tuple(notes),
        data=FitData(md.y, md.X, p1, p0),
        direct=direct,
        direct_test=test,
        spec=md.spec,
        index=md.index,
    )
