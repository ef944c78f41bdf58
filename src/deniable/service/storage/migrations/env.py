"""Alembic's environment: migrate the connection ``deniable.service.storage.db.migrate`` hands over
(online only; there is no ini file and no offline SQL generation).  Importing this module
outside Alembic (a doctest collector, say) does nothing."""

from __future__ import annotations

from alembic import context

from deniable.service.storage.tables import metadata


def run() -> None:
    """Run the migrations on the connection in ``config.attributes["connection"]``."""
    connection = context.config.attributes.get("connection")
    if connection is None:  # pragma: no cover - only deniable.service.storage.db.migrate runs this
        raise RuntimeError("run migrations with deniable.service.storage.db.migrate(engine)")
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if getattr(context, "config", None) is not None:  # run by Alembic
    run()
