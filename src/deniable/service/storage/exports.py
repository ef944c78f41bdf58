"""What the analyst reads: :class:`ExportStore`, the part of
:class:`~deniable.service.storage.ServiceStore` that reads tallies (whole, and over time),
the budget each respondent has spent, the export's rows and the arrival counts, each in
one read transaction (one snapshot).

Nothing here returns a respondent's token or a time with a report: the export's rows carry
the respondent id only to group a respondent's reports, and the analysis drops it
(:func:`deniable.service.analysis.export_table`).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from deniable.designs import Tally
from deniable.exceptions import ParameterError
from deniable.service.storage.db import is_postgres, read_tx
from deniable.service.storage.surveys import SurveyStore, ledger_key_column
from deniable.service.storage.tables import (
    invitations,
    ledger_respondent,
    reports,
    respondents,
)

__all__ = ["BUCKETS", "ExportStore", "arrival_counts"]

#: Seconds per timeline bucket.
BUCKETS = {"hour": 3600, "day": 86400}


def _window(conn: Connection, column: Any, width: int) -> Any:
    # floor(t / width): a cast truncates on SQLite (times are positive) but rounds on
    # PostgreSQL, which has floor
    if is_postgres(conn):
        return sa.cast(sa.func.floor(column / width), sa.BigInteger)
    return sa.cast(column / width, sa.BigInteger)


class ExportStore(SurveyStore):
    """Tallies, timelines, budgets spent and exports (see the module; the arrival counts
    are :func:`arrival_counts`)."""

    def tallies(self, survey_id: str) -> dict[str, Tally]:
        """Every question's tally of the stored reports, bound to its design (equal to
        ``design.tally(reports)`` of the same reports)."""
        r = reports.c
        with read_tx(self._engine) as conn:
            survey = self._survey(conn, survey_id)
            rows = conn.execute(
                sa.select(r.question_id, r.report, sa.func.count())
                .where(r.survey_id == survey_id)
                .group_by(r.question_id, r.report)
            ).all()
            counts = {q.id: np.zeros(q.spec.reports, dtype=np.int64) for q in survey.questions}
            for qid, v, c in rows:
                if qid in counts and 0 <= v < counts[qid].size:
                    counts[qid][v] += int(c)
        return {q.id: q.design.tally_counts(counts[q.id]) for q in survey.questions}

    def timeline(
        self, survey_id: str, question_id: str, bucket: str
    ) -> list[tuple[datetime, Tally]]:
        """The cumulative tally of a question at the end of each hour or day (``bucket``)
        in which reports arrived, oldest first: ``(end of the bucket, UTC; tally of every
        report received before it)``."""
        if bucket not in BUCKETS:
            raise ParameterError(f"`bucket` must be one of {', '.join(BUCKETS)}, got {bucket!r}.")
        width = BUCKETS[bucket]
        r = reports.c
        with read_tx(self._engine) as conn:
            question = self._survey(conn, survey_id).question(question_id)
            rows = conn.execute(
                sa.select(r.received_at, r.report)
                .where(r.survey_id == survey_id, r.question_id == question_id)
                .order_by(r.received_at)
            ).all()
        k = question.spec.reports
        if not rows:
            return []
        at = np.array([t for t, _ in rows], dtype=np.float64)
        vals = np.array([v for _, v in rows], dtype=np.int64)
        slot = np.floor(at / width).astype(np.int64)
        ends = np.flatnonzero(np.append(slot[1:] != slot[:-1], True))
        cum = np.zeros((vals.size, k), dtype=np.int64)
        cum[np.arange(vals.size), vals] = 1
        cum = np.cumsum(cum, axis=0)
        return [
            (
                datetime.fromtimestamp(float((slot[e] + 1) * width), UTC),
                question.design.tally_counts(cum[e]),
            )
            for e in ends.tolist()
        ]

    def spent(self, survey_id: str) -> npt.NDArray[np.float64]:
        """The budget spent by each respondent of the survey (0 for one who answered
        nothing), in respondent id order."""
        r, lr = respondents.c, ledger_respondent.c
        key = ledger_key_column()
        with read_tx(self._engine) as conn:
            self._survey(conn, survey_id)
            rows = conn.execute(
                sa.select(sa.func.coalesce(lr.spent, 0.0))
                .select_from(respondents.outerjoin(ledger_respondent, lr.key == key))
                .where(r.survey_id == survey_id)
                .order_by(r.id)
            ).scalars()
            return np.fromiter((float(x) for x in rows), dtype=np.float64)

    def export_rows(self, survey_id: str) -> Iterator[dict[str, Any]]:
        """One row per respondent who stored a report, in id order: ``{"respondent": id,
        question id: report or None, ...}`` with every question of the survey."""
        with read_tx(self._engine) as conn:
            survey = self._survey(conn, survey_id)
        qids = [q.id for q in survey.questions]
        r = reports.c
        stmt = (
            sa.select(r.respondent_id, r.question_id, r.report)
            .where(r.survey_id == survey_id)
            .order_by(r.respondent_id)
        )
        with read_tx(self._engine) as conn:
            result = conn.execution_options(yield_per=10_000).execute(stmt)
            row: dict[str, Any] | None = None
            for i, q, v in result:
                if row is None or row["respondent"] != i:
                    if row is not None:
                        yield row
                    row = {"respondent": int(i), **dict.fromkeys(qids)}
                if q in row:
                    row[q] = int(v)
            if row is not None:
                yield row

    def design_attributes(self, survey_id: str) -> dict[int, dict[str, Any]]:
        """The design attributes of the survey's respondents who came by an invitation
        that carried some: ``{respondent id: {name: value}}`` (no token, no time)."""
        inv = invitations.c
        with read_tx(self._engine) as conn:
            self._survey(conn, survey_id)
            rows = conn.execute(
                sa.select(inv.respondent_id, inv.attributes).where(
                    inv.survey_id == survey_id,
                    inv.respondent_id.isnot(None),
                    inv.attributes.isnot(None),
                )
            ).all()
        return {int(i): dict(a) for i, a in rows if a}


def arrival_counts(store: Any, survey_id: str, width: int) -> tuple[dict[int, int], dict[int, int]]:
    """``(sessions, reports)`` of a survey of ``store``: per window index ``floor(t /
    width)`` (``width`` in seconds), the number of sessions created and of reports received
    (windows without any are absent)."""
    out: list[dict[int, int]] = []
    with read_tx(store.engine) as conn:
        for table, column in ((respondents, respondents.c.created_at),
                              (reports, reports.c.received_at)):  # fmt: skip
            w = _window(conn, column, width).label("w")
            rows = conn.execute(
                sa.select(w, sa.func.count()).where(table.c.survey_id == survey_id).group_by(w)
            ).all()
            out.append({int(k): int(n) for k, n in rows})
    return out[0], out[1]
