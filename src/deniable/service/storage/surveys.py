"""Surveys in the database: :class:`SurveyStore`, the base of
:class:`~deniable.service.storage.ServiceStore` (the engine, the ledger and memo stores on
it, and the survey definitions: load, read, cache).

A survey's definition is cached in the process with its stamp (version, load time and the
operator's closing); every transaction that stores reports checks the stamp again, so a
new version loaded by another process is never decided with the old definition.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from deniable.exceptions import DataError, ParameterTypeError
from deniable.service.storage._plan import Layout, layout
from deniable.service.storage._sql import EngineStore, dialect_insert, retrying
from deniable.service.storage.db import dispose, make_engine, migrate, read_tx
from deniable.service.storage.ledger import SqlLedgerStore
from deniable.service.storage.memo import SqlMemoStore
from deniable.service.storage.tables import (
    groups,
    ledger_respondent,
    reports,
    respondents,
    surveys,
)
from deniable.survey import Survey

__all__ = [
    "STAMP",
    "Stamp",
    "SurveyClosedError",
    "SurveyStore",
    "closed_survey",
    "ledger_key_column",
    "respondent_key",
    "survey_stamp",
]


class SurveyClosedError(DataError):
    """The survey does not take answers now (before it opens or after it closes)."""


def respondent_key(survey_id: str, respondent_id: int) -> str:
    """A respondent's key in the ledger store, encoded (as
    :func:`~deniable.service.storage.encode_key` encodes the string
    ``f"{survey_id}:{respondent_id}"``)."""
    return f"s{survey_id}:{respondent_id}"


def ledger_key_column() -> Any:
    """The SQL expression of a ``respondents`` row's key in the ledger store (what
    :func:`respondent_key` writes), to join ``ledger_respondent`` on."""
    r = respondents.c
    return sa.literal("s") + r.survey_id + sa.literal(":") + sa.cast(r.id, sa.Text)


def _changed(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The ids of the questions of ``old`` that ``new`` removes or changes."""
    after = {q["id"]: q for q in new["questions"]}
    return [q["id"] for q in old["questions"] if after.get(q["id"]) != q]


