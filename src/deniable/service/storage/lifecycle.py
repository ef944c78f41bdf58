"""The surveys of a database as an operator sees them: :func:`survey_summaries` (what
``deniable survey list`` and ``deniable serve`` print) and :func:`close_survey` /
:func:`reopen_survey` (``deniable survey close`` and ``reopen``).

**Closing** sets ``surveys.closed_at``: from then on the survey takes no new session and no
report (the API answers 409 "closed", the respondent page says the survey is closed), and
everything stored stays: reports, respondents, budgets, invitations, the dashboard and the
exports.  Loading the survey's file again (a restart, a new version) does not reopen it.
**Reopening** clears ``closed_at``: the survey takes answers again within its file's
``opens`` and ``closes``, with every respondent's budget as it was (nothing is reset, so a
respondent can never spend more than the cap across the closing).  A transaction that
began storing a report before the close commits may still store it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from deniable.exceptions import DataError
from deniable.service.storage._sql import listed, member, per_dialect, retrying
from deniable.service.storage.db import is_postgres, read_tx
from deniable.service.storage.respondents import hash_token
from deniable.service.storage.tables import invitations, reports, respondents, surveys
from deniable.survey import Survey

__all__ = [
    "STATES",
    "SurveySummary",
    "close_survey",
    "invitations_stored",
    "reopen_survey",
    "state_of",
    "survey_summaries",
]

#: The states of a survey: taking answers, not yet open, past its closing date, or closed
#: by the operator.
STATES = ("live", "not open yet", "ended", "closed")


@dataclass(frozen=True)
class SurveySummary:
    """One survey of a database: its definition's headline, its state and its counts."""

    id: str
    title: str
    version: int
    access: str
    state: str
    closed_at: datetime | None
    opens: datetime | None
    closes: datetime | None
    respondents: int
    answered: int
    reports: int
    invitations: int
    redeemed: int

    @property
    def live(self) -> bool:
        """Whether the survey takes answers now."""
        return self.state == "live"

    def to_dict(self) -> dict[str, Any]:
        def iso(t: datetime | None) -> str | None:
            return None if t is None else t.isoformat()

        return {
            "id": self.id,
            "title": self.title,
            "version": self.version,
            "access": self.access,
            "state": self.state,
            "closed_at": iso(self.closed_at),
            "opens": iso(self.opens),
            "closes": iso(self.closes),
            "respondents": self.respondents,
            "respondents_with_reports": self.answered,
            "reports": self.reports,
            "invitations": self.invitations,
            "invitations_redeemed": self.redeemed,
        }


def state_of(survey: Survey, at: datetime | None = None) -> str:
    """The survey's state (one of :data:`STATES`) at ``at`` (default: now)."""
    now = at or datetime.now(UTC)
    if survey.closed_at is not None and now >= survey.closed_at:
        return "closed"
    if survey.opens is not None and now < survey.opens:
        return "not open yet"
    if survey.closes is not None and now >= survey.closes:
        return "ended"
    return "live"


def _counts(conn: Any, column: Any, where: Any = None) -> dict[str, int]:
    stmt = sa.select(column.table.c.survey_id, sa.func.count()).group_by(column.table.c.survey_id)
    if where is not None:
        stmt = stmt.where(where)
    return {sid: int(n) for sid, n in conn.execute(stmt).all()}


def survey_summaries(store: Any) -> list[SurveySummary]:
    """Every survey of ``store`` (a :class:`~deniable.service.storage.store.ServiceStore`), by id:
    version, how respondents come, state, and the numbers of respondents, respondents with a
    report, reports, invitations created and redeemed."""
    with read_tx(store.engine) as conn:
        ids = list(conn.execute(sa.select(surveys.c.id).order_by(surveys.c.id)).scalars())
        people = _counts(conn, respondents.c.id)
        stored = _counts(conn, reports.c.report)
        answered = {
            sid: int(n)
            for sid, n in conn.execute(
                sa.select(
                    reports.c.survey_id, sa.func.count(sa.distinct(reports.c.respondent_id))
                ).group_by(reports.c.survey_id)
            ).all()
        }
        issued = _counts(conn, invitations.c.token_hash)
        redeemed = _counts(conn, invitations.c.token_hash, invitations.c.redeemed_at.isnot(None))
    out = []
    now = datetime.now(UTC)
    for sid in ids:
        s = store.survey(sid)
        out.append(
            SurveySummary(
                id=s.id,
                title=s.title,
                version=s.version,
                access=s.respondents,
                state=state_of(s, now),
                closed_at=s.closed_at,
                opens=s.opens,
                closes=s.closes,
                respondents=people.get(sid, 0),
                answered=answered.get(sid, 0),
                reports=stored.get(sid, 0),
                invitations=issued.get(sid, 0),
                redeemed=redeemed.get(sid, 0),
            )
        )
    return out


def _known(store: Any, survey_id: str) -> None:
    if not isinstance(survey_id, str) or survey_id not in store.survey_ids():
        known = ", ".join(repr(x) for x in store.survey_ids()) or "none"
        raise DataError(
            f"`survey` must be a survey of the database (its surveys: {known}), got {survey_id!r}."
        )


def _set_closed(store: Any, survey_id: str, closed: bool) -> bool:
    """Close (or reopen) the survey; whether that changed anything."""
    _known(store, survey_id)

    def work(conn: Any) -> bool:
        column = surveys.c.closed_at
        stmt = sa.update(surveys).where(surveys.c.id == survey_id)
        if closed:
            stmt = stmt.where(column.is_(None)).values(closed_at=time.time())
        else:
            stmt = stmt.where(column.isnot(None)).values(closed_at=None)
        return bool(conn.execute(stmt).rowcount == 1)

    changed: bool = retrying(store.engine, work)
    return changed


def close_survey(store: Any, survey_id: str) -> bool:
    """Close the survey (see the module docstring); ``False`` if it was closed already.
    An unknown survey is a :class:`~deniable.exceptions.DataError` naming the known ones."""
    return _set_closed(store, survey_id, True)


def reopen_survey(store: Any, survey_id: str) -> bool:
    """Undo :func:`close_survey`; ``False`` if the survey was not closed."""
    return _set_closed(store, survey_id, False)


def invitations_stored(store: Any, survey_id: str, tokens: list[str]) -> int:
    """How many of these invitation tokens the database holds for the survey (after a
    failure, whether a batch was committed)."""
    digests = sorted({hash_token(t) for t in tokens})
    with read_tx(store.engine) as conn:
        params = {"sid": survey_id, "digests": listed(is_postgres(conn), digests)}
        found = conn.execute(_stored_invitations(conn), params).scalar()
    return int(found or 0)


@per_dialect
def _stored_invitations(postgres: bool) -> Any:
    """How many invitations of survey ``sid`` have their hash in the list ``digests``."""
    i = invitations.c
    return (
        sa.select(sa.func.count())
        .select_from(invitations)
        .where(i.survey_id == sa.bindparam("sid"), member(i.token_hash, "digests", postgres))
    )
