"""Estimation beyond one design's estimator: majority decisions, power and sample size."""

from __future__ import annotations

from deniable.estimation._majority import (
    MajorityDecision,
    decide_majority,
    majority_decision,
    majority_threshold,
    simulate_majority,
)
from deniable.estimation._power import (
    ALTERNATIVES,
    PowerResult,
    SampleSizeResult,
    power,
    power_curve,
    sample_size,
    unit_variance,
)
from deniable.estimation._power_plot import plot_power_curves

__all__ = [
    "ALTERNATIVES",
    "MajorityDecision",
    "PowerResult",
    "SampleSizeResult",
    "decide_majority",
    "majority_decision",
    "majority_threshold",
    "plot_power_curves",
    "power",
    "power_curve",
    "sample_size",
    "simulate_majority",
    "unit_variance",
]
