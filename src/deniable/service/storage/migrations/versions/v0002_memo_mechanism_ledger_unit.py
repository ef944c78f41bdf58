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
from sqlalchemy.dialects import postgresql, sqlite

from deniable.mechanisms import upgraded_question

revision = "0002"
down_revision = "0001"


# the tables as this revision sees them (a migration never imports the live models)
_memo = sa.table(
    "memo",
    sa.column("question", sa.Text),
    sa.column("key", sa.Text),
    sa.column("report", sa.BigInteger),
    sa.column("mechanism", sa.Text),
)
_ledger_respondent = sa.table("ledger_respondent", sa.column("key", sa.Text))
_ledger_charged = sa.table("ledger_charged", sa.column("key", sa.Text))
_ledger_meta = sa.table("ledger_meta", sa.column("name", sa.Text), sa.column("value", sa.Text))


def _moves(dialect: str) -> tuple[sa.Insert, sa.Delete]:
    """Copy an old-layout question's rows to the new layout (``:old`` to ``:new``, with the
    mechanism ``:mech``; rows there already win), then delete the old rows that were
    copied."""
    insert = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(_memo)
    old, new, mech = (sa.bindparam(name, type_=sa.Text) for name in ("old", "new", "mech"))
    copy = insert.from_select(
        ["question", "key", "report", "mechanism"],
        sa.select(new, _memo.c.key, _memo.c.report, mech).where(_memo.c.question == old),
    ).on_conflict_do_nothing()
    moved = _memo.alias("n")
    done = sa.exists().where(
        moved.c.question == new,
        moved.c.key == _memo.c.key,
        moved.c.report == _memo.c.report,
        moved.c.mechanism == mech,
    )
    return copy, sa.delete(_memo).where(_memo.c.question == old, done)


def upgrade() -> None:
    conn = op.get_bind()
    op.add_column("memo", sa.Column("mechanism", sa.Text, nullable=True))
    old = conn.execute(
        sa.select(_memo.c.question).where(_memo.c.question.like("rappor/rappor{%")).distinct()
    ).scalars()
    copy, delete = _moves(conn.dialect.name)
    for question in sorted(old):
        up = upgraded_question(question)
        if up is None:
            continue
        names = {"old": question, "new": up[0], "mech": up[1]}
        conn.execute(copy, names)
        conn.execute(delete, names)
    op.create_table(
        "ledger_meta",
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_ledger_meta"),
    )
    count = sa.select(sa.func.count())
    spent = conn.execute(count.select_from(_ledger_respondent)).scalar()
    charged = conn.execute(count.select_from(_ledger_charged)).scalar()
    if spent and not charged:  # every total is the survey service's: pure epsilon
        conn.execute(sa.insert(_ledger_meta).values(name="unit", value="epsilon"))


def downgrade() -> None:
    op.drop_table("ledger_meta")
    with op.batch_alter_table("memo") as batch:
        batch.drop_column("mechanism")
