"""Weights for a table of reports from known population margins: raking or
post-stratification (:func:`deniable.sampling.rake_weights`,
:func:`deniable.sampling.post_stratify`), optional trimming, and what the weighting did
(iterations, convergence, each margin reached, Kish's design effect).

Margins come as a small table (a CSV file for ``deniable weight``) with the columns
``variable``, ``level`` and ``target``: each variable is a column of the data, each level a
value of it, each target the population count or share of that level.  A variable whose
targets add to 1 (within 1e-6) gives **shares**; otherwise **counts**, and every variable
must then add to the same total (within 1e-6, relative).  Shares keep the weight total;
counts make the weights add to the population total.  Levels are matched as text (a
column of whole numbers stored as floats reads ``1``, not ``1.0``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import format_number, to_jsonable
from deniable.common import validation as v
from deniable.exceptions import DataError, ParameterError
from deniable.results import Result, Table
from deniable.sampling import (
    SampleDesign,
    kish_deff,
    post_stratify,
    rake_weights,
    trim_weights,
)
from deniable.survey._readers import check_frame, read_frame

__all__ = ["WEIGHT_METHODS", "Margins", "Weighting", "read_margins", "weight_frame"]

FloatArray = npt.NDArray[np.float64]

#: How :func:`~deniable.survey.weight_frame` meets the margins.
WEIGHT_METHODS = ("rake", "post-stratify")

_COLUMNS = ("variable", "level", "target")


@dataclass(frozen=True)
class Margins:
    """Population margins: ``targets[variable][level]`` (levels as text), and ``kind``:
    ``"shares"`` (each variable's targets add to 1) or ``"counts"`` (they add to
    ``total``, the same for every variable)."""

    targets: dict[str, dict[str, float]]
    kind: str
    total: float | None = None

    @classmethod
    def from_frame(cls, table: Any, what: str = "margins") -> Margins:
        """Margins from a DataFrame with the columns ``variable``, ``level``, ``target``."""
        check_frame(table)
        absent = [c for c in _COLUMNS if c not in table.columns]
        if absent:
            raise DataError(
                f"{what} must have the columns variable, level, target; got "
                f"{', '.join(map(str, table.columns)) or 'none'} (no {absent[0]!r})."
            )
        if len(table) == 0:
            raise DataError(f"{what} must give at least one level, got no rows.")
        targets: dict[str, dict[str, float]] = {}
        for i, (var, level, target) in enumerate(
            zip(table["variable"], table["level"], table["target"], strict=True), start=1
        ):
            if _missing(var) or _missing(level):
                raise DataError(f"{what}, data row {i}: `variable` and `level` must be given.")
            name, text = str(var).strip(), _text(level)
            try:
                value = float(target)
            except (TypeError, ValueError):
                value = math.nan
            if not (math.isfinite(value) and value > 0):
                raise DataError(
                    f"{what}, data row {i}: `target` of {name}={text} must be a finite number "
                    f"> 0 (a population count or share), got {target!r}."
                )
            cell = targets.setdefault(name, {})
            if text in cell:
                raise DataError(f"{what}, data row {i}: level {name}={text} is given twice.")
            cell[text] = value
        sums = {k: math.fsum(t.values()) for k, t in targets.items()}
        shares = {k: abs(s - 1) <= 1e-6 for k, s in sums.items()}
        if all(shares.values()):
            scaled = {k: {lv: x / sums[k] for lv, x in t.items()} for k, t in targets.items()}
            return cls(scaled, "shares")
        low, high = min(sums.values()), max(sums.values())
        if any(shares.values()) or high > low * (1 + 1e-6):
            listed = ", ".join(f"{k}: {s:.6g}" for k, s in sums.items())
            raise DataError(
                f"{what}: every variable's targets must add to the same total (population "
                f"counts) or each to 1 (shares), got {listed}."
            )
        return cls(targets, "counts", high)


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x)) or str(x).strip() == ""


def _text(x: Any) -> str:
    """A level as text: a whole float as an integer (``1.0`` -> ``1``)."""
    if isinstance(x, float | np.floating) and float(x).is_integer():
        return str(int(x))
    return str(x.item() if isinstance(x, np.generic) else x).strip()


def read_margins(path: str | os.PathLike[str]) -> Margins:
    """The margins in a CSV (or Parquet) file with the columns ``variable``, ``level``,
    ``target`` (see the module docstring for shares and counts)."""
    table = read_frame(path, what="margins file")
    return Margins.from_frame(table, f"margins file {str(path)!r}")


@dataclass(frozen=True)
class Weighting(Result):
    """Weights that meet population margins (see :func:`~deniable.survey.weight_frame`).

    ``frame`` is the data with the weight ``column``; ``achieved`` each margin's
    ``(variable, level, target, weighted)`` with the weighted share or count the weights
    give (after trimming, which moves them off their targets).
    """

    frame: Any
    column: str
    method: str
    kind: str
    iterations: int
    converged: bool
    max_error: float
    deff_before: float
    deff: float
    trim: tuple[float, float] | None
    achieved: tuple[tuple[str, str, float, float], ...]

    @property
    def weights(self) -> FloatArray:
        """The weights."""
        return np.asarray(self.frame[self.column], dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: method, convergence, iterations, design effects and the margins."""
        w = self.weights
        out = {
            "column": self.column, "method": self.method, "targets": self.kind,
            "iterations": self.iterations, "converged": self.converged,
            "max_error": self.max_error, "kish_deff_before": self.deff_before,
            "kish_deff": self.deff, "trim": self.trim, "respondents": int(w.size),
            "weight_total": float(w.sum()), "weight_min": float(w.min()),
            "weight_max": float(w.max()),
            "margins": [{"variable": a, "level": b, "target": t, "weighted": x}
                        for a, b, t, x in self.achieved],
        }  # fmt: skip
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self) -> Table:
        """The weighting's summary, then every margin's target beside what it reached."""
        w = self.weights
        how = "raking" if self.method == "rake" else "post-stratification"
        rows = [
            ("method", f"{how} to {self.kind}"),
            ("converged", f"yes, in {self.iterations} iteration(s)" if self.converged else "no"),
            ("largest margin error (relative)", format_number(self.max_error, 3)),
            ("Kish design effect", f"{self.deff:.4f} (before weighting: {self.deff_before:.4f})"),
            ("respondents", str(w.size)),
            ("weights", f"{format_number(float(w.min()), 4)} to "
                        f"{format_number(float(w.max()), 4)}, total "
                        f"{format_number(float(w.sum()), 2)}"),
        ]  # fmt: skip
        if self.trim is not None:
            rows.append(("trimmed to", f"[{self.trim[0]:g}, {self.trim[1]:g}]"))
        digits = 4 if self.kind == "shares" else 2
        margins = Table(
            ("variable", "level", "target", "weighted"),
            tuple((a, b, format_number(t, digits), format_number(x, digits))
                  for a, b, t, x in self.achieved),
            title=f"Margins ({self.kind})", align="llrr",
        )  # fmt: skip
        return Table.pairs(rows, title=f"Weights in column {self.column!r}", sections=(margins,))


