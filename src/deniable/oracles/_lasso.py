"""The non-negative Lasso by cyclic coordinate descent (numpy only), RAPPOR's selection step.

For a matrix ``A`` (rows x K), a vector ``y`` and a penalty ``lam >= 0``,

    minimize  (1/2) ||y - A b||^2 + lam sum_k b_k   subject to  b >= 0.

The objective is convex, so ``b`` is a solution iff the Karush-Kuhn-Tucker conditions hold:
with the residual ``r = y - A b`` and the gradient ``g_k = a_k' r`` of column ``k``,

    g_k = lam  where b_k > 0,        g_k <= lam  where b_k = 0.

At ``b = 0`` they read ``a_k' y <= lam`` for every ``k``, so every penalty at or above
``lam_max = max(0, max_k a_k' y)`` gives ``b = 0``; ``lam = 0`` is non-negative least squares.

**Coordinate update** (Friedman, Hastie & Tibshirani 2010, sec. 2, with the sign constraint):
column ``k`` alone minimizes the objective at ``b_k = max(0, b_k + (g_k - lam) / ||a_k||^2)``;
the residual is updated in place.  Columns are used as given (not standardized, no
intercept): the RAPPOR decoder standardizes its columns itself before calling.

**Active set and stopping rule.**  Sweeps run cyclically over the active set (the columns
that have violated their condition at some check, below) until a sweep changes no
coefficient by more than ``tol`` relative to the largest coefficient (``max_k |b_k(new) -
b_k(old)| <= tol max(1, max_k b_k)``: absolute below 1, relative above, so rounding cannot
stall it); then the gradient of every column is computed at once and each zero
coefficient outside the active set that violates its condition (``g_k > lam``) joins it.
The fit stops when none does: the conditions of the columns outside the active set hold
exactly at the returned ``b``, those of the active set to within the last sweep's change.
More than ``max_sweeps`` sweeps (each over the active set) warn (``RuntimeWarning``) and
return the current iterate.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["LassoFit", "lambda_max", "nonnegative_lasso"]

FloatArray = npt.NDArray[np.float64]

#: The stopping rule of :func:`nonnegative_lasso`.
CONVERGENCE = (
    "max_k |b_k(new) - b_k(old)| <= tol max(1, max_k b_k) over a sweep, and g_k <= lam "
    "where b_k = 0"
)


@dataclass(frozen=True)
class LassoFit:
    """A non-negative Lasso fit: ``coef`` (``b``), the ``sweeps`` it took, whether it
    ``converged`` and the ``penalty`` (``lam``)."""

    coef: FloatArray
    sweeps: int
    converged: bool
    penalty: float


def lambda_max(a: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """The smallest penalty whose solution is ``b = 0``: ``max(0, max_k a_k' y)``."""
    grad = np.asarray(a, dtype=np.float64).T @ np.asarray(y, dtype=np.float64)
    return float(max(0.0, float(grad.max(initial=0.0))))


def nonnegative_lasso(
    a: npt.ArrayLike,
    y: npt.ArrayLike,
    penalty: float,
    *,
    tol: float = 1e-9,
    max_sweeps: int = 10_000,
) -> LassoFit:
    """Minimize ``(1/2) ||y - A b||^2 + penalty sum(b)`` over ``b >= 0`` by cyclic
    coordinate descent on an active set (module docstring: the update and the stopping
    rule).  Columns of zero norm keep ``b_k = 0``.

    Examples
    --------
    >>> fit = nonnegative_lasso([[1.0, 0.0], [0.0, 1.0]], [3.0, -1.0], 1.0)
    >>> fit.coef.tolist(), fit.converged
    ([2.0, 0.0], True)
    """
    mat = np.asfortranarray(np.asarray(a, dtype=np.float64))
    rhs = np.asarray(y, dtype=np.float64)
    lam = float(penalty)
    k = mat.shape[1]
    norm2 = np.einsum("ij,ij->j", mat, mat)
    usable = norm2 > 0
    coef = np.zeros(k)
    resid = rhs.copy()
    active = np.zeros(k, dtype=np.bool_)
    sweeps = 0
    while True:
        grad = mat.T @ resid
        violators = ~active & usable & (grad > lam)
        if not violators.any():
            return LassoFit(coef, sweeps, True, lam)
        active |= violators
        order = np.flatnonzero(active)
        while True:  # cyclic sweeps over the active set
            if sweeps >= max_sweeps:
                warnings.warn(
                    f"the non-negative Lasso did not converge in max_sweeps = {max_sweeps} "
                    f"sweeps (rule: {CONVERGENCE}, tol = {tol:g}); its selection may be "
                    "incomplete.",
                    RuntimeWarning,
                    stacklevel=2,
                )
                return LassoFit(coef, sweeps, False, lam)
            sweeps += 1
            change = 0.0
            for j in order:
                col = mat[:, j]
                old = coef[j]
                new = max(0.0, old + (float(col @ resid) - lam) / norm2[j])
                if new != old:
                    resid -= (new - old) * col
                    coef[j] = new
                    change = max(change, abs(new - old))
            if change <= tol * max(1.0, float(coef.max(initial=0.0))):
                break
