"""Estimation beyond one design's estimator: majority decisions, power, regression."""

from __future__ import annotations

__all__: list[str] = []
