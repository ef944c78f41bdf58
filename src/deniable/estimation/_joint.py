"""Joint estimation of several randomized-response items (Kim & Warde 2005; Lee, Sedory &
Singh 2013; van den Hout & van der Heijden 2002).

Each item ``j`` has a channel ``P_j[report, truth]``; the items are randomized
independently given the true answers, so the joint report has the channel
``A = P_1 (x) P_2 (x) ... (x) P_m`` (Kronecker product) and the joint cell probabilities
``pi`` satisfy ``lambda = A pi`` for the joint report shares ``lambda``.

* **Moment estimate**: ``pi_hat = A^{-1} lambda_hat`` (square invertible channels), i.e.
  the mean of the per-respondent de-biased joint indicators ``z_i = P_1^{-1} e_{r_i1} (x)
  P_2^{-1} e_{r_i2} (x) ...`` (``_joint_items``); every item de-biasable by
  :func:`deniable.sampling.debiased_reports` works, the frequency oracles included.
  Unbiased; it may leave the simplex.  Its covariance under simple random sampling is the
  multinomial delta method ``A^{-1} (diag(lambda) - lambda lambda^T) A^{-T} / n``, i.e. the
  plug-in (divisor ``n``) covariance of the ``z_i`` over ``n``; under a survey design the
  ``z_i`` are per-respondent values whose Hajek mean and Taylor or replicate covariance
  are :func:`deniable.sampling.ratio_estimate`'s.
* **MLE**: EM on the simplex (``_joint_em``), for items whose channel is dense and indexed
  by their reports (binary designs, Kuk, the k-ary design, forced response, ...).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.estimation._joint_em import fit_mle
from deniable.estimation._joint_items import joint_codes, joint_scores, prepare_items
from deniable.estimation._joint_results import JointEstimate
from deniable.exceptions import DataError, ParameterTypeError
from deniable.sampling import ReplicateDesign, SampleDesign, ratio_estimate

__all__ = ["joint_estimate"]

FloatArray = npt.NDArray[np.float64]

#: Largest respondents x joint report patterns held as one dense indicator array.
MAX_REPORT_CELLS = 10**8


def _outside(values: FloatArray) -> tuple[str, ...]:
    low = np.flatnonzero(values < 0)
    high = np.flatnonzero(values > 1)
    if not low.size and not high.size:
        return ()
    cells = ", ".join(str(int(c)) for c in (*low, *high))
    return (
        f"the moment estimate leaves the simplex (cells {cells} outside [0, 1]): it is "
        "unbiased as it is; the MLE stays inside.",
    )


def joint_estimate(
    mechanisms: Any, reports: Any, design: SampleDesign | ReplicateDesign | None = None
) -> JointEstimate:
    """The joint distribution of two or more randomized-response items.

    Parameters
    ----------
    mechanisms : one design per item (at least 2): any binary design (Warner, forced
        response, unrelated question, Kuk, ...), the k-ary design, or a frequency oracle.
    reports : one array of reports per item (each with one report per respondent, in the
        same order), or a 2-D array with one column per item.
    design : a :class:`~deniable.sampling.SampleDesign` or
        :class:`~deniable.sampling.ReplicateDesign` of the respondents; ``None`` for simple
        random sampling.

    Returns
    -------
    JointEstimate
        The moment estimate (unbiased, may leave the simplex) and the MLE on the simplex
        (EM; van den Hout & van der Heijden 2002), each with its covariance.

    Notes
    -----
    The joint channel is the Kronecker product of the items' channels (Kim & Warde 2005);
    the moment estimate is ``A^{-1} lambda_hat``, the mean of the per-respondent de-biased
    joint indicators, so under a survey design it is their Hajek mean with the design's
    Taylor or replicate covariance (the randomization is one more stage of sampling).

    Examples
    --------
    Two items asked directly (no randomization), to show the cells: the estimate is then
    the raw joint share of each pair of answers.

    >>> from deniable.designs import Custom
    >>> direct = Custom(1.0, 0.0)  # no randomization: the report is the answer
    >>> est = joint_estimate([direct, direct], [[0, 0, 1, 1], [0, 1, 1, 1]])
    >>> est.as_array().tolist()
    [[0.25, 0.25], [0.0, 0.5]]
    """
    items = prepare_items(mechanisms, reports)
    z = joint_scores(items)
    n = z.shape[0]
    coded = joint_codes(items)
    srs_cov = None
    if design is None:
        values = z.mean(axis=0)
        dev = z - values
        cov = dev.T @ dev / n / n
        df, method, described = (
            float("inf"),
            "simple random sampling (multinomial, n)",
            (f"simple random sample of {n}"),
        )
    else:
        if not isinstance(design, SampleDesign | ReplicateDesign):
            raise ParameterTypeError(
                "`design` must be a SampleDesign, a ReplicateDesign or None, got "
                f"{type(design).__name__}."
            )
        if design.n != n:
            raise DataError(
                f"`design` must have one row per respondent ({n} reports per item), got "
                f"{design.n} rows."
            )
        values, cov = ratio_estimate(design, z, np.ones(n))
        w = design.weights / np.sum(design.weights)
        dev = z - values
        srs_cov = (dev * w[:, None]).T @ dev / n
        df, method, described = float(design.df), design.variance_method, design.describe()
    notes = list(_outside(values))
    extra: dict[str, Any] = {} if design is None else {"srs_covariance": srs_cov}
    no_channel = [it.why_no_channel for it in items if it.channel is None]
    if coded is not None:
        code, channel = coded
        shares, share_cov = _report_shares(code, channel.shape[0], design)
        if shares is None:
            notes.append("no MLE: too many joint report patterns for one dense array.")
        else:
            mle, mle_cov, boundary, its, mle_notes = fit_mle(
                channel, shares, n, None if design is None else share_cov, values
            )
            notes.extend(mle_notes)
            extra.update(
                mle=mle, mle_covariance=mle_cov, mle_boundary=boundary, em_iterations=its,
                report_shares=shares, report_covariance=share_cov,
                channels=tuple(it.channel for it in items),
            )  # fmt: skip
    else:
        notes.append(f"no MLE: {'; '.join(no_channel)} (the EM needs each report's likelihood).")
    return JointEstimate(
        tuple(it.name for it in items), tuple(it.k for it in items), values, cov, n, df,
        method, described, notes=tuple(notes), **extra,
    )  # fmt: skip


def _report_shares(
    code: npt.NDArray[np.intp], patterns: int, design: SampleDesign | ReplicateDesign | None
) -> tuple[FloatArray | None, FloatArray]:
    """The (weighted) shares of the joint report patterns and their covariance."""
    n = code.size
    if design is None:
        shares = np.bincount(code, minlength=patterns) / n
        return shares, (np.diag(shares) - np.outer(shares, shares)) / n
    if n * patterns > MAX_REPORT_CELLS:
        return None, np.empty((0, 0))
    indicators = np.zeros((n, patterns))
    indicators[np.arange(n), code] = 1.0
    shares, cov = ratio_estimate(design, indicators, np.ones(n))
    return shares, cov
