"""The initial schema: surveys, invitations, respondents, reports, the ledger and memo stores.

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None

Ident = sa.String(64)
Digest = sa.String(64)
Time = sa.Float(53)


def upgrade() -> None:
    op.create_table(
        "surveys",
        sa.Column("id", Ident, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("definition", sa.JSON, nullable=False),
        sa.Column("loaded_at", Time, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_surveys"),
    )
    op.create_table(
        "respondents",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("survey_id", Ident, nullable=False),
        sa.Column("token_hash", Digest, nullable=False),
        sa.Column("created_at", Time, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_respondents"),
        sa.ForeignKeyConstraint(
            ["survey_id"], ["surveys.id"], name="fk_respondents_survey_id_surveys"
        ),
        sa.UniqueConstraint("token_hash", name="uq_respondents_token_hash"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "invitations",
        sa.Column("token_hash", Digest, nullable=False),
        sa.Column("survey_id", Ident, nullable=False),
        sa.Column("respondent_id", sa.Integer, nullable=True),
        sa.Column("created_at", Time, nullable=False),
        sa.Column("redeemed_at", Time, nullable=True),
        sa.PrimaryKeyConstraint("token_hash", name="pk_invitations"),
        sa.ForeignKeyConstraint(
            ["survey_id"], ["surveys.id"], name="fk_invitations_survey_id_surveys"
        ),
        sa.ForeignKeyConstraint(
            ["respondent_id"], ["respondents.id"], name="fk_invitations_respondent_id_respondents"
        ),
    )
    op.create_table(
        "reports",
        sa.Column("survey_id", Ident, nullable=False),
        sa.Column("respondent_id", sa.Integer, nullable=False),
        sa.Column("question_id", Ident, nullable=False),
        sa.Column("report", sa.Integer, nullable=False),
        sa.Column("received_at", Time, nullable=False),
        sa.PrimaryKeyConstraint("survey_id", "respondent_id", "question_id", name="pk_reports"),
        sa.ForeignKeyConstraint(["survey_id"], ["surveys.id"], name="fk_reports_survey_id_surveys"),
        sa.ForeignKeyConstraint(
            ["respondent_id"], ["respondents.id"], name="fk_reports_respondent_id_respondents"
        ),
    )
    op.create_table(
        "ledger_respondent",
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("spent", sa.Float(53), nullable=False),
        sa.Column("first", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_ledger_respondent"),
    )
    op.create_index("ix_ledger_respondent_first", "ledger_respondent", ["first"])
    op.create_table(
        "ledger_charged",
        sa.Column("question", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("question", "key", name="pk_ledger_charged"),
    )
    op.create_table(
        "ledger_question",
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("epsilon", sa.Float(53), nullable=True),
        sa.Column("memoized", sa.Boolean, nullable=False),
        sa.Column("charges", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_ledger_question"),
    )
    op.create_table(
        "memo",
        sa.Column("question", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("report", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("question", "key", name="pk_memo"),
    )
    op.create_table(
        "memo_question",
        sa.Column("name", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_memo_question"),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(sa.schema.CreateSequence(sa.Sequence("ledger_spend_seq")))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(sa.schema.DropSequence(sa.Sequence("ledger_spend_seq")))
    for table in (
        "memo_question",
        "memo",
        "ledger_question",
        "ledger_charged",
        "ledger_respondent",
        "reports",
        "invitations",
        "respondents",
        "surveys",
    ):
        op.drop_table(table)
