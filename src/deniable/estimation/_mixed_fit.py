"""Maximizing the marginal likelihood of a mixed RR model: parametrizations, the
fixed-effects fit, the optimizer and the observed information.

The optimizer works on ``(beta, theta)`` with ``theta`` the lower triangle of the Cholesky
factor ``L`` row by row, its diagonal bounded below by 0 (lme4's parametrization, Bates et
al. 2015): L-BFGS-B with central-difference gradients, then Newton steps on a
central-difference Hessian while the estimate is inside the parameter space.  The observed
information is that Hessian in ``phi = (beta, ln sd_1 .. ln sd_q, atanh rho_kl)``, so the
variance components get Wald intervals on the log scale (and the correlations on Fisher's
z scale), mapped back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from deniable.estimation._mixed_lik import MarginalLikelihood
from deniable.estimation._mixed_links import row_pieces
from deniable.estimation._regression_logit import damped_newton, fit_logit

__all__ = [
    "BOUNDARY_SD",
    "OptimFit",
    "fit_fixed",
    "hessian",
    "maximize",
    "phi_from_theta",
    "theta_from_phi",
    "to_matrix",
]

Array = npt.NDArray[np.float64]

#: A random-effect standard deviation below this is on the boundary (zero variance).
BOUNDARY_SD = 1e-4


def to_matrix(theta: Array, q: int) -> Array:
    """The lower-triangular ``L`` from its row-by-row lower triangle."""
    L = np.zeros((q, q))
    L[np.tril_indices(q)] = theta
    return L


def _theta_bounds(q: int) -> list[tuple[float | None, float | None]]:
    rows, cols = np.tril_indices(q)
    return [(0.0, None) if r == c else (None, None) for r, c in zip(rows, cols, strict=True)]


def theta_from_phi(phi: Array, q: int) -> Array:
    """``(ln sd, atanh rho)`` to the Cholesky factor's lower triangle."""
    sd = np.exp(phi[:q])
    R = np.eye(q)
    R[np.tril_indices(q, -1)] = np.tanh(phi[q:])
    R = np.tril(R) + np.tril(R, -1).T
    Sigma = R * np.outer(sd, sd)
    L = np.linalg.cholesky(Sigma)
    out: Array = L[np.tril_indices(q)]
    return out


def phi_from_theta(theta: Array, q: int) -> Array:
    """The Cholesky factor's lower triangle to ``(ln sd, atanh rho)``."""
    L = to_matrix(theta, q)
    Sigma = L @ L.T
    sd = np.sqrt(np.diag(Sigma))
    with np.errstate(divide="ignore", invalid="ignore"):
        R = Sigma / np.outer(sd, sd)
        rho = np.clip(R[np.tril_indices(q, -1)], -1 + 1e-15, 1 - 1e-15)
        out: Array = np.concatenate([np.log(sd), np.arctanh(rho)])
    return out


def fit_fixed(
    link: str, X: Array, y: Array, p1: Array, p0: Array, *, tol: float, max_iter: int
) -> tuple[Array, float, bool]:
    """The fixed-effects fit (no random effect): ``logistic_rr``'s own maximizer for the logit
    link; for the others, damped Newton from the logit fit rescaled."""
    logit = fit_logit(X, y, p1, p0, tol=tol, max_iter=max_iter, em_iter=5)
    if link == "logit":
        return logit.beta, logit.llf, logit.converged
    yes = y == 1

    def fun(b: Array) -> tuple[float, Array, Array, Array]:
        ll, score, hess, fisher = row_pieces(link, X @ b, yes, p1, p0, derivs=True)
        assert score is not None and hess is not None and fisher is not None
        return (
            float(ll.sum()),
            X.T @ score,
            X.T @ (X * -hess[:, None]),
            X.T @ (X * fisher[:, None]),
        )

    start = logit.beta / 1.6 if link == "probit" else logit.beta
    beta, llf, _, converged = damped_newton(fun, start, tol=tol, max_iter=max_iter)
    return beta, llf, converged


