"""The `deniable survey` commands that work on the service's database: ``invite`` (single-use
invitation links), ``list`` (the surveys, their state and counts), ``close`` and
``reopen`` (docs/service.md, "Operating a survey").  They need the ``[service]`` extra and
take ``--db`` (default: as ``deniable serve``: ``DATABASE_URL``, else SQLite in
``$DENIABLE_DATA`` or ``./.deniable``), and each says which database it used.

A batch of invitation links is never lost: the links are written (a new file, mode 0600,
never one that exists) inside the transaction that creates the invitations, before it
commits.  If anything fails before the commit, the file is removed and the invitations
are rolled back; if the outcome of the commit is unknown (the connection failed during
it), the database is asked, and the file is kept whenever the invitations are there, or
when the database cannot tell.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, NoReturn
from urllib.parse import urlsplit

import typer

from deniable.cli._base import CliError, fail
from deniable.cli._invite_attributes import read_attributes, store_error
from deniable.cli._options import JsonOpt
from deniable.cli._render import emit_json, print_table
from deniable.cli._serve import serve_settings
from deniable.cli._serve import shown_url as shown
from deniable.results import Table

__all__ = [
    "MAX_INVITATIONS",
    "close_command",
    "invite_command",
    "list_command",
    "reopen_command",
]

#: The most invitations one command creates: one transaction, as the store allows
#: (``deniable.service.storage.MAX_INVITATIONS``; a test keeps them equal).
MAX_INVITATIONS = 100_000

DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="URL",
        help="Database URL; default: DATABASE_URL, else SQLite in $DENIABLE_DATA or "
        "./.deniable (as `deniable serve`).",
        show_default=False,
    ),
]
SurveyIdArg = Annotated[
    str,
    typer.Argument(metavar="SURVEY", help="The survey's id (as `deniable survey list` shows it).",
                   show_default=False),
]  # fmt: skip


def _service(command: str) -> Any:
    """The service's modules, or one error line naming the extra to install."""
    try:
        from deniable.service.storage import ServiceStore, lifecycle
    except ModuleNotFoundError as exc:
        fail(
            f"deniable survey {command} needs the [service] extra ({exc.name} is missing): "
            "pip install 'deniable[service]'."
        )
    return lifecycle, ServiceStore


def _settings(db: str | None, survey: str | None = None) -> Any:
    return serve_settings(db, survey)


@contextlib.contextmanager
def open_store(url: str, command: str, *, create: bool) -> Iterator[Any]:
    """The migrated store at ``url`` (closed afterwards).  Unless ``create``, a SQLite file
    that does not exist is one error line (nothing is created)."""
    _, store_class = _service(command)
    import sqlalchemy as sa

    parsed = sa.engine.make_url(url)
    path = parsed.database or ""
    if (
        not create
        and parsed.get_backend_name() == "sqlite"
        and path not in ("", ":memory:")
        and not path.startswith("file:")
        and not Path(path).is_file()
    ):
        fail(
            f"`--db`: there is no database at {path!r} (`deniable serve` or `deniable survey "
            "invite` creates one; give --db or DATABASE_URL for another)."
        )
    try:
        store = store_class(url)
    except ImportError as exc:
        fail(f"`--db`: {exc}.")
    try:
        try:
            store.migrate()
        except Exception as exc:  # the database cannot be opened or migrated
            fail(f"`--db`: cannot open the database {shown(url)} ({type(exc).__name__}: {exc})")
        yield store
    finally:
        store.close()


# --------------------------------------------------------------------------- invite


