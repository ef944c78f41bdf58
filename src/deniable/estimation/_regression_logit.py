"""The likelihood of binary regression with a randomized binary outcome, and its maximizer.

Respondent ``i`` has a true answer ``T_i ~ Bernoulli(p_i)``, ``p_i = F(x_i' beta)`` with
``F`` the inverse link (logit by default, probit or complementary log-log:
``_regression_links``),
and gives a report ``y_i`` through a binary channel with ``P1_i = P(y = 1 | T = 1)`` and
``P0_i = P(y = 1 | T = 0)`` (``P1 = 1, P0 = 0`` for a respondent asked directly), so

    lambda_i = P(y_i = 1 | x_i) = P1_i p_i + P0_i (1 - p_i) = c_i F(x_i' beta) + d_i,

with ``c = P1 - P0`` and ``d = P0`` (Maddala 1983, sec. 2.16, for misclassified binary
outcomes; van der Heijden & van Gils 1996 and Heck & Moshagen 2018, RRreg's ``RRlog``, for
randomized response).  With ``q = 1 - p``, ``eta = x' beta``, ``f = F'`` and ``f' = F''``,
per respondent:

    l      = y ln(lambda) + (1 - y) ln(1 - lambda),
    lambda = P1 p + P0 q,            1 - lambda = (1 - P1) p + (1 - P0) q,
    lambda'  = d lambda / d eta   = c f        (logit: c p q),
    lambda'' = d^2 lambda / d eta^2 = c f'       (logit: c p q (q - p)),
    dl/d eta     = y lambda'/lambda - (1 - y) lambda'/(1 - lambda),
    d^2l/d eta^2 = y (lambda''/lambda - (lambda'/lambda)^2)
                   - (1 - y) (lambda''/(1 - lambda) + (lambda'/(1 - lambda))^2),
    E[-d^2l/d eta^2] = lambda'^2 / (lambda (1 - lambda)).

The gradient is ``X' (dl/d eta)``; the observed information ``X' diag(-d^2l/d eta^2) X``,
the expected information ``X' diag(lambda'^2 / (lambda (1 - lambda))) X`` and the outer
product of scores ``X' diag((dl/d eta)^2) X``.  Both ``lambda`` and ``1 - lambda`` are sums
of non-negative terms, so they are computed without cancellation.

With sampling weights ``w_i`` (the pseudo-likelihood of a survey sample, Binder 1983;
Skinner, Holt & Smith 1989, ch. 3) every sum above becomes ``sum_i w_i (...)``.

Maximization: EM first (the true answers are the missing data; E-step
``tau_i = P(T_i = 1 | y_i, x_i) = p_i P(y_i | 1) / lambda_{y_i}``, M-step a binary
regression with the same link fitted to the fractional responses ``tau``), then Newton on
the log-likelihood with the observed information (Fisher scoring where that is not
positive definite) and a backtracking line search, until the Newton decrement
``g' H^-1 g / 2`` (the log-likelihood still to gain, to second order) is below ``tol``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from deniable.estimation._regression_links import link_functions, log_probabilities

__all__ = [
    "LogitFit",
    "damped_newton",
    "fit_logit",
    "logit_information",
    "logit_loglik",
    "logit_scores",
]

Array = npt.NDArray[np.float64]

#: Above this ``|eta|`` a fitted prevalence is within 1.4e-11 of 0 or 1: the MLE is on the
#: boundary (or does not exist) and its standard errors mean nothing.
BOUNDARY_ETA = 25.0
#: The same bound on the prevalence, for every link: ``expit(-25)``.
BOUNDARY_PREVALENCE = 1.0 / (1.0 + math.exp(BOUNDARY_ETA))


def _ratio(a: Array, b: Array) -> Array:
    """``a / b`` where ``b > 0``, else 0 (those terms never enter an accepted step)."""
    return np.divide(a, b, out=np.zeros_like(a), where=b > 0)


def _pieces(
    X: Array, y: Array, p1: Array, p0: Array, beta: Array, link: str = "logit"
) -> tuple[Array, Array, Array, Array]:
    """Per respondent: log-likelihood, dl/deta, d2l/deta2 and the expected information."""
    eta = X @ beta
    p, q, f, fprime = link_functions(link)(eta)
    lam = p1 * p + p0 * q
    mlam = (1 - p1) * p + (1 - p0) * q
    d1 = (p1 - p0) * f
    d2 = (p1 - p0) * fprime
    yes = y == 1
    with np.errstate(divide="ignore"):
        ll = np.log(np.where(yes, lam, mlam))
    a, b = _ratio(d1, lam), _ratio(d1, mlam)
    score = np.where(yes, a, -b)
    hess = np.where(yes, _ratio(d2, lam) - a * a, -_ratio(d2, mlam) - b * b)
    fisher = _ratio(d1 * d1, lam * mlam)
    return ll, score, hess, fisher


def _weighted(w: Array | None, values: Array) -> Array:
    return values if w is None else w * values


def _total(ll: Array, w: Array | None) -> float:
    """The (weighted) log-likelihood from its terms; a row of weight 0 adds nothing, even
    an impossible report's ``-inf``."""
    if w is not None:
        ll = np.where(w > 0, ll, 0.0) * w
    return float(ll.sum())


