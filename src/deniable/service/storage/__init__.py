"""storage"""

from __future__ import annotations

from deniable.service.storage._sql import decode_key, encode_key
from deniable.service.storage.ledger import SqlLedgerStore
from deniable.service.storage.memo import SqlMemoStore
from deniable.service.storage.store import (
    MAX_INVITATIONS,
    STATUSES,
    ServiceStore,
    Submitted,
    SurveyClosedError,
    hash_token,
    ledger_key,
    ledger_question_name,
)

__all__ = [
    "MAX_INVITATIONS",
    "STATUSES",
    "ServiceStore",
    "SqlLedgerStore",
    "SqlMemoStore",
    "Submitted",
    "SurveyClosedError",
    "decode_key",
    "encode_key",
    "hash_token",
    "ledger_key",
    "ledger_question_name",
]
