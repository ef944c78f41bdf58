"""The service's storage facade: :class:`ServiceStore`, the one object the HTTP layer calls.

It keeps surveys, invitations, respondents and their randomized reports, and each
respondent's budget in the SQL ledger store (:class:`~deniable.service.stores.
SqlLedgerStore`, same database).  A respondent's key in the ledger is
``f"{survey_id}:{respondent_id}"``, a question's name ``f"{survey_id}/{question_id}"``.

**Atomicity.**  :meth:`ServiceStore.submit` and :meth:`ServiceStore.submit_batch` store
the reports and spend the budget in **one transaction** (``BEGIN IMMEDIATE`` on SQLite;
the question and respondent rows of the ledger locked in key order on PostgreSQL): a crash
before the commit leaves neither, and a report acknowledged after the commit is durable.
A respondent stores one report per question: the same report again is a ``"duplicate"``
(nothing spent again), a different one a ``"conflict"`` (nothing changes).  Prices and
admission come from the library's pricing (:class:`~deniable.accounting.SpendRequest`),
so the spends round upward exactly as :class:`~deniable.accounting.BudgetLedger` rounds
them.

**Tokens** (respondents' and invitations') are ``secrets.token_urlsafe(32)``; only their
SHA-256 is stored, and they are looked up by it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from deniable.accounting import SpendRequest
from deniable.accounting._pricing import History, QuestionRecord, remaining_budget, spend_limit
from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError, PrivacyError
from deniable.service.db import make_engine, migrate, read_tx
from deniable.service.models import (
    invitations,
    ledger_respondent,
    reports,
    respondents,
    surveys,
)
from deniable.service.stores import (
    SqlLedgerStore,
    SqlMemoStore,
    ensure_question,
    ledger_history,
    lock_respondents,
    many,
    next_first,
    retrying,
)
from deniable.survey import Survey

__all__ = [
    "STATUSES",
    "ServiceStore",
    "Submitted",
    "SurveyClosedError",
    "hash_token",
    "ledger_key",
    "ledger_question_name",
]

#: The outcomes of a submission.
STATUSES = ("stored", "duplicate", "conflict", "over_cap", "closed")
#: The most invitations one call creates.
MAX_INVITATIONS = 100_000
#: Seconds per timeline bucket.
BUCKETS = {"hour": 3600, "day": 86400}

_CHUNK = 5000


class SurveyClosedError(DataError):
    """The survey does not take answers now (before it opens or after it closes)."""


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


def hash_token(token: str) -> str:
    """The SHA-256 of a token, in hex (what the database keeps)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def ledger_key(survey_id: str, respondent_id: int) -> str:
    """A respondent's key in the ledger store."""
    return f"{survey_id}:{respondent_id}"


def ledger_question_name(survey_id: str, question_id: str) -> str:
    """A question's name in the ledger store."""
    return f"{survey_id}/{question_id}"


def _enc(survey_id: str, respondent_id: int) -> str:
    # as deniable.service.stores.encode_key encodes the string key
    return f"s{survey_id}:{respondent_id}"


