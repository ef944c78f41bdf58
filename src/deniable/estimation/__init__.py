"""Estimation beyond one design's estimator: majority decisions, power, regression."""

from __future__ import annotations

from deniable.estimation._linear import LinearRRResult, linear_rr
from deniable.estimation._logistic import DirectTest, LogisticRRResult, logistic_rr
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
from deniable.estimation._results import SE_TYPES, LRTest, Prevalence, RegressionResult

__all__ = [
    "ALTERNATIVES",
    "SE_TYPES",
    "DirectTest",
    "LRTest",
    "LinearRRResult",
    "LogisticRRResult",
    "MajorityDecision",
    "PowerResult",
    "Prevalence",
    "RegressionResult",
    "SampleSizeResult",
    "decide_majority",
    "linear_rr",
    "logistic_rr",
    "majority_decision",
    "majority_threshold",
    "plot_power_curves",
    "power",
    "power_curve",
    "sample_size",
    "simulate_majority",
    "unit_variance",
]
