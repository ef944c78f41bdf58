"""Fitting helpers of the two-group designs: the two-binomial log-likelihood, its maximum
over a parameter polygon, and intervals for parameters that one group determines alone."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.results import MappedBinomialInterval

__all__ = ["in_polygon", "polygon_mle", "single_group_intervals", "two_binomial_loglik"]

FloatArray = npt.NDArray[np.float64]

#: Slack for "the moment estimate lies in the parameter polygon" (rounding of M^-1).
INSIDE_TOL = 1e-12


def two_binomial_loglik(lam: FloatArray, y: FloatArray, n: FloatArray) -> float:
    """``sum_g y_g ln(lambda_g) + (n_g - y_g) ln(1 - lambda_g)`` (``0 ln 0 = 0``).

    ``ln 0`` is replaced by ``ln 1e-300`` so that a search never meets an infinity; that only
    changes points whose true log-likelihood is minus infinity.
    """
    from scipy import special

    lam_c = np.maximum(lam, 1e-300)
    one_c = np.maximum(1.0 - lam, 1e-300)
    return float(np.sum(special.xlogy(y, lam_c) + special.xlogy(n - y, one_c)))


def in_polygon(phi: FloatArray, vertices: Sequence[tuple[float, float]]) -> bool:
    """``phi`` inside (or on) the convex polygon with counter-clockwise ``vertices``."""
    pts = list(vertices)
    for a, b in zip(pts, pts[1:] + pts[:1], strict=True):
        cross = (b[0] - a[0]) * (phi[1] - a[1]) - (b[1] - a[1]) * (phi[0] - a[0])
        if cross < -INSIDE_TOL:
            return False
    return True


def polygon_mle(
    loglik: Callable[[FloatArray], float],
    phi_moment: FloatArray,
    vertices: Sequence[tuple[float, float]],
) -> FloatArray:
    """Maximise a concave ``loglik`` over a convex polygon, given its unconstrained maximiser.

    Inside the polygon the unconstrained maximiser ``phi_moment`` is the answer.  Outside,
    the maximum of a concave function is on the boundary: each edge is searched with a
    bounded scalar minimisation and each vertex is compared.
    """
    from scipy import optimize

    if in_polygon(phi_moment, vertices):
        return phi_moment
    pts = [np.asarray(p, dtype=float) for p in vertices]
    best, best_ll = pts[0], loglik(pts[0])
    for a, b in zip(pts, pts[1:] + pts[:1], strict=True):
        if (ll := loglik(b)) > best_ll:
            best, best_ll = b, ll
        res = optimize.minimize_scalar(
            lambda s, a=a, b=b: -loglik(a + s * (b - a)),
            bounds=(0.0, 1.0),
            method="bounded",
            options={"xatol": 1e-12},
        )
        point = a + float(res.x) * (b - a)
        if (ll := loglik(point)) > best_ll:
            best, best_ll = point, ll
    return best


def single_group_intervals(
    affine: tuple[tuple[float, float], float] | None,
    m_inv: FloatArray,
    c: FloatArray,
    yes_counts: Sequence[int],
    n_counts: Sequence[int],
) -> dict[str, Any]:
    """Exact and Wilson intervals for ``output = row @ phi + const`` when it depends on one
    group's share alone.

    With ``phi = M^-1 (lambda - c)`` the output is ``u1 lambda_1 + u2 lambda_2 + k`` with
    ``u = row @ M^-1``; when ``u`` has one zero entry the output is a monotone function of the
    other group's ``lambda``, and that group's Clopper-Pearson (or Wilson) interval maps
    through it (clipped to [0, 1]).  Otherwise no such interval is offered.
    """
    if affine is None:
        return {}
    row, const = affine
    u = np.asarray(row, dtype=float) @ m_inv
    k = const - float(u @ c)
    scale = float(np.max(np.abs(u)))
    single = [g for g in (0, 1) if abs(u[1 - g]) <= 1e-12 * scale]
    if not single:
        return {}
    g = single[0]
    yes, n = int(yes_counts[g]), int(n_counts[g])
    slope, offset = 1 / float(u[g]), -k / float(u[g])
    return {
        "exact": MappedBinomialInterval(yes, n, offset, slope, "exact"),
        "wilson": MappedBinomialInterval(yes, n, offset, slope, "wilson"),
    }
