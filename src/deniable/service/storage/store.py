"""The service's storage facade: :class:`ServiceStore`, the one object the HTTP layer calls.

It keeps surveys, invitations, respondents and their randomized reports, and each
respondent's budget in the SQL ledger store (:class:`~deniable.service.storage.ledger.
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

import dataclasses
import functools
import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection, Engine

from deniable.accounting import SpendRequest
from deniable.accounting._pricing import (
    PURE_EPSILON,
    History,
    QuestionRecord,
    admitted,
    remaining_budget,
    spend_limit,
)
from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError, PrivacyError
from deniable.service.storage.db import is_postgres, make_engine, migrate, read_tx
from deniable.service.storage.ledger import (
    Rollback,
    SqlLedgerStore,
    SqlMemoStore,
    in_list,
    ledger_history,
    listed,
    lock_respondents,
    many,
    q,
    question_records,
    require_unit,
    retrying,
    write_records,
    write_spent,
)
from deniable.service.storage.tables import (
    invitations,
    ledger_respondent,
    reports,
    respondents,
    surveys,
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
#: The largest respondent id (the column is a 32-bit integer).
MAX_ID = 2**31 - 1
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
    # as deniable.service.storage.ledger.encode_key encodes the string key
    return f"s{survey_id}:{respondent_id}"


def _changed(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The ids of the questions of ``old`` that ``new`` removes or changes."""
    after = {q["id"]: q for q in new["questions"]}
    return [q["id"] for q in old["questions"] if after.get(q["id"]) != q]


def _stamp(loaded_at: Any, closed_at: Any) -> str:
    """What says that a stored survey changed: its load time and its closing by the
    operator (with the version)."""
    return repr((loaded_at, closed_at))


def closed_survey(survey: Survey, closed_at: float | None) -> Survey:
    """``survey`` with the time the operator closed it (seconds since the epoch; ``None``:
    not closed) as its ``closed_at``."""
    if closed_at is None:
        return survey
    return dataclasses.replace(survey, closed_at=datetime.fromtimestamp(float(closed_at), UTC))