def _information(X: Array, w: Array | None, *terms: Array) -> list[Array]:
    """``X' diag(w t) X`` for each per-respondent term ``t``."""
    return [X.T @ (X * _weighted(w, t)[:, None]) for t in terms]


def logit_loglik(
    X: Array,
    y: Array,
    p1: Array,
    p0: Array,
    beta: Array,
    *,
    link: str = "logit",
    weights: Array | None = None,
) -> float:
    """(Weighted) log-likelihood of ``beta`` (``-inf`` where a report is impossible)."""
    return _total(_pieces(X, y, p1, p0, beta, link)[0], weights)


def logit_information(
    X: Array,
    y: Array,
    p1: Array,
    p0: Array,
    beta: Array,
    *,
    link: str = "logit",
    weights: Array | None = None,
) -> dict[str, Array]:
    """Observed, expected and outer-product information matrices at ``beta`` (each term
    times its weight, for a weighted pseudo-likelihood)."""
    _, score, hess, fisher = _pieces(X, y, p1, p0, beta, link)
    observed, expected, opg = _information(X, weights, -hess, fisher, score * score)
    return {"observed": observed, "expected": expected, "opg": opg}


def logit_scores(
    X: Array, y: Array, p1: Array, p0: Array, beta: Array, *, link: str = "logit"
) -> Array:
    """Per-respondent score vectors ``x_i dl_i/deta`` (n, k), unweighted."""
    score = _pieces(X, y, p1, p0, beta, link)[1]
    out: Array = X * score[:, None]
    return out


def _solve_pd(A: Array, b: Array) -> Array | None:
    """``A^-1 b`` if ``A`` is (numerically) positive definite, else ``None``."""
    try:
        L = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return None
    out: Array = np.linalg.solve(L.T, np.linalg.solve(L, b))
    return out


def _newton_step(info: Array, fallback: Array, grad: Array) -> Array:
    """``info^-1 grad``; ``fallback^-1 grad`` if ``info`` is not positive definite."""
    step = _solve_pd(info, grad)
    if step is None:
        step = _solve_pd(fallback, grad)
    if step is None:
        step = np.asarray(np.linalg.lstsq(fallback, grad, rcond=None)[0], dtype=np.float64)
    return step


Objective = Callable[[Array], tuple[float, Array, Array, Array]]


def damped_newton(
    fun: Objective, beta: Array, *, tol: float, max_iter: int
) -> tuple[Array, float, int, bool]:
    """Maximize a concave-ish function with Newton steps and backtracking.

    ``fun(beta) -> (value, gradient, observed information, fallback information)``; the
    fallback (positive semi-definite) is used where the observed one is not positive
    definite.  Returns ``(beta, value, iterations, converged)``.
    """
    value, grad, info, fallback = fun(beta)
    for it in range(1, max_iter + 1):
        step = _newton_step(info, fallback, grad)
        decrement = float(grad @ step)
        if decrement / 2 <= tol:  # converged; the last (tiny) step is free accuracy
            last = fun(beta + step)
            if np.isfinite(last[0]) and last[0] >= value - 1e-12 * (1 + abs(value)):
                return beta + step, last[0], it, True
            return beta, value, it - 1, True
        t = 1.0
        while True:
            cand = beta + t * step
            new = fun(cand)
            if np.isfinite(new[0]) and new[0] >= value + 1e-4 * t * decrement:
                break
            t /= 2
            if t < 1e-12:  # no ascent along the step: stuck at a numerical optimum
                return beta, value, it, decrement / 2 <= 1e3 * tol
        beta = cand
        value, grad, info, fallback = new
    done = float(grad @ _newton_step(info, fallback, grad)) / 2 <= tol
    return beta, value, max_iter, done


