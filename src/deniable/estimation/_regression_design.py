"""Regression under a survey design: the weighted pseudo-likelihood and its design-based
covariance, by linearization (the sandwich) or by refitting with replicate weights.

The estimate ``beta_hat`` solves the weighted score equations ``sum_i w_i s_i(beta) = 0``
(``s_i = x_i dl_i/deta``, the respondent's score of the randomized-response likelihood):
the pseudo-maximum-likelihood estimator of Binder (1983) and Skinner, Holt & Smith (1989,
sec. 3.4.4).  Linearizing the score equations,

    V(beta_hat) = A^-1  Var_design(sum_i w_i s_i)  A^-1,

where ``A`` (the *bread*) is the derivative of the score equations: the weighted **observed**
information ``sum_i w_i (-d^2 l_i / d beta^2)`` (Binder's Jacobian), or the weighted
**expected** information ``sum_i w_i x_i x_i' lambda_i'^2 / (lambda_i (1 - lambda_i))``,
which R's ``svyglm`` uses (its IRLS working weights).  For the canonical logit link without
randomization the two are equal; under the randomized-response link they are not (the
observed information depends on the reports).  ``Var_design`` of the total of the
*linearization variables* ``z_i = w_i s_i(beta_hat)`` is the between-PSU-within-stratum
formula of :mod:`deniable.sampling` (strata, PSUs, fpc, the lonely-PSU rule, calibrated
weights), computed by the same code as every other design-based estimate
(:func:`~deniable.sampling.ratio_estimate`).  With equal weights, no strata and each
respondent a PSU it is ``n / (n - 1)`` times the usual robust (HC0, White 1982) sandwich.

Under a replicate design the fit is repeated with each column of replicate weights (from
the full-sample estimate), and the variance is the replicate formula of
:class:`~deniable.sampling.ReplicateDesign`.

Rows a fit drops (a missing value in a column the model uses) keep their place in the
design with a zero score, as a domain (R's ``subset`` of a design): the PSUs and strata,
and so the degrees of freedom, stay those of the whole sample.  Intervals and p-values use
Student's t with ``df = design df + 1 - k`` for ``k`` coefficients (R's ``svyglm``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.estimation._regression_logit import fit_logit, logit_information, logit_scores
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.sampling import ReplicateDesign, SampleDesign, ratio_estimate

__all__ = ["BREADS", "SamplingInfo", "check_sample_design", "design_covariances"]

Array = npt.NDArray[np.float64]
Design = SampleDesign | ReplicateDesign

#: The breads of the design-based sandwich.
BREADS = ("observed", "expected")

_BREAD_TEXT = {
    "observed": "observed information",
    "expected": "expected information (as R's svyglm)",
}


@dataclass(frozen=True)
class SamplingInfo:
    """How a regression's covariance used the survey design.

    ``design`` is the design's one-line description, ``variance`` its variance method
    (``"Taylor linearization"`` or the replicate method), ``df`` the degrees of freedom of
    the t reference (design df + 1 - coefficients), ``population`` the sum of the weights of
    the rows fitted, ``failed`` the replicate refits that did not converge.
    """

    design: str
    variance: str
    df: int
    population: float
    failed: int = 0

    def se_description(self, se_type: str) -> str:
        """What the covariance under ``se_type`` is."""
        if se_type in _BREAD_TEXT:
            return f"design-based sandwich (Binder 1983), bread: {_BREAD_TEXT[se_type]}"
        return f"design-based, refitted per replicate: {self.variance}"

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict."""
        return {
            "design": self.design,
            "variance": self.variance,
            "df": self.df,
            "reference": f"t({self.df})",
            "population": self.population,
            "failed_replicates": self.failed,
        }


def check_sample_design(sample_design: Any, n_rows: int) -> Design:
    """A :class:`SampleDesign` or :class:`ReplicateDesign` with one row per data row."""
    if not isinstance(sample_design, SampleDesign | ReplicateDesign):
        raise ParameterTypeError(
            "`sample_design` must be a deniable.sampling.SampleDesign or ReplicateDesign "
            f"(or None for simple random sampling), got {type(sample_design).__name__}."
        )
    if sample_design.n != n_rows:
        raise DataError(
            f"`sample_design` must have one respondent per row of `data` ({n_rows} rows), "
            f"got a design of {sample_design.n} respondents."
        )
    return sample_design


