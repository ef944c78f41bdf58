"""Closed forms the dashboard tests check the service's numbers against, computed from the
counts alone: the moment estimate of a binary design, both SEs, the Wald interval and the
Clopper-Pearson interval mapped through the design; binomial tails summed term by term."""

from __future__ import annotations

import math
from statistics import NormalDist

from scipy import stats


def clopper_pearson(yes: int, n: int, level: float) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a binomial share, from beta quantiles."""
    a = 1 - level
    lo = 0.0 if yes == 0 else float(stats.beta.ppf(a / 2, yes, n - yes + 1))
    hi = 1.0 if yes == n else float(stats.beta.ppf(1 - a / 2, yes + 1, n - yes))
    return lo, hi


def binary(yes: int, n: int, p1: float, p0: float, level: float = 0.95) -> dict[str, object]:
    """A binary design with ``P(yes | 1) = p1``, ``P(yes | 0) = p0`` and ``yes`` of ``n``
    reports: ``(lambda - p0) / (p1 - p0)``, ``sqrt(lambda (1 - lambda) / n) / |p1 - p0|`` (and
    with ``n - 1``), ``estimate +- z se`` and the mapped Clopper-Pearson interval clipped to
    [0, 1]."""
    lam = yes / n
    slope = p1 - p0
    est = (lam - p0) / slope
    se = math.sqrt(lam * (1 - lam) / n) / abs(slope)
    se_u = math.sqrt(lam * (1 - lam) / (n - 1)) / abs(slope) if n > 1 else math.nan
    z = NormalDist().inv_cdf(0.5 + level / 2)
    lo, hi = clopper_pearson(yes, n, level)
    a, b = sorted(((lo - p0) / slope, (hi - p0) / slope))
    exact = [min(max(a, 0.0), 1.0), min(max(b, 0.0), 1.0)]
    return {"estimate": est, "se": se, "se_unbiased": se_u, "ci_wald": [est - z * se, est + z * se],
            "ci_exact": exact}  # fmt: skip


def binom_sf(k: float, n: int, p: float) -> float:
    """``P(Binomial(n, p) > k)``, summed term by term."""
    start = math.floor(k) + 1
    return math.fsum(
        math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(max(start, 0), n + 1)
    )
