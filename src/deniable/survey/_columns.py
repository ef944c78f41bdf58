"""Checking the arguments of :mod:`deniable.survey`: the design, the report, group and
subgroup columns and whether a DataFrame has them.  The values themselves are judged by
:mod:`deniable.survey`, the same rules for DataFrames and files.
"""

from __future__ import annotations

from typing import Any, cast

from deniable.designs import (
    TWO_GROUP_DESIGNS,
    BinaryDesign,
    Design,
    TwoGroupDesign,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

__all__ = ["check_columns", "check_design", "column_series"]


def check_design(design: Any) -> BinaryDesign | TwoGroupDesign:
    """``design`` if :func:`~deniable.survey.analyze` reads its reports: a two-group design,
    or a binary design with two report values."""
    if not isinstance(design, Design):
        raise ParameterTypeError(
            f"`design` must be a deniable design (e.g. deniable.Warner(0.75)), got "
            f"{type(design).__name__} {design!r}."
        )
    if design.n_groups == 2:
        return cast(TwoGroupDesign, design)
    if not isinstance(design, BinaryDesign) or design.n_reports != 2:
        what = (
            f"reports one of k = {design.n_reports} categories"
            if design.n_truths > 2
            else f"reports one of {design.n_reports} values (a count of red cards, 0 to "
            f"{design.n_reports - 1})"
        )
        raise ParameterError(
            "`design`: analyze reads a column of yes/no (0/1) reports, for designs with two "
            f"report values (one- or two-group); design {design.name!r} {what}: estimate it "
            "with design.estimate(reports) instead."
        )
    return design


def check_columns(design: Design, column: Any, group: Any, by: Any) -> None:
    """``group`` is given exactly for a two-group design; ``column``, ``group`` and ``by``
    name different columns."""
    if design.n_groups == 2:
        if group is None:
            raise DataError(
                f"design {design.name!r} needs two groups: give group=... (the column holding "
                "each respondent's group, 1 or 2)."
            )
        if group == column:
            raise ParameterError(f"`group` must differ from `column`, got {group!r} for both.")
    elif group is not None:
        raise ParameterError(
            f"`group` applies to the two-group designs ({', '.join(TWO_GROUP_DESIGNS)}); "
            f"design {design.name!r} has one group, got group={group!r} (by= estimates per "
            "subgroup)."
        )
    if by is not None:
        if by == column:
            raise ParameterError(f"`by` must differ from `column`, got {by!r} for both.")
        if group is not None and by == group:
            raise ParameterError(f"`by` must differ from `group`, got {by!r} for both.")


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
