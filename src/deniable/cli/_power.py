"""`deniable power` and `deniable sample-size`: power of tests of a prevalence, and the
minimal sample size reaching a target power (see docs/power.md)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from deniable.cli._base import (
    build_design,
    fail,
    parse_number,
    parse_numbers,
    parse_params,
)
from deniable.cli._files import Output, claim_output
from deniable.cli._options import DesignArg, ForceOpt, JsonOpt, ParamOpt
from deniable.cli._render import console, emit_json, show
from deniable.designs import Design
from deniable.estimation import power, sample_size
from deniable.exceptions import DeniableError

__all__ = ["cli", "epsilon_designs"]

cli = typer.Typer()

PrevalenceOpt = Annotated[
    str | None,
    typer.Option("--prevalence", help="True prevalence (of the treatment group for two samples)."),
]
NullOpt = Annotated[
    str | None,
    typer.Option(
        "--null",
        help="Prevalence under H0 (one-sample test; e.g. 0); with --control, the treatment "
        "group's stated null prevalence.",
    ),
]
ControlOpt = Annotated[
    str | None,
    typer.Option("--control", help="Control group's true prevalence (two-sample test)."),
]
NullControlOpt = Annotated[
    str | None,
    typer.Option(
        "--null-control",
        help="With --control: the control group's stated null prevalence (as R's rr; "
        "without it and --null, H0 is equal prevalences with a pooled SE).",
    ),
]
AlternativeOpt = Annotated[
    str,
    typer.Option("--alternative", help="H1: two-sided, greater or less (than null/control)."),
]
AlphaOpt = Annotated[str, typer.Option("--alpha", help="Significance level, in (0, 1).")]
ExactOpt = Annotated[
    bool,
    typer.Option("--exact", help="Exact binomial test of the yes count (one sample)."),
]
CategoryOpt = Annotated[
    int | None,
    typer.Option("--category", help="categorical only: the category whose share is tested."),
]
ShareOpt = Annotated[
    str | None,
    typer.Option("--share", help="Two-group designs: share assigned to group 1 (default 1/2)."),
]
NuisanceOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--nuisance",
        metavar="NAME=VALUE",
        help="Two-group designs: true value of a nuisance parameter, repeatable.",
    ),
]


def _test_options(
    design: Design,
    prevalence: str | None,
    null: str | None,
    control: str | None,
    null_control: str | None,
    alternative: str,
    alpha: str,
    exact: bool,
    category: int | None,
    share: str | None,
    nuisance: list[str] | None,
) -> dict[str, Any]:
    """Keyword arguments shared by `power` and `sample_size`, parsed from the options."""
    if prevalence is None:
        fail("`--prevalence` (the true prevalence) is required.")
    if null is None and control is None:
        fail(
            "give --null PI0 (one-sample test, e.g. --null 0) or --control PI_B (two-sample "
            "test), got neither."
        )
    if null_control is not None and control is None:
        fail("`--null-control` applies to a two-sample test: give --control PI_B too.")
    return {
        "prevalence": parse_number("--prevalence", prevalence),
        "null": None if null is None else parse_number("--null", null),
        "control": None if control is None else parse_number("--control", control),
        "null_control": None
        if null_control is None
        else parse_number("--null-control", null_control),
        "alternative": alternative,
        "alpha": parse_number("--alpha", alpha),
        "method": "exact" if exact else "normal",
        "category": category,
        "share": None if share is None else parse_number("--share", share),
        "nuisance": None
        if not nuisance
        else {k: parse_number(f"--nuisance {k}", x) for k, x in parse_params(nuisance).items()},
    }


def epsilon_designs(design: Design, epsilons: list[float]) -> dict[str, Design]:
    """One design per ε, labelled (``deniable.plotting.epsilon_lines``); an error names
    ``--epsilons``."""
    from deniable.plotting import epsilon_lines

    try:
        return epsilon_lines(design, epsilons)
    except DeniableError as exc:
        fail(f"`--epsilons`: {exc}")


def _plot(
    out: Output,
    design: Design,
    epsilons: str | None,
    n_max: int,
    opts: Mapping[str, Any],
    ratio: float,
) -> Path:
    from deniable.plotting import design_label, plot_power_curves

    lines: dict[str, Design] = {design_label(design): design}
    if epsilons is not None:
        lines.update(epsilon_designs(design, parse_numbers("--epsilons", epsilons)))
    test = {k: x for k, x in opts.items() if k not in ("prevalence", "null")}
    if test["null_control"] is None:
        del test["null_control"]
    if test["control"] is not None:
        test["ratio"] = ratio

    def draw(tmp: Path) -> Path:
        return plot_power_curves(tmp, lines, opts["prevalence"], opts["null"], n_max=n_max, **test)

    try:
        return out.write(draw)
    except ImportError as exc:
        fail(str(exc))


@cli.command("power")
def power_command(
    design: DesignArg,
    param: ParamOpt = None,
    n: Annotated[
        int | None, typer.Option("--n", "-n", help="Sample size (treatment group).")
    ] = None,
    prevalence: PrevalenceOpt = None,
    null: NullOpt = None,
    control: ControlOpt = None,
    null_control: NullControlOpt = None,
    n_control: Annotated[
        int | None, typer.Option("--n-control", help="Control group size (default: --n).")
    ] = None,
    alternative: AlternativeOpt = "two-sided",
    alpha: AlphaOpt = "0.05",
    exact: ExactOpt = False,
    category: CategoryOpt = None,
    share: ShareOpt = None,
    nuisance: NuisanceOpt = None,
    plot: Annotated[
        str | None,
        typer.Option(
            "--plot", metavar="FILE", help="Also draw power against n (FILE.png, .svg or .pdf)."
        ),
    ] = None,
    plot_n_max: Annotated[
        int | None, typer.Option("--plot-n-max", help="Largest n on the plot (default 2 n).")
    ] = None,
    epsilons: Annotated[
        str | None,
        typer.Option(
            "--epsilons",
            metavar="E1,E2,...",
            help=(
                "With --plot: one line per ε (the design rebuilt by from_epsilon, keeping "
                "its other parameters, e.g. k of categorical)."
            ),
        ),
    ] = None,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Power of a one- or two-sample test of the prevalence, with the SEs under H0 and H1."""
    d = build_design(design, param)
    if n is None:
        fail("`--n` (the sample size) is required.")
    if plot is None and (plot_n_max is not None or epsilons is not None):
        fail("`--plot-n-max` and `--epsilons` are used only with --plot FILE.")
    from deniable.plotting import PLOT_FORMATS

    out = claim_output("--plot", plot, force=force, formats=[f[1:] for f in PLOT_FORMATS])
    opts = _test_options(
        d, prevalence, null, control, null_control, alternative, alpha, exact, category, share,
        nuisance,
    )  # fmt: skip
    result = power(d, n, n_control=n_control, **opts)
    written = None
    if out is not None:
        top = plot_n_max if plot_n_max is not None else max(2 * result.n, 10)
        ratio = (result.n_control or result.n) / result.n
        written = _plot(out, d, epsilons, top, opts, ratio)
    if as_json:
        payload = result.to_dict()
        if written is not None:
            payload["plot"] = str(written)
        emit_json(payload)
        return
    show(result)
    if written is not None:
        console().print(f"power curve written to {written}", markup=False, highlight=False)


