"""The value rules every reader of survey data shares: which cells are reports, which are
missing, which are errors.  Used on DataFrames (:mod:`deniable.survey`) and on files read
batch by batch (:mod:`deniable.survey`), so a value means the same everywhere.

A cell is turned into a *code*: the report value (``0 .. m-1``; a randomization group ``1`` or
``2``), :data:`MISSING` or :data:`BAD`.

* **Missing**: an empty cell, a cell of spaces, ``None``, NaN, ``pd.NA``, or one of the text
  markers of :data:`MISSING_TOKENS` (pandas' default list: ``NA``, ``N/A``, ``NaN``,
  ``null``, ``None`` ...).
* **A number**: text such as ``1``, ``1.0``, ``+1``, ``1e0`` (spaces around it ignored), or a
  number in memory, counts if it equals a whole number in the allowed range.
* **A boolean**: ``True`` / ``False`` (text in any case) is the report 1 / 0 of a binary
  design; never a category or a group.
* Anything else (``"yes"``, ``2`` for a 0/1 report, ``inf``) is :data:`BAD`.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "BAD",
    "GROUP_RULE",
    "MISSING",
    "MISSING_TOKENS",
    "ValueRule",
    "is_missing",
    "report_rule",
]

#: Code of a missing cell.
MISSING = -1
#: Code of a cell that is neither an allowed value nor missing.
BAD = -2

#: Text that marks a missing value (after stripping spaces): pandas' default list.
MISSING_TOKENS = frozenset(
    {
        "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
        "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
    }
)  # fmt: skip

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_BOOL = {"true": 1, "false": 0}

Codes = npt.NDArray[np.int32]


def is_missing(x: Any) -> bool:
    """True for ``None``, NaN, ``pd.NA`` / ``NaT`` and text in :data:`MISSING_TOKENS`."""
    if x is None:
        return True
    if isinstance(x, str):
        return x.strip() in MISSING_TOKENS
    if isinstance(x, float | np.floating):
        return math.isnan(x)
    return type(x).__name__ in ("NAType", "NaTType")


@dataclass(frozen=True)
class ValueRule:
    """Allowed whole numbers ``low..high`` (and booleans when ``booleans``) and how to say so
    in an error (``allowed``, e.g. ``"reports 0 or 1 (or True/False)"``)."""

    low: int
    high: int
    booleans: bool
    allowed: str

    def _number(self, x: float) -> int:
        if math.isfinite(x) and x == int(x) and self.low <= x <= self.high:
            return int(x)
        return BAD

    def code(self, x: Any) -> int:
        """The code of one cell (text or a value in memory)."""
        if isinstance(x, str):
            text = x.strip()
            if text in MISSING_TOKENS:
                return MISSING
            flag = _BOOL.get(text.lower())
            if flag is not None:
                return flag if self.booleans else BAD
            if _NUMBER.fullmatch(text):
                return self._number(float(text))
            return BAD
        if is_missing(x):
            return MISSING
        if isinstance(x, bool | np.bool_):
            return int(x) if self.booleans else BAD
        if isinstance(x, numbers.Real):
            return self._number(float(x))
        return BAD

    def lookup(self, uniques: Iterable[Any], cache: dict[Any, int]) -> Codes:
        """The codes of ``uniques`` (distinct cells, e.g. a batch's dictionary), memoized in
        ``cache`` so each distinct text is parsed once per file."""
        out = []
        for u in uniques:
            try:
                c = cache[u]
            except KeyError:
                c = cache[u] = self.code(u)
            except TypeError:  # unhashable
                c = self.code(u)
            out.append(c)
        return np.asarray(out, dtype=np.int32)

    def numbers(self, values: npt.NDArray[Any], isna: npt.NDArray[np.bool_]) -> Codes:
        """The codes of a numeric or boolean array (``isna`` marks missing entries)."""
        codes = np.full(len(values), BAD, dtype=np.int32)
        if values.dtype == np.bool_:
            if self.booleans:
                codes[:] = values
        else:
            x = np.asarray(values, dtype=np.float64)
            with np.errstate(invalid="ignore"):
                ok = (x == np.round(x)) & (x >= self.low) & (x <= self.high)
            codes[ok] = x[ok].astype(np.int32)
        codes[isna] = MISSING
        return codes


def report_rule(m: int, design_name: str) -> ValueRule:
    """The rule for the reports of a design with ``m`` report values."""
    if m == 2:
        return ValueRule(0, 1, True, f"reports 0 or 1 (or True/False) for design {design_name!r}")
    return ValueRule(0, m - 1, False, f"reports 0 to {m - 1} for design {design_name!r}")


#: The rule for the randomization-group column of a two-group design.
GROUP_RULE = ValueRule(1, 2, False, "1 or 2 (each respondent's randomization group)")
