"""Mixed-effects regression with a randomized binary outcome: ``mixed_logistic_rr``.

References
----------
J.-P. Fox, K. Klotzke & D. Veen (2016), GLMMRR: generalized linear mixed model (GLMM) for
binary randomized response data, R package (``RRglmer``).
P. G. M. van der Heijden & G. van Gils (1996), Some logistic regression models for randomized
response data, Proc. 11th Int. Workshop on Statistical Modelling, 341-348.
D. Bates, M. Maechler, B. Bolker & S. Walker (2015), Fitting linear mixed-effects models
using lme4, J. Stat. Software 67(1) (``glmer``: Laplace, ``nAGQ``).
J. C. Pinheiro & D. M. Bates (1995), Approximations to the log-likelihood function in the
nonlinear mixed-effects model, J. Comput. Graph. Stat. 4(1), 12-35.
S. G. Self & K.-Y. Liang (1987), Asymptotic properties of maximum likelihood estimators and
likelihood ratio tests under nonstandard conditions, JASA 82, 605-610.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.estimation._mixed_data import mixed_data
from deniable.estimation._mixed_fit import (
    BOUNDARY_SD,
    OptimFit,
    fit_fixed,
    hessian,
    maximize,
    theta_from_phi,
    to_matrix,
)
from deniable.estimation._mixed_lik import MarginalLikelihood
from deniable.estimation._mixed_links import inverse_link
from deniable.estimation._mixed_results import HosmerLemeshow, MixedRRResult
from deniable.estimation._regression_links import LINKS
from deniable.estimation._regression_results import FitData
from deniable.estimation._regression_stats import LRTest, invert_information
from deniable.exceptions import ConvergenceWarning, ParameterError

__all__ = ["MIXED_METHODS", "mixed_logistic_rr"]

Array = npt.NDArray[np.float64]

#: The approximations of the marginal likelihood.
MIXED_METHODS = ("laplace", "agq")


def _hosmer_lemeshow(y: Array, lam: Array, bins: int = 10) -> HosmerLemeshow | None:
    from scipy import stats

    if y.size < 5 * bins:
        return None
    order = np.argsort(lam, kind="stable")
    parts = np.array_split(order, bins)
    stat = 0.0
    for idx in parts:
        o, e, m = float(y[idx].sum()), float(lam[idx].sum()), idx.size
        var = e * (1 - e / m)
        stat += (o - e) ** 2 / var if var > 0 else 0.0
    df = bins - 2
    return HosmerLemeshow(stat, df, float(stats.chi2.sf(stat, df)), bins)


def mixed_logistic_rr(
    formula: str,
    data: Any,
    design: Any,
    *,
    random: str,
    item: str | None = None,
    method: str = "laplace",
    n_agq: int | None = None,
    link: str = "logit",
    tol: float = 1e-8,
    max_iter: int = 200,
) -> MixedRRResult:
    """Mixed-effects (multilevel) regression of a randomized binary outcome.

    The true answer of row ``i`` in group ``j`` follows
    ``P(T = 1) = F(x_ij' beta + z_ij' b_j)``, ``b_j ~ N(0, Sigma)``, and its report has
    ``P(y = 1) = P0 + (P1 - P0) P(T = 1)`` through the row's design.  ``beta`` and
    ``Sigma = L L'`` maximize the marginal likelihood, integrated over ``b_j`` by the
    Laplace approximation or adaptive Gauss-Hermite quadrature (Fox, Klotzke & Veen 2016,
    GLMMRR's ``RRglmer``; lme4's ``glmer`` for the method).

    Parameters
    ----------
    formula : the fixed part, ``"y ~ x1 + x2"`` (the language of :func:`logistic_rr`);
        ``y`` holds 0/1 reports.
    data : a pandas DataFrame, one row a report (rows with a missing value in a column used
        are dropped); in long format, several rows (items) per respondent.
    design : the one-group binary design of every row, or a mapping of item labels to
        designs (then ``item`` names the column of labels).
    random : the random term in lme4's syntax: ``"(1 | school)"`` (random intercepts),
        ``"(1 + x | school)"`` (intercepts and slopes, correlated), ``"(0 + x | school)"``.
        One grouping factor.
    item : the column naming each row's item (a key of ``design``).
    method : ``"laplace"`` (default) or ``"agq"`` (adaptive Gauss-Hermite; one scalar random
        effect only, as lme4).
    n_agq : nodes of the quadrature for ``method="agq"`` (default 10).
    link : ``"logit"`` (default), ``"probit"`` or ``"cloglog"``.
    tol : convergence tolerance (log-likelihood units) of the final Newton steps.
    max_iter : maximum iterations of the optimizer.

    Notes
    -----
    Standard errors of ``beta`` and of ``ln sd`` come from the observed information of the
    (approximate) marginal likelihood, a central-difference Hessian.  The variance
    components' intervals are Wald intervals on the log sd (Fisher's z for correlations)
    mapped back.  ``lr_random`` compares the fit with the fixed-effects fit; for one random
    effect its p-value uses the 50:50 mixture of chi2(0) and chi2(1), as the variance is on
    its boundary under the null (Self & Liang 1987).  A :class:`ConvergenceWarning` (kept in
    ``notes``) says when the optimizer stopped short, a conditional mode was not found, a
    variance component is on the boundary (zero) or the information is not positive
    definite.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from deniable import ForcedResponse
    >>> from deniable.estimation import mixed_logistic_rr
    >>> rng = np.random.default_rng(7)
    >>> design = ForcedResponse(1/6, 1/6)
    >>> school = rng.integers(0, 40, 4000)
    >>> x = rng.normal(size=4000)
    >>> b = rng.normal(0, 0.8, 40)
    >>> truth = rng.random(4000) < 1 / (1 + np.exp(-(-1 + 0.5 * x + b[school])))
    >>> df = pd.DataFrame({"y": design.randomize(truth, rng=rng), "x": x, "school": school})
    >>> fit = mixed_logistic_rr("y ~ x", df, design, random="(1 | school)")
    >>> fit.params.round(2).to_dict()
    {'Intercept': -1.1, 'x': 0.52}
    >>> round(float(fit.sd[0]), 2)
    0.72
    """
    link = v.choice("link", link, tuple(LINKS))
    method = v.choice("method", method, MIXED_METHODS)
    if n_agq is None:
        n_agq = 10 if method == "agq" else 1
    n_agq = v.integer("n_agq", n_agq, minimum=1, maximum=50)
    if method == "laplace" and n_agq != 1:
        raise ParameterError(
            f"`n_agq` is for method='agq' (Laplace uses 1 node), got n_agq={n_agq} with "
            "method='laplace'."
        )
    tol = v.positive("tol", tol)
    max_iter = v.integer("max_iter", max_iter, minimum=1)
    md = mixed_data(formula, data, design, random, item)
    q = md.Z.shape[1]
    if method == "agq" and q > 1:
        raise ParameterError(
            f"`method` 'agq' needs one scalar random effect (as lme4's nAGQ > 1), got "
            f"{q} random effects in `random` {md.term.text!r}; use method='laplace'."
        )
    X, y = md.model.X, md.model.y
    G = len(md.labels)
    beta0, llf_fixed, fixed_ok = fit_fixed(link, X, y, md.p1, md.p0, tol=1e-10, max_iter=100)
    theta0 = (0.5 * np.eye(q))[np.tril_indices(q)]
    lik = MarginalLikelihood(X, md.Z, md.groups, G, y, md.p1, md.p0, link, 1)
    fit = maximize(lik, beta0, theta0, tol=tol, max_iter=max_iter)
    if n_agq > 1:  # from the Laplace estimate, as lme4 starts nAGQ > 1 from nAGQ = 1
        laplace_evals = fit.evaluations
        lik = MarginalLikelihood(X, md.Z, md.groups, G, y, md.p1, md.p0, link, n_agq)
        lik.u = fit_modes(fit, lik, q)
        start = fit.theta if np.all(np.diag(to_matrix(fit.theta, q)) > BOUNDARY_SD) else theta0
        fit = maximize(lik, fit.beta, start, tol=tol, max_iter=max_iter)
        fit = dataclasses.replace(fit, evaluations=fit.evaluations + laplace_evals)
    p = X.shape[1]
    L = to_matrix(fit.theta, q)
    notes: list[str] = []
    if not fit.converged:
        notes.append(f"the optimizer stopped before converging: {fit.message}")
    if not lik.modes(fit.beta, L)[3]:
        notes.append("the conditional modes of some groups' random effects were not found.")
    boundary = bool(np.any(np.diag(L) <= BOUNDARY_SD))
    Sigma = L @ L.T
    sd = np.sqrt(np.diag(Sigma))
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.clip((Sigma / np.outer(sd, sd))[np.tril_indices(q, -1)], -1.0, 1.0)
        phi_vc = np.concatenate([np.log(sd), np.arctanh(rho)])  # sd 0: -inf; rho +-1: +-inf
    if boundary:
        what = "a variance is 0" if np.any(sd <= BOUNDARY_SD) else "a correlation is +-1"
        notes.append(
            f"the random-effect covariance is singular ({what}: on the boundary of the "
            "parameter space, lme4's 'boundary (singular) fit'); the variance components' SEs "
            "and intervals are not given and the fixed effects' SEs hold them fixed."
        )
        _, H = hessian(lambda b: lik.loglik(b, L), fit.beta)
        cov = np.full((p + len(fit.theta), p + len(fit.theta)), np.nan)
        cov[:p, :p] = invert_information(-H)
    else:
        phi = np.concatenate([fit.beta, phi_vc])
        _, H = hessian(lambda ph: lik.loglik(ph[:p], to_matrix(theta_from_phi(ph[p:], q), q)), phi)
        cov = invert_information(-H)
    if np.any(~np.isfinite(np.diag(cov)[:p])) or np.any(np.diag(cov)[:p] <= 0):
        notes.append("the observed information is not positive definite: some SEs are n/a.")
    for note in notes:
        warnings.warn(note, ConvergenceWarning, stacklevel=2)
    b, bcov = lik.conditional(fit.beta, L)
    F = inverse_link(link, X @ fit.beta + np.einsum("ik,ik->i", md.Z, b[md.groups]))[0]
    lam = md.p0 + (md.p1 - md.p0) * F
    k_vc = q * (q + 1) // 2
    from scipy import stats

    stat = max(0.0, 2 * (fit.llf - llf_fixed))
    pval = 0.5 * float(stats.chi2.sf(stat, 1)) if q == 1 else float(stats.chi2.sf(stat, k_vc))
    if stat == 0.0:  # the point mass at 0 of the mixture is part of the tail
        pval = 1.0
    lr = LRTest(
        statistic=stat,
        df=k_vc,
        pvalue=pval,
        llf_full=fit.llf,
        llf_restricted=llf_fixed,
        full=f"with {md.term.text}",
        restricted="fixed effects only",
    )
    sizes = np.bincount(md.groups, minlength=G)
    first = next(iter(md.designs.values()))
    return MixedRRResult(
        model=f"mixed-{link}-rr",
        formula=formula,
        outcome=md.model.outcome,
        terms=md.model.terms,
        theta=np.concatenate([fit.beta, phi_vc]),
        covariances={"observed": cov},
        se_type="observed",
        llf=fit.llf,
        nobs=int(y.size),
        design=first,
        converged=fit.converged and fixed_ok,
        iterations={"steps": fit.iterations, "evals": fit.evaluations},
        tolerance=tol,
        n_dropped=md.model.n_dropped,
        notes=tuple(notes),
        data=FitData(y, X, md.p1, md.p0),
        link=link,
        method=method,
        n_agq=n_agq,
        random=md.term.text,
        group=md.term.group,
        random_names=md.term.names,
        n_groups=G,
        group_sizes=(int(sizes.min()), float(sizes.mean()), int(sizes.max())),
        designs=dict(md.designs),
        item=item,
        llf_fixed=llf_fixed,
        lr_random=lr,
        hosmer_lemeshow=_hosmer_lemeshow(y, lam),
        modes=b,
        modes_cov=bcov,
        labels=md.labels,
    )


def fit_modes(fit: OptimFit, lik: MarginalLikelihood, q: int) -> Array:
    """The conditional modes ``u`` at a previous fit, to start ``lik`` from."""
    u: Array = lik.modes(fit.beta, to_matrix(fit.theta, q))[0]
    return u
