"""Non-negative least squares for RAPPOR's candidate selection (``_rappor_decode``, step 2
``"nnls"``): the same solution as ``scipy.optimize.nnls`` on the weighted design, solved on
a ``K x K`` problem instead of a ``(cohorts m) x K`` one.

For ``A`` (``rows x K``) of full column rank, ``G = A'A = R'R`` (Cholesky, ``R`` upper
triangular) and ``z = R^-T A'y``,

    ||A b - y||^2 = ||R b - z||^2 + ||y||^2 - ||z||^2,

so ``min ||A b - y||^2`` over ``b >= 0`` and ``min ||R b - z||^2`` over ``b >= 0`` are the
same problem: a strictly convex quadratic on the non-negative orthant, with one minimizer
(Lawson & Hanson 1974, ch. 23).  ``scipy.optimize.nnls`` (their active-set method) solves
the reduced one.  ``G`` is formed once, through a sparse product when ``A`` is mostly zeros
(RAPPOR's design has ``h`` non-zeros per column and cohort).

The two answers are the same minimizer computed two ways, so they differ by rounding:
about ``cond(G) eps`` relative.  The selection (``b_k > 0``) can differ only where a
coefficient, or the gradient ``(G b - A'y)_k`` of a zero one (its Lagrange multiplier),
lies within that rounding of 0.  The reduced answer is therefore kept only when its KKT
conditions hold on the full problem with a margin: every positive coefficient above
``delta max b``, every zero coefficient's gradient above ``delta (||G||_1 max b + max
|A'y|)``, ``delta = 64 eps / rcond(G)``; and only when ``G`` is numerically positive
definite (Cholesky succeeds, ``rcond(G) >= 1e-10``).  Otherwise (a rank-deficient design:
repeated Bloom filters, fewer rows than candidates, where the minimizer is not unique and
which one a solver returns depends on its path; or a coefficient at the edge of rounding)
the full problem is solved by ``scipy.optimize.nnls`` as before, and the answer is the old
one exactly.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["RCOND_MIN", "nnls_coefficients", "nnls_full", "nnls_reduced"]

FloatArray = npt.NDArray[np.float64]

#: Below this reciprocal condition number of ``A'A`` the full problem is solved.
RCOND_MIN = 1e-10
#: ``A`` goes through a sparse product when at most this share of its entries is non-zero.
_SPARSE_SHARE = 0.25


def nnls_full(a: FloatArray, y: FloatArray) -> FloatArray:
    """``argmin ||a b - y||`` over ``b >= 0`` by ``scipy.optimize.nnls`` on ``a`` itself."""
    from scipy.optimize import nnls

    coef, _ = nnls(a, y, maxiter=50 * a.shape[1])
    return np.asarray(coef, dtype=np.float64)


def _gram(a: FloatArray, y: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(A'A, A'y)``, through a sparse product when ``a`` is mostly zeros."""
    if np.count_nonzero(a) <= _SPARSE_SHARE * a.size:
        from scipy.sparse import csc_array

        s = csc_array(a)
        return np.asarray((s.T @ s).toarray(), dtype=np.float64), np.asarray(s.T @ y)
    return a.T @ a, a.T @ y


def nnls_reduced(a: FloatArray, y: FloatArray) -> FloatArray | None:
    """The NNLS solution by the ``K x K`` problem, or None where the module docstring
    solves the full one (``G`` not numerically positive definite, or a coefficient or a
    zero's gradient within rounding of 0)."""
    from scipy.linalg import LinAlgError, cholesky, lapack, solve_triangular
    from scipy.optimize import nnls

    k = a.shape[1]
    if a.shape[0] < k:
        return None
    g, aty = _gram(a, y)
    try:
        r = cholesky(g, lower=False, check_finite=False)
    except LinAlgError:
        return None
    g_norm = float(np.abs(g).sum(axis=0).max())
    rcond, info = lapack.dpocon(r, g_norm)
    if info != 0 or not rcond >= RCOND_MIN:
        return None
    z = solve_triangular(r, aty, trans="T", check_finite=False)
    try:
        coef, _ = nnls(r, z, maxiter=50 * k)
    except RuntimeError:  # the iteration cap: the full problem decides
        return None
    top = float(coef.max()) if k else 0.0
    if top <= 0.0:
        return None
    delta = 64 * np.finfo(np.float64).eps / float(rcond)
    grad = g @ coef - aty
    pos = coef > 0
    margin_c = float(coef[pos].min()) > delta * top
    gap = delta * (g_norm * top + float(np.abs(aty).max()))
    margin_g = bool(pos.all()) or float(grad[~pos].min()) > gap
    if not (margin_c and margin_g):
        return None
    return np.asarray(coef, dtype=np.float64)


def nnls_coefficients(a: FloatArray, y: FloatArray) -> FloatArray:
    """``argmin ||a b - y||`` over ``b >= 0``: :func:`nnls_reduced` where it answers, else
    :func:`nnls_full` (the module docstring says when)."""
    coef = nnls_reduced(a, y)
    return nnls_full(a, y) if coef is None else coef
