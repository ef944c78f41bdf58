"""The data of a mixed model: the random term ``(1 + x | school)``, the grouping factor, the
random-effects design matrix ``Z`` and the per-row channel (one design, or one per item in
long format).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.designs import BinaryDesign
from deniable.estimation._regression_data import (
    ModelData,
    as_frame,
    check_design,
    check_finite,
    model_data,
    not_in_data,
    require_data_extras,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

__all__ = ["MixedData", "RandomTerm", "mixed_data", "parse_random"]

Array = npt.NDArray[np.float64]

_NAME = r"[A-Za-z_][A-Za-z0-9_.]*|`[^`]+`"
_TERM = re.compile(rf"^\(\s*(?P<lhs>[^|()]+?)\s*\|\s*(?P<group>{_NAME})\s*\)$")
_SYNTAX = (
    "`random` must be one random term '(1 | group)', '(1 + x | group)', '(x | group)' or "
    "'(0 + x | group)' (lme4 syntax: the terms varying by group, a bar, one grouping column)"
)


@dataclass(frozen=True)
class RandomTerm:
    """A parsed random term: the group column and the columns of ``Z`` (``"1"`` for the
    intercept), in order."""

    text: str
    group: str
    columns: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The random effects' names: ``Intercept`` and the slope columns."""
        return tuple("Intercept" if c == "1" else c for c in self.columns)


def _unquote(name: str) -> str:
    return name[1:-1] if name.startswith("`") else name


def parse_random(random: Any) -> RandomTerm:
    """Parse ``"(1 + x | school)"`` (lme4's syntax; an intercept is implied unless ``0 +``
    or ``- 1`` removes it)."""
    if not isinstance(random, str):
        raise ParameterTypeError(
            f"`random` must be a string like '(1 | school)', got {type(random).__name__}."
        )
    text = random.strip()
    if text.count("|") > 1:
        raise ParameterError(
            f"`random` must have one grouping factor (one '( ... | group)' term), got "
            f"{random!r}; several grouping factors are not supported yet."
        )
    m = _TERM.match(text)
    if m is None:
        raise ParameterError(f"{_SYNTAX}, got {random!r}.")
    intercept = True
    slopes: list[str] = []
    lhs = m.group("lhs").replace("- 1", "+ -1").replace("-1", "+ -1")
    for raw in (t.strip() for t in lhs.split("+")):
        if raw in ("1",):
            intercept = True
        elif raw in ("0", "-1"):
            intercept = False
        elif re.fullmatch(_NAME, raw):
            name = _unquote(raw)
            if name not in slopes:
                slopes.append(name)
        else:
            raise ParameterError(
                f"{_SYNTAX}; the part {raw!r} of {random!r} is not a column name, 1 or 0."
            )
    columns = (("1",) if intercept else ()) + tuple(slopes)
    if not columns:
        raise ParameterError(f"`random` {random!r} has no random effect (no intercept, no slope).")
    return RandomTerm(text=text, group=_unquote(m.group("group")), columns=columns)


@dataclass(frozen=True)
class MixedData:
    """Arrays of one mixed fit: the fixed part (``model``), ``Z``, group codes and labels,
    and the per-row channel ``p1``, ``p0``."""

    model: ModelData
    Z: Array
    groups: npt.NDArray[np.intp]
    labels: Any
    p1: Array
    p0: Array
    designs: Mapping[Any, BinaryDesign]
    term: RandomTerm


def _designs(design: Any, item: str | None) -> dict[Any, BinaryDesign]:
    if isinstance(design, Mapping):
        if item is None:
            raise ParameterError(
                "`item` must name the column of item (design) labels when `design` is a "
                "mapping of item labels to designs, got None."
            )
        if not design:
            raise ParameterError("`design` must map at least one item label to a design, got {}.")
        return {k: check_design(d) for k, d in design.items()}
    if item is not None:
        raise ParameterError(
            f"`item` ({item!r}) needs `design` as a mapping of item labels to designs, got "
            f"one design {design!r}."
        )
    return {None: check_design(design)}


def mixed_data(formula: Any, data: Any, design: Any, random: Any, item: str | None) -> MixedData:
    """Check and build everything a mixed fit needs; rows with a missing value in any
    column used (formula, group, slopes, item) are dropped."""
    pd, _ = require_data_extras()
    term = parse_random(random)
    designs = _designs(design, item)
    frame = as_frame(pd, data)
    needed = [term.group, *(c for c in term.columns if c != "1")]
    absent = [c for c in needed if c not in frame.columns]
    if absent:
        raise not_in_data(f"`random` {random!r}", absent, frame)
    extras = {f"random[{i}]": c for i, c in enumerate(needed)}
    if item is not None:
        extras["item"] = item
    md = model_data(formula, frame, outcome="binary", extras=extras)
    codes, labels = pd.factorize(pd.Series(md.extras[term.group]), sort=True)
    if len(labels) < 2:
        raise DataError(
            f"`random` {random!r}: the grouping column {term.group!r} must have at least 2 "
            f"groups, got {len(labels)} ({list(labels)!r})."
        )
    n = md.y.size
    cols = []
    for c in term.columns:
        if c == "1":
            cols.append(np.ones(n))
            continue
        raw = np.asarray(md.extras[c])
        if raw.dtype.kind not in "iufb":
            raise DataError(
                f"`random` {random!r}: the slope column {c!r} must be numeric, got dtype "
                f"{raw.dtype}."
            )
        cols.append(raw.astype(np.float64))
    Z = np.column_stack(cols)
    check_finite(Z, term.names, what="the random-effect column")
    p1, p0 = _channel(designs, md.extras.get(item) if item is not None else None, n, pd)
    return MixedData(
        model=md,
        Z=Z,
        groups=np.asarray(codes, dtype=np.intp),
        labels=labels,
        p1=p1,
        p0=p0,
        designs=designs,
        term=term,
    )


def _channel(
    designs: Mapping[Any, BinaryDesign], items: Any, n: int, pd: Any
) -> tuple[Array, Array]:
    if items is None:
        d = next(iter(designs.values()))
        return np.full(n, d.p_yes_given_1), np.full(n, d.p_yes_given_0)
    series = pd.Series(items)
    p1 = series.map({k: d.p_yes_given_1 for k, d in designs.items()}).to_numpy(dtype=float)
    p0 = series.map({k: d.p_yes_given_0 for k, d in designs.items()}).to_numpy(dtype=float)
    unknown = pd.unique(series[np.isnan(p1)])
    if len(unknown):
        shown = ", ".join(repr(u.item() if isinstance(u, np.generic) else u) for u in unknown[:5])
        raise DataError(
            f"the `item` column holds label{'s' if len(unknown) > 1 else ''} {shown} with no "
            f"design in `design` (labels with a design: "
            f"{', '.join(repr(k) for k in designs)})."
        )
    return p1, p0
