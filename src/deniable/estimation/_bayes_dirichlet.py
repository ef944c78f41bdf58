"""The exact posterior of the prevalences under a categorical design: a Dirichlet mixture.

A design with ``k`` true values and channel ``P[r, j] = P(report r | truth j)`` gives report
``r`` with probability ``lambda_r = sum_j P[r, j] pi_j``; the likelihood of the report counts
``c`` is ``prod_r lambda_r^(c_r)``.  Each report's ``lambda_r`` is a sum of non-negative
terms, one per true value it may have come from; expanding the product over the ``n``
reports and collecting the terms by ``M_j``, the number of reports attributed to true value
``j`` (a composition of ``n`` into ``k`` parts), gives, with a Dirichlet(alpha) prior,

    p(pi | c) = sum_M w_M Dirichlet(pi; alpha + M),
    w_M  propto  C(M) B(alpha + M),   C(M) = sum over the attributions with totals M of
                                             prod over the reports of P[r, truth],

``B`` the multivariate Beta function (van den Hout & Klugkist 2009; the same augmentation,
report by report, is the data-augmentation sampler of Oh 1994, here summed exactly).  The
marginal of ``pi_j`` is the Beta mixture ``sum_m (sum_{M_j = m} w_M)
Beta(alpha_j + m, A + n - alpha_j - m)``, ``A = sum alpha``.

``C`` is built one report at a time on a grid indexed by ``(M_0, ..., M_(k-2))`` (``M_(k-1)``
is the rest), in log space: every term is non-negative, so nothing cancels.  The work is
``n k (n + 1)^(k - 1)``; :data:`CATEGORICAL_EXACT_MAX_WORK` bounds it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.estimation._bayes_exact import BetaMixture

__all__ = ["CATEGORICAL_EXACT_MAX_WORK", "DirichletMixture", "exact_work"]

Array = npt.NDArray[np.float64]

#: Largest work ``n k (n + 1)^(k - 1)`` (grid cells updated over the ``n`` reports) for which
#: ``method="auto"`` uses the exact Dirichlet mixture: about 5000 reports for ``k = 2``, 255
#: for ``k = 3``, 59 for ``k = 4``, 26 for ``k = 5``.
CATEGORICAL_EXACT_MAX_WORK = 50_000_000


def exact_work(n: int, k: int) -> float:
    """``n k (n + 1)^(k - 1)``: the grid updates of the exact expansion (a float: no
    overflow for large ``k``)."""
    return float(n) * k * math.pow(n + 1, k - 1)


class DirichletMixture:
    """``sum_M w_M Dirichlet(alpha + M)``: the exact posterior of a categorical design.

    Attributes
    ----------
    components : the number of Dirichlet components of weight at least ``1e-300`` of the
        largest (the rest, of total weight below ``1e-296``, are dropped).
    marginals : the marginal posterior of each ``pi_j``, a :class:`BetaMixture`.
    """

    method = "exact Dirichlet mixture"

    def __init__(self, channel: Array, counts: Array, alpha: Array) -> None:
        from scipy.special import gammaln, logsumexp

        n_reports, k = channel.shape
        counts = np.asarray(counts, dtype=np.int64)
        n = int(counts.sum())
        with np.errstate(divide="ignore"):
            log_p = np.log(channel)
        shape = (n + 1,) * (k - 1)
        grid = np.full(shape, -np.inf)
        grid[(0,) * (k - 1)] = 0.0
        shifted = np.empty(shape)
        for r in range(n_reports):
            for _ in range(int(counts[r])):
                new = grid + log_p[r, k - 1]  # the report's truth is the last category
                for j in range(k - 1):  # ... or category j: M_j grows by one
                    lead: tuple[Any, ...] = (slice(None),) * j
                    first: tuple[Any, ...] = (*lead, 0)
                    shifted[first] = -np.inf
                    shifted[(*lead, slice(1, None))] = grid[(*lead, slice(None, -1))]
                    np.logaddexp(new, shifted + log_p[r, j], out=new)
                grid = new
        firsts = np.indices(shape).reshape(k - 1, -1).astype(np.int64)
        last = n - firsts.sum(axis=0)
        flat = grid.reshape(-1)
        ok = (last >= 0) & np.isfinite(flat)
        m = np.vstack([firsts[:, ok], last[ok]])  # (k, terms): reports attributed to each
        logw = flat[ok] + np.sum(gammaln(alpha[:, None] + m), axis=0)
        logw -= logsumexp(logw)
        keep = logw > np.max(logw) - 690.0  # exp(-690) ~ 1e-300
        self.log_weights: Array = logw[keep]
        self.m = m[:, keep]
        self.alpha = np.asarray(alpha, dtype=np.float64)
        self.n = n
        total = float(self.alpha.sum()) + n
        self.marginals = tuple(
            _marginal(self.log_weights, self.m[j], float(self.alpha[j]), total, n) for j in range(k)
        )

    @property
    def components(self) -> int:
        return int(self.m.shape[1])


def _marginal(logw: Array, m_j: npt.NDArray[np.int64], a_j: float, total: float,
              n: int) -> BetaMixture:  # fmt: skip
    """The Beta mixture of one ``pi_j``: the weights gathered by ``M_j``."""
    from scipy.special import logsumexp

    grouped = np.full(n + 1, -np.inf)
    for value in np.unique(m_j):
        grouped[value] = logsumexp(logw[m_j == value])
    used = np.isfinite(grouped)
    mm = np.arange(n + 1, dtype=np.float64)[used]
    return BetaMixture.from_components(grouped[used], a_j + mm, total - a_j - mm)
