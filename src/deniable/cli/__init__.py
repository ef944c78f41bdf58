"""The ``deniable`` command line (needs the ``[cli]`` extra: typer and rich).

``main()`` is the console entry point; ``app`` is the Typer application (for
``typer.testing.CliRunner``).  The commands are listed in ``deniable.cli._main.COMMANDS``
(see ``docs/cli.md`` and ``docs/privacy-cli.md``); each one's module is imported only when
it runs.  A command parses its options (the shared ones are in ``_options``), calls the
library and prints the result it returns: ``result.table()`` rendered with rich, or
``result.to_dict()`` as JSON (``_render``).  The core package never imports this one.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["app", "main"]

_EXTRAS = ("typer", "rich", "click")


def _load() -> Any:
    try:
        from deniable.cli._main import app
    except ModuleNotFoundError as exc:
        if exc.name not in _EXTRAS:
            raise
        sys.stderr.write(
            f"error: the deniable command needs the [cli] extra ({exc.name} is missing): "
            "pip install 'deniable[cli]'.\n"
        )
        raise SystemExit(1) from None
    return app


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``) and exit."""
    _load()(args=None if argv is None else list(argv), prog_name="deniable")


def __getattr__(name: str) -> Any:
    if name == "app":
        return _load()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
