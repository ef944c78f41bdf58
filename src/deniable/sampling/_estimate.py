"""Randomized response under a survey design: every report de-biased by its own design's
inverse, then weighted (Hajek 1971; Horvitz & Thompson 1952; Chaudhuri 2011, ch. 2).

For a binary design with ``P1 = P(yes | 1)`` and ``P0 = P(yes | 0)`` each report ``r_i``
becomes ``y_i = (r_i - P0) / (P1 - P0)``, unbiased for the respondent's true answer given
it.  The Hajek prevalence is their weighted mean, ``(lambda_w - P0) / (P1 - P0)`` with
``lambda_w = sum w r / sum w`` the weighted share of yes reports; the Horvitz-Thompson
total is ``sum w y``.  Both are ratios (or totals) of weighted totals, so their variances
are those of :mod:`deniable.sampling._core`: the design-based SE of the prevalence is the
SE of ``lambda_w`` divided by ``|P1 - P0|``.  The k-ary design and the frequency oracles
de-bias each support indicator as ``(s_ij - q_j) / (p_j - q_j)``; a two-group design
estimates each group's weighted share of yes reports (a domain each) and solves its linear
system ``lambda = c + M phi`` for the prevalence.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.exceptions import DataError
from deniable.sampling._core import Design, ratio_estimate, total_estimate
from deniable.sampling._design import SampleDesign, as_labels
from deniable.sampling._replicate import ReplicateDesign
from deniable.sampling._results import DomainEstimates, SurveyEstimate, SurveyFrequencies

__all__ = ["debiased_reports", "survey_by", "survey_estimate", "survey_ratio"]

FloatArray = npt.NDArray[np.float64]

#: Largest respondents x values held as one dense array of de-biased support indicators.
MAX_CELLS = 2 * 10**8


def _check_design(design: Any) -> Design:
    if not isinstance(design, SampleDesign | ReplicateDesign):
        raise TypeError(
            f"`design` must be a SampleDesign or a ReplicateDesign, got {type(design).__name__}."
        )
    return design


def _check_rows(name: str, size: int, design: Design) -> None:
    if size != design.n:
        raise DataError(
            f"`{name}` must have one entry per respondent of the design ({design.n}), got {size}."
        )


def _domain(design: Design, domain: Any) -> FloatArray:
    if domain is None:
        return np.ones(design.n)
    arr = np.asarray(domain)
    if arr.ndim != 1 or arr.dtype.kind not in "biu":
        raise DataError(
            f"`domain` must be a 1-D boolean array (True for the respondents in the domain), "
            f"got shape {arr.shape} dtype {arr.dtype}."
        )
    _check_rows("domain", arr.size, design)
    if arr.dtype.kind != "b" and not np.isin(arr, (0, 1)).all():
        raise DataError("`domain` must hold only True/False (or 1/0).")
    out = arr.astype(np.float64)
    if not out.any():
        raise DataError("`domain` must hold at least one respondent, got none.")
    return out


def _binary_channel(mechanism: Any) -> tuple[float, float, int] | None:
    """``(P1, P0, draws)`` of a design with a binary truth whose report is one bit
    (``draws = 1``) or Kuk's count of red cards in ``draws`` draws; else ``None``."""
    p1 = getattr(mechanism, "p_yes_given_1", None)
    p0 = getattr(mechanism, "p_yes_given_0", None)
    if p1 is None or p0 is None or getattr(mechanism, "n_groups", 1) != 1:
        return None
    if getattr(mechanism, "n_truths", 2) != 2:
        return None
    return float(p1), float(p0), int(getattr(mechanism, "n_reports", 2)) - 1


def _unsupported(mechanism: Any) -> DataError:
    return DataError(
        "`mechanism` must be a binary design (one report bit, or Kuk's count of red cards), "
        "the k-ary design, a frequency oracle or a two-group design, got "
        f"{getattr(mechanism, 'name', type(mechanism).__name__)!r} "
        f"({type(mechanism).__name__})."
    )


def _frequency_parts(mechanism: Any, reports: Any) -> tuple[FloatArray, Any, int]:
    """The de-biased support indicators ``(n, k)``, the unweighted estimate and ``n``."""
    if not (
        callable(getattr(mechanism, "tally", None))
        and callable(getattr(mechanism, "estimate", None))
    ):
        raise _unsupported(mechanism)
    plain = mechanism.estimate(mechanism.tally(reports))
    if not all(hasattr(plain, a) for a in ("k", "n", "p", "q", "slope")):
        raise _unsupported(mechanism)
    k, n = int(plain.k), int(plain.n)
    if n * k > MAX_CELLS:
        raise DataError(
            f"{n} respondents x {k} values is too many for one design-based estimate (at most "
            f"{MAX_CELLS} cells of de-biased support indicators): estimate fewer values or "
            "respondents at a time."
        )
    p = np.broadcast_to(np.asarray(plain.p, dtype=np.float64), (k,))
    q = np.broadcast_to(np.asarray(plain.q, dtype=np.float64), (k,))
    supporter: Any = (
        mechanism if hasattr(mechanism, "supports") else getattr(mechanism, "oracle", None)
    )
    if hasattr(supporter, "supports"):  # an oracle (a histogram's through its oracle)
        support = np.stack([supporter.supports(reports, j) for j in range(k)], axis=1)
    elif not getattr(plain, "exclusive", False):
        raise _unsupported(mechanism)
    else:  # the k-ary design: each report supports the one value it names
        r = v.reports_array("reports", reports, categories=k)
        support = np.zeros((r.size, k))
        support[np.arange(r.size), r] = 1.0
    y = (support - q) / plain.slope
    return np.asarray(y, dtype=np.float64), (p, q, float(plain.slope), plain), n


