"""Surveys can be closed by the operator: ``surveys.closed_at`` (``deniable survey close``).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    # seconds since the epoch at which the operator closed the survey; NULL: not closed
    op.add_column("surveys", sa.Column("closed_at", sa.Float(53), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("surveys") as batch:
        batch.drop_column("closed_at")