def _changed(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The ids of the questions of ``old`` that ``new`` removes or changes."""
    after = {q["id"]: q for q in new["questions"]}
    return [q["id"] for q in old["questions"] if after.get(q["id"]) != q]


def _check_id(what: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ParameterTypeError(f"`{what}` must be an integer id, got {value!r}.")
    return int(value)


class ServiceStore:
    """Surveys, respondents, reports and budgets in one SQL database (see the module
    docstring).

    ``url`` is a database URL (``sqlite:///path.db``, ``postgresql://...``; see
    :func:`~deniable.service.db.database_url`) or an engine.  Creating the store opens no
    connection; :meth:`migrate` creates or upgrades the schema.  Thread-safe; several
    processes may share one database.
    """

    def __init__(self, url: str | Engine) -> None:
        self._engine = make_engine(url) if isinstance(url, str) else url
        self.ledger = SqlLedgerStore(self._engine)
        self.memo = SqlMemoStore(self._engine)
        self._cache: dict[str, tuple[int, str, Survey]] = {}
        self._lock = threading.Lock()

    @property
    def engine(self) -> Engine:
        """The engine (a connection pool)."""
        return self._engine

    def __repr__(self) -> str:
        return f"ServiceStore({self._engine.url.render_as_string(hide_password=True)!r})"

    def close(self) -> None:
        """Close the pooled connections."""
        self._engine.dispose()

    def migrate(self) -> None:
        """Create or upgrade the schema (``alembic upgrade head``); idempotent."""
        migrate(self._engine)

    # ------------------------------------------------------------------ surveys

    def load_survey(self, survey: Survey) -> None:
        """Insert ``survey``, or replace the stored definition of the same id.

        Loading the same definition again changes nothing.  A new definition must carry a
        higher ``version``, and may not change or remove a question that already has
        reports (a :class:`~deniable.exceptions.DataError` names them): the stored reports
        of a question always come from the design stored with it.
        """
        if not isinstance(survey, Survey):
            raise ParameterTypeError(f"`survey` must be a Survey, got {type(survey).__name__}.")
        definition = survey.to_dict()

        def work(conn: Connection) -> None:
            row = conn.execute(
                sa.select(surveys.c.version, surveys.c.definition).where(surveys.c.id == survey.id)
            ).first()
            now = time.time()
            if row is None:
                conn.execute(
                    sa.insert(surveys).values(
                        id=survey.id, version=survey.version, definition=definition, loaded_at=now
                    )
                )
                return
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
            conn.execute(
                sa.update(surveys)
                .where(surveys.c.id == survey.id)
                .values(version=survey.version, definition=definition, loaded_at=now)
            )

        retrying(self._engine, work)

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
        row = conn.execute(
            sa.select(surveys.c.version, surveys.c.loaded_at).where(surveys.c.id == survey_id)
        ).first()
        if row is None:
            raise DataError(f"there is no survey {survey_id!r}.")
        stamp = (int(row.version), repr(row.loaded_at))
        with self._lock:
            hit = self._cache.get(survey_id)
        if hit is not None and (hit[0], hit[1]) == stamp:
            return hit[2]
        data = conn.execute(
            sa.select(surveys.c.definition).where(surveys.c.id == survey_id)
        ).scalar_one()
        survey = Survey.from_dict(data)
        with self._lock:
            self._cache[survey_id] = (stamp[0], stamp[1], survey)
        return survey

    # ------------------------------------------------------------------ respondents

    def create_invitations(self, survey_id: str, count: int) -> list[str]:
        """``count`` new single-use invitation tokens for the survey (only their hashes are
        stored: this is the one time they are seen)."""
        if isinstance(count, bool) or not isinstance(count, int | np.integer):
            raise ParameterTypeError(f"`count` must be a whole number, got {count!r}.")
        if not 1 <= count <= MAX_INVITATIONS:
            raise ParameterError(
                f"`count` must be in [1, {MAX_INVITATIONS}] (invitations per call), got {count}."
            )
        tokens = [secrets.token_urlsafe(32) for _ in range(int(count))]

        def work(conn: Connection) -> None:
            self._survey(conn, survey_id)
            now = time.time()
            conn.execute(
                sa.insert(invitations),
                [
                    {"token_hash": hash_token(t), "survey_id": survey_id, "created_at": now}
                    for t in tokens
                ],
            )

        retrying(self._engine, work)
        return tokens

    def open_session(self, survey_id: str, invitation: str | None) -> tuple[str, int]:
        """A new respondent of an open survey: ``(token, respondent id)``.

        Anonymous surveys issue a respondent to anyone (``invitation`` is ignored);
        invitation surveys redeem ``invitation``, once: an unknown or already redeemed one
        raises :class:`~deniable.exceptions.PrivacyError`.  A closed survey raises
        :class:`SurveyClosedError`.
        """
        token = secrets.token_urlsafe(32)

        def work(conn: Connection) -> int:
            survey = self._survey(conn, survey_id)
            if not survey.is_open():
                raise SurveyClosedError(f"survey {survey_id!r} is closed: it takes no answers now.")
            now = time.time()
            if survey.respondents == "invitation":
                if not isinstance(invitation, str) or not invitation:
                    raise PrivacyError(
                        f"survey {survey_id!r} takes respondents by invitation: `invitation` "
                        "must be an invitation token, got none."
                    )
                inv = invitations.c
                digest = hash_token(invitation)
                row = conn.execute(
                    sa.select(inv.token_hash, inv.redeemed_at)
                    .where(inv.token_hash == digest, inv.survey_id == survey_id)
                    .with_for_update()
                ).first()
                if row is None or not hmac.compare_digest(row.token_hash, digest):
                    raise PrivacyError(
                        f"`invitation` is not an invitation to survey {survey_id!r}."
                    )
                if row.redeemed_at is not None:
                    raise PrivacyError("`invitation` has been used already (it is single-use).")
            rid = int(
                conn.execute(
                    sa.insert(respondents)
                    .values(survey_id=survey_id, token_hash=hash_token(token), created_at=now)
                    .returning(respondents.c.id)
                ).scalar_one()
            )
            if survey.respondents == "invitation":
                done = conn.execute(
                    sa.update(invitations)
                    .where(inv.token_hash == digest, inv.redeemed_at.is_(None))
                    .values(redeemed_at=now, respondent_id=rid)
                )
                if done.rowcount != 1:  # pragma: no cover - the row lock prevents it
                    raise PrivacyError("`invitation` has been used already (it is single-use).")
            return rid

        return token, retrying(self._engine, work)

    def respondent(self, survey_id: str, token: str) -> int | None:
        """The id of the respondent holding ``token`` in this survey (``None`` if none)."""
        if not isinstance(token, str) or not token:
            return None
        digest = hash_token(token)
        r = respondents.c
        with read_tx(self._engine) as conn:
            row = conn.execute(
                sa.select(r.id, r.token_hash).where(
                    r.token_hash == digest, r.survey_id == survey_id
                )
            ).first()
        if row is None or not hmac.compare_digest(row.token_hash, digest):
            return None
        return int(row.id)

    def create_respondent(self, survey_id: str) -> tuple[str, int]:
        """A new respondent whatever the survey's admission rule (the interviewer's paper and
        phone mode, an admin): ``(token, respondent id)``."""
        token = secrets.token_urlsafe(32)

        def work(conn: Connection) -> int:
            self._survey(conn, survey_id)
            return int(
                conn.execute(
                    sa.insert(respondents)
                    .values(
                        survey_id=survey_id, token_hash=hash_token(token), created_at=time.time()
                    )
                    .returning(respondents.c.id)
                ).scalar_one()
            )

        return token, retrying(self._engine, work)

    # ------------------------------------------------------------------ answering

    def answered(self, survey_id: str, respondent_id: int) -> dict[str, int]:
        """The reports this respondent stored: ``{question id: report}``."""
        rid = _check_id("respondent_id", respondent_id)
        r = reports.c
        with read_tx(self._engine) as conn:
            rows = conn.execute(
                sa.select(r.question_id, r.report).where(
                    r.survey_id == survey_id, r.respondent_id == rid
                )
            ).all()
            return {q: int(rep) for q, rep in rows}

    def remaining(self, survey_id: str, respondent_id: int) -> float:
        """``cap - spent`` of this respondent, never below 0, rounded down so that a question
        of exactly this epsilon is admitted."""
        rid = _check_id("respondent_id", respondent_id)
        with read_tx(self._engine) as conn:
            survey = self._survey(conn, survey_id)
            spent = ledger_history(conn, [_enc(survey_id, rid)], None, None).spent
        return float(remaining_budget(spent, survey.cap)[0])

    def submit(
        self, survey_id: str, respondent_id: int, question_id: str, report: int
    ) -> Submitted:
        """Store one report and spend its epsilon, in one transaction (see the module
        docstring for the outcomes).  A report outside the question's reports, an unknown
        question or respondent raise :class:`~deniable.exceptions.DataError` and store
        nothing."""
        return self._submit(survey_id, [(respondent_id, question_id, report)], single=True)[0]

    def submit_batch(
        self, survey_id: str, items: Sequence[tuple[int, str, int]]
    ) -> list[Submitted]:
        """Many ``(respondent id, question id, report)`` in one transaction, each with the
        outcome :meth:`submit` would give it in this order.  One invalid item raises
        :class:`~deniable.exceptions.DataError` naming it (``items[3].report``) and stores
        nothing."""
        return self._submit(survey_id, items, single=False)

    def _submit(
        self, survey_id: str, items: Sequence[tuple[int, str, int]], *, single: bool
    ) -> list[Submitted]:
        n = len(items)
        if n == 0:
            return []
        with read_tx(self._engine) as conn:
            survey = self._survey(conn, survey_id)
        qpos = {q.id: i for i, q in enumerate(survey.questions)}
        sizes = [q.spec.reports for q in survey.questions]
        rid = np.empty(n, dtype=np.int64)
        qix = np.empty(n, dtype=np.int64)
        rep = np.empty(n, dtype=np.int64)
        for i, item in enumerate(items):
            where = "" if single else f"items[{i}]."
            try:
                r, q, v = item
            except (TypeError, ValueError):
                raise DataError(
                    f"`items[{i}]` must be (respondent id, question id, report), got {item!r}."
                ) from None
            if isinstance(r, bool) or not isinstance(r, int | np.integer):
                raise DataError(f"`{where}respondent_id` must be an integer id, got {r!r}.")
            j = qpos.get(q) if isinstance(q, str) else None
            if j is None:
                known = ", ".join(map(repr, qpos))
                raise DataError(
                    f"`{where}question_id` must be a question of survey {survey_id!r} ({known}), "
                    f"got {q!r}."
                )
            k = sizes[j]
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or not 0 <= v < k:
                raise DataError(
                    f"`{where}report` must be a report of question {q!r}: an integer in "
                    f"[0, {k - 1}], got {v!r}."
                )
            rid[i], qix[i], rep[i] = r, j, v
        if not survey.is_open():
            return [Submitted("closed")] * n
        return retrying(self._engine, lambda conn: self._store(conn, survey, rid, qix, rep))

    def _store(
        self,
        conn: Connection,
        survey: Survey,
        rid: npt.NDArray[np.int64],
        qix: npt.NDArray[np.int64],
        rep: npt.NDArray[np.int64],
    ) -> list[Submitted]:
        sid = survey.id
        n = rid.size
        qpos = {q.id: i for i, q in enumerate(survey.questions)}
        ids, ipos = np.unique(rid, return_inverse=True)
        id_list = ids.tolist()
        # the respondents must exist, in this survey
        have: set[int] = set()
        r = respondents.c
        for start in range(0, len(id_list), _CHUNK):
            part = id_list[start : start + _CHUNK]
            have.update(
                conn.execute(sa.select(r.id).where(r.survey_id == sid, r.id.in_(part))).scalars()
            )
        if len(have) != len(id_list):
            bad = next(i for i in id_list if i not in have)
            raise DataError(f"`respondent_id` {bad} is not a respondent of survey {sid!r}.")
        # lock: the questions (by name), then the respondents (by key)
        used = sorted(
            set(qix.tolist()), key=lambda j: ledger_question_name(sid, survey.questions[j].id)
        )
        records: dict[int, QuestionRecord | None] = {}
        for j in used:
            records[j] = ensure_question(conn, ledger_question_name(sid, survey.questions[j].id))
        enc = [_enc(sid, i) for i in id_list]
        base = next_first(conn)
        first = np.empty(len(enc), dtype=np.int64)
        # a new respondent's ``first`` follows the order of its first item in the batch
        _, first_item = np.unique(rid, return_index=True)
        first[:] = base + first_item
        new = lock_respondents(conn, enc, first.tolist())
        spent = ledger_history(conn, enc, None, None).spent.copy()
        # the reports already stored for these respondents
        done: dict[tuple[int, int], int] = {}
        rp = reports.c
        for start in range(0, len(id_list), _CHUNK):
            part = id_list[start : start + _CHUNK]
            for i, q, v in conn.execute(
                sa.select(rp.respondent_id, rp.question_id, rp.report).where(
                    rp.survey_id == sid, rp.respondent_id.in_(part)
                )
            ).all():
                done[(int(i), qpos.get(q, -1))] = int(v)
        # passes: a respondent's k-th item is in pass k, so each pass holds a respondent
        # at most once and its items are decided in the order given
        occ = _occurrence(ipos)
        status = np.zeros(n, dtype=np.int8)  # index into STATUSES
        charged = np.zeros(n, dtype=np.float64)
        limit = spend_limit(survey.cap, 0.0)
        rid_l, qix_l, rep_l = rid.tolist(), qix.tolist(), rep.tolist()
        for p in range(int(occ.max()) + 1 if n else 0):
            in_pass = np.flatnonzero(occ == p)
            for j in used:
                sel = in_pass[qix[in_pass] == j]
                if not sel.size:
                    continue
                pend = []
                for i in sel.tolist():
                    old = done.get((rid_l[i], j))
                    if old is None:
                        pend.append(i)
                    else:
                        status[i] = 1 if old == rep_l[i] else 2
                if not pend:
                    continue
                pend_a = np.array(pend, dtype=np.int64)
                who = ipos[pend_a]
                question = survey.questions[j]
                request = SpendRequest(
                    ledger_question_name(sid, question.id),
                    question.epsilon,
                    False,
                    limit,
                    partial=True,
                )
                history = History(spent[who], np.zeros(who.size, dtype=np.bool_), records[j])
                plan = request.plan(history)
                ok = plan.write
                spent[who[ok]] = plan.new_spent
                records[j] = plan.record
                status[pend_a[~ok]] = 3
                stored = pend_a[ok]
                charged[stored] = plan.cost[ok]
                for i in stored.tolist():
                    done[(rid_l[i], j)] = rep_l[i]
        stored_idx = np.flatnonzero(status == 0)
        if not stored_idx.size:
            conn.rollback()  # drop the ledger rows inserted only to be locked
            return [Submitted(STATUSES[s]) for s in status.tolist()]
        now = time.time()
        qids = [q.id for q in survey.questions]
        stored_l = stored_idx.tolist()
        many(
            conn,
            "INSERT INTO reports (survey_id, respondent_id, question_id, report, received_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [(sid, rid_l[i], qids[qix_l[i]], rep_l[i], now) for i in stored_l],
        )
        paid = np.zeros(ids.size, dtype=np.bool_)
        paid[ipos[stored_idx]] = True
        payers = np.flatnonzero(paid).tolist()
        many(
            conn,
            "UPDATE ledger_respondent SET spent = ? WHERE key = ?",
            list(zip(spent[paid].tolist(), [enc[x] for x in payers], strict=True)),
        )
        unpaid = sorted(new.difference(enc[x] for x in payers))
        many(conn, "DELETE FROM ledger_respondent WHERE key = ?", [(k,) for k in unpaid])
        names = {j: ledger_question_name(sid, qids[j]) for j in used}
        ipos_l = ipos.tolist()
        many(
            conn,
            "INSERT INTO ledger_charged (question, key) VALUES (?, ?)",
            [(names[qix_l[i]], enc[ipos_l[i]]) for i in stored_l],
        )
        many(
            conn,
            "UPDATE ledger_question SET epsilon = ?, memoized = ?, charges = ? WHERE name = ?",
            [
                (rec.epsilon, rec.memoized, rec.charges, names[j])
                for j in used
                if (rec := records[j]) is not None
            ],
        )
        return [
            Submitted(STATUSES[s], float(c))
            for s, c in zip(status.tolist(), charged.tolist(), strict=True)
        ]

    # ------------------------------------------------------------------ analysis

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
        key = sa.literal("s") + r.survey_id + sa.literal(":") + sa.cast(r.id, sa.Text)
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


def _occurrence(groups: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """For each position, how many earlier positions have the same group (0, 1, ...)."""
    n = groups.size
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    start = np.flatnonzero(np.append(True, g[1:] != g[:-1]))
    run = np.repeat(start, np.diff(np.append(start, n)))
    out = np.empty(n, dtype=np.int64)
    out[order] = np.arange(n) - run
    return out
