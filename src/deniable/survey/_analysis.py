"""Survey data in pandas: estimate a prevalence from a column of randomized reports, overall
or per group, and read/write survey files (CSV, Parquet).

Needs the ``[data]`` extra (``pip install deniable[data]``: pandas, and pyarrow for
Parquet); importing this module does not, only calling it does.

Conventions
-----------
* A report column holds 0/1 reports ("yes" = 1): integers, floats equal to 0 or 1, or
  booleans (a pandas nullable ``Int64`` / ``boolean`` column too), and text by the same
  rules as a file (``"1"``, ``"0.0"``, ``"true"``; :mod:`deniable.survey`).  Text
  such as ``"yes"`` / ``"no"`` is rejected: map it first
  (``df[c].map({"yes": 1, "no": 0})``).  A design with ``m > 2`` report values reads the
  integers ``0..m-1`` (never booleans): a :class:`~deniable.designs.Categorical` design
  the reported category, Kuk's multi-draw design the count of red cards.
* **Categorical designs** estimate every category's share: the
  :class:`~deniable.designs.CategoricalEstimate` (unbiased shares, the MLE on the simplex,
  SEs) with each category as the binary design "report j or not" and its exact interval
  (:meth:`Analysis.estimates`); with ``by=`` one row per subgroup and category
  (:data:`CATEGORY_COLUMNS`).
* **Files** (:func:`~deniable.survey.analyze_file`, :func:`read_reports`): CSV with a
  header row (never guessed; duplicate column names are an error; a blank line is a row
  of missing values) or Parquet, read in batches; the rules are in docs/analysis.md,
  "The file rules".
* **Missing values** (NaN, ``None``, ``pd.NA``, empty or ``NA``-like text; also a missing
  group label with ``by=``):
  ``missing="drop"`` (the default) leaves those rows out and reports how many
  (:attr:`Analysis.missing`, the ``missing`` column of a grouped result);
  ``missing="error"`` raises :class:`~deniable.exceptions.DataError` instead.  Dropping
  assumes the missing reports are missing at random; a respondent who refuses to answer is
  not a "no".
* The estimator is the design's (:meth:`~deniable.BinaryDesign.estimate`): the unbiased
  moment estimate, the bounded MLE, both SE conventions (plug-in with ``n`` printed by
  default, unbiased with ``n - 1``) and the exact (Clopper-Pearson, mapped) interval.
* **Two-group designs** (:data:`~deniable.designs.TWO_GROUP_DESIGNS`) need ``group=``: the
  column holding each respondent's randomization group, 1 or 2 (integers, or floats equal
  to 1 or 2).  Every estimated parameter (e.g. the SLD's ``prevalence`` and ``honesty``)
  gets the delta-method SEs and a Wald interval (:class:`~deniable.designs.TwoGroupEstimate`); a
  row whose group is missing is left out like a missing report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from deniable.common import to_jsonable
from deniable.common import validation as v
from deniable.designs import (
    CategoricalEstimate,
    Design,
    DesignEstimate,
    Tally,
    TwoGroupEstimate,
)
from deniable.exceptions import DataError
from deniable.results import ConfidenceInterval, Estimate, Result, Table
from deniable.sampling import SurveyEstimate, SurveyFrequencies
from deniable.survey._columns import check_columns, check_design, column_series
from deniable.survey._compare import DesignSummary, comparison_rows, with_design_by
from deniable.survey._grouped import (
    _grouped,
    _reports,
)
from deniable.survey._questions import Plan, frame_batches, run
from deniable.survey._readers import check_frame
from deniable.survey._sample import SampleArg, Spec, build_sample, sample_spec, with_design
from deniable.survey._values import report_rule

__all__ = [
    "Analysis",
    "analyze",
    "grouped",
]


@dataclass(frozen=True)
class Analysis(Result):
    """The estimate from one column of reports (see :func:`analyze`).

    Attributes
    ----------
    column : the analysed column.
    design : the design the reports were randomized with.
    estimate : the :class:`~deniable.Estimate` (moment value, bounded MLE, both SEs,
        intervals); for a two-group design the :class:`~deniable.designs.TwoGroupEstimate`
        (one Estimate per parameter); for a categorical design the
        :class:`~deniable.designs.CategoricalEstimate` (one share per category).
    missing : rows left out because the report (or, two-group designs, the group) was
        missing (``missing="drop"``).
    level : confidence level of :attr:`ci` and the printed table.
    group : the column of randomization groups (two-group designs; else ``None``).
    tally : the counts of the reports used.
    file : the file the reports were read from (:func:`~deniable.survey.analyze_file`; else
        ``None``).
    design_based : the design-based estimate under the sample's design
        (:func:`deniable.sampling.survey_estimate` of the same reports: a
        :class:`~deniable.sampling.SurveyEstimate`, or for a categorical design a
        :class:`~deniable.sampling.SurveyFrequencies`), when a sample design was given;
        else ``None``.
    """

    column: Any
    design: Design
    estimate: Estimate | TwoGroupEstimate | CategoricalEstimate
    missing: int
    level: float
    group: Any = None
    tally: Tally | None = field(default=None, compare=False)
    file: str | None = None
    design_based: SurveyEstimate | SurveyFrequencies | None = field(default=None, compare=False)

    @property
    def categorical(self) -> bool:
        """True for a categorical design (one estimate per category)."""
        return isinstance(self.estimate, CategoricalEstimate)

    @property
    def n(self) -> int:
        """Reports used (missing ones excluded; both groups together)."""
        e: Any = self.estimate
        return int(e.tally.n) if self.design.n_groups == 2 else int(e.n)

    @property
    def interval(self) -> str:
        """The interval method of :attr:`ci` and of reports: ``exact`` (one-group designs) or
        ``wald`` (the delta-method interval of every two-group parameter, and of Kuk's
        multi-draw design, whose report is a count)."""
        if self.design.n_groups == 2:
            return "wald"
        return _method(next(iter(self.estimates().values())))

    def estimates(self) -> dict[str, Estimate]:
        """Every estimated parameter by name (``{"prevalence": ...}`` for one group;
        ``{"share of 0": ..., "share of 1": ...}`` for a categorical design: category ``j``
        as the binary design "report j or not")."""
        e: Any = self.estimate
        if isinstance(e, CategoricalEstimate):
            cats = [e.category(j) for j in range(e.design.k)]
            return {c.parameter: c for c in cats}
        return dict(e.estimates) if self.design.n_groups == 2 else {e.parameter: e}

    @property
    def ci(self) -> ConfidenceInterval:
        """The prevalence interval at :attr:`level` (method :attr:`interval`).  A
        categorical design has one interval per category: ``estimates()[...].ci(...)`` or
        ``estimate.ci(level)``; asking it for one raises
        :class:`~deniable.exceptions.DataError`."""
        if self.categorical:
            raise DataError(
                f"`ci`: design {self.design.name!r} estimates {self.design.n_truths} shares, "
                "one interval each: use estimates()['share of j'].ci(level) or "
                "estimate.ci(level)."
            )
        return self.estimates()["prevalence"].ci(self.level, self.interval)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict: the estimate's fields plus column, design, missing and epsilon
        (a question of :meth:`SurveyReport.to_dict`; :meth:`summary` gives the fields of
        ``deniable analyze --json``)."""
        out: dict[str, Any] = {
            "column": str(self.column),
            "design": self.design.name,
            "parameters": self.design.parameters(),
            "epsilon": self.design.epsilon,
            "missing": self.missing,
        }
        body = self.estimate.to_dict(self.level)
        if self.design.n_groups == 2:
            for key in ("design", "parameters", "epsilon", "yes", "n", "lambda_hat", "n_total"):
                body.pop(key)
            out.update(group=str(self.group), n=self.n, interval="wald", **body)
        else:
            out.update(body)
        if self.design_based is not None:
            out["design_based"] = self.design_based.to_dict(self.level)
            out["comparison"] = comparison_rows(self)
        result: dict[str, Any] = to_jsonable(out)
        return result

    def summary(self) -> DesignEstimate | DesignSummary:
        """The estimate beside the design and the data (file, column, missing reports): what
        ``deniable analyze`` prints; under a sample design also the design-based estimate
        beside the unweighted one (a :class:`DesignSummary`)."""
        source: dict[str, Any] = {} if self.file is None else {"file": self.file}
        source["column"] = self.column
        if self.design.n_groups == 2:
            source["group_column"] = self.group
        tally = self.tally
        if tally is None:  # built by hand: the counts from the estimate
            e: Any = self.estimate
            tally = e.tally if self.design.n_groups == 2 or self.categorical else Tally.binary(
                round((e.lambda_hat or 0.0) * e.n), e.n)  # fmt: skip
        plain = DesignEstimate(self.design, tally, self.estimate, self.level, self.missing, source)
        return plain if self.design_based is None else DesignSummary(self, plain)

    def table(self) -> Table:
        """The estimate for people (:meth:`summary`), ε printed as ∞ when infinite."""
        return self.summary().table()


