"""The marginal posterior of the prevalence under a two-group design.

A two-group design is linear in two free parameters ``phi = (pi, phi_2)`` (see
:class:`~deniable.designs.TwoGroupDesign`): group ``g`` says "yes" with probability
``lambda_g = c_g + M[g] @ phi``, and ``phi`` ranges over a polygon (the square for the
unrelated question with unknown prevalence, the simplex ``pi + beta <= 1`` for cheater
detection, the triangle ``pi t <= pi`` for the stochastic lie detector).  The prior is
Beta(a, b) on the prevalence ``pi`` and, given ``pi``, uniform on the slice of the polygon
(the unrelated question's prevalence, the share of cheaters ``beta`` in ``[0, 1 - pi]``,
the carriers' honesty ``t`` in [0, 1]).  The marginal density of ``pi`` is then

    p(pi | y)  propto  Beta(pi; a, b) * mean over the slice of
                       prod_g lambda_g^(y_g) (1 - lambda_g)^(n_g - y_g),

the inner mean integrated by composite Gauss-Legendre panels (even ones over the slice
and dense ones around the conditional mode of ``phi_2``), the outer integral by
:class:`~deniable.estimation._bayes_numeric.GridDensity`.
"""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt

from deniable.designs import TwoGroupDesign

__all__ = ["TwoGroupLogMarginal"]

Array = npt.NDArray[np.float64]

_XG, _WG = np.polynomial.legendre.leggauss(12)
_SPREAD = np.linspace(-12.0, 12.0, 49)  # panels over the conditional mode +- 12 SD
_EVEN = np.linspace(0.0, 1.0, 33)  # even panels over the slice


def _slice(vertices: tuple[tuple[float, float], ...], pi: Array) -> tuple[Array, Array]:
    """Lowest and highest ``phi_2`` of the polygon at ``phi_1 = pi`` (convex polygon)."""
    lo = np.full(pi.shape, np.inf)
    hi = np.full(pi.shape, -np.inf)
    pts = [*vertices, vertices[0]]
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if x0 == x1:
            on = pi == x0
            lo = np.where(on, np.minimum(lo, min(y0, y1)), lo)
            hi = np.where(on, np.maximum(hi, max(y0, y1)), hi)
            continue
        t = (pi - x0) / (x1 - x0)
        inside = (t >= 0) & (t <= 1)
        y = y0 + t * (y1 - y0)
        lo = np.where(inside, np.minimum(lo, y), lo)
        hi = np.where(inside, np.maximum(hi, y), hi)
    return lo, hi


class TwoGroupLogMarginal:
    """The unnormalised log marginal density of the prevalence (a callable on an array of
    ``pi``); :attr:`centers` says where its mass is expected (for :class:`GridDensity`).
    A class, not a closure, so that a posterior pickles."""

    def __init__(
        self, design: TwoGroupDesign, yes: tuple[int, int], n: tuple[int, int], a: float, b: float
    ) -> None:
        c, m = design.linear_system()
        self.c, self.m = np.asarray(c, dtype=np.float64), np.asarray(m, dtype=np.float64)
        self.y = np.asarray(yes, dtype=np.float64)
        self.n = np.asarray(n, dtype=np.float64)
        self.a, self.b = a, b
        self.vertices = tuple(design.vertices)
        # Where the mass is: the moment estimate and its delta-method covariance, with the
        # shares of "yes" kept off 0 and 1 so that the scales stay positive.
        lam = (self.y + 0.5) / (self.n + 1.0)
        minv = np.linalg.inv(self.m)
        self.phi_hat = minv @ (lam - self.c)
        cov = minv @ np.diag(lam * (1 - lam) / self.n) @ minv.T
        self.slope = float(cov[1, 0] / cov[0, 0])
        self.cond_sd = float(np.sqrt(max(cov[1, 1] - cov[1, 0] * self.slope, 0.0))) + 1e-9
        sd1 = float(np.sqrt(cov[0, 0]))
        self.centers = [(float(np.clip(self.phi_hat[0], 0, 1)), max(sd1, 1e-6))]

    def __call__(self, pi: Array) -> Array:
        from scipy.special import logsumexp, xlogy

        lo, hi = _slice(self.vertices, pi)
        width = hi - lo
        center = self.phi_hat[1] + self.slope * (pi - self.phi_hat[0])
        edges = np.concatenate(
            [lo[:, None] + width[:, None] * _EVEN, center[:, None] + self.cond_sd * _SPREAD],
            axis=1,
        )
        edges = np.sort(np.clip(edges, lo[:, None], hi[:, None]), axis=1)
        left, right = edges[:, :-1], edges[:, 1:]
        half = (right - left) / 2
        phi2 = half[:, :, None] * _XG + ((right + left) / 2)[:, :, None]
        total = np.zeros(phi2.shape)
        for g in range(2):
            lam_g = self.c[g] + self.m[g, 0] * pi[:, None, None] + self.m[g, 1] * phi2
            lam_g = np.clip(lam_g, 0.0, 1.0)
            total += xlogy(self.y[g], lam_g) + xlogy(self.n[g] - self.y[g], 1.0 - lam_g)
        with np.errstate(divide="ignore"):
            log_w = np.log(half)[:, :, None] + np.log(_WG)
            inner = logsumexp(total + log_w, axis=(1, 2)) - np.log(np.where(width > 0, width, 1))
            prior = xlogy(self.a - 1, pi) + xlogy(self.b - 1, 1 - pi)
        out: Array = np.where(width > 0, inner, -np.inf) + prior
        return out
