"""`deniable privacy explain`, `audit` and `budget`: ε for people, empirical audits of a
claimed ε, and a respondent's budget spent question by question."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from deniable.accounting import budget_plan
from deniable.audit import AuditResult, Explanation, audit_design, audit_unary
from deniable.cli._base import build_design, fail
from deniable.cli._options import ForceOpt, JsonOpt, LevelOpt, ParamOpt, SeedOpt
from deniable.cli._privacy_base import (
    check_choice,
    option_names,
    parse_count,
    parse_epsilon,
    parse_value,
    privacy_app,
)
from deniable.cli._privacy_noise import claim_plot, save_figure
from deniable.cli._render import emit_json, print_table, show
from deniable.designs import DESIGNS, TWO_GROUP_DESIGNS

__all__ = ["AUDIT_FAILED_EXIT", "audit_command", "budget_command", "explain_command"]

#: Exit status of `deniable privacy audit` when the audit refutes the claimed ε.
AUDIT_FAILED_EXIT = 1
_AUDIT_OPTIONS = {
    "claimed_epsilon": "--claimed-epsilon",
    "trials": "--trials",
    "seed": "--seed",
    "level": "--level",
    "epsilon": "--epsilon",
    "epsilon_parameter": "--epsilon",
    "k": "--k",
}
#: Above this ε, e^ε overflows a double (the largest is about e^709.8).
_MAX_EXPLAINED = 700.0
PLOT_KINDS = ("truth", "lying", "posterior")
UNARY = {"unary": "half", "unary-broken": "exact"}


# --------------------------------------------------------------------------- explain


def _plot_maker(kind: str, eps: float) -> Callable[[], Any]:
    from deniable.plotting import plot_epsilon_lying, plot_epsilon_truth, plot_posterior

    if kind == "truth":
        top = 5.0 if not math.isfinite(eps) else max(5.0, min(eps * 1.25, _MAX_EXPLAINED))
        return lambda: plot_epsilon_truth(max_epsilon=top)
    if kind == "lying":
        return plot_epsilon_lying
    curves = sorted({0.5, 1.0, 2.0, 4.0} | ({eps} if 0 < eps < math.inf else set()))
    return lambda: plot_posterior(curves)


@privacy_app.command("explain")
def explain_command(
    epsilon: Annotated[str, typer.Option("--epsilon", help="The ε to explain (inf allowed).")],
    attribute: Annotated[
        str, typer.Option("--attribute", help="What a 'yes' is about, in words.")
    ] = "has A",
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Also draw a plot to FILE.png or FILE.svg.")
    ] = None,
    plot_kind: Annotated[
        str,
        typer.Option(
            "--plot-kind",
            help="truth (ε vs P(truth) and odds), lying (ε vs P(lie)) or posterior.",
        ),
    ] = "truth",
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """ε in words: truth and lying probabilities, odds, what one answer tells an adversary."""
    eps = parse_epsilon("--epsilon", epsilon)
    spelled_inf = epsilon.strip().lower() in ("inf", "+inf", "infinity", "∞")
    if eps > _MAX_EXPLAINED and not spelled_inf:  # 1e1000 is finite, if beyond a double
        fail(
            f"`--epsilon` must be at most {_MAX_EXPLAINED:g} or inf (e^ε overflows), got {epsilon}."
        )
    kind = check_choice("--plot-kind", plot_kind, PLOT_KINDS)
    out = claim_plot(plot, force)
    with option_names({"epsilon": "--epsilon", "attribute": "--attribute"}):
        explained = Explanation(eps, attribute)
    if out is not None:
        save_figure(_plot_maker(kind, eps), out)
    if as_json:
        emit_json({**explained.to_dict(), "plot": None if plot is None else str(plot)})
        return
    print_table(explained.table())
    if plot is not None:
        typer.echo(f"\nplot ({kind}) written to {plot}")


# --------------------------------------------------------------------------- audit


@privacy_app.command("audit")
def audit_command(
    design: Annotated[
        str,
        typer.Argument(
            help="A design (see `deniable designs`), or unary / unary-broken.  A design is "
            "audited on every pair of answers: at most 2**20 (answer, report) cells "
            "(categorical: k <= 1024).",
            show_default=False,
        ),
    ],
    param: ParamOpt = None,
    epsilon: Annotated[
        str | None, typer.Option("--epsilon", help="unary / unary-broken: the ε parameter.")
    ] = None,
    k: Annotated[
        str | None, typer.Option("--k", help="unary / unary-broken: categories (default 4).")
    ] = None,
    claimed_epsilon: Annotated[
        str | None,
        typer.Option("--claimed-epsilon", help="The ε to test (default: the design's own)."),
    ] = None,
    trials: Annotated[
        str,
        typer.Option(
            "--trials",
            help="Runs per input, at most 10**8 (and 10**9 in all over a design's answers).",
        ),
    ] = "100000",
    seed: SeedOpt = None,
    level: LevelOpt = 0.95,
    as_json: JsonOpt = False,
) -> None:
    """Run a mechanism many times and test its claimed ε (exit status 1 if refuted)."""
    claimed = (
        None if claimed_epsilon is None else parse_epsilon("--claimed-epsilon", claimed_epsilon)
    )
    kw: dict[str, Any] = {
        "trials": parse_count("--trials", trials, maximum=100_000_000),
        "seed": seed,
        "level": level,
    }
    result: AuditResult
    if design in UNARY:
        if param:
            fail(f"`{design}` takes --epsilon and --k, not --param.")
        if epsilon is None:
            fail(f"`{design}` needs --epsilon (its ε parameter).")
        e = parse_epsilon("--epsilon", epsilon, allow_zero=False, allow_inf=False)
        cats = parse_count("--k", k or "4", minimum=2, maximum=64)
        with option_names(_AUDIT_OPTIONS):
            result = audit_unary(e, cats, calibration=UNARY[design], claimed_epsilon=claimed, **kw)
    else:
        if epsilon is not None or k is not None:
            fail(
                "`--epsilon` and `--k` are for unary / unary-broken; give design parameters "
                "with --param NAME=VALUE."
            )
        if design in TWO_GROUP_DESIGNS:
            fail(
                f"`{design}` is a two-group design; the audit takes one-group designs "
                "and unary / unary-broken."
            )
        if design not in DESIGNS:
            fail(
                f"unknown design {design!r}; choose one of {', '.join(DESIGNS)}, unary or "
                "unary-broken."
            )
        d = build_design(design, param)
        with option_names(_AUDIT_OPTIONS):
            result = audit_design(d, claimed_epsilon=claimed, **kw)
    show(result, as_json)
    if not result.passed:
        raise typer.Exit(AUDIT_FAILED_EXIT)


# --------------------------------------------------------------------------- budget


def _questions(items: list[str]) -> list[tuple[str, float]]:
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            fail(f"`--question` must look like NAME=EPSILON (e.g. smokes=0.5), got {item!r}.")
        eps = parse_epsilon(f"--question {name.strip()}", value)
        out.append((name.strip(), eps))
    return out


@privacy_app.command("budget")
def budget_command(
    cap: Annotated[str, typer.Option("--cap", help="Each respondent's total ε budget.")],
    question: Annotated[
        list[str],
        typer.Option(
            "--question",
            "-q",
            metavar="NAME=EPSILON",
            help="A question in the order asked, repeatable; a name may repeat.",
        ),
    ],
    memoized: Annotated[
        list[str] | None,
        typer.Option("--memoized", metavar="NAME", help="A memoized question (repeats free)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """One respondent's budget spent question by question: which questions fit, what is left."""
    cap_value = parse_value("--cap", cap, allow_inf=True)
    if not 0 < cap_value < math.inf:
        fail(
            f"`--cap` must be in (0, inf) (a budget with no cap is not a budget), got "
            f"{cap.strip()}."
        )
    asked = _questions(question)
    with option_names({"memoized": "--memoized", "epsilon": "--question", "cap": "--cap"}):
        plan = budget_plan(cap_value, asked, memoized or ())
    show(plan, as_json)
