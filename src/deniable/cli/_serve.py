"""`deniable serve`: run the survey service (needs the ``[service]`` extra).

Settings come from the environment and ``.env`` (``deniable.service.core.settings``); the options
override them.  At start the command checks that its port is free, migrates the database,
loads the survey of ``--survey`` or ``DENIABLE_SURVEY`` (without one, an empty database gets
the demo survey; a database that holds surveys serves them as they are), and prints every
live survey's pages, the database and — when ``DENIABLE_ADMIN_TOKEN`` is not set — the admin
token it generated for this run: printed once on stdout, never logged.  Logs are JSON lines
on stderr (``deniable.service.core.logging``).
"""

from __future__ import annotations

import errno
import os
import socket
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from deniable.cli._base import fail

__all__ = ["cli", "display_host", "serve_settings", "worker_environment"]

cli = typer.Typer()

_MISSING = (
    "fastapi",
    "uvicorn",
    "sqlalchemy",
    "alembic",
    "pydantic",
    "pydantic_settings",
    "itsdangerous",
    "yaml",
    "psycopg",
    "httptools",
)


def display_host(host: str) -> str:
    """The host to put in a printed URL: a wildcard address is reached on loopback.

    >>> display_host("0.0.0.0"), display_host("::"), display_host("::1")
    ('127.0.0.1', '[::1]', '[::1]')
    """
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def _settings(overrides: dict[str, Any]) -> Any:
    from pydantic import ValidationError

    from deniable.service.core.settings import Settings

    try:
        return Settings(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ())) or "settings"
        fail(f"setting `{field}`: {first.get('msg', 'invalid')}")


def serve_settings(
    db: str | None, survey: str | None, host: str | None = None, port: int | None = None
) -> Any:
    """The service's settings from the environment and ``.env``, with the options given."""
    overrides: dict[str, Any] = {}
    for key, value in (("database_url", db), ("host", host), ("port", port)):
        if value is not None:
            overrides[key] = value
    if survey is not None:
        overrides["survey_file"] = survey
    return _settings(overrides)


@cli.command("serve")
def serve_command(
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Database URL (sqlite:///PATH or postgresql+psycopg://...); default: "
            "DATABASE_URL, else SQLite in $DENIABLE_DATA or ./.deniable.",
        ),
    ] = None,
    host: Annotated[
        str | None, typer.Option("--host", help="Address to listen on (default 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option("--port", min=1, max=65535, help="Port to listen on (default 8000)."),
    ] = None,
    survey: Annotated[
        Path | None,
        typer.Option(
            "--survey",
            help="Survey file (YAML or JSON) to load; default: DENIABLE_SURVEY, else the "
            "demo survey.",
        ),
    ] = None,
    streams: Annotated[
        Path | None,
        typer.Option(
            "--streams",
            help="Telemetry streams file (YAML or JSON: streams: [spec, ...]) to store at "
            "start; default: DENIABLE_STREAMS, else none.",
        ),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=1,
            max=64,
            help="Server processes (default 1); rate limits and the connection cap are per "
            "process.",
        ),
    ] = 1,
) -> None:
    """Run the survey service: respondent pages, the dashboard and the JSON API."""
    try:
        import uvicorn

        from deniable.service.app import create_app
        from deniable.service.core.connections import ensure_descriptors, limits_environment
        from deniable.service.core.logging import configure_logging
        from deniable.service.core.strength import check_admin_secrets
        from deniable.service.storage import ServiceStore
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in _MISSING:
            raise
        fail(
            f"deniable serve needs the [service] extra ({exc.name} is missing): "
            "pip install 'deniable[service]'."
        )
    from deniable.exceptions import DeniableError

    settings = serve_settings(db, None if survey is None else str(survey), host, port)
    if streams is not None:
        settings = settings.model_copy(update={"streams_file": streams})
    if settings.streams_file is not None:
        from deniable.service.analysis.streams import load_streams_file

        try:  # checked before anything is written
            load_streams_file(settings.streams_file)
        except DeniableError as exc:
            fail(f"--streams: {exc}")
    try:  # a survey file is checked before anything else
        the_survey = None if settings.survey_file is None else settings.survey()
    except (DeniableError, OSError) as exc:
        fail(f"--survey: {exc}")
    check_port(settings.host, int(settings.port))  # before anything is written or printed
    generated = bool(settings.admin_token_generated)
    try:
        check_admin_secrets(settings)  # before anything is created
        ensure_descriptors(settings.max_connections)
    except DeniableError as exc:
        fail(str(exc))
    if settings.sessions_file is None:  # shared by the workers, kept across restarts
        settings = settings.model_copy(
            update={"sessions_file": Path(settings.data_dir).resolve() / "sessions.db"}
        )
    try:
        store = ServiceStore(settings.database_url)
    except ImportError as exc:
        fail(f"`--db`: {exc}.")
    try:
        store.migrate()
        if the_survey is None and not store.survey_ids():
            the_survey = settings.survey()  # an empty database gets the demo survey
        warnings = [] if the_survey is None else store.load_survey(the_survey)
        from deniable.service.storage.lifecycle import survey_summaries

        summaries = survey_summaries(store)
    except DeniableError as exc:
        fail(f"--db: {exc}")
    except Exception as exc:  # the database cannot be opened or migrated
        fail(f"--db: cannot open the database ({type(exc).__name__}: {exc})")
    try:
        app = create_app(settings, store)
    except DeniableError as exc:  # a stream stored with another spec
        fail(f"--streams: {exc}")
    base = f"http://{display_host(settings.host)}:{settings.port}"
    print_surveys(base, None if the_survey is None else the_survey.id, summaries)
    typer.echo("The service:")
    typer.echo(f"  database:        {shown_url(settings.database_url)}")
    typer.echo(f"  API schema:      {base}/docs")
    if generated:
        typer.echo(f"  admin token:     {settings.admin_token}")
        typer.echo("  (generated for this run; set DENIABLE_ADMIN_TOKEN to keep one)")
    else:
        typer.echo("  admin token:     from DENIABLE_ADMIN_TOKEN")
    for warning in warnings:
        typer.echo(f"warning: {warning}")
    sys.stdout.flush()  # the URLs before the server blocks (stdout may be a pipe)
    options: dict[str, Any] = {
        "host": settings.host,
        "port": int(settings.port),
        "access_log": False,  # it logs raw paths; the app logs route templates instead
        "log_config": None,
        "server_header": False,
        # idle and trickling connections closed, at most max_connections open
        "http": "deniable.service.core.connections:GuardedHttpProtocol",
        "timeout_keep_alive": int(settings.keep_alive_timeout),
    }
    os.environ.update(limits_environment(settings))
    configure_logging()
    if workers == 1:
        uvicorn.run(app, **options)
        return
    # several processes: each builds its app from the environment (already migrated)
    os.environ.update(worker_environment(settings))
    uvicorn.run("deniable.service.app:app_from_environment", factory=True, workers=workers,
                **options)  # fmt: skip


