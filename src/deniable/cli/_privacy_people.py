"""`deniable privacy explain`, `audit` and `budget`: ε for people, empirical audits of a
claimed ε, and a respondent's budget spent question by question."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import numpy.typing as npt
import typer
from rich.text import Text

from deniable.accounting import BudgetLedger
from deniable.audit import (
    AuditResult,
    UnaryEncoding,
    audit,
    audit_design,
    explain,
    likelihood_sentence,
    lying_table,
    posterior_table,
    truth_table,
)
from deniable.audit._explain import DEFAULT_EPSILONS
from deniable.cli._base import build_design, console, emit_json, fail, fmt_params, kv_table
from deniable.cli._designs import ParamOpt
from deniable.cli._privacy_base import (
    JsonOpt,
    check_choice,
    fmt_eps,
    option_names,
    parse_count,
    parse_epsilon,
    parse_level,
    parse_value,
    print_table,
    privacy_app,
    simple_table,
)
from deniable.cli._privacy_noise import save_figure
from deniable.designs import DESIGNS, TWO_GROUP_DESIGNS
from deniable.plotting import plot_epsilon_lying, plot_epsilon_truth, plot_posterior

__all__ = ["AUDIT_FAILED_EXIT", "audit_command", "budget_command", "explain_command"]

#: Exit status of `deniable privacy audit` when the audit refutes the claimed ε.
AUDIT_FAILED_EXIT = 1
_AUDIT_OPTIONS = {
    "claimed_epsilon": "--claimed-epsilon",
    "trials": "--trials",
    "seed": "--seed",
    "level": "--level",
}
#: Above this ε, e^ε overflows a double (the largest is about e^709.8).
_MAX_EXPLAINED = 700.0
PLOT_KINDS = ("truth", "lying", "posterior")
UNARY = {"unary": "half", "unary-broken": "exact"}


# --------------------------------------------------------------------------- explain


def _plot_maker(kind: str, eps: float) -> Callable[[], Any]:
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
    with option_names({"epsilon": "--epsilon", "attribute": "--attribute"}):
        text = explain(eps, attribute)
        truth = truth_table(sorted(set(DEFAULT_EPSILONS) | {eps}))
    lying = lying_table()
    if plot is not None:
        save_figure(_plot_maker(kind, eps), plot)
    if as_json:
        t = 1.0 if math.isinf(eps) else 1 / (1 + math.exp(-eps))
        emit_json(
            {
                "epsilon": eps,
                "attribute": attribute,
                "truth_probability": t,
                "lying_probability": 0.0 if math.isinf(eps) else 1 / (1 + math.exp(eps)),
                "likelihood_ratio": math.exp(eps),
                "sentence": likelihood_sentence(eps, attribute),
                "text": text,
                "posterior_table": posterior_table(eps).to_json(),
                "truth_table": truth.to_json(),
                "lying_table": lying.to_json(),
                "plot": None if plot is None else str(plot),
            }
        )
        return
    # pre-formatted text and fixed-width tables: written as they are, never re-wrapped
    typer.echo("\n\n".join((text, str(truth), str(lying))))
    if plot is not None:
        typer.echo(f"\nplot ({kind}) written to {plot}")


# --------------------------------------------------------------------------- audit


def _bits_event(a: int, b: int) -> Callable[[npt.NDArray[Any]], npt.NDArray[np.bool_]]:
    def event(reports: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
        return np.asarray((reports[:, 0] == a) & (reports[:, 1] == b), dtype=np.bool_)

    event.__name__ = f"bits 0,1 = {a}{b}"
    return event


def _audit_unary(
    name: str, epsilon: str | None, k: str | None, claimed: float | None, **kw: Any
) -> tuple[dict[str, Any], AuditResult]:
    """Unary encoding on answers 0 and 1.  A report's likelihood ratio between them depends on
    bits 0 and 1 only, so the four values of those bits are the events (fixed in advance)."""
    if epsilon is None:
        fail(f"`{name}` needs --epsilon (its ε parameter).")
    with option_names({"epsilon_parameter": "--epsilon", "k": "--k"}):
        mech = UnaryEncoding(
            parse_epsilon("--epsilon", epsilon, allow_zero=False, allow_inf=False),
            parse_count("--k", k or "4", minimum=2, maximum=64),
            calibration=UNARY[name],
        )
    claim = mech.epsilon_parameter if claimed is None else claimed
    events = [_bits_event(a, b) for a in (0, 1) for b in (0, 1)]
    with option_names(_AUDIT_OPTIONS):
        result = audit(mech, 0, 1, claimed_epsilon=claim, event=events, **kw)
    how = (
        "t = e^(ε/2)/(1+e^(ε/2)), correct"
        if UNARY[name] == "half"
        else "t = e^ε/(1+e^ε): one-bit calibration, really 2ε-LDP"
    )
    params = {"epsilon": mech.epsilon_parameter, "k": mech.k, "calibration": mech.calibration}
    label = f"{name} (k = {mech.k}, ε = {mech.epsilon_parameter:g}; {how})"
    return {
        "mechanism": name,
        "parameters": params,
        "true_epsilon": mech.epsilon,
        "label": label,
    }, result


@privacy_app.command("audit")
def audit_command(
    design: Annotated[
        str,
        typer.Argument(
            help="A design (see `deniable designs`), or unary / unary-broken.", show_default=False
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
    trials: Annotated[str, typer.Option("--trials", help="Runs per input.")] = "100000",
    seed: Annotated[
        str | None, typer.Option("--seed", help="Seed (default: drawn and printed).")
    ] = None,
    level: Annotated[str, typer.Option("--level", help="Confidence of the bound.")] = "0.95",
    as_json: JsonOpt = False,
) -> None:
    """Run a mechanism many times and test its claimed ε (exit status 1 if refuted)."""
    claimed = (
        None if claimed_epsilon is None else parse_epsilon("--claimed-epsilon", claimed_epsilon)
    )
    kw: dict[str, Any] = {
        "trials": parse_count("--trials", trials, maximum=100_000_000),
        "seed": None if seed is None else parse_count("--seed", seed, minimum=0),
        "level": parse_level("--level", level),
    }
    if design in UNARY:
        if param:
            fail(f"`{design}` takes --epsilon and --k, not --param.")
        info, result = _audit_unary(design, epsilon, k, claimed, **kw)
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
        label = f"{d.name} ({fmt_params(d.parameters())}), true ε {fmt_eps(d.epsilon)}"
        info = {
            "mechanism": d.name,
            "parameters": d.parameters(),
            "true_epsilon": d.epsilon,
            "label": label,
        }
        with option_names(_AUDIT_OPTIONS):
            result = audit_design(d, claimed_epsilon=claimed, **kw)
    _report_audit(info, result, as_json)
    if not result.passed:
        raise typer.Exit(AUDIT_FAILED_EXIT)


def _report_audit(info: dict[str, Any], result: AuditResult, as_json: bool) -> None:
    label = info.pop("label")
    if as_json:
        emit_json({**info, **result.to_dict()})
        return
    a, b = result.worst_pair
    rows = [
        ("mechanism", label),
        ("claimed ε", fmt_eps(result.claimed_epsilon)),
        (f"lower bound ({result.level:g} confidence)", f"{result.lower_bound:.4f}"),
        ("plug-in ε", fmt_eps(result.empirical_epsilon)),
        ("worst event", f"{result.worst_event} ({a} vs {b})"),
        ("trials per input, seed", f"{result.trials}, {result.seed}"),
    ]
    out = console()
    out.print(kv_table(rows, title="Empirical privacy audit (Clopper-Pearson, Bonferroni)"))
    claim = "∞" if math.isinf(result.claimed_epsilon) else f"{result.claimed_epsilon:.6g}"
    bound = f"{result.lower_bound:.4f}"
    if result.passed:
        verdict = f"PASSED: the data do not refute ε = {claim} (lower bound {bound} <= {claim})."
        out.print(Text(verdict, style="bold green"))
    else:
        verdict = (
            f"FAILED: ε >= {bound} with confidence {result.level:g}, above the claimed "
            f"ε = {claim}: the mechanism is NOT {claim}-DP."
        )
        out.print(Text(verdict, style="bold red"))


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
    ledger = BudgetLedger(cap=cap_value, n_respondents=1)
    asked = _questions(question)
    memo = set(memoized or ())
    unknown = sorted(memo - {name for name, _ in asked})
    if unknown:
        fail(f"`--memoized` names a question that is not asked: {unknown[0]!r}.")
    rows: list[dict[str, Any]] = []
    close_calls: list[str] = []
    for name, eps in asked:
        m = name in memo
        left_before = float(ledger.remaining(0))
        with option_names({"epsilon": f"--question {name}"}):
            cost = float(ledger.costs([0], name, eps, memoized=m)[0])
            ok = bool(ledger.can_afford([0], name, eps, memoized=m)[0])
            if ok:
                ledger.spend([0], name, eps, memoized=m)
        status = "refused" if not ok else "replayed (free)" if m and cost == 0 < eps else "asked"
        if not ok and fmt_eps(cost) == fmt_eps(left_before):
            close_calls.append(f"{name} costs {cost!r} but only {left_before!r} is left")
        rows.append(
            {
                "question": name,
                "epsilon": eps,
                "memoized": m,
                "status": status,
                "cost": cost,
                "charged": cost if ok else 0.0,
                "spent": float(ledger.spent(0)),
                "remaining": float(ledger.remaining(0)),
            }
        )
    remaining = float(ledger.remaining(0))
    if as_json:
        emit_json(
            {
                "cap": ledger.cap,
                "questions": rows,
                "spent": float(ledger.spent(0)),
                "remaining": remaining,
                "refused": [r["question"] for r in rows if r["status"] == "refused"],
            }
        )
        return
    table = simple_table("question", "ε", "memoized", "status", "charged", "spent", "left")
    for r in rows:
        table.add_row(
            Text(r["question"]),
            fmt_eps(r["epsilon"]),
            "yes" if r["memoized"] else "",
            r["status"],
            fmt_eps(r["charged"]) if r["status"] != "refused" else "-",
            fmt_eps(r["spent"]),
            fmt_eps(r["remaining"]),
        )
    binary = (
        f"\nRefused by binary rounding ({'; '.join(close_calls)}): decimal ε's are not exact "
        "in binary and the sum never passes the cap; give the cap a margin."
        if close_calls
        else ""
    )
    print_table(
        table,
        title=f"One respondent's budget: cap ε = {fmt_eps(ledger.cap)}",
        note=(
            "Basic composition: the total is the sum of the ε actually spent, whatever the "
            "dependence between the answers. A refused question is skipped and costs nothing.\n"
            f"The largest ε the next question may use: {fmt_eps(remaining)}.{binary}"
        ),
    )
