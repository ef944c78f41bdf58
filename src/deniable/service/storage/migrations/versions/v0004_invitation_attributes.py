"""Invitations may carry non-sensitive design attributes (stratum, PSU, design weight,
raking variables): ``invitations.attributes``, a JSON object or NULL.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    # what the analyst already knows of the invited person (storage/attributes.py); NULL: none
    op.add_column("invitations", sa.Column("attributes", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("invitations") as batch:
        batch.drop_column("attributes")
