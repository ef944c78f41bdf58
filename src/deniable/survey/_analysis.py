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
  (``df[c].map({"yes": 1, "no": 0})``).
* **Files** (:func:`analyze_file`, :func:`read_reports`): CSV with a header row (never
  guessed; duplicate column names are an error; a blank line is a row of missing values)
  or Parquet, read in batches; the rules are in docs/analysis.md, "The file rules".
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

import math
import os
from dataclasses import dataclass, field
from typing import Any, cast, overload

from deniable.common import _validation as v
from deniable.common._format import (
    epsilon_note,
    format_interval,
    format_number,
    format_parameters,
)
from deniable.common._json import to_jsonable
from deniable.designs import (
    BinaryDesign,
    Design,
    DesignEstimate,
    Tally,
    TwoGroupDesign,
    TwoGroupEstimate,
)
from deniable.exceptions import DataError
from deniable.results import ConfidenceInterval, Estimate, Result, Table
from deniable.survey._columns import check_columns, check_design, column_series
from deniable.survey._files import Progress, SurveyFile
from deniable.survey._questions import Plan, file_batches, frame_batches, label_order, run
from deniable.survey._readers import check_frame, read_reports, require_pandas, write_reports
from deniable.survey._values import report_rule

__all__ = [
    "GROUPED_COLUMNS",
    "TWO_GROUP_COLUMNS",
    "Analysis",
    "GroupedAnalysis",
    "analyze",
    "analyze_file",
    "grouped",
    "read_reports",
    "require_pandas",
    "write_reports",
]

#: Columns of the DataFrame returned by :func:`grouped` (``analyze(..., by=...)``).
GROUPED_COLUMNS = (
    "group",
    "n",
    "yes",
    "missing",
    "estimate",
    "bounded",
    "se",
    "se_unbiased",
    "ci_lower",
    "ci_upper",
    "epsilon",
)

#: Columns of :func:`grouped` for a two-group design: one row per (group, parameter).
TWO_GROUP_COLUMNS = (
    "group",
    "parameter",
    "n",
    "n1",
    "n2",
    "yes1",
    "yes2",
    "missing",
    "estimate",
    "bounded",
    "se",
    "se_unbiased",
    "ci_lower",
    "ci_upper",
    "epsilon",
)


@dataclass(frozen=True)
class Analysis(Result):
    """The estimate from one column of reports (see :func:`analyze`).

    Attributes
    ----------
    column : the analysed column.
    design : the design the reports were randomized with.
    estimate : the :class:`~deniable.Estimate` (moment value, bounded MLE, both SEs,
        intervals), or for a two-group design the :class:`~deniable.designs.TwoGroupEstimate` (one
        Estimate per parameter).
    missing : rows left out because the report (or, two-group designs, the group) was
        missing (``missing="drop"``).
    level : confidence level of :attr:`ci` and the printed table.
    group : the column of randomization groups (two-group designs; else ``None``).
    tally : the counts of the reports used.
    file : the file the reports were read from (:func:`analyze_file`; else ``None``).
    """

    column: Any
    design: BinaryDesign | TwoGroupDesign
    estimate: Estimate | TwoGroupEstimate
    missing: int
    level: float
    group: Any = None
    tally: Tally | None = field(default=None, compare=False)
    file: str | None = None

    @property
    def n(self) -> int:
        """Reports used (missing ones excluded; both groups together)."""
        e: Any = self.estimate
        return int(e.tally.n) if self.design.n_groups == 2 else int(e.n)

    @property
    def interval(self) -> str:
        """The interval method of :attr:`ci` and of reports: ``exact`` (one-group designs) or
        ``wald`` (the delta-method interval of every two-group parameter)."""
        return "wald" if self.design.n_groups == 2 else "exact"

    def estimates(self) -> dict[str, Estimate]:
        """Every estimated parameter by name (``{"prevalence": ...}`` for one group)."""
        e: Any = self.estimate
        return dict(e.estimates) if self.design.n_groups == 2 else {e.parameter: e}

    @property
    def ci(self) -> ConfidenceInterval:
        """The prevalence interval at :attr:`level` (method :attr:`interval`)."""
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
        result: dict[str, Any] = to_jsonable(out)
        return result

    def summary(self) -> DesignEstimate:
        """The estimate beside the design and the data (file, column, missing reports): what
        ``deniable analyze`` prints."""
        source: dict[str, Any] = {} if self.file is None else {"file": self.file}
        source["column"] = self.column
        if self.design.n_groups == 2:
            source["group_column"] = self.group
        tally = self.tally
        if tally is None:  # built by hand: the counts from the estimate
            e: Any = self.estimate
            tally = e.tally if self.design.n_groups == 2 else Tally.binary(
                round((e.lambda_hat or 0.0) * e.n), e.n)  # fmt: skip
        return DesignEstimate(self.design, tally, self.estimate, self.level, self.missing, source)

    def table(self) -> Table:
        """The estimate for people (:meth:`summary`), ε printed as ∞ when infinite."""
        return self.summary().table()


