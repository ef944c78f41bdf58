"""Respondents and invitations: :class:`RespondentStore`, the part of
:class:`~deniable.service.storage.ServiceStore` that issues invitations, opens sessions
(a new respondent, or an invitation redeemed once) and finds a token's respondent.

**Tokens** (respondents' and invitations') are ``secrets.token_urlsafe(32)``; only their
SHA-256 is stored, and they are looked up by it (:meth:`RespondentStore.respondent_ids`:
every token of a batch in one query).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from deniable.exceptions import ParameterError, ParameterTypeError, PrivacyError
from deniable.service.storage._sql import listed, member, per_dialect, retrying
from deniable.service.storage.attributes import check_attributes
from deniable.service.storage.db import is_postgres, read_tx
from deniable.service.storage.surveys import SurveyClosedError, SurveyStore
from deniable.service.storage.tables import invitations, respondents

__all__ = ["MAX_INVITATIONS", "RespondentStore", "hash_token"]

#: The most invitations one call creates.
MAX_INVITATIONS = 100_000


def hash_token(token: str) -> str:
    """The SHA-256 of a token, in hex (what the database keeps)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@per_dialect
def _token_ids(postgres: bool) -> Any:
    """The respondents of survey ``sid`` whose token hashes are in the list ``digests``."""
    r = respondents.c
    return sa.select(r.token_hash, r.id).where(
        r.survey_id == sa.bindparam("sid"), member(r.token_hash, "digests", postgres)
    )


def _same_names(conn: Connection, survey_id: str, first: Mapping[str, Any]) -> None:
    """Refuse attributes named otherwise than those of the survey's stored invitations (the
    dashboard's design needs every respondent's same attributes)."""
    inv = invitations.c
    stored = conn.execute(
        sa.select(inv.attributes)
        .where(inv.survey_id == survey_id, inv.attributes.isnot(None))
        .limit(1)
    ).scalar()
    if stored and sorted(stored) != sorted(first):
        raise ParameterError(
            f"`attributes` must name the attributes of survey {survey_id!r}'s invitations "
            f"({', '.join(sorted(stored))}), got {', '.join(sorted(first))}."
        )


class RespondentStore(SurveyStore):
    """Invitations, sessions and the respondents of tokens (see the module docstring)."""

    def create_invitations(
        self,
        survey_id: str,
        count: int,
        *,
        before_commit: Callable[[list[str]], object] | None = None,
        attributes: Sequence[Mapping[str, Any]] | None = None,
        variables: Sequence[str] = (),
    ) -> list[str]:
        """``count`` new single-use invitation tokens for the survey (only their hashes are
        stored: this is the one time they are seen).

        ``attributes``: one mapping of non-sensitive design attributes per invitation, in
        the order of the tokens returned (stratum, psu, weight and the raking variables
        declared in ``variables``; :func:`~deniable.service.storage.attributes.check_attributes`
        has the rules).  They are checked before anything is written, and must name the
        same attributes as the survey's invitations stored with attributes before.

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
        checked: list[Any] = [None] * len(tokens)

        def work(conn: Connection) -> None:
            survey = self._survey(conn, survey_id)
            if attributes is not None:
                reserved = [q.id for q in survey.questions]
                checked[:] = check_attributes(attributes, int(count), variables=variables,
                                              reserved=reserved)  # fmt: skip
                _same_names(conn, survey_id, checked[0])
            now = time.time()
            conn.execute(
                sa.insert(invitations),
                [
                    {"token_hash": hash_token(t), "survey_id": survey_id, "created_at": now,
                     "attributes": a}
                    for t, a in zip(tokens, checked, strict=True)
                ],
            )  # fmt: skip
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
        if not wanted:
            return [None] * len(digests)
        with read_tx(self._engine) as conn:
            params = {"sid": survey_id, "digests": listed(is_postgres(conn), wanted)}
            found: dict[str, int] = dict(conn.execute(_token_ids(conn), params).all())
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
