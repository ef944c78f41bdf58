"""Consistent frequencies from unbiased ones: clipping, projection onto the simplex, and the
maximum-likelihood estimate by iterative Bayesian update.

The unbiased estimates of a frequency oracle can be negative and need not sum to 1; they
stay the default (:class:`~deniable.designs.FrequencyEstimate`).  Each function here is an
opt-in post-processing (free for privacy) that returns frequencies on the probability
simplex, trading bias for error (Wang, Lopuhaa-Zwakenberg, Li, Skoric & Li 2020,
"Locally differentially private frequency estimation with consistency"):

* :func:`clip_and_normalize`: negatives to 0, then divide by the sum;
* :func:`project_to_simplex`: the closest point of the simplex in Euclidean distance (the
  O(k log k) sort algorithm of Held, Wolfe & Crowder 1974; Duchi et al. 2008);
* :func:`maximum_likelihood`: iterative Bayesian update (Agrawal, Srikant & Thomas 2005),
  an EM algorithm.  For k-ary randomized response it maximizes the likelihood of the
  reports.  A support-count tally does not hold the whole likelihood of bit-vector or
  hashed reports; there it maximizes the likelihood of the counts under the Poisson
  model ``c_j ~ Poisson(n (q + (p - q) pi_j))``, which is the multinomial EM with the
  normalized support matrix ``A[j, x] = P(report supports j | x) / (p + (k - 1) q)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import FrequencyEstimate
from deniable.exceptions import DataError, ParameterTypeError
from deniable.results import Result, Table

__all__ = [
    "ConsistentFrequencies",
    "clip_and_normalize",
    "maximum_likelihood",
    "project_to_simplex",
]

FloatArray = npt.NDArray[np.float64]

#: The convergence rule of :func:`maximum_likelihood`.
CONVERGENCE = "max_j |pi_j(t + 1) - pi_j(t)| <= tol"


@dataclass(frozen=True)
class ConsistentFrequencies(Result):
    """Frequencies on the probability simplex from a post-processing ``method`` of the
    unbiased estimates ``raw``; :func:`maximum_likelihood` also states its ``iterations``,
    whether it ``converged`` (the rule ``max_j |pi_j(t + 1) - pi_j(t)| <= tol``) and the
    final ``log_likelihood``."""

    method: str
    values: FloatArray = field(repr=False)
    raw: FloatArray = field(repr=False)
    iterations: int | None = None
    converged: bool | None = None
    tol: float | None = None
    log_likelihood: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON of every field."""
        return {
            "method": self.method,
            "values": self.values.tolist(),
            "raw": self.raw.tolist(),
            "iterations": self.iterations,
            "converged": self.converged,
            "tol": self.tol,
            "convergence": CONVERGENCE if self.iterations is not None else None,
            "log_likelihood": self.log_likelihood,
        }

    def table(self, rows: int = 32) -> Table:
        """The first ``rows`` categories: raw and consistent frequency (the method, the sum
        and, for :func:`maximum_likelihood`, the iterations and convergence in the title)."""
        k = self.values.size
        head = f"{self.method}: {k} categories, sum {self.values.sum():.6f}"
        if self.iterations is not None:
            state = "converged" if self.converged else "NOT converged"
            head += f"; {self.iterations} iterations, {state} ({CONVERGENCE}, tol {self.tol:g})"
        shown = min(v.integer("rows", rows, minimum=0), k)
        body = tuple((j, float(self.raw[j]), float(self.values[j])) for j in range(shown))
        notes = (
            (f"... {k - shown} more categories (table(rows=...) shows them)",) if shown < k else ()
        )
        return Table(("category", "raw", "consistent"), body, title=head, notes=notes)


def _raw(estimate: Any) -> FloatArray:
    """The unbiased values of an estimate, or an array of them."""
    if isinstance(estimate, FrequencyEstimate):
        values = np.asarray(estimate.values, dtype=np.float64)
    elif isinstance(estimate, str | bytes):
        raise ParameterTypeError(
            f"`estimate` must be a frequency estimate or an array, got {type(estimate).__name__}."
        )
    else:
        values = np.asarray(estimate, dtype=np.float64)
    if values.ndim != 1 or values.size < 2:
        raise DataError(f"`estimate` must hold at least 2 frequencies, got shape {values.shape}.")
    if not np.all(np.isfinite(values)):
        raise DataError("`estimate` must hold finite numbers.")
    return values


