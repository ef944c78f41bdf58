"""The statements of :mod:`deniable.service.storage.submissions`' write transaction
(SQLAlchemy Core, built once per dialect): the survey's stamp with the ledger's unit and
the question records in one read; which ids are respondents, with the reports they
stored; the reports' insert (on PostgreSQL with the ledger's writes attached as CTEs)."""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from deniable.service.storage._sql import (
    json_columns,
    json_elements,
    json_listed,
    member,
    per_dialect,
)
from deniable.service.storage.ledger_steps import UNIT_COLUMNS, ledger_write_ctes
from deniable.service.storage.surveys import STAMP
from deniable.service.storage.tables import ledger_question, reports, respondents, surveys

__all__ = [
    "insert_reports",
    "report_params",
    "respondents_and_reports",
    "stamp_unit_records",
    "write_all",
    "write_reports",
]

_r = reports.c


@per_dialect
def stamp_unit_records(postgres: bool) -> Any:
    """The survey's stamp, the unit of the ledger's totals and the question rows of the
    names ``names``, in one statement: a row per question row found (its columns NULL in
    the one row when none is)."""
    lq = ledger_question.c
    on = member(lq.name, "names", postgres, as_json=True)
    return (
        sa.select(*STAMP.selected_columns, *UNIT_COLUMNS, lq.name, lq.epsilon, lq.memoized,
                  lq.charges)
        .select_from(surveys.outerjoin(ledger_question, on))
        .where(surveys.c.id == sa.bindparam("sid"))
    )  # fmt: skip


@per_dialect
def respondents_and_reports(postgres: bool) -> Any:
    """Which of the ids ``ids`` are respondents of survey ``sid``, each with the reports it
    stored for the questions ``qids`` (both JSON arrays, :func:`json_listed`): a row per
    report; one with a NULL question for a respondent without any (on PostgreSQL also
    one, with a NULL id, per id that is no respondent of the survey).

    On PostgreSQL each id is looked up on its own, in ``LATERAL`` subqueries (their LIMIT
    and OFFSET keep them from being flattened into joins): its respondent row by primary
    key, its reports by the primary key's first columns (survey, respondent).  A join
    would be planned from the statistics, and with statistics gathered before a survey's
    reports came PostgreSQL read every report of the survey once per transaction."""
    r = respondents.c
    if not postgres:
        on = sa.and_(
            _r.survey_id == r.survey_id,
            _r.respondent_id == r.id,
            member(_r.question_id, "qids", postgres),
        )
        return (
            sa.select(r.id, _r.question_id, _r.report)
            .select_from(respondents.outerjoin(reports, on))
            .where(r.survey_id == sa.bindparam("sid"), member(r.id, "ids", postgres, sa.Integer))
        )
    sid = sa.bindparam("sid", type_=reports.c.survey_id.type)
    ids = json_elements("ids").render_derived(name="u")
    rid = sa.cast(ids.c.value, sa.Integer)
    who = sa.select(r.id).where(r.id == rid, r.survey_id == sid).limit(1).lateral("who")
    done = (
        sa.select(_r.question_id, _r.report)
        .where(
            _r.survey_id == sid,
            _r.respondent_id == rid,
            member(_r.question_id, "qids", postgres, as_json=True),
        )
        .offset(0)
        .lateral("done")
    )
    return sa.select(who.c.id, done.c.question_id, done.c.report).select_from(
        ids.outerjoin(who, sa.true()).outerjoin(done, sa.true())
    )


@per_dialect
def insert_reports(postgres: bool) -> Any:
    """New reports in one statement, with the survey ``sid`` and the time ``now``, from one
    JSON array of ``[r, qid, v]`` triples (``rows``), read with ``json_array_elements`` on
    PostgreSQL and ``json_each`` on SQLite.  One bound value, not one parameter set per
    report: SQLAlchemy compiles the parameters of every set of an ``executemany``, which
    cost as much as the insert itself (a batch of 10,000 reports took twice as long)."""
    r: Any
    qid: Any
    v: Any
    if postgres:
        _, (r, qid, v) = json_columns("rows", [sa.Integer, sa.Text, sa.Integer])
    else:
        each = sa.func.json_each(sa.bindparam("rows", type_=sa.Text)).table_valued("value")
        r, qid, v = (sa.func.json_extract(each.c.value, f"$[{i}]") for i in range(3))
    return sa.insert(reports).from_select(
        ["survey_id", "respondent_id", "question_id", "report", "received_at"],
        sa.select(
            sa.bindparam("sid", type_=reports.c.survey_id.type),
            r,
            qid,
            v,
            sa.bindparam("now", type_=reports.c.received_at.type),
        ),
    )


_WRITE_ALL: list[Any] = []


def write_all(conn: Connection) -> Any:
    """PostgreSQL: the reports' insert with the ledger's writes attached as CTEs
    (:func:`~deniable.service.storage.ledger_steps.ledger_write_ctes`), one round trip
    instead of three; the CTEs act on rows this transaction has locked, disjoint from each
    other (the totals of the paid keys, the lock rows of the unpaid new ones)."""
    if not _WRITE_ALL:
        _WRITE_ALL.append(insert_reports(conn).add_cte(*ledger_write_ctes(conn)))
    return _WRITE_ALL[0]


def report_params(sid: str, rows: list[tuple[int, str, int]]) -> dict[str, Any]:
    """The parameters of :func:`insert_reports`: the rows as one JSON array."""
    return {"sid": sid, "now": time.time(), "rows": json_listed(rows)}


def write_reports(conn: Connection, sid: str, rows: list[tuple[int, str, int]]) -> None:
    """Insert the stored reports ``(respondent id, question id, report)``, received now."""
    conn.execute(insert_reports(conn), report_params(sid, rows))
