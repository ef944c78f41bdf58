"""The survey service: respondents randomize in their own browser, the server stores only
randomized reports (SQLite by default, PostgreSQL when configured), analysts see estimates,
intervals, budgets and plots (docs/service.md).

Laid out as a service (docs/architecture.md; the import contracts in ``pyproject.toml``
hold it), top to bottom:

* :mod:`~deniable.service.app`: the application factory, which puts the parts together;
* :mod:`~deniable.service.routes`: the FastAPI routers (respondent, interviewer, analyst,
  dashboard);
* :mod:`~deniable.service.pages` (the HTML rendered on the server, Jinja2 with
  autoescaping), :mod:`~deniable.service.analysis` (the analyst's numbers from the
  library's results) and :mod:`~deniable.service.core` (settings, security, limits,
  middleware, logging): siblings that do not import each other;
* :mod:`~deniable.service.storage`: the database (SQLAlchemy Core on SQLite and
  PostgreSQL), with the library's ledger and memo protocols on SQL;
* ``static/``: the browser's pages and scripts.

The layer at the top of the library beside the command line: it may import every library
package, and nothing but ``deniable.cli`` (lazily, for ``deniable serve``) imports it.  Its
dependencies are the ``service`` extra (and ``postgres`` for PostgreSQL); importing this
package imports none of them.  ``deniable.service.settings``, ``.stores`` and ``.db``
re-export names that moved (docs/changes.md).
"""

from __future__ import annotations

__all__: list[str] = []
