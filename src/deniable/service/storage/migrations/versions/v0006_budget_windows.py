"""Budgets per period: the window store's tables (``window_spec``: every window spec
enforced; ``window_device``: a row per device, locked by its charges; ``window_charge``:
every charge with its time).

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"


def upgrade() -> None:
    op.create_table(
        "window_spec",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("spec", sa.Text, nullable=False),
        sa.Column("recorded_at", sa.Float(53), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_window_spec"),
        sa.UniqueConstraint("spec", name="uq_window_spec_spec"),
    )
    op.create_table(
        "window_device",
        sa.Column("key", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_window_device"),
    )
    op.create_table(
        "window_charge",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer, "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("at", sa.Float(53), nullable=False),
        sa.Column("epsilon", sa.Float(53), nullable=False),
        sa.Column("delta", sa.Float(53), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_window_charge"),
    )
    op.create_index("ix_window_charge_key_at", "window_charge", ["key", "at"])


def downgrade() -> None:
    op.drop_index("ix_window_charge_key_at", table_name="window_charge")
    op.drop_table("window_charge")
    op.drop_table("window_device")
    op.drop_table("window_spec")
