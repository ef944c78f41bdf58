"""`deniable privacy compose` and `deniable privacy convert`: what a questionnaire costs in
total, and conversions between pure DP, (ε, δ)-DP, zCDP, Rényi DP and Gaussian DP."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from deniable.accounting import (
    CONVERSIONS,
    GDP,
    QUESTIONNAIRE_METHODS,
    RDP,
    ZCDP,
    compose_questions,
    conversion_methods,
    convert_guarantee,
)
from deniable.cli._base import fail
from deniable.cli._options import JsonOpt
from deniable.cli._privacy_base import (
    DeltaOpt,
    check_choice,
    option_names,
    parse_count,
    parse_counts_per,
    parse_delta,
    parse_epsilon,
    parse_values,
    privacy_app,
)
from deniable.cli._render import show

__all__ = ["compose_command", "convert_command"]

# --------------------------------------------------------------------------- compose


@privacy_app.command("compose")
def compose_command(
    epsilon: Annotated[
        list[str] | None,
        typer.Option(
            "--epsilon", "-e", help="ε of one question, repeatable (inf: a deterministic answer)."
        ),
    ] = None,
    epsilons: Annotated[
        str | None, typer.Option("--epsilons", help="All the questions' ε, comma-separated.")
    ] = None,
    count: Annotated[
        str,
        typer.Option(
            "--count",
            help="Times each question is asked (unmemoized): one number, or one per question "
            "separated by commas.",
        ),
    ] = "1",
    k: Annotated[str, typer.Option("--k", help="Categories of each question (2: yes/no).")] = "2",
    delta: DeltaOpt = "1e-6",
    method: Annotated[
        str, typer.Option("--method", help=f"One of {', '.join(QUESTIONNAIRE_METHODS)}.")
    ] = "all",
    as_json: JsonOpt = False,
) -> None:
    """Total ε at δ of a questionnaire of randomized-response questions, by every method."""
    if (epsilon is None) == (epsilons is None):
        got = "both" if epsilon is not None else "neither"
        fail(f"give the questions' ε with --epsilon (repeatable) or --epsilons, got {got}.")
    option = "--epsilon" if epsilon else "--epsilons"
    eps = parse_values(option, epsilon or [epsilons or ""], allow_inf=True)
    for text, e in zip(",".join(epsilon or [epsilons or ""]).split(","), eps, strict=True):
        if e < 0:
            fail(f"`{option}` must be in [0, inf], got {text.strip()}.")
    counts = parse_counts_per("--count", count, len(eps))
    cats = parse_count("--k", k, minimum=2)
    d = parse_delta("--delta", delta)
    m = check_choice("--method", method, QUESTIONNAIRE_METHODS)
    names = {"epsilon": option, "epsilons": option, "count": "--count", "counts": "--count"}
    with option_names({**names, "k": "--k", "delta": "--delta"}):
        table = compose_questions(eps, d, counts=counts, k=cats, method=m)
    show(table, as_json)


# --------------------------------------------------------------------------- convert

SOURCES = ("pure", "zcdp", "rdp", "gdp")
TARGETS = ("approx", "zcdp", "rdp", "gdp")


def _methods(source: str, target: str) -> list[str]:
    """The methods of one conversion, the default first."""
    found = conversion_methods(source, target)
    if not found:
        pairs = ", ".join(
            f"{s} -> {t}" for s, t in dict.fromkeys((s, t) for s, t, _ in CONVERSIONS)
        )
        fail(f"cannot convert `--from {source}` `--to {target}`; the conversions are: {pairs}.")
    return found


def _source(
    source: str,
    epsilon: str | None,
    rho: str | None,
    mu: str | None,
    alpha: str | None,
) -> dict[str, Any]:
    """The source measure's parameters, checked, from the options that belong to it."""
    needs: dict[str, tuple[str, ...]] = {
        "pure": ("--epsilon",),
        "zcdp": ("--rho",),
        "gdp": ("--mu",),
        "rdp": ("--alpha", "--epsilon"),
    }
    given = {"--epsilon": epsilon, "--rho": rho, "--mu": mu}
    for opt in needs[source]:
        if opt != "--alpha" and given[opt] is None:
            fail(f"`--from {source}` needs {' and '.join(needs[source])}.")
    for opt, value in given.items():
        if value is not None and opt not in needs[source]:
            fail(f"`{opt}` does not apply to `--from {source}` (it takes {needs[source][-1]}).")
    if source == "pure":
        assert epsilon is not None
        return {"epsilon": parse_epsilon("--epsilon", epsilon)}
    if source == "zcdp":
        assert rho is not None
        return {"rho": ZCDP(parse_epsilon("--rho", rho)).rho}
    if source == "gdp":
        assert mu is not None
        return {"mu": [GDP(parse_epsilon("--mu", x)).mu for x in mu.split(",")]}
    if alpha is None:
        fail("`--from rdp` needs --alpha A1,A2,... and --epsilon E1,E2,... (the Renyi curve).")
    assert epsilon is not None
    alphas = parse_values("--alpha", [alpha], allow_inf=True)
    for a in alphas:
        if not a > 1:
            fail(f"`--alpha` must be in (1, inf], got {a:g}.")
    with option_names({"alphas": "--alpha", "epsilons": "--epsilon"}):
        grid = RDP(tuple(alphas), tuple(parse_epsilon("--epsilon", e) for e in epsilon.split(",")))
    return {"alphas": list(grid.alphas), "epsilons": list(grid.epsilons)}


