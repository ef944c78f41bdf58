"""Moved: engines and migrations are :mod:`deniable.service.storage.db` (issue 15).  This
module re-exports its public names so that ``from deniable.service.db import make_engine``
keeps working (docs/changes.md)."""

from __future__ import annotations

from deniable.service.storage import db as _db
from deniable.service.storage.db import *  # noqa: F403  (the names of _db.__all__)

__all__ = list(_db.__all__)
