"""The presentation of every result: :class:`Table` (a title, rows and notes) that prints for
people (``str``), renders as HTML in Jupyter (``_repr_html_``) and converts to plain data, and
:class:`Result`, the base of every result object (``table()`` and ``to_dict()``; ``str()``
and the HTML come from the table).

The command line renders a :class:`Table` with rich in one place (``deniable.cli``).
"""

from __future__ import annotations

import html
import math
import textwrap
from dataclasses import dataclass, field
from typing import Any

from deniable.common import to_jsonable
from deniable.common import validation as v
from deniable.exceptions import ParameterError

__all__ = ["Result", "Table", "format_cell"]

#: The width ``str(table)`` wraps long labelled values at.
_WIDTH = 88


def format_cell(x: Any) -> str:
    """A cell for people: floats to 4 decimals (4 significant digits when tiny or huge;
    never a probability below 1 as ``1``), infinities as ``inf``, ``None`` as ``-``,
    anything else as its ``str``."""
    if x is None:
        return "-"
    if isinstance(x, bool):
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


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


class Result:
    """The base of every result object that prints.

    A result gives :meth:`table` (a :class:`Table`: how it prints) and :meth:`to_dict` (plain
    JSON data, through :func:`~deniable.common.to_jsonable`); ``str(result)`` is
    ``str(result.table())`` and Jupyter shows ``result.table()`` as HTML.
    """

    __slots__ = ()

    def table(self) -> Table:
        """The result as a :class:`Table`."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON data."""
        raise NotImplementedError

    def __str__(self) -> str:
        return str(self.table())

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


