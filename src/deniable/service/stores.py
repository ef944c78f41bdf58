"""Moved: the SQL ledger and memo stores are in :mod:`deniable.service.storage`
(:class:`~deniable.service.storage.SqlLedgerStore`,
:class:`~deniable.service.storage.SqlMemoStore`; issue 15).  This module re-exports them
and the key encoding so that ``from deniable.service.stores import SqlMemoStore`` keeps
working (docs/changes.md)."""

from __future__ import annotations

from deniable.service.storage import SqlLedgerStore, SqlMemoStore, decode_key, encode_key

__all__ = ["SqlLedgerStore", "SqlMemoStore", "decode_key", "encode_key"]
