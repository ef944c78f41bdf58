"""`deniable majority`, `deniable coins` and `deniable simulate` (and the two-group options
that `deniable simulate` shares with `deniable simulation-study`)."""

from __future__ import annotations

import secrets
from fractions import Fraction
from typing import Annotated, Any

import numpy as np
import typer
from rich import box
from rich.table import Table
from rich.text import Text

from deniable.cli._base import (
    app,
    build_design,
    console,
    emit_json,
    fail,
    fmt_epsilon,
    fmt_interval,
    fmt_num,
    fmt_params,
    kv_table,
    parse_number,
    parse_numbers,
)
from deniable.cli._designs import (
    DesignArg,
    JsonOpt,
    LevelOpt,
    ParamOpt,
    categorical_payload,
    design_channel_fields,
    epsilon_note,
    estimate_payload,
)
from deniable.cli._twogroup import two_group_payload
from deniable.common import _validation as v
from deniable.designs import (
    BinaryDesign,
    Categorical,
    CategoricalEstimate,
    Kuk,
    Tally,
    TwoGroupDesign,
    TwoGroupEstimate,
)
from deniable.estimation import MajorityDecision, majority_decision, simulate_majority
from deniable.estimation._majority import MAX_TRIALS
from deniable.mechanisms import CoinProtocol, design_protocol
from deniable.results import Estimate
from deniable.simulation import Simulation, simulate

# --------------------------------------------------------------------------- majority


def majority_rows(d: MajorityDecision) -> list[tuple[str, str]]:
    """Labelled rows of a majority decision for people."""
    if d.true_yes is not None:
        truth = f"K = {d.true_yes} carriers of {d.n} (fixed population)"
    else:
        truth = f"prevalence {d.prevalence:.6g} (iid sampling)"
    truth += ": a majority" if d.is_majority else ": not a majority"
    # where the two error rates are evaluated (MajorityDecision.false_*_prevalence)
    if d.true_yes is not None:
        fp_at = f"K = {d.n // 2}"
        fn_at = f"K = {d.true_yes}" if d.is_majority else f"K = {d.n // 2 + 1}"
    else:
        fp_at = "prevalence 1/2"
        fn_at = f"prevalence {d.false_negative_prevalence:.6g}"
    if not d.is_majority:
        fn_at += ", the smallest majority"
    return [
        ("design", f"{d.design.name} ({fmt_params(d.design.parameters())})"),
        ("n", str(d.n)),
        ("truth", truth),
        ("λ (mean share of yes reports)", fmt_num(d.report_probability, 6)),
        ("offset c (SDs)", f"{d.offset:g}"),
        ("threshold", f"{d.threshold:.6g}  ({d.decision_rule})"),
        ("P(decide majority)", fmt_num(d.p_decide_majority, 6)),
        ("error probability (exact)", fmt_num(d.error_probability, 6)),
        (f"false positive rate (at {fp_at}: the worst case)", fmt_num(d.false_positive_rate, 6)),
        (f"false negative rate (at {fn_at})", fmt_num(d.false_negative_rate, 6)),
    ]


