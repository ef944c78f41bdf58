"""The survey service: respondents randomize in their own browser, the server stores only
randomized reports (SQLite by default, PostgreSQL when configured), analysts see estimates,
intervals, budgets and plots (docs/service.md).

The layer at the top beside the command line: it may import every library package, and
nothing but ``deniable.cli`` (lazily, for ``deniable serve``) imports it.  Its
dependencies are the ``service`` extra (and ``postgres`` for PostgreSQL); importing this
package imports none of them.
"""

from __future__ import annotations

__all__: list[str] = []
