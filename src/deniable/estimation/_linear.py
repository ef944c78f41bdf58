"""Linear regression with a randomized binary predictor: ``linear_rr``.

A continuous outcome depends on a binary ``Z`` that the analyst sees only through a
randomized report ``R`` (``P(R = 1 | Z = 1) = P1``, ``P(R = 1 | Z = 0) = P0`` from the
design):

    y = x' beta + gamma Z + e,    e ~ N(0, sigma^2),    Z ~ Bernoulli(pi).

The likelihood sums over the hidden ``Z`` (a two-component normal mixture whose weights the
report shifts), as RRreg's ``RRlin`` does (Heck & Moshagen 2018); ``beta``, ``gamma``,
``sigma`` and ``pi`` are estimated jointly by maximum likelihood (EM, then Newton; see
``deniable.estimation``).  Respondents asked directly can be included
(``direct``: their ``Z`` is their report).

Reference
---------
D. W. Heck & M. Moshagen (2018), RRreg: an R package for correlation and regression analyses
of randomized response data, J. Stat. Software 85(2).
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

from deniable.common import validation as v
from deniable.designs import BinaryDesign
from deniable.estimation._logistic import _channel
from deniable.estimation._regression_data import (
    binary_values,
    check_design,
    check_full_rank,
    check_se,
    fit_fields,
    model_data,
)
from deniable.estimation._regression_mixture import data as mixture_data
from deniable.estimation._regression_mixture import fit_mixture, mixture_information
from deniable.estimation._regression_results import FitData, RegressionResult, logit_interval
from deniable.estimation._regression_stats import SE_TYPES, Covariances, Prevalence
from deniable.exceptions import ParameterError

__all__ = ["LinearRRResult", "linear_rr"]


@dataclass(frozen=True, eq=False)
class LinearRRResult(RegressionResult):
    """Result of :func:`linear_rr`.

    ``theta`` is ``(coefficients..., gamma, sigma, pi)``: the coefficient of the randomized
    predictor is the last of ``terms`` (named after its column); ``sigma`` and the prevalence
    ``pi`` of the predictor are ancillary (:attr:`sigma`, :meth:`prevalence`).
    """

    title: ClassVar[str] = "Linear regression with a randomized predictor"

    predictor: str = ""
    direct: str | None = field(default=None, repr=False)

    @property
    def sigma(self) -> float:
        """Residual standard deviation (MLE)."""
        return float(self.theta[len(self.terms)])

    def prevalence(self, level: float = 0.95) -> Prevalence:
        """The prevalence ``pi`` of the randomized predictor, its SE and a logit-scale interval."""
        lvl = v.level(level)
        j = len(self.terms) + 1
        pi = float(self.theta[j])
        se = math.sqrt(max(float(self.cov[j, j]), 0.0))
        lo, hi = logit_interval(pi, se / (pi * (1 - pi)), lvl)
        return Prevalence(pi, se, lo, hi, lvl, f"prevalence of {self.predictor}")

    def _ancillary_rows(self, level: float) -> list[tuple[str, float, float, float, float]]:
        from scipy import stats

        j = len(self.terms)
        se_s = math.sqrt(max(float(self.cov[j, j]), 0.0))
        z = float(stats.norm.ppf(0.5 + level / 2))
        s = self.sigma
        # sigma's interval on the log scale: exp(ln sigma -+ z se / sigma)
        lo, hi = s * math.exp(-z * se_s / s), s * math.exp(z * se_s / s)
        prev = self.prevalence(level)
        return [
            ("sigma", s, se_s, lo, hi),
            (f"P({self.predictor}=1)", prev.value, prev.se, prev.lower, prev.upper),
        ]

    def _extra_lines(self, level: float) -> list[str]:
        return [
            f"sigma: interval on the log scale; P({self.predictor}=1): interval on the logit scale."
        ]

    def _extra_dict(self, level: float) -> dict[str, Any]:
        out: dict[str, Any] = {
            "predictor": self.predictor,
            "sigma": self.sigma,
            "prevalence": self.prevalence(level).to_dict(),
        }
        if self.direct is not None:
            out["direct"] = self.direct
        return out


def linear_rr(
    formula: str,
    data: Any,
    design: BinaryDesign,
    predictor: str,
    *,
    direct: str | None = None,
    se: str = "observed",
    tol: float = 1e-10,
    max_iter: int = 100,
) -> LinearRRResult:
    """Linear regression of ``y`` on covariates and a randomized binary predictor.

    Parameters
    ----------
    formula : ``"y ~ x1 + x2"``; the predictor may be written in it as a plain term
        (``"y ~ Z + x1"``) or left out (it is added); no interactions with it.  The formula
        language is that of :func:`logistic_rr` (anything else raises a ``ParameterError``).
    data : a pandas DataFrame.
    design : the binary design that randomized ``predictor``.
    predictor : the column of 0/1 randomized reports of the hidden binary ``Z``.
    direct : optional 0/1 column of respondents asked directly (their report is ``Z``).
    se : ``"observed"`` (default, Louis' formula), ``"expected"`` (quadrature) or ``"opg"``.
    tol, max_iter : Newton tolerance (log-likelihood units) and iteration limit.

    Notes
    -----
    Model: ``y = x' beta + gamma Z + N(0, sigma^2)``, ``Z ~ Bernoulli(pi)``, ``Z`` observed
    through the design's channel; the likelihood sums over ``Z`` (RRreg's ``RRlin``).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from deniable import Warner, linear_rr
    >>> rng = np.random.default_rng(3)
    >>> design = Warner(0.85)
    >>> z = rng.random(3000) < 0.3
    >>> x = rng.normal(size=3000)
    >>> y = 1.0 + 2.0 * z + 0.5 * x + rng.normal(size=3000)
    >>> df = pd.DataFrame({"y": y, "x": x, "Z": design.randomize(z, rng=rng)})
    >>> fit = linear_rr("y ~ x", df, design, predictor="Z")
    >>> fit.params.round(1).to_dict()
    {'Intercept': 1.0, 'x': 0.5, 'Z': 2.0}
    >>> round(fit.prevalence().value, 1)
    0.3
    """
    d = check_design(design)
    se = check_se(se, tuple(SE_TYPES))
    tol = v.positive("tol", tol)
    max_iter = v.integer("max_iter", max_iter, minimum=1)
    extras = {"predictor": predictor}
    if direct is not None and direct == predictor:
        raise ParameterError(
            f"`direct` and `predictor` must be different columns, got {direct!r} for both."
        )
    if direct is not None:
        extras["direct"] = direct
    md = model_data(formula, data, outcome="real", extras=extras)
    if md.outcome == predictor:
        raise ParameterError(f"`predictor` {predictor!r} is the outcome of `formula`.")
    keep = [j for j, t in enumerate(md.terms) if t != predictor]
    terms = tuple(md.terms[j] for j in keep)
    pattern = re.compile(rf"(?<![\w.]){re.escape(predictor)}(?![\w.])")
    tangled = [t for t in terms if pattern.search(t)]
    if tangled:
        raise ParameterError(
            f"`predictor` {predictor!r} may appear in `formula` only as a plain term; "
            f"got {', '.join(repr(t) for t in tangled)} (interactions and transforms of the "
            "randomized predictor are not supported)."
        )
    X = md.X[:, keep]
    if X.shape[1] == 0:
        raise ParameterError(f"`formula` {formula!r} leaves no covariate besides {predictor!r}.")
    check_full_rank(X, terms)
    reports = binary_values(predictor, md.extras[predictor], what="the randomized predictor")
    ind = None
    if direct is not None:
        ind = binary_values(direct, md.extras[direct], what="the direct-questioning column")
    p1, p0 = _channel(d, ind, md.y.size)
    fit = fit_mixture(X, md.y, reports, p1, p0, tol=tol, max_iter=max_iter)
    info = mixture_information(mixture_data(X, md.y, reports, p1, p0), fit.theta)
    notes = []
    if not fit.converged:
        notes.append(f"Newton iterations did not reach the tolerance {tol:g} in {max_iter} steps.")
        warnings.warn(notes[-1], RuntimeWarning, stacklevel=2)
    return LinearRRResult(
        model="linear-rr",
        formula=formula,
        outcome=md.outcome,
        terms=(*terms, predictor),
        theta=fit.theta,
        covariances=Covariances(info),
        **fit_fields(md, fit, d, se, tol, notes),
        data=FitData(md.y, X, p1, p0, reports),
        predictor=predictor,
        direct=direct,
    )
