"""`deniable survey`: survey files (``deniable.survey/1``, docs/surveys.md) and the surveys of
the service's database.

``validate`` checks a file and prints each question's epsilon, the respondent's total by
basic and by optimal composition and whether the cap holds; ``demo`` prints (or writes) the
demo survey that ``deniable serve`` runs by default.  ``invite``, ``list``, ``close`` and
``reopen`` work on the service's database (:mod:`deniable.cli._survey_db`; they need the
``[service]`` extra).
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from deniable.cli._base import fail, guard_io
from deniable.cli._files import claim_output
from deniable.cli._options import ForceOpt, JsonOpt
from deniable.cli._render import emit_json, print_table
from deniable.cli._survey_db import close_command, invite_command, list_command, reopen_command
from deniable.common import format_epsilon
from deniable.results import Table

__all__ = ["survey_app"]

survey_app = typer.Typer(
    name="survey",
    help=(
        "Survey files (deniable.survey/1): check one and see what it costs a respondent, "
        "or start from the demo survey; the service's surveys: invite, list, close, reopen."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

FileArg = Annotated[
    str,
    typer.Argument(
        metavar="FILE", help="A survey file (.yaml, .yml or .json).", show_default=False
    ),
]


@survey_app.command("validate")
def validate_command(file: FileArg, as_json: JsonOpt = False) -> None:
    """Check a survey file: each question's ε, the total by basic and optimal composition,
    and whether the cap holds (exit 1 when it does not).

    A key given twice, nesting past 64 levels, an integer of more than 40 digits or a
    question of more than 1,024 answers is refused."""
    from deniable.survey import load_survey

    if not file.strip():
        fail(f"`FILE` must name a survey file, got {file!r}.")
    survey = load_survey(file)
    budget = survey.budget()
    if as_json:
        described = survey.to_dict()
        payload: dict[str, Any] = {
            "file": file,
            "valid": True,
            **{
                k: described[k]
                for k in ("id", "version", "title", "respondents", "opens", "closes")
            },
            "budget": budget.to_dict(),
            "cap_holds": budget.cap_holds,
        }
        emit_json(payload)
    else:
        head = Table.pairs(
            [
                ("file", file),
                ("survey", f"{survey.id} (version {survey.version}): {survey.title}"),
                ("respondents", _ACCESS[survey.respondents]),
                ("open", _window(survey.opens, survey.closes)),
                ("cap (per respondent)", f"ε = {survey.cap:g} by basic composition"),
            ],
            title="A valid survey file",
        )
        print_table(head)
        rows = [(q.id, q.design.name, format_epsilon(q.epsilon), q.text) for q in survey.questions]
        print_table(Table(("question", "design", "ε", "text"), tuple(rows)))
        print_table(budget.table())
    if not budget.cap_holds:
        raise typer.Exit(1)


#: How respondents come, in words (``respondents`` of the survey file).
_ACCESS = {
    "anonymous": "anonymous: anyone who opens the survey's page (new sessions are rate-limited)",
    "invitation": "by invitation only: single-use links (deniable survey invite)",
}


def _window(opens: Any, closes: Any) -> str:
    start = "always" if opens is None else opens.isoformat()
    end = "never closes" if closes is None else f"until {closes.isoformat()}"
    return f"from {start}, {end}" if opens is not None else end


@survey_app.command("demo")
def demo_command(
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            metavar="FILE",
            help="Write the demo survey (YAML) to FILE instead of printing it.",
            show_default=False,
        ),
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Print the demo survey file that `deniable serve` runs by default (YAML)."""
    from deniable.survey import demo_survey_text

    target = claim_output("--out", out, force=force, formats=["yaml"])
    text = demo_survey_text()
    if target is None:
        with guard_io("write to stdout"):
            sys.stdout.write(text)
        return
    target.write_text(text)
    sys.stdout.write(f"wrote the demo survey to {out}\n")


survey_app.command("invite")(invite_command)
survey_app.command("list")(list_command)
survey_app.command("close")(close_command)
survey_app.command("reopen")(reopen_command)
