"""`deniable privacy shuffle` and `deniable privacy noise`: amplification by shuffling, and
noise for released counts (central model)."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from deniable.accounting import (
    ShuffleTable,
    shuffle_epsilon_closed_form,
    shuffle_epsilon_numerical,
)
from deniable.accounting._shuffle import MAX_NUMERICAL_N
from deniable.cli._base import console, emit_json, fail, guard_io, kv_table
from deniable.cli._privacy_base import (
    DeltaOpt,
    JsonOpt,
    check_choice,
    fmt_delta,
    fmt_eps,
    option_names,
    parse_count,
    parse_delta,
    parse_epsilon,
    parse_value,
    print_table,
    privacy_app,
    simple_table,
)
from deniable.common._files import atomic_write
from deniable.common._validation import fmt_limit
from deniable.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    noise_error_table,
)
from deniable.plotting import plot_noise_error, plot_shuffle

__all__ = ["noise_command", "save_figure", "shuffle_command"]

SHUFFLE_METHODS = ("both", "numerical", "closed-form")
MECHANISMS = ("laplace", "gaussian", "discrete-laplace", "discrete-gaussian")
DEFAULT_EPSILONS = "0.1,0.25,0.5,1,2,4"


def save_figure(make: Callable[[], Any], path: Path) -> None:
    """Draw the figure ``make()`` returns and write it to ``path`` (``.png`` or ``.svg``);
    a missing matplotlib is one error line."""
    suffix = path.suffix.lower()
    if suffix not in (".png", ".svg"):
        fail(f"`--plot` must be a file name ending in .png or .svg, got {str(path)!r}.")
    try:
        fig = make()
    except ImportError as exc:
        fail(str(exc))
    with guard_io(f"write {path}"):  # a temporary file renamed into place: never half-written
        atomic_write(path, lambda tmp: fig.savefig(tmp, format=suffix[1:]))
    if "matplotlib.pyplot" in sys.modules:  # a pyplot figure: free it
        sys.modules["matplotlib.pyplot"].close(fig)


def _closed_form_limit(n: int, delta: float) -> float:
    """The largest ε0 that Feldman-McMillan-Talwar (2021) Thm. 3.1 covers."""
    ratio = n / (16 * math.log(2 / delta))
    return math.log(ratio) if ratio > 0 else -math.inf


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
    rows: list[dict[str, Any]] = []
    for size in sizes:
        row: dict[str, Any] = {"n": size}
        if m != "numerical":
            applies = e0 <= _closed_form_limit(size, d)
            if m == "closed-form" and n is not None and not applies:
                fail(
                    f"the closed form (Feldman-McMillan-Talwar 2021, Thm. 3.1) needs `--epsilon0` "
                    f"<= ln(n / (16 ln(2/δ))) = {_closed_form_limit(size, d):.6g} for n = {size}, "
                    f"got {e0:g}; use --method numerical."
                )
            row["closed_form"] = shuffle_epsilon_closed_form(e0, d, n=size) if applies else None
        if m != "closed-form":
            if size > MAX_NUMERICAL_N and (m == "numerical" or plot is not None):
                fail(
                    f"`{'--n' if n is not None else '--n-grid'}` must be an integer in "
                    f"[1, {fmt_limit(MAX_NUMERICAL_N)}] for the numerical bound (its work "
                    f"grows like sqrt(n); --method closed-form takes any n), got {size}."
                )
            big = size > MAX_NUMERICAL_N  # --method both: the closed form alone
            row["numerical"] = None if big else shuffle_epsilon_numerical(e0, d, n=size)
        rows.append(row)
    if plot is not None:
        shuffled = ShuffleTable(
            e0,
            d,
            tuple(r["n"] for r in rows),
            tuple(r.get("closed_form") for r in rows),
            tuple(r["numerical"] for r in rows),
        )
        save_figure(lambda: plot_shuffle(shuffled).figure, plot)
    if as_json:
        emit_json(
            {
                "epsilon0": e0,
                "delta": d,
                "method": m,
                "rows": rows,
                "plot": None if plot is None else str(plot),
            }
        )
        return
    cols = [c for c in ("closed_form", "numerical") if c in rows[0]]
    table = simple_table("n", *(c.replace("_", " ") + " ε" for c in cols))
    for row in rows:
        table.add_row(f"{row['n']:,}", *(fmt_eps(row[c]) for c in cols))
    print_table(
        table,
        title=f"Shuffled reports, ε0 = {e0:g} each: central ε at δ = {fmt_delta(d)}",
        note=(
            "Feldman, McMillan & Talwar 2021: Thm. 3.1 (closed form; '-' where it does not "
            "apply) and the numerical clone bound ('-' for n above "
            f"{fmt_limit(MAX_NUMERICAL_N)}, where it would take too long). Never above ε0."
        ),
    )
    if plot is not None:
        console().print(Text(f"plot written to {plot}"))


# --------------------------------------------------------------------------- noise


def _sensitivity(mechanism: str, text: str) -> float:
    s = parse_value("--sensitivity", text)
    if mechanism.startswith("discrete") and not (s >= 1 and s == math.floor(s)):
        fail(f"`--sensitivity` must be a whole number >= 1 for `{mechanism}`, got {text}.")
    if not 0 < s < math.inf:
        fail(f"`--sensitivity` must be in (0, inf), got {text}.")
    return s


def _pure_row(mechanism: str, eps: float, sens: float) -> dict[str, Any]:
    """Laplace (b = Δ/ε) or discrete Laplace (t = Δ/ε, an exact rational)."""
    if mechanism == "laplace":
        lap = LaplaceMechanism.from_epsilon(eps, sens)
        return {
            "scale": lap.scale,
            "epsilon": lap.epsilon,
            "delta": 0.0,
            "expected_abs_error": lap.expected_abs_error,
        }
    dl = DiscreteLaplaceMechanism.from_epsilon(eps, int(sens))
    return {
        "scale": float(dl.scale),
        "scale_exact": dl.scale,
        "epsilon": dl.epsilon,
        "delta": 0.0,
        "expected_abs_error": dl.expected_abs_error,
    }


def _gaussian_row(
    mechanism: str, eps: float | None, d: float | None, rho: float | None, sens: float, how: str
) -> dict[str, Any]:
    """Gaussian (analytic / classic σ for (ε, δ), or σ for ρ) or discrete Gaussian."""
    row: dict[str, Any] = {}
    if mechanism == "gaussian":
        if rho is not None:
            g = GaussianMechanism.from_zcdp(rho, sens)
            how = "zcdp"
        else:
            assert eps is not None and d is not None
            g = GaussianMechanism.from_epsilon_delta(eps, d, sens, method=how)
        row.update(sigma=g.sigma, calibration=how, rho=g.rho, mu=g.mu)
        if d is not None:
            row.update(epsilon=g.epsilon_for_delta(d), delta=d)
        row["expected_abs_error"] = g.expected_abs_error
        return row
    if rho is not None:
        dg = DiscreteGaussianMechanism.from_zcdp(rho, int(sens))
    else:
        assert eps is not None and d is not None
        dg = DiscreteGaussianMechanism.from_epsilon_delta(eps, d, int(sens))
    row.update(sigma=float(dg.sigma), sigma_exact=dg.sigma, rho=dg.rho)
    if d is not None:
        row.update(epsilon=dg.epsilon_for_delta(d), delta=d)
    row["expected_abs_error"] = dg.expected_abs_error
    return row


def _mechanism_row(
    mechanism: str,
    epsilon: str | None,
    delta: str | None,
    rho: str | None,
    sensitivity: str,
    method: str,
) -> dict[str, Any]:
    """The mechanism calibrated from the options: parameters, privacy, expected |error|."""
    sens = _sensitivity(mechanism, sensitivity)
    eps = (
        None
        if epsilon is None
        else parse_epsilon("--epsilon", epsilon, allow_zero=False, allow_inf=False)
    )
    d = None if delta is None else parse_delta("--delta", delta)
    r = None if rho is None else parse_epsilon("--rho", rho, allow_zero=False, allow_inf=False)
    row: dict[str, Any] = {"mechanism": mechanism, "sensitivity": sens}
    if mechanism in ("laplace", "discrete-laplace"):
        if r is not None or d is not None or eps is None:
            fail(f"`--mechanism {mechanism}` is pure ε-DP: give --epsilon (and no --delta, --rho).")
        row.update(_pure_row(mechanism, eps, sens))
        return row
    if (eps is None) == (r is None):
        fail(f"`--mechanism {mechanism}` needs --epsilon with --delta, or --rho (not both).")
    if eps is not None and d is None:
        fail(f"`--mechanism {mechanism}` with --epsilon needs --delta.")
    if method != "analytic" and (mechanism != "gaussian" or r is not None):
        fail("`--method classic` applies to --mechanism gaussian with --epsilon and --delta.")
    row.update(_gaussian_row(mechanism, eps, d, r, sens, method))
    return row


_PARAMETER = {"scale": "scale b", "sigma": "σ"}
_NOISE_OPTIONS = {
    "epsilon": "--epsilon",
    "epsilons": "--epsilons",
    "delta": "--delta",
    "rho": "--rho",
    "sensitivity": "--sensitivity",
}


def _print_mechanism(row: dict[str, Any]) -> None:
    mech = row["mechanism"]
    lines: list[tuple[str, str]] = [("mechanism", f"{mech} (sensitivity {row['sensitivity']:g})")]
    for key in ("scale", "sigma"):
        if key in row:
            exact = row.get(f"{key}_exact")
            small = exact is not None and 1 < exact.denominator <= 10**6
            extra = f" (exactly {exact})" if small else ""
            lines.append((_PARAMETER[key], f"{row[key]:.6g}{extra}"))
    if "calibration" in row:
        lines.append(("calibration", row["calibration"]))
    if "rho" in row:
        lines.append(("ρ (zCDP)", f"{row['rho']:.6g}"))
    if "mu" in row:
        lines.append(("μ (Gaussian DP)", f"{row['mu']:.6g}"))
    if "epsilon" in row:
        kind = "pure DP" if row["delta"] == 0 else "exact curve"
        lines.append(("(ε, δ)", f"({fmt_eps(row['epsilon'])}, {fmt_delta(row['delta'])}) {kind}"))
    lines.append(("expected |error|", f"{row['expected_abs_error']:.6g}"))
    console().print(kv_table(lines, title="Noise for a released count"))


def _print_table(table: Any) -> None:
    cols = ("laplace", "discrete_laplace", "gaussian", "gaussian_classic", "discrete_gaussian")
    out = simple_table("ε", *(c.replace("_", " ") for c in cols))
    for row in table.rows():
        out.add_row(
            f"{row['epsilon']:g}", *("-" if row[c] is None else f"{row[c]:.4f}" for c in cols)
        )
    print_table(
        out,
        title=f"Expected |error| of a count, sensitivity {table.sensitivity}",
        note=(
            f"Gaussians at δ = {fmt_delta(table.delta)}; 'gaussian classic' (Dwork-Roth) is "
            "proved for ε < 1 only ('-' above)."
        ),
    )


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
    as_json: JsonOpt = False,
) -> None:
    """Noise for a released count: scale or σ, ε / ρ, and expected absolute error."""
    check_choice("--method", method, ("analytic", "classic"))
    if not table:
        if plot is not None:
            fail("`--plot` goes with --table.")
        if mechanism is None:
            fail("give --mechanism (one of " + ", ".join(MECHANISMS) + ") or --table.")
        with option_names(_NOISE_OPTIONS):
            row = _mechanism_row(
                check_choice("--mechanism", mechanism, MECHANISMS),
                epsilon,
                delta,
                rho,
                sensitivity,
                method,
            )
        if as_json:
            emit_json(row)
        else:
            _print_mechanism(row)
        return
    if mechanism is not None or epsilon is not None or rho is not None:
        fail(
            "`--table` compares every mechanism over --epsilons; drop --mechanism, --epsilon "
            "and --rho."
        )
    sens = _sensitivity("discrete", sensitivity)
    d = parse_delta("--delta", delta or "1e-6")
    grid = [
        parse_epsilon("--epsilons", x, allow_zero=False, allow_inf=False)
        for x in epsilons.split(",")
    ]
    with option_names(_NOISE_OPTIONS):
        result = noise_error_table(grid, delta=d, sensitivity=int(sens))
    if plot is not None:
        save_figure(lambda: plot_noise_error(result).figure, plot)
    if as_json:
        emit_json(
            {
                "delta": result.delta,
                "sensitivity": result.sensitivity,
                "rows": result.rows(),
                "plot": None if plot is None else str(plot),
            }
        )
        return
    _print_table(result)
    if plot is not None:
        console().print(Text(f"plot written to {plot}"))
