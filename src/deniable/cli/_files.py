"""Files of the commands: one mechanism for every output file, and the progress bar shown
while a large input is read.

Every command that writes a file declares it with :func:`claim_output` before it reads or
computes anything, and writes it with :meth:`Output.write`:

* **never an input**: an output that is one of the command's inputs (or another of its
  outputs), however spelled (``./x``, ``dir/../x``, a symbolic or hard link), is refused,
  ``--force`` or not;
* **never replaced unasked**: an existing file is refused unless ``--force`` (declared once,
  :data:`~deniable.cli._options.ForceOpt`) is given; the refused file is left byte for byte
  as it was, and the final step of the write cannot replace a file that appears meanwhile
  (:func:`~deniable.common.atomic_write` with ``replace=False``);
* **the format the user chose**: the format is the command's ``--format`` flag or, without
  one, the one the path's suffix names (:data:`SUFFIXES`; ``.csv.gz`` is gzip-compressed
  CSV); a flag that contradicts the suffix, a suffix the command does not write, or a
  compression suffix on a format that is not compressed is an error naming both;
* **atomic**: a temporary file beside the target, renamed into place, so a failure (a full
  disk, Ctrl-C) leaves the old file as it was and no partial file behind; ``mode=0o600``
  for a file that holds a secret.

A character device or a named pipe (``/dev/null``, ``/dev/stdout``, a shell's ``>(...)``)
is written into, never replaced: it is not a file that ``--force`` protects, and its name
says nothing about the format (a command with several formats then needs its flag).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import overload

from deniable.cli._base import fail
from deniable.common import atomic_write, existing_file, same_file

__all__ = [
    "COMPRESSIONS",
    "SUFFIXES",
    "Output",
    "claim_output",
    "progress_bar",
    "refuse_inputs",
    "suffix_format",
]

#: Every format a command writes, with the suffixes that name it (lower case): the suffix
#: of an output chooses its format, and a ``--format`` flag must agree with it.
SUFFIXES: dict[str, tuple[str, ...]] = {
    "reports": (".dnrp",),
    "parquet": (".parquet", ".pq"),
    "csv": (".csv", ".csv.gz", ".csv.bz2", ".csv.zst", ".csv.xz", ".csv.zip"),
    "json": (".json",),
    "yaml": (".yaml", ".yml"),
    "html": (".html", ".htm"),
    "png": (".png",),
    "svg": (".svg",),
    "pdf": (".pdf",),
}
#: Suffixes of compression: a path ending in one must end in a compressed suffix of
#: :data:`SUFFIXES` that its command writes (never an uncompressed file named ``.gz``).
COMPRESSIONS = (".gz", ".bz2", ".zst", ".xz", ".zip", ".z", ".lz4", ".br")


def suffix_format(
    path: str | Path, table: Mapping[str, Sequence[str]] = SUFFIXES
) -> tuple[str, str] | None:
    """``(format, suffix)`` that the name of ``path`` ends in (by ``table``, default
    :data:`SUFFIXES`; the longest match, case ignored), or ``None``."""
    name = os.path.basename(str(path).rstrip()).lower()
    found = [
        (len(suf), fmt, suf)
        for fmt, sufs in table.items()
        for suf in sufs
        if name.endswith(suf) and len(name) > len(suf)
    ]
    if not found:
        return None
    _, fmt, suf = max(found)
    return fmt, suf


@dataclass(frozen=True)
class Output:
    """An output file a command has claimed (:func:`claim_output`): where, in which format
    (``suffix`` the one the path ends in, ``""`` if none), and whether it may replace a file
    (``force``)."""

    option: str
    path: str
    format: str
    suffix: str
    force: bool

    def write(self, write: Callable[[Path], object], *, mode: int | None = None) -> Path:
        """``write(tmp)`` to a temporary file beside the path, renamed into place (never over
        a file that exists unless ``force``); ``mode``: the permission bits (``0o600`` for a
        secret).  Returns the path."""
        return atomic_write(self.path, write, mode=mode, replace=self.force)

    def write_text(self, text: str, *, mode: int | None = None) -> Path:
        """:meth:`write` of UTF-8 text."""
        return self.write(lambda tmp: tmp.write_text(text, encoding="utf-8"), mode=mode)


def _listed(suffixes: Sequence[str]) -> str:
    return ", ".join(suffixes[:-1]) + (" or " if len(suffixes) > 1 else "") + suffixes[-1]


def _format(
    option: str,
    path: str,
    allowed: dict[str, tuple[str, ...]],
    given: str | None,
    format_option: str | None,
    special: bool,
) -> tuple[str, str]:
    """The format of the output and the suffix that names it (see the module docstring);
    ``allowed``: the suffixes the command writes, by format."""
    formats = list(allowed)
    suffixes = [s for sufs in allowed.values() for s in sufs]
    if given is not None and given not in formats:
        fail(f"`{format_option}` must be one of {', '.join(formats)}, got {given!r}.")
    if special:  # a device or a pipe: its name says nothing about the format
        if given is None and len(formats) > 1:
            fail(
                f"`{option}` {path!r} is a device or a pipe, whose name names no format: give "
                f"`{format_option}` ({', '.join(formats)})."
            )
        return given or formats[0], ""
    named = suffix_format(path, allowed) or suffix_format(path)
    lowered = path.rstrip().lower()
    compressed = next((c for c in COMPRESSIONS if lowered.endswith(c)), None)
    if compressed is not None and (named is None or named[1] not in suffixes):
        fail(
            f"`{option}` {path!r} ends in {compressed}, a compression this command does not "
            f"write; the suffixes it writes are {_listed(suffixes)}."
        )
    if named is not None and given is not None and named[0] != given:
        fail(
            f"`{format_option} {given}` contradicts `{option}` {path!r}, whose suffix "
            f"{named[1]} names {named[0]}: drop one, or make them agree."
        )
    if named is not None and named[1] in suffixes:
        return named
    if named is None and given is not None:  # a suffix that names no format (.txt): the flag
        return given, ""
    how = f", or give `{format_option}` ({', '.join(formats)})" if format_option else ""
    fail(
        f"`{option}` must be a file name ending in {_listed(suffixes)} (the suffix chooses "
        f"the format){how}, got {path!r}."
    )


@overload
def claim_output(
    option: str,
    path: str | Path,
    *,
    force: bool,
    formats: Sequence[str] | Mapping[str, Sequence[str]],
    format: str | None = None,
    format_option: str | None = None,
    inputs: Sequence[tuple[str, str | Path | None]] = (),
) -> Output: ...


@overload
def claim_output(
    option: str,
    path: str | Path | None,
    *,
    force: bool,
    formats: Sequence[str] | Mapping[str, Sequence[str]],
    format: str | None = None,
    format_option: str | None = None,
    inputs: Sequence[tuple[str, str | Path | None]] = (),
) -> Output | None: ...


def claim_output(
    option: str,
    path: str | Path | None,
    *,
    force: bool,
    formats: Sequence[str] | Mapping[str, Sequence[str]],
    format: str | None = None,
    format_option: str | None = None,
    inputs: Sequence[tuple[str, str | Path | None]] = (),
) -> Output | None:
    """Check the output ``path`` of option ``option`` before the command does any work, and
    return it claimed (``None`` when the option was not given).

    ``formats``: the formats the option writes, names of :data:`SUFFIXES` (all their
    suffixes), or a mapping ``format -> suffixes`` (those only); ``format``: the
    value of the command's format flag ``format_option`` if it has one; ``inputs``:
    ``(name, path)`` of every file the command reads.  One error line, before anything is
    read or written, for: an output given as ``--force`` alone, an empty path, a directory,
    an input (whatever ``force``), a format the suffix contradicts, a missing directory, and
    an existing file without ``force``.
    """
    if path is None:
        if force:
            fail(f"`--force` replaces the file of `{option}`: give `{option}` FILE, or drop it.")
        return None
    text = str(path)
    if not text.strip():
        fail(f"`{option}` must be a file path, got {text!r}.")
    real = Path(os.path.realpath(text))
    if real.is_dir():
        fail(f"cannot write {text!r}: it is a directory (`{option}` must be a file path).")
    refuse_inputs([(option, text)], inputs)
    try:  # the path itself: /dev/stdout is a link to /proc/self/fd/1, a pipe or a terminal
        kind = os.stat(text).st_mode
    except OSError:
        kind = 0
    special = stat.S_ISCHR(kind) or stat.S_ISFIFO(kind)
    if kind and not special and not stat.S_ISREG(kind):
        fail(f"cannot write {text!r}: it is not a regular file (a block device or a socket).")
    allowed = (
        {f: tuple(sufs) for f, sufs in formats.items()}
        if isinstance(formats, Mapping)
        else {f: SUFFIXES[f] for f in formats}
    )
    fmt, suffix = _format(option, text, allowed, format, format_option, special)
    if not special:
        if not real.parent.is_dir():
            fail(f"cannot write {text!r}: no such directory {str(real.parent)!r} (`{option}`).")
        if existing_file(real) and not force:
            fail(f"`{option}` ({text!r}) exists; pass --force to replace it.")
    return Output(option, text, fmt, suffix, force)


def refuse_inputs(
    outputs: Sequence[tuple[str, str | Path | None]],
    inputs: Sequence[tuple[str, str | Path | None]],
) -> None:
    """One error line if an output (``(option, path)``) is the same file as an input, or as
    another output (``--force`` does not change that)."""
    given = [(o, p) for o, p in outputs if p is not None]
    sources = [(o, p) for o, p in inputs if p is not None]
    for i, (opt, out) in enumerate(given):
        for name, src in [*sources, *given[:i]]:
            if Path(out).exists() and same_file(out, src):
                what = "input" if (name, src) in sources else "output"
                fail(
                    f"`{opt}` {str(out)!r} is the same file as the {what} {name} {str(src)!r}: "
                    f"writing it would destroy the {what} (even with --force); choose another "
                    f"path for `{opt}`."
                )


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