def shown_url(url: str) -> str:
    """A database URL to print: its password hidden."""
    import sqlalchemy as sa

    return str(sa.engine.make_url(url).render_as_string(hide_password=True))


def check_port(host: str, port: int) -> None:
    """One error line if ``host:port`` cannot be listened on (another program has it, or
    the address is not this machine's), so that no URL is printed for a server that would
    not start.  Binds as uvicorn does (``SO_REUSEADDR``) and lets go at once."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            fail(
                f"`--port` {port}: another program is listening on {host}:{port}; stop it or "
                "choose another port (--port or DENIABLE_PORT)."
            )
        fail(
            f"`--host` {host!r}: cannot listen on {host}:{port} ({exc.strerror or exc}); give "
            "an address of this machine (--host or DENIABLE_HOST)."
        )


def print_surveys(base: str, served: str | None, summaries: Any) -> None:
    """Every survey of the database with its pages: the live ones first (the one just loaded
    leading), then one line for each that takes no answers now."""
    live = sorted((s for s in summaries if s.live), key=lambda s: (s.id != served, s.id))
    idle = [s for s in summaries if not s.live]
    if not live:
        typer.echo("No survey takes answers now.")
    for s in live:
        how = "by invitation" if s.access == "invitation" else "anonymous"
        typer.echo(f"Survey {s.id!r}: {s.title} (version {s.version}, {how})")
        typer.echo(f"  respondent page: {base}/s/{s.id}")
        typer.echo(f"  dashboard:       {base}/dashboard/{s.id}")
        typer.echo(f"  interviewer:     {base}/interviewer/{s.id}")
        if s.access == "invitation":
            typer.echo(
                f"  respondents come by invitation: deniable survey invite --base-url {base} "
                f"(or POST {base}/api/surveys/{s.id}/invitations)"
            )
    for s in idle:
        why = {
            "closed": f"closed (deniable survey reopen {s.id})",
            "ended": "ended (its file's closing date has passed)",
            "not open yet": "not open yet (its file's opening date is ahead)",
        }[s.state]
        typer.echo(f"Survey {s.id!r}: {s.title}: {why}; dashboard: {base}/dashboard/{s.id}")


def worker_environment(settings: Any) -> dict[str, str]:
    """The variables from which each worker process rebuilds ``settings``."""
    from deniable.service.core.connections import limits_environment

    env = {
        "DATABASE_URL": str(settings.database_url),
        "DENIABLE_ADMIN_TOKEN": str(settings.admin_token),
        "DENIABLE_HOST": str(settings.host),
        "DENIABLE_PORT": str(settings.port),
        "DENIABLE_MAX_BODY_BYTES": str(settings.max_body_bytes),
        "DENIABLE_RATE_LIMIT_PER_MINUTE": str(settings.rate_limit_per_minute),
        "DENIABLE_BATCH_MAX_ITEMS": str(settings.batch_max_items),
        "DENIABLE_ADMIN_GUESS_LIMIT": str(settings.admin_guess_limit),
        "DENIABLE_ADMIN_GUESS_WINDOW": str(settings.admin_guess_window),
        "DENIABLE_KEEP_ALIVE_TIMEOUT": str(settings.keep_alive_timeout),
        "DENIABLE_SESSION_LIMIT_PER_ADDRESS": str(settings.session_limit_per_address),
        "DENIABLE_SESSION_LIMIT_PER_SURVEY": str(settings.session_limit_per_survey),
        "DENIABLE_SESSION_WINDOW_SECONDS": str(settings.session_window_seconds),
        **limits_environment(settings),
    }
    if settings.sessions_file is not None:
        env["DENIABLE_SESSIONS_FILE"] = str(settings.sessions_file)
    if settings.admin_password:
        env["DENIABLE_ADMIN_PASSWORD"] = str(settings.admin_password)
    if settings.survey_file is not None:
        env["DENIABLE_SURVEY"] = str(settings.survey_file)
    if settings.streams_file is not None:
        env["DENIABLE_STREAMS"] = str(settings.streams_file)
    if getattr(settings, "streams_dir", None) is not None:
        env["DENIABLE_STREAMS_DIR"] = str(settings.streams_dir)
    return env
