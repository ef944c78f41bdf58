"""Estimation beyond one design's estimator: majority decisions (power and regression later)."""

from __future__ import annotations

from deniable.estimation._majority import (
    MajorityDecision,
    decide_majority,
    majority_decision,
    majority_threshold,
    simulate_majority,
)

__all__ = [
    "MajorityDecision",
    "decide_majority",
    "majority_decision",
    "majority_threshold",
    "simulate_majority",
]
