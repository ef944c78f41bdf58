"""From a formula and a data frame to the arrays the regression likelihoods need.

pandas and formulaic (the ``[data]`` extra) are imported here, lazily, so that the core
package imports without them.  Every check raises a ``deniable`` error naming the problem:
a column the formula names but the data lack, an outcome that is not 0/1, a column of
reports that is not 0/1, a design without binary reports, a design matrix without full rank.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import BinaryDesign, Kuk
from deniable.estimation._formula import check_formula, evaluation_context
from deniable.exceptions import DataError, ParameterError, ParameterTypeError

if TYPE_CHECKING:  # pragma: no cover
    from deniable.estimation._regression_logit import LogitFit
    from deniable.estimation._regression_mixture import MixtureFit

__all__ = [
    "ModelData",
    "as_frame",
    "check_design",
    "check_finite",
    "check_se",
    "columns_list",
    "fit_fields",
    "model_data",
    "named_columns",
    "not_in_data",
    "require_data_extras",
]

Array = npt.NDArray[np.float64]

_EXTRA_HINT = "pip install deniable[data]"


def require_data_extras() -> tuple[Any, Any]:
    """Import and return ``(pandas, formulaic)``; an ``ImportError`` naming the extra if absent."""
    try:
        import formulaic
        import pandas
    except ModuleNotFoundError as exc:  # pragma: no cover - the dev environment has both
        raise ImportError(
            f"regression with formulas needs pandas and formulaic ({exc.name} is missing): "
            f"{_EXTRA_HINT}"
        ) from None
    return pandas, formulaic


def check_design(design: Any) -> BinaryDesign:
    """A one-group design with one binary report per respondent and ``P1 != P0``."""
    if isinstance(design, Kuk) and design.n_reports != 2:
        raise ParameterError(
            f"`design` must give one binary report per respondent; design {design.name!r} "
            f"has {design.n_reports} report values (Kuk with draws > 1)."
        )
    if not isinstance(design, BinaryDesign):
        raise ParameterTypeError(
            "`design` must be a one-group binary design (a BinaryDesign such as Warner(0.75), "
            f"ForcedResponse(1/6, 1/6)), got {type(design).__name__} {design!r}."
        )
    if design.p_yes_given_1 == design.p_yes_given_0:
        raise ParameterError(
            f"`design` must have P(yes | 1) != P(yes | 0), got {design.p_yes_given_1} for both."
        )
    return design


def check_se(se: Any, allowed: Sequence[str]) -> str:
    """The name of a standard-error convention, one of ``allowed``."""
    return v.choice("se", se, allowed)


@dataclass(frozen=True)
class ModelData:
    """The arrays of one fit: outcome ``y``, design matrix ``X`` and the extra columns.

    ``index`` holds the data-frame labels of the rows used (rows with a missing value in a
    column the model uses are dropped: ``n_dropped``); ``spec`` is formulaic's model spec of
    the right-hand side, to build ``X`` for new data.
    """

    y: Array
    X: Array
    terms: tuple[str, ...]
    outcome: str
    formula: str
    extras: Mapping[str, Array]
    index: Any
    spec: Any
    n_dropped: int


def fit_fields(
    md: ModelData,
    fit: LogitFit | MixtureFit,
    design: BinaryDesign,
    se: str,
    tol: float,
    notes: Sequence[str],
) -> dict[str, Any]:
    """The fields of a regression result that an EM-then-Newton ``fit`` of ``md`` sets
    alike whatever the model (``logistic_rr``, ``linear_rr``)."""
    return {
        "se_type": se,
        "llf": fit.llf,
        "nobs": int(md.y.size),
        "design": design,
        "converged": fit.converged,
        "iterations": {"EM": fit.em_iterations, "Newton": fit.newton_iterations},
        "tolerance": tol,
        "n_dropped": md.n_dropped,
        "notes": tuple(notes),
    }


def as_frame(pd: Any, data: Any) -> Any:
    """``data`` as a DataFrame: a DataFrame itself, a mapping of columns as one."""
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, Mapping):
        return pd.DataFrame(dict(data))
    raise ParameterTypeError(
        f"`data` must be a pandas DataFrame (or a mapping of column names to values), "
        f"got {type(data).__name__}."
    )


def _formula_error(formula: str, exc: Exception) -> ParameterError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return ParameterError(f"`formula` {formula!r} cannot be used: {first}")


def columns_list(frame: Any) -> str:
    """The columns of ``frame`` for an error message (the first 12)."""
    cols = [str(c) for c in frame.columns]
    shown = ", ".join(repr(c) for c in cols[:12])
    return shown + (f", ... ({len(cols)} in all)" if len(cols) > 12 else "")


def named_columns(names: Sequence[Any]) -> str:
    """``column 'a'`` or ``columns 'a', 'b'``, for an error message."""
    return f"column{'s' if len(names) > 1 else ''} {', '.join(repr(c) for c in names)}"


def not_in_data(who: str, names: Sequence[Any], frame: Any) -> DataError:
    """The error for the columns ``who`` (a parameter, quoted) names that ``frame`` lacks."""
    verb = "are" if len(names) > 1 else "is"
    return DataError(
        f"{who} names {named_columns(names)}, which {verb} not in the data "
        f"(columns: {columns_list(frame)})."
    )


def binary_values(name: str, values: Any, *, what: str) -> Array:
    """A column of 0/1 values (booleans accepted) as floats, or a :class:`DataError`."""
    arr = np.asarray(values)
    if arr.dtype == np.bool_:
        return arr.astype(np.float64)
    if arr.dtype.kind == "O":  # numbers stored as Python objects are fine; text is not
        text = next((x for x in arr.ravel() if not isinstance(x, numbers.Real)), None)
        if text is not None:
            raise DataError(f"{what} {name!r} must hold 0/1 values, got {text!r}.")
        arr = arr.astype(np.float64)
    elif arr.dtype.kind not in "iuf":
        first = arr.ravel()[0]
        shown = first.item() if isinstance(first, np.generic) else first  # 'a', not np.str_('a')
        raise DataError(f"{what} {name!r} must hold 0/1 values, got {shown!r} (dtype {arr.dtype}).")
    out = arr.astype(np.float64)
    ok = (out == 0) | (out == 1)
    if not np.all(ok):
        bad = float(out[~ok][0])
        shown = int(bad) if np.isfinite(bad) and bad == int(bad) else bad
        raise DataError(f"{what} {name!r} must hold 0/1 values, got {shown!r}.")
    return out


def model_data(
    formula: Any,
    data: Any,
    *,
    outcome: str,
    extras: Mapping[str, str] | None = None,
) -> ModelData:
    """Parse ``formula`` (``"y ~ x1 + x2"``) on ``data`` into arrays.

    The formula is first checked against the formula language of
    :func:`deniable.estimation._formula.check_formula` (a :class:`ParameterError` names
    any part outside it), then evaluated by formulaic in :func:`evaluation_context` only.

    ``outcome`` is ``"binary"`` (the left-hand side must be one 0/1 column) or ``"real"``
    (one finite numeric column).  ``extras`` maps argument names to further columns (the
    direct-questioning indicator, the randomized predictor), returned aligned with ``y``.
    Rows with a missing value (NaN, None) in any column the model uses are dropped and
    counted (``n_dropped``).  A NaN or infinite value that the formula makes from present
    inputs (``np.log(x)`` with ``x <= 0``) is not missing data: it raises a
    :class:`DataError` naming the term and the number of rows (:func:`check_finite`).
    """
    pd, formulaic = require_data_extras()
    extras = dict(extras or {})
    if not isinstance(formula, str):
        raise ParameterTypeError(
            f"`formula` must be a string like 'y ~ x1 + x2', got {type(formula).__name__}."
        )
    frame = as_frame(pd, data)
    # Refuses anything outside the formula language (code, attribute access, dunders) and
    # malformed parts before formulaic parses, let alone evaluates, the formula.
    names = check_formula(formula)
    try:
        parsed = formulaic.Formula(formula)
    except formulaic.errors.FormulaicError as exc:
        raise _formula_error(formula, exc) from None
    if not hasattr(parsed, "lhs") or "~" not in formula:
        raise ParameterError(
            f"`formula` must name an outcome left of '~' (e.g. 'y ~ 1 + x1'), got {formula!r}."
        )
    columns = {str(c) for c in frame.columns}
    for role, name in extras.items():
        if not isinstance(name, str):
            raise ParameterTypeError(f"`{role}` must be a column name, got {name!r}.")
        if name not in columns:
            raise not_in_data(f"`{role}`", [name], frame)
    needed = sorted(names.columns)
    missing = [c for c in needed if c not in columns]
    if missing:
        raise not_in_data("`formula`", missing, frame)
    used = list(dict.fromkeys([*needed, *extras.values()]))
    kept = frame.dropna(subset=used) if used else frame
    if len(kept) == 0:
        raise DataError(f"no rows left: every row has a missing value in one of {used}.")
    for column in dict.fromkeys(names.covariates):
        if column not in names.categorical:
            check_numbers_not_text(pd, kept, column)
    try:
        # na_action="ignore": rows with a missing input are gone already; a NaN now comes
        # from a transform (np.log of a negative value) and must not be dropped silently.
        # numpy's RuntimeWarnings are silenced because check_finite raises a clearer error.
        with np.errstate(all="ignore"):
            matrices = formulaic.model_matrix(
                formula, kept, na_action="ignore", context=evaluation_context()
            )
    except formulaic.errors.FormulaicError as exc:
        raise _formula_error(formula, exc) from None
    lhs, rhs = matrices.lhs, matrices.rhs
    if lhs.shape[1] != 1:
        raise DataError(
            f"the outcome of `formula` {formula!r} must be one numeric column, got "
            f"{lhs.shape[1]} columns {list(map(str, lhs.columns))} (a text column?)."
        )
    name = str(lhs.columns[0])
    kinds = [str(getattr(kind, "value", kind)) for kind, _ in lhs.model_spec.encoder_state.values()]
    if "categorical" in kinds:
        raise DataError(
            f"the outcome of `formula` {formula!r} must be numeric, got text or categorical "
            f"values (column {name!r})."
        )
    index = rhs.index
    if not lhs.index.equals(index):  # pragma: no cover - na_action="ignore" keeps every row
        raise DataError("the outcome and the covariates lost different rows.")
    raw = lhs.iloc[:, 0].to_numpy()
    if raw.dtype.kind in "iufb":
        check_finite(raw.astype(np.float64)[:, None], (name,), what="the outcome")
    if outcome == "binary":
        y = binary_values(name, raw, what="the outcome")
    else:
        if raw.dtype.kind not in "iufb":
            raise DataError(f"the outcome {name!r} must be numeric, got dtype {raw.dtype}.")
        y = raw.astype(np.float64)
    X = np.asarray(rhs.to_numpy(dtype=np.float64))
    terms = tuple(str(c) for c in rhs.columns)
    if X.shape[1] == 0:
        raise ParameterError(f"`formula` {formula!r} has no covariates and no intercept.")
    check_finite(X, terms, what="the covariate")
    if X.shape[0] <= X.shape[1]:
        raise DataError(
            f"the data must have more rows than coefficients, got {X.shape[0]} rows for "
            f"{X.shape[1]} coefficients."
        )
    check_full_rank(X, terms)
    extra = {col: kept.loc[index, col].to_numpy() for col in extras.values()}
    return ModelData(
        y=y,
        X=X,
        terms=terms,
        outcome=name,
        formula=formula,
        extras={k: np.asarray(x) for k, x in extra.items()},
        index=index,
        spec=rhs.model_spec,
        n_dropped=len(frame) - len(index),
    )


def check_numbers_not_text(pd: Any, frame: Any, column: str) -> None:
    """Refuse a column of text in which at least half the values are numbers, unless the
    formula marks it categorical (``C(column)``).

    formulaic turns a text column into one dummy column per distinct value, so a numeric
    covariate with one stray value (``"unknown"``, ``"12,5"``) would silently become dozens
    of dummy columns and a model of another meaning.  The error names the column, the first
    value that is not a number and its row, and both ways out.
    """
    values = frame[column]
    if not (pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values)):
        return  # numbers, booleans, or a pandas Categorical (categorical on purpose)
    as_numbers = pd.to_numeric(values, errors="coerce")
    numeric = int(as_numbers.notna().sum())
    if numeric * 2 < len(values) or numeric == 0:
        return  # text: categories, as formulaic reads them
    stray = values[as_numbers.isna()]
    if len(stray):
        label, value = stray.index[0], stray.iloc[0]
        raise DataError(
            f"column {column!r} holds numbers ({numeric} of {len(values)} rows) and text: "
            f"{value!r} (at index {label!r}) is not a number.  Read as text, it would become one "
            f"dummy column per distinct value ({values.nunique()}); fix or blank the value, "
            f"or mark the column categorical with C({column}) in the formula."
        )
    raise DataError(
        f"column {column!r} holds numbers written as text (e.g. {values.iloc[0]!r}): read "
        f"as text it would become one dummy column per distinct value "
        f"({values.nunique()}); convert the column to numbers, or mark it categorical with "
        f"C({column}) in the formula."
    )


def check_finite(values: Array, terms: Sequence[str], *, what: str) -> None:
    """Raise a :class:`DataError` naming the first column of ``values`` that is NaN or
    infinite, and in how many rows.

    Called on the model matrix of rows whose input columns are all present: a non-finite
    value there was made by the formula (a transform outside its domain, ``np.log`` of a
    value <= 0) or is an infinite input, not a missing value, so it is not dropped.
    """
    bad = ~np.isfinite(values)
    if not bad.any():
        return
    j = int(np.flatnonzero(bad.any(axis=0))[0])
    col = values[:, j]
    count = int(bad[:, j].sum())
    kinds = " or ".join(
        k for k, hit in (("NaN", np.isnan(col)), ("infinite", np.isinf(col))) if hit.any()
    )
    rows = "row" if count == 1 else "rows"
    raise DataError(
        f"{what} {terms[j]!r} of the formula is {kinds} in {count} {rows} whose input "
        "columns are not missing (a transform outside its domain, e.g. the log of a value "
        "<= 0, or an infinite input); only rows with a missing input are dropped: fix the "
        "data or the formula."
    )


#: Largest absolute value of a model-matrix column: its square (in the information matrix)
#: must stay far inside the doubles (1.8e308).
MAX_COLUMN_SCALE = 1e150


def check_full_rank(X: Array, terms: Sequence[str]) -> None:
    """Raise a :class:`DataError` naming a column whose scale the fit cannot hold, or one
    that the others determine.  Columns are compared after scaling each to a largest value
    of 1, so a covariate measured in tiny or huge units is not mistaken for collinear."""
    scale = np.max(np.abs(X), axis=0) if X.size else np.zeros(X.shape[1])
    for big in np.flatnonzero(scale > MAX_COLUMN_SCALE):
        raise DataError(
            f"the covariate {terms[int(big)]!r} has values up to {scale[big]:.3g}: beyond "
            f"{MAX_COLUMN_SCALE:g} its square overflows the fit's arithmetic; rescale it "
            "(e.g. divide it by a power of ten in the data or the formula)."
        )
    X = X / np.where(scale > 0, scale, 1.0)
    rank = int(np.linalg.matrix_rank(X))
    if rank == X.shape[1]:
        return
    for j in reversed(range(X.shape[1])):  # name the last column that the others determine
        others = np.delete(X, j, axis=1)
        if int(np.linalg.matrix_rank(others)) == rank:
            raise DataError(
                f"the covariates are collinear: {terms[j]!r} is a linear combination of the "
                "other columns (or constant beside the intercept); drop it from the formula."
            )
    raise DataError("the covariates are collinear.")  # pragma: no cover
