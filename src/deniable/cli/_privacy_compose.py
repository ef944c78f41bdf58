"""`deniable privacy compose` and `deniable privacy convert`: what a questionnaire costs in
total, and conversions between pure DP, (ε, δ)-DP, zCDP, Rényi DP and Gaussian DP."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from typing import Annotated, Any

import typer
from rich.text import Text

from deniable.accounting import (
    COMPOSITION_METHODS,
    GDP,
    RDP,
    ZCDP,
    CompositionRow,
    CompositionTable,
    PrivacyAccountant,
    RandomizedResponse,
    compare_composition,
    compose_gdp,
    gdp_delta,
    gdp_epsilon,
    optimal_rr_delta,
    optimal_rr_epsilon,
    pure_to_rdp,
    pure_to_zcdp,
    rdp_delta,
    rdp_epsilon,
    zcdp_delta,
    zcdp_epsilon,
)
from deniable.cli._base import console, emit_json, fail, kv_table
from deniable.cli._privacy_base import (
    DeltaOpt,
    JsonOpt,
    check_choice,
    fmt_delta,
    fmt_eps,
    option_names,
    parse_count,
    parse_counts_per,
    parse_delta,
    parse_epsilon,
    parse_values,
    print_table,
    privacy_app,
    simple_table,
)

__all__ = ["compose_command", "convert_command"]

#: `--method` of `compose`: every method for randomized-response questions, or all of them.
COMPOSE_METHODS = ("all", *(m for m in COMPOSITION_METHODS if m not in ("gdp", "best")))

_NOTES = {
    "basic": "sum of epsilons",
    "advanced": "Dwork-Rothblum-Vadhan 2010, min with basic",
    "kov": "Kairouz-Oh-Viswanath 2015, Thm 3.4/3.5",
    "pld": "pessimistic PLD (losses rounded up)",
    "rdp": "Renyi curves summed, CKS 2020 conversion",
    "zcdp": "rho summed (eps tanh(eps/2) each), CKS 2020 conversion",
}


# --------------------------------------------------------------------------- compose


def _compose_table(
    eps: list[float], counts: list[int], k: int, delta: float, method: str
) -> tuple[CompositionTable, bool]:
    acct = PrivacyAccountant(
        tuple(RandomizedResponse(e, count=c, k=k) for e, c in zip(eps, counts, strict=True))
    )
    n = sum(counts)
    desc = f"{n} question{'s' if n != 1 else ''}"
    if len(set(eps)) == 1:
        desc += f" at epsilon = {eps[0]:g}"
    else:
        desc += f", epsilon {min(eps):g} to {max(eps):g}"
    if method == "all":
        table = compare_composition(eps, delta, counts=counts, k=k)
        skipped = table.description.partition("; ")[2]  # methods beyond their size limit
        desc += f"; {skipped}" if skipped else ""
        return replace(table, description=desc), acct.optimal_is_exact
    value = acct.epsilon(delta, method)
    if method == "optimal":
        note = "exact" if acct.optimal_is_exact else "not exact here: pessimistic PLD"
    else:
        note = _NOTES[method]
    row = CompositionRow(method, value, note)
    return CompositionTable(delta, (row,), desc), acct.optimal_is_exact


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
        str, typer.Option("--method", help=f"One of {', '.join(COMPOSE_METHODS)}.")
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
    m = check_choice("--method", method, COMPOSE_METHODS)
    names = {"epsilon": option, "epsilons": option, "count": "--count", "counts": "--count"}
    with option_names({**names, "k": "--k", "delta": "--delta"}):
        table, exact = _compose_table(eps, counts, cats, d, m)
    if as_json:
        emit_json(
            {
                "description": table.description,
                "epsilons": eps,
                "count": counts[0] if len(set(counts)) == 1 else counts,
                "counts": counts,
                "k": cats,
                "questions": sum(counts),
                "delta": table.delta,
                "method": m,
                "optimal_is_exact": exact,
                "rows": table.to_dicts(),
                "epsilon": {r.method: r.epsilon for r in table.rows},
            }
        )
        return
    out = simple_table("method", "total ε", "note")
    out.columns[2].justify = "left"
    for r in table.rows:
        out.add_row(r.method, fmt_eps(r.epsilon), Text(r.note))
    print_table(
        out,
        title=f"{table.description}, k = {cats}, δ = {fmt_delta(table.delta)}",
        note="Every value is an upper bound on the true total ε (never below it).",
    )


# --------------------------------------------------------------------------- convert

SOURCES = ("pure", "zcdp", "rdp", "gdp")
TARGETS = ("approx", "zcdp", "rdp", "gdp")

_REFERENCES = {
    ("pure", "approx", "exact"): "binary RR, the worst case (KOV 2015)",
    ("zcdp", "approx", "improved"): "CKS 2020, Prop. 12, continuous α",
    ("zcdp", "approx", "classic"): "Bun & Steinke 2016, Prop. 1.3",
    ("rdp", "approx", "improved"): "CKS 2020, Prop. 12",
    ("rdp", "approx", "classic"): "Mironov 2017, Prop. 3",
    ("gdp", "approx", "exact"): "Dong, Roth & Su 2019, Cor. 2.13",
    ("pure", "zcdp", "sharp"): "ρ = ε tanh(ε/2) (Steinke 2024)",
    ("pure", "zcdp", "classic"): "ρ = ε²/2 (Bun & Steinke 2016)",
    ("pure", "rdp", "exact"): "binary RR's curve, tight (Steinke 2024)",
    ("zcdp", "rdp", "exact"): "ε(α) = ρα (Bun & Steinke 2016)",
    ("gdp", "gdp", "exact"): "μ = √Σμᵢ² (Dong, Roth & Su 2019)",
}


def _methods(source: str, target: str) -> list[str]:
    """The methods of one conversion, the default first."""
    found = [m for (s, t, m) in _REFERENCES if (s, t) == (source, target)]
    if not found:
        pairs = ", ".join(
            f"{s} -> {t}" for s, t in dict.fromkeys((s, t) for s, t, _ in _REFERENCES)
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
        mus = [GDP(parse_epsilon("--mu", x)).mu for x in mu.split(",")]
        return {"mus": mus, "mu": mus[0] if len(mus) == 1 else compose_gdp(mus).mu}
    if alpha is None:
        fail("`--from rdp` needs --alpha A1,A2,... and --epsilon E1,E2,... (the Renyi curve).")
    assert epsilon is not None
    alphas = parse_values("--alpha", [alpha], allow_inf=True)
    for a in alphas:
        if not a > 1:
            fail(f"`--alpha` must be in (1, inf], got {a:g}.")
    with option_names({"alphas": "--alpha", "epsilons": "--epsilon"}):
        grid = RDP(tuple(alphas), tuple(parse_epsilon("--epsilon", e) for e in epsilon.split(",")))
    return {"alphas": list(grid.alphas), "epsilons": list(grid.epsilons), "rdp": grid}


Curve = Callable[[float], float]


def _approx(src: dict[str, Any], source: str, method: str) -> tuple[Curve, Curve]:
    """``(epsilon_of_delta, delta_of_epsilon)`` of the source under ``method``."""
    if source == "pure":
        e = src["epsilon"]
        return (lambda d: optimal_rr_epsilon(e, d)), (lambda t: optimal_rr_delta(e, t))
    if source == "zcdp":
        r = src["rho"]
        return (lambda d: zcdp_epsilon(r, d, method)), (lambda t: zcdp_delta(r, t, method))
    if source == "gdp":
        mu = src["mu"]
        return (lambda d: gdp_epsilon(mu, d)), (lambda t: gdp_delta(mu, t))
    grid = src["rdp"]
    return (lambda d: rdp_epsilon(grid, d, method)), (lambda t: rdp_delta(grid, t, method))


def _convert_one(
    src: dict[str, Any],
    source: str,
    target: str,
    method: str,
    delta: float | None,
    target_eps: float | None,
    orders: list[float] | None,
) -> dict[str, Any]:
    row: dict[str, Any] = {"method": method, "reference": _REFERENCES[(source, target, method)]}
    if target == "approx":
        eps_of, delta_of = _approx(src, source, method)
        if delta is not None:
            row.update(epsilon=eps_of(delta), delta=delta)
        else:
            assert target_eps is not None
            dval = delta_of(target_eps)
            row.update(epsilon=target_eps, delta=dval, vacuous=dval >= 1)
    elif target == "zcdp":
        row["rho"] = pure_to_zcdp(src["epsilon"], method).rho
    elif target == "rdp":
        assert orders is not None
        if source == "pure":
            curve = [float(pure_to_rdp(src["epsilon"], a)) for a in orders]
        else:
            curve = [_times_up(src["rho"], a) for a in orders]
        row.update(alphas=orders, epsilons=curve)
    else:
        row["mu"] = src["mu"]
    return row


def _times_up(rho: float, alpha: float) -> float:
    """``rho * alpha`` rounded up (never below the exact product); ``0 * inf = 0``."""
    if rho == 0:
        return 0.0
    prod = rho * alpha
    if math.isinf(prod) or Fraction(prod) >= Fraction(rho) * Fraction(alpha):
        return prod
    return math.nextafter(prod, math.inf)


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
    names = {"rho": "--rho", "mu": "--mu", "delta": "--delta", "alpha": "--alpha"}
    with option_names({**names, "epsilon": "--epsilon", "target_epsilon": "--target-epsilon"}):
        rows = [_convert_one(src, source, target, m, d, t, orders) for m in methods]
    shown = {k: x for k, x in src.items() if k != "rdp"}
    if as_json:
        emit_json({"from": source, "source": shown, "to": target, "results": rows})
        return
    _print_conversion(source, shown, target, rows)


def _describe_source(source: str, src: dict[str, Any]) -> str:
    if source == "pure":
        return f"ε = {fmt_eps(src['epsilon'])} (pure DP)"
    if source == "zcdp":
        return f"ρ = {fmt_eps(src['rho'])} (zCDP)"
    if source == "gdp":
        if len(src["mus"]) > 1:
            parts = ", ".join(fmt_eps(m) for m in src["mus"])
            return f"μ = {fmt_eps(src['mu'])} (GDP; composed from {parts})"
        return f"μ = {fmt_eps(src['mu'])} (GDP)"
    pairs = ", ".join(
        f"{fmt_eps(a, 2)}: {fmt_eps(e)}"
        for a, e in zip(src["alphas"], src["epsilons"], strict=True)
    )
    return f"Renyi DP, α: ε(α) = {pairs}"


def _print_conversion(
    source: str, src: dict[str, Any], target: str, rows: list[dict[str, Any]]
) -> None:
    out = console()
    out.print(kv_table([("from", _describe_source(source, src)), ("to", target)]))
    if target == "rdp":
        table = simple_table("α", *(f"ε(α) {r['method']}" for r in rows))
        for i, a in enumerate(rows[0]["alphas"]):
            table.add_row(fmt_eps(a, 2), *(fmt_eps(r["epsilons"][i]) for r in rows))
        out.print(table)
        out.print(Text(f"reference: {rows[0]['reference']}"))
        return
    table = simple_table("method", "result", "reference")
    table.columns[2].justify = "left"
    for r in rows:
        if target == "approx":
            result = f"ε = {fmt_eps(r['epsilon'])} at δ = {fmt_delta(r['delta'])}"
        elif target == "zcdp":
            result = f"ρ = {fmt_eps(r['rho'], 6)}"
        else:
            result = f"μ = {fmt_eps(r['mu'], 6)}"
        table.add_row(r["method"], Text(result), Text(r["reference"]))
    out.print(table)
