"""The service's database: :class:`ServiceStore` (surveys, respondents, reports and
budgets), and the library's ledger, memo and window protocols on SQL
(:class:`SqlLedgerStore`, :class:`SqlMemoStore`, :class:`SqlWindowStore`), on SQLite and
PostgreSQL.

=================  ======================================================================
module             what
=================  ======================================================================
``db``             engines (SQLite set up for a server, PostgreSQL), transactions,
                   migrations (Alembic, ``migrations/``)
``tables``         the tables (SQLAlchemy Core)
``_sql``           keys as text, list parameters, statements per dialect, retried
                   transactions
``ledger_steps``   the steps of a budget spend (unit, records, locks, writes)
``ledger``         :class:`SqlLedgerStore`
``memo``           :class:`SqlMemoStore`
``windows``        :class:`SqlWindowStore` (budgets per period)
``surveys``        the base of :class:`ServiceStore`: engine and surveys
``respondents``    invitations, sessions, tokens
``submissions``    reports and their spends (``_plan``: the pure decisions)
``exports``        tallies, timelines, budgets spent, exports, arrival counts
``groups``         the randomization groups of two-group questions (drawn by the server)
``store``          :class:`ServiceStore`, all of the above
``lifecycle``      close, reopen, the summaries of every survey
=================  ======================================================================

Every statement is SQLAlchemy Core; the package imports nothing of HTTP (no FastAPI, no
Starlette) and nothing else of the service (import contracts in ``pyproject.toml``).
"""

from __future__ import annotations

from deniable.service.storage._plan import STATUSES
from deniable.service.storage._sql import decode_key, encode_key
from deniable.service.storage.ledger import SqlLedgerStore
from deniable.service.storage.memo import SqlMemoStore
from deniable.service.storage.respondents import MAX_INVITATIONS, hash_token
from deniable.service.storage.store import ServiceStore
from deniable.service.storage.streams import SqlStreamStore
from deniable.service.storage.submissions import (
    Submitted,
    WriterBusy,
    ledger_key,
    ledger_question_name,
)
from deniable.service.storage.surveys import SurveyClosedError
from deniable.service.storage.windows import SqlWindowStore

__all__ = [
    "MAX_INVITATIONS",
    "STATUSES",
    "ServiceStore",
    "SqlLedgerStore",
    "SqlMemoStore",
    "SqlStreamStore",
    "SqlWindowStore",
    "Submitted",
    "SurveyClosedError",
    "WriterBusy",
    "decode_key",
    "encode_key",
    "hash_token",
    "ledger_key",
    "ledger_question_name",
]