def check_bread(bread: Any, sample_design: Design | None) -> str | None:
    """The bread, or ``None`` where there is no sandwich (no design, replicate design)."""
    if bread is None:
        return "observed" if isinstance(sample_design, SampleDesign) else None
    if sample_design is None:
        raise ParameterError(
            f"`bread` applies to a fit under a `sample_design` only, got bread={bread!r} "
            "without one (use `se` for the model-based standard errors)."
        )
    if isinstance(sample_design, ReplicateDesign):
        raise ParameterError(
            f"`bread` applies to a SampleDesign (the linearized sandwich), got bread={bread!r} "
            "with a ReplicateDesign, whose variance refits the model: drop it."
        )
    if not isinstance(bread, str) or bread not in BREADS:
        raise ParameterError(
            f"`bread` must be one of {', '.join(repr(b) for b in BREADS)}, got {bread!r}."
        )
    return bread


@dataclass(frozen=True)
class Problem:
    """One weighted fit's arrays: the rows fitted (``rows``: their positions in the design),
    their model matrix, reports and channel."""

    rows: npt.NDArray[np.intp]
    X: Array
    y: Array
    p1: Array
    p0: Array
    link: str


def fit_weights(design: Design, rows: npt.NDArray[np.intp]) -> tuple[Array, float]:
    """The weights of the rows fitted, scaled to mean 1 (the estimate does not depend on
    the scale; the convergence tolerance then keeps its meaning), and the scale."""
    w = np.asarray(design.weights, dtype=np.float64)[rows]
    scale = float(w.mean())
    return w / scale, scale


def design_covariances(
    design: Design,
    problem: Problem,
    beta: Array,
    weights: Array,
    *,
    tol: float,
    max_iter: int,
) -> tuple[dict[str, Array], SamplingInfo]:
    """The design-based covariances of ``beta`` (by bread, or ``"replicate"``) and how."""
    k = beta.size
    population = float(np.asarray(design.weights)[problem.rows].sum())
    df = int(design.df) + 1 - k
    if isinstance(design, ReplicateDesign):
        cov, failed = _replicate(design, problem, beta, tol=tol, max_iter=max_iter)
        info = SamplingInfo(design.describe(), design.variance_method, df, population, failed)
        return {"replicate": cov}, info
    p = problem
    s = np.zeros((design.n, k))
    s[p.rows] = logit_scores(p.X, p.y, p.p1, p.p0, beta, link=p.link)
    # The weighted scores sum to zero at beta_hat, so their weighted mean (a ratio with
    # denominator 1) is zero, and its linearization variables are w_i s_i / sum(w): the
    # design covariance of the total sum_i w_i s_i is sum(w)^2 times the ratio's, on the
    # scale of the weights fitted (mean 1 over the rows fitted).
    _, ratio_cov = ratio_estimate(design, s, np.ones(design.n))
    scale = float(np.asarray(design.weights)[p.rows].mean())
    meat = ratio_cov * (design.population / scale) ** 2
    info_mats = logit_information(p.X, p.y, p.p1, p.p0, beta, link=p.link, weights=weights)
    covs = {}
    for bread in BREADS:
        try:
            inv = np.linalg.inv(info_mats[bread])
        except np.linalg.LinAlgError:
            covs[bread] = np.full((k, k), np.nan)
            continue
        covs[bread] = inv @ meat @ inv.T
    info = SamplingInfo(design.describe(), design.variance_method, df, population)
    return covs, info


def _replicate(
    design: ReplicateDesign, problem: Problem, beta: Array, *, tol: float, max_iter: int
) -> tuple[Array, int]:
    """Refit with each column of replicate weights, from ``beta``; the replicate covariance
    of the refits (those that did not converge are counted and still used)."""
    p = problem
    reps = design.replicate_weights[p.rows]
    scale = float(np.asarray(design.weights)[p.rows].mean())
    thetas = np.empty((reps.shape[1], beta.size))
    failed = 0
    for r in range(reps.shape[1]):
        fit = fit_logit(
            p.X,
            p.y,
            p.p1,
            p.p0,
            tol=tol,
            max_iter=max_iter,
            em_iter=0,
            start=beta,
            link=p.link,
            weights=reps[:, r] / scale,
        )
        thetas[r] = fit.beta
        failed += int(not fit.converged or not np.all(np.isfinite(fit.beta)))
    # The replicate variance of deniable.sampling (Wolter 2007, chs. 3-5; R's svrVar).
    centre = beta if design.mse else thetas.mean(axis=0)
    dev = thetas - centre
    cov = design.scale * (dev * np.asarray(design.rscales)[:, None]).T @ dev
    return np.asarray(cov, dtype=np.float64), failed


def t_quantile(level: float, df: float) -> float:
    """Two-sided Student t quantile (NaN for ``df < 1``)."""
    from scipy import stats

    if not df >= 1:
        return math.nan
    return float(stats.t.ppf(0.5 + level / 2, df))
