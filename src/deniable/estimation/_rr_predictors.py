"""Randomized-response items as predictors of :func:`~deniable.estimation.logistic_rr`:
several at once, binary or categorical, with the outcome randomized or not.

Respondent ``i`` has latent true answers ``Z_i = (Z_i1, ..., Z_im)`` to ``m`` sensitive
items, item ``j`` with ``k_j`` categories; the analyst sees their randomized reports
``R_ij`` through each item's channel ``C_j[r, z] = P(R = r | Z = z)``.  The latent answers
have a joint distribution ``pi_z`` over the ``K = prod k_j`` cells (estimated, not depending
on the covariates: the assumption of RRreg's ``RRlin`` and of ``linear_rr``), and

    P(T_i = 1 | x_i, z) = F(x_i' beta + d_z' gamma),

``d_z`` the dummy coding of the cell (category 0 of each item the reference).  Summing over
the latent cells (van den Hout, van der Heijden & Gilchrist 2007; Heck & Moshagen 2018,
RRreg's ``RRlog`` with randomized covariates),

    L_i = sum_z pi_z prod_j C_j[R_ij, z_j] P(y_i | x_i, z),

``P(y | x, z)`` the randomized-outcome likelihood of ``_regression_logit``.  EM: the
E-step's posterior ``w_iz`` of each cell, the M-step ``pi_z = mean_i w_iz`` and a weighted
randomized-response regression on the data expanded over the cells.  The score is the
Fisher identity ``sum_iz w_iz s_iz`` (``s_iz`` the complete-data score; for
``pi = softmax(0, alpha)``: ``w_im - pi_m``); the observed information is the numerical
Jacobian of that exact score (central differences), the OPG the outer product of the
respondents' scores.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from deniable.estimation._regression_data import Array, model_data
from deniable.estimation._regression_links import link_functions
from deniable.estimation._regression_logistic_result import LogisticRRResult
from deniable.estimation._regression_logit import _pieces, fit_logit
from deniable.estimation._regression_results import FitData, logit_interval
from deniable.estimation._regression_stats import Prevalence, invert_information
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

__all__ = ["Latent", "RRPredictorResult", "fit_latent", "fit_rr_predictors", "latent_items"]


@dataclass(frozen=True)
class Latent:
    """The randomized predictors of one fit: names, categories, channels and reports."""

    names: tuple[str, ...]
    levels: tuple[int, ...]
    channels: tuple[Array, ...]
    reports: tuple[Any, ...]

    @property
    def cells(self) -> Array:
        """``(K, m)`` the latent cells, the first item varying slowest."""
        return np.array(list(itertools.product(*(range(k) for k in self.levels))), dtype=int)

    @property
    def dummies(self) -> Array:
        """``(K, sum (k_j - 1))`` dummy coding of each cell."""
        cells = self.cells
        cols = [(cells[:, j] == c).astype(float) for j, k in enumerate(self.levels)
                for c in range(1, k)]  # fmt: skip
        return np.column_stack(cols)

    @property
    def terms(self) -> tuple[str, ...]:
        return tuple(f"{n}[{c}]" for n, k in zip(self.names, self.levels, strict=True)
                     for c in range(1, k))  # fmt: skip

    def report_likelihood(self) -> Array:
        """``(n, K)``: ``prod_j C_j[R_ij, z_j]`` for each respondent and cell."""
        cells = self.cells
        out = np.ones((len(self.reports[0]), cells.shape[0]))
        for j, (C, R) in enumerate(zip(self.channels, self.reports, strict=True)):
            out *= C[np.asarray(R, dtype=int)][:, cells[:, j]]
        return out


def latent_items(predictors: Any, columns: Mapping[str, Any], formula_columns: Any) -> Latent:
    """Check ``rr_predictors`` (``{column: design}``) against the data's report columns."""
    from deniable.designs import Design, TwoGroupDesign

    if not isinstance(predictors, Mapping) or not predictors:
        raise ParameterTypeError(
            "`rr_predictors` must be a mapping from column names to their randomized-response "
            f"designs, e.g. {{'drug': Warner(0.7)}}, got {predictors!r}."
        )
    names, levels, channels, reports = [], [], [], []
    for name, design in predictors.items():
        if name in formula_columns:
            raise ParameterError(
                f"`rr_predictors` column {name!r} is also in the formula: leave it out (it "
                "enters through its latent true answer, coded against category 0)."
            )
        if not isinstance(design, Design) or isinstance(design, TwoGroupDesign):
            raise ParameterTypeError(
                f"`rr_predictors`[{name!r}] must be a one-group design (binary or "
                f"categorical), got {type(design).__name__}."
            )
        C = np.asarray(design.channel, dtype=float)
        if C.shape[0] != C.shape[1]:
            raise ParameterError(
                f"`rr_predictors`[{name!r}] must report one of its {C.shape[1]} answers "
                f"(a square channel), got {C.shape[0]} report values."
            )
        raw = np.asarray(columns[name], dtype=float)
        bad = (raw != np.round(raw)) | (raw < 0) | (raw >= C.shape[0])
        if bad.any():
            i = int(np.argmax(bad))
            raise DataError(
                f"`rr_predictors` column {name!r} must hold reports 0 to {C.shape[0] - 1}, "
                f"got {raw[i]:g} ({int(bad.sum())} such rows)."
            )
        names.append(name)
        levels.append(C.shape[1])
        channels.append(C)
        reports.append(raw.astype(int))
    return Latent(tuple(names), tuple(levels), tuple(channels), tuple(reports))


