"""Moved: the settings are :mod:`deniable.service.core.settings` (issue 15).  This module
re-exports :class:`Settings` so that ``from deniable.service.settings import Settings``
keeps working (docs/changes.md)."""

from __future__ import annotations

from deniable.service.core.settings import Settings

__all__ = ["Settings"]
