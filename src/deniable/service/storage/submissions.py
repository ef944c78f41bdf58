"""Reports and their budget: :class:`SubmissionStore`, the part of
:class:`~deniable.service.storage.ServiceStore` that stores randomized reports and spends
each respondent's epsilon, and says what a respondent has answered and may still answer.

**Atomicity.**  :meth:`SubmissionStore.submit` and :meth:`SubmissionStore.submit_batch`
store the reports and spend the budget in **one transaction** (``BEGIN IMMEDIATE`` on
SQLite; the respondent rows of the ledger inserted if missing and locked ``FOR UPDATE`` in
key order on PostgreSQL): a crash before the commit leaves neither, and a report
acknowledged after the commit is durable.  A respondent stores one report per question:
the same report again is a ``"duplicate"`` (nothing spent again), a different one a
``"conflict"`` (nothing changes).  Prices and admission come from the library's pricing
(:mod:`deniable.service.storage._plan`), so the spends round upward exactly as
:class:`~deniable.accounting.BudgetLedger` rounds them.

A respondent's key in the ledger is ``f"{survey_id}:{respondent_id}"``, a question's name
``f"{survey_id}/{question_id}"``; the stored report is the record of the charge (no
``ledger_charged`` row).  The statements are SQLAlchemy Core, built once per dialect: a
transaction reads the survey's stamp with the ledger's unit and the question records (one
statement), the respondents' rows (locked), then which of the ids are respondents together
with the reports they stored for the batch's questions (one statement, after the lock: a
report a concurrent transaction committed is seen; on PostgreSQL each respondent looked up
by key, whatever the statistics say), and writes the reports, the totals and the question
records: on PostgreSQL in one statement (the ledger's writes as CTEs of the reports'
insert), on SQLite in three.  A PostgreSQL group transaction thus sends 5 statements
(``tests/service/test_store_pg_writes.py`` counts them).  Lists are bound as one value
each: a JSON array, except the ledger's keys on PostgreSQL, an array (whose length the
planner knows; see :func:`~deniable.service.storage._sql.json_elements`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError

from deniable.accounting import (
    PURE_EPSILON,
    QuestionRecord,
    admitted,
    remaining_budget,
    spend_limit,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.service.storage._plan import (
    STATUSES,
    Items,
    Layout,
    Ranked,
    checked,
    decide,
    ranked,
)
from deniable.service.storage._sql import Ints, Rollback, json_listed, retrying
from deniable.service.storage._submit_sql import (
    report_params,
    respondents_and_reports,
    stamp_unit_records,
    write_all,
    write_reports,
)
from deniable.service.storage.db import (
    checkpoint,
    is_busy,
    is_postgres,
    nowait_engine,
    read_tx,
)
from deniable.service.storage.groups import check_groups
from deniable.service.storage.ledger_steps import (
    ledger_history,
    ledger_write_params,
    lock_respondents,
    require_unit,
    unit_of,
    write_records,
    write_spent,
)
from deniable.service.storage.surveys import (
    Stamp,
    SurveyStore,
    respondent_key,
    survey_stamp,
)
from deniable.service.storage.tables import reports
from deniable.survey import Survey

__all__ = [
    "STATUSES",
    "SubmissionStore",
    "Submitted",
    "WriterBusy",
    "ledger_key",
    "ledger_question_name",
]


@dataclass(frozen=True)
class Submitted:
    """The outcome of one report: ``status`` (one of :data:`STATUSES`) and the budget it
    spent (``charged``: the question's epsilon when ``"stored"``, else 0)."""

    status: str
    charged: float = 0.0

    @property
    def stored(self) -> bool:
        """Whether this submission stored the report."""
        return self.status == "stored"


def ledger_key(survey_id: str, respondent_id: int) -> str:
    """A respondent's key in the ledger store."""
    return f"{survey_id}:{respondent_id}"


def ledger_question_name(survey_id: str, question_id: str) -> str:
    """A question's name in the ledger store."""
    return f"{survey_id}/{question_id}"


def _check_id(what: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ParameterTypeError(f"`{what}` must be an integer id, got {value!r}.")
    return int(value)


class WriterBusy(Exception):
    """:meth:`SubmissionStore.submit_batch` with ``wait=False`` found the database's write
    lock held by another connection: nothing was written (submit again, waiting)."""


class _Stale(Exception):
    """The survey changed between checking the items and storing them."""


# --------------------------------------------------------------------------- statements
_r = reports.c
_ANSWERED = sa.select(_r.question_id, _r.report).where(
    _r.survey_id == sa.bindparam("sid"), _r.respondent_id == sa.bindparam("rid")
)


class SubmissionStore(SurveyStore):
    """Reports stored with their budget spends (see the module docstring)."""

    def answered(self, survey_id: str, respondent_id: int) -> dict[str, int]:
        """The reports this respondent stored: ``{question id: report}``."""
        rid = _check_id("respondent_id", respondent_id)
        with read_tx(self._engine) as conn:
            rows = conn.execute(_ANSWERED, {"sid": survey_id, "rid": rid}).all()
            return {q: int(rep) for q, rep in rows}

    def remaining(self, survey_id: str, respondent_id: int) -> float:
        """``cap - spent`` of this respondent, never below 0, rounded down so that a question
        of exactly this epsilon is admitted."""
        rid = _check_id("respondent_id", respondent_id)
        with read_tx(self._engine) as conn:
            survey = self._survey(conn, survey_id)
            spent = ledger_history(conn, [respondent_key(survey_id, rid)], None, None).spent
        return float(remaining_budget(spent, survey.cap)[0])

    def affordable(self, survey_id: str, respondent_id: int) -> dict[str, bool]:
        """For each question, whether it may be shown to this respondent now: answered
        already (resending the report costs nothing), or a new report would be admitted
        (``admitted``: the upward-rounded total within the cap, as :meth:`submit` decides;
        a snapshot, not a reservation)."""
        rid = _check_id("respondent_id", respondent_id)
        with read_tx(self._engine) as conn:
            survey = self._survey(conn, survey_id)
            spent = ledger_history(conn, [respondent_key(survey_id, rid)], None, None).spent
            done = {q for q, _ in conn.execute(_ANSWERED, {"sid": survey_id, "rid": rid})}
        eps = np.array([x.epsilon for x in survey.questions], dtype=np.float64)
        ok = admitted(np.full(eps.size, spent[0]), eps, spend_limit(survey.cap, 0.0))
        return {x.id: x.id in done or x.unbounded or bool(a)  # unbounded: outside the cap
                for x, a in zip(survey.questions, ok, strict=True)}  # fmt: skip

    def submit(
        self, survey_id: str, respondent_id: int, question_id: str, report: int
    ) -> Submitted:
        """Store one report and spend its epsilon, in one transaction (see the module
        docstring for the outcomes).  A report outside the question's reports, an unknown
        question or respondent raise :class:`~deniable.exceptions.DataError` and store
        nothing."""
        return self._submit(survey_id, [(respondent_id, question_id, report)], single=True)[0]

    def submit_batch(
        self, survey_id: str, items: Sequence[tuple[int, str, int]], *, wait: bool = True
    ) -> list[Submitted]:
        """Many ``(respondent id, question id, report)`` in one transaction, each with the
        outcome :meth:`submit` would give it in this order.  One invalid item raises
        :class:`~deniable.exceptions.DataError` naming it (``items[3].report``) and stores
        nothing.

        ``wait=False`` (only where :attr:`writes_without_waiting`): never wait for another
        writer; if one holds the write lock, raise :class:`WriterBusy` and store nothing.
        """
        engine = self._engine
        if not wait:
            found = nowait_engine(self._engine)
            if found is None:
                raise ParameterError(
                    "`wait=False` needs a database that writes without waiting (SQLite in "
                    f"a file, synchronous=NORMAL), got {self!r}."
                )
            engine = found
        return self._submit(survey_id, items, single=False, engine=engine)

    @property
    def writes_without_waiting(self) -> bool:
        """Whether a transaction of reports can be written without waiting for the disk or
        a server (SQLite in a file with ``synchronous=NORMAL``; see
        :func:`~deniable.service.storage.db.nowait_engine`): then a caller that must not
        block may call :meth:`submit_batch` with ``wait=False``."""
        return nowait_engine(self._engine) is not None

    def checkpoint(self) -> None:
        """Copy SQLite's write-ahead log back into the database (a passive checkpoint; see
        :func:`~deniable.service.storage.db.checkpoint`): the writes with ``wait=False``
        leave it to their caller, to be run where waiting for the disk blocks nothing."""
        checkpoint(self._engine)

    def _submit(
        self,
        survey_id: str,
        items: Sequence[tuple[int, str, int]],
        *,
        single: bool,
        engine: Engine | None = None,
    ) -> list[Submitted]:
        for _ in range(3):
            survey, stamp, shape = self._survey_now(survey_id)
            rid, qix, rep = checked(survey, items, single=single, shape=shape)
            if not rid.size:
                return []
            if not survey.is_open():
                return [Submitted("closed")] * rid.size
            try:
                work = functools.partial(_store, survey, stamp, shape, rid, qix, rep, single)
                return retrying(engine or self._engine, work)
            except OperationalError as exc:
                if engine is not None and engine is not self._engine and is_busy(exc):
                    raise WriterBusy from None
                raise
            except _Stale:  # a new version was loaded meanwhile: read it, check again
                with self._lock:
                    self._cache.pop(survey_id, None)
        raise DataError(f"survey {survey_id!r} keeps changing: try again.")  # pragma: no cover


def _store(
    survey: Survey,
    stamp: Stamp,
    shape: Layout,
    rid: Ints,
    qix: Ints,
    rep: Ints,
    single: bool,
    conn: Connection,
) -> list[Submitted]:
    """Decide and write the items in ``conn``'s write transaction (see the module)."""
    sid = survey.id
    postgres = is_postgres(conn)
    qids, qpos = shape.qids, shape.qpos
    used = sorted(set(qix.tolist()))
    names = {j: ledger_question_name(sid, qids[j]) for j in used}
    # the stamp, the unit and the question rows (not locked: writers add their charges)
    rows = conn.execute(
        stamp_unit_records(conn), {"sid": sid, "names": json_listed(names.values())}
    ).all()
    if not rows or survey_stamp(rows[0]) != stamp:
        raise _Stale
    # the ledger's totals are pure epsilon (the service prices so): never add them to rho
    require_unit(conn, PURE_EPSILON.unit, unit_of(rows[0][3], rows[0][4]))
    records: dict[str, QuestionRecord | None] = dict.fromkeys(names.values())
    for name, eps, memoized, charges in (row[5:] for row in rows):
        if name is not None and eps is not None:
            records[name] = QuestionRecord(name, float(eps), bool(memoized), int(charges))
    before = {j: records[name] for j, name in names.items()}
    # a two-group question's report must carry the respondent's drawn group (groups.py)
    check_groups(conn, survey, rid, qix, rep, single=single)
    who: Ranked = ranked(rid)
    id_list = who.ids.tolist()
    enc = [respondent_key(sid, i) for i in id_list]
    spent, new = lock_respondents(conn, enc)
    # which ids are respondents, and the reports they stored before for these questions:
    # read after their rows are locked (PostgreSQL), so that a report a concurrent
    # transaction committed for one of them is seen, not stored twice; a bad id rolls
    # the locking rows back with the rest
    params = {"sid": sid, "ids": json_listed(id_list), "qids": json_listed(qids[j] for j in used)}
    have: set[int] = set()
    done: dict[tuple[int, int], int] = {}
    for i, qid, v in conn.execute(respondents_and_reports(conn), params):
        if i is None:  # (PostgreSQL: an id that is no respondent)
            continue
        have.add(int(i))
        if qid is not None:
            done[(int(i), qpos.get(qid, -1))] = int(v)
    if len(have) != len(id_list):
        bad = next(i for i in id_list if i not in have)
        raise DataError(f"`respondent_id` {bad} is not a respondent of survey {sid!r}.")
    decision = decide(Items(survey, names, rid, qix, rep, who, spent, done, before))
    status = decision.status
    stored_l = np.flatnonzero(status == 0).tolist()
    if not stored_l:
        # nothing to store: roll back the ledger rows inserted only to be locked
        raise Rollback([Submitted(STATUSES[x]) for x in status.tolist()])
    stored_rows = [(int(rid[i]), qids[qix[i]], int(rep[i])) for i in stored_l]
    paid = np.zeros(who.ids.size, dtype=np.bool_)
    # (an unbounded question's report is charged nothing: its respondent's total unchanged)
    paid[who.ipos[[i for i in stored_l if not survey.questions[qix[i]].unbounded]]] = True
    # (no ledger_charged rows: a stored report is the charge's record, charged_keys)
    # add the charges to the question rows (not locked: other writers add theirs)
    added = []
    for j, rec in decision.records.items():
        if rec is not None and rec is not before[j]:
            prior = 0 if before[j] is None else _charges(before[j])
            added.append(dataclasses.replace(rec, charges=rec.charges - prior))
    if postgres:  # the reports, the totals and the question rows: one statement
        params = ledger_write_params(enc, paid, decision.spent[paid], new, added)
        conn.execute(write_all(conn), {**params, **report_params(sid, stored_rows)})
    else:
        write_reports(conn, sid, stored_rows)
        write_spent(conn, enc, paid, decision.spent[paid], new)
        write_records(conn, added, add=True)
    # one (frozen, so shareable) outcome per distinct (status, charge): a batch has a
    # few, and building 10,000 dataclasses cost a third of the batch
    made: dict[tuple[int, float], Submitted] = {}
    out = []
    for key in zip(status.tolist(), decision.charged.tolist(), strict=True):
        hit = made.get(key)
        if hit is None:
            hit = made[key] = Submitted(STATUSES[key[0]], float(key[1]))
        out.append(hit)
    return out


def _charges(record: QuestionRecord | None) -> int:
    return 0 if record is None else int(record.charges)