def clip_and_normalize(estimate: Any) -> ConsistentFrequencies:
    """Negative frequencies to 0, then divide by the sum (uniform if nothing is left).

    Biased upward for rare categories (their negative noise is cut off) and downward for
    the rest (the division); usually a smaller error than the raw estimates.

    >>> clip_and_normalize([0.6, 0.5, -0.1]).values.tolist()
    [0.5454545454545454, 0.45454545454545453, 0.0]
    """
    raw = _raw(estimate)
    clipped = np.maximum(raw, 0.0)
    total = clipped.sum()
    values = clipped / total if total > 0 else np.full(raw.size, 1 / raw.size)
    return ConsistentFrequencies("clip and normalize", values, raw)


def project_to_simplex(estimate: Any) -> ConsistentFrequencies:
    """The Euclidean projection onto the probability simplex: ``max(pi_j - tau, 0)`` with
    the ``tau`` that makes the sum 1, found by sorting (O(k log k)).

    Subtracts the same amount from every category that stays positive, so the estimates
    keep their differences; rare categories go to 0.

    >>> project_to_simplex([0.6, 0.5, -0.1]).values.tolist()
    [0.55, 0.45, 0.0]
    """
    raw = _raw(estimate)
    u = np.sort(raw)[::-1]
    cumulative = np.cumsum(u) - 1.0
    ranks = np.arange(1, raw.size + 1)
    positive = u - cumulative / ranks > 0
    rho = int(np.flatnonzero(positive)[-1]) + 1
    tau = cumulative[rho - 1] / rho
    return ConsistentFrequencies("simplex projection", np.maximum(raw - tau, 0.0), raw)


def _counts_and_matrix(estimate: Any) -> tuple[FloatArray, Any]:
    """The counts EM fits and either ``(p, q)`` (the same support probabilities for every
    value: the oracles, k-ary randomized response) or the dense channel matrix (the
    categorical design with a non-uniform forced distribution)."""
    if not isinstance(estimate, FrequencyEstimate):
        raise ParameterTypeError(
            "`estimate` must be a FrequencyEstimate (the estimate of a frequency oracle or of "
            "the categorical design: the EM needs the tally and the channel), got "
            f"{type(estimate).__name__}."
        )
    counts = estimate.counts.astype(np.float64)
    if isinstance(estimate.p, float) and isinstance(estimate.q, float):
        return counts, (estimate.p, estimate.q)
    return counts, np.asarray(estimate.mechanism.channel, dtype=np.float64)


def maximum_likelihood(
    estimate: Any, *, tol: float = 1e-10, max_iter: int = 10_000
) -> ConsistentFrequencies:
    """The maximum-likelihood frequencies by iterative Bayesian update (EM).

    From the uniform distribution, repeat ``pi_x <- pi_x sum_j (c_j / C) A[j, x] / (A
    pi)_j`` (``A`` the normalized channel of the module docstring, ``C`` the sum of the
    counts) until the convergence rule ``max_j |pi_j(t + 1) - pi_j(t)| <= tol`` or
    ``max_iter`` iterations; the result states which.  Every step increases the likelihood
    and stays on the simplex.

    >>> from deniable.oracles import OUE
    >>> oue = OUE.from_epsilon(2.0, k=4)
    >>> est = oue.estimate(oue.randomize([0] * 600 + [1] * 300 + [2] * 100, rng=5))
    >>> mle = maximum_likelihood(est)
    >>> mle.converged, round(float(mle.values.sum()), 12), float(mle.values.min()) >= 0
    (True, 1.0, True)
    """
    raw = _raw(estimate)
    counts, channel = _counts_and_matrix(estimate)
    tolerance = v.positive("tol", tol)
    limit = v.integer("max_iter", max_iter, minimum=1)
    k = raw.size
    total = counts.sum()
    if total <= 0:
        raise DataError("`estimate` has no support counts to fit.")
    share = counts / total
    pi = np.full(k, 1 / k)
    converged = False
    iterations = 0
    if isinstance(channel, tuple):
        p, q = channel
        for iterations in range(1, limit + 1):  # noqa: B007 - reported below
            w = share / (q + (p - q) * pi)
            new = pi * (q * w.sum() + (p - q) * w)
            new /= new.sum()  # exact arithmetic keeps the sum at 1: remove float drift
            change = float(np.max(np.abs(new - pi)))
            pi = new
            if change <= tolerance:
                converged = True
                break
        fitted = q + (p - q) * pi
    else:
        a = channel
        for iterations in range(1, limit + 1):  # noqa: B007
            new = pi * (a.T @ (share / (a @ pi)))
            new /= new.sum()
            change = float(np.max(np.abs(new - pi)))
            pi = new
            if change <= tolerance:
                converged = True
                break
        fitted = a @ pi
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(counts > 0, counts * np.log(fitted), 0.0)
    loglik = float(terms.sum())
    return ConsistentFrequencies(
        "maximum likelihood (iterative Bayesian update)", pi, raw, iterations, converged,
        tolerance, loglik if math.isfinite(loglik) else None,
    )  # fmt: skip
