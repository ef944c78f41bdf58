"""The Alembic migrations of the service's database (``deniable.service.storage.db.migrate`` runs
them on start; configured in code, no ``alembic.ini``).  Each revision in ``versions/``
changes the schema of :mod:`deniable.service.storage.tables` one step."""
