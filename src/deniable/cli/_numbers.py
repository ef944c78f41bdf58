"""`deniable numbers`: the mean (and total) of a sensitive number asked by scrambled
response (:mod:`deniable.quantitative`), from a column of a report file, optionally under
the sample's design, with the design's privacy stated."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from deniable.cli._base import fail, parse_number, parse_numbers, parse_params
from deniable.cli._options import JsonOpt, LevelOpt, ParamOpt
from deniable.cli._render import emit_json, show
from deniable.cli._sample import NO_SAMPLE, SAMPLE, SampleOptions

cli = typer.Typer()


@cli.command("numbers")
@SAMPLE.expand("sampling", only=("weights", "strata", "psu", "fpc", "lonely_psu"))
def numbers_command(
    file: Annotated[
        str,
        typer.Argument(
            metavar="FILE",
            help="The report file (.csv, .csv.gz ..., .parquet).",
            show_default=False,
        ),
    ],
    column: Annotated[
        str,
        typer.Option(
            "--column",
            "-c",
            metavar="COL",
            show_default=False,
            help="The column of scrambled reports (numbers; empty cells are missing).",
        ),
    ],
    design: Annotated[
        str,
        typer.Option(
            "--design",
            "-d",
            show_default=False,
            help="additive (Z = X + S), multiplicative (Z = X S; Eichhorn-Hayre with "
            "--scrambler f) or unrelated (X with probability --p, else Y).",
        ),
    ],
    scrambler: Annotated[
        str,
        typer.Option(
            "--scrambler",
            "-s",
            show_default=False,
            help="The distribution of S (of Y for unrelated): normal, uniform, "
            "exponential, laplace, f or constant, its parameters by --param.",
        ),
    ],
    param: ParamOpt = None,
    p: Annotated[
        str | None,
        typer.Option(
            "--p",
            show_default=False,
            help="unrelated: the probability of reporting the answer itself, (0, 1].",
        ),
    ] = None,
    bounds: Annotated[
        str | None,
        typer.Option(
            "--bounds",
            metavar="LOW,HIGH",
            show_default=False,
            help="The answers' range (additive Laplace or multiplicative F: a finite epsilon).",
        ),
    ] = None,
    population: Annotated[
        str | None,
        typer.Option(
            "--population",
            metavar="N",
            show_default=False,
            help="The population size, for the total N x mean.",
        ),
    ] = None,
    sampling: SampleOptions = NO_SAMPLE,
    level: LevelOpt = 0.95,
    as_json: JsonOpt = False,
) -> None:
    """The mean (and total) of a sensitive number asked by scrambled response, from a column
    of a report file, optionally under the sample's design, with the design's privacy."""
    from deniable.quantitative import number_design
    from deniable.survey import read_reports

    spec: dict[str, Any] = {
        "design": design,
        "scrambler": {"distribution": scrambler, **{
            k: parse_number(f"--param {k}", x) for k, x in parse_params(param).items()}},
    }  # fmt: skip
    if p is not None:
        spec["p"] = parse_number("--p", p)
    if bounds is not None:
        spec["bounds"] = parse_numbers("--bounds", bounds)
    rr = number_design(spec)
    n_pop = None if population is None else parse_number("--population", population)
    sample = sampling.columns()
    frame = read_reports(file)
    if column not in frame.columns:
        fail(f"`--column` must name a column of {file} ({', '.join(map(str, frame.columns))}), "
             f"got {column!r}.")  # fmt: skip
    values = frame[column]
    if values.dtype.kind not in "biuf":
        fail(f"`--column` {column!r} must hold numbers (the scrambled reports), got text.")
    present = values.notna().to_numpy()
    if not present.any():
        fail(f"`--column` {column!r} has no reports (every cell is empty).")
    reports = values.fillna(0.0).to_numpy(dtype=float)  # missing rows: outside the domain
    sample_design = None if sample is None else sample.design(frame)
    est = rr.estimate(reports, sample_design=sample_design, population=n_pop,
                      domain=None if present.all() else present)  # fmt: skip
    if as_json:
        emit_json({"estimate": est.to_dict(level), "privacy": rr.privacy.to_dict(),
                   "design": spec})  # fmt: skip
        return
    show(est, level=level)
    show(rr.privacy)