def _base_url(given: str | None) -> str:
    if given is None or not given.strip():
        fail(
            "`--base-url` (or DENIABLE_BASE_URL) is required: the address respondents open to "
            "reach the service (e.g. https://survey.example.org), so that the links are "
            f"complete; got {'none' if given is None else repr(given)}."
        )
    parts = urlsplit(given.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        fail(f"`--base-url` must start with http:// or https:// and name a host, got {given!r}.")
    if parts.query or parts.fragment or parts.username or parts.password:
        fail(
            "`--base-url` must be the service's address without a query, a fragment or a "
            f"user name (e.g. https://survey.example.org/surveys), got {given!r}."
        )
    return given.strip().rstrip("/")


def write_new_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, which must not exist, readable by its owner only (0600
    from the start): a temporary file beside it, synced, then linked to ``path`` (which
    fails if ``path`` appeared meanwhile), so that ``path`` is never partly written."""
    folder = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:  # mkstemp: mode 0600
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    with contextlib.suppress(OSError):  # the new name is durable too
        dirfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dirfd)
        finally:
            os.close(dirfd)


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
            help="A new file for the links, one per line (readable by you only; an existing "
            "file is never replaced).",
            show_default=False,
        ),
    ],
    survey: Annotated[
        str | None,
        typer.Option(
            "--survey",
            metavar="FILE|ID",
            help="A survey file (loaded into the database first) or the id of a survey in "
            "the database; default: DENIABLE_SURVEY, else the database's one survey (the demo "
            "survey in an empty database).",
            show_default=False,
        ),
    ] = None,
    db: DbOpt = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            metavar="URL",
            envvar="DENIABLE_BASE_URL",
            help="Where respondents reach the service (the links start with it); default: "
            "DENIABLE_BASE_URL.",
            show_default=False,
        ),
    ] = None,
    attributes: Annotated[
        str | None,
        typer.Option(
            "--attributes",
            metavar="CSV",
            help="Design attributes, one row per invitation (the links are written in its "
            "order): columns stratum, psu, weight and raking variables (e.g. region); not "
            "sensitive (what you know already).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Create single-use invitation links for a survey and write them to a new file (the
    tokens are shown once: the database keeps only their hashes)."""
    from deniable.exceptions import DeniableError

    if not out.strip():
        fail(f"`--out` must be a file path, got {out!r}.")
    base = _base_url(base_url)
    target = Path(out)
    if target.exists() or target.is_symlink():
        fail(
            f"`--out` {out!r} exists: a file of invitation links is never replaced (it may "
            "hold links not sent yet); choose a new file."
        )
    if not target.parent.is_dir():
        fail(f"`--out` {out!r}: the directory {str(target.parent)!r} does not exist.")
    attrs, variables = (None, []) if attributes is None else read_attributes(attributes, count)
    lifecycle, _ = _service("invite")
    stored_id = survey if survey is not None and _is_stored_id(survey) else None
    settings = _settings(db, None if stored_id is not None else survey)
    try:  # a survey file is checked before the database is opened
        given = None if settings.survey_file is None else settings.survey()
    except (DeniableError, OSError) as exc:
        fail(f"--survey: {exc}")
    url = settings.database_url
    written: list[str] = []
    sid = ""

    def publish(tokens: list[str]) -> None:
        if written:  # the transaction was retried: the same tokens, written already
            return
        links = "".join(f"{base}/s/{sid}?invitation={t}\n" for t in tokens)
        try:
            write_new_file(target, links)
        except FileExistsError:
            fail(f"`--out` {out!r} appeared while the links were written: choose a new file.")
        except OSError as exc:
            fail(f"`--out` {out!r}: cannot write it ({exc.strerror or exc}); nothing was created.")
        written.extend(tokens)

    with open_store(url, "invite", create=True) as store:
        try:
            the_survey, warnings = _invited_survey(store, stored_id, given, settings)
            sid = the_survey.id
            state = lifecycle.state_of(store.survey(sid))
        except DeniableError as exc:
            fail(f"--db: {exc}")
        try:
            # the design attributes only when given (the call is otherwise as before)
            extra = {} if attrs is None else {"attributes": attrs, "variables": variables}
            store.create_invitations(sid, count, before_commit=publish, **extra)
        except BaseException as exc:
            if written:
                _settle(lifecycle, store, sid, written, target, exc)
            if attrs is not None and isinstance(exc, DeniableError):
                fail(store_error(attributes or "", exc))
            if isinstance(exc, Exception) and not isinstance(exc, CliError | DeniableError):
                fail(f"--db: cannot create the invitations ({type(exc).__name__}: {exc})")
            raise
    lines = [f"wrote {count} single-use invitation links to {out}"
             + ("" if attrs is None else f" (in the order of {attributes})"),
             f"  database: {shown(url)}", f"  links:    {base}/s/{sid}?invitation=..."]  # fmt: skip
    if state != "live":
        why = {"closed": f"closed (deniable survey reopen {sid})",
               "ended": "past its closing date", "not open yet": "not open yet"}[state]  # fmt: skip
        lines.append(f"  note: survey {sid!r} is {why}: the links work once it takes answers")
    if the_survey.respondents != "invitation":
        lines.append(
            f"  note: survey {sid!r} also admits anonymous respondents: set "
            "`respondents: invitation` in its file to admit invited ones only"
        )
    lines += [f"warning: {w}" for w in warnings]
    sys.stdout.write("\n".join(lines) + "\n")


def _is_stored_id(value: str) -> bool:
    """Whether ``--survey`` names a survey by its id (a survey id, and no such file)."""
    import re

    return re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", value) is not None and not Path(value).exists()


def _invited_survey(
    store: Any, stored_id: str | None, given: Any, settings: Any
) -> tuple[Any, list[str]]:
    """The survey to invite to, and the warnings of loading it: the stored survey of that
    id; the survey file's (loaded); else the database's one survey; the demo survey in an
    empty database.  A database of several surveys needs ``--survey``."""
    ids = store.survey_ids()
    if stored_id is not None:
        if stored_id not in ids:
            fail(
                f"`--survey` must be a survey file or the id of a survey in the database (its "
                f"surveys: {', '.join(map(repr, ids)) or 'none'}), got {stored_id!r}."
            )
        return store.survey(stored_id), []
    if given is not None:
        return given, store.load_survey(given)
    if len(ids) == 1:
        return store.survey(ids[0]), []
    if ids:
        fail(
            f"`--survey`: the database holds several surveys ({', '.join(map(repr, ids))}): "
            "name the one to invite to (its id or its file)."
        )
    demo = settings.survey()
    return demo, store.load_survey(demo)


def _settle(
    lifecycle: Any, store: Any, sid: str, tokens: list[str], target: Path, exc: BaseException
) -> NoReturn:
    """After ``create_invitations`` failed once the links were written: remove the file
    if the invitations are not in the database; keep it (and say so) if they are, or if
    the database cannot tell.  Always ends the command with one error line."""
    try:
        stored = lifecycle.invitations_stored(store, sid, tokens)
    except Exception as check:
        fail(
            f"the links were written to {str(target)!r}, but whether the database committed "
            f"the invitations is unknown ({type(exc).__name__}: {exc}; then "
            f"{type(check).__name__}): the file is kept; `deniable survey list` shows the "
            "invitations the database holds."
        )
    if stored == 0:
        with contextlib.suppress(OSError):
            target.unlink()
        fail(
            f"no invitation was created ({type(exc).__name__}: {exc}); the links file "
            f"{str(target)!r} was removed."
        )
    fail(
        f"the {stored} invitations are in the database and their links in {str(target)!r}, "
        f"but the command then failed ({type(exc).__name__}: {exc}); keep the file."
    )


# --------------------------------------------------------------------------- list, close


def _when(t: Any) -> str:
    return "-" if t is None else t.isoformat(timespec="seconds")


def list_command(db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """List the surveys in the service's database: version, how respondents come, whether
    each is live or closed, and its counts."""
    lifecycle, _ = _service("list")
    url = _settings(db).database_url
    with open_store(url, "list", create=False) as store:
        found = lifecycle.survey_summaries(store)
    if as_json:
        emit_json({"database": shown(url), "surveys": [s.to_dict() for s in found]})
        return
    rows = [
        (s.id, s.version, s.access, s.state, s.respondents, s.reports,
         f"{s.redeemed} of {s.invitations}", s.title)
        for s in found
    ]  # fmt: skip
    print_table(
        Table(
            ("survey", "version", "access", "state", "respondents", "reports", "invited",
             "title"),
            tuple(rows),
            title=f"{len(found)} survey(s) in {shown(url)}",
            notes=("access: anonymous (anyone) or invitation (single-use links); invited: "
                   "links redeemed of links made; state: live (takes answers), closed (by "
                   "`deniable survey close`; `reopen` undoes it), ended or not open yet (its "
                   "file's dates)",),
        )
    )  # fmt: skip


def _toggle(survey_id: str, db: str | None, as_json: bool, *, close: bool) -> None:
    command = "close" if close else "reopen"
    lifecycle, _ = _service(command)
    url = _settings(db).database_url
    with open_store(url, command, create=False) as store:
        act = lifecycle.close_survey if close else lifecycle.reopen_survey
        changed = act(store, survey_id)
        summary = next(s for s in lifecycle.survey_summaries(store) if s.id == survey_id)
    if as_json:
        emit_json({"database": shown(url), "changed": changed, "survey": summary.to_dict()})
        return
    kept = f"its {summary.reports} reports from {summary.respondents} respondents are kept"
    if close:
        head = (
            f"closed survey {survey_id!r}"
            if changed
            else f"survey {survey_id!r} was closed already (since {_when(summary.closed_at)})"
        )
        text = (f"{head} in {shown(url)}: it takes no new session and no report; {kept}. "
                f"`deniable survey reopen {survey_id}` opens it again.")  # fmt: skip
    else:
        head = (
            f"reopened survey {survey_id!r}" if changed else f"survey {survey_id!r} was not closed"
        )
        text = (f"{head} in {shown(url)}: it is {summary.state} (its file's dates apply); "
                f"{kept}, every respondent's budget as it was.")  # fmt: skip
    sys.stdout.write(text + "\n")


def close_command(survey_id: SurveyIdArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Close a survey: no new session and no report from now on; everything stored stays
    (reopen it with `deniable survey reopen`)."""
    _toggle(survey_id, db, as_json, close=True)


def reopen_command(survey_id: SurveyIdArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Reopen a survey closed by `deniable survey close` (its file's dates apply again)."""
    _toggle(survey_id, db, as_json, close=False)
