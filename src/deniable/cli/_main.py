"""The application: the root command group, which knows every command's name and one-line
help and imports a command's module only when that command runs (or shows its own help), so
that ``deniable --help`` imports none of the library."""

from __future__ import annotations

import importlib
from typing import Annotated, Any, NamedTuple

import typer
from typer.core import TyperCommand

import deniable
from deniable.cli._base import CommandGroup

__all__ = ["COMMANDS", "app"]


class Command(NamedTuple):
    """Where a command lives: its module, the Typer application there, its one-line help
    (as listed by ``deniable --help``; a test checks it against the command's own), and
    whether it is a group of subcommands (``privacy``, ``spec``)."""

    module: str
    app: str
    help: str
    group: bool = False


#: Every command, in the order `deniable --help` lists them.
COMMANDS: dict[str, Command] = {
    "designs": Command(
        "deniable.cli._designs", "cli",
        "List every design: parameters, its channel at an example setting, and ε.",
    ),
    "estimate": Command(
        "deniable.cli._designs", "cli",
        "Estimate the prevalence from randomized reports: estimate, both SEs, intervals.",
    ),
    "majority": Command(
        "deniable.cli._decisions", "cli",
        'Decide "the majority has A" from the yes count, with its exact error probability.',
    ),
    "coins": Command(
        "deniable.cli._decisions", "cli",
        "A protocol with fair coins or dice: instructions, exact probabilities and ε.",
    ),
    "simulate": Command(
        "deniable.cli._decisions", "cli",
        "Simulate a survey: hidden truth, randomized reports, and the estimate side by side.",
    ),
    "analyze": Command(
        "deniable.cli._analyze", "cli",
        "Estimate the prevalence (or a categorical question's shares) from a column of reports "
        "in a CSV or Parquet file; the design from --design/--param or from --survey.",
    ),
    "report": Command(
        "deniable.cli._analyze", "cli",
        "A whole-survey report: every question's n, estimate, interval and ε (by --question, or "
        "every question of a survey file by --survey).",
    ),
    "weight": Command(
        "deniable.cli._weight", "cli",
        "Weights from population margins: rake (or post-stratify) the rows of a report table "
        "to a margins CSV, optionally trim, and write the table with a weight column.",
    ),
    "numbers": Command(
        "deniable.cli._numbers", "cli",
        "The mean (and total) of a sensitive number asked by scrambled response, from a column "
        "of a report file, optionally under the sample's design, with the design's privacy.",
    ),
    "crosstab": Command(
        "deniable.cli._crosstab", "cli",
        "Two randomized items together: their joint distribution, association (odds ratio, "
        "risk difference, corrected correlation, ...) and a test of independence.",
    ),
    "simulation-study": Command(
        "deniable.cli._study", "cli",
        "Repeat a simulated survey: bias, SEs, RMSE, interval coverage (and power).",
    ),
    "power": Command(
        "deniable.cli._power", "cli",
        "Power of a one- or two-sample test of the prevalence, with the SEs under H0 and H1.",
    ),
    "sample-size": Command(
        "deniable.cli._power", "cli",
        "The minimal sample size whose power reaches --power (power(n - 1) falls short).",
    ),
    "regress": Command(
        "deniable.cli._regress", "cli",
        "Regression with randomized answers: logistic (or probit, cloglog) on a randomized "
        "outcome, or linear on a randomized predictor (--predictor).",
    ),
    "tour": Command(
        "deniable.cli._tour", "cli",
        "A guided tour: randomize with two coins, estimate, decide, and pick fair dice.",
    ),
    "serve": Command(
        "deniable.cli._serve", "cli",
        "Run the survey service: respondent pages, the dashboard and the JSON API.",
    ),
    "privacy": Command(
        "deniable.cli._privacy", "privacy_app",
        "Privacy accounting: composition, conversions between DP flavours, amplification by "
        "shuffling, noise for released counts, epsilon explained, audits and budgets.",
        group=True,
    ),
    "spec": Command(
        "deniable.cli._spec", "spec_app",
        "Question specs (versioned JSON that a server, a browser or a file can hold) and the "
        "randomizer test vectors other clients are checked against.",
        group=True,
    ),
    "aggregate": Command(
        "deniable.cli._telemetry", "cli",
        "Tally a report file in batches, or report tables on a Dask cluster (memory O(k)), and "
        "estimate every frequency.",
    ),
    "telemetry": Command(
        "deniable.cli._telemetry", "telemetry_app",
        "Frequency oracles for telemetry: choose one, simulate devices into a report file, "
        "aggregate a report file in batches.",
        group=True,
    ),
    "survey": Command(
        "deniable.cli._survey", "survey_app",
        "Survey files (deniable.survey/1): check one and see what it costs a respondent, "
        "or start from the demo survey; the service's surveys: invite, list, close, reopen.",
        group=True,
    ),
}  # fmt: skip


def load_command(name: str) -> Any:
    """Import the module of command ``name`` and build its (click) command."""
    entry = COMMANDS[name]
    group = typer.main.get_group(getattr(importlib.import_module(entry.module), entry.app))
    if entry.group:
        group.name = name
        return group
    return group.commands[name]


class LazyGroup(CommandGroup):
    """The root group: lists the commands from :data:`COMMANDS` without importing them, and
    imports a command's module when it is run."""

    _listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in COMMANDS:
            return None
        if self._listing:  # the help listing needs the name and the one-line help only
            return TyperCommand(cmd_name, short_help=COMMANDS[cmd_name].help)
        return load_command(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    cls=LazyGroup,
    name="deniable",
    help=(
        "Randomized response with exact epsilon: designs, estimates with exact intervals, "
        "majority decisions, coin protocols, and a guided tour (`deniable tour`)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"deniable {deniable.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Randomized response with exact epsilon (exit status 2 on any bad input)."""