@app.command("majority")
def majority_command(
    design: DesignArg,
    param: ParamOpt = None,
    n: Annotated[int | None, typer.Option("--n", "-n", help="Number of reports.")] = None,
    prevalence: Annotated[
        str | None, typer.Option("--prevalence", help="True share (iid sampling).")
    ] = None,
    true_yes: Annotated[
        int | None, typer.Option("--true-yes", help="Carriers in a fixed population of n.")
    ] = None,
    offset: Annotated[
        float, typer.Option("--offset", help="Move the threshold by c SDs (c > 0: stricter).")
    ] = 0.0,
    simulate_trials: Annotated[
        int | None,
        typer.Option("--simulate", metavar="TRIALS", help="Also estimate by simulation."),
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed for --simulate.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Decide "the majority has A" from the yes count, with its exact error probability."""
    d = build_design(design, param)
    if n is None:
        fail("`--n` (the number of reports) is required.")
    if (prevalence is None) == (true_yes is None):
        got = "both" if prevalence is not None else "neither"
        fail(f"give exactly one of --prevalence PI or --true-yes K, got {got}.")
    if seed is not None and simulate_trials is None:
        fail("`--seed` is used only with --simulate TRIALS.")
    if simulate_trials is not None and not 1 <= simulate_trials <= MAX_TRIALS:
        fail(
            f"`--simulate` must be an integer in [1, {v.fmt_limit(MAX_TRIALS)}] (time and "
            f"memory linear in trials), got {simulate_trials}."
        )
    if seed is not None and not 0 <= seed < 2**128:
        fail(f"`--seed` must be an integer in [0, 2**128), got {seed}.")
    if not isinstance(d, BinaryDesign):
        fail(f"design {d.name!r} does not give yes/no reports; a majority needs a binary design.")
    pi = None if prevalence is None else parse_number("--prevalence", prevalence)
    decision = majority_decision(d, n, prevalence=pi, true_yes=true_yes, offset=offset)
    payload: dict[str, Any] = decision.to_dict()
    payload["epsilon"] = d.epsilon
    rows = majority_rows(decision)
    if simulate_trials is not None:
        used_seed = secrets.randbelow(2**32) if seed is None else seed
        sim = simulate_majority(
            d, n, prevalence=pi, true_yes=true_yes, offset=offset,
            trials=simulate_trials, seed=used_seed,
        )  # fmt: skip
        payload.update(simulated_p_decide_majority=sim, trials=simulate_trials, seed=used_seed)
        rows.append(
            (f"P(decide majority), simulated ({simulate_trials} trials, seed {used_seed})",
             fmt_num(sim, 6))
        )  # fmt: skip
    if as_json:
        emit_json(payload)
        return
    rows.insert(1, ("ε", epsilon_note(d.epsilon)))
    console().print(kv_table(rows, title="Majority decision"))


# --------------------------------------------------------------------------- coins


def coin_rows(p: CoinProtocol) -> list[tuple[str, str]]:
    """The exact probabilities and ε of a coin protocol, for people."""

    def frac(x: Fraction) -> str:
        return f"{x} = {float(x):.6f}"

    return [
        ("device", f"{p.device} ({p.outcomes} equally likely outcomes)"),
        ('forced "yes" / "no"', f"{p.forced_yes} / {p.forced_no} of {p.outcomes} outcomes"),
        ("P(answer truthfully)", frac(p.truth_probability)),
        ("P(yes | has A)", frac(p.p_yes_given_1)),
        ("P(yes | does not have A)", frac(p.p_yes_given_0)),
        ("ε", f"ln({p.likelihood_ratio}) = {p.epsilon:.6f}"),
    ]


@app.command("coins")
def coins_command(
    epsilon: Annotated[
        str | None, typer.Option("--epsilon", help="Largest ε allowed (e.g. 1 or ln 3 = 1.0986).")
    ] = None,
    truth_probability: Annotated[
        str | None,
        typer.Option("--truth-probability", help="Largest P(answer truthfully), e.g. 1/2."),
    ] = None,
    device: Annotated[
        list[str] | None,
        typer.Option(
            "--device",
            help="Allowed device, repeatable: '2 coins', '3 coins', '4 coins', d4, d6, d8, "
            "d10, d12, d20, d100, or coins / dice (default: all).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """A protocol with fair coins or dice: instructions, exact probabilities and ε."""
    if (epsilon is None) == (truth_probability is None):
        got = "both" if epsilon is not None else "neither"
        fail(f"give exactly one of --epsilon E or --truth-probability T, got {got}.")
    eps = None if epsilon is None else parse_number("--epsilon", epsilon)
    truth = (
        None
        if truth_probability is None
        else parse_number("--truth-probability", truth_probability)
    )
    protocol = design_protocol(epsilon=eps, truth_probability=truth, devices=device or None)
    if as_json:
        emit_json(protocol.to_dict())
        return
    out = console()
    out.print(Text("Instructions for each respondent:", style="bold"))
    out.print(Text(protocol.instructions), width=min(out.width, 88))
    out.print(kv_table(coin_rows(protocol)))


# --------------------------------------------------------------------------- simulate


GroupShareOpt = Annotated[
    str | None,
    typer.Option("--group-share", help="Two-group designs: share of respondents in group 1 (0.5)."),
]
UnrelatedOpt = Annotated[
    str | None,
    typer.Option(
        "--unrelated-prevalence",
        help="unrelated-unknown: share who would say yes to the unrelated question (required).",
    ),
]
CheatingOpt = Annotated[
    str | None,
    typer.Option("--cheating", help="cdm, cdm-symmetric: share of respondents who cheat (0)."),
]
HonestyOpt = Annotated[
    str | None,
    typer.Option("--honesty", help="sld: carriers' probability of answering honestly (1)."),
]
NonComplianceOpt = Annotated[
    str,
    typer.Option("--non-compliance", help="Share who always say no, whatever the coin says."),
]


def two_group_keywords(
    group_share: str | None,
    unrelated_prevalence: str | None,
    cheating: str | None,
    honesty: str | None,
) -> dict[str, float]:
    """The two-group options given on the command line, as simulate() keywords."""
    given = {"group_share": group_share, "unrelated_prevalence": unrelated_prevalence,
             "cheating": cheating, "honesty": honesty}  # fmt: skip
    return {k: parse_number("--" + k.replace("_", "-"), x) for k, x in given.items() if x}


def _simulate_two_group(sim: Simulation, prevalence: float, level: float, as_json: bool) -> None:
    d, est = sim.design, sim.estimate
    assert isinstance(d, TwoGroupDesign) and isinstance(est, TwoGroupEstimate)
    truth = sim.true_parameters()
    intervals = {k: e.ci(level, "wald") for k, e in est.estimates.items()}
    covers = {k: bool(lo <= truth[k] <= hi) for k, (lo, hi) in intervals.items()}
    if as_json:
        payload = two_group_payload(d, est, level, design_channel_fields(d))
        payload.update(
            seed=sim.seed, prevalence=prevalence, non_compliance=sim.non_compliance,
            **sim.settings,
            true_share=float(sim.true_share), true_parameters=truth, covers_wald=covers,
        )  # fmt: skip
        emit_json(payload)
        return
    n1, n2 = est.n
    rows = [
        ("design", f"{d.name} ({fmt_params(d.parameters())})"),
        ("ε", epsilon_note(d.epsilon)),
        ("n (group 1 + group 2), seed", f"{n1 + n2} ({n1} + {n2}), {sim.seed}"),
        (
            "drawn with",
            fmt_params(
                {"prevalence": prevalence, **sim.settings, "non_compliance": sim.non_compliance}
            ),
        ),
        ("true share (simulation only)", fmt_num(float(sim.true_share), 6)),
    ]
    for g in (0, 1):
        y, ng = est.yes_counts[g], est.n_counts[g]
        rows.append(
            (f"group {g + 1}: yes / n", f"{y} / {ng}  (share {fmt_num(est.lambda_hat[g])})")
        )
    out = console()
    out.print(kv_table(rows, title="Simulated two-group survey: truth beside the estimate"))
    table = Table(caption="true value: among these simulated respondents (simulation only); "
                  "MLE: bounded to the parameter space; "
                  "SE: delta method, plug-in (n_g)", caption_justify="left",
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                  collapse_padding=True)  # fmt: skip
    for col in ("parameter", "true value", "estimate", "MLE", "SE", f"{level:.0%} CI (Wald)",
                "covers"):  # fmt: skip
        table.add_column(col, justify="left" if col == "parameter" else "right", no_wrap=True)
    for k, e in est.estimates.items():
        table.add_row(Text(k), fmt_num(truth[k]), fmt_num(e.value), fmt_num(e.bounded),
                      fmt_num(e.se), Text(fmt_interval(intervals[k])),
                      "yes" if covers[k] else "no")  # fmt: skip
    out.print(table)


@app.command("simulate")
def simulate_command(
    design: DesignArg,
    param: ParamOpt = None,
    n: Annotated[int | None, typer.Option("--n", "-n", help="Number of respondents.")] = None,
    prevalence: Annotated[
        str | None,
        typer.Option("--prevalence", help="True share; categorical: a comma list of k shares."),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", min=0, help="Seed (default: fresh, printed).")
    ] = None,
    non_compliance: NonComplianceOpt = "0",
    group_share: GroupShareOpt = None,
    unrelated_prevalence: UnrelatedOpt = None,
    cheating: CheatingOpt = None,
    honesty: HonestyOpt = None,
    level: LevelOpt = 0.95,
    as_json: JsonOpt = False,
) -> None:
    """Simulate a survey: hidden truth, randomized reports, and the estimate side by side."""
    d = build_design(design, param)
    lvl = v.level(level)
    if n is None:
        fail("`--n` (the number of respondents) is required.")
    if prevalence is None:
        fail("`--prevalence` is required.")
    pi: float | list[float]
    if isinstance(d, Categorical):
        pi = parse_numbers("--prevalence", prevalence)
    else:
        if "," in prevalence:
            fail(f"`--prevalence` must be one number for design {d.name!r}, got {prevalence!r}.")
        pi = parse_number("--prevalence", prevalence)
    s = parse_number("--non-compliance", non_compliance)
    extra = two_group_keywords(group_share, unrelated_prevalence, cheating, honesty)
    used_seed = secrets.randbelow(2**32) if seed is None else seed
    sim = simulate(d, n, pi, seed=used_seed, non_compliance=s, **extra)
    if isinstance(d, TwoGroupDesign):
        assert isinstance(pi, float)
        _simulate_two_group(sim, pi, lvl, as_json)
        return
    est = sim.estimate
    tally = sim.tally()
    if isinstance(est, CategoricalEstimate):
        assert isinstance(d, Categorical)
        share = np.asarray(sim.true_share, dtype=float)
        ci = est.ci(lvl, "exact")
        covers = [bool(lo <= x <= hi) for x, (lo, hi) in zip(share, ci, strict=True)]
        if as_json:
            payload = categorical_payload(d, est, lvl)
            payload.update(
                seed=used_seed, prevalence=pi, non_compliance=sim.non_compliance,
                true_share=share.tolist(), covers_exact=covers,
            )  # fmt: skip
            emit_json(payload)
            return
        table = Table(
            title=f"Simulated survey: {d.name}, n = {n}, seed {used_seed}", title_justify="left"
        )
        for col in ("category", "true share (simulation only)", "estimate", "SE",
                    f"{lvl:.0%} CI (exact)", "covers"):  # fmt: skip
            table.add_column(col, justify="right")
        for j in range(d.k):
            table.add_row(
                str(j), fmt_num(float(share[j])), fmt_num(float(est.values[j])),
                fmt_num(float(est.se[j])), Text(fmt_interval(ci[j])), "yes" if covers[j] else "no",
            )  # fmt: skip
        out = console()
        out.print(table)
        out.print(Text(f"ε = {fmt_epsilon(d.epsilon)}"))
        return
    assert isinstance(d, BinaryDesign | Kuk) and isinstance(est, Estimate)
    share_1 = float(sim.true_share)
    intervals = {m: est.ci(lvl, m) for m in est.interval_methods}
    covers_1 = {m: bool(lo <= share_1 <= hi) for m, (lo, hi) in intervals.items()}
    if as_json:
        payload = estimate_payload(d, Tally(tally.counts), est, lvl)
        payload.update(
            seed=used_seed,
            prevalence=pi,
            non_compliance=sim.non_compliance,
            true_share=share_1,
            true_carriers=int(np.count_nonzero(sim.truth)),
            covers=covers_1,
        )
        emit_json(payload)
        return
    rows = [
        ("design", f"{d.name} ({fmt_params(d.parameters())})"),
        ("ε", epsilon_note(d.epsilon)),
        ("n, seed", f"{n}, {used_seed}"),
        ("prevalence drawn from", f"{pi:g}"),
        ("true share (simulation only)", fmt_num(share_1, 6)),
        ("estimate (unbiased moment)" if est.method == "moment" else "estimate",
         fmt_num(est.value, 6)),
        ("estimate (bounded)", fmt_num(est.bounded, 6)),
        ("SE (plug-in, n) / (unbiased, n - 1)",
         f"{fmt_num(est.se, 6)} / {fmt_num(est.se_unbiased, 6)}"),
    ]  # fmt: skip
    if sim.non_compliance > 0:
        rows.insert(4, ("non-compliance (always no)", f"{sim.non_compliance:g}"))
    for m, interval in intervals.items():
        mark = "covers the truth" if covers_1[m] else "misses the truth"
        rows.append((f"{lvl:.0%} CI ({m})", f"{fmt_interval(interval, 6)}  {mark}"))
    console().print(kv_table(rows, title="Simulated survey: truth beside the estimate"))
