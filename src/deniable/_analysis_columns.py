"""Reading the columns of a survey DataFrame for :mod:`deniable.analysis`: the report column
(0/1), the randomization-group column of a two-group design (1/2), missing values, and the
design check; every bad value raises :class:`~deniable.exceptions.DataError` naming its
column and row.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable._readers import require_pandas
from deniable.designs import (
    TWO_GROUP_DESIGNS,
    BinaryDesign,
    Categorical,
    Design,
    TwoGroupDesign,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

__all__ = [
    "binary_reports",
    "check_design",
    "column_series",
    "group_series",
    "group_values",
    "missing_error",
]


def check_design(design: Any) -> BinaryDesign | TwoGroupDesign:
    """``design`` if :func:`~deniable.analysis.analyze` reads its reports: a two-group design,
    or a binary design with two report values."""
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


def group_series(df: Any, design: Design, group: Any, column: Any) -> Any:
    """The series of randomization groups for a two-group design (``None`` otherwise)."""
    if isinstance(design, TwoGroupDesign):
        if group is None:
            raise DataError(
                f"design {design.name!r} needs two groups: give group=... (the column holding "
                "each respondent's group, 1 or 2)."
            )
        if group == column:
            raise ParameterError(f"`group` must differ from `column`, got {group!r} for both.")
        return column_series(df, group, "group")
    if group is not None:
        raise ParameterError(
            f"`group` applies to the two-group designs ({', '.join(TWO_GROUP_DESIGNS)}); "
            f"design {design.name!r} has one group, got group={group!r} (by= estimates per "
            "subgroup)."
        )
    return None


def group_values(g: Any, name: Any) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
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


def column_series(df: Any, name: str, what: str) -> Any:
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


def binary_reports(
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


def missing_error(s: Any, mask: npt.NDArray[np.bool_], what: str, name: Any) -> None:
    i = int(np.flatnonzero(mask)[0])
    raise DataError(
        f"`{what}` {name!r} has {int(mask.sum())} missing value(s) (first at row "
        f"{_py(s.index[i])!r}) and `missing` is 'error'; drop them or use missing='drop'."
    )
