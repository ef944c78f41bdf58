"""Turning the estimate/simulate command-line inputs into a tally: counts, yes/n, a file.

One-group designs take ``--yes Y --n N``; two-group designs take ``--yes Y1,Y2 --n N1,N2``
(or ``--counts no1,yes1,no2,yes2``).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from deniable.cli._base import fail, guard_io, parse_counts
from deniable.designs import BinaryDesign, Categorical, Design, Tally, TwoGroupDesign, TwoGroupTally


def needs_counts(design: Design) -> bool:
    """True when one report is not a yes/no (categorical, Kuk with several draws)."""
    return design.n_reports != 2 or not isinstance(design, BinaryDesign)


def _report_kind(design: Design) -> str:
    if isinstance(design, Categorical):
        return f"a category 0..{design.k - 1}"
    if design.n_reports != 2:
        return f"a count of red cards 0..{design.n_reports - 1}"
    return "0 or 1"


def read_reports(path: str, column: str | None, design: Design) -> Tally:
    """Read reports from ``path``: one integer per line, or a CSV with a header row.

    With a header, ``column`` picks the column by name (default: the first).  Every report
    must be an integer in ``0..n_reports-1`` of the design; the first bad one is named
    with its line number.
    """
    with guard_io(f"read reports file {path!r}"):
        raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        fail(f"reports file {path!r} is not UTF-8 text (byte {exc.start}).")
    rows = [(i, row) for i, row in _rows(text, path) if any(cell.strip() for cell in row)]
    if not rows:
        fail(f"reports file {path!r} holds no reports.")
    first = [cell.strip() for cell in rows[0][1]]
    has_header = not all(_is_int(cell) for cell in first)
    index = 0
    if has_header:
        rows = rows[1:]
        if column is not None:
            if column not in first:
                fail(
                    f"`--column` must be one of the header's columns "
                    f"{', '.join(repr(c) for c in first)}, got {column!r}."
                )
            index = first.index(column)
        if not rows:
            fail(f"reports file {path!r} has a header but no reports.")
    elif column is not None:
        fail(f"`--column` {column!r} needs a header row; reports file {path!r} has none.")
    top = design.n_reports - 1
    counts = [0] * design.n_reports
    for line, row in rows:
        cell = row[index].strip() if index < len(row) else ""
        value = int(cell) if _is_int(cell) else None
        if value is None or not 0 <= value <= top:
            fail(
                f"reports file {path!r} line {line}: each report must be "
                f"{_report_kind(design)} (design {design.name!r}), got {cell!r}."
            )
        counts[value] += 1
    return Tally(tuple(counts))


def _rows(text: str, path: str) -> list[tuple[int, list[str]]]:
    reader = csv.reader(io.StringIO(text))
    out = []
    try:
        for row in reader:
            out.append((reader.line_num, row))
    except csv.Error as exc:
        fail(f"reports file {path!r} line {reader.line_num}: not valid CSV ({exc}).")
    return out


def _is_int(cell: str) -> bool:
    try:
        int(cell)
    except ValueError:
        return False
    return True


def parse_whole_numbers(option: str, text: str) -> tuple[int, ...]:
    """``"373,398"`` -> ``(373, 398)``; every part a whole number (the sign is kept)."""
    out = []
    for part in text.split(","):
        try:
            out.append(int(part.strip()))
        except ValueError:
            fail(
                f"`{option}` must be a whole number (Y1,Y2 / N1,N2 for a two-group design), "
                f"got {part.strip()!r}."
            )
    return tuple(out)


def _single(option: str, text: str, design: Design) -> int:
    values = parse_whole_numbers(option, text)
    if len(values) != 1:
        fail(
            f"`{option}` takes one number for design {design.name!r} (one group; a list "
            f"such as Y1,Y2 is for two-group designs), got {text!r}."
        )
    return values[0]


def gather_two_group_tally(
    design: TwoGroupDesign,
    *,
    yes: str | None,
    n: str | None,
    reports: str | None,
    column: str | None,
    counts: str | None,
) -> TwoGroupTally:
    """The tally of a two-group design from ``--yes Y1,Y2 --n N1,N2`` or ``--counts``."""
    need = f"design {design.name!r} needs two groups"
    how = "--yes Y1,Y2 --n N1,N2 or --counts no1,yes1,no2,yes2"
    if reports is not None or column is not None:
        fail(f"{need}: give {how} (a --reports file carries no group).")
    given = [flag for flag, present in (("--yes/--n", yes is not None or n is not None),
                                        ("--counts", counts is not None)) if present]  # fmt: skip
    if len(given) != 1:
        got = "none" if not given else " and ".join(given)
        fail(f"give exactly one of {how}; got {got}.")
    if counts is not None:
        values = parse_counts(counts)
        if len(values) != 4:
            fail(f"{need}: `--counts` must have 4 entries (no1,yes1,no2,yes2), got {len(values)}.")
        return TwoGroupTally(values)
    if yes is None or n is None:
        fail(f"give both --yes and --n, got only {'--yes' if n is None else '--n'}.")
    ys, ns = parse_whole_numbers("--yes", yes), parse_whole_numbers("--n", n)
    if len(ys) != 2 or len(ns) != 2:
        fail(f"{need}: give --yes Y1,Y2 and --n N1,N2 (one count per group), got "
             f"--yes {yes} --n {n}.")  # fmt: skip
    return TwoGroupTally.from_yes_n(ys, ns)


def gather_tally(
    design: Design,
    *,
    yes: str | None,
    n: str | None,
    reports: str | None,
    column: str | None,
    counts: str | None,
) -> Tally:
    """The tally from exactly one of ``--yes/--n``, ``--reports`` and ``--counts``."""
    given = [
        flag
        for flag, present in (
            ("--yes/--n", yes is not None or n is not None),
            ("--reports", reports is not None),
            ("--counts", counts is not None),
        )
        if present
    ]
    m = design.n_reports
    shape = f"c0,...,c{m - 1}" if m > 2 else "c0,c1"
    if len(given) != 1:
        got = "none" if not given else " and ".join(given)
        how = (
            f"--counts {shape} or --reports FILE"
            if needs_counts(design)
            else "--yes Y --n N, --reports FILE or --counts c0,c1"
        )
        fail(f"give exactly one of {how}; got {got}.")
    if column is not None and reports is None:
        fail("`--column` applies to --reports only.")
    if reports is not None:
        return read_reports(reports, column, design)
    if counts is not None:
        values = parse_counts(counts)
        if len(values) != m:
            fail(
                f"`--counts` must have {m} entries ({shape}) for design {design.name!r}, "
                f"got {len(values)}."
            )
        if sum(values) == 0:
            fail("`--counts` must contain at least one report, got all zeros.")
        return Tally(values)
    if needs_counts(design):
        fail(
            f"design {design.name!r} has {m} report values, not yes/no: give "
            f"--counts {shape} or --reports FILE instead of --yes/--n."
        )
    if yes is None or n is None:
        fail(f"give both --yes and --n, got only {'--yes' if n is None else '--n'}.")
    return Tally.binary(_single("--yes", yes, design), _single("--n", n, design))