@dataclass(frozen=True)
class LogitFit:
    """The maximizer and how it was reached."""

    beta: Array
    llf: float
    em_iterations: int
    newton_iterations: int
    converged: bool
    boundary: bool


def _em(
    X: Array,
    y: Array,
    p1: Array,
    p0: Array,
    beta: Array,
    *,
    max_iter: int,
    tol: float,
    link: str = "logit",
    weights: Array | None = None,
) -> tuple[Array, int]:
    """EM for the misclassified outcome: fractional responses, then a binary-regression
    M-step with the same link (Fisher scoring)."""
    functions = link_functions(link)
    w = np.ones(y.size) if weights is None else weights
    py1 = np.where(y == 1, p1, 1 - p1)  # P(report | true 1)
    py0 = np.where(y == 1, p0, 1 - p0)  # P(report | true 0)
    ll = logit_loglik(X, y, p1, p0, beta, link=link, weights=weights)
    for it in range(1, max_iter + 1):
        pe, qe, _, _ = functions(X @ beta)
        a1, a0 = py1 * pe, py0 * qe
        tau = _ratio(a1, a1 + a0)

        def q_fun(b: Array, tau: Array = tau) -> tuple[float, Array, Array, Array]:
            e = X @ b
            p, q, f, _ = functions(e)
            lp, lq = log_probabilities(link, e)
            lp = np.where(w * tau > 0, lp, 0.0)
            lq = np.where(w * (1 - tau) > 0, lq, 0.0)
            pq = p * q
            grad = X.T @ (w * (tau - p) * _ratio(f, pq))
            info = X.T @ (X * (w * _ratio(f * f, pq))[:, None])
            return float((w * tau) @ lp + (w * (1 - tau)) @ lq), grad, info, info

        beta, _, _, _ = damped_newton(q_fun, beta, tol=1e-10, max_iter=5)
        new = logit_loglik(X, y, p1, p0, beta, link=link, weights=weights)
        if new - ll <= tol * (1 + abs(new)):
            return beta, it
        ll = new
    return beta, max_iter


def fit_logit(
    X: Array,
    y: Array,
    p1: Array,
    p0: Array,
    *,
    tol: float = 1e-10,
    max_iter: int = 100,
    em_iter: int = 50,
    start: Array | None = None,
    link: str = "logit",
    weights: Array | None = None,
) -> LogitFit:
    """Maximum-likelihood ``beta`` (pseudo-likelihood with ``weights``): EM from ``start``
    (default 0), then damped Newton.  ``em_iter=0`` skips the EM (a warm start)."""
    beta = np.zeros(X.shape[1]) if start is None else np.asarray(start, dtype=float).copy()
    n_em = 0
    if em_iter > 0:
        beta, n_em = _em(X, y, p1, p0, beta, max_iter=em_iter, tol=1e-6, link=link, weights=weights)
    w = weights

    def fun(b: Array) -> tuple[float, Array, Array, Array]:
        ll, score, hess, fisher = _pieces(X, y, p1, p0, b, link)
        observed, expected = _information(X, w, -hess, fisher)
        return _total(ll, w), X.T @ _weighted(w, score), observed, expected

    beta, llf, n_newton, converged = damped_newton(fun, beta, tol=tol, max_iter=max_iter)
    used = X if w is None else X[w > 0]
    boundary = False
    if used.size:
        p, q, _, _ = link_functions(link)(used @ beta)
        boundary = bool(np.min(np.minimum(p, q)) < BOUNDARY_PREVALENCE)
    return LogitFit(beta, llf, n_em, n_newton, converged, boundary)
