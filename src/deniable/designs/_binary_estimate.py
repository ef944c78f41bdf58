"""The estimate of a binary channel: the moment estimator, both SE conventions and the
intervals mapped through the channel (see :class:`~deniable.designs.BinaryDesign`).  Every
binary design, each category of a frequency estimate and memoized randomized response use
it."""

from __future__ import annotations

import math
from typing import Any

from deniable.results import Estimate, OutsideChannelNotes, information_note
from deniable.results import MappedBinomialInterval as _Mapped

__all__ = ["binary_estimate", "moment_estimate"]


def moment_estimate(
    value: float, se: float, se_unbiased: float, n: int, lambda_hat: float, **details: Any
) -> Estimate:
    """The moment estimate ``value`` of a share from ``n`` reports whose observed share is
    ``lambda_hat``, with its two SEs (``n`` and ``n - 1``); its ``bounded`` value is
    ``value`` clipped to [0, 1].  ``details`` are the other fields of :class:`Estimate`."""
    bounded = min(max(value, 0.0), 1.0)
    return Estimate(
        value, bounded, se, se_unbiased, n, method="moment", lambda_hat=lambda_hat, **details
    )


def binary_estimate(
    p1: float, p0: float, yes: int, n: int, parameter: str = "prevalence"
) -> Estimate:
    """The moment estimate ``(lambda_hat - P0) / (P1 - P0)`` and its intervals for a binary
    channel ``P1 = P(yes | 1)``, ``P0 = P(yes | 0)``, from ``yes`` of ``n`` reports."""
    yes, n = int(yes), int(n)
    slope = p1 - p0
    lam = yes / n
    value = (lam - p0) / slope
    var_core = lam * (1 - lam) / (slope * slope)
    se = math.sqrt(var_core / n)
    se_unbiased = math.sqrt(var_core / (n - 1)) if n > 1 else math.nan
    return moment_estimate(
        value,
        se,
        se_unbiased,
        n,
        lam,
        parameter=parameter,
        intervals={
            "exact": _Mapped(yes, n, p0, slope, "exact"),
            "wilson": _Mapped(yes, n, p0, slope, "wilson"),
        },
        level_notes=OutsideChannelNotes(p1, p0, yes, n),
        remarks=information_note(slope, n),
    )
