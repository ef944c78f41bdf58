"""Turning the estimate/simulate command-line inputs into a tally: counts, yes/n, a file.

One-group designs take ``--yes Y --n N``; two-group designs take ``--yes Y1,Y2 --n N1,N2``
(or ``--counts no1,yes1,no2,yes2``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, cast

import typer

from deniable.cli._base import fail, parse_counts
from deniable.cli._files import progress_bar
from deniable.cli._options import OptionGroup, text_option
from deniable.designs import Design, Tally, TwoGroupDesign

__all__ = [
    "NO_TALLY",
    "TALLY",
    "TallyOptions",
    "gather_tally",
    "gather_two_group_tally",
    "needs_counts",
    "parse_whole_numbers",
    "read_reports",
]


@dataclass(frozen=True)
class TallyOptions:
    """Where the reports come from, as given on the command line (text, read by
    :func:`gather_tally` and :func:`gather_two_group_tally`): ``--yes`` and ``--n``, a
    ``--reports`` file (and its ``--column``), or ``--counts``."""

    yes: str | None = None
    n: str | None = None
    reports: str | None = None
    column: str | None = None
    counts: str | None = None


#: The options of :class:`TallyOptions` (`deniable estimate`); none given: ``NO_TALLY``.
TALLY = OptionGroup(TallyOptions, {
    "yes": text_option(
        "--yes", "Number of yes reports (Y1,Y2: one per group).", metavar="Y[,Y2]"),
    "n": (Annotated[str | None, typer.Option(
        "--n", "-n", metavar="N[,N2]", help="Number of reports (N1,N2: one per group).")], None),
    "reports": text_option(
        "--reports",
        "File of reports: one per line, no header (or a CSV with a header: --column).",
        metavar="FILE"),
    "column": text_option("--column", "--reports: the file has a header; read this column."),
    "counts": text_option(
        "--counts", "Count of each report value (kuk with draws > 1, categorical; or no,yes; "
        "two-group designs: no1,yes1,no2,yes2).", metavar="C0,C1,..."),
})  # fmt: skip
NO_TALLY = TallyOptions()


def needs_counts(design: Design) -> bool:
    """True when a report is not a yes/no about a yes/no truth (categorical, Kuk with
    several draws)."""
    return design.n_reports != 2 or design.n_truths != 2


def read_reports(
    path: str, column: str | None, design: Design, missing: str = "drop", *, show: bool = False
) -> tuple[Tally, int]:
    """The tally of the reports in ``path`` and the number of missing ones
    (:func:`deniable.survey.tally_reports_file`, with a progress bar when ``show``)."""
    from deniable.survey import tally_reports_file

    with progress_bar(show, f"reading {path}") as progress:
        return tally_reports_file(
            path, design, column=column, missing=missing, progress=progress, option="--column"
        )


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


def gather_two_group_tally(design: Design, given: TallyOptions) -> Tally:
    """The tally of a two-group design from ``--yes Y1,Y2 --n N1,N2`` or ``--counts``."""
    yes, n, reports, column, counts = (
        given.yes, given.n, given.reports, given.column, given.counts
    )  # fmt: skip
    need = f"design {design.name!r} needs two groups"
    how = "--yes Y1,Y2 --n N1,N2 or --counts no1,yes1,no2,yes2"
    if reports is not None or column is not None:
        fail(f"{need}: give {how} (a --reports file carries no group).")
    flags = [flag for flag, present in (("--yes/--n", yes is not None or n is not None),
                                        ("--counts", counts is not None)) if present]  # fmt: skip
    if len(flags) != 1:
        got = "none" if not flags else " and ".join(flags)
        fail(f"give exactly one of {how}; got {got}.")
    if counts is not None:
        values = parse_counts(counts)
        if len(values) != 4:
            fail(f"{need}: `--counts` must have 4 entries (no1,yes1,no2,yes2), got {len(values)}.")
        return design.tally_counts(values)
    if yes is None or n is None:
        fail(f"give both --yes and --n, got only {'--yes' if n is None else '--n'}.")
    ys, ns = parse_whole_numbers("--yes", yes), parse_whole_numbers("--n", n)
    if len(ys) != 2 or len(ns) != 2:
        fail(f"{need}: give --yes Y1,Y2 and --n N1,N2 (one count per group), got "
             f"--yes {yes} --n {n}.")  # fmt: skip
    return cast(TwoGroupDesign, design).tally_groups(ys, ns)


def gather_tally(
    design: Design, given: TallyOptions, *, missing: str = "drop", show: bool = False
) -> tuple[Tally, int | None]:
    """The tally from exactly one of ``--yes/--n``, ``--reports`` and ``--counts``, and the
    number of missing reports left out (``None`` unless from ``--reports``)."""
    yes, n, reports, column, counts = (
        given.yes, given.n, given.reports, given.column, given.counts
    )  # fmt: skip
    flags = [
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
    if len(flags) != 1:
        got = "none" if not flags else " and ".join(flags)
        how = (
            f"--counts {shape} or --reports FILE"
            if needs_counts(design)
            else "--yes Y --n N, --reports FILE or --counts c0,c1"
        )
        fail(f"give exactly one of {how}; got {got}.")
    if column is not None and reports is None:
        fail("`--column` applies to --reports only.")
    if missing != "drop" and reports is None:
        fail("`--missing` applies to --reports only.")
    if reports is not None:
        return read_reports(reports, column, design, missing, show=show)
    if counts is not None:
        values = parse_counts(counts)
        if len(values) != m:
            fail(
                f"`--counts` must have {m} entries ({shape}) for design {design.name!r}, "
                f"got {len(values)}."
            )
        if sum(values) == 0:
            fail("`--counts` must contain at least one report, got all zeros.")
        return Tally(values), None
    if needs_counts(design):
        fail(
            f"design {design.name!r} has {m} report values, not yes/no: give "
            f"--counts {shape} or --reports FILE instead of --yes/--n."
        )
    if yes is None or n is None:
        fail(f"give both --yes and --n, got only {'--yes' if n is None else '--n'}.")
    return Tally.binary(_single("--yes", yes, design), _single("--n", n, design)), None
