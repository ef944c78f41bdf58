"""Files of the commands: outputs that never overwrite an input, written atomically, and the
progress bar shown while a large input is read.

Every command that writes a file (``report --html``, ``--plot`` of the privacy and power
commands) goes through :func:`write_output`: the file is written to a temporary file beside
the target and renamed into place, so a failure (a full disk, Ctrl-C) leaves the old file
as it was and no partial file behind.  :func:`refuse_inputs` stops a command whose output
path is one of its inputs, however spelled (``./x``, ``dir/../x``, a link), before anything
is read or written.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from deniable.cli._base import fail
from deniable.common._files import atomic_write, same_file

__all__ = ["progress_bar", "refuse_inputs", "write_output"]


def refuse_inputs(
    outputs: Sequence[tuple[str, str | Path | None]],
    inputs: Sequence[tuple[str, str | Path | None]],
) -> None:
    """One error line if an output (``(option, path)``) is the same file as an input, or as
    another output."""
    given = [(o, p) for o, p in outputs if p is not None]
    sources = [(o, p) for o, p in inputs if p is not None]
    for i, (opt, out) in enumerate(given):
        for name, src in [*sources, *given[:i]]:
            if Path(out).exists() and same_file(out, src):
                what = "input" if (name, src) in sources else "output"
                fail(
                    f"`{opt}` {str(out)!r} is the same file as the {what} {name} {str(src)!r}: "
                    f"writing it would destroy the {what}; choose another path for `{opt}`."
                )


def write_output(
    path: str | Path, write: Callable[[Path], object], *, mode: int | None = None
) -> Path:
    """``write(tmp)`` to a temporary file, renamed onto ``path`` (see module docstring);
    ``mode``: the file's permission bits (``0o600`` for secrets)."""
    return atomic_write(path, write, mode=mode)


@contextmanager
def progress_bar(
    show: bool, what: str, unit: str = "bytes"
) -> Iterator[Callable[[int, int], None] | None]:
    """A callback ``(done, total)`` that draws a progress bar on stderr, or ``None`` when
    ``show`` is false or stderr is not a terminal (pipes, files, ``--json`` runs).
    ``unit``: ``bytes`` (sizes shown as such) or anything else (``done/total unit``)."""
    if not show or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        TimeRemainingColumn,
    )

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn() if unit == "bytes" else MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    ) as bar:
        task = bar.add_task(escape(what), total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
