"""Two-group designs as regression outcomes: the prevalence follows a binary regression, the
design's second parameter is a constant (as RRreg's ``RRlog`` for two-group models).

Respondent ``i`` in group ``g_i`` gives "yes" with probability (``designs/_twogroup``)

    lambda_i = c_g + M[g, 0] pi_i + M[g, 1] phi_2(pi_i, theta),     pi_i = F(x_i' beta),

with ``theta`` the design's nuisance parameter and ``phi_2``:

=========================  ====================  ==================  =================
design                     ``theta``             ``phi_2``           ``a = d phi_2/d pi``
=========================  ====================  ==================  =================
``UnrelatedUnknown``       unrelated prevalence  ``theta``           0
``StochasticLieDetector``  honesty ``t``         ``pi theta``        ``theta``
cheater detection          cheating ``gamma``    ``1 - pi - theta``  -1
=========================  ====================  ==================  =================

(``b = d phi_2 / d theta`` is 1, ``pi`` and -1.)  ``theta = expit(psi)`` keeps it in (0, 1);
the fit is over ``(beta, psi)`` and reports ``theta`` with a delta-method SE and an interval
mapped from ``psi``.  With ``u = y/lambda - (1-y)/(1-lambda)``,
``u2 = -y/lambda^2 - (1-y)/(1-lambda)^2``, ``D_eta = (M0 + M1 a) f``,
``D_psi = M1 b theta'`` (``theta' = theta (1 - theta)``):

* score: ``sum u (D_eta x, D_psi)``;
* Hessian: ``sum u2 grad grad' + u (d^2 lambda)`` with ``d^2 lambda / d eta^2 =
  (M0 + M1 a) f'``, ``d^2 lambda / d eta d psi = M1 [SLD] f theta'``,
  ``d^2 lambda / d psi^2 = M1 b theta' (1 - 2 theta)``;
* expected information: ``sum grad grad' / (lambda (1 - lambda))``.

Maximized by damped Newton (``_regression_logit``) from the moment estimates of the two
groups.  References: Moshagen, Musch & Erdfelder (2012) for the SLD; Clark & Desharnais
(1998) for cheater detection; Greenberg et al. (1969) for the unrelated question; Heck &
Moshagen (2018), RRreg's ``RRlog``, for these models with covariates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from deniable.designs import (
    CheaterDetection,
    StochasticLieDetector,
    SymmetricCheaterDetection,
    TwoGroupDesign,
    UnrelatedUnknown,
)
from deniable.estimation._regression_data import Array, model_data
from deniable.estimation._regression_links import link_functions
from deniable.estimation._regression_logistic_result import LogisticRRResult
from deniable.estimation._regression_logit import damped_newton
from deniable.estimation._regression_results import FitData, logit_interval
from deniable.estimation._regression_stats import invert_information
from deniable.exceptions import DataError, ParameterTypeError

__all__ = ["TwoGroupRRResult", "fit_twogroup"]


def _kind(design: TwoGroupDesign) -> str:
    if isinstance(design, UnrelatedUnknown):
        return "constant"
    if isinstance(design, StochasticLieDetector):
        return "product"
    if isinstance(design, CheaterDetection | SymmetricCheaterDetection):
        return "complement"
    raise ParameterTypeError(
        "`design` must be a two-group design with a regression model (UnrelatedUnknown, "
        f"StochasticLieDetector, CheaterDetection, SymmetricCheaterDetection), got "
        f"{type(design).__name__}."
    )


@dataclass(frozen=True)
class _Model:
    X: Array
    y: Array
    c: Array  # per respondent, from the group
    m0: Array
    m1: Array
    kind: str
    link: str

    def pieces(self, theta: Array) -> tuple[Array, Array, Array, Array]:
        """Per respondent: log-likelihood, gradient rows (n, k+1), Hessian (k+1, k+1),
        expected information (k+1, k+1)."""
        k = self.X.shape[1]
        beta, psi = theta[:k], float(theta[k])
        nu = 1 / (1 + math.exp(-psi))
        dnu = nu * (1 - nu)
        pi, _, f, fp = link_functions(self.link)(self.X @ beta)
        one = np.ones_like(pi)
        a: Array
        b: Array
        phi2: Array
        if self.kind == "constant":
            a, b, ab, phi2 = 0.0 * one, one, 0.0, nu * one
        elif self.kind == "product":
            a, b, ab, phi2 = nu * one, pi, 1.0, pi * nu
        else:
            a, b, ab, phi2 = -one, -one, 0.0, 1 - pi - nu
        lam = self.c + self.m0 * pi + self.m1 * phi2
        ok = (lam > 0) & (lam < 1)
        lam = np.clip(lam, 1e-300, 1 - 1e-16)
        yes = self.y == 1
        with np.errstate(divide="ignore"):
            ll = np.where(ok, np.where(yes, np.log(lam), np.log1p(-lam)), -np.inf)
        u = np.where(yes, 1 / lam, -1 / (1 - lam))
        u2 = np.where(yes, -1 / lam**2, -1 / (1 - lam) ** 2)
        slope = self.m0 + self.m1 * a
        d_eta = slope * f
        d_psi = self.m1 * b * dnu
        G = np.column_stack([self.X * d_eta[:, None], d_psi])
        H = G.T @ (G * u2[:, None])
        H[:k, :k] += self.X.T @ (self.X * (u * slope * fp)[:, None])
        cross = self.X.T @ (u * self.m1 * ab * f * dnu)
        H[:k, k] += cross
        H[k, :k] += cross
        H[k, k] += float(np.sum(u * self.m1 * b * dnu * (1 - 2 * nu)))
        E = G.T @ (G / (lam * (1 - lam))[:, None])
        return ll, G * u[:, None], H, E


@dataclass(frozen=True, eq=False)
class TwoGroupRRResult(LogisticRRResult):
    """Result of :func:`~deniable.estimation.logistic_rr` with a two-group design: the
    coefficients of the prevalence model (``predict`` and ``prevalence`` as for the one-group
    fit), and the design's second parameter (``nuisance``: ``unrelated_prevalence``,
    ``honesty`` or ``cheating``) as an ancillary row."""

    title: ClassVar[str] = "Regression with a randomized outcome, two groups"

    nuisance: str = ""
    group: str = field(default="", repr=False)

    def _ancillary_rows(self, level: float) -> list[tuple[str, float, float, float, float]]:
        k = len(self.terms)
        psi = float(self.theta[k])
        se_psi = math.sqrt(max(float(self.cov[k, k]), 0.0))
        nu = 1 / (1 + math.exp(-psi))
        lo, hi = logit_interval(nu, se_psi, level)
        return [(self.nuisance, nu, nu * (1 - nu) * se_psi, lo, hi)]

    def _extra_dict(self, level: float) -> dict[str, Any]:
        out = super()._extra_dict(level)
        out.update(link=self.link, group=self.group, nuisance=self.nuisance)
        return out


def fit_twogroup(
    formula: str,
    data: Any,
    design: TwoGroupDesign,
    *,
    group: str,
    se: str,
    tol: float,
    max_iter: int,
    link: str,
) -> TwoGroupRRResult:
    """The fit behind ``logistic_rr(formula, data, two_group_design, group=...)``."""
    kind = _kind(design)
    md = model_data(formula, data, outcome="binary", extras={"group": group})
    raw = np.asarray(md.extras[group], dtype=object)
    try:
        g = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        g = np.full(raw.shape, np.nan)
    bad = ~np.isin(g, (1.0, 2.0))
    if bad.any():
        i = int(np.argmax(bad))
        raise DataError(
            f"`group` column {group!r} must hold the group of each respondent, 1 or 2, got "
            f"{raw[i]!r} ({int(bad.sum())} such rows)."
        )
    for label in (1, 2):
        if not np.any(g == label):
            raise DataError(f"`group` column {group!r} has no respondent in group {label}.")
    c, M = design.linear_system()
    idx = (g == 2).astype(np.intp)
    model = _Model(md.X, md.y, c[idx], M[idx, 0], M[idx, 1], kind, link)

    def fun(t: Array) -> tuple[float, Array, Array, Array]:
        ll, S, H, E = model.pieces(t)
        return float(ll.sum()), S.sum(axis=0), -H, E

    start = _start(model, design, g)
    theta, llf, n_newton, converged = damped_newton(fun, start, tol=tol, max_iter=max_iter)
    _, S, H, E = model.pieces(theta)
    covs = {"observed": invert_information(-H), "expected": invert_information(E),
            "opg": invert_information(S.T @ S)}  # fmt: skip
    notes = []
    if not converged:
        notes.append(f"Newton iterations did not reach the tolerance {tol:g} in {max_iter} steps.")
    if abs(float(theta[-1])) > 25:
        notes.append(
            f"The {next(iter(design.nuisance))} estimate is within 1e-11 of 0 or 1: on the "
            "boundary, its SE is meaningless."
        )
    return TwoGroupRRResult(
        model="two-group-rr" if link == "logit" else f"two-group-{link}-rr",
        formula=formula,
        outcome=md.outcome,
        terms=md.terms,
        theta=theta,
        covariances=covs,
        se_type=se,
        llf=llf,
        nobs=int(md.y.size),
        design=design,  # type: ignore[arg-type]
        converged=converged,
        iterations={"Newton": n_newton},
        tolerance=tol,
        n_dropped=md.n_dropped,
        notes=tuple(notes),
        data=FitData(md.y, md.X, np.asarray(c[idx]), np.asarray(g)),
        nuisance=next(iter(design.nuisance)),
        link=link,
        group=group,
        spec=md.spec,
        index=md.index,
    )


def _start(model: _Model, design: TwoGroupDesign, g: Array) -> Array:
    """The two groups' moment estimates (clipped into the interior) as the start: the
    prevalence in the intercept (0 elsewhere), the nuisance parameter in ``psi``."""
    from scipy.special import logit

    k = model.X.shape[1]
    lam = np.array([model.y[g == 1].mean(), model.y[g == 2].mean()])
    c, M = design.linear_system()
    try:
        phi = np.linalg.solve(M, lam - c)
    except np.linalg.LinAlgError:
        phi = np.array([0.5, 0.5])
    pi = float(np.clip(phi[0], 0.05, 0.95))
    nu = {"constant": phi[1], "product": phi[1] / pi, "complement": 1 - pi - phi[1]}[model.kind]
    nu = float(np.clip(nu, 0.05, 0.95))
    start = np.zeros(k + 1)
    ones = np.ones(model.X.shape[0])
    coef, *_ = np.linalg.lstsq(model.X, ones, rcond=None)
    eta0 = float(logit(pi))
    if model.link == "probit":
        from scipy.special import ndtri

        eta0 = float(ndtri(pi))
    elif model.link == "cloglog":
        eta0 = math.log(-math.log1p(-pi))
    start[:k] = coef * eta0  # x' beta = eta0 for every row when the intercept is spanned
    start[k] = float(logit(nu))
    return start
