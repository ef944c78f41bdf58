"""Survey data in pandas: estimate a prevalence from a column of randomized reports, overall
or per group, and read/write survey files (CSV, Parquet).

Needs the ``[data]`` extra (``pip install deniable[data]``: pandas, and pyarrow for
Parquet); importing this module does not, only calling it does.

Conventions
-----------
* A report column holds 0/1 reports ("yes" = 1): integers, floats equal to 0 or 1, or
  booleans (a pandas nullable ``Int64`` / ``boolean`` column too).  Text such as
  ``"yes"`` / ``"no"`` is rejected: map it first (``df[c].map({"yes": 1, "no": 0})``).
* **Missing values** (NaN, ``None``, ``pd.NA``; also a missing group label with ``by=``):
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
  gets the delta-method SEs and a Wald interval (:class:`~deniable.TwoGroupEstimate`); a
  row whose group is missing is left out like a missing report.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from deniable import _validation as v
from deniable._estimate import Estimate
from deniable.designs import (
    TWO_GROUP_DESIGNS,
    BinaryDesign,
    Categorical,
    Design,
    TwoGroupDesign,
    TwoGroupEstimate,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

__all__ = [
    "GROUPED_COLUMNS",
    "TWO_GROUP_COLUMNS",
    "Analysis",
    "analyze",
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

_CSV = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst", ".csv.zip")
_PARQUET = (".parquet", ".pq")


def require_pandas() -> Any:
    """Import pandas, or raise an ``ImportError`` that says how to install it."""
    try:
        import pandas as pd
    except ModuleNotFoundError as exc:
        raise ImportError("this feature needs pandas: pip install 'deniable[data]'") from exc
    return pd


def _check_frame(df: Any) -> Any:
    pd = require_pandas()
    if not isinstance(df, pd.DataFrame):
        raise ParameterTypeError(f"`df` must be a pandas DataFrame, got {type(df).__name__}.")
    return pd


def _check_design(design: Any) -> BinaryDesign | TwoGroupDesign:
    if not isinstance(design, Design):
        raise ParameterTypeError(
            f"`design` must be a deniable design (e.g. deniable.Warner(0.75)), got "
            f"{type(design).__name__} {design!r}."
        )
    if isinstance(design, TwoGroupDesign):
        return design
    if not isinstance(design, BinaryDesign) or design.n_reports != 2:
        what = (
            f"reports one of k = {design.k} categories"
            if isinstance(design, Categorical)
            else f"reports one of {design.n_reports} values (a count of red cards, 0 to "
            f"{design.n_reports - 1})"
        )
        raise ParameterError(
            "`design`: analyze reads a column of yes/no (0/1) reports, for designs with two "
            f"report values (one- or two-group); design {design.name!r} {what}: estimate it "
            "with design.estimate(reports) instead."
        )
    return design


def _split_column(df: Any, design: Design, group: Any, column: Any) -> Any:
    """The series of randomization groups for a two-group design (``None`` otherwise)."""
    if isinstance(design, TwoGroupDesign):
        if group is None:
            raise DataError(
                f"design {design.name!r} needs two groups: give group=... (the column holding "
                "each respondent's group, 1 or 2)."
            )
        if group == column:
            raise ParameterError(f"`group` must differ from `column`, got {group!r} for both.")
        return _series(df, group, "group")
    if group is not None:
        raise ParameterError(
            f"`group` applies to the two-group designs ({', '.join(TWO_GROUP_DESIGNS)}); "
            f"design {design.name!r} has one group, got group={group!r} (by= estimates per "
            "subgroup)."
        )
    return None


def _split_values(g: Any, name: Any) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
    """``(group 1 or 2, with missing rows set to 1; missing mask)``; rejects other values."""
    pd = require_pandas()
    isna = np.asarray(g.isna(), dtype=bool)
    if pd.api.types.is_bool_dtype(g.dtype):
        ok = np.zeros(len(g), dtype=bool)
    elif pd.api.types.is_numeric_dtype(g.dtype):
        ok = np.asarray(g.isin([1, 2]), dtype=bool)
    else:
        ok = np.fromiter((_is12(x) for x in g.array), dtype=bool, count=len(g)) & ~isna
    bad = ~isna & ~ok
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        nbad = int(bad.sum())
        more = f" ({nbad} such values in all)" if nbad > 1 else ""
        raise DataError(
            f"`group` {name!r} must hold 1 or 2 (each respondent's randomization group), got "
            f"{_py(g.iloc[i])!r} at row {_py(g.index[i])!r}{more}."
        )
    values = np.ones(len(g), dtype=np.intp)
    if (~isna).any():
        values[~isna] = np.asarray(g[~isna].astype("int64").to_numpy(), dtype=np.intp)
    return values, isna


def _columns_listed(df: Any) -> str:
    cols = [repr(c) for c in df.columns]
    if len(cols) > 30:
        cols = [*cols[:30], f"... ({len(cols) - 30} more)"]
    return ", ".join(cols) or "(none)"


def _series(df: Any, name: str, what: str) -> Any:
    if name not in df.columns:
        raise DataError(
            f"`{what}` must be one of the DataFrame's columns {_columns_listed(df)}, got {name!r}."
        )
    s = df[name]
    if s.ndim != 1:
        raise DataError(
            f"`{what}` {name!r} names {s.shape[1]} columns; column names must be unique."
        )
    return s


def _py(x: Any) -> Any:
    """A numpy scalar as the Python value (so messages show ``2``, not ``np.int64(2)``)."""
    return x.item() if isinstance(x, np.generic) else x


def _is01(x: Any) -> bool:
    if isinstance(x, bool | np.bool_):
        return True
    return isinstance(x, numbers.Real) and not isinstance(x, str) and (x == 0 or x == 1)


def _is12(x: Any) -> bool:
    real = isinstance(x, numbers.Real) and not isinstance(x, bool | np.bool_ | str)
    return real and (x == 1 or x == 2)


def _binary_reports(
    s: Any, column: Any, design: Design
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.bool_]]:
    """``(reports as 0/1 with missing rows set to 0, missing mask)``; rejects non-binary."""
    pd = require_pandas()
    isna = np.asarray(s.isna(), dtype=bool)
    if pd.api.types.is_bool_dtype(s.dtype):
        ok = ~isna
    elif pd.api.types.is_numeric_dtype(s.dtype):
        ok = np.asarray(s.isin([0, 1]), dtype=bool)
    else:
        ok = np.fromiter((_is01(x) for x in s.array), dtype=bool, count=len(s)) & ~isna
    bad = ~isna & ~ok
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        nbad = int(bad.sum())
        more = f" ({nbad} non-binary values in all)" if nbad > 1 else ""
        raise DataError(
            f"`column` {column!r} must hold reports 0 or 1 (or True/False) for design "
            f"{design.name!r}, got {_py(s.iloc[i])!r} at row {_py(s.index[i])!r}{more}."
        )
    values = np.zeros(len(s), dtype=np.uint8)
    keep = ~isna
    if keep.any():
        values[keep] = np.asarray(s[keep].astype("int64").to_numpy(), dtype=np.uint8)
    return values, isna


def _missing_error(s: Any, mask: npt.NDArray[np.bool_], what: str, name: Any) -> None:
    i = int(np.flatnonzero(mask)[0])
    raise DataError(
        f"`{what}` {name!r} has {int(mask.sum())} missing value(s) (first at row "
        f"{_py(s.index[i])!r}) and `missing` is 'error'; drop them or use missing='drop'."
    )


@dataclass(frozen=True)
class Analysis:
    """The estimate from one column of reports (see :func:`analyze`).

    Attributes
    ----------
    column : the analysed column.
    design : the design the reports were randomized with.
    estimate : the :class:`~deniable.Estimate` (moment value, bounded MLE, both SEs,
        intervals), or for a two-group design the :class:`~deniable.TwoGroupEstimate` (one
        Estimate per parameter).
    missing : rows left out because the report (or, two-group designs, the group) was
        missing (``missing="drop"``).
    level : confidence level of :attr:`ci` and the printed table.
    group : the column of randomization groups (two-group designs; else ``None``).
    """

    column: Any
    design: BinaryDesign | TwoGroupDesign
    estimate: Estimate | TwoGroupEstimate
    missing: int
    level: float
    group: Any = None

    @property
    def n(self) -> int:
        """Reports used (missing ones excluded; both groups together)."""
        e = self.estimate
        return e.tally.n if isinstance(e, TwoGroupEstimate) else e.n

    @property
    def interval(self) -> str:
        """The interval method of :attr:`ci` and of reports: ``exact`` (one-group designs) or
        ``wald`` (the delta-method interval of every two-group parameter)."""
        return "wald" if isinstance(self.estimate, TwoGroupEstimate) else "exact"

    def estimates(self) -> dict[str, Estimate]:
        """Every estimated parameter by name (``{"prevalence": ...}`` for one group)."""
        e = self.estimate
        return dict(e.estimates) if isinstance(e, TwoGroupEstimate) else {e.parameter: e}

    @property
    def ci(self) -> tuple[float, float]:
        """The prevalence interval at :attr:`level` (method :attr:`interval`)."""
        return self.estimates()["prevalence"].ci(self.level, self.interval)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict: the estimate's fields plus column, design, missing and epsilon."""
        eps = self.design.epsilon
        out: dict[str, Any] = {
            "column": str(self.column),
            "design": self.design.name,
            "parameters": self.design.parameters(),
            "epsilon": eps if math.isfinite(eps) else "inf",
            "missing": self.missing,
        }
        e = self.estimate
        if isinstance(e, TwoGroupEstimate):
            body = e.to_dict(self.level)
            for key in ("design", "parameters", "epsilon"):
                body.pop(key)
            out.update(group=str(self.group), n=self.n, interval="wald", **body)
        else:
            out.update(e.to_dict(self.level))
        return out

    def table(self) -> str:
        """A readable plain-text table (ε printed as ∞ when infinite)."""
        eps = self.design.epsilon
        head = [
            ("column", str(self.column)),
            ("design", repr(self.design)),
            ("ε", "∞" if math.isinf(eps) else f"{eps:.4f}"),
            ("missing (dropped)", str(self.missing)),
        ]
        if isinstance(self.estimate, TwoGroupEstimate):
            head.insert(1, ("group column", str(self.group)))
            width = max(len(k) for k, _ in head)
            lines = [f"{k.ljust(width)}  {val}" for k, val in head]
            return "\n".join([*lines, *self.estimate.table(self.level).splitlines()[1:]])
        body = self.estimate.table(self.level).splitlines()
        width = max(max(len(k) for k, _ in head), max(len(line.split("  ")[0]) for line in body))
        lines = [f"{k.ljust(width)}  {val}" for k, val in head]
        for line in body:
            key, _, val = line.partition("  ")
            lines.append(f"{key.ljust(width)}  {val.strip()}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


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
    :class:`~deniable.TwoGroupEstimate` with every parameter (for the stochastic lie
    detector the prevalence and the carriers' honesty; Moshagen et al. 2012).

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
        value is not 0/1 (or a group not 1/2; named with its row); no report is left; a
        group without reports; a two-group design without ``group``; a missing value with
        ``missing="error"``.

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
    _check_frame(df)
    d = _check_design(design)
    lvl = v.level(level)
    v.choice("missing", missing, ("drop", "error"))
    s = _series(df, column, "column")
    g = _split_column(df, d, group, column)
    values, isna = _binary_reports(s, column, d)
    if isna.any() and missing == "error":
        _missing_error(s, isna, "column", column)
    drop = isna
    if g is not None:
        split, gna = _split_values(g, group)
        if gna.any() and missing == "error":
            _missing_error(g, gna, "group", group)
        drop = isna | gna
    kept = int((~drop).sum())
    if kept == 0:
        raise DataError(f"`column` {column!r} holds no reports (all {len(s)} rows are missing).")
    if isinstance(d, TwoGroupDesign):
        tally = d.tally(values[~drop], split[~drop])
        return Analysis(column, d, d.estimate(tally), int(drop.sum()), lvl, group)
    yes = int(np.count_nonzero(values))  # missing rows were set to 0
    est = d.estimate(yes=yes, n=kept)
    return Analysis(column, d, est, int(isna.sum()), lvl)


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
    pd = _check_frame(df)
    d = _check_design(design)
    lvl = v.level(level)
    v.choice("missing", missing, ("drop", "error"))
    s = _series(df, column, "column")
    g = _series(df, by, "by")
    if by == column:
        raise ParameterError(f"`by` must differ from `column`, got {by!r} for both.")
    rr = _split_column(df, d, group, column)
    if rr is not None and by == group:
        raise ParameterError(f"`by` must differ from `group`, got {by!r} for both.")
    values, isna = _binary_reports(s, column, d)
    split, sna = (None, np.zeros(len(s), dtype=bool)) if rr is None else _split_values(rr, group)
    gna = np.asarray(g.isna(), dtype=bool)
    if missing == "error":
        for mask, series, what, name in ((isna, s, "column", column), (sna, rr, "group", group),
                                         (gna, g, "by", by)):  # fmt: skip
            if mask.any():
                _missing_error(series, mask, what, name)
    drop = (isna | sna)[~gna]
    cols: dict[str, Any] = {
        "group": g.to_numpy()[~gna],
        "yes": values[~gna].astype(np.int64),
        "n": (~drop).astype(np.int64),
        "missing": drop.astype(np.int64),
    }
    if split is not None:
        for k in (1, 2):
            in_k = (split[~gna] == k) & ~drop
            cols[f"n{k}"] = in_k.astype(np.int64)
            cols[f"yes{k}"] = (in_k & (values[~gna] == 1)).astype(np.int64)
    frame = pd.DataFrame(cols)
    try:
        counts = frame.groupby("group", sort=True).sum()
    except TypeError:  # unorderable labels: keep first-seen order
        counts = frame.groupby("group", sort=False).sum()
    eps = d.epsilon
    rows: list[tuple[Any, ...]] = []
    for label, row in counts.iterrows():
        n, yes, miss = int(row["n"]), int(row["yes"]), int(row["missing"])
        if isinstance(d, TwoGroupDesign):
            ns, ys = (int(row["n1"]), int(row["n2"])), (int(row["yes1"]), int(row["yes2"]))
            ests = dict(d.estimate(yes=ys, n=ns).estimates) if min(ns) > 0 else {}
            for pname in d.estimated:
                e = ests.get(pname)
                nums = (math.nan,) * 6 if e is None else (
                    e.value, e.bounded, e.se, e.se_unbiased, *e.ci(lvl, "wald"))  # fmt: skip
                rows.append((label, pname, n, *ns, *ys, miss, *nums, eps))
            continue
        if n == 0:
            est_v = bnd = se = seu = lo = hi = math.nan
        else:
            est = d.estimate(yes=yes, n=n)
            lo, hi = est.ci(lvl, "exact")
            est_v, bnd, se, seu = est.value, est.bounded, est.se, est.se_unbiased
        rows.append((label, n, yes, miss, est_v, bnd, se, seu, lo, hi, eps))
    two = isinstance(d, TwoGroupDesign)
    out = pd.DataFrame(rows, columns=list(TWO_GROUP_COLUMNS if two else GROUPED_COLUMNS))
    out.attrs.update(
        column=column,
        by=by,
        design=d.name,
        level=lvl,
        interval="wald (delta method)"
        if two
        else "exact (Clopper-Pearson for lambda, mapped through the design)",
        missing_group=int(gna.sum()),
    )
    if two:
        out.attrs["group"] = group
    return out


def _kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(_CSV):
        return "csv"
    if name.endswith(_PARQUET):
        return "parquet"
    raise ParameterError(
        f"`path` must end in {', '.join(_CSV + _PARQUET)} (the format is chosen by "
        f"extension), got {str(path)!r}."
    )


def _parquet_engine() -> None:
    try:
        import pyarrow  # noqa: F401
    except ModuleNotFoundError as exc:
        raise ImportError("Parquet needs pyarrow: pip install 'deniable[data]'") from exc


def read_reports(path: str | Path) -> Any:
    """Read a survey file into a DataFrame: CSV (``.csv``, optionally compressed ``.csv.gz``
    ...) or Parquet (``.parquet``, ``.pq``), chosen by extension.

    Raises :class:`~deniable.exceptions.ParameterError` for another extension and
    :class:`~deniable.exceptions.DataError` for a file that cannot be read or parsed
    (the message names the file and the reason).
    """
    pd = require_pandas()
    p = Path(path)
    kind = _kind(p)
    if kind == "parquet":
        _parquet_engine()
    try:
        if kind == "csv":
            return pd.read_csv(p)
        return pd.read_parquet(p)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError | IsADirectoryError | PermissionError):
            raise DataError(f"cannot read reports file {str(p)!r}: {exc.strerror or exc}.") from exc
        raise DataError(f"reports file {str(p)!r} is not valid {kind}: {exc}.") from exc
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise DataError(f"reports file {str(p)!r} is not valid {kind}: {reason}.") from exc


def write_reports(df: Any, path: str | Path) -> Path:
    """Write ``df`` as CSV or Parquet (by extension, as :func:`read_reports` reads it back)."""
    _check_frame(df)
    p = Path(path)
    kind = _kind(p)
    try:
        if kind == "csv":
            df.to_csv(p, index=False)
        else:
            _parquet_engine()
            df.to_parquet(p, index=False)
    except OSError as exc:
        raise DataError(f"cannot write {str(p)!r}: {exc.strerror or exc}.") from exc
    return p
