"""Privacy across configurations: each memo report carries its mechanism's key, and the
ledger store records the unit of its totals.

* ``memo.mechanism`` (text, NULL for the rows stored before): the key of the mechanism that
  drew the report.  A NULL row is refused against every mechanism until adopted
  (``SqlMemoStore.adopt``), except RAPPOR's: its old layout named every parameter of the
  permanent state in the question, so those rows move to the new layout with their
  mechanism (``deniable.mechanisms._memo_legacy.upgraded_question``).  Where a client held
  two old-layout rows for one new row (a change of ``p`` or ``q`` before this revision had
  drawn a second PRR), the first in question order is kept and the other stays where it was.
* ``ledger_meta(name, value)``, the row ``unit``: ``epsilon`` where every total was written
  by the survey service (no ``ledger_charged`` row: the service has always priced in pure
  epsilon); none where a ``BudgetLedger`` also spent (its composition was not recorded:
  refused until ``SqlLedgerStore.adopt_unit``) or nothing was spent.

Downgrading drops both; RAPPOR's rows stay in the new layout.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from deniable.mechanisms._memo_legacy import upgraded_question

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    op.add_column("memo", sa.Column("mechanism", sa.Text, nullable=True))
    old = conn.execute(
        sa.text("SELECT DISTINCT question FROM memo WHERE question LIKE 'rappor/rappor{%'")
    ).scalars()
    for question in sorted(old):
        up = upgraded_question(question)
        if up is None:
            continue
        names = {"old": question, "new": up[0], "mech": up[1]}
        conn.execute(
            sa.text(
                "INSERT INTO memo (question, key, report, mechanism) "
                "SELECT :new, key, report, :mech FROM memo WHERE question = :old "
                "ON CONFLICT DO NOTHING"
            ),
            names,
        )
        conn.execute(
            sa.text(
                "DELETE FROM memo WHERE question = :old AND EXISTS (SELECT 1 FROM memo AS n "
                "WHERE n.question = :new AND n.key = memo.key AND n.report = memo.report "
                "AND n.mechanism = :mech)"
            ),
            names,
        )
    op.create_table(
        "ledger_meta",
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_ledger_meta"),
    )
    spent = conn.execute(sa.text("SELECT count(*) FROM ledger_respondent")).scalar()
    charged = conn.execute(sa.text("SELECT count(*) FROM ledger_charged")).scalar()
    if spent and not charged:  # every total is the survey service's: pure epsilon
        conn.execute(sa.text("INSERT INTO ledger_meta (name, value) VALUES ('unit', 'epsilon')"))


def downgrade() -> None:
    op.drop_table("ledger_meta")
    with op.batch_alter_table("memo") as batch:
        batch.drop_column("mechanism")
