"""Did randomization change the answers?  The test of a direct-questioning group beside a
randomized one in :func:`~deniable.estimation.logistic_rr` (see its module docstring):
the shift ``delta`` of the linear predictor in the direct group, by a likelihood-ratio test
of ``delta = 0``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from deniable.estimation._regression_data import Array
from deniable.estimation._regression_logit import fit_logit, logit_information
from deniable.estimation._regression_stats import LRTest, chi2_text, invert_information

__all__ = ["DirectTest", "direct_test"]


@dataclass(frozen=True)
class DirectTest:
    """Did randomization change the answers?  The direct-questioning shift ``delta``.

    ``delta`` is the shift of the logit of the true prevalence in the direct group
    (``x' beta + delta``) against the randomized group; ``lr`` the likelihood-ratio test of
    ``delta = 0`` (1 degree of freedom), ``se`` and ``pvalue_wald`` its Wald counterpart under
    the fit's SE convention.
    """

    column: str
    delta: float
    se: float
    pvalue_wald: float
    lr: LRTest
    n_direct: int
    n_randomized: int

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict."""
        return {
            "column": self.column,
            "delta": self.delta,
            "se": self.se,
            "pvalue_wald": self.pvalue_wald,
            "lr_statistic": self.lr.statistic,
            "df": self.lr.df,
            "pvalue": self.lr.pvalue,
            "n_direct": self.n_direct,
            "n_randomized": self.n_randomized,
        }

    def __str__(self) -> str:
        return (
            f"Direct questioning ({self.column!r}): {self.n_direct} direct, "
            f"{self.n_randomized} randomized.\n"
            f"  logit shift in the direct group: delta = {self.delta:.4f} (SE {self.se:.4f}); "
            f"LR {chi2_text(self.lr)}"
        )


def direct_test(
    column: str,
    ind: Array,
    X: Array,
    y: Array,
    p1: Array,
    p0: Array,
    llf: float,
    beta: Array,
    se: str,
    tol: float,
    max_iter: int,
    link: str,
) -> DirectTest:
    """Fit with and without the direct-group shift and compare them."""
    from scipy import stats

    match = [j for j in range(X.shape[1]) if np.array_equal(X[:, j], ind)]
    if match:  # the formula already has the indicator: drop it for the restricted model
        j = match[0]
        Xr = np.delete(X, j, axis=1)
        small = fit_logit(Xr, y, p1, p0, tol=tol, max_iter=max_iter, link=link)
        llf_full, llf_small, full_beta, Xf = llf, small.llf, beta, X
    else:
        Xf = np.column_stack([X, ind])
        j = X.shape[1]
        big = fit_logit(
            Xf, y, p1, p0, tol=tol, max_iter=max_iter, start=np.append(beta, 0.0), link=link
        )
        llf_full, llf_small, full_beta = big.llf, llf, big.beta
    cov = invert_information(logit_information(Xf, y, p1, p0, full_beta, link=link)[se])
    delta, se_delta = float(full_beta[j]), float(math.sqrt(max(cov[j, j], 0.0)))
    stat = max(0.0, 2 * (llf_full - llf_small))
    lr = LRTest(
        statistic=stat,
        df=1,
        pvalue=float(stats.chi2.sf(stat, 1)),
        llf_full=llf_full,
        llf_restricted=llf_small,
        full=f"with a logit shift for {column!r}",
        restricted="same prevalence model in both groups",
    )
    n_direct = int(ind.sum())
    return DirectTest(
        column=column,
        delta=delta,
        se=se_delta,
        pvalue_wald=float(2 * stats.norm.sf(abs(delta / se_delta))) if se_delta > 0 else math.nan,
        lr=lr,
        n_direct=n_direct,
        n_randomized=int(ind.size) - n_direct,
    )
