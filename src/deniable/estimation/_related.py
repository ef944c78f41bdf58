"""Related questions: ``k - 1`` nested threshold questions against one ``k``-category question
with the same total epsilon, compared by the exact standard errors of the bracket shares."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from deniable.common import validation as v
from deniable.designs import Categorical
from deniable.exceptions import ParameterError
from deniable.results import Table

__all__ = ["threshold_vs_bracket"]


def threshold_vs_bracket(
    epsilon: float,
    shares: Sequence[float],
    n: int,
    *,
    labels: Sequence[str] | None = None,
) -> Table:
    """Exact standard errors of bracket shares: ``k - 1`` threshold questions vs one question.

    The record is a bracket ``B`` in ``0..k-1`` (e.g. age ``<20, 20-29, 30-39, 40+``) with
    shares ``pi``.  Design A asks the ``k - 1`` nested questions "B < j?" (``j = 1..k-1``:
    "age < 20?", "age < 30?", "age < 40?") each with ``Binary(eps / (k - 1))``: by basic
    composition the questionnaire is ``eps``-LDP whatever the dependence.  Design B asks
    once for the bracket with ``Categorical.from_epsilon(eps, k)``.

    Design A: ``F_j = P(B < j)``, ``F_hat_j = (lambda_hat_j - (1 - t)) / (2t - 1)``,
    ``Var F_hat_j = lambda_j (1 - lambda_j) / (n (2t - 1)^2)`` and, the reports being
    independent given the record, ``Cov(F_hat_i, F_hat_j) = (F_min(i,j) - F_i F_j) / n``;
    bracket shares are differences ``pi_j = F_{j+1} - F_j`` (``F_0 = 0, F_k = 1``).
    Design B: ``Var pi_hat_j = lambda_j (1 - lambda_j) / (n tau^2)`` with
    ``lambda = tau pi + (1 - tau) / k`` (Kairouz, Oh & Viswanath 2016).

    >>> t = threshold_vs_bracket(1.0, [0.2, 0.3, 0.3, 0.2], 10_000)
    >>> all(a > b for a, b in zip(t.column("SE thresholds"), t.column("SE one question")))
    True
    """
    eps = v.positive("epsilon", epsilon)
    size = v.integer("n", n, minimum=1)
    pi = np.array([v.probability(f"shares[{i}]", s) for i, s in enumerate(shares)])
    k = pi.size
    if k < 2:
        raise ParameterError(f"`shares` must have at least 2 brackets, got {k}.")
    if abs(math.fsum(pi.tolist()) - 1) > 1e-9:
        raise ParameterError(f"`shares` must sum to 1, got {math.fsum(pi.tolist())}.")
    names = [f"bracket {j}" for j in range(k)] if labels is None else [str(s) for s in labels]
    if len(names) != k:
        raise ParameterError(f"`labels` must have {k} entries (one per bracket), got {len(names)}.")
    # design A: k-1 binary questions at eps/(k-1)
    each = eps / (k - 1)
    t = 1 / (1 + math.exp(-each))
    s = 2 * t - 1
    f = np.cumsum(pi)[:-1]  # F_1..F_{k-1}
    lam = (1 - t) + s * f
    cov_f = (np.minimum.outer(f, f) - np.outer(f, f)) / size
    np.fill_diagonal(cov_f, lam * (1 - lam) / (size * s * s))
    diff = np.zeros((k, k - 1))
    for j in range(k):  # pi_j = F_{j+1} - F_j
        if j < k - 1:
            diff[j, j] = 1.0
        if j > 0:
            diff[j, j - 1] = -1.0
    var_a = np.diag(diff @ cov_f @ diff.T)
    # design B: one k-ary question at eps
    tau = Categorical.from_epsilon(eps, k).p_truthful
    lam_b = tau * pi + (1 - tau) / k
    var_b = lam_b * (1 - lam_b) / (size * tau * tau)
    rows = tuple(
        (
            names[j],
            float(pi[j]),
            math.sqrt(var_a[j]),
            math.sqrt(var_b[j]),
            float(var_a[j] / var_b[j]),
        )
        for j in range(k)
    )
    return Table(
        ("bracket", "share", "SE thresholds", "SE one question", "variance ratio"),
        rows,
        title=f"total epsilon {eps:.4g}, n = {size}: {k - 1} threshold questions at "
        f"{each:.4g} each vs one {k}-category question at {eps:.4g}",
    )
