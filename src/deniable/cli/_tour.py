"""`deniable tour`: a narrated survey from hidden truth to estimate, decision and coins.

Everything is computed from one seed, so the tour prints the same text for the same
``--seed`` and ``--n``.  The true answers exist only because this is a simulation; they are
shown in columns labelled "simulation only" and never as if they had been collected.
"""

from __future__ import annotations

from typing import Annotated, cast

import numpy as np
import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from deniable.cli._options import SeedOpt
from deniable.cli._render import console
from deniable.common import format_interval as fmt_interval
from deniable.common import format_number as fmt_num
from deniable.designs import TwoCoin
from deniable.estimation import majority_decision
from deniable.mechanisms import design_protocol
from deniable.results import Estimate
from deniable.simulation import simulate

__all__ = ["TOUR_SEED", "cli"]

#: The default seed: the tour is the same on every machine unless asked otherwise.
TOUR_SEED = 2024

cli = typer.Typer()
_WIDTH = 88
_SHOWN = 6


def _say(out: Console, text: str, style: str | None = None) -> None:
    out.print(Text(text, style=style or ""), width=min(out.width, _WIDTH))


def _section(out: Console, number: int, title: str) -> None:
    out.print(Text(f"\n{number}. {title}", style="bold cyan"), width=min(out.width, _WIDTH))


def _table(*columns: str) -> Table:
    """A compact table; the first columns are left-aligned, numbers (last column) right."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col in columns:
        table.add_column(col, justify="left")
    return table


@cli.command("tour")
def tour_command(
    seed: SeedOpt = TOUR_SEED,
    n: Annotated[
        int, typer.Option("--n", "-n", min=10, max=10**6, help="Number of respondents.")
    ] = 2000,
) -> None:
    """A guided tour: randomize with two coins, estimate, decide, and pick fair dice."""
    out = console()
    seed = TOUR_SEED if seed is None else seed
    design = TwoCoin()
    hidden = round(float(np.random.default_rng([seed, 1]).uniform(0.10, 0.60)), 2)
    sim = simulate(design, n, hidden, seed=seed)
    carriers = int(np.count_nonzero(sim.truth))
    reports = sim.reports
    est = cast(Estimate, sim.estimate)  # a binary design's estimate

    out.rule(Text("deniable: a guided tour of a randomized-response survey", style="bold"))
    _section(out, 1, "The population")
    _say(
        out,
        f"{n} respondents; some have a sensitive trait A (say, 'I cheated on my taxes'). "
        f"The share who have it is hidden: the simulation drew it from seed {seed} and "
        "reveals it only at the end.",
    )

    _section(out, 2, "Each respondent's device randomizes with two coins (Dwork & Roth 2014)")
    _say(
        out,
        "Flip a coin. Tails: answer truthfully. Heads: flip again and answer 'yes' on heads, "
        "'no' on tails. Only the answer leaves the device.",
    )
    _say(
        out,
        "P(yes | has A) = 1/2 + 1/4 = 3/4        P(yes | does not have A) = 1/4",
        style="bold",
    )
    _say(
        out,
        f"ε = ln 3 = {design.epsilon:.4f}: a 'yes' is 3 times as likely from someone who has A "
        "(3/4) as from someone who does not (1/4), and a 'no' 3 times as likely the other way "
        "round. Whatever anyone believed about a respondent, a report moves the odds that "
        "they have A by a factor of at most 3.",
    )

    _section(out, 3, f"The first {_SHOWN} reports, as the collector stores them")
    shown = _table("respondent", "report", "why it is deniable", "truth (simulation only)")
    for i in range(min(_SHOWN, n)):
        yes = bool(reports[i])
        why = "1 in 4 without A say yes too" if yes else "1 in 4 with A say no too"
        truth = "has A" if sim.truth[i] else "no A"
        shown.add_row(f"#{i + 1}", "yes" if yes else "no", why, Text(truth, style="dim"))
    out.print(shown)
    _say(out, "The collector never sees the last column: it exists only in a simulation.", "dim")

    _section(out, 4, "The collector tallies and estimates")
    tally = design.tally(reports)
    assert est.lambda_hat is not None
    _say(
        out,
        f"{tally.yes} 'yes' of {n} reports: λ̂ = {est.lambda_hat:.4f}. Since "
        "λ = 1/4 + π/2, the unbiased estimate is π̂ = (λ̂ − 1/4) / (1/2) = "
        f"{est.value:.4f} (bounded MLE {est.bounded:.4f}); SE {est.se:.4f} (plug-in, n) or "
        f"{est.se_unbiased:.4f} (unbiased, n − 1).",
    )
    cis = _table("95% interval", "for the prevalence π")
    names = {"wald": "Wald", "exact": "exact (Clopper-Pearson)", "wilson": "Wilson"}
    for m in est.interval_methods:
        cis.add_row(names.get(m, m), Text(fmt_interval(est.ci(0.95, m))))
    out.print(cis)

    _section(out, 5, "A majority decision, with its exact error probability")
    rule = majority_decision(design, n, prevalence=0.5)
    verdict = rule.decide(tally.yes)
    _say(
        out,
        f"Does a majority have A? Rule: say so iff #yes > {rule.threshold:g} (the yes count "
        f"expected at a 50% prevalence). Observed {tally.yes}: "
        f"{'a majority' if verdict else 'not a majority'}. Exact probability of a wrong "
        "verdict if the true share were "
        + ", ".join(
            f"{pi:.0%}: {fmt_num(majority_decision(design, n, prevalence=pi).error_probability)}"
            for pi in (0.40, 0.45, 0.48, 0.55)
        )
        + ".",
    )

    _section(out, 6, "Without a computer: fair dice (`deniable coins --epsilon 1`)")
    protocol = design_protocol(epsilon=1.0)
    _say(out, protocol.instructions)
    coins = _table("", "")
    coins.show_header = False
    for key, value in protocol.rows()[2:]:
        coins.add_row(Text(key), Text(value))
    out.print(coins)

    _section(out, 7, "The reveal (simulation only)")
    share = carriers / n
    covered = [
        names.get(m, m).split(" ")[0] for m in est.interval_methods if est.ci(0.95, m).covers(share)
    ]
    fixed = majority_decision(design, n, true_yes=carriers)
    _say(
        out,
        f"The hidden prevalence was {hidden:.2f}; {carriers} of {n} respondents have A "
        f"(share {share:.4f}). The estimate {est.value:.4f} is off by "
        f"{abs(est.value - share) / est.se:.2f} SE; "
        + (
            f"intervals covering the truth: {', '.join(covered)}."
            if covered
            else "no interval covers the truth (it happens 5% of the time each)."
        )
        + f" The majority verdict was {'right' if fixed.is_right(tally.yes) else 'wrong'}; "
        f"with these {carriers} carriers its exact error probability is "
        f"{fmt_num(fixed.error_probability)}.",
    )
    _say(out, "Next: deniable designs | estimate | majority | coins | simulate --help", "dim")
