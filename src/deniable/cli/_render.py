"""The one place where results are printed: a :class:`~deniable.results.Table` rendered with
rich, or a result's ``to_dict()`` as JSON (the one encoder, :func:`deniable.common.dumps`).

Rendering: the title in bold above the table; a table of labelled values (``header=False``)
in a box without a header, its labels in bold; any other table with a header line and no
box (``SIMPLE_HEAD``), each column aligned as the table says; the notes below, wrapped at the
terminal's width; then the table's sections, the same way (a titled one after a blank
line).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from deniable.common import dumps
from deniable.results import Result, Table

__all__ = ["console", "emit_json", "print_table", "show"]

#: A column whose cells are at most this wide is never wrapped.
_SHORT = 24


def console() -> Console:
    """A console on the current stdout (made per call so test runners can capture it)."""
    return Console(file=sys.stdout, highlight=False, soft_wrap=False)


def emit_json(payload: Mapping[str, Any] | Any) -> None:
    """Write ``payload`` as JSON (never NaN or Infinity; ASCII only) to stdout."""
    sys.stdout.write(dumps(payload, indent=2, ensure_ascii=True) + "\n")


def _rich(table: Table, compact: bool = False, wrap_all: bool = False) -> RichTable:
    align = table.alignment()
    cells = table.cells()
    if not table.header:
        out = RichTable(show_header=False)
        for j in range(len(table.columns)):
            out.add_column(style="bold" if j == 0 else None)
    else:
        out = RichTable(
            box=box.SIMPLE_HEAD, pad_edge=False, show_edge=not compact, collapse_padding=compact
        )
        for j, (name, a) in enumerate(zip(table.columns, align, strict=True)):
            # a short column (names, numbers) never wraps; a long text column wraps first
            widest = max((len(line) for r in [[name], *[[c[j]] for c in cells]]
                          for line in r[0].split("\n")), default=0)  # fmt: skip
            keep = widest <= _SHORT and not wrap_all  # kept whole: never narrower than its cells
            out.add_column(
                name, justify="right" if a == "r" else "left", no_wrap=keep,
                min_width=widest if keep else None, overflow="fold",
            )  # fmt: skip
    for row in cells:
        out.add_row(*(Text(cell) for cell in row))
    return out


def _fitted(table: Table, out: Console) -> RichTable:
    """The rich table; where it would not fit, compacted (less padding, no edges), then
    with every column allowed to wrap: a cell is wrapped, never cut short."""
    wide = out.options.update_width(10_000)
    for compact, wrap_all in ((False, False), (True, False)):
        rich = _rich(table, compact, wrap_all)
        # the narrowest it can be (long text columns wrapped) must fit
        if not table.header or rich.__rich_measure__(out, wide).minimum <= out.width:
            return rich
    return _rich(table, compact=True, wrap_all=True)


def print_table(table: Table, out: Console | None = None) -> None:
    """Print ``table`` (title, the table, notes, then its sections) for people."""
    out = out or console()
    if table.title:
        out.print(Text(table.title, style="bold"))
    if table.columns:
        out.print(_fitted(table, out))
    for note in table.notes:
        out.print(Text(note))
    for section in table.sections:
        if section.title:  # a titled section starts a new paragraph
            out.print()
        print_table(section, out)


def show(result: Result, as_json: bool = False, *, level: float | None = None) -> None:
    """Print ``result``: its ``to_dict()`` as JSON with ``as_json``, else its ``table()``;
    ``level`` is passed to both for a result whose intervals take one."""
    res: Any = result
    options = {} if level is None else {"level": level}
    if as_json:
        emit_json(res.to_dict(**options))
    else:
        print_table(res.table(**options))
