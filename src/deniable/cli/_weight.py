"""`deniable weight`: weights for a report table from population margins (raking or
post-stratification, optional trimming; :func:`deniable.survey.weight_frame`), written
with the table to a new file."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from deniable.cli._base import fail, parse_numbers
from deniable.cli._files import claim_output
from deniable.cli._options import ForceOpt, JsonOpt
from deniable.cli._render import console, emit_json, show

cli = typer.Typer()

#: The formats `deniable weight` writes, by suffix.
TABLE_SUFFIXES = {
    "csv": (".csv", ".csv.gz", ".csv.bz2", ".csv.xz"),
    "parquet": (".parquet", ".pq"),
}
_COMPRESSION = {".csv.gz": "gzip", ".csv.bz2": "bz2", ".csv.xz": "xz"}


def _write(frame: Any, fmt: str, suffix: str) -> Any:
    """A writer of ``frame`` to a temporary path in format ``fmt``."""
    if fmt == "parquet":
        return lambda tmp: frame.to_parquet(tmp, index=False)
    how = _COMPRESSION.get(suffix)
    return lambda tmp: frame.to_csv(tmp, index=False, compression=how)


def _trim(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    values = parse_numbers("--trim", text)
    if len(values) != 2:
        fail(f"`--trim` must be LOW,HIGH (two numbers, e.g. 0.3,3), got {text!r}.")
    return values[0], values[1]


@cli.command("weight")
def weight_command(
    reports: Annotated[
        str,
        typer.Argument(
            metavar="REPORTS",
            help="The report table: .csv (also .csv.gz ...) or .parquet.",
            show_default=False,
        ),
    ],
    margins: Annotated[
        str,
        typer.Option(
            "--margins",
            metavar="MARGINS.csv",
            show_default=False,
            help="Population margins: a CSV with the columns variable,level,target "
            "(counts, or shares adding to 1 per variable).",
        ),
    ],
    out: Annotated[
        str,
        typer.Option(
            "--out",
            "-o",
            metavar="OUT",
            show_default=False,
            help="Where to write the table with its weight column (.csv, .csv.gz, "
            ".parquet ...); never the input, never an existing file without --force.",
        ),
    ],
    post_stratify: Annotated[
        bool,
        typer.Option("--post-stratify", help="Post-stratify to one variable's cells."),
    ] = False,
    rake: Annotated[
        bool, typer.Option("--rake", help="Rake to every variable's margin (the default).")
    ] = False,
    trim: Annotated[
        str | None,
        typer.Option(
            "--trim",
            metavar="LOW,HIGH",
            show_default=False,
            help="Trim the weights to [LOW, HIGH] afterwards (the excess shared among the others).",
        ),
    ] = None,
    weights: Annotated[
        str | None,
        typer.Option(
            "--weights",
            metavar="COL",
            show_default=False,
            help="Column of base (design) weights to start from [default: all 1].",
        ),
    ] = None,
    column: Annotated[
        str, typer.Option("--column", help="Name of the new weight column.")
    ] = "weight",
    max_iterations: Annotated[
        int, typer.Option("--max-iterations", min=1, help="Raking sweeps allowed.")
    ] = 100,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Weights from population margins: rake (or post-stratify) the rows of a report table
    to a margins CSV, optionally trim, and write the table with a weight column."""
    from deniable.survey import read_reports

    if post_stratify and rake:
        fail("give one of --rake and --post-stratify, not both.")
    method = "post-stratify" if post_stratify else "rake"
    bounds = _trim(trim)
    target = claim_output("--out", out, force=force, formats=TABLE_SUFFIXES,
                          inputs=[("REPORTS", reports), ("--margins", margins)])  # fmt: skip
    frame = read_reports(reports)
    result = _weighted(frame, margins, method, weights, bounds, column, max_iterations)
    target.write(_write(result.frame, target.format, target.suffix))
    if as_json:
        emit_json({**result.to_dict(), "out": out})
        return
    show(result)
    console().print(f"wrote {out}", markup=False, highlight=False)


def _weighted(
    frame: Any,
    margins: str,
    method: str,
    weights: str | None,
    bounds: tuple[float, float] | None,
    column: str,
    max_iterations: int,
) -> Any:
    """:func:`~deniable.survey.weight_frame` to the margins file ``margins``, its
    parameters named as the options in messages."""
    from deniable.exceptions import DeniableError
    from deniable.survey import read_margins, weight_frame

    try:
        found = read_margins(margins)
        return weight_frame(frame, found, method=method, weights=weights, trim=bounds,
                            column=column, max_iterations=max_iterations)  # fmt: skip
    except DeniableError as exc:
        text = str(exc)
        for name, flag in (("`weights`", "`--weights`"), ("`column`", "`--column`"),
                           ("`lower`", "`--trim` LOW"), ("`upper`", "`--trim` HIGH"),
                           ("`method`", "`--post-stratify`")):  # fmt: skip
            text = text.replace(name, flag)
        if text.startswith(("margin", "raking")):
            text = f"`--margins`: {text}"
        raise type(exc)(text) from None


__all__ = ["TABLE_SUFFIXES", "cli"]
