"""`deniable majority`, `deniable coins` and `deniable simulate` (and the two-group options
that `deniable simulate` shares with `deniable simulation-study`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer

from deniable.cli._base import build_design, fail, parse_number, parse_numbers
from deniable.cli._options import (
    DesignArg,
    JsonOpt,
    LevelOpt,
    OptionGroup,
    ParamOpt,
    SeedOpt,
    fresh_seed,
    text_option,
)
from deniable.cli._render import show
from deniable.common import validation as v
from deniable.designs import BinaryDesign
from deniable.estimation import MAX_TRIALS, majority_decision
from deniable.mechanisms import design_protocol
from deniable.simulation import simulate

__all__ = ["DEFAULT_RESPONDENTS", "RESPONDENTS", "Respondents", "cli"]

cli = typer.Typer()

# --------------------------------------------------------------------------- majority


@cli.command("majority")
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
    seed: SeedOpt = None,
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
    if not isinstance(d, BinaryDesign):  # validation: a yes/no channel is needed
        fail(f"design {d.name!r} does not give yes/no reports; a majority needs a binary design.")
    pi = None if prevalence is None else parse_number("--prevalence", prevalence)
    decision = majority_decision(d, n, prevalence=pi, true_yes=true_yes, offset=offset)
    if simulate_trials is not None:
        decision = decision.simulate(simulate_trials, fresh_seed() if seed is None else seed)
    show(decision, as_json)


# --------------------------------------------------------------------------- coins


@cli.command("coins")
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
    show(protocol, as_json)


# --------------------------------------------------------------------------- simulate


@dataclass(frozen=True)
class Respondents:
    """How the simulated respondents answer, as given on the command line (text, parsed
    when the command asks): non-compliance, and the two-group designs' options."""

    non_compliance: str = "0"
    group_share: str | None = None
    unrelated_prevalence: str | None = None
    cheating: str | None = None
    honesty: str | None = None

    def keywords(self) -> dict[str, float]:
        """The two-group options given, as simulate() keywords."""
        given = {"group_share": self.group_share,
                 "unrelated_prevalence": self.unrelated_prevalence,
                 "cheating": self.cheating, "honesty": self.honesty}  # fmt: skip
        return {k: parse_number("--" + k.replace("_", "-"), x) for k, x in given.items() if x}


#: The options of :class:`Respondents` (`deniable simulate`, `deniable simulation-study`).
RESPONDENTS = OptionGroup(Respondents, {
    "non_compliance": (Annotated[str, typer.Option(
        "--non-compliance", help="Share who always say no, whatever the coin says.")], "0"),
    "group_share": text_option(
        "--group-share", "Two-group designs: share of respondents in group 1 (0.5)."),
    "unrelated_prevalence": text_option(
        "--unrelated-prevalence",
        "unrelated-unknown: share who would say yes to the unrelated question (required)."),
    "cheating": text_option(
        "--cheating", "cdm, cdm-symmetric: share of respondents who cheat (0)."),
    "honesty": text_option(
        "--honesty", "sld: carriers' probability of answering honestly (1)."),
})  # fmt: skip
#: No respondents' option given (the default of a command's ``respondents`` parameter).
DEFAULT_RESPONDENTS = Respondents()


@cli.command("simulate")
@RESPONDENTS.expand("respondents")
def simulate_command(
    design: DesignArg,
    param: ParamOpt = None,
    n: Annotated[int | None, typer.Option("--n", "-n", help="Number of respondents.")] = None,
    prevalence: Annotated[
        str | None,
        typer.Option("--prevalence", help="True share; categorical: a comma list of k shares."),
    ] = None,
    seed: SeedOpt = None,
    respondents: Respondents = DEFAULT_RESPONDENTS,
    level: LevelOpt = 0.95,
    as_json: JsonOpt = False,
) -> None:
    """Simulate a survey: hidden truth, randomized reports, and the estimate side by side."""
    d = build_design(design, param)
    if n is None:
        fail("`--n` (the number of respondents) is required.")
    if prevalence is None:
        fail("`--prevalence` is required.")
    pi: float | list[float]
    if d.n_groups == 1 and d.n_truths > 2:  # a share per category
        pi = parse_numbers("--prevalence", prevalence)
    else:
        if "," in prevalence:
            fail(f"`--prevalence` must be one number for design {d.name!r}, got {prevalence!r}.")
        pi = parse_number("--prevalence", prevalence)
    s = parse_number("--non-compliance", respondents.non_compliance)
    extra = respondents.keywords()
    used_seed = fresh_seed() if seed is None else seed
    sim = simulate(d, n, pi, seed=used_seed, non_compliance=s, **extra)
    show(sim, as_json, level=level)
