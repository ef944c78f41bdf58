"""`deniable power` and `deniable sample-size`: power of tests of a prevalence, and the
minimal sample size reaching a target power (see docs/power.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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
from deniable.cli._options import (
    DesignArg,
    ForceOpt,
    JsonOpt,
    OptionGroup,
    ParamOpt,
    text_option,
)
from deniable.cli._render import console, emit_json, show
from deniable.designs import Design
from deniable.estimation import power, sample_size
from deniable.exceptions import DeniableError

__all__ = [
    "DEFAULT_TEST",
    "HYPOTHESES",
    "NO_HYPOTHESES",
    "TEST",
    "Hypotheses",
    "TestSetup",
    "cli",
    "epsilon_designs",
]

cli = typer.Typer()


@dataclass(frozen=True)
class Hypotheses:
    """The prevalences of a test as given on the command line (text, parsed by
    :func:`_test_options`): the true one, H0's, and a control group's."""

    prevalence: str | None = None
    null: str | None = None
    control: str | None = None
    null_control: str | None = None


@dataclass(frozen=True)
class TestSetup:
    """How the test decides, as given on the command line (parsed by :func:`_test_options`)."""

    alternative: str = "two-sided"
    alpha: str = "0.05"
    exact: bool = False
    category: int | None = None
    share: str | None = None
    nuisance: list[str] | None = None


#: The options of :class:`Hypotheses` and :class:`TestSetup`, which `deniable power` and
#: `deniable sample-size` both take (each command lists its own options between them).
HYPOTHESES = OptionGroup(Hypotheses, {
    "prevalence": text_option(
        "--prevalence", "True prevalence (of the treatment group for two samples)."),
    "null": text_option(
        "--null", "Prevalence under H0 (one-sample test; e.g. 0); with --control, the "
        "treatment group's stated null prevalence."),
    "control": text_option("--control", "Control group's true prevalence (two-sample test)."),
    "null_control": text_option(
        "--null-control", "With --control: the control group's stated null prevalence (as R's "
        "rr; without it and --null, H0 is equal prevalences with a pooled SE)."),
})  # fmt: skip
TEST = OptionGroup(TestSetup, {
    "alternative": (Annotated[str, typer.Option(
        "--alternative", help="H1: two-sided, greater or less (than null/control).")],
        "two-sided"),
    "alpha": (Annotated[str, typer.Option(
        "--alpha", help="Significance level, in (0, 1).")], "0.05"),
    "exact": (Annotated[bool, typer.Option(
        "--exact", help="Exact binomial test of the yes count (one sample).")], False),
    "category": (Annotated[int | None, typer.Option(
        "--category", help="categorical only: the category whose share is tested.")], None),
    "share": text_option(
        "--share", "Two-group designs: share assigned to group 1 (default 1/2)."),
    "nuisance": (Annotated[list[str] | None, typer.Option(
        "--nuisance", metavar="NAME=VALUE",
        help="Two-group designs: true value of a nuisance parameter, repeatable.")], None),
})  # fmt: skip
#: No option of either group given (the defaults of the commands' parameters).
NO_HYPOTHESES = Hypotheses()
DEFAULT_TEST = TestSetup()


def _test_options(design: Design, hyp: Hypotheses, test: TestSetup) -> dict[str, Any]:
    """Keyword arguments shared by `power` and `sample_size`, parsed from the options."""
    prevalence, null, control, null_control = (
        hyp.prevalence, hyp.null, hyp.control, hyp.null_control
    )  # fmt: skip
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
        "alternative": test.alternative,
        "alpha": parse_number("--alpha", test.alpha),
        "method": "exact" if test.exact else "normal",
        "category": test.category,
        "share": None if test.share is None else parse_number("--share", test.share),
        "nuisance": None
        if not test.nuisance
        else {
            k: parse_number(f"--nuisance {k}", x) for k, x in parse_params(test.nuisance).items()
        },
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
@HYPOTHESES.expand("hypotheses")
@TEST.expand("test")
def power_command(
    design: DesignArg,
    param: ParamOpt = None,
    n: Annotated[
        int | None, typer.Option("--n", "-n", help="Sample size (treatment group).")
    ] = None,
    hypotheses: Hypotheses = NO_HYPOTHESES,
    n_control: Annotated[
        int | None, typer.Option("--n-control", help="Control group size (default: --n).")
    ] = None,
    test: TestSetup = DEFAULT_TEST,
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
    opts = _test_options(d, hypotheses, test)
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
@HYPOTHESES.expand("hypotheses")
@TEST.expand("test")
def sample_size_command(
    design: DesignArg,
    param: ParamOpt = None,
    target: Annotated[
        str | None, typer.Option("--power", help="Target power, in (0, 1) (e.g. 0.8).")
    ] = None,
    hypotheses: Hypotheses = NO_HYPOTHESES,
    ratio: Annotated[
        str, typer.Option("--ratio", help="Two samples: controls per treated respondent.")
    ] = "1",
    test: TestSetup = DEFAULT_TEST,
    max_n: Annotated[int, typer.Option("--max-n", help="Give up beyond this n (scans only).")] = 10
    ** 7,
    as_json: JsonOpt = False,
) -> None:
    """The minimal sample size whose power reaches --power (power(n - 1) falls short)."""
    d = build_design(design, param)
    if target is None:
        fail("`--power` (the target power, e.g. 0.8) is required.")
    opts = _test_options(d, hypotheses, test)
    if hypotheses.control is None and ratio != "1":
        fail(f"`--ratio` applies to a two-sample test (give --control), got {ratio!r}.")
    result = sample_size(
        d,
        parse_number("--power", target),
        ratio=parse_number("--ratio", ratio),
        max_n=max_n,
        **opts,
    )
    show(result, as_json)
