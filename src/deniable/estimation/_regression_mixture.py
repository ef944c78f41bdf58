"""The finite-mixture likelihood of a linear model with a randomized binary predictor.

Respondent ``i`` has a hidden binary ``Z_i ~ Bernoulli(pi)``, reports ``R_i`` through a
binary channel (``P(R = 1 | Z = 1) = P1_i``, ``P(R = 1 | Z = 0) = P0_i``), and

    y_i = x_i' beta + gamma Z_i + e_i,     e_i ~ N(0, sigma^2).

Summing over the hidden ``Z`` (the finite mixture of Heck & Moshagen 2018, RRreg's ``RRlin``),
with ``theta = (beta, gamma, sigma, pi)``,

    L_i = sum_z pi_z P(R_i | z) phi((y_i - x_i' beta - gamma z) / sigma) / sigma,
    pi_1 = pi, pi_0 = 1 - pi.

With ``w_z = P(Z_i = z | y_i, R_i)`` (posterior) and ``s_z``, ``A_z`` the complete-data score
and negative Hessian of respondent ``i`` at ``Z = z``:

* score: ``s = w_0 s_0 + w_1 s_1``;
* observed information (Louis 1982, JRSS B 44, 226-233):
  ``sum_i [w_0 A_0 + w_1 A_1 - w_0 w_1 (s_1 - s_0)(s_1 - s_0)']``;
* expected information: ``sum_i E[s s']`` over ``Z``, ``R`` and ``y`` given ``x_i``, the
  ``y`` integral by Gauss-Hermite quadrature (64 nodes);
* outer product of scores: ``sum_i s s'``.

Complete-data pieces (``e_z = y - x' beta - gamma z``, ``x~ = (x, z)``):
``s_z = (x~ e_z / sigma^2, -1/sigma + e_z^2/sigma^3, z/pi - (1 - z)/(1 - pi))``;
``A_z``: ``x~ x~' / sigma^2``, ``2 x~ e_z / sigma^3`` (coefficients by sigma),
``-1/sigma^2 + 3 e_z^2 / sigma^4`` (sigma), ``z/pi^2 + (1 - z)/(1 - pi)^2`` (pi).

Maximization: EM (closed-form M-step: weighted least squares on the two completed copies of
the data, ``sigma^2`` the weighted mean squared residual, ``pi`` the mean posterior), then
Newton with the observed information (BHHH where that is not positive definite).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from deniable.estimation._regression_logit import damped_newton

__all__ = ["MixtureFit", "fit_mixture", "mixture_information", "mixture_loglik"]

Array = npt.NDArray[np.float64]

_LOG_2PI = math.log(2 * math.pi)
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(64)
_WEIGHTS = _WEIGHTS / math.sqrt(2 * math.pi)  # E[f(t)], t ~ N(0, 1)


@dataclass(frozen=True)
class _Data:
    X: Array
    y: Array
    R: Array
    p1: Array
    p0: Array


def _split(theta: Array, k: int) -> tuple[Array, float, float, float]:
    return theta[:k], float(theta[k]), float(theta[k + 1]), float(theta[k + 2])


def _posterior(d: _Data, theta: Array) -> tuple[Array, Array, Array, Array, Array]:
    """Per respondent: log-likelihood, posteriors ``w0``, ``w1``, residuals ``e0``, ``e1``."""
    beta, gamma, sigma, pi = _split(theta, d.X.shape[1])
    e0 = d.y - d.X @ beta
    e1 = e0 - gamma
    pr1 = np.where(d.R == 1, d.p1, 1 - d.p1)
    pr0 = np.where(d.R == 1, d.p0, 1 - d.p0)
    base = -math.log(sigma) - 0.5 * _LOG_2PI
    with np.errstate(divide="ignore"):
        l1 = math.log(pi) + np.log(pr1) + base - e1 * e1 / (2 * sigma * sigma)
        l0 = math.log1p(-pi) + np.log(pr0) + base - e0 * e0 / (2 * sigma * sigma)
    ll = np.logaddexp(l0, l1)
    return ll, np.exp(l0 - ll), np.exp(l1 - ll), e0, e1


def _valid(theta: Array, k: int) -> bool:
    sigma, pi = float(theta[k + 1]), float(theta[k + 2])
    return bool(np.all(np.isfinite(theta))) and sigma > 0 and 0 < pi < 1


def _scores(d: _Data, theta: Array) -> tuple[Array, Array, Array, Array, Array, Array]:
    """Posteriors ``w0``, ``w1``, residuals ``e0``, ``e1``, complete-data scores ``S0``, ``S1``.

    A degenerate fit (``sigma`` -> 0: the outcome is an exact function of the terms) gives
    infinite scores, and the standard errors come out as not available, without a warning.
    """
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return _scores_raw(d, theta)


def _scores_raw(d: _Data, theta: Array) -> tuple[Array, Array, Array, Array, Array, Array]:
    k = d.X.shape[1]
    _, _, sigma, pi = _split(theta, k)
    _, w0, w1, e0, e1 = _posterior(d, theta)
    s2 = sigma * sigma
    S0 = np.empty((d.y.size, k + 3))
    S1 = np.empty_like(S0)
    S0[:, :k] = d.X * (e0 / s2)[:, None]
    S1[:, :k] = d.X * (e1 / s2)[:, None]
    S0[:, k] = 0.0
    S1[:, k] = e1 / s2
    S0[:, k + 1] = -1 / sigma + e0 * e0 / (s2 * sigma)
    S1[:, k + 1] = -1 / sigma + e1 * e1 / (s2 * sigma)
    S0[:, k + 2] = -1 / (1 - pi)
    S1[:, k + 2] = 1 / pi
    return w0, w1, e0, e1, S0, S1


def mixture_loglik(d: _Data, theta: Array) -> float:
    """Log-likelihood (``-inf`` outside ``sigma > 0``, ``0 < pi < 1``)."""
    if not _valid(theta, d.X.shape[1]):
        return -math.inf
    return float(_posterior(d, theta)[0].sum())


def _score_matrix(d: _Data, theta: Array) -> Array:
    w0, w1, _, _, S0, S1 = _scores(d, theta)
    out: Array = S0 * w0[:, None] + S1 * w1[:, None]
    return out


def _observed(d: _Data, theta: Array) -> Array:
    """Louis' observed information (non-finite for a degenerate fit, see :func:`_scores`)."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return _observed_raw(d, theta)