def hessian(f: Callable[[Array], float], x: Array, step: float = 1e-4) -> tuple[Array, Array]:
    """Central-difference gradient and Hessian of ``f`` at ``x``."""
    k = x.size
    h = step * np.maximum(1.0, np.abs(x))
    f0 = f(x)
    grad, H = np.zeros(k), np.zeros((k, k))
    plus, minus = np.zeros(k), np.zeros(k)
    for i in range(k):
        e = np.zeros(k)
        e[i] = h[i]
        plus[i], minus[i] = f(x + e), f(x - e)
        grad[i] = (plus[i] - minus[i]) / (2 * h[i])
        H[i, i] = (plus[i] - 2 * f0 + minus[i]) / h[i] ** 2
    for i in range(k):
        for j in range(i):
            ei, ej = np.zeros(k), np.zeros(k)
            ei[i], ej[j] = h[i], h[j]
            val = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)) / (
                4 * h[i] * h[j]
            )
            H[i, j] = H[j, i] = val
    return grad, H


@dataclass(frozen=True)
class OptimFit:
    """The maximizer: ``beta``, ``theta`` (Cholesky lower triangle), ``llf``, and how;
    ``information`` is the observed information in ``phi`` at it, if the Newton steps
    computed it there (else ``None``)."""

    beta: Array
    theta: Array
    llf: float
    converged: bool
    message: str
    iterations: int
    evaluations: int
    information: Array | None = None


def maximize(
    lik: MarginalLikelihood, beta0: Array, theta0: Array, *, tol: float, max_iter: int
) -> OptimFit:
    """L-BFGS-B on ``-ln L(beta, theta)`` with central-difference gradients, then Newton
    polishing on a finite-difference Hessian in the interior."""
    from scipy import optimize

    p, q = beta0.size, lik.q
    start_evals = lik.evaluations

    def negll(x: Array) -> float:
        value = -lik.loglik(x[:p], to_matrix(x[p:], q))
        return value if np.isfinite(value) else 1e300

    def jac(x: Array) -> Array:
        h = 1e-6 * np.maximum(1.0, np.abs(x))
        g = np.zeros_like(x)
        for i in range(x.size):
            e = np.zeros_like(x)
            e[i] = h[i]
            g[i] = (negll(x + e) - negll(x - e)) / (2 * h[i])
        return g

    x0 = np.concatenate([beta0, theta0])
    res = optimize.minimize(
        negll,
        x0,
        jac=jac,
        method="L-BFGS-B",
        bounds=[(None, None)] * p + _theta_bounds(q),
        options={"maxiter": max_iter, "ftol": 1e-13, "gtol": 1e-7},
    )
    x = np.asarray(res.x, dtype=np.float64)
    converged = bool(res.success)
    message = str(res.message)
    # Newton polishing where every standard deviation is inside: the phi-scale is smooth
    L = to_matrix(x[p:], q)
    information = None
    if np.all(np.diag(L) > BOUNDARY_SD):

        def ll_phi(ph: Array) -> float:
            return lik.loglik(ph[:p], to_matrix(theta_from_phi(ph[p:], q), q))

        phi = np.concatenate([x[:p], phi_from_theta(x[p:], q)])
        value = ll_phi(phi)
        for _ in range(min(5, max_iter)):
            grad, H = hessian(ll_phi, phi)
            try:
                step = np.linalg.solve(-H, grad)
            except np.linalg.LinAlgError:
                break
            dec = float(grad @ step)
            if not np.isfinite(dec) or dec < 0:
                break
            if dec / 2 <= tol:  # converged; H is the information at the estimate
                converged, message, information = True, "Newton decrement below tol", -H
                break
            cand = phi + step
            new = ll_phi(cand)
            if not np.isfinite(new) or new < value - 1e-9 * (1 + abs(value)):
                break
            phi, value = cand, new
        x = np.concatenate([phi[:p], theta_from_phi(phi[p:], q)])
    llf = lik.loglik(x[:p], to_matrix(x[p:], q))
    return OptimFit(
        beta=x[:p],
        theta=x[p:],
        llf=llf,
        converged=converged,
        message=message,
        iterations=int(res.nit),
        evaluations=lik.evaluations - start_evals,
        information=information,
    )