@overload
def analyze(
    df: Any,
    column: Any,
    design: Design,
    *,
    group: Any = None,
    by: None = None,
    level: float = 0.95,
    missing: str = "drop",
    sample_design: Any = None,
    weights: Any = None,
    strata: Any = None,
    psu: Any = None,
    fpc: Any = None,
    replicate_weights: Any = None,
) -> Analysis: ...


@overload
def analyze(
    df: Any,
    column: Any,
    design: Design,
    *,
    group: Any = None,
    by: Any,
    level: float = 0.95,
    missing: str = "drop",
    sample_design: Any = None,
    weights: Any = None,
    strata: Any = None,
    psu: Any = None,
    fpc: Any = None,
    replicate_weights: Any = None,
) -> Any: ...


def analyze(
    df: Any,
    column: Any,
    design: Design,
    *,
    group: Any = None,
    by: Any = None,
    level: float = 0.95,
    missing: str = "drop",
    sample_design: Any = None,
    weights: Any = None,
    strata: Any = None,
    psu: Any = None,
    fpc: Any = None,
    replicate_weights: Any = None,
) -> Analysis | Any:
    """Estimate the prevalence from the 0/1 reports in ``df[column]``.

    The estimate is ``design.estimate`` on the column's reports: the unbiased moment
    estimate ``(lambda_hat - P0) / (P1 - P0)`` with ``lambda_hat`` the share of "yes"
    reports (Warner 1965), the bounded MLE, both SE conventions and intervals.  With
    ``by=COLUMN`` the same per group: a DataFrame (see :func:`grouped`).

    A two-group design (``unrelated-unknown``, ``cdm``, ``cdm-symmetric``, ``sld``) needs
    ``group=COLUMN``, each respondent's randomization group (1 or 2): the result holds a
    :class:`~deniable.designs.TwoGroupEstimate` with every parameter (for the stochastic lie
    detector the prevalence and the carriers' honesty; Moshagen et al. 2012).

    :func:`~deniable.survey.analyze_file` does the same on a CSV or Parquet file, reading it
    in batches.

    Parameters
    ----------
    df : a pandas DataFrame, one row per respondent.
    column : the column of reports (0/1, booleans; see the module docstring).
    design : the design the reports were randomized with (two report values).
    group : the column of randomization groups, for a two-group design only.
    by : optional grouping column (subgroups such as regions).
    level : confidence level of the intervals.
    missing : ``"drop"`` (default: leave missing reports out and count them) or ``"error"``.
    sample_design : the sample's design (weights, strata, PSUs, fpc, or replicate weights):
        a :class:`~deniable.sampling.SampleDesign` or
        :class:`~deniable.sampling.ReplicateDesign` with one respondent per row of ``df``,
        or a :class:`DesignColumns` naming columns of ``df``.  The result then also holds
        the design-based estimate (:attr:`Analysis.design_based`), printed beside the
        unweighted one.  Rows whose report is missing are a domain of the full design (R's
        ``na.rm = TRUE``).  With ``by``, each group's design-based estimate is a domain of
        the full design (see :func:`grouped`).
    weights, strata, psu, fpc, replicate_weights : shortcuts for
        ``sample_design=DesignColumns(weights=..., ...)`` (column names; ``fpc``: each
        stratum's population count of PSUs; ``replicate_weights``: a list of columns or a
        pattern such as ``"rw*"``, with the JK1 method).

    Raises
    ------
    DataError
        ``column`` (or ``by``, ``group``) is not a column (the message lists the columns); a
        value is not 0/1 (or a group not 1/2; the first one is named with its row and the
        offending values are counted); no report is left; a two-group design without
        ``group``; a missing value with ``missing="error"``.

    Examples
    --------
    >>> import pandas as pd
    >>> from deniable import TwoCoin
    >>> df = pd.DataFrame({"q": [1, 0, 0, 1, None, 1, 0, 0], "g": list("aabbabab")})
    >>> res = analyze(df, "q", TwoCoin())
    >>> res.n, res.missing, round(res.estimate.value, 4)       # (3/7 - 1/4) / (1/2)
    (7, 1, 0.3571)
    >>> analyze(df, "q", TwoCoin(), by="g")[["group", "n", "yes", "missing"]]
      group  n  yes  missing
    0     a  3    1        1
    1     b  4    2        0
    """
    parts = {"weights": weights, "strata": strata, "psu": psu, "fpc": fpc,
             "replicate_weights": replicate_weights}  # fmt: skip
    spec = sample_spec(sample_design, parts)
    if by is not None:
        return grouped(df, column, design, by, group=group, level=level, missing=missing,
                       sample_design=spec)  # fmt: skip
    check_frame(df)
    d, lvl = _check(design, column, group, None, level, missing)
    return frame_analyses(df, [(column, d, group, lvl)], spec, missing)[0][0]


