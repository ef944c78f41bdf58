"""Ratios of weighted totals and their covariance under a design: every design-based
estimate of this package (a Hajek mean, a Horvitz-Thompson total, a domain's mean, a
ratio) is one of them.

For per-respondent values ``y`` (numerator) and ``x`` (denominator), ``R = sum w y / sum w
x``; its linearization (Woodruff 1971) has scores ``w_i (y_i - R x_i) / sum w x``, whose
Taylor covariance is ``_taylor``'s.  Under a replicate design the ratio is recomputed
with each column of replicate weights instead.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from deniable.sampling._design import SampleDesign
from deniable.sampling._replicate import ReplicateDesign, replicate_covariance
from deniable.sampling._taylor import taylor_covariance

__all__ = ["Design", "ratio_estimate", "total_estimate"]

FloatArray = npt.NDArray[np.float64]
Design = SampleDesign | ReplicateDesign


def _columns(values: npt.ArrayLike) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    return arr.reshape(arr.shape[0], -1)


def ratio_estimate(
    design: Design, numerator: npt.ArrayLike, denominator: npt.ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """``(R, cov)``: ``R_j = sum w y_j / sum w x_j`` for the columns of ``numerator`` (n, m)
    and ``denominator`` (n, m) or (n,), and their ``(m, m)`` covariance."""
    y = _columns(numerator)
    x = _columns(denominator)
    w = design.weights
    t_y = w @ y
    t_x = w @ x
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.asarray(t_y / t_x, dtype=np.float64)
    if isinstance(design, ReplicateDesign):
        reps = design.replicate_weights
        with np.errstate(divide="ignore", invalid="ignore"):
            thetas = (reps.T @ y) / (reps.T @ x)
        return est, replicate_covariance(design, thetas, est)
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = w[:, None] * (y - x * est) / t_x
    return est, taylor_covariance(design, scores)


def total_estimate(design: Design, values: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    """``(T, cov)``: the Horvitz-Thompson totals ``T_j = sum w y_j`` (Horvitz & Thompson
    1952) of the columns of ``values`` and their covariance."""
    y = _columns(values)
    w = design.weights
    est = np.asarray(w @ y, dtype=np.float64)
    if isinstance(design, ReplicateDesign):
        thetas = design.replicate_weights.T @ y
        return est, replicate_covariance(design, thetas, est)
    return est, taylor_covariance(design, w[:, None] * y)