@dataclass(frozen=True)
class Table(Result):
    """A titled table: ``columns`` and ``rows`` (tuples of values), with notes below.

    Attributes
    ----------
    columns : the column names.
    rows : one tuple of values per row (strings are printed as they are; numbers by
        ``format_cell``; a cell may hold several lines).
    title : printed above the table.
    notes : lines printed below the table.
    header : ``False`` for a table of labelled values (:meth:`pairs`): no header line, the
        first column holds the labels.
    sections : further tables printed below this one (a result with a summary and a table
        per parameter).
    align : one letter per column, ``l`` or ``r``; by default a column of numbers is
        right-aligned and any other left-aligned.

    ``str(table)`` aligns the columns; :meth:`_repr_html_` gives an HTML table (Jupyter);
    :meth:`to_dicts` gives a list of dicts (infinities stay floats); :meth:`to_json` and
    :meth:`to_dict` give JSON-safe data (infinities become the string ``"inf"``).
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    title: str = ""
    notes: tuple[str, ...] = ()
    header: bool = True
    sections: tuple[Table, ...] = field(default=(), repr=False)
    align: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.notes, str):
            object.__setattr__(self, "notes", (self.notes,) if self.notes else ())
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "rows", tuple(tuple(row) for row in self.rows))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "sections", tuple(self.sections))
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ParameterError(
                    f"`rows[{i}]` must have {len(self.columns)} entries (one per column), "
                    f"got {len(row)}."
                )
        if self.align and (len(self.align) != len(self.columns) or set(self.align) - {"l", "r"}):
            raise ParameterError(
                f"`align` must be one letter l or r per column ({len(self.columns)}), "
                f"got {self.align!r}."
            )

    @classmethod
    def pairs(
        cls,
        rows: Any,
        *,
        title: str = "",
        notes: tuple[str, ...] | str = (),
        sections: tuple[Table, ...] = (),
    ) -> Table:
        """A table of labelled values: ``rows`` are ``(label, value)`` pairs."""
        return cls(
            ("field", "value"),
            tuple((str(k), x) for k, x in rows),
            title=title,
            notes=notes if isinstance(notes, tuple) else (notes,),
            header=False,
            sections=sections,
            align="ll",
        )

    # ------------------------------------------------------------------ data

    def to_dicts(self) -> list[dict[str, Any]]:
        """One dict per row, keyed by column name."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def to_json(self) -> list[dict[str, Any]]:
        """Like :meth:`to_dicts`, JSON-safe (non-finite floats as ``"inf"``, ``"nan"``)."""
        out: list[dict[str, Any]] = to_jsonable(self.to_dicts())
        return out

    def to_dict(self) -> dict[str, Any]:
        """The whole table as plain JSON data: title, columns, rows, notes, sections."""
        out: dict[str, Any] = {
            "title": self.title,
            "columns": list(self.columns),
            "rows": to_jsonable(self.rows),
            "notes": list(self.notes),
        }
        if self.sections:
            out["sections"] = [s.to_dict() for s in self.sections]
        return out

    def table(self) -> Table:
        return self

    def column(self, name: str) -> list[Any]:
        """The values of column ``name``."""
        j = self.columns.index(v.choice("name", name, self.columns))
        return [row[j] for row in self.rows]

    def __len__(self) -> int:
        return len(self.rows)

    # ------------------------------------------------------------------ presentation

    def alignment(self) -> str:
        """One letter per column, ``l`` or ``r`` (see ``align``)."""
        if self.align:
            return self.align
        out = []
        for j in range(len(self.columns)):
            cells = [row[j] for row in self.rows if row[j] is not None]
            out.append("r" if cells and all(_is_number(x) for x in cells) else "l")
        return "".join(out)

    def cells(self) -> list[list[str]]:
        """The rows as text, one string per cell (numbers by ``format_cell``)."""
        return [[format_cell(x) for x in row] for row in self.rows]

    def __str__(self) -> str:
        parts = [self._text()]
        parts += [str(s) for s in self.sections]
        return "\n\n".join(p for p in parts if p)

    def _text(self) -> str:
        lines = [self.title] if self.title else []
        if self.columns:
            body = self.cells()
            if not self.header and len(self.columns) == 2 and body:  # wrap long values
                room = max(30, _WIDTH - 2 - max(len(r[0]) for r in body))
                for r in body:
                    r[1] = "\n".join(
                        textwrap.fill(line, room, break_long_words=False) or line
                        for line in r[1].split("\n")
                    )
            head = [list(self.columns)] if self.header else []
            widths = [
                max((len(line) for r in head + body for line in r[j].split("\n")), default=0)
                for j in range(len(self.columns))
            ]
            align = self.alignment()

            def fmt(row: list[str]) -> list[str]:
                split = [c.split("\n") for c in row]
                height = max(len(c) for c in split)
                out = []
                for i in range(height):
                    cells = [c[i] if i < len(c) else "" for c in split]
                    text = "  ".join(
                        c.rjust(w) if a == "r" else c.ljust(w)
                        for c, w, a in zip(cells, widths, align, strict=True)
                    )
                    out.append(text.rstrip())
                return out

            if self.header:
                lines += fmt(list(self.columns))
                lines.append("  ".join("-" * w for w in widths))
            for r in body:
                lines += fmt(r)
        for note in self.notes:  # wrapped, each line of a note on its own
            lines += [textwrap.fill(line, _WIDTH) or line for line in note.split("\n")]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return "<div>" + self._html() + "".join(s._html() for s in self.sections) + "</div>"

    def _html(self) -> str:
        def esc(text: str) -> str:
            return html.escape(text).replace("\n", "<br>")

        out = []
        if self.columns:
            out.append("<table>")
            if self.title:
                out.append(f'<caption style="text-align:left">{esc(self.title)}</caption>')
            align = self.alignment()
            style = {"l": "text-align:left", "r": "text-align:right"}
            if self.header:
                out.append("<thead><tr>")
                out += [
                    f'<th style="{style[a]}">{esc(c)}</th>'
                    for c, a in zip(self.columns, align, strict=True)
                ]
                out.append("</tr></thead>")
            out.append("<tbody>")
            for row in self.cells():
                out.append("<tr>")
                for j, (c, a) in enumerate(zip(row, align, strict=True)):
                    tag = "th" if j == 0 and not self.header else "td"
                    out.append(f'<{tag} style="{style[a]}">{esc(c)}</{tag}>')
                out.append("</tr>")
            out.append("</tbody></table>")
        elif self.title:
            out.append(f"<p><strong>{esc(self.title)}</strong></p>")
        out += [f"<p>{esc(note)}</p>" for note in self.notes]
        return "".join(out)