def _observed_raw(d: _Data, theta: Array) -> Array:
    k = d.X.shape[1]
    _, _, sigma, pi = _split(theta, k)
    w0, w1, e0, e1, S0, S1 = _scores(d, theta)
    s2 = sigma * sigma
    m = k + 3
    A = np.zeros((m, m))
    X = d.X
    A[:k, :k] = X.T @ X / s2
    A[:k, k] = A[k, :k] = X.T @ w1 / s2
    A[k, k] = w1.sum() / s2
    cross = X.T @ (w0 * e0 + w1 * e1)
    A[:k, k + 1] = A[k + 1, :k] = 2 * cross / (s2 * sigma)
    A[k, k + 1] = A[k + 1, k] = 2 * float(w1 @ e1) / (s2 * sigma)
    A[k + 1, k + 1] = float(np.sum(-1 / s2 + 3 * (w0 * e0 * e0 + w1 * e1 * e1) / (s2 * s2)))
    A[k + 2, k + 2] = float(np.sum(w1 / pi**2 + w0 / (1 - pi) ** 2))
    D = S1 - S0
    out: Array = A - D.T @ (D * (w0 * w1)[:, None])
    return out


def _expected(d: _Data, theta: Array, chunk: int = 2048) -> Array:
    """``sum_i E[s_i s_i']`` by enumeration over ``Z``, ``R`` and Gauss-Hermite in ``y``."""
    k = d.X.shape[1]
    beta, gamma, sigma, pi = _split(theta, k)
    m = k + 3
    out = np.zeros((m, m))
    G = _NODES.size
    for start in range(0, d.y.size, chunk):
        sl = slice(start, start + chunk)
        X, p1, p0 = d.X[sl], d.p1[sl], d.p0[sl]
        mu = X @ beta
        n = mu.size
        for z, pz in ((0, 1 - pi), (1, pi)):
            for r in (0, 1):
                pr = (p1 if z else p0) if r else (1 - (p1 if z else p0))
                weight = (pz * pr)[:, None] * _WEIGHTS[None, :]  # n x G
                keep = weight.ravel() > 0
                if not keep.any():
                    continue
                y = (mu + gamma * z)[:, None] + sigma * _NODES[None, :]
                sub = _Data(
                    X=np.repeat(X, G, axis=0)[keep],
                    y=y.ravel()[keep],
                    R=np.full(n * G, float(r))[keep],
                    p1=np.repeat(p1, G)[keep],
                    p0=np.repeat(p0, G)[keep],
                )
                S = _score_matrix(sub, theta)
                out += S.T @ (S * weight.ravel()[keep][:, None])
    return out