@dataclass(frozen=True)
class _Problem:
    X: Array
    y: Array
    p1: Array
    p0: Array
    latent: Latent
    link: str

    def expanded(self) -> tuple[Array, Array, Array, Array]:
        n, K = self.X.shape[0], self.latent.cells.shape[0]
        D = self.latent.dummies
        Xb = np.hstack([np.repeat(self.X, K, axis=0), np.tile(D, (n, 1))])
        return Xb, np.repeat(self.y, K), np.repeat(self.p1, K), np.repeat(self.p0, K)


def _softmax(alpha: Array) -> Array:
    a = np.concatenate([[0.0], alpha])
    e = np.exp(a - a.max())
    out: Array = e / e.sum()
    return out


def _posterior(
    prob: _Problem, big: tuple[Array, ...], rl: Array, theta: Array
) -> tuple[Array, Array, Array]:
    """``(log-likelihood per respondent, w (n, K), expanded dl/deta)``."""
    Xb, yb, p1b, p0b = big
    n, K = rl.shape
    kb = Xb.shape[1]
    ll, score, _, _ = _pieces(Xb, yb, p1b, p0b, theta[:kb], prob.link)
    pi = _softmax(theta[kb:])
    with np.errstate(divide="ignore"):
        la = np.log(pi)[None, :] + np.log(rl) + ll.reshape(n, K)
    top = la.max(axis=1, keepdims=True)
    lse = top[:, 0] + np.log(np.exp(la - top).sum(axis=1))
    w = np.exp(la - lse[:, None])
    return lse, w, score


def _scores(prob: _Problem, big: tuple[Array, ...], rl: Array, theta: Array) -> Array:
    """Per-respondent scores ``(n, p)`` by the Fisher identity."""
    Xb = big[0]
    n, K = rl.shape
    _, w, score = _posterior(prob, big, rl, theta)
    pi = _softmax(theta[Xb.shape[1] :])
    sb = (Xb * (w.ravel() * score)[:, None]).reshape(n, K, -1).sum(axis=1)
    sa = w[:, 1:] - pi[None, 1:]
    out: Array = np.hstack([sb, sa])
    return out


def fit_latent(
    X: Array, y: Array, p1: Array, p0: Array, latent: Latent, *, link: str, tol: float,
    max_iter: int,
) -> tuple[Array, float, int, bool, dict[str, Array]]:  # fmt: skip
    """``(theta, llf, EM iterations, converged, covariances)``."""
    prob = _Problem(X, y, p1, p0, latent, link)
    big = prob.expanded()
    rl = latent.report_likelihood()
    K = rl.shape[1]
    kb = big[0].shape[1]
    start = fit_logit(X, y, p1, p0, link=link, tol=1e-8, max_iter=50).beta
    theta = np.concatenate([start, np.zeros(kb - X.shape[1]), np.zeros(K - 1)])
    llf = float(_posterior(prob, big, rl, theta)[0].sum())
    converged = False
    it = 0
    for it in range(1, 20 * max_iter + 1):  # noqa: B007 - the count is reported
        _, w, _ = _posterior(prob, big, rl, theta)
        pi = np.clip(w.mean(axis=0), 1e-12, None)
        beta = fit_logit(*big, link=link, weights=w.ravel(), start=theta[:kb], em_iter=0,
                         tol=1e-12, max_iter=20).beta  # fmt: skip
        theta = np.concatenate([beta, np.log(pi[1:] / pi[0])])
        new = float(_posterior(prob, big, rl, theta)[0].sum())
        if abs(new - llf) <= tol * (1 + abs(new)) * 1e-2:
            llf, converged = new, True
            break
        llf = new
    S = _scores(prob, big, rl, theta)
    p = theta.size
    J = np.empty((p, p))
    for a in range(p):
        h = 1e-5 * max(1.0, abs(float(theta[a])))
        e = np.zeros(p)
        e[a] = h
        J[:, a] = (_scores(prob, big, rl, theta + e).sum(0)
                   - _scores(prob, big, rl, theta - e).sum(0)) / (2 * h)  # fmt: skip
    observed = -(J + J.T) / 2
    covs = {"observed": invert_information(observed), "opg": invert_information(S.T @ S)}
    return theta, llf, it, converged, covs


