"""The statements of :mod:`deniable.service.storage.submissions`' write transaction
(SQLAlchemy Core, built once per dialect): the survey's stamp with the ledger's unit and
the question records in one read; which ids are respondents, with the reports they
stored; the reports' insert (on PostgreSQL with the ledger's writes attached as CTEs)."""

from __future__ import annotations

import json
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from deniable.service.storage._sql import array, member, per_dialect
from deniable.service.storage.db import is_postgres
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
    on = member(lq.name, "names", postgres)
    return (
        sa.select(*STAMP.selected_columns, *UNIT_COLUMNS, lq.name, lq.epsilon, lq.memoized,
                  lq.charges)
        .select_from(surveys.outerjoin(ledger_question, on))
        .where(surveys.c.id == sa.bindparam("sid"))
    )  # fmt: skip


@per_dialect
def respondents_and_reports(postgres: bool) -> Any:
    """Which of the ids ``ids`` are respondents of survey ``sid``, each with the reports it
    stored for the questions ``qids`` (a row per report; one with a NULL question for a
    respondent without any).  Driven by the list of ids (a primary-key look-up each: on
    PostgreSQL from the unnested array, whatever the statistics of a table last analyzed
    when it was small say)."""
    r = respondents.c
    on = sa.and_(
        _r.survey_id == r.survey_id,
        _r.respondent_id == r.id,
        member(_r.question_id, "qids", postgres),
    )
    if not postgres:
        return (
            sa.select(r.id, _r.question_id, _r.report)
            .select_from(respondents.outerjoin(reports, on))
            .where(r.survey_id == sa.bindparam("sid"), member(r.id, "ids", postgres, sa.Integer))
        )
    ids = sa.func.unnest(array("ids", sa.Integer)).table_valued("id").render_derived(name="u")
    found = ids.join(respondents, sa.and_(r.id == ids.c.id, r.survey_id == sa.bindparam("sid")))
    return sa.select(r.id, _r.question_id, _r.report).select_from(found.outerjoin(reports, on))


@per_dialect
def insert_reports(postgres: bool) -> Any:
    """New reports in one statement, with the survey ``sid`` and the time ``now``: on
    PostgreSQL from arrays (``r``, ``qid``, ``v``) read with ``unnest``; on SQLite from one
    JSON array of ``[r, qid, v]`` triples (``rows``) read with ``json_each``.  One bound
    value, not one parameter set per report: SQLAlchemy compiles the parameters of every
    set of an ``executemany``, which cost as much as the insert itself (a batch of 10,000
    reports took twice as long)."""
    r: Any
    qid: Any
    v: Any
    if postgres:
        u = (
            sa.func.unnest(array("r", sa.Integer), array("qid", sa.Text), array("v", sa.Integer))
            .table_valued("r", "qid", "v")
            .render_derived(name="u")
        )
        r, qid, v = u.c.r, u.c.qid, u.c.v
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
    """The parameters of :func:`insert_reports` on PostgreSQL: the rows as arrays."""
    r, qid, v = (list(col) for col in zip(*rows, strict=True))
    return {"sid": sid, "now": time.time(), "r": r, "qid": qid, "v": v}


def write_reports(conn: Connection, sid: str, rows: list[tuple[int, str, int]]) -> None:
    """Insert the stored reports ``(respondent id, question id, report)``, received now."""
    insert = insert_reports(conn)
    if is_postgres(conn):  # one statement of arrays
        conn.execute(insert, report_params(sid, rows))
    else:  # one statement of a JSON array
        conn.execute(insert, {"sid": sid, "now": time.time(), "rows": json.dumps(rows)})
