"""The service's tables (SQLAlchemy Core): surveys, invitations, respondents, reports, and
the tables of the SQL ledger and memo stores.

The Alembic migrations in :mod:`deniable.service.storage.migrations` create exactly these tables (a
test compares them); a change here needs a new revision.

Times are stored as seconds since the Unix epoch (a double): the same on SQLite and
PostgreSQL, cheap to write in bulk and to bucket by hour or day.
"""

from __future__ import annotations

import sqlalchemy as sa

__all__ = [
    "groups",
    "invitations",
    "ledger_charged",
    "ledger_meta",
    "ledger_question",
    "ledger_respondent",
    "memo",
    "memo_question",
    "metadata",
    "reports",
    "respondents",
    "stream_device",
    "stream_spec",
    "surveys",
    "window_charge",
    "window_device",
    "window_spec",
]

#: Constraint names fixed by convention, so that migrations can name what they change.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = sa.MetaData(naming_convention=NAMING)

#: Text ids of surveys and questions (the survey file allows 64 characters).
Ident = sa.String(64)
#: A sha256 digest in hex.
Digest = sa.String(64)
#: Seconds since the epoch.
Time = sa.Float(53)

surveys = sa.Table(
    "surveys",
    metadata,
    sa.Column("id", Ident, primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("definition", sa.JSON, nullable=False),
    sa.Column("loaded_at", Time, nullable=False),
    # when the operator closed the survey (``deniable survey close``); NULL while it is not
    sa.Column("closed_at", Time, nullable=True),
)

respondents = sa.Table(
    "respondents",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("survey_id", Ident, sa.ForeignKey("surveys.id"), nullable=False),
    sa.Column("token_hash", Digest, nullable=False, unique=True),
    sa.Column("created_at", Time, nullable=False),
    sqlite_autoincrement=True,  # never reuse an id, even of a deleted row
)

invitations = sa.Table(
    "invitations",
    metadata,
    sa.Column("token_hash", Digest, primary_key=True),
    sa.Column("survey_id", Ident, sa.ForeignKey("surveys.id"), nullable=False),
    sa.Column("respondent_id", sa.Integer, sa.ForeignKey("respondents.id"), nullable=True),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("redeemed_at", Time, nullable=True),
    # non-sensitive design attributes the analyst gave (stratum, psu, weight, raking
    # variables: storage/attributes.py); NULL for none (migration 0004)
    sa.Column("attributes", sa.JSON(none_as_null=True), nullable=True),
)

# one report per (survey, respondent, question): the primary key is the uniqueness
# guarantee; its column order serves "what has this respondent answered"
reports = sa.Table(
    "reports",
    metadata,
    sa.Column("survey_id", Ident, sa.ForeignKey("surveys.id"), primary_key=True),
    sa.Column("respondent_id", sa.Integer, sa.ForeignKey("respondents.id"), primary_key=True),
    sa.Column("question_id", Ident, primary_key=True),
    sa.Column("report", sa.Integer, nullable=False),
    sa.Column("received_at", Time, nullable=False),
)

# each respondent's randomization group (1 or 2) for each two-group question, drawn by the
# server (storage/groups.py) when the respondent first reads the question (migration 0005);
# the report, 2 (group - 1) + answer, must carry it
groups = sa.Table(
    "groups",
    metadata,
    sa.Column("survey_id", Ident, sa.ForeignKey("surveys.id"), primary_key=True),
    sa.Column("respondent_id", sa.Integer, sa.ForeignKey("respondents.id"), primary_key=True),
    sa.Column("question_id", Ident, primary_key=True),
    sa.Column("grp", sa.SmallInteger, nullable=False),
    sa.Column("assigned_at", Time, nullable=False),
    sa.CheckConstraint("grp IN (1, 2)", name="grp"),
)

# ---------------------------------------------------------------- the ledger store
# Keys are encoded as text (``deniable.service.storage.ledger.encode_key``).  ``first`` orders the
# respondents by their first charge; ``spent`` is the total in the composition's unit.
ledger_respondent = sa.Table(
    "ledger_respondent",
    metadata,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("spent", sa.Float(53), nullable=False),
    sa.Column("first", sa.BigInteger, nullable=False, index=True),
)

ledger_charged = sa.Table(
    "ledger_charged",
    metadata,
    sa.Column("question", sa.Text, primary_key=True),
    sa.Column("key", sa.Text, primary_key=True),
)

# ``epsilon`` is NULL in a row that only exists to be locked (no spend recorded yet)
ledger_question = sa.Table(
    "ledger_question",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("epsilon", sa.Float(53), nullable=True),
    sa.Column("memoized", sa.Boolean, nullable=False),
    sa.Column("charges", sa.BigInteger, nullable=False),
)

# what holds for the whole ledger store: ``unit``, the unit of every ``spent`` (``epsilon``
# or ``rho``), recorded at the first spend (migration 0002)
ledger_meta = sa.Table(
    "ledger_meta",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

#: Spends in the order they happened (PostgreSQL; SQLite has one writer and counts rows).
ledger_spend_seq = sa.Sequence("ledger_spend_seq", metadata=metadata)

# ---------------------------------------------------------------- the memo store
# ``mechanism``: the key of the mechanism that drew the report; NULL in a row stored before
# migration 0002 (refused until adopted: docs/budgets.md)
memo = sa.Table(
    "memo",
    metadata,
    sa.Column("question", sa.Text, primary_key=True),
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("report", sa.BigInteger, nullable=False),
    sa.Column("mechanism", sa.Text, nullable=True),
)

# a row per question, locked by creators of that question (PostgreSQL)
memo_question = sa.Table(
    "memo_question",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
)

# ---------------------------------------------------------------- the window store
# Budgets per period (migration 0006; ``deniable.service.storage.windows``).  Every spec
# (``BudgetWindow.key``) the store has enforced, in the order recorded: a charge must fit
# under all of them.
window_spec = sa.Table(
    "window_spec",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("spec", sa.Text, nullable=False, unique=True),
    sa.Column("recorded_at", Time, nullable=False),
)

# a row per device (keys as text), locked by every charge of that device (PostgreSQL)
window_device = sa.Table(
    "window_device",
    metadata,
    sa.Column("key", sa.Text, primary_key=True),
)

# every charge with its time: a rolling window is checked exactly against them
window_charge = sa.Table(
    "window_charge",
    metadata,
    sa.Column(
        "id",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    sa.Column("key", sa.Text, nullable=False),
    sa.Column("at", Time, nullable=False),
    sa.Column("epsilon", sa.Float(53), nullable=False),
    sa.Column("delta", sa.Float(53), nullable=False),
    # a device's charges near a time: the only read of a charge
    sa.Index("ix_window_charge_key_at", "key", "at"),
)


# ---------------------------------------------------------------- telemetry streams
# Streams (migration 0007; ``deniable.service.storage.streams``): each stream's spec as
# canonical JSON, fixed once stored; and the devices of each stream, by the SHA-256 of
# their token (the raw token is never stored).  The reports are never here: they go to
# Parquet partitions (``deniable.distributed.append_reports``).
stream_spec = sa.Table(
    "stream_spec",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("spec", sa.Text, nullable=False),
    sa.Column("created_at", Time, nullable=False),
)

stream_device = sa.Table(
    "stream_device",
    metadata,
    sa.Column("token_hash", sa.Text, primary_key=True),
    sa.Column("stream", sa.Text, nullable=False),
    sa.Column("device", sa.Text, nullable=False),
    sa.Column("created_at", Time, nullable=False),
    sa.UniqueConstraint("stream", "device", name="uq_stream_device_stream"),
)