def frame_analyses(
    df: Any, questions: Sequence[tuple[Any, Design, Any, float]], spec: Spec | None, missing: str
) -> tuple[list[Analysis], SampleArg | None]:
    """The :class:`Analysis` of every question ``(column, design, group column, level)``
    (validated by :func:`_check`) of the DataFrame ``df``, read in one pass, and the sample
    built from ``spec`` (after the columns are checked): under it each analysis is also
    design-based."""
    for column, _, group, _ in questions:
        for what, name in (("column", column), ("group", group)):
            if name is not None:
                column_series(df, name, what)
    sample = None if spec is None else build_sample(df, spec)
    plans = [_plan(d, c, g, None, lambda r: f"row {r!r}") for c, d, g, _ in questions]
    run(plans, frame_batches(df, [c for p in plans for c in p.columns()]), missing)
    out = [_analysis(p, d, lvl) for p, (_, d, _, lvl) in zip(plans, questions, strict=True)]
    if sample is not None:
        out = [with_design(r, df, p, sample) for r, p in zip(out, plans, strict=True)]
    return out, sample


def grouped(
    df: Any,
    column: Any,
    design: Design,
    by: Any,
    *,
    group: Any = None,
    level: float = 0.95,
    missing: str = "drop",
    sample_design: Any = None,
) -> Any:
    """Estimate the prevalence in each group of ``df[by]``: a DataFrame, one row per group.

    Columns (:data:`GROUPED_COLUMNS`): ``group`` (the label, sorted), ``n`` (reports used),
    ``yes``, ``missing`` (reports dropped in the group), ``estimate`` (unbiased moment),
    ``bounded`` (MLE in [0, 1]), ``se`` (plug-in, ``n``), ``se_unbiased`` (``n - 1``),
    ``ci_lower`` / ``ci_upper`` (exact interval at ``level``), ``epsilon`` (``inf`` for a
    design with a deterministic path).  Rows whose group label is missing are dropped with
    ``missing="drop"`` (counted in ``result.attrs["missing_group"]``).  Every row equals
    :func:`analyze` on that group's rows.

    A two-group design (with ``group=``, the randomization-group column) gives one row per
    label and estimated parameter (:data:`TWO_GROUP_COLUMNS`: ``n1``, ``n2``, ``yes1``,
    ``yes2`` per randomization group; Wald intervals; NaN where a randomization group has
    no reports in that subgroup).

    ``sample_design`` (as in :func:`analyze`) adds the columns ``design_estimate``,
    ``design_se``, ``design_df``, ``design_deff``, ``design_ci_lower`` and
    ``design_ci_upper``: each group's design-based estimate as a domain of the full design
    (R's ``svyby``), NaN where a group has none.
    """
    check_frame(df)
    d, lvl = _check(design, column, group, by, level, missing)
    for what, name in (("column", column), ("by", by), ("group", group)):
        if name is not None:
            column_series(df, name, what)
    spec = sample_spec(sample_design, {})
    sample = None if spec is None else build_sample(df, spec)
    plan = _plan(d, column, group, by, lambda r: f"row {r!r}")
    run([plan], frame_batches(df, plan.columns()), missing)
    out = _grouped(plan, d, lvl, text=False)
    return out if sample is None else with_design_by(out, df, plan, d, sample, text=False)


