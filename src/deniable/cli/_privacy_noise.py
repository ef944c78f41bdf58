"""`deniable privacy shuffle` and `deniable privacy noise`: amplification by shuffling, and
noise for released counts (central model)."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from deniable.accounting import MAX_NUMERICAL_N, shuffle_closed_form_limit, shuffle_epsilon_table
from deniable.cli._base import fail
from deniable.cli._files import Output, claim_output
from deniable.cli._options import ForceOpt, JsonOpt
from deniable.cli._privacy_base import (
    DeltaOpt,
    check_choice,
    option_names,
    parse_count,
    parse_delta,
    parse_epsilon,
    parse_value,
    privacy_app,
)
from deniable.cli._render import console, emit_json, print_table
from deniable.common.validation import fmt_limit
from deniable.mechanisms import NOISE_MECHANISMS, calibrate_noise, noise_error_table

__all__ = ["PLOT_FORMATS", "claim_plot", "noise_command", "save_figure", "shuffle_command"]

SHUFFLE_METHODS = ("both", "numerical", "closed-form")
MECHANISMS = NOISE_MECHANISMS
DEFAULT_EPSILONS = "0.1,0.25,0.5,1,2,4"
#: The formats of the privacy commands' ``--plot`` (by its suffix).
PLOT_FORMATS = ("png", "svg")


def claim_plot(plot: Path | None, force: bool) -> Output | None:
    """The ``--plot`` output of a privacy command, checked before any work."""
    return claim_output("--plot", plot, force=force, formats=PLOT_FORMATS)


def save_figure(make: Callable[[], Any], out: Output) -> None:
    """Draw the figure ``make()`` returns and write it to the claimed ``out`` (its format:
    ``.png`` or ``.svg``); a missing matplotlib is one error line."""
    try:
        fig = make()
    except ImportError as exc:
        fail(str(exc))
    # a temporary file renamed into place: never half-written
    out.write(lambda tmp: fig.savefig(tmp, format=out.format))
    if "matplotlib.pyplot" in sys.modules:  # a pyplot figure: free it
        sys.modules["matplotlib.pyplot"].close(fig)


def _show_with_plot(
    result: Any, draw: str, out: Output | None, plot: Path | None, as_json: bool
) -> None:
    """Write the figure of ``deniable.plotting.<draw>(result)`` to the claimed ``out`` (if
    any), then print the result (as JSON with the plot's path, or as a table and a line
    naming the plot)."""
    if out is not None:
        from deniable import plotting  # only when a plot is drawn

        save_figure(lambda: getattr(plotting, draw)(result).figure, out)
    if as_json:
        emit_json({**result.to_dict(), "plot": None if plot is None else str(plot)})
        return
    print_table(result.table())
    if plot is not None:
        console().print(f"plot written to {plot}", markup=False, highlight=False)


# --------------------------------------------------------------------------- shuffle


@privacy_app.command("shuffle")
def shuffle_command(
    epsilon0: Annotated[
        str, typer.Option("--epsilon0", help="Local ε0 of each respondent's report.")
    ],
    n: Annotated[str | None, typer.Option("--n", help="Number of respondents.")] = None,
    n_grid: Annotated[
        str | None,
        typer.Option("--n-grid", help="Several numbers of respondents, comma-separated."),
    ] = None,
    delta: DeltaOpt = "1e-6",
    method: Annotated[
        str, typer.Option("--method", help="both, numerical or closed-form.")
    ] = "both",
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Also plot ε against n (log-log) to FILE.png or FILE.svg."),
    ] = None,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Central (ε, δ) of n shuffled ε0-LDP reports (Feldman-McMillan-Talwar 2021)."""
    if (n is None) == (n_grid is None):
        fail(f"give exactly one of --n and --n-grid, got {'both' if n else 'neither'}.")
    e0 = parse_epsilon("--epsilon0", epsilon0, allow_zero=False, allow_inf=False)
    sizes = (
        [parse_count("--n", n, maximum=10**300)]
        if n is not None
        else [parse_count("--n-grid", x, maximum=10**300) for x in (n_grid or "").split(",")]
    )
    d = parse_delta("--delta", delta)
    m = check_choice("--method", method, SHUFFLE_METHODS)
    if plot is not None and m == "closed-form":
        fail(
            "`--plot` draws the numerical bound (and the closed form beside it): use "
            "--method both or numerical."
        )
    for size in sizes:  # what the bounds need, with the option that set it
        limit = shuffle_closed_form_limit(d, n=size)
        if m == "closed-form" and n is not None and e0 > limit:
            fail(
                f"the closed form (Feldman-McMillan-Talwar 2021, Thm. 3.1) needs `--epsilon0` "
                f"<= ln(n / (16 ln(2/δ))) = {limit:.6g} for n = {size}, got {e0:g}; use "
                "--method numerical."
            )
        if m != "closed-form" and size > MAX_NUMERICAL_N and (m == "numerical" or plot is not None):
            fail(
                f"`{'--n' if n is not None else '--n-grid'}` must be an integer in "
                f"[1, {fmt_limit(MAX_NUMERICAL_N)}] for the numerical bound (its work "
                f"grows like sqrt(n); --method closed-form takes any n), got {size}."
            )
    out = claim_plot(plot, force)
    table = shuffle_epsilon_table(e0, d, n=sizes, method=m)
    _show_with_plot(table, "plot_shuffle", out, plot, as_json)


