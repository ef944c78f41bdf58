"""`deniable survey`: survey files (``deniable.survey/1``, docs/surveys.md).

``validate`` checks a file and prints each question's epsilon, the respondent's total by
basic and by optimal composition and whether the cap holds; ``demo`` prints (or writes) the
demo survey that ``deniable serve`` runs by default; ``invite`` creates single-use invitation
links in the service's database (needs the ``[service]`` extra).
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from deniable.cli._base import fail, guard_io
from deniable.cli._files import write_output
from deniable.cli._options import JsonOpt
from deniable.cli._render import emit_json, print_table
from deniable.common._format import format_epsilon
from deniable.results import Table

__all__ = ["survey_app"]

survey_app = typer.Typer(
    name="survey",
    help=(
        "Survey files (deniable.survey/1): check one and see what it costs a respondent, "
        "start from the demo survey, or invite respondents."
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
        payload: dict[str, Any] = {
            "file": file,
            "valid": True,
            "id": survey.id,
            "version": survey.version,
            "title": survey.title,
            "respondents": survey.respondents,
            "opens": None if survey.opens is None else survey.opens.isoformat(),
            "closes": None if survey.closes is None else survey.closes.isoformat(),
            "budget": budget.to_dict(),
            "cap_holds": budget.cap_holds,
        }
        emit_json(payload)
    else:
        head = Table.pairs(
            [
                ("file", file),
                ("survey", f"{survey.id} (version {survey.version}): {survey.title}"),
                ("respondents", survey.respondents),
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
) -> None:
    """Print the demo survey file that `deniable serve` runs by default (YAML)."""
    from deniable.survey import demo_survey_text

    text = demo_survey_text()
    if out is None:
        with guard_io("write to stdout"):
            sys.stdout.write(text)
        return
    if not out.strip():
        fail(f"`--out` must be a file path, got {out!r}.")
    write_output(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    sys.stdout.write(f"wrote the demo survey to {out}\n")


#: The most invitations one command creates.
MAX_INVITATIONS = 1_000_000


@survey_app.command("invite")
def invite_command(
    count: Annotated[
        int,
        typer.Option("--count", min=1, max=MAX_INVITATIONS, help="How many invitations to create."),
    ],
    out: Annotated[
        str,
        typer.Option(
            "--out",
            metavar="FILE",
            help="Where to write the links, one per line (created readable by you only).",
            show_default=False,
        ),
    ],
    survey: Annotated[
        str | None,
        typer.Option(
            "--survey",
            metavar="FILE",
            help="The survey file (loaded into the database first); default: "
            "DENIABLE_SURVEY, else the demo survey.",
            show_default=False,
        ),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            metavar="URL",
            help="Database URL; default: DATABASE_URL, else SQLite in $DENIABLE_DATA or "
            "./.deniable (as `deniable serve`).",
            show_default=False,
        ),
    ] = None,
    base_url: Annotated[
        str,
        typer.Option(
            "--base-url",
            metavar="URL",
            help="Where respondents reach the service (the links start with it).",
        ),
    ] = "http://127.0.0.1:8000",
) -> None:
    """Create single-use invitation links for a survey and write them to a file (the tokens
    are shown once: the database keeps only their hashes)."""
    from deniable.exceptions import DeniableError

    if not out.strip():
        fail(f"`--out` must be a file path, got {out!r}.")
    base = base_url.rstrip("/")
    if not base.startswith(("http://", "https://")):
        fail(f"`--base-url` must start with http:// or https://, got {base_url!r}.")
    try:
        from deniable.cli._serve import serve_settings
        from deniable.service.storage import ServiceStore
    except ModuleNotFoundError as exc:
        fail(
            f"deniable survey invite needs the [service] extra ({exc.name} is missing): "
            "pip install 'deniable[service]'."
        )
    settings = serve_settings(db, survey)
    try:
        the_survey = settings.survey()
    except (DeniableError, OSError) as exc:
        fail(f"--survey: {exc}")
    store = None
    try:
        store = ServiceStore(settings.database_url)
        store.migrate()
        store.load_survey(the_survey)
        tokens = store.create_invitations(the_survey.id, count)
    except DeniableError as exc:
        fail(f"--db: {exc}")
    except Exception as exc:  # the database cannot be opened or migrated
        fail(f"--db: cannot open the database ({type(exc).__name__}: {exc})")
    finally:
        if store is not None:
            store.close()
    links = "".join(f"{base}/s/{the_survey.id}?invitation={t}\n" for t in tokens)

    write_output(out, lambda tmp: tmp.write_text(links, encoding="utf-8"), mode=0o600)
    note = (
        ""
        if the_survey.respondents == "invitation"
        else (
            f" (survey {the_survey.id!r} also admits anonymous respondents: set "
            "`respondents: invitation` in its file to admit invited ones only)"
        )
    )
    sys.stdout.write(f"wrote {count} single-use invitation links to {out}{note}\n")