def _redrawn(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The ids of the two-group questions of ``old`` whose design ``new`` changes or that
    it removes: the groups drawn for them are forgotten (the next are drawn with the new
    design's shares; such a question has no reports, or the version is refused)."""
    after = {q["id"]: q.get("design") for q in new["questions"]}
    return [
        q["id"]
        for q in old["questions"]
        if q.get("unbounded") is True and after.get(q["id"]) != q.get("design")
    ]


#: A survey's stamp: what says that its stored definition changed.
Stamp = tuple[int, str]
#: The stamp's columns of the survey ``sid``.
STAMP = sa.select(surveys.c.version, surveys.c.loaded_at, surveys.c.closed_at).where(
    surveys.c.id == sa.bindparam("sid")
)
_DEFINITION = sa.select(surveys.c.definition).where(surveys.c.id == sa.bindparam("sid"))


def survey_stamp(row: Any) -> Stamp:
    """The stamp of a :data:`STAMP` row: the version, the load time and the closing by the
    operator."""
    return int(row[0]), repr((row[1], row[2]))


def closed_survey(survey: Survey, closed_at: float | None) -> Survey:
    """``survey`` with the time the operator closed it (seconds since the epoch; ``None``:
    not closed) as its ``closed_at``."""
    if closed_at is None:
        return survey
    return dataclasses.replace(survey, closed_at=datetime.fromtimestamp(float(closed_at), UTC))


class SurveyStore(EngineStore):
    """Surveys, respondents, reports and budgets in one SQL database: the engine, the
    ledger and memo stores on it, and the surveys (see the module docstring).

    ``url`` is a database URL (``sqlite:///path.db``, ``postgresql://...``; see
    :func:`~deniable.service.storage.db.database_url`) or an engine.  Creating the store
    opens no connection; :meth:`migrate` creates or upgrades the schema.  Thread-safe;
    several processes may share one database.
    """

    def __init__(self, url: str | Engine) -> None:
        try:
            self._engine = make_engine(url) if isinstance(url, str) else url
        except ModuleNotFoundError as exc:
            if not (exc.name or "").startswith("psycopg"):
                raise
            raise ImportError(
                "a PostgreSQL database needs the psycopg driver, which is not installed: "
                "pip install 'deniable[postgres]'"
            ) from None
        self.ledger = SqlLedgerStore(self._engine)
        self.memo = SqlMemoStore(self._engine)
        self._cache: dict[str, tuple[int, str, Survey, Layout]] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the pooled connections."""
        dispose(self._engine)

    def migrate(self) -> None:
        """Create or upgrade the schema (``alembic upgrade head``); idempotent."""
        migrate(self._engine)

    # ------------------------------------------------------------------ surveys

    def load_survey(self, survey: Survey) -> list[str]:
        """Insert ``survey``, or replace the stored definition of the same id; the warnings
        an operator must read (a list of sentences, usually empty).

        Loading the same definition again changes nothing.  A new definition must carry a
        higher ``version``, and may not change or remove a question that already has
        reports (a :class:`~deniable.exceptions.DataError` names them): the stored reports
        of a question always come from the design stored with it.  A new version whose
        ``cap`` is below what some respondents have already spent is loaded with a warning
        that says how many they are: they can answer no further question (their stored
        reports stay and count); one that raises the cap while some respondents have spent
        is loaded with a warning that their total may now grow past the cap they answered
        under.  Loading never reopens a survey the operator closed.
        """
        if not isinstance(survey, Survey):
            raise ParameterTypeError(f"`survey` must be a Survey, got {type(survey).__name__}.")
        definition = survey.to_dict()
        warnings: list[str] = []

        def work(conn: Connection) -> None:
            warnings.clear()
            stored = sa.select(surveys.c.version, surveys.c.definition).where(
                surveys.c.id == survey.id
            )
            row = conn.execute(stored).first()
            now = time.time()
            if row is None:
                # several server processes may start at once: the first insert wins, the
                # others compare with it
                done = conn.execute(
                    dialect_insert(conn, surveys)
                    .values(
                        id=survey.id, version=survey.version, definition=definition, loaded_at=now
                    )
                    .on_conflict_do_nothing()
                )
                if done.rowcount == 1:
                    return
                row = conn.execute(stored).one()
            if row.definition == definition:
                return
            if survey.version <= row.version:
                raise DataError(
                    f"survey {survey.id!r} version {row.version} is loaded with another "
                    f"definition: a changed survey needs a higher `version`, got {survey.version}."
                )
            changed = _changed(row.definition, definition)
            if changed:
                answered = sorted(
                    conn.execute(
                        sa.select(reports.c.question_id)
                        .where(reports.c.survey_id == survey.id, reports.c.question_id.in_(changed))
                        .distinct()
                    ).scalars()
                )
                if answered:
                    raise DataError(
                        f"survey {survey.id!r} version {survey.version} changes or removes "
                        f"question(s) {', '.join(map(repr, answered))}, which already have "
                        "reports: keep those questions as they are (add new questions under new "
                        "ids) or start a survey with a new id."
                    )
            redrawn = _redrawn(row.definition, definition)
            if redrawn:
                g = groups.c
                conn.execute(
                    sa.delete(groups).where(g.survey_id == survey.id, g.question_id.in_(redrawn))
                )
            over = self._over_cap(conn, survey.id, survey.cap)
            if over:
                warnings.append(
                    f"survey {survey.id!r} version {survey.version} lowers the cap to "
                    f"{survey.cap:g}, below what {over} respondent(s) have already spent: they "
                    "can answer no further question (their stored reports stay and count in "
                    "the estimates)."
                )
            old_cap = float(row.definition.get("cap", survey.cap))
            spenders = self._over_cap(conn, survey.id, 0.0) if survey.cap > old_cap else 0
            if spenders:
                warnings.append(
                    f"survey {survey.id!r} version {survey.version} raises the cap from "
                    f"{old_cap:g} to {survey.cap:g}: the {spenders} respondent(s) who already "
                    f"answered may now spend up to {survey.cap:g} in all, not the "
                    f"{old_cap:g} they answered under; tell them if that was their promise."
                )
            conn.execute(
                sa.update(surveys)
                .where(surveys.c.id == survey.id)
                .values(version=survey.version, definition=definition, loaded_at=now)
            )

        retrying(self._engine, work)
        return list(warnings)

    @staticmethod
    def _over_cap(conn: Connection, survey_id: str, cap: float) -> int:
        """How many respondents of the survey have spent more than ``cap``."""
        r, lr = respondents.c, ledger_respondent.c
        key = ledger_key_column()
        found = conn.execute(
            sa.select(sa.func.count())
            .select_from(respondents.join(ledger_respondent, lr.key == key))
            .where(r.survey_id == survey_id, lr.spent > cap)
        ).scalar_one()
        return int(found)

    def survey(self, survey_id: str) -> Survey:
        """The survey with this id (a :class:`~deniable.exceptions.DataError` if unknown)."""
        with read_tx(self._engine) as conn:
            return self._survey(conn, survey_id)

    def survey_ids(self) -> list[str]:
        """The ids of every loaded survey, sorted."""
        with read_tx(self._engine) as conn:
            return list(conn.execute(sa.select(surveys.c.id).order_by(surveys.c.id)).scalars())

    def _survey(self, conn: Connection, survey_id: str) -> Survey:
        if not isinstance(survey_id, str):
            raise ParameterTypeError(f"`survey_id` must be a string, got {survey_id!r}.")
        row = conn.execute(STAMP, {"sid": survey_id}).first()
        if row is None:
            raise DataError(f"there is no survey {survey_id!r}.")
        stamp = survey_stamp(row)
        with self._lock:
            hit = self._cache.get(survey_id)
        if hit is not None and (hit[0], hit[1]) == stamp:
            return hit[2]
        data = conn.execute(_DEFINITION, {"sid": survey_id}).scalar_one()
        survey = closed_survey(Survey.from_dict(data), row.closed_at)
        with self._lock:
            self._cache[survey_id] = (stamp[0], stamp[1], survey, layout(survey))
        return survey

    def _survey_now(self, survey_id: str) -> tuple[Survey, Stamp, Layout]:
        """The survey, its stamp (version, load time) and its questions' layout: the cached
        ones (the transaction that stores checks that the stamp is still current), else
        read."""
        with self._lock:
            hit = self._cache.get(survey_id)
        if hit is None:
            with read_tx(self._engine) as conn:
                self._survey(conn, survey_id)
            with self._lock:
                hit = self._cache[survey_id]
        return hit[2], (hit[0], hit[1]), hit[3]