# --------------------------------------------------------------------------- noise


def _sensitivity(mechanism: str, text: str) -> float:
    s = parse_value("--sensitivity", text)
    if mechanism.startswith("discrete") and not (s >= 1 and s == math.floor(s)):
        fail(f"`--sensitivity` must be a whole number >= 1 for `{mechanism}`, got {text}.")
    if not 0 < s < math.inf:
        fail(f"`--sensitivity` must be in (0, inf), got {text}.")
    return s


_NOISE_OPTIONS = {
    "epsilon": "--epsilon",
    "epsilons": "--epsilons",
    "delta": "--delta",
    "rho": "--rho",
    "sensitivity": "--sensitivity",
    "mechanism": "--mechanism",
    "method": "--method",
}


def _calibrated(
    mechanism: str,
    epsilon: str | None,
    delta: str | None,
    rho: str | None,
    sensitivity: str,
    method: str,
) -> Any:
    """The mechanism calibrated from the options (checked here, naming the options)."""
    sens = _sensitivity(mechanism, sensitivity)
    eps = (
        None
        if epsilon is None
        else parse_epsilon("--epsilon", epsilon, allow_zero=False, allow_inf=False)
    )
    d = None if delta is None else parse_delta("--delta", delta)
    r = None if rho is None else parse_epsilon("--rho", rho, allow_zero=False, allow_inf=False)
    if mechanism in ("laplace", "discrete-laplace"):
        if r is not None or d is not None or eps is None:
            fail(f"`--mechanism {mechanism}` is pure ε-DP: give --epsilon (and no --delta, --rho).")
    else:
        if (eps is None) == (r is None):
            fail(f"`--mechanism {mechanism}` needs --epsilon with --delta, or --rho (not both).")
        if eps is not None and d is None:
            fail(f"`--mechanism {mechanism}` with --epsilon needs --delta.")
        if method != "analytic" and (mechanism != "gaussian" or r is not None):
            fail("`--method classic` applies to --mechanism gaussian with --epsilon and --delta.")
    return calibrate_noise(mechanism, epsilon=eps, delta=d, rho=r, sensitivity=sens, method=method)


@privacy_app.command("noise")
def noise_command(
    mechanism: Annotated[
        str | None, typer.Option("--mechanism", help=", ".join(MECHANISMS) + ".")
    ] = None,
    epsilon: Annotated[str | None, typer.Option("--epsilon", help="Target ε.")] = None,
    delta: Annotated[
        str | None, typer.Option("--delta", help="Target δ (Gaussians; table default 1e-6).")
    ] = None,
    rho: Annotated[str | None, typer.Option("--rho", help="Target zCDP ρ (Gaussians).")] = None,
    sensitivity: Annotated[
        str, typer.Option("--sensitivity", help="Sensitivity Δ of the count (1: one row).")
    ] = "1",
    method: Annotated[
        str, typer.Option("--method", help="Gaussian σ for (ε, δ): analytic or classic.")
    ] = "analytic",
    table: Annotated[
        bool, typer.Option("--table", help="Expected |error| against ε for every mechanism.")
    ] = False,
    epsilons: Annotated[
        str, typer.Option("--epsilons", help="--table: the ε values, comma-separated.")
    ] = DEFAULT_EPSILONS,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="--table: also plot it to FILE.png / .svg.")
    ] = None,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Noise for a released count: scale or σ, ε / ρ, and expected absolute error.

    A scale or σ beyond the doubles is refused.
    The discrete Gaussian takes σ in [1e-100, 1e100]; its exact (ε, δ) curve, σ up to 1e5."""
    check_choice("--method", method, ("analytic", "classic"))
    if not table:
        if plot is not None or force:
            fail(f"`{'--plot' if plot is not None else '--force'}` goes with --table.")
        if mechanism is None:
            fail("give --mechanism (one of " + ", ".join(MECHANISMS) + ") or --table.")
        with option_names(_NOISE_OPTIONS):
            calibration = _calibrated(
                check_choice("--mechanism", mechanism, MECHANISMS),
                epsilon,
                delta,
                rho,
                sensitivity,
                method,
            )
        if as_json:
            emit_json(calibration.to_dict())
        else:
            print_table(calibration.table())
        return
    if mechanism is not None or epsilon is not None or rho is not None:
        fail(
            "`--table` compares every mechanism over --epsilons; drop --mechanism, --epsilon "
            "and --rho."
        )
    out = claim_plot(plot, force)
    sens = _sensitivity("discrete", sensitivity)
    d = parse_delta("--delta", delta or "1e-6")
    grid = [
        parse_epsilon("--epsilons", x, allow_zero=False, allow_inf=False)
        for x in epsilons.split(",")
    ]
    with option_names({**_NOISE_OPTIONS, "epsilon": "--epsilons"}):  # one of the grid
        result = noise_error_table(grid, delta=d, sensitivity=int(sens))
    _show_with_plot(result, "plot_noise_error", out, plot, as_json)
