"""Two-group questions: each respondent's randomization group, drawn by the server
(``groups``: survey, respondent, question, group 1 or 2, when it was drawn).

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"


def upgrade() -> None:
    op.create_table(
        "groups",
        sa.Column("survey_id", sa.String(64), nullable=False),
        sa.Column("respondent_id", sa.Integer, nullable=False),
        sa.Column("question_id", sa.String(64), nullable=False),
        sa.Column("grp", sa.SmallInteger, nullable=False),
        sa.Column("assigned_at", sa.Float(53), nullable=False),
        sa.CheckConstraint("grp IN (1, 2)", name=op.f("ck_groups_grp")),
        sa.ForeignKeyConstraint(["survey_id"], ["surveys.id"], name="fk_groups_survey_id_surveys"),
        sa.ForeignKeyConstraint(
            ["respondent_id"], ["respondents.id"], name="fk_groups_respondent_id_respondents"
        ),
        sa.PrimaryKeyConstraint("survey_id", "respondent_id", "question_id", name="pk_groups"),
    )


def downgrade() -> None:
    op.drop_table("groups")