@dataclass(frozen=True, eq=False)
class RRPredictorResult(LogisticRRResult):
    """:func:`~deniable.estimation.logistic_rr` with randomized predictors: the coefficients
    of the covariates and of each latent item's categories (``name[c]``, against category
    0), and the latent cells' distribution as ancillary rows."""

    title: ClassVar[str] = "Regression with randomized predictors"

    latent: Latent | None = field(default=None, repr=False)

    def _split(self) -> tuple[int, int, Array]:
        assert self.latent is not None
        kb = len(self.terms)
        return kb, self.latent.cells.shape[0], _softmax(self.theta[kb:])

    def cell_shares(self) -> dict[str, float]:
        """The estimated joint distribution of the latent true answers, by cell."""
        assert self.latent is not None
        _, _, pi = self._split()
        return {self._cell_name(c): float(p) for c, p in zip(self.latent.cells, pi, strict=True)}

    def _cell_name(self, cell: Any) -> str:
        assert self.latent is not None
        return "P(" + ", ".join(f"{n}={int(v)}" for n, v in zip(self.latent.names, cell,
                                                                 strict=True)) + ")"  # fmt: skip

    def _ancillary_rows(self, level: float) -> list[tuple[str, float, float, float, float]]:
        assert self.latent is not None
        kb, _, pi = self._split()
        jac = (np.diag(pi) - np.outer(pi, pi))[:, 1:]
        cov = jac @ self.cov[kb:, kb:] @ jac.T
        rows = []
        for c, cell in enumerate(self.latent.cells):
            se = math.sqrt(max(float(cov[c, c]), 0.0))
            lo, hi = logit_interval(float(pi[c]), se / (pi[c] * (1 - pi[c])), level)
            rows.append((self._cell_name(cell), float(pi[c]), se, lo, hi))
        return rows

    def predict(self, data: Any = None, *, level: float = 0.95) -> Any:
        """Not available: the latent true answers of the predictors are not observed."""
        raise ParameterError(
            "predict is not available with `rr_predictors`: the predictors' true answers are "
            "latent (use prevalence() for the population average)."
        )

    def prevalence(self, level: float = 0.95, *, data: Any = None) -> Prevalence:
        """``m = sum_z pi_z mean_i F(x_i' beta + d_z' gamma)`` over the rows fitted, with its
        delta-method SE and an interval on the logit scale."""
        assert self.latent is not None and self.data is not None
        if data is not None:
            raise ParameterError("`data` is not available with `rr_predictors`.")
        kb, K, pi = self._split()
        X = self.data.X
        k = X.shape[1]
        D = self.latent.dummies
        beta, gamma = self.theta[:k], self.theta[k:kb]
        F = np.empty(K)
        g = np.zeros(self.theta.size)
        for z in range(K):
            p, _, f, _ = link_functions(self.link)(X @ beta + D[z] @ gamma)
            F[z] = p.mean()
            g[:k] += pi[z] * (X * f[:, None]).mean(axis=0)
            g[k:kb] += pi[z] * f.mean() * D[z]
        m = float(pi @ F)
        g[kb:] = ((np.diag(pi) - np.outer(pi, pi))[:, 1:]).T @ F
        se = math.sqrt(max(float(g @ self.cov @ g), 0.0))
        lo, hi = logit_interval(m, se / (m * (1 - m)) if 0 < m < 1 else math.inf, level)
        return Prevalence(m, se, lo, hi, level, "mean predicted prevalence")


def fit_rr_predictors(
    formula: str,
    data: Any,
    design: Any,
    predictors: Any,
    *,
    se: str | None,
    tol: float,
    max_iter: int,
    link: str,
) -> RRPredictorResult:
    """``logistic_rr(..., rr_predictors=...)``."""
    import warnings

    from deniable.estimation._formula import check_formula

    se = "observed" if se is None else se
    if se not in ("observed", "opg"):
        raise ParameterError(
            f"`se` must be one of 'observed', 'opg' with `rr_predictors`, got {se!r}."
        )
    if not isinstance(predictors, Mapping) or not predictors:
        latent_items(predictors, {}, ())  # raises the type error
    extras = {f"rr_predictors[{name!r}]": name for name in predictors}
    md = model_data(formula, data, outcome="binary", extras=extras)
    latent = latent_items(predictors, md.extras, set(check_formula(formula).columns))
    n = md.y.size
    p1 = np.full(n, design.p_yes_given_1)
    p0 = np.full(n, design.p_yes_given_0)
    theta, llf, its, converged, covs = fit_latent(md.X, md.y, p1, p0, latent, link=link,
                                                  tol=tol, max_iter=max_iter)  # fmt: skip
    notes = []
    if not converged:
        notes.append(f"EM did not reach the tolerance {tol:g} in {its} iterations.")
        warnings.warn(notes[-1], RuntimeWarning, stacklevel=3)
    return RRPredictorResult(
        model="logistic-rr" if link == "logit" else f"{link}-rr",
        formula=formula,
        outcome=md.outcome,
        terms=(*md.terms, *latent.terms),
        theta=theta,
        covariances=covs,
        se_type=se,
        llf=llf,
        nobs=int(n),
        design=design,
        converged=converged,
        iterations={"EM": its},
        tolerance=tol,
        n_dropped=md.n_dropped,
        notes=tuple(notes),
        data=FitData(md.y, md.X, p1, p0),
        spec=md.spec,
        index=md.index,
        link=link,
        latent=latent,
    )
