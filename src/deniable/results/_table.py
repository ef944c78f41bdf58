"""A small printable table (:class:`Table`) and the cell format it prints: the results of
:mod:`deniable.audit`, :mod:`deniable.audit` and :mod:`deniable.mechanisms`.

Re-exported by :mod:`deniable.audit`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from deniable.common import _validation as v
from deniable.exceptions import ParameterError

__all__ = ["Table", "format_cell"]


def format_cell(x: Any) -> str:
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        if x != 0 and (abs(x) >= 1e6 or abs(x) < 1e-4):
            return f"{x:.4g}"
        s = f"{x:.4f}".rstrip("0").rstrip(".")
        if s == "1" and x < 1:  # never print a probability below 1 as 1
            return f"1 - {1 - x:.2g}"
        return "0" if s == "-0" else s
    return str(x)


@dataclass(frozen=True)
class Table:
    """A small printable table: ``columns`` and ``rows`` (tuples of values), with a title.

    ``str(table)`` aligns the columns (floats to 4 decimals, infinities as ``inf``);
    :meth:`to_dicts` gives a list of dicts (infinities stay floats); :meth:`to_json`
    gives JSON-safe dicts (infinities become the string ``"inf"``).
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    title: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ParameterError(
                    f"`rows[{i}]` must have {len(self.columns)} entries (one per column), "
                    f"got {len(row)}."
                )

    def to_dicts(self) -> list[dict[str, Any]]:
        """One dict per row, keyed by column name."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def to_json(self) -> list[dict[str, Any]]:
        """Like :meth:`to_dicts`, with non-finite floats as strings (``"inf"``)."""

        def safe(x: Any) -> Any:
            if isinstance(x, float) and not math.isfinite(x):
                return format_cell(x)
            return x

        return [{k: safe(x) for k, x in d.items()} for d in self.to_dicts()]

    def column(self, name: str) -> list[Any]:
        """The values of column ``name``."""
        j = self.columns.index(v.choice("name", name, self.columns))
        return [row[j] for row in self.rows]

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        cells = [list(self.columns)] + [[format_cell(x) for x in row] for row in self.rows]
        widths = [max(len(r[j]) for r in cells) for j in range(len(self.columns))]
        lines = []
        if self.title:
            lines.append(self.title)
        lines.append("  ".join(c.rjust(w) for c, w in zip(cells[0], widths, strict=True)))
        lines.append("  ".join("-" * w for w in widths))
        for r in cells[1:]:
            lines.append("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)