def debiased_reports(mechanism: Any, reports: Any) -> FloatArray:
    """Each report de-biased by the design's inverse: ``(r - P0) / (P1 - P0)`` for a binary
    design (shape ``(n,)``; Kuk's design with ``m`` draws: ``(r / m - P0) / (P1 - P0)``
    for ``r`` red cards), ``(s_j - q_j) / (p_j - q_j)`` per value for the k-ary design and
    the frequency oracles (``(n, k)``).  Their weighted mean is the Hajek estimate;
    use them as the numerator or denominator of :func:`survey_ratio`.

    >>> from deniable.designs import Warner
    >>> debiased_reports(Warner(0.75), [1, 0]).tolist()
    [1.5, -0.5]
    """
    channel = _binary_channel(mechanism)
    if channel is not None:
        p1, p0, draws = channel
        r = v.reports_array("reports", reports, categories=draws + 1)
        return np.asarray((r / draws - p0) / (p1 - p0), dtype=np.float64)
    if getattr(mechanism, "n_groups", 1) != 1:
        raise DataError(
            f"a two-group design ({mechanism.name!r}) has no per-report de-biased value: its "
            "prevalence needs both groups' shares (use survey_estimate)."
        )
    return _frequency_parts(mechanism, reports)[0]


def _exact(design: Design, yes: int, n: int) -> tuple[tuple[int, int] | None, str]:
    """The exact counts where Clopper-Pearson is valid, else the reason it is not."""
    if isinstance(design, ReplicateDesign):
        return None, "a replicate-weights design (the sampling behind the replicates is not known)"
    if not design.equal_probability:
        return None, "the weights differ (an unequal-probability sample); see korn-graubard"
    if design.clustered:
        return None, "the sample is clustered (PSUs of several respondents); see korn-graubard"
    if design.n_strata > 1:
        return None, "the sample is stratified; see korn-graubard"
    return (yes, n), ""


def _deff(var: FloatArray, y: FloatArray, ind: FloatArray, est: FloatArray, w: FloatArray,
          n: int) -> FloatArray:  # fmt: skip
    """``var / (s_w^2 / n)``: against simple random sampling with replacement of ``n``."""
    wd = w * ind
    s2 = (wd @ (y - est) ** 2) / wd.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(var / (s2 / n), dtype=np.float64)


def survey_estimate(
    mechanism: Any, reports: Any, design: Design, *, domain: Any = None
) -> SurveyEstimate | SurveyFrequencies:
    """The design-based estimate of ``mechanism``'s reports under ``design`` (R's
    ``svymean`` and ``svytotal`` of the de-biased reports).

    A binary design gives a :class:`SurveyEstimate` of the prevalence (Hajek) with the
    Horvitz-Thompson total; the k-ary design and the frequency oracles a
    :class:`SurveyFrequencies`; a two-group design a :class:`SurveyEstimate` of the
    prevalence.  ``domain``: a boolean array selecting a subpopulation, whose variance is
    computed on the whole design (R's ``subset`` of a design, or ``svyby``).
    """
    design = _check_design(design)
    ind = _domain(design, domain)
    n_dom = int(ind.sum())
    channel = _binary_channel(mechanism)
    if channel is None and getattr(mechanism, "n_groups", 1) == 2:
        return _two_group(mechanism, reports, design, ind, n_dom)
    if channel is not None:
        y = debiased_reports(mechanism, reports).reshape(-1, 1)
        _check_rows("reports", y.shape[0], design)
    else:
        y, (p, q, slope, plain), n = _frequency_parts(mechanism, reports)
        _check_rows("reports", n, design)
    est, cov = ratio_estimate(design, y * ind[:, None], ind)
    tot, cov_t = total_estimate(design, y * ind[:, None])
    w = design.weights
    deff = _deff(np.diag(cov), y, ind, est, w, n_dom)
    population = float(w @ ind)
    if channel is not None:
        p1, p0, draws = channel
        share = float(est[0]) * (p1 - p0) + p0
        notes = _df_note(design.df)
        if draws == 1:
            r = np.rint(y[:, 0] * (p1 - p0) + p0)
            counts, reason = _exact(design, int(r @ ind), n_dom)
            lam: float | None = share
        else:  # Kuk's several draws: a count per respondent, no binomial interval
            counts, lam = None, None
            reason = f"Kuk's design with {draws} draws (a count of red cards per respondent)"
            notes = (f"weighted share of red cards: {share:.6g}", *notes)
        var = float(cov[0, 0])
        return SurveyEstimate(
            "prevalence", float(est[0]), math.sqrt(max(var, 0.0)), design.df, n_dom,
            design.variance_method, design.describe(), float(deff[0]), float(tot[0]),
            math.sqrt(max(float(cov_t[0, 0]), 0.0)), population,
            lam, p1, p0, counts, reason, notes,
        )  # fmt: skip
    support = y * slope + q
    counts_all, reason = _exact(design, 0, n_dom)
    exact = None if counts_all is None else np.rint(ind @ support).astype(np.int64)
    return SurveyFrequencies(
        est, cov, design.df, n_dom, design.variance_method, design.describe(), deff,
        est * slope + q, p, q, tot, np.sqrt(np.maximum(np.diag(cov_t), 0.0)), population,
        exact, reason, plain.mechanism.name,
    )  # fmt: skip