def mixture_information(d: _Data, theta: Array) -> dict[str, Callable[[], Array]]:
    """Observed, expected and outer-product information at ``theta``, each computed on call."""

    def opg() -> Array:
        S = _score_matrix(d, theta)
        out: Array = S.T @ S
        return out

    return {
        "observed": lambda: _observed(d, theta),
        "expected": lambda: _expected(d, theta),
        "opg": opg,
    }


def _em_step(d: _Data, theta: Array) -> Array:
    k = d.X.shape[1]
    _, w0, w1, _, _ = _posterior(d, theta)
    X, y = d.X, d.y
    M = np.empty((k + 1, k + 1))
    M[:k, :k] = X.T @ X
    M[:k, k] = M[k, :k] = X.T @ w1
    M[k, k] = w1.sum()
    coef = np.linalg.solve(M, np.append(X.T @ y, w1 @ y))
    e0 = y - X @ coef[:k]
    e1 = e0 - coef[k]
    sigma = math.sqrt(float(np.mean(w0 * e0 * e0 + w1 * e1 * e1)))
    pi = float(np.clip(w1.mean(), 1e-12, 1 - 1e-12))
    return np.concatenate([coef, [sigma, pi]])


def _start(d: _Data) -> Array:
    """OLS of ``y`` on ``x`` and ``E[Z | R]`` at the moment estimate of ``pi``."""
    lam = float(np.mean(d.R))
    slope = float(np.mean(d.p1 - d.p0))
    pi = float(np.clip((lam - float(np.mean(d.p0))) / slope, 0.05, 0.95))
    pr1 = np.where(d.R == 1, d.p1, 1 - d.p1)
    pr0 = np.where(d.R == 1, d.p0, 1 - d.p0)
    ez = pi * pr1 / (pi * pr1 + (1 - pi) * pr0)
    Xt = np.column_stack([d.X, ez])
    coef = np.linalg.lstsq(Xt, d.y, rcond=None)[0]
    sigma = float(np.sqrt(np.mean((d.y - Xt @ coef) ** 2)))
    return np.concatenate([coef, [max(sigma, 1e-8), pi]])


@dataclass(frozen=True)
class MixtureFit:
    """The maximizer and how it was reached."""

    theta: Array
    llf: float
    em_iterations: int
    newton_iterations: int
    converged: bool


def fit_mixture(
    X: Array,
    y: Array,
    R: Array,
    p1: Array,
    p0: Array,
    *,
    tol: float = 1e-10,
    max_iter: int = 100,
    em_iter: int = 500,
) -> MixtureFit:
    """Maximum-likelihood ``(beta, gamma, sigma, pi)``: EM, then damped Newton."""
    d = _Data(X, y, R, p1, p0)
    theta = _start(d)
    ll = mixture_loglik(d, theta)
    n_em = 0
    for n_em in range(1, em_iter + 1):  # noqa: B007 - the count is reported
        theta = _em_step(d, theta)
        new = mixture_loglik(d, theta)
        if new - ll <= 1e-8 * (1 + abs(new)):
            ll = new
            break
        ll = new

    def fun(t: Array) -> tuple[float, Array, Array, Array]:
        if not _valid(t, X.shape[1]):
            nan = np.full((t.size, t.size), np.nan)
            return -math.inf, np.full(t.size, np.nan), nan, nan
        S = _score_matrix(d, t)
        return mixture_loglik(d, t), S.sum(axis=0), _observed(d, t), S.T @ S

    theta, llf, n_newton, converged = damped_newton(fun, theta, tol=tol, max_iter=max_iter)
    return MixtureFit(theta, llf, n_em, n_newton, converged)


def data(X: Array, y: Array, R: Array, p1: Array, p0: Array) -> _Data:
    """Bundle the arrays of one fit."""
    return _Data(X, y, R, p1, p0)
