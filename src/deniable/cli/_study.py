"""`deniable simulation-study`: repeat a simulated survey and summarise the estimator
(:func:`~deniable.simulation.simulation_study`), with a progress bar on stderr."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from deniable.cli._base import build_design, fail, parse_number
from deniable.cli._decisions import DEFAULT_RESPONDENTS, RESPONDENTS, Respondents
from deniable.cli._options import DesignArg, JsonOpt, LevelOpt, ParamOpt, SeedOpt
from deniable.cli._render import show

__all__ = ["cli", "simulation_study_command"]

cli = typer.Typer()


@cli.command("simulation-study")
@RESPONDENTS.expand("respondents")
def simulation_study_command(
    design: DesignArg,
    param: ParamOpt = None,
    n: Annotated[int | None, typer.Option("--n", "-n", help="Respondents per survey.")] = None,
    prevalence: Annotated[str | None, typer.Option("--prevalence", help="True prevalence.")] = None,
    replications: Annotated[
        int, typer.Option("--replications", "-r", help="Number of simulated surveys.")
    ] = 1000,
    seed: SeedOpt = None,
    respondents: Respondents = DEFAULT_RESPONDENTS,
    null: Annotated[
        str | None, typer.Option("--null", help="Also give the rejection rate of H0: π = NULL.")
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            "--method", help="binomial (draw yes counts; default) or respondents (simulate each)."
        ),
    ] = "binomial",
    level: LevelOpt = 0.95,
    as_json: JsonOpt = False,
) -> None:
    """Repeat a simulated survey: bias, SEs, RMSE, interval coverage (and power).

    A progress bar runs on stderr when it is a terminal (never with --json).
    """
    from deniable.simulation import simulation_study

    d = build_design(design, param)
    if n is None:
        fail("`--n` (respondents per survey) is required.")
    if prevalence is None:
        fail("`--prevalence` is required.")
    pi = parse_number("--prevalence", prevalence)
    s = parse_number("--non-compliance", respondents.non_compliance)
    pi0 = None if null is None else parse_number("--null", null)
    extra = respondents.keywords()
    err = Console(stderr=True)
    bar = Progress(
        TextColumn("simulating"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=as_json or not err.is_terminal,
    )
    task: list[TaskID] = []

    def step(done: int, total: int) -> None:
        # started at the first finished block: bad input fails before anything is drawn
        if not task:
            bar.start()
            task.append(bar.add_task("surveys", total=total))
        bar.update(task[0], completed=done)

    try:
        st = simulation_study(
            d, n, pi, replications=replications, seed=seed, non_compliance=s, level=level,
            null=pi0, method=method, progress=step, **extra,
        )  # fmt: skip
    finally:
        if task:
            bar.stop()
    show(st, as_json)