def _check(
    design: Design, column: Any, group: Any, by: Any, level: float, missing: str
) -> tuple[Design, float]:
    d = check_design(design)
    lvl = v.level(level)
    v.choice("missing", missing, ("drop", "error"))
    check_columns(d, column, group, by)
    return d, lvl


def _method(estimate: Estimate) -> str:
    """``exact`` when the estimate has it, else ``wald``."""
    return "exact" if "exact" in estimate.interval_methods else "wald"


def _plan(d: Design, column: Any, group: Any, by: Any, place: Any) -> Plan:
    m = _reports(d)
    return Plan(column, report_rule(m, d.name), m, place, group=group, by=by)


def _analysis(plan: Plan, d: Design, lvl: float, file: str | None = None) -> Analysis:
    """The :class:`Analysis` of a question's counts (every label together)."""
    # one group: the count of each report value; two: (no, yes) of each randomization group
    # (not the row of missing groups), as the design's report is 2 (group - 1) + answer
    counts = plan.counts.total()[: d.n_groups, : _reports(d)].ravel()
    rows = plan.counts.rows
    kept = int(counts.sum())
    if kept == 0:
        raise DataError(f"`column` {plan.column!r} holds no reports (all {rows} rows are missing).")
    tally = d.tally_counts(counts)
    est = d.estimate(tally)
    return Analysis(plan.column, d, est, rows - kept, lvl, plan.group, tally, file)
