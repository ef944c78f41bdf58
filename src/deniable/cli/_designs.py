"""`deniable designs` and `deniable estimate`: the catalogue and estimation from counts."""

from __future__ import annotations

import inspect
from typing import Annotated

import typer

from deniable.cli._base import build_design, fail
from deniable.cli._data import (
    NO_TALLY,
    TALLY,
    TallyOptions,
    gather_tally,
    gather_two_group_tally,
)
from deniable.cli._options import DesignArg, JsonOpt, LevelOpt, ParamOpt
from deniable.cli._render import show
from deniable.common import validation as v
from deniable.designs import SE_CHOICES, Design, DesignEstimate, Kuk, Tally, design_catalog

__all__ = ["check_se", "cli", "run_estimate"]

cli = typer.Typer()


@cli.command("designs")
def designs_command(as_json: JsonOpt = False) -> None:
    """List every design: parameters, its channel at an example setting, and ε."""
    show(design_catalog(), as_json)


def check_se(design: Design, method: str | None, se: str | None) -> None:
    """One error line for an ``--se`` that is not a choice or does not apply."""
    if se is None:
        return
    v.choice("--se", se, SE_CHOICES)
    if not isinstance(design, Kuk):
        fail(
            f"`--se` applies to the kuk design only (design {design.name!r} has one SE of "
            f"its moment estimate), got {se!r}."
        )
    if method == "mle":
        fail(
            "`--se` chooses the SE of the moment estimate; --method mle has its "
            f"observed-information SE, got --se {se!r}."
        )


def run_estimate(design: Design, tally: Tally, method: str | None, se: str | None = None) -> object:
    """Estimate with the options the design's ``estimate`` takes: ``method`` (Kuk's moment
    or MLE) and ``se`` (the SE of Kuk's moment estimate with several draws; with one draw
    the empirical and the model SE are one number)."""
    check_se(design, method, se)
    takes = inspect.signature(design.estimate).parameters
    if method is not None and "method" not in takes:
        fail(
            f"`--method` applies to the kuk design only (design {design.name!r} has one "
            f"estimator), got {method!r}."
        )
    options = {"method": method or "moment", "se": se or "empirical"}
    return design.estimate(tally, **{k: x for k, x in options.items() if k in takes})


@cli.command("estimate")
@TALLY.expand("given")
def estimate_command(
    design: DesignArg,
    param: ParamOpt = None,
    given: TallyOptions = NO_TALLY,
    method: Annotated[
        str | None, typer.Option("--method", help="kuk only: moment (default) or mle.")
    ] = None,
    se: Annotated[
        str | None,
        typer.Option(
            "--se",
            help="kuk only, the SE of the moment estimate: empirical (default; the variance "
            "of the red counts) or model (the binomial-mixture variance at the estimate, as R's "
            "RRreg; with one draw the two are the same number).",
            show_default=False,
        ),
    ] = None,
    missing: Annotated[
        str,
        typer.Option("--missing", help="--reports: missing reports are drop (default) or error."),
    ] = "drop",
    level: LevelOpt = 0.95,
    as_json: JsonOpt = False,
) -> None:
    """Estimate the prevalence from randomized reports: estimate, both SEs, intervals."""
    d = build_design(design, param)
    if d.n_groups == 2:
        if method is not None or se is not None:
            which = "--method" if method is not None else "--se"
            fail(f"`{which}` applies to the kuk design only, got {method or se!r}.")
        tally = gather_two_group_tally(d, given)
        show(DesignEstimate(d, tally, d.estimate(tally), level), as_json)
        return
    v.choice("--missing", missing, ("drop", "error"))
    check_se(d, method, se)
    tally, dropped = gather_tally(d, given, missing=missing, show=not as_json)
    show(DesignEstimate(d, tally, run_estimate(d, tally, method, se), level, dropped), as_json)
