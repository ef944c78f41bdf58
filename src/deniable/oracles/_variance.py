"""The two variances of a frequency estimate from a mechanism's support probabilities ``p``
and ``q``: for a fixed population of ``n`` respondents (the exact variance of Wang, Blocki,
Li & Jha 2017) and for ``n`` respondents sampled from a population."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import MAX_COUNT, SupportChannel, SymmetricChannel
from deniable.exceptions import DataError, ParameterError

__all__ = ["exact_variance", "sampling_variance", "support_probabilities", "total_variance"]

FloatArray = npt.NDArray[np.float64]


def support_probabilities(mechanism: Any) -> tuple[float, float]:
    """``(p, q)`` of a frequency oracle or of k-ary randomized response: the probability
    that a report supports (for GRR: equals) the true value and one given other value.

    Reads the mechanism's channel: a :class:`~deniable.designs.SupportChannel` or a
    :class:`~deniable.designs.SymmetricChannel` (the categorical design with uniform
    forcing); anything else raises :class:`~deniable.exceptions.ParameterError`.
    """
    channel = getattr(mechanism, "channel", None)
    if isinstance(channel, SupportChannel | SymmetricChannel):
        return channel.p, channel.q
    raise ParameterError(
        "`mechanism` must be a frequency oracle or k-ary randomized response (a support or "
        f"symmetric channel), got {type(mechanism).__name__}."
    )


def exact_variance(mechanism: Any, n: int, frequencies: npt.ArrayLike | None = None) -> FloatArray:
    """Exact variance of each category's unbiased frequency estimate from ``n`` reports.

    ``(pi_j p (1 - p) + (1 - pi_j) q (1 - q)) / (n (p - q)^2)`` (Wang et al. 2017) with the
    mechanism's support probabilities ``p`` and ``q`` (:func:`support_probabilities`), at
    the true ``frequencies`` (default: uniform, ``1 / k`` each).  Summed over the
    categories it is ``(k q (1 - q) + p (1 - p) - q (1 - q)) / (n (p - q)^2)`` whatever the
    frequencies.

    >>> from deniable.oracles import OUE
    >>> oue = OUE(k=4, q=0.25)                          # p = 1/2
    >>> exact_variance(oue, 100).round(6).tolist()      # (0.25 * 0.25 + 0.75 * 0.1875) / 6.25
    [0.0325, 0.0325, 0.0325, 0.0325]
    """
    p, q, size, pi = _setting(mechanism, n, frequencies)
    return np.asarray((pi * p * (1 - p) + (1 - pi) * q * (1 - q)) / (size * (p - q) ** 2))


def sampling_variance(
    mechanism: Any, n: int, frequencies: npt.ArrayLike | None = None
) -> FloatArray:
    """Variance of each category's unbiased frequency estimate from ``n`` respondents drawn
    independently from a population with ``frequencies`` (default uniform).

    Each report then supports ``j`` with probability ``lambda_j = q + (p - q) pi_j``,
    independently, so ``Var = lambda_j (1 - lambda_j) / (n (p - q)^2)``: the exact variance
    (:func:`exact_variance`) plus ``pi_j (1 - pi_j) / n``, the variance of drawing the
    respondents.  ``FrequencyEstimate.variances`` is this at the estimate.

    >>> from deniable.oracles import OUE
    >>> oue = OUE(k=4, q=0.25)                             # p = 1/2: lambda = 0.3125
    >>> sampling_variance(oue, 100).round(6).tolist()      # 0.3125 * 0.6875 / 6.25
    [0.034375, 0.034375, 0.034375, 0.034375]
    """
    p, q, size, pi = _setting(mechanism, n, frequencies)
    lam = q + (p - q) * pi
    return np.asarray(lam * (1 - lam) / (size * (p - q) ** 2))


def _setting(
    mechanism: Any, n: int, frequencies: npt.ArrayLike | None
) -> tuple[float, float, int, FloatArray]:
    """``(p, q, n, frequencies)``, validated (uniform frequencies by default)."""
    p, q = support_probabilities(mechanism)
    size = v.integer("n", n, minimum=1, maximum=MAX_COUNT)
    k = int(mechanism.channel.n_truths)
    if frequencies is None:
        pi = np.full(k, 1 / k)
    else:
        pi = np.asarray(frequencies, dtype=float)
        if pi.shape != (k,):
            raise DataError(f"`frequencies` must have k = {k} entries, got shape {pi.shape}.")
    return p, q, size, pi


def total_variance(p: float, q: float, k: int, n: int) -> float:
    """The exact variance summed over the ``k`` categories, ``(k q (1 - q) + p (1 - p) -
    q (1 - q)) / (n (p - q)^2)``: the same for every distribution of the values (the
    frequencies enter only through their sum, 1)."""
    return (k * q * (1 - q) + p * (1 - p) - q * (1 - q)) / (n * (p - q) ** 2)
