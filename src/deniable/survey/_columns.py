"""Checking the arguments of :mod:`deniable.survey`: the design, the report, group and
subgroup columns and whether a DataFrame has them.  The values themselves are judged by
:mod:`deniable.survey`, the same rules for DataFrames and files.
"""

from __future__ import annotations

from typing import Any

from deniable.designs import TWO_GROUP_DESIGNS, Design
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

__all__ = ["check_columns", "check_design", "column_series"]


def check_design(design: Any) -> Design:
    """``design`` if :func:`~deniable.survey.analyze` reads its reports: any deniable design
    (yes/no, a count of cards, one of ``k`` categories, two-group)."""
    if not isinstance(design, Design):
        raise ParameterTypeError(
            f"`design` must be a deniable design (e.g. deniable.Warner(0.75)), got "
            f"{type(design).__name__} {design!r}."
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