def _target_options(
    target: str, delta: str | None, target_epsilon: str | None, source: str, alpha: str | None
) -> tuple[float | None, float | None, list[float] | None]:
    d = t = None
    orders = None
    if target == "approx":
        if (delta is None) == (target_epsilon is None):
            got = "both" if delta is not None else "neither"
            fail(f"`--to approx` needs exactly one of --delta and --target-epsilon, got {got}.")
        d = None if delta is None else parse_delta("--delta", delta)
        if target_epsilon is not None:
            t = parse_epsilon("--target-epsilon", target_epsilon)
    elif delta is not None or target_epsilon is not None:
        fail(f"`--delta` and `--target-epsilon` apply to `--to approx` only, not `--to {target}`.")
    if target == "rdp":
        if alpha is None:
            fail("`--to rdp` needs --alpha A1,A2,...: the orders at which to give the curve.")
        orders = parse_values("--alpha", [alpha], allow_inf=True)
        for a in orders:
            if not a > 1:
                fail(f"`--alpha` must be in (1, inf], got {a:g}.")
    elif alpha is not None and source != "rdp":
        fail("`--alpha` applies to `--from rdp` and `--to rdp` only.")
    return d, t, orders


@privacy_app.command("convert")
def convert_command(
    source: Annotated[str, typer.Option("--from", help="pure, zcdp, rdp or gdp.")],
    target: Annotated[str, typer.Option("--to", help="approx, zcdp, rdp or gdp.")],
    epsilon: Annotated[
        str | None,
        typer.Option("--epsilon", help="pure: ε.  rdp: ε(α) at each --alpha, comma-separated."),
    ] = None,
    rho: Annotated[str | None, typer.Option("--rho", help="zcdp: ρ.")] = None,
    mu: Annotated[
        str | None, typer.Option("--mu", help="gdp: μ, or μ1,μ2,... composed to √Σμᵢ².")
    ] = None,
    alpha: Annotated[
        str | None,
        typer.Option("--alpha", help="Orders α > 1, comma-separated (--from rdp / --to rdp)."),
    ] = None,
    delta: Annotated[
        str | None, typer.Option("--delta", help="--to approx: give ε(δ) at this δ.")
    ] = None,
    target_epsilon: Annotated[
        str | None, typer.Option("--target-epsilon", help="--to approx: give δ(ε) at this ε.")
    ] = None,
    method: Annotated[
        str | None,
        typer.Option(
            "--method", help="exact, improved, classic or sharp (default: all that apply)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Convert a privacy guarantee; every value is rounded toward safety."""
    check_choice("--from", source, SOURCES)
    check_choice("--to", target, TARGETS)
    methods = _methods(source, target)
    if method is not None:
        methods = [check_choice("--method", method, methods)]
    d, t, orders = _target_options(target, delta, target_epsilon, source, alpha)
    src = _source(source, epsilon, rho, mu, alpha)
    names = {"rho": "--rho", "mu": "--mu", "delta": "--delta", "alpha": "--alpha",
             "orders": "--alpha", "alphas": "--alpha", "epsilons": "--epsilon"}  # fmt: skip
    with option_names({**names, "epsilon": "--epsilon", "target_epsilon": "--target-epsilon"}):
        result = convert_guarantee(
            source, target, method=method, delta=d,
            target_epsilon=t, orders=orders, **src,
        )  # fmt: skip
    show(result, as_json)