def weight_frame(
    df: Any,
    margins: Margins,
    *,
    method: str = "rake",
    weights: str | None = None,
    trim: tuple[float, float] | None = None,
    column: str = "weight",
    tolerance: float = 1e-8,
    max_iterations: int = 100,
) -> Weighting:
    """Weights for the rows of ``df`` that meet ``margins`` (:class:`~deniable.survey.Margins`).

    ``method``: ``"rake"`` (iterative proportional fitting over every variable; Deming &
    Stephan 1940, R's ``rake``) or ``"post-stratify"`` (one variable; R's
    ``postStratify``).  ``weights``: a column of base (design) weights to start from
    (default: all 1).  ``trim``: ``(lower, upper)`` bounds applied afterwards (R's
    ``trimWeights``; the margins are then met only approximately, as the result shows).
    The weights go into a new column ``column`` of a copy of ``df``.  Raking that does not
    meet every margin within ``tolerance`` after ``max_iterations`` sweeps is a
    :class:`~deniable.exceptions.DataError`, never a silent result.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"sex": ["f", "f", "f", "m"], "q": [1, 0, 1, 1]})
    >>> m = Margins.from_frame(pd.DataFrame({"variable": ["sex", "sex"],
    ...                                      "level": ["f", "m"], "target": [0.5, 0.5]}))
    >>> weight_frame(df, m).frame["weight"].tolist()
    [0.6666666666666666, 0.6666666666666666, 0.6666666666666666, 2.0]
    """
    check_frame(df)
    v.choice("method", method, WEIGHT_METHODS)
    if not isinstance(margins, Margins):
        raise ParameterError(f"`margins` must be a Margins, got {type(margins).__name__}.")
    if method == "post-stratify" and len(margins.targets) != 1:
        raise ParameterError(
            "`method` 'post-stratify' takes margins of one variable (its cells), got "
            f"{len(margins.targets)} ({', '.join(margins.targets)}): rake to several."
        )
    if column in df.columns:
        raise DataError(
            f"`column` {column!r} is already a column of the data: choose another name for "
            "the new weights (the data's columns are kept as they are)."
        )
    base = np.ones(len(df)) if weights is None else _base(df, weights)
    labels = {k: _labels(df, k, t) for k, t in margins.targets.items()}
    parts = {k: (labels[k], margins.targets[k]) for k in margins.targets}
    before = kish_deff(base)
    if method == "rake":
        fit = rake_weights(base, parts, tolerance=tolerance, max_iterations=max_iterations)
        if not fit.converged:
            raise DataError(
                f"raking did not converge: after {fit.iterations} iterations a margin is still "
                f"{fit.max_error:.3g} (relative) from its target, above the tolerance "
                f"{tolerance:g}; check that the margins are consistent (and every cell has "
                "respondents), or allow more iterations."
            )
        w, iterations, error = fit.weights, fit.iterations, fit.max_error
    else:
        ((lab, targets),) = parts.values()
        w = post_stratify(SampleDesign(weights=base), lab, targets).weights
        iterations, error = 1, 0.0
    if trim is not None:
        w = trim_weights(SampleDesign(weights=w), lower=trim[0], upper=trim[1]).weights
    out = df.copy()
    out[column] = np.asarray(w, dtype=np.float64)
    achieved = _achieved(labels, margins, np.asarray(w, dtype=np.float64))
    if trim is not None:
        error = max(abs(x / t - 1) for _, _, t, x in achieved)
    return Weighting(out, column, method, margins.kind, iterations, True, error, before,
                     kish_deff(w), trim, achieved)  # fmt: skip