@dataclass(frozen=True)
class GroupedAnalysis(Result):
    """The per-group estimates of :func:`grouped` (``analyze(..., by=...)``) as a result
    that prints: ``frame`` is the DataFrame :func:`grouped` returns.

    ``file`` (optional) is the file the reports were read from.  A subgroup without reports
    (or, two-group designs, without reports in one randomization group) has no estimate:
    NaN in the frame, ``null`` in :meth:`to_dict`.
    """

    frame: Any = field(compare=False)
    design: Design
    file: str | None = None

    def to_frame(self) -> Any:
        """The per-group DataFrame."""
        return self.frame

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict: the question (``file``, ``column``, ``by``, design, ``level``,
        ``interval``, ``missing_group``) and ``groups``, one dict per row of the frame
        (without ``epsilon``, given once)."""
        two = self.design.n_groups == 2
        attrs = self.frame.attrs
        d = self.design
        groups = []
        for row in self.frame.to_dict(orient="records"):
            row.pop("epsilon")
            groups.append({k: (None if isinstance(x, float) and math.isnan(x) else x)
                           for k, x in row.items()})  # fmt: skip
        out: dict[str, Any] = {} if self.file is None else {"file": self.file}
        out.update(
            column=attrs["column"], by=attrs["by"], design=d.name, parameters=d.parameters(),
            epsilon=d.epsilon, level=attrs["level"], interval="wald" if two else "exact",
            missing_group=attrs["missing_group"], groups=groups,
        )  # fmt: skip
        if two:
            out["group_column"] = attrs["group"]
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self) -> Table:
        """The question, then one row per group (and parameter, for two-group designs):
        n, missing reports, estimate, bounded MLE, SE and interval."""
        two = self.design.n_groups == 2
        attrs, d = self.frame.attrs, self.design
        where = ("file, " if self.file is not None else "") + "column, by"
        values = [*([self.file] if self.file is not None else []), attrs["column"], attrs["by"]]
        rows = [
            (where, ", ".join(str(x) for x in values)),
            ("design", f"{d.name} ({format_parameters(d.parameters())})"),
            ("ε", epsilon_note(d.epsilon)),
            ("rows without a group (dropped)", str(attrs["missing_group"])),
        ]
        if two:
            rows.insert(1, ("group column (1 or 2)", str(attrs["group"])))
        ci = "Wald" if two else "exact"
        body = [
            (str(r.group), *((str(r.parameter),) if two else ()), str(r.n), str(r.missing),
             format_number(r.estimate), format_number(r.bounded), format_number(r.se),
             format_interval((r.ci_lower, r.ci_upper)))
            for r in self.frame.itertuples(index=False)
        ]  # fmt: skip
        table = Table(
            ("group", *(("parameter",) if two else ()), "n", "missing", "estimate", "bounded",
             "SE", f"{attrs['level']:.0%} CI ({ci})"),
            tuple(body),
            notes=(f"estimate: unbiased (may leave [0, 1]); SE: plug-in (n); CI: {ci}",),
            align=("ll" if two else "l") + "rrrrrr",
        )  # fmt: skip
        return Table.pairs(rows, title="Prevalence by group", sections=(table,))


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

    :func:`analyze_file` does the same on a CSV or Parquet file, reading it in batches.

    Parameters
    ----------
    df : a pandas DataFrame, one row per respondent.
    column : the column of reports (0/1, booleans; see the module docstring).
    design : the design the reports were randomized with (two report values).
    group : the column of randomization groups, for a two-group design only.
    by : optional grouping column (subgroups such as regions).
    level : confidence level of the intervals.
    missing : ``"drop"`` (default: leave missing reports out and count them) or ``"error"``.

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
    if by is not None:
        return grouped(df, column, design, by, group=group, level=level, missing=missing)
    check_frame(df)
    d, lvl = _check(design, column, group, None, level, missing)
    for what, name in (("column", column), ("group", group)):
        if name is not None:
            column_series(df, name, what)
    plan = _plan(d, column, group, None, lambda r: f"row {r!r}")
    run([plan], frame_batches(df, plan.columns()), missing)
    return _analysis(plan, d, lvl)


def grouped(
    df: Any,
    column: Any,
    design: Design,
    by: Any,
    *,
    group: Any = None,
    level: float = 0.95,
    missing: str = "drop",
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
    """
    check_frame(df)
    d, lvl = _check(design, column, group, by, level, missing)
    for what, name in (("column", column), ("by", by), ("group", group)):
        if name is not None:
            column_series(df, name, what)
    plan = _plan(d, column, group, by, lambda r: f"row {r!r}")
    run([plan], frame_batches(df, plan.columns()), missing)
    return _grouped(plan, d, lvl, text=False)


