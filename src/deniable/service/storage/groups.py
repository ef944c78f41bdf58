"""Randomization groups of two-group questions: :class:`GroupStore`, the part of
:class:`~deniable.service.storage.ServiceStore` that draws each respondent's group (1 or
2) for each two-group question, keeps it (the ``groups`` table) and says which group a
report must carry.

The server draws the group, never the browser: when a respondent first reads a two-group
question (:meth:`GroupStore.assign_groups`), with the process's CSPRNG
(:mod:`deniable.randomness`, one 64-bit word per draw) and the design's ``group_share``
(the probability of group 1).  A draw is stored once per (survey, respondent, question):
concurrent first reads insert with ``ON CONFLICT DO NOTHING`` and read back the one that
won, so a respondent never sees two groups.  The browser randomizes the answer within the
group it is told, and its report ``2 (group - 1) + answer`` must carry that group
(:func:`check_groups`, inside the transaction that would store it): a report of the
other group, or of a question whose group was not drawn, is refused and nothing stored.

Two-group questions are outside the survey's cap (``unbounded: true``): their reports are
stored without a charge in the ledger (and the ledger's readers leave them out:
:func:`~deniable.service.storage.ledger_steps.unbounded_questions`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from deniable.exceptions import DataError, ParameterTypeError
from deniable.randomness import RandomSource, bernoulli, resolve_rng
from deniable.service.storage._sql import Ints, dialect_insert, retrying
from deniable.service.storage.db import read_tx
from deniable.service.storage.surveys import SurveyStore
from deniable.service.storage.tables import groups, respondents
from deniable.survey import Survey

__all__ = ["GroupStore", "check_groups", "group_error", "group_mismatch", "group_of_report"]

_g = groups.c


def group_of_report(report: int) -> int:
    """The group a two-group report carries: ``report = 2 (group - 1) + answer``."""
    return 1 + int(report) // 2


def group_error(field: str, question_id: str, group: int | None, report: int) -> str:
    """Why a report of a two-group question is refused: no group drawn, or another group."""
    if group is None:
        return (
            f"`{field}`: question {question_id!r} is a two-group question and no group has "
            "been drawn for this respondent: read the survey first (GET) and randomize within "
            "the group it gives; nothing was stored"
        )
    allowed = f"{2 * (group - 1)} or {2 * (group - 1) + 1}"
    return (
        f"`{field}` must carry this respondent's group {group} of two-group question "
        f"{question_id!r} (report = 2 (group - 1) + answer: {allowed}), got group "
        f"{group_of_report(report)} (report {report}); nothing was stored"
    )


def check_groups(
    conn: Connection, survey: Survey, rid: Ints, qix: Ints, rep: Ints, *, single: bool
) -> None:
    """Inside the transaction that stores them: every report of a two-group question must
    carry the group drawn for its respondent, else a DataError naming the item (``report``,
    or ``items[i].report``) and nothing is stored."""
    two = [j for j, q in enumerate(survey.questions) if q.two_group]
    sel = np.flatnonzero(np.isin(qix, two)) if two else np.zeros(0, dtype=np.int64)
    if not sel.size:
        return
    qids = [survey.questions[int(qix[i])].id for i in sel.tolist()]
    rows = conn.execute(
        sa.select(_g.respondent_id, _g.question_id, _g.grp).where(
            _g.survey_id == survey.id,
            _g.respondent_id.in_(sorted({int(rid[i]) for i in sel.tolist()})),
            _g.question_id.in_(sorted(set(qids))),
        )
    ).all()
    found = {(int(r), q): int(g) for r, q, g in rows}
    for i, qid in zip(sel.tolist(), qids, strict=True):
        group = found.get((int(rid[i]), qid))
        if group is None or group_of_report(int(rep[i])) != group:
            # (a lone item, as the service's group commit writes a lone request: `report`)
            field = "report" if single or rid.size == 1 else f"items[{i}].report"
            raise DataError(group_error(field, qid, group, int(rep[i])))


def group_mismatch(
    survey: Survey, items: Iterable[tuple[str, int]], assigned: Sequence[int | None]
) -> int | None:
    """The position of the first item ``(question id, report)`` of a two-group question
    whose report does not carry the respondent's ``assigned`` group (``None``: none drawn,
    so none may be claimed), or ``None`` when every one does."""
    two = {q.id for q in survey.questions if q.two_group}
    for i, ((qid, report), group) in enumerate(zip(items, assigned, strict=True)):
        if qid in two and (group is None or group_of_report(report) != group):
            return i
    return None


class GroupStore(SurveyStore):
    """Each respondent's randomization group per two-group question (see the module)."""

    def assign_groups(
        self,
        survey_id: str,
        respondent_id: int,
        question_ids: Iterable[str] | None = None,
        *,
        rng: RandomSource | None = None,
    ) -> dict[str, int]:
        """The respondent's group of each two-group question (of ``question_ids``, default
        all), drawn now for those that have none (group 1 with the design's
        ``group_share``; ``rng``: the CSPRNG unless a test gives a seeded source).  An
        unknown respondent of the survey raises :class:`~deniable.exceptions.DataError`."""
        if isinstance(respondent_id, bool) or not isinstance(respondent_id, int):
            raise ParameterTypeError(
                f"`respondent_id` must be an integer id, got {respondent_id!r}."
            )
        wanted = None if question_ids is None else set(question_ids)
        source = resolve_rng(rng)

        def work(conn: Connection) -> dict[str, int]:
            survey = self._survey(conn, survey_id)  # the current version (its stamp read)
            two = [q for q in survey.questions
                   if q.two_group and (wanted is None or q.id in wanted)]  # fmt: skip
            if not two:
                return {}
            r = respondents.c
            found = conn.execute(
                sa.select(r.id).where(r.id == respondent_id, r.survey_id == survey_id)
            ).first()
            if found is None:
                raise DataError(
                    f"`respondent_id` {respondent_id} is not a respondent of survey {survey_id!r}."
                )
            have = self._groups(conn, survey_id, respondent_id)
            missing = [q for q in two if q.id not in have]
            if missing:
                now = time.time()
                rows = [
                    {"survey_id": survey_id, "respondent_id": respondent_id,
                     "question_id": q.id, "grp": 1 if bool(bernoulli(source, share, 1)[0]) else 2,
                     "assigned_at": now}
                    for q in missing
                    for share in (float(getattr(q.design, "group_share", 0.5)),)
                ]  # fmt: skip
                conn.execute(dialect_insert(conn, groups).values(rows).on_conflict_do_nothing())
                have = self._groups(conn, survey_id, respondent_id)
            return {q.id: have[q.id] for q in two if q.id in have}

        return retrying(self._engine, work)

    def assigned_groups(self, survey_id: str, respondent_id: int) -> dict[str, int]:
        """The groups drawn for this respondent so far: ``{question id: 1 or 2}``."""
        with read_tx(self._engine) as conn:
            return self._groups(conn, survey_id, int(respondent_id))

    def groups_of(self, survey_id: str, items: Sequence[tuple[int, str]]) -> list[int | None]:
        """The group drawn for each ``(respondent id, question id)`` (``None``: none)."""
        if not items:
            return []
        rids = sorted({int(r) for r, _ in items})
        qids = sorted({q for _, q in items})
        with read_tx(self._engine) as conn:
            rows = conn.execute(
                sa.select(_g.respondent_id, _g.question_id, _g.grp).where(
                    _g.survey_id == survey_id,
                    _g.respondent_id.in_(rids),
                    _g.question_id.in_(qids),
                )
            ).all()
        found = {(int(r), q): int(g) for r, q, g in rows}
        return [found.get((int(r), q)) for r, q in items]

    @staticmethod
    def _groups(conn: Connection, survey_id: str, respondent_id: int) -> dict[str, int]:
        rows = conn.execute(
            sa.select(_g.question_id, _g.grp).where(
                _g.survey_id == survey_id, _g.respondent_id == respondent_id
            )
        ).all()
        return {q: int(g) for q, g in rows}
