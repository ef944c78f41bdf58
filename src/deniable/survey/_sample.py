"""A survey analysis under the sample's design: weights, strata, PSUs and finite population
corrections, or replicate weights, given as columns of the data (:class:`DesignColumns`) or
as a :mod:`deniable.sampling` design, and the design-based estimate of a question's reports
(:func:`deniable.sampling.survey_estimate` of the de-biased reports).

The design is built on every row of the data; a row whose report (or randomization group)
is missing is left out of the estimate as R's ``svymean(..., na.rm = TRUE)`` does: as a
domain of the full design, so the variance still sees every PSU.  The design columns
themselves may not be missing.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import Design
from deniable.exceptions import DataError, DeniableError, ParameterError, ParameterTypeError
from deniable.sampling import (
    LONELY_PSU_RULES,
    REPLICATE_METHODS,
    ReplicateDesign,
    SampleDesign,
    SurveyEstimate,
    SurveyFrequencies,
    survey_estimate,
)
from deniable.survey._columns import column_series
from deniable.survey._questions import FrameCells
from deniable.survey._values import GROUP_RULE, MISSING, is_missing

__all__ = [
    "DesignColumns",
    "SampleArg",
    "build_sample",
    "design_estimate",
    "plan_codes",
    "sample_spec",
    "with_design",
]

#: What :func:`~deniable.survey.analyze` takes as ``sample_design``.
SampleArg = SampleDesign | ReplicateDesign
DesignBased = SurveyEstimate | SurveyFrequencies

_PARTS = ("weights", "strata", "psu", "fpc")


@dataclass(frozen=True)
class DesignColumns:
    """A sample's design read from columns of the data (R's ``svydesign(ids = ~psu, strata =
    ~strata, weights = ~weights, fpc = ~fpc, nest = TRUE)``, or ``svrepdesign``).

    Parameters
    ----------
    weights : the column of sampling weights (finite, > 0); default: all 1.
    strata : the column of strata labels; default: one stratum.
    psu : the column of PSU (cluster) labels, read within their stratum; default: each
        respondent its own PSU.
    fpc : the column of each stratum's **population count of PSUs** ``N_h``.
    replicate_weights : replicate-weight columns: a list of names, a text of names
        separated by commas, or a shell-style pattern (``"rw*"``, ``"repw[0-9]*"``) matched
        against every column name, in the data's column order.  Needs ``weights`` (the
        full-sample weights) and excludes ``strata``, ``psu`` and ``fpc``.
    replicate_method, rho, scale, rscales, mse : as :class:`~deniable.sampling.ReplicateDesign`
        (``JK1``, ``JKn``, ``bootstrap``, ``BRR``, ``Fay``; Fay's ``rho``; the overall
        ``scale`` and the per-replicate ``rscales``, by default the method's).
    lonely_psu : the rule for a stratum with one PSU (:data:`~deniable.sampling.LONELY_PSU_RULES`).
    labels : how messages name these parameters (``{"weights": "--weights"}`` on the
        command line); default: their names.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"w": [2.0, 2.0, 4.0, 4.0], "s": ["a", "a", "b", "b"]})
    >>> DesignColumns(weights="w", strata="s").design(df).describe()
    '4 respondents, 2 strata, 4 PSUs, no fpc, lonely PSU: fail'
    """

    weights: Any = None
    strata: Any = None
    psu: Any = None
    fpc: Any = None
    replicate_weights: Any = None
    replicate_method: str = "JK1"
    rho: float | None = None
    scale: float | None = None
    rscales: Any = None
    mse: bool = False
    lonely_psu: str = "fail"
    labels: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def label(self, name: str) -> str:
        """How messages name parameter ``name``."""
        return self.labels.get(name, name)

    def __post_init__(self) -> None:
        v.choice(self.label("lonely_psu"), self.lonely_psu, LONELY_PSU_RULES)
        v.choice(self.label("replicate_method"), self.replicate_method, REPLICATE_METHODS)
        if not self.given:
            raise ParameterError(
                "a DesignColumns needs at least one of `weights`, `strata`, `psu`, `fpc`, "
                "`replicate_weights` (column names), got none."
            )
        if self.replicate_weights is not None:
            extra = [self.label(p) for p in ("strata", "psu", "fpc") if getattr(self, p)]
            if extra:
                raise ParameterError(
                    f"`{self.label('replicate_weights')}` carries the design by itself: drop "
                    f"{', '.join(f'`{e}`' for e in extra)} (strata, PSUs and fpc are in the "
                    "replicates)."
                )
            if self.weights is None:
                raise ParameterError(
                    f"`{self.label('replicate_weights')}` needs `{self.label('weights')}`, the "
                    "column of full-sample weights, got none."
                )
        else:
            for name in ("rho", "scale", "rscales"):
                if getattr(self, name) is not None:
                    raise ParameterError(
                        f"`{self.label(name)}` applies to replicate weights only: give "
                        f"`{self.label('replicate_weights')}` too, or drop it."
                    )

    @property
    def given(self) -> list[str]:
        """The design parameters given (``weights``, ``strata``, ...)."""
        return [p for p in (*_PARTS, "replicate_weights") if getattr(self, p) is not None]

    def replicate_columns(self, names: Sequence[Any]) -> list[Any]:
        """The replicate-weight columns among ``names`` (none without replicate weights)."""
        spec = self.replicate_weights
        if spec is None:
            return []
        what = f"`{self.label('replicate_weights')}`"
        if isinstance(spec, str) and "," not in spec:
            found = [c for c in names if isinstance(c, str) and fnmatch.fnmatchcase(c, spec)]
            if len(found) < 2:
                raise DataError(
                    f"{what} {spec!r} must match at least 2 columns (replicate weights), "
                    f"matched {len(found)}: {', '.join(map(repr, found)) or 'none'}."
                )
            return found
        cols = [c.strip() for c in spec.split(",")] if isinstance(spec, str) else list(spec)
        if len(cols) < 2:
            raise DataError(f"{what} must name at least 2 columns, got {len(cols)}.")
        if len(set(cols)) != len(cols):
            raise DataError(f"{what} names a column twice: {cols!r}.")
        return cols

    def columns(self, names: Sequence[Any]) -> list[Any]:
        """Every column the design reads (``names``: the data's columns)."""
        plain = [getattr(self, p) for p in _PARTS if getattr(self, p) is not None]
        return [*plain, *self.replicate_columns(names)]

    def design(self, df: Any, place: Callable[[Any], str] | None = None) -> SampleArg:
        """The design of the rows of ``df`` (a pandas DataFrame); ``place(label)`` names a
        row by its index label in messages (default ``row 3``)."""
        where = place or _place
        values: dict[str, Any] = {}
        for part in _PARTS:
            name = getattr(self, part)
            if name is None:
                continue
            s = column_series(df, name, self.label(part))
            values[part] = (_numbers if part in ("weights", "fpc") else _labels)(
                s, f"`{self.label(part)}` column {name!r}", where, positive=part == "weights"
            )
        try:
            if self.replicate_weights is None:
                return SampleDesign(lonely_psu=self.lonely_psu, **values)
            reps = [
                _numbers(column_series(df, c, self.label("replicate_weights")),
                         f"`{self.label('replicate_weights')}` column {c!r}", where,
                         positive=False)
                for c in self.replicate_columns(list(df.columns))
            ]  # fmt: skip
            return ReplicateDesign(
                np.column_stack(reps), values["weights"], self.replicate_method, self.rho,
                self.scale, self.rscales, self.mse,
            )  # fmt: skip
        except DeniableError as exc:
            raise type(exc)(self._relabel(str(exc))) from None

    def _relabel(self, message: str) -> str:
        names = ("replicate_weights", "replicate_method", "lonely_psu", "rscales", "method",
                 "scale", "rho", *_PARTS)  # fmt: skip
        for name in names:
            key = "replicate_method" if name == "method" else name
            message = message.replace(f"`{name}`", f"`{self.label(key)}`")
        return message


def _place(label: Any) -> str:
    return f"row {label!r}"


def _row(s: Any, i: int, where: Callable[[Any], str]) -> str:
    label = s.index[i]
    return where(label.item() if isinstance(label, np.generic) else label)


def _numbers(
    s: Any, what: str, where: Callable[[Any], str], *, positive: bool
) -> npt.NDArray[np.float64]:
    """The column as floats: numbers, none missing, finite, ``> 0`` (``positive``) or
    ``>= 0``; the first offending row named."""
    import pandas as pd

    if pd.api.types.is_bool_dtype(s.dtype) or not pd.api.types.is_numeric_dtype(s.dtype):
        converted = pd.to_numeric(s, errors="coerce")
        bad_text = converted.isna() & ~s.isna()
        if bad_text.any():
            i = int(np.argmax(np.asarray(bad_text)))
            raise DataError(f"{what} must hold numbers, got {s.iloc[i]!r} in {_row(s, i, where)}.")
        s = converted
    arr = np.asarray(s.to_numpy(dtype=np.float64, na_value=np.nan))
    low = "> 0" if positive else ">= 0"
    bad = ~np.isfinite(arr) | ((arr <= 0) if positive else (arr < 0))
    if bad.any():
        i = int(np.argmax(bad))
        got = "a missing value" if math.isnan(arr[i]) else repr(float(arr[i]))
        raise DataError(
            f"{what} must be finite and {low} in every row, got {got} in {_row(s, i, where)} "
            f"({int(bad.sum())} such rows)."
        )
    return arr


def _labels(
    s: Any, what: str, where: Callable[[Any], str], *, positive: bool = False
) -> npt.NDArray[Any]:
    """The column's labels, none missing."""
    missing = np.asarray(s.isna(), dtype=bool)
    if s.dtype == object:
        missing |= np.fromiter((is_missing(x) for x in s), bool, len(s))
    if missing.any():
        i = int(np.argmax(missing))
        raise DataError(
            f"{what} must have a label in every row, got a missing value in {_row(s, i, where)} "
            f"({int(missing.sum())} such rows)."
        )
    arr = s.to_numpy()
    if arr.dtype == object:  # mixed text and numbers from a file: compare as text
        kinds = {type(x) for x in arr}
        if len(kinds) > 1:
            arr = np.asarray([str(x) for x in arr], dtype=object)
    return np.asarray(arr)


Spec = DesignColumns | SampleDesign | ReplicateDesign


def sample_spec(sample_design: Any, columns: Mapping[str, Any]) -> Spec | None:
    """The sample's design as given: ``sample_design`` (a design, or
    :class:`DesignColumns`) or the column shortcuts ``columns`` (``weights=`` ...), or
    ``None`` when neither is given."""
    shortcuts = {k: c for k, c in columns.items() if c is not None}
    if sample_design is None and not shortcuts:
        return None
    if sample_design is not None and shortcuts:
        raise ParameterError(
            f"give the sample's design either as `sample_design` or by the columns "
            f"{', '.join(f'`{k}`' for k in shortcuts)}, not both."
        )
    if sample_design is None:
        return DesignColumns(**shortcuts)
    if not isinstance(sample_design, DesignColumns | SampleDesign | ReplicateDesign):
        raise ParameterTypeError(
            "`sample_design` must be a deniable.sampling SampleDesign or ReplicateDesign, or a "
            f"DesignColumns, got {type(sample_design).__name__}."
        )
    return sample_design


def build_sample(df: Any, spec: Spec, place: Callable[[Any], str] | None = None) -> SampleArg:
    """The design of ``df``'s rows (``place``: how a row is named in messages)."""
    if isinstance(spec, DesignColumns):
        return spec.design(df, place)
    if spec.n != len(df):
        raise DataError(
            f"`sample_design` must have one respondent per row of the data ({len(df)}), got "
            f"{spec.n}."
        )
    return spec


def plan_codes(df: Any, plan: Any) -> tuple[Any, Any]:
    """The report codes of ``plan``'s column of ``df`` and (two-group designs) its
    randomization groups."""
    codes = FrameCells(df[plan.column]).codes(plan.rule, {})
    groups = None
    if plan.group is not None:
        groups = FrameCells(df[plan.group]).codes(GROUP_RULE, {})
    return codes, groups


def with_design(result: Any, df: Any, plan: Any, sample: SampleArg) -> Any:
    """``result`` (an :class:`~deniable.survey.Analysis` of ``plan``'s counts of ``df``)
    with its design-based estimate under ``sample``."""
    based = design_estimate(result.design, sample, *plan_codes(df, plan))
    return replace(result, design_based=based)


def design_estimate(
    rr: Design,
    sample: SampleArg,
    codes: npt.NDArray[np.int32],
    groups: npt.NDArray[np.int32] | None,
    domain: npt.NDArray[np.bool_] | None = None,
) -> DesignBased:
    """The design-based estimate of a question: its report ``codes`` (one per row of the
    design, :data:`~deniable.survey._values.MISSING` where missing) and, for a two-group
    design, each row's randomization group ``groups`` (1 or 2); ``domain``: the rows of a
    subgroup (its variance on the full design)."""
    keep = codes != MISSING
    if domain is not None:
        keep &= domain
    reports = codes.astype(np.int64)
    if groups is not None:
        keep &= groups != MISSING
        reports = 2 * (groups.astype(np.int64) - 1) + reports
    reports = np.where(keep, reports, 0)
    domain = None if keep.all() else keep
    return survey_estimate(rr, reports, sample, domain=domain)


def design_parameter(based: DesignBased, j: int, parameter: str) -> SurveyEstimate | None:
    """The design-based estimate matching the ``j``-th parameter of the unweighted analysis
    (``prevalence``; a categorical design's ``share of j``), ``None`` for one it does not
    estimate (a two-group design's other parameters)."""
    if isinstance(based, SurveyFrequencies):
        return based.category(j)
    return based if parameter == "prevalence" else None