def _check_id(what: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ParameterTypeError(f"`{what}` must be an integer id, got {value!r}.")
    return int(value)


class ServiceStore:
    """Surveys, respondents, reports and budgets in one SQL database (see the module
    docstring).

    ``url`` is a database URL (``sqlite:///path.db``, ``postgresql://...``; see
    :func:`~deniable.service.storage.db.database_url`) or an engine.  Creating the store opens no
    connection; :meth:`migrate` creates or upgrades the schema.  Thread-safe; several
    processes may share one database.
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
                    (pg.insert if is_postgres(conn) else sqlite.insert)(surveys)
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
        key = sa.literal("s") + r.survey_id + sa.literal(":") + sa.cast(r.id, sa.Text)
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
        row = conn.execute(
            sa.select(surveys.c.version, surveys.c.loaded_at, surveys.c.closed_at).where(
                surveys.c.id == survey_id
            )
        ).first()
        if row is None:
            raise DataError(f"there is no survey {survey_id!r}.")
        stamp = (int(row.version), _stamp(row.loaded_at, row.closed_at))
        with self._lock:
            hit = self._cache.get(survey_id)
        if hit is not None and (hit[0], hit[1]) == stamp:
            return hit[2]
        data = conn.execute(
            sa.select(surveys.c.definition).where(surveys.c.id == survey_id)
        ).scalar_one()
        survey = closed_survey(Survey.from_dict(data), row.closed_at)
        with self._lock:
            self._cache[survey_id] = (stamp[0], stamp[1], survey)
        return survey

    # ------------------------------------------------------------------ respondents

    def create_invitations(
        self,
        survey_id: str,
        count: int,
        *,
        before_commit: Callable[[list[str]], object] | None = None,
    ) -> list[str]:
        """``count`` new single-use invitation tokens for the survey (only their hashes are
        stored: this is the one time they are seen).

        ``before_commit(tokens)`` is called inside the transaction, after the invitations
        are inserted and before they are committed (it may be called again if the database
        asks for a retry): write the links there, and an error it raises rolls the
        invitations back, so that no committed invitation is ever without its link.
        """
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
            if before_commit is not None:
                before_commit(list(tokens))

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

    def respondent_ids(self, survey_id: str, tokens: Sequence[str]) -> list[int | None]:
        """:meth:`respondent` of many tokens at once (one query; a batch upload's tokens):
        the id of each token's respondent in this survey, ``None`` where there is none."""
        digests = [hash_token(t) if isinstance(t, str) and t else "" for t in tokens]
        wanted = sorted({d for d in digests if d})
        with read_tx(self._engine) as conn:
            found = dict(
                q(
                    conn,
                    f"SELECT token_hash, id FROM respondents WHERE survey_id = ? AND token_hash "
                    f"{in_list(conn)}",
                    [survey_id, listed(conn, wanted)],
                ).all()
            )
        return [None if not d or d not in found else int(found[d]) for d in digests]

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

    def affordable(self, survey_id: str, respondent_id: int) -> dict[str, bool]:
        """For each question, whether it may be shown to this respondent now: answered
        already (resending the report costs nothing), or a new report would be admitted
        (``admitted``: the upward-rounded total within the cap, as :meth:`submit` decides;
        a snapshot, not a reservation)."""
        rid = _check_id("respondent_id", respondent_id)
        with read_tx(self._engine) as conn:
            survey = self._survey(conn, survey_id)
            spent = ledger_history(conn, [_enc(survey_id, rid)], None, None).spent
            done = set(
                q(
                    conn,
                    "SELECT question_id FROM reports WHERE survey_id = ? AND respondent_id = ?",
                    [survey_id, rid],
                ).scalars()
            )
        eps = np.array([x.epsilon for x in survey.questions], dtype=np.float64)
        ok = admitted(np.full(eps.size, spent[0]), eps, spend_limit(survey.cap, 0.0))
        return {x.id: x.id in done or bool(a) for x, a in zip(survey.questions, ok, strict=True)}

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
        for _ in range(3):
            survey, stamp = self._survey_now(survey_id)
            rid, qix, rep = _checked(survey, items, single=single)
            if not rid.size:
                return []
            if not survey.is_open():
                return [Submitted("closed")] * rid.size
            try:
                work = functools.partial(self._store, survey, stamp, rid, qix, rep)
                return retrying(self._engine, work)
            except _Stale:  # a new version was loaded meanwhile: read it, check again
                with self._lock:
                    self._cache.pop(survey_id, None)
        raise DataError(f"survey {survey_id!r} keeps changing: try again.")  # pragma: no cover

    def _survey_now(self, survey_id: str) -> tuple[Survey, tuple[int, str]]:
        """The survey and its stamp (version, load time): the cached one (the transaction
        that stores checks that the stamp is still current), else read."""
        with self._lock:
            hit = self._cache.get(survey_id)
        if hit is None:
            with read_tx(self._engine) as conn:
                self._survey(conn, survey_id)
            with self._lock:
                hit = self._cache[survey_id]
        return hit[2], (hit[0], hit[1])

    def _store(
        self,
        survey: Survey,
        stamp: tuple[int, str],
        rid: npt.NDArray[np.int64],
        qix: npt.NDArray[np.int64],
        rep: npt.NDArray[np.int64],
        conn: Connection,
    ) -> list[Submitted]:
        sid = survey.id
        n = rid.size
        row = q(
            conn, "SELECT version, loaded_at, closed_at FROM surveys WHERE id = ?", [sid]
        ).first()
        if row is None or (int(row[0]), _stamp(row[1], row[2])) != stamp:
            raise _Stale
        # the ledger's totals are pure epsilon (the service prices so): never add them to rho
        require_unit(conn, PURE_EPSILON.unit)
        # the respondents in the order of their first item (a new one is ranked so in the
        # ledger), ``ipos``: each item's respondent in that order
        uniq, first_item, inverse = np.unique(rid, return_index=True, return_inverse=True)
        order = np.argsort(first_item, kind="stable")
        ids = uniq[order]
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size)
        ipos = rank[inverse]
        id_list = ids.tolist()
        found = q(
            conn,
            f"SELECT count(*) FROM respondents WHERE survey_id = ? AND id {in_list(conn, 'int')}",
            [sid, listed(conn, id_list)],
        ).scalar()
        if found != len(id_list):
            have = set(
                q(
                    conn,
                    f"SELECT id FROM respondents WHERE survey_id = ? AND id {in_list(conn, 'int')}",
                    [sid, listed(conn, id_list)],
                ).scalars()
            )
            bad = next(i for i in id_list if i not in have)
            raise DataError(f"`respondent_id` {bad} is not a respondent of survey {sid!r}.")
        qids = [x.id for x in survey.questions]
        qpos = {x: j for j, x in enumerate(qids)}
        used = sorted(set(qix.tolist()))
        names = {j: ledger_question_name(sid, qids[j]) for j in used}
        records = question_records(conn, [names[j] for j in used], lock=False)
        before = {j: records[names[j]] for j in used}
        enc = [_enc(sid, i) for i in id_list]
        spent, new = lock_respondents(conn, enc)
        # the reports these respondents stored before
        done: dict[tuple[int, int], int] = {}
        for i, qid, v in q(
            conn,
            "SELECT respondent_id, question_id, report FROM reports "
            f"WHERE survey_id = ? AND respondent_id {in_list(conn, 'int')}",
            [sid, listed(conn, id_list)],
        ).all():
            done[(int(i), qpos.get(qid, -1))] = int(v)
        # passes: a respondent's k-th item is in pass k, so that each pass holds a
        # respondent at most once and its items are decided in the order given
        occ = _occurrence(ipos)
        status = np.zeros(n, dtype=np.int8)  # index into STATUSES
        charged = np.zeros(n, dtype=np.float64)
        limit = spend_limit(survey.cap, 0.0)
        rid_l, qix_l, rep_l = rid.tolist(), qix.tolist(), rep.tolist()
        now_records: dict[int, QuestionRecord | None] = dict(before)
        for p in range(int(occ.max()) + 1):
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
                request = SpendRequest(names[j], question.epsilon, False, limit, partial=True)
                plan = request.plan(
                    History(spent[who], np.zeros(who.size, dtype=np.bool_), now_records[j])
                )
                ok = plan.write
                spent[who[ok]] = plan.new_spent
                now_records[j] = plan.record
                status[pend_a[~ok]] = 3
                stored = pend_a[ok]
                charged[stored] = plan.cost[ok]
                for i in stored.tolist():
                    done[(rid_l[i], j)] = rep_l[i]
        stored_l = np.flatnonzero(status == 0).tolist()
        if not stored_l:
            # nothing to store: roll back the ledger rows inserted only to be locked
            raise Rollback([Submitted(STATUSES[x]) for x in status.tolist()])
        now = time.time()
        if is_postgres(conn):  # one statement of arrays
            q(
                conn,
                "INSERT INTO reports (survey_id, respondent_id, question_id, report, "
                "received_at) SELECT ?, r, qid, v, ? FROM unnest(?::int[], ?::text[], ?::int[]) "
                "AS u(r, qid, v)",
                [
                    sid,
                    now,
                    [rid_l[i] for i in stored_l],
                    [qids[qix_l[i]] for i in stored_l],
                    [rep_l[i] for i in stored_l],
                ],
            )
        else:
            many(
                conn,
                "INSERT INTO reports (survey_id, respondent_id, question_id, report, "
                "received_at) VALUES (?, ?, ?, ?, ?)",
                [(sid, rid_l[i], qids[qix_l[i]], rep_l[i], now) for i in stored_l],
            )
        paid = np.zeros(ids.size, dtype=np.bool_)
        paid[ipos[stored_l]] = True
        write_spent(conn, enc, paid, spent[paid], new)
        # (no ledger_charged rows: a stored report is the charge's record, charged_keys)
        # add the charges to the question rows (not locked: other writers add theirs)
        added = []
        for j in used:
            rec = now_records[j]
            if rec is not None and rec is not before[j]:
                prior = 0 if before[j] is None else before[j].charges  # type: ignore[union-attr]
                added.append(dataclasses.replace(rec, charges=rec.charges - prior))
        write_records(conn, added, add=True)
        # one (frozen, so shareable) outcome per distinct (status, charge): a batch has a
        # few, and building 10,000 dataclasses cost a third of the batch
        made: dict[tuple[int, float], Submitted] = {}
        out = []
        for key in zip(status.tolist(), charged.tolist(), strict=True):
            hit = made.get(key)
            if hit is None:
                hit = made[key] = Submitted(STATUSES[key[0]], float(key[1]))
            out.append(hit)
        return out

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


class _Stale(Exception):
    """The survey changed between checking the items and storing them."""


def _checked(
    survey: Survey, items: Sequence[tuple[int, str, int]], *, single: bool
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The items as arrays (respondent id, question index, report); the first bad item is a
    DataError naming its field (``items[3].report``) and the allowed values."""
    qpos = {q.id: i for i, q in enumerate(survey.questions)}
    sizes = np.array([q.spec.reports for q in survey.questions], dtype=np.int64)
    try:  # the common case at array speed: well-formed items of plain ints and strs
        rs, qs, vs = zip(*items, strict=True) if items else ((), (), ())
        if set(map(type, rs)) <= {int} and set(map(type, vs)) <= {int}:
            rid = np.array(rs, dtype=np.int64)
            rep = np.array(vs, dtype=np.int64)
            qix = np.array([qpos.get(x, -1) if type(x) is str else -1 for x in qs], np.int64)
            ok = (rid > 0) & (rid <= MAX_ID) & (qix >= 0) & (rep >= 0) & (rep < sizes[qix])
            if ok.all():
                return rid, qix, rep
    except (TypeError, ValueError, OverflowError):
        pass
    # find the first bad item and say what is wrong with it
    for i, item in enumerate(items):
        where = "" if single else f"items[{i}]."
        try:
            r, qid, v = item
        except (TypeError, ValueError):
            raise DataError(
                f"`items[{i}]` must be (respondent id, question id, report), got {item!r}."
            ) from None
        if isinstance(r, bool) or not isinstance(r, int | np.integer) or not 0 < r <= MAX_ID:
            raise DataError(
                f"`{where}respondent_id` must be an integer id in [1, {MAX_ID}], got {r!r}."
            )
        j = qpos.get(qid) if isinstance(qid, str) else None
        if j is None:
            known = ", ".join(map(repr, qpos))
            raise DataError(
                f"`{where}question_id` must be a question of survey {survey.id!r} ({known}), "
                f"got {qid!r}."
            )
        k = int(sizes[j])
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or not 0 <= v < k:
            raise DataError(
                f"`{where}report` must be a report of question {qid!r}: an integer in "
                f"[0, {k - 1}], got {v!r}."
            )
    # numpy integers or the like, all valid
    rid = np.array([int(it[0]) for it in items], dtype=np.int64)
    qix = np.array([qpos[it[1]] for it in items], dtype=np.int64)
    rep = np.array([int(it[2]) for it in items], dtype=np.int64)
    return rid, qix, rep


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
