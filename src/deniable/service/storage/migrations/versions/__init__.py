"""Alembic revisions, oldest first (``v0001_initial``: every table)."""
