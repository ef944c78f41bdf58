"""Telemetry streams: the tables ``stream_spec`` (each stream's spec, fixed once stored)
and ``stream_device`` (each stream's devices, by the SHA-256 of their token).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"


def upgrade() -> None:
    op.create_table(
        "stream_spec",
        sa.Column("id", sa.Text, nullable=False),
        sa.Column("spec", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float(53), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_stream_spec"),
    )
    op.create_table(
        "stream_device",
        sa.Column("token_hash", sa.Text, nullable=False),
        sa.Column("stream", sa.Text, nullable=False),
        sa.Column("device", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float(53), nullable=False),
        sa.PrimaryKeyConstraint("token_hash", name="pk_stream_device"),
        sa.UniqueConstraint("stream", "device", name="uq_stream_device_stream"),
    )


def downgrade() -> None:
    op.drop_table("stream_device")
    op.drop_table("stream_spec")