def _base(df: Any, name: str) -> FloatArray:
    from deniable.survey._sample import DesignColumns

    design = DesignColumns(weights=name).design(df)
    return np.asarray(design.weights, dtype=np.float64)


def _labels(df: Any, variable: str, targets: dict[str, float]) -> npt.NDArray[Any]:
    """The rows' levels of ``variable`` as text, each one a level of the margins."""
    if variable not in df.columns:
        raise DataError(
            f"margin variable {variable!r} must be a column of the data "
            f"({', '.join(map(repr, df.columns))})."
        )
    s = df[variable]
    texts = np.array([None if _missing(x) else _text(x) for x in s], dtype=object)
    gone = np.flatnonzero(texts == None)  # noqa: E711 - elementwise
    if gone.size:
        raise DataError(
            f"margin variable {variable!r} is missing in data row {gone[0] + 1} ({gone.size} "
            "such rows): every respondent needs a level of each margin variable."
        )
    seen = set(texts.tolist())
    unknown = sorted(seen - set(targets))
    if unknown:
        count = int(np.sum(texts == unknown[0]))
        raise DataError(
            f"margins give no target for {variable}={unknown[0]}, which {count} respondent(s) "
            f"have (levels in the margins: {', '.join(targets)}); add it, or recode the data."
        )
    empty = [lv for lv in targets if lv not in seen]
    if empty:
        raise DataError(
            f"margins give {variable}={empty[0]} (target {targets[empty[0]]:g}), which no "
            "respondent has: a cell without respondents cannot be weighted up; collapse it "
            "with a neighbour."
        )
    return texts


def _achieved(
    labels: dict[str, npt.NDArray[Any]], margins: Margins, w: FloatArray
) -> tuple[tuple[str, str, float, float], ...]:
    total = float(w.sum())
    out = []
    for variable, targets in margins.targets.items():
        texts = labels[variable]
        for level, target in targets.items():
            got = float(w[texts == level].sum())
            out.append((variable, level, target, got / total if margins.kind == "shares" else got))
    return tuple(out)
