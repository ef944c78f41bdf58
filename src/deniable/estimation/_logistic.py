"""Logistic regression with a randomized-response outcome: ``logistic_rr``.

The true answer follows a logistic model, ``P(T = 1 | x) = expit(x' beta)``; the analyst sees
only the randomized report ``y``, with

    P(y = 1 | x) = c expit(x' beta) + d,     c = P(yes | 1) - P(yes | 0),  d = P(yes | 0),

from any one-group binary design.  ``beta`` is estimated by maximum likelihood (EM start,
then Newton; see ``deniable.estimation`` for the derivatives), with
standard errors from the observed information, the expected information or the outer product
of the scores.

A direct-questioning group can be analysed beside the randomized one: a 0/1 column marks the
respondents asked directly, whose channel is ``c = 1, d = 0``.  The fit then tests whether
randomization changed the answers: it compares the model with and without a shift ``delta``
of the logit in the direct group,

    P(T = 1 | x, direct) = expit(x' beta + delta * direct),

by a likelihood-ratio test of ``delta = 0``.  ``delta < 0`` means fewer admissions when asked
directly than the randomized answers imply (the usual sign of evasive answering).

References
----------
G. S. Maddala (1983), Limited-Dependent and Qualitative Variables in Econometrics, CUP.
P. G. M. van der Heijden & G. van Gils (1996), Some logistic regression models for randomized
response data, Proc. 11th Int. Workshop on Statistical Modelling, 341-348.
D. W. Heck & M. Moshagen (2018), RRreg: an R package for correlation and regression analyses
of randomized response data, J. Stat. Software 85(2) (``RRlog``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from deniable.common import validation as v
from deniable.designs import BinaryDesign, TwoGroupDesign
from deniable.estimation._regression_data import (
    Array,
    as_frame,
    binary_values,
    check_design,
    check_se,
    fit_fields,
    model_data,
    require_data_extras,
)
from deniable.estimation._regression_design import (
    Problem,
    check_bread,
    check_sample_design,
    design_covariances,
    fit_weights,
)
from deniable.estimation._regression_direct import DirectTest, direct_test
from deniable.estimation._regression_links import check_link
from deniable.estimation._regression_logistic_result import LogisticRRResult
from deniable.estimation._regression_logit import LogitFit, fit_logit, logit_information
from deniable.estimation._regression_results import FitData
from deniable.estimation._regression_stats import SE_TYPES, invert_information
from deniable.estimation._regression_twogroup import TwoGroupRRResult, fit_twogroup
from deniable.estimation._rr_predictors import fit_rr_predictors
from deniable.exceptions import ParameterError

__all__ = ["DirectTest", "LogisticRRResult", "logistic_rr"]  # the results: re-exported


def _channel(design: BinaryDesign, direct: Array | None, n: int) -> tuple[Array, Array]:
    p1 = np.full(n, design.p_yes_given_1)
    p0 = np.full(n, design.p_yes_given_0)
    if direct is not None:
        p1[direct == 1] = 1.0
        p0[direct == 1] = 0.0
    return p1, p0


def logistic_rr(
    formula: str,
    data: Any,
    design: BinaryDesign | TwoGroupDesign,
    *,
    direct: str | None = None,
    se: str | None = None,
    tol: float = 1e-10,
    max_iter: int = 100,
    link: str = "logit",
    sample_design: Any = None,
    bread: str | None = None,
    group: str | None = None,
    rr_predictors: Mapping[str, Any] | None = None,
) -> Any:
    """Logistic (or probit, complementary log-log) regression of a randomized binary outcome
    on covariates, under simple random sampling or a survey design.

    Parameters
    ----------
    formula : ``"y ~ x1 + x2"`` (formulaic syntax: ``C(g)`` for categories, ``x1:x2``
        interactions, ``0 +`` to drop the intercept, ``I(x**2)``, ``log(x)``, ``poly(x, 2)``
        ...); ``y`` is the column of 0/1 reports.  A formula is data, not code: anything
        outside the documented formula language (attribute access, other calls, dunder
        names, string literals) raises a ``ParameterError`` before it is evaluated.
    data : a pandas DataFrame (rows with a missing value in a used column are dropped).
    design : the one-group binary design that randomized the reports, or a two-group
        design (with ``group``).
    direct : a 0/1 column marking respondents asked directly (channel ``P1 = 1, P0 = 0``);
        the result then carries ``direct_test``, the test of whether randomization changed
        the answers (see the module docstring).
    se : ``"observed"`` (default), ``"expected"`` or ``"opg"``; all three are computed and
        :meth:`RegressionResult.with_se` switches between them.  Model-based, for simple
        random sampling: not with ``sample_design``.
    tol : convergence tolerance on the Newton decrement (log-likelihood units; with
        weights, of the pseudo-log-likelihood with the weights scaled to mean 1).
    max_iter : maximum number of Newton iterations.
    link : the link of the prevalence model, ``P(T = 1 | x) = F(x' beta)``: ``"logit"``
        (default), ``"probit"`` or ``"cloglog"`` (complementary log-log).
    sample_design : the sample's survey design, one respondent per row of ``data`` in the
        same order: a :class:`~deniable.sampling.SampleDesign` (weights, strata, PSUs, fpc)
        or a :class:`~deniable.sampling.ReplicateDesign`.  ``beta`` then maximizes the
        weighted pseudo-log-likelihood ``sum_i w_i l_i`` and the covariance is
        design-based: the linearized sandwich (Binder 1983) for a ``SampleDesign``, refits
        with each column of replicate weights for a ``ReplicateDesign``; intervals and
        p-values use Student's t with ``design df + 1 - k`` degrees of freedom (R's
        ``svyglm``).  Rows dropped for missing values stay in the design with a zero score
        (a domain).  Default ``None``: simple random sampling.
    group : with a two-group design (``UnrelatedUnknown``, ``StochasticLieDetector``,
        ``CheaterDetection``, ``SymmetricCheaterDetection``): the column of each
        respondent's group, 1 or 2.  The prevalence follows the regression and the
        design's second parameter (unrelated prevalence, honesty, cheating) is a constant
        estimated with it (RRreg's ``RRlog``); the result is a ``TwoGroupRRResult``.
    rr_predictors : randomized-response items as predictors, ``{column: design}`` (binary
        or categorical one-group designs; the column holds the reports ``0 .. k-1``).  Each
        enters through its latent true answer, dummy-coded against category 0 (terms
        ``column[c]``); the likelihood sums over the latent answers, whose joint
        distribution is estimated with the coefficients (``_rr_predictors``); the result
        is an ``RRPredictorResult``.  Leave these columns out of the formula.
    bread : the bread of the sandwich under a ``SampleDesign``: ``"observed"`` (default;
        the derivative of the weighted score equations, which the linearization calls for
        and the delete-one-PSU jackknife reproduces, and which stays right when the
        randomized-response model is misspecified) or ``"expected"`` (the expected
        information, as R's ``svyglm``); both are computed and
        :meth:`RegressionResult.with_se` switches between them.

    Notes
    -----
    A ``RuntimeWarning`` is issued (and the note kept in ``notes``) when the iterations do
    not converge or the MLE lies on the boundary (a fitted prevalence within 1e-11 of 0 or
    1: no finite MLE, e.g. fewer yes reports than ``P0`` implies).

    The model is ``P(y = 1 | x) = (P1 - P0) F(x' beta) + P0`` (Maddala 1983; Heck &
    Moshagen 2018, RRreg's ``RRlog``), ``F = expit`` for the logit link.  Under a survey
    design the direct-questioning likelihood-ratio test is not available (no likelihood):
    put the ``direct`` column in the formula and read its design-based t test instead.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from deniable import ForcedResponse, logistic_rr
    >>> rng = np.random.default_rng(1)
    >>> design = ForcedResponse(1/6, 1/6)
    >>> x = rng.normal(size=4000)
    >>> truth = rng.random(4000) < 1 / (1 + np.exp(-(-1 + 0.8 * x)))
    >>> df = pd.DataFrame({"y": design.randomize(truth, rng=rng), "x": x})
    >>> fit = logistic_rr("y ~ x", df, design)
    >>> fit.params.round(2).to_dict()
    {'Intercept': -0.98, 'x': 0.68}
    >>> bool(abs(fit.params["x"] - 0.8) < 4 * fit.bse["x"])
    True
    """
    link = check_link(link)
    tol = v.positive("tol", tol)
    max_iter = v.integer("max_iter", max_iter, minimum=1)
    if isinstance(design, TwoGroupDesign) or group is not None:
        return _two_group(formula, data, design, group, direct, sample_design, bread, se,
                          tol, max_iter, link)  # fmt: skip
    d = check_design(design)
    if rr_predictors is not None:
        for name, value in (("direct", direct), ("sample_design", sample_design),
                            ("bread", bread)):  # fmt: skip
            if value is not None:
                raise ParameterError(
                    f"`{name}` is not available with `rr_predictors` yet, got {name}={value!r}."
                )
        return fit_rr_predictors(formula, data, d, rr_predictors, se=se, tol=tol,
                                 max_iter=max_iter, link=link)  # fmt: skip
    if sample_design is not None and se is not None:
        raise ParameterError(
            f"`se` chooses a model-based standard error, for simple random sampling; with a "
            f"`sample_design` the covariance is design-based (choose its `bread`), got "
            f"se={se!r}."
        )
    se = check_se("observed" if se is None else se, tuple(SE_TYPES))
    extras = {} if direct is None else {"direct": direct}
    frame, labels = data, None
    if sample_design is not None:
        bread = check_bread(bread, check_sample_design(sample_design, _rows(data)))
        frame, labels = _positional(data)
    else:
        check_bread(bread, None)
    md = model_data(formula, frame, outcome="binary", extras=extras)
    ind = None
    if direct is not None:
        ind = binary_values(direct, md.extras[direct], what="the direct-questioning column")
    p1, p0 = _channel(d, ind, md.y.size)
    weights = None
    if sample_design is not None:
        rows = np.asarray(md.index, dtype=np.intp)
        weights, _ = fit_weights(sample_design, rows)
    fit = fit_logit(md.X, md.y, p1, p0, tol=tol, max_iter=max_iter, link=link, weights=weights)
    notes = _fit_notes(fit, tol, max_iter)
    sampling = None
    if sample_design is None:
        info = logit_information(md.X, md.y, p1, p0, fit.beta, link=link)
        covs = {k: invert_information(m) for k, m in info.items()}
    else:
        assert weights is not None
        problem = Problem(rows, md.X, md.y, p1, p0, link)
        covs, sampling = design_covariances(
            sample_design, problem, fit.beta, weights, tol=tol, max_iter=max_iter
        )
        se = bread if bread is not None else "replicate"
        if sampling.failed:
            notes.append(
                f"{sampling.failed} of the replicate refits did not reach the tolerance "
                f"{tol:g} in {max_iter} steps; their last iterates are in the variance."
            )
        if sampling.df < 1:
            notes.append(
                f"the design has {sampling.df + len(md.terms) - 1} degrees of freedom for "
                f"{len(md.terms)} coefficients: too few for t intervals (they are NaN)."
            )
    for note in notes:
        warnings.warn(note, RuntimeWarning, stacklevel=2)
    test = None
    if ind is not None:
        assert direct is not None
        if sample_design is not None:
            notes.append(
                "No likelihood-ratio test of direct questioning under a sample design: add "
                f"{direct!r} to the formula for its design-based t test."
            )
        elif 0 < ind.sum() < ind.size:
            test = direct_test(
                direct, ind, md.X, md.y, p1, p0, fit.llf, fit.beta, se, tol, max_iter, link
            )
        else:
            group = "direct" if ind.sum() else "randomized"
            notes.append(f"Every respondent is in the {group} group: no test of the groups.")
    return LogisticRRResult(
        model="logistic-rr" if link == "logit" else f"{link}-rr",
        formula=formula,
        outcome=md.outcome,
        terms=md.terms,
        theta=fit.beta,
        covariances=covs,
        **fit_fields(md, fit, d, se, tol, notes),
        data=FitData(md.y, md.X, p1, p0),
        direct=direct,
        direct_test=test,
        spec=md.spec,
        index=md.index if labels is None else labels[np.asarray(md.index, dtype=np.intp)],
        link=link,
        sampling=sampling,
    )


def _fit_notes(fit: LogitFit, tol: float, max_iter: int) -> list[str]:
    notes: list[str] = []
    if not fit.converged:
        notes.append(f"Newton iterations did not reach the tolerance {tol:g} in {max_iter} steps.")
    if fit.boundary:
        notes.append(
            "Some fitted prevalences are within 1e-11 of 0 or 1: the MLE is on the boundary "
            "or does not exist (e.g. fewer yes reports than P(yes|0) implies); the SEs of "
            "the coefficients concerned are meaningless."
        )
    return notes


def _rows(data: Any) -> int:
    """The number of rows of ``data`` (a DataFrame or a mapping of columns)."""
    pd = require_data_extras()[0]
    if isinstance(data, pd.DataFrame):
        return len(data)
    return len(_positional(data)[0])


def _positional(data: Any) -> tuple[Any, Any]:
    """``data`` with row labels ``0..n-1`` (positions into the sample design), and its
    original labels."""
    frame = as_frame(require_data_extras()[0], data)
    return frame.reset_index(drop=True), frame.index


def _two_group(
    formula: str,
    data: Any,
    design: Any,
    group: str | None,
    direct: str | None,
    sample_design: Any,
    bread: str | None,
    se: str | None,
    tol: float,
    max_iter: int,
    link: str,
) -> TwoGroupRRResult:
    """``logistic_rr`` with a two-group design (``_regression_twogroup``)."""
    if not isinstance(design, TwoGroupDesign):
        raise ParameterError(
            f"`group` applies to a two-group design, got group={group!r} with "
            f"{type(design).__name__}."
        )
    if group is None:
        raise ParameterError(
            f"`group` must name the column of each respondent's group (1 or 2) for the "
            f"two-group design {design.name!r}, got None."
        )
    for name, value in (("direct", direct), ("sample_design", sample_design), ("bread", bread)):
        if value is not None:
            raise ParameterError(
                f"`{name}` is not available with a two-group design yet, got {name}={value!r}."
            )
    se = check_se("observed" if se is None else se, tuple(SE_TYPES))
    return fit_twogroup(formula, data, design, group=group, se=se, tol=tol,
                        max_iter=max_iter, link=link)  # fmt: skip
