"""A posterior density of a prevalence integrated numerically on [0, 1].

Used where the Beta mixture of :mod:`._bayes_exact` is too long (many reports) and for the
marginal posterior of the prevalence under a two-group design.  The unnormalised log
density is evaluated on composite Gauss-Legendre panels: geometric panels towards 0 and 1
(down to ``DELTA``, where a prior exponent ``a - 1 < 0`` makes the density singular), even
panels across [0, 1], and dense panels around where the likelihood puts its mass.  The
pieces ``[0, DELTA]`` and ``[1 - DELTA, 1]`` are integrated in closed form for a density
``C pi^(a - 1)`` (resp. ``C (1 - pi)^(b - 1)``).

Error bound.  Each panel is integrated by a 20-point and a 10-point Gauss-Legendre rule; the
20-point rule is exact for polynomials of degree 39, so the difference of the two bounds its
error (conservatively) once the panel resolves the density.  :attr:`GridDensity.error` is
the sum of those differences, plus the difference between two closed-form estimates of each
end piece, relative to the total mass: a bound on the quadrature error of any probability
(a CDF value) the density gives, on top of float rounding (about 1e-13).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError

__all__ = ["DELTA", "GridDensity", "binary_grid"]

Array = npt.NDArray[np.float64]

#: Width of the end pieces integrated in closed form.
DELTA = 1e-12

_X20, _W20 = np.polynomial.legendre.leggauss(20)
_X10, _W10 = np.polynomial.legendre.leggauss(10)


def panel_edges(centers: Sequence[tuple[float, float]]) -> Array:
    """Panel edges in ``[DELTA, 1 - DELTA]``: geometric towards both ends, 32 even panels,
    and 120 panels over ``center +- 30 scale`` for each ``(center, scale)``."""
    geometric = np.logspace(np.log10(DELTA), -1, 34)
    parts = [geometric, 1.0 - geometric, np.linspace(0.1, 0.9, 33)]
    for center, scale in centers:
        parts.append(center + scale * np.linspace(-30.0, 30.0, 121))
    edges = np.unique(np.clip(np.concatenate(parts), DELTA, 1.0 - DELTA))
    out: Array = edges[np.diff(edges, prepend=-1.0) > 1e-15]
    return out


def _nodes(lo: Array, hi: Array, x: Array) -> Array:
    return ((hi - lo) / 2)[:, None] * x[None, :] + ((hi + lo) / 2)[:, None]


class GridDensity:
    """The normalised density of an unnormalised ``log_f`` on [0, 1] (see the module).

    ``a`` and ``b`` are the exponents of the density's ends (``pi^(a - 1)`` at 0 and
    ``(1 - pi)^(b - 1)`` at 1: the prior's, since the likelihood is finite and smooth
    there); ``centers`` are ``(center, scale)`` pairs where the mass is expected.
    """

    method = "numerical integration"

    def __init__(
        self,
        log_f: Callable[[Array], Array],
        a: float,
        b: float,
        centers: Sequence[tuple[float, float]],
    ) -> None:
        self._log_f = log_f
        self._a, self._b = a, b
        edges = panel_edges(centers)
        lo, hi = edges[:-1], edges[1:]
        x20, x10 = _nodes(lo, hi, _X20), _nodes(lo, hi, _X10)
        ends = np.array([DELTA, DELTA / 2, 1 - DELTA, 1 - DELTA / 2])
        logs20 = log_f(x20.ravel()).reshape(x20.shape)
        logs10 = log_f(x10.ravel()).reshape(x10.shape)
        log_ends = log_f(ends)
        self._shift = float(np.max(np.concatenate([logs20.ravel(), log_ends])))
        half = (hi - lo) / 2
        f20 = np.exp(logs20 - self._shift)
        mass20 = half * (f20 @ _W20)
        mass10 = half * (np.exp(logs10 - self._shift) @ _W10)
        # End pieces: for f ~ C x^(a-1) on [0, d], the mass is d f(d) / a; the same from
        # f(d / 2) is d^a (d / 2)^(1-a) f(d / 2) / a.  Their difference is the error stated.
        f_ends = np.exp(log_ends - self._shift)
        left = DELTA * f_ends[0] / a
        left2 = DELTA**a * (DELTA / 2) ** (1 - a) * f_ends[1] / a
        right = DELTA * f_ends[2] / b
        right2 = DELTA**b * (DELTA / 2) ** (1 - b) * f_ends[3] / b
        total = float(np.sum(mass20) + left + right)
        if not (np.isfinite(total) and total > 0):
            raise DataError(
                "the reports have probability 0 under the design for every prevalence in [0, 1]."
            )
        self._z = total
        self._left, self._right = left / total, right / total
        self._edges = edges
        self._cum: Array = self._left + np.concatenate([[0.0], np.cumsum(mass20) / total])
        self.error = float(
            (np.sum(np.abs(mass20 - mass10)) + abs(left - left2) + abs(right - right2)) / total
        )
        weights = (half[:, None] * _W20[None, :] * f20 / total).ravel()
        nodes = x20.ravel()
        self._mean = float(np.sum(weights * nodes) + self._right)
        second = float(np.sum(weights * nodes**2) + self._right)
        self._var = max(second - self._mean**2, 0.0)

    @property
    def mean(self) -> float:
        return self._mean

    @property
    def var(self) -> float:
        return self._var

    def log_pdf(self, x: object) -> Array:
        xs = np.atleast_1d(np.asarray(x, dtype=np.float64))
        out: Array = self._log_f(xs) - self._shift - np.log(self._z)
        return out

    def tabulate(self) -> tuple[Array, Array]:
        """``(x, CDF(x))`` at the panel edges (and 0 and 1), exact to :attr:`error`."""
        xs = np.concatenate([[0.0], self._edges, [1.0]])
        cdf = np.concatenate([[0.0], self._cum, [1.0]])
        return xs, np.maximum.accumulate(np.clip(cdf, 0.0, 1.0))

    def bracket(self, q: float) -> tuple[float, float]:
        """An interval of ``x`` holding the ``q``-quantile (the panel whose CDF values
        straddle ``q``), to start a root search there."""
        i = int(np.searchsorted(self._cum, q, side="left"))
        if i <= 0:
            return 0.0, float(self._edges[0])
        if i >= len(self._edges):
            return float(self._edges[-1]), 1.0
        return float(self._edges[i - 1]), float(self._edges[i])

    def cdf(self, x: object) -> Array:
        xs = np.atleast_1d(np.asarray(x, dtype=np.float64))
        out = np.empty_like(xs)
        for i, xi in enumerate(xs):
            out[i] = self._cdf1(float(xi))
        return np.clip(out, 0.0, 1.0)

    def _cdf1(self, x: float) -> float:
        if x <= 0.0:
            return 0.0
        if x >= 1.0:
            return 1.0
        if x < DELTA:
            return float(self._left * (x / DELTA) ** self._a)
        if x > 1.0 - DELTA:
            return float(1.0 - self._right * ((1.0 - x) / DELTA) ** self._b)
        i = min(int(np.searchsorted(self._edges, x, side="right")) - 1, len(self._edges) - 2)
        lo = float(self._edges[i])
        nodes = (x - lo) / 2 * _X20 + (x + lo) / 2
        part = (x - lo) / 2 * float(np.exp(self._log_f(nodes) - self._shift) @ _W20)
        return float(self._cum[i] + part / self._z)


class _BinaryLogDensity:
    """The unnormalised log posterior of a binary design (a class, not a closure, so that a
    posterior pickles)."""

    def __init__(self, y: int, n: int, p1: float, p0: float, a: float, b: float) -> None:
        self.y, self.n, self.p1, self.p0, self.a, self.b = y, n, p1, p0, a, b

    def __call__(self, pi: Array) -> Array:
        from scipy.special import xlogy

        lam = np.clip(self.p0 + (self.p1 - self.p0) * pi, 0.0, 1.0)
        out: Array = (
            xlogy(self.a - 1, pi)
            + xlogy(self.b - 1, 1 - pi)
            + xlogy(self.y, lam)
            + xlogy(self.n - self.y, 1 - lam)
        )
        return out


def binary_grid(y: int, n: int, p1: float, p0: float, a: float, b: float) -> GridDensity:
    """The posterior of a binary design with a Beta(a, b) prior, integrated numerically."""
    log_f = _BinaryLogDensity(y, n, p1, p0, a, b)
    lam_hat = (y + 0.5) / (n + 1.0)
    center = float(np.clip((lam_hat - p0) / (p1 - p0), 0.0, 1.0))
    scale = math.sqrt(lam_hat * (1 - lam_hat) / n) / abs(p1 - p0)
    return GridDensity(log_f, a, b, [(center, max(scale, 1e-9))])
