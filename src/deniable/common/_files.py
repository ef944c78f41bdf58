"""Writing output files so that a failure never leaves a half-written one, and never onto
an input.

:func:`atomic_write` writes to a temporary file in the target's own directory and renames it
into place (``os.replace``, atomic on POSIX and Windows): the target holds either its old
content or the complete new one.  The temporary file is removed on any failure, a
``KeyboardInterrupt`` included.  :func:`same_file` tells whether two paths, however spelled
(relative or absolute, ``./x``, ``dir/../x``, a symbolic or hard link), are one file.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from deniable.exceptions import DataError

__all__ = ["atomic_write", "atomic_write_text", "same_file"]


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """True when ``a`` and ``b`` name the same existing file (links followed)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return os.path.realpath(a) == os.path.realpath(b)


def _mode_for(target: Path) -> int:
    """The permission bits the output gets: the old file's, else the umask's default."""
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def atomic_write(
    path: str | os.PathLike[str], write: Callable[[Path], object], *, mode: int | None = None
) -> Path:
    """Call ``write(tmp)`` to write a temporary file beside ``path``, then rename it over
    ``path``; return ``path``.  The file gets the permission bits ``mode`` if given (``0o600``
    for secrets: the temporary file has them from its creation, so the content is never
    readable by others), else the old file's, else the umask's default.

    The temporary name keeps the extension (``.x.csv.gz`` -> ``.x.csv.gz.<random>.csv.gz``)
    so that writers that choose a format or compression by extension still do.  A symbolic
    link at ``path`` is followed: the file it points to is replaced, the link kept.  A
    character device or a named pipe at ``path`` (``/dev/null``, ``/dev/full``, a shell's
    ``>(...)``) is written into, never replaced by a regular file (a named pipe nobody reads is
    refused rather than waited for) (which a process running as
    root could otherwise do, destroying the device for every program); a block device or a
    socket is refused.  An
    ``OSError`` (no such directory, permission denied, disk full, ``path`` is a directory)
    becomes a :class:`~deniable.exceptions.DataError` naming ``path``.
    """
    wanted = mode  # `mode` below is the target's file type
    target = Path(path)
    real = Path(os.path.realpath(target))
    if real.is_dir():
        raise DataError(f"cannot write {str(target)!r}: it is a directory.")
    try:
        mode = os.stat(real).st_mode
    except OSError:  # not there yet: the usual route
        mode = stat.S_IFREG
    if stat.S_ISFIFO(mode):
        # opening a pipe nobody reads would block for ever: check for a reader first
        try:
            os.close(os.open(real, os.O_WRONLY | os.O_NONBLOCK))
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise DataError(
                    f"cannot write {str(target)!r}: it is a named pipe that nobody reads."
                ) from None
            raise DataError(f"cannot write {str(target)!r}: {exc.strerror or exc}.") from exc
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        # /dev/null, /dev/full, a pipe: written in place, never replaced (root could rename a
        # temporary file over the device node, destroying it for every program)
        try:
            write(real)
        except OSError as exc:
            raise DataError(f"cannot write {str(target)!r}: {exc.strerror or exc}.") from exc
        return target
    if not stat.S_ISREG(mode):
        raise DataError(
            f"cannot write {str(target)!r}: it is not a regular file (a block device or a socket)."
        )
    suffix = "".join(real.suffixes[-2:]) if real.suffixes else ""
    try:
        fd, name = tempfile.mkstemp(prefix=f".{real.name}.", suffix=suffix, dir=real.parent)
    except OSError as exc:
        raise DataError(f"cannot write {str(target)!r}: {exc.strerror or exc}.") from exc
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(real) if wanted is None else wanted)
        os.replace(tmp, real)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise DataError(f"cannot write {str(target)!r}: {exc.strerror or exc}.") from exc
        raise
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """:func:`atomic_write` of UTF-8 text."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
