"""Taylor-linearized (sandwich) covariance of estimated totals under a stratified clustered
design: the between-PSU-within-stratum formula of Wolter (2007, ch. 6) and R's ``svyrecvar``
at one stage.

For scores ``z_i`` (each respondent's weighted contribution to the linearized estimator),
PSU totals ``z_hj`` and their stratum means ``zbar_h``::

    V = sum_h (1 - f_h) n_h / (n_h - 1) sum_j (z_hj - zbar_h) (z_hj - zbar_h)^T

with ``n_h`` the PSUs sampled in stratum ``h`` and ``f_h = n_h / N_h`` (0 without fpc).
Strata with one PSU follow the design's ``lonely_psu`` rule.  Everything is
``numpy.bincount`` over respondents and PSUs: no Python loop over PSUs or strata.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from deniable.sampling._design import SampleDesign

__all__ = ["taylor_covariance"]

FloatArray = npt.NDArray[np.float64]


def _group_sums(index: npt.NDArray[np.intp], values: FloatArray, size: int) -> FloatArray:
    """Column sums of ``values`` (rows, m) by ``index``: (size, m)."""
    out = np.empty((size, values.shape[1]))
    for j in range(values.shape[1]):
        out[:, j] = np.bincount(index, weights=values[:, j], minlength=size)
    return out


def calibration_residuals(design: SampleDesign, scores: FloatArray) -> FloatArray:
    """Scores with the weighted mean of their margin cell removed, for weights calibrated to
    known margins (post-stratification, raking): ``z_i - w_i sum_g z / sum_g w`` for the
    cell ``g`` of ``i``, margin after margin until nothing changes (backfitting: the
    residual of the weighted regression on every margin's cells).  The totals of the
    margins are then known, not estimated (Sarndal, Swensson & Wretman 1992, sec. 7.6;
    Lumley 2010, ch. 7)."""
    w = design.weights
    z = np.array(scores, dtype=np.float64)
    scale = float(np.abs(z).sum()) or 1.0
    for _ in range(1 if len(design.calibration) == 1 else 200):
        moved = 0.0
        for codes in design.calibration:
            cells = int(codes.max()) + 1
            w_g = np.bincount(codes, weights=w, minlength=cells)
            mean = _group_sums(codes, z, cells) / w_g[:, None]
            shift = w[:, None] * mean[codes]
            z -= shift
            moved = max(moved, float(np.abs(shift).sum()))
        if moved <= 1e-13 * scale:
            break
    return z


def taylor_covariance(design: SampleDesign, scores: FloatArray) -> FloatArray:
    """The ``(m, m)`` covariance of ``sum_i scores_i`` for ``scores`` of shape ``(n, m)``
    (residuals from the calibration margins first, where the weights were calibrated)."""
    if design.calibration:
        scores = calibration_residuals(design, scores)
    z = _group_sums(design.psu_index, scores, design.n_psu)
    h_of = design.psu_stratum
    n_h = design.psu_per_stratum
    means = _group_sums(h_of, z, design.n_strata) / n_h[:, None]
    dev = z - means[h_of]
    finite = 1.0 - design.sampling_fraction
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(n_h > 1, finite * n_h / (n_h - 1), 0.0)
    lonely = n_h == 1
    rule = design.lonely_psu
    if lonely.any() and rule == "adjust":
        # R's "adjust" (survey:::onestrat): a lonely PSU's total is not centred, i.e. centred
        # at zero, the population mean of linearized scores (for a mean or a ratio the scores
        # sum to zero, so this is the grand mean); it counts with the factor 1 - f_h
        rows = lonely[h_of]
        dev[rows] = z[rows]
        scale = np.where(lonely, finite, scale)
    weighted = dev * np.sqrt(scale)[h_of][:, None]
    cov = np.asarray(weighted.T @ weighted, dtype=np.float64)
    if lonely.any() and rule == "average":
        ok = int(np.count_nonzero(~lonely))
        cov = cov * (design.n_strata / ok) if ok else np.full_like(cov, np.nan)
    return cov