def analyze_file(
    path: str | os.PathLike[str],
    column: str,
    design: Design,
    *,
    group: str | None = None,
    by: str | None = None,
    level: float = 0.95,
    missing: str = "drop",
    block_size: int | None = None,
    progress: Progress | None = None,
) -> Analysis | Any:
    """:func:`analyze` (or with ``by``, :func:`grouped`) on a survey file, read in batches.

    The file is CSV (``.csv``, also ``.csv.gz``, ``.csv.bz2``, ``.csv.xz``, ``.csv.zst``,
    ``.csv.zip``) with a header row, or Parquet (``.parquet``, ``.pq``).  Only the named
    columns are read, ``block_size`` bytes of CSV (default 1 MiB) or 65536 Parquet rows at a
    time, and counted as they come: memory is bounded by the batch, not by the file (with
    ``by``, plus the distinct labels).  The values follow the same rules as in a DataFrame
    (docs/analysis.md, "Survey files"); rows in messages are data rows, numbered from 1
    without the header.  ``progress(bytes_done, bytes_total)`` is called after each batch.

    >>> import pathlib, tempfile
    >>> from deniable import TwoCoin
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "q.csv"
    >>> _ = path.write_text("q,region\\n1,north\\n0,south\\n,north\\n1,south\\n")
    >>> res = analyze_file(path, "q", TwoCoin())
    >>> res.n, res.missing
    (3, 1)
    """
    d, lvl = _check(design, column, group, by, level, missing)
    label = str(path)
    plan = _plan(d, column, group, by, lambda r: f"data row {r} of {label!r}")
    with SurveyFile(path, block_size=block_size, progress=progress) as f:
        f.check_columns([(w, c) for w, c in (("column", column), ("group", group), ("by", by))
                         if c is not None])  # fmt: skip
        run([plan], file_batches(f, plan.columns()), missing)
        text = f.kind == "csv"
    if by is not None:
        return _grouped(plan, d, lvl, text=text)
    return _analysis(plan, d, lvl, label)


def _check(
    design: Design, column: Any, group: Any, by: Any, level: float, missing: str
) -> tuple[BinaryDesign | TwoGroupDesign, float]:
    d = check_design(design)
    lvl = v.level(level)
    v.choice("missing", missing, ("drop", "error"))
    check_columns(d, column, group, by)
    return d, lvl


def _plan(d: BinaryDesign | TwoGroupDesign, column: Any, group: Any, by: Any, place: Any) -> Plan:
    return Plan(column, report_rule(2, d.name), 2, place, group=group, by=by)


def _analysis(
    plan: Plan, d: BinaryDesign | TwoGroupDesign, lvl: float, file: str | None = None
) -> Analysis:
    """The :class:`Analysis` of a question's counts (every label together)."""
    # (no, yes) of each randomization group (not the row of missing groups): the design's
    # report is 2 (group - 1) + answer
    counts = plan.counts.total()[: d.n_groups, :2].ravel()
    rows = plan.counts.rows
    kept = int(counts.sum())
    if kept == 0:
        raise DataError(f"`column` {plan.column!r} holds no reports (all {rows} rows are missing).")
    tally = d.tally_counts(counts)
    est = d.estimate(tally)
    return Analysis(plan.column, d, est, rows - kept, lvl, plan.group, tally, file)


def _grouped(plan: Plan, d: BinaryDesign | TwoGroupDesign, lvl: float, *, text: bool) -> Any:
    """The per-label DataFrame of :func:`grouped` from a question's counts."""
    pd = require_pandas()
    counts = plan.counts.label_counts(len(plan.labels))
    eps = d.epsilon
    two = d.n_groups == 2
    rows: list[tuple[Any, ...]] = []
    for i, label in label_order(plan.labels, text):
        c = counts[i]
        if two:
            td = cast(TwoGroupDesign, d)
            ns = (int(c[0, 0] + c[0, 1]), int(c[1, 0] + c[1, 1]))
            ys = (int(c[0, 1]), int(c[1, 1]))
            n = sum(ns)
            miss = int(c.sum()) - n
            ests = dict(td.estimate(yes=ys, n=ns).estimates) if min(ns) > 0 else {}
            for pname in td.estimated:
                e = ests.get(pname)
                nums = (math.nan,) * 6 if e is None else (
                    e.value, e.bounded, e.se, e.se_unbiased, *e.ci(lvl, "wald"))  # fmt: skip
                rows.append((label, pname, n, *ns, *ys, miss, *nums, eps))
            continue
        n, yes, miss = int(c[0, 0] + c[0, 1]), int(c[0, 1]), int(c[0, 2])
        if n == 0:
            est_v = bnd = se = seu = lo = hi = math.nan
        else:
            est = cast(BinaryDesign, d).estimate(yes=yes, n=n)
            lo, hi = est.ci(lvl, "exact")
            est_v, bnd, se, seu = est.value, est.bounded, est.se, est.se_unbiased
        rows.append((label, n, yes, miss, est_v, bnd, se, seu, lo, hi, eps))
    out = pd.DataFrame(rows, columns=list(TWO_GROUP_COLUMNS if two else GROUPED_COLUMNS))
    out.attrs.update(
        column=plan.column,
        by=plan.by,
        design=d.name,
        level=lvl,
        interval="wald (delta method)"
        if two
        else "exact (Clopper-Pearson for lambda, mapped through the design)",
        missing_group=int(counts[0].sum()),
    )
    if two:
        out.attrs["group"] = plan.group
    return out