@cli.command("sample-size")
def sample_size_command(
    design: DesignArg,
    param: ParamOpt = None,
    target: Annotated[
        str | None, typer.Option("--power", help="Target power, in (0, 1) (e.g. 0.8).")
    ] = None,
    prevalence: PrevalenceOpt = None,
    null: NullOpt = None,
    control: ControlOpt = None,
    null_control: NullControlOpt = None,
    ratio: Annotated[
        str, typer.Option("--ratio", help="Two samples: controls per treated respondent.")
    ] = "1",
    alternative: AlternativeOpt = "two-sided",
    alpha: AlphaOpt = "0.05",
    exact: ExactOpt = False,
    category: CategoryOpt = None,
    share: ShareOpt = None,
    nuisance: NuisanceOpt = None,
    max_n: Annotated[int, typer.Option("--max-n", help="Give up beyond this n (scans only).")] = 10
    ** 7,
    as_json: JsonOpt = False,
) -> None:
    """The minimal sample size whose power reaches --power (power(n - 1) falls short)."""
    d = build_design(design, param)
    if target is None:
        fail("`--power` (the target power, e.g. 0.8) is required.")
    opts = _test_options(
        d, prevalence, null, control, null_control, alternative, alpha, exact, category, share,
        nuisance,
    )  # fmt: skip
    if control is None and ratio != "1":
        fail(f"`--ratio` applies to a two-sample test (give --control), got {ratio!r}.")
    result = sample_size(
        d,
        parse_number("--power", target),
        ratio=parse_number("--ratio", ratio),
        max_n=max_n,
        **opts,
    )
    show(result, as_json)