def _df_note(df: float) -> tuple[str, ...]:
    if df >= 1:
        return ()
    return (f"the design has {df:g} degrees of freedom: the t interval is not defined.",)


def _two_group(
    mechanism: Any, reports: Any, design: Design, ind: FloatArray, n_dom: int
) -> SurveyEstimate:
    r = v.reports_array("reports", reports, categories=4)
    _check_rows("reports", r.size, design)
    second = (r >= 2).astype(np.float64)
    groups = np.stack([1 - second, second], axis=1) * ind[:, None]
    yes = (r % 2).astype(np.float64)[:, None] * groups
    if not groups.any(axis=0).all():
        raise DataError(
            f"design {mechanism.name!r} needs reports from both groups (in the domain), got "
            "one group only."
        )
    lam, cov = ratio_estimate(design, yes, groups)
    c, m = mechanism.linear_system()
    a = np.linalg.inv(np.asarray(m, dtype=np.float64))[0]
    value = float(a @ (lam - np.asarray(c, dtype=np.float64)))
    var = float(a @ cov @ a)
    n_g = groups.sum(axis=0)
    srs = float(np.sum(a * a * lam * (1 - lam) / n_g))
    return SurveyEstimate(
        "prevalence", value, math.sqrt(max(var, 0.0)), design.df, n_dom,
        design.variance_method, design.describe(), var / srs if srs > 0 else math.nan,
        population=float(design.weights @ ind),
        exact_reason="a two-group design under a survey design (t and Wald intervals only)",
        notes=(
            f"weighted shares of yes reports: group 1 {lam[0]:.6g}, group 2 {lam[1]:.6g}",
            *_df_note(design.df),
        ),
    )  # fmt: skip


def survey_by(mechanism: Any, reports: Any, design: Design, by: Any) -> DomainEstimates:
    """:func:`survey_estimate` in each domain of ``by`` (one label per respondent), each
    on the full design (R's ``svyby(~y, ~by, design, svymean)``)."""
    design = _check_design(design)
    codes, labels = as_labels("by", by, design.n)
    out: dict[Any, SurveyEstimate | SurveyFrequencies] = {}
    for j, label in enumerate(labels.tolist()):
        out[label] = survey_estimate(mechanism, reports, design, domain=codes == j)
    return DomainEstimates(out)


def survey_ratio(
    numerator: Any, denominator: Any, design: Design, *, domain: Any = None
) -> SurveyEstimate:
    """The ratio of two weighted totals, ``sum w y / sum w x`` (R's ``svyratio``), with its
    linearized (Woodruff 1971) or replicate SE: ``y`` and ``x`` are per-respondent numbers
    (1-D), e.g. :func:`debiased_reports` of a randomized-response item over a plain
    variable, or the de-biased reports of two items."""
    design = _check_design(design)
    ind = _domain(design, domain)
    y = _numbers("numerator", numerator, design)
    x = _numbers("denominator", denominator, design)
    est, cov = ratio_estimate(design, y * ind, x * ind)
    w = design.weights * ind
    r = float(est[0])
    resid = y - r * x
    n_dom = int(ind.sum())
    srs = (w @ resid**2) / w.sum() / n_dom / ((w @ x) / w.sum()) ** 2
    var = float(cov[0, 0])
    return SurveyEstimate(
        "ratio", r, math.sqrt(max(var, 0.0)), design.df, n_dom, design.variance_method,
        design.describe(), var / srs if srs > 0 else math.nan, population=float(w.sum()),
        exact_reason="a ratio (t and Wald intervals only)", notes=_df_note(design.df),
    )  # fmt: skip


def _numbers(name: str, values: Any, design: Design) -> FloatArray:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.dtype.kind not in "biuf":
        raise DataError(f"`{name}` must be a 1-D array of numbers, got shape {arr.shape}.")
    _check_rows(name, arr.size, design)
    out = arr.astype(np.float64)
    if not np.isfinite(out).all():
        i = int(np.argmax(~np.isfinite(out)))
        raise DataError(f"`{name}` must be finite, got {float(out[i])!r} at row {i}.")
    return out
