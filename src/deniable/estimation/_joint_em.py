"""Maximum likelihood on the simplex for randomized-response tables: the EM algorithm of
van den Hout & van der Heijden (2002, sec. 3) and the covariance of its estimate.

With joint channel ``A = P_1 (x) P_2 (x) ...`` (``A[r, c] = P(joint report r | joint
truth c)``) and (weighted) shares ``lambda_r`` of the joint reports, the log-likelihood per
respondent is ``l(pi) = sum_r lambda_r log (A pi)_r``, maximized over the simplex by::

    pi_c <- pi_c sum_r lambda_r A[r, c] / (A pi)_r

which keeps ``pi`` in the simplex and increases ``l`` at every step.  Under a survey design
the shares are weighted (a pseudo-likelihood, Skinner, Holt & Smith 1989, ch. 3).

Covariance, on the interior cells (those above :data:`BOUNDARY`) with the last of them as
reference: ``H = sum_r lambda_r a_r a_r^T / (A pi)_r^2`` with ``a_r = A[r] D`` the
derivative of ``(A pi)_r`` in the free parameters.  Under simple random sampling it is the
inverse observed information, ``(n H)^{-1}``; under a design the sandwich ``H^{-1} G
V(lambda) G^T H^{-1}`` with ``G = [a_r / (A pi)_r]`` the derivative of the score in
``lambda`` and ``V(lambda)`` the design covariance of the report shares (the two agree
under multinomial sampling at an interior optimum).  At the boundary the information does
not give valid intervals (the estimate is not asymptotically normal there): the boundary
cells are held at their estimate, their SE is NaN, and the result says so.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = ["BOUNDARY", "em_simplex", "log_likelihood", "mle_covariance"]

FloatArray = npt.NDArray[np.float64]

#: A cell of the MLE below this is on the boundary of the simplex.
BOUNDARY = 1e-6


def em_simplex(
    channel: FloatArray, shares: FloatArray, start: FloatArray, *, tol: float = 1e-10,
    max_iter: int = 100_000,
) -> tuple[FloatArray, int, bool]:  # fmt: skip
    """``(pi, iterations, converged)``: EM from ``start`` (inside the simplex) until no cell
    moves by more than ``tol``."""
    pi = np.asarray(start, dtype=np.float64)
    seen = shares > 0
    a = channel[seen]
    lam = shares[seen]
    for it in range(1, max_iter + 1):
        new = pi * (a.T @ (lam / (a @ pi)))
        new /= new.sum()
        if float(np.max(np.abs(new - pi))) <= tol:
            return new, it, True
        pi = new
    return pi, max_iter, False


def log_likelihood(channel: FloatArray, shares: FloatArray, pi: FloatArray) -> float:
    """``sum_r lambda_r log (A pi)_r`` (per respondent)."""
    seen = shares > 0
    m = channel[seen] @ pi
    if (m <= 0).any():
        return -math.inf
    return float(shares[seen] @ np.log(m))


def mle_covariance(
    channel: FloatArray, shares: FloatArray, pi: FloatArray, n: int,
    share_covariance: FloatArray | None,
) -> tuple[FloatArray, tuple[int, ...]]:  # fmt: skip
    """``(cov, boundary)``: the covariance of the MLE ``pi`` (NaN rows and columns for the
    boundary cells, listed in ``boundary``); ``share_covariance`` ``None`` for simple random
    sampling (observed information), else the design covariance of the shares."""
    k = pi.size
    interior = np.flatnonzero(pi > BOUNDARY)
    boundary = tuple(int(c) for c in np.flatnonzero(pi <= BOUNDARY))
    cov = np.full((k, k), np.nan)
    if interior.size < 2:
        if interior.size == 1:
            j = int(interior[0])
            cov[j, j] = 0.0  # all the mass in one cell: nothing free to vary
        return cov, boundary
    ref = int(interior[-1])
    free = interior[:-1]
    d = np.zeros((k, free.size))
    d[free, np.arange(free.size)] = 1.0
    d[ref, :] = -1.0
    m = channel @ pi
    seen = shares > 0
    a = channel @ d  # (R, free)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(seen[:, None], a / m[:, None], 0.0)  # (R, free)
    h = (g * shares[:, None]).T @ g
    try:
        h_inv = np.linalg.inv(h)
    except np.linalg.LinAlgError:
        return cov, boundary
    if share_covariance is None:
        cov_theta = h_inv / n
    else:
        cov_theta = h_inv @ g.T @ share_covariance @ g @ h_inv
    sub = d[interior] @ cov_theta @ d[interior].T
    cov[np.ix_(interior, interior)] = sub
    return cov, boundary


def fit_mle(
    channel: FloatArray, shares: FloatArray, n: int, share_covariance: FloatArray | None,
    start: FloatArray,
) -> tuple[FloatArray, FloatArray, tuple[int, ...], int, tuple[str, ...]]:  # fmt: skip
    """``(mle, cov, boundary, iterations, notes)``: EM from ``start`` (the moment estimate,
    moved inside the simplex), then :func:`mle_covariance`."""
    k = start.size
    init = np.clip(np.nan_to_num(start, nan=1.0 / k), 0.0, None) + 1e-3 / k
    init /= init.sum()
    mle, iterations, converged = em_simplex(channel, shares, init)
    notes: list[str] = []
    if not converged:
        notes.append(
            f"the EM algorithm did not converge in {iterations} iterations (cells still "
            "moving by more than 1e-10): the MLE is approximate."
        )
    cov, boundary = mle_covariance(channel, shares, mle, n, share_covariance)
    if boundary:
        notes.append(
            f"the MLE is on the boundary of the simplex (cells {', '.join(map(str, boundary))} "
            f"below {BOUNDARY:g}): the information-based covariance holds them fixed and does "
            "not give valid intervals there (their SE is NaN); use the moment estimator's "
            "covariance or a bootstrap."
        )
    return mle, cov, boundary, iterations, tuple(notes)
