"""The exact posterior of a prevalence under a binary design: a finite mixture of Betas.

With ``lambda = P0 (1 - pi) + P1 pi`` the probability of a "yes" report, the likelihood of
``y`` "yes" among ``n`` is ``lambda^y (1 - lambda)^(n - y)``.  Expanding both powers in the
Bernstein basis ``pi^m (1 - pi)^(n - m)`` (as ``1 - lambda = (1 - P0)(1 - pi) + (1 - P1) pi``)
gives, with a Beta(a, b) prior,

    p(pi | y) = sum_m w_m Beta(pi; a + m, b + n - m),
    w_m  propto  B(a + m, b + n - m) sum_{j + k = m} C(y, j) P1^j P0^(y - j)
                                                    C(n - y, k) (1 - P1)^k (1 - P0)^(n - y - k),

(Winkler & Franklin 1979; Migon & Tachibana 1997; Unnikrishnan & Kunte 1999).  Every term is
non-negative, so nothing cancels: the weights are summed in log space (``logsumexp``) and
keep full relative precision whatever ``n``.  The work is ``O(y (n - y))``, which is why
:func:`~deniable.estimation.posterior` integrates the same posterior numerically past
:data:`EXACT_MAX_N` reports.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["EXACT_MAX_N", "BetaMixture", "density_quantile"]

Array = npt.NDArray[np.float64]

#: Largest ``n`` for which ``method="auto"`` uses the exact mixture (``n + 1`` components,
#: ``O(min(y, n - y) n)`` work and memory).
EXACT_MAX_N = 2000


def _binomial_terms(count: int, p: float, q: float) -> Array:
    """``log(C(count, j) p^j q^(count - j))`` for ``j = 0..count`` (``-inf`` for a zero)."""
    from scipy.special import gammaln, xlogy

    j = np.arange(count + 1, dtype=np.float64)
    log_choose = gammaln(count + 1.0) - gammaln(j + 1.0) - gammaln(count - j + 1.0)
    out: Array = log_choose + xlogy(j, p) + xlogy(count - j, q)
    return out


class BetaMixture:
    """``sum_m w_m Beta(a + m, b + n - m)``: the exact posterior of a binary design.

    ``log_weights`` are normalised (``logsumexp == 0``); components of weight below
    ``1e-300`` relative to the largest are dropped (their total is below ``1e-296``).
    """

    method = "exact Beta mixture"
    error = 0.0

    def __init__(self, yes: int, n: int, p1: float, p0: float, a: float, b: float) -> None:
        from scipy.special import betaln, logsumexp

        first = _binomial_terms(yes, p1, p0)  # j "yes" of the y come from pi
        second = _binomial_terms(n - yes, 1.0 - p1, 1.0 - p0)  # k "no" of the n - y
        short, long_ = (first, second) if len(first) <= len(second) else (second, first)
        grid = np.full((len(short), n + 1), -np.inf)
        for j, value in enumerate(short):  # row j holds the terms with m = j + k
            grid[j, j : j + len(long_)] = value + long_
        coef = logsumexp(grid, axis=0)
        m = np.arange(n + 1, dtype=np.float64)
        logw = coef + betaln(a + m, b + n - m)
        logw -= logsumexp(logw)
        keep = logw > np.max(logw) - 690.0  # exp(-690) ~ 1e-300
        self.log_weights: Array = logw[keep]
        self.weights: Array = np.exp(self.log_weights)
        self.alpha: Array = a + m[keep]
        self.beta: Array = b + n - m[keep]

    @classmethod
    def from_components(cls, log_weights: Array, alpha: Array, beta: Array) -> BetaMixture:
        """``sum_m w_m Beta(alpha_m, beta_m)`` from its log weights (normalised here; the
        components below ``1e-300`` of the largest are dropped, as above).  The marginals of
        a Dirichlet mixture are such mixtures (:mod:`._bayes_dirichlet`)."""
        from scipy.special import logsumexp

        logw = np.asarray(log_weights, dtype=np.float64)
        logw = logw - logsumexp(logw)
        keep = logw > np.max(logw) - 690.0
        out = cls.__new__(cls)
        out.log_weights = logw[keep]
        out.weights = np.exp(out.log_weights)
        out.alpha = np.asarray(alpha, dtype=np.float64)[keep]
        out.beta = np.asarray(beta, dtype=np.float64)[keep]
        return out

    @property
    def components(self) -> int:
        """Number of Beta components kept."""
        return len(self.alpha)

    @property
    def mean(self) -> float:
        return float(np.sum(self.weights * self.alpha / (self.alpha + self.beta)))

    @property
    def var(self) -> float:
        s = self.alpha + self.beta
        second = np.sum(self.weights * self.alpha * (self.alpha + 1) / (s * (s + 1)))
        return max(float(second) - self.mean**2, 0.0)

    def tabulate(self) -> tuple[Array, Array]:
        """``(x, CDF(x))`` on 401 even points and 161 points over the mean +- 8 SD."""
        sd = max(self.var**0.5, 1e-12)
        xs = np.unique(np.clip(np.concatenate([np.linspace(0.0, 1.0, 401),
                                               self.mean + sd * np.linspace(-8, 8, 161)]),
                               0.0, 1.0))  # fmt: skip
        return xs, np.maximum.accumulate(self.cdf(xs))

    def bracket(self, q: float) -> tuple[float, float]:
        """An interval holding the ``q``-quantile: all of [0, 1]."""
        return 0.0, 1.0

    def log_pdf(self, x: Any) -> Array:
        from scipy.special import logsumexp
        from scipy.stats import beta

        xs = np.atleast_1d(np.asarray(x, dtype=np.float64))
        terms = self.log_weights[:, None] + beta.logpdf(
            xs[None, :], self.alpha[:, None], self.beta[:, None]
        )
        out: Array = logsumexp(terms, axis=0)
        return out

    def cdf(self, x: Any) -> Array:
        from scipy.special import betainc

        xs = np.atleast_1d(np.asarray(x, dtype=np.float64))
        vals = betainc(self.alpha[:, None], self.beta[:, None], xs[None, :])
        out: Array = np.clip(self.weights @ vals, 0.0, 1.0)
        return out


def density_quantile(density: Any, q: float) -> float:
    """The ``q``-quantile (``q`` in [0, 1]) of a density on [0, 1] that gives ``cdf`` and
    ``bracket`` (a :class:`BetaMixture` or a ``GridDensity``), by Brent's method."""
    from scipy.optimize import brentq

    if q <= 0.0:
        return 0.0
    if q >= 1.0:
        return 1.0

    def gap(x: float) -> float:
        return float(density.cdf(x)[0]) - q

    lo, hi = density.bracket(q)
    if not (gap(lo) <= 0.0 <= gap(hi)):  # rounding at a panel edge: search all of [0, 1]
        lo, hi = 0.0, 1.0
    return float(brentq(gap, lo, hi, xtol=1e-300, rtol=1e-12))
