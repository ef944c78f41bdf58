"""Writing output files so that a failure never leaves a half-written one, never replaces
a file unasked, and never lands on an input.

:func:`atomic_write` writes to a temporary file in the target's own directory and renames it
into place (``os.replace``, atomic on POSIX and Windows): the target holds either its old
content or the complete new one.  The temporary file is removed on any failure, a
``KeyboardInterrupt`` included.  With ``replace=False`` the last step is a hard link that
fails if the target exists (no window in which another file at the path is overwritten).
:func:`same_file` tells whether two paths, however spelled (relative or absolute, ``./x``,
``dir/../x``, a symbolic or hard link), are one file; :func:`existing_file` whether a path
names a file that a write would replace (not a device or a pipe, which are written into).
The command line builds its one output mechanism on these (``deniable.cli._files``).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from deniable.exceptions import DataError

__all__ = ["atomic_write", "atomic_write_text", "existing_file", "same_file"]


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """True when ``a`` and ``b`` name the same existing file (links followed)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return os.path.realpath(a) == os.path.realpath(b)


def existing_file(path: str | os.PathLike[str]) -> bool:
    """True when writing ``path`` would replace a file that exists: ``path`` (a symbolic
    link followed) is a regular file.  A character device or a named pipe (written into,
    never replaced), a directory or nothing at all is not one."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _cannot_write(target: Path, why: str | OSError) -> DataError:
    """The error of a write to ``target`` that failed or is refused: ``why`` in words, or
    what an ``OSError`` says."""
    reason = (why.strerror or str(why)) if isinstance(why, OSError) else why
    return DataError(f"cannot write {str(target)!r}: {reason}.")


def _mode_for(target: Path) -> int:
    """The permission bits the output gets: the old file's, else the umask's default."""
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def atomic_write(
    path: str | os.PathLike[str],
    write: Callable[[Path], object],
    *,
    mode: int | None = None,
    replace: bool = True,
) -> Path:
    """Call ``write(tmp)`` to write a temporary file beside ``path``, then rename it over
    ``path``; return ``path``.  The file gets the permission bits ``mode`` if given (``0o600``
    for secrets: the temporary file has them from its creation, so the content is never
    readable by others), else the old file's, else the umask's default.

    ``replace=False`` never replaces an existing file: one that is there is refused before
    ``write`` is called, and the temporary file is then hard-linked to ``path``, which fails
    if a file appeared there meanwhile (both a :class:`~deniable.exceptions.DataError`; the
    file there is left as it was).  On a file system without hard links the existence is
    checked again just before the rename instead.

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
    try:  # the path itself, so that /dev/stdout (a link to /proc/self/fd/1) finds its pipe
        mode = os.stat(target).st_mode
    except OSError:  # not there yet: the usual route
        mode = stat.S_IFREG
    if stat.S_ISDIR(mode) or real.is_dir():
        raise _cannot_write(target, "it is a directory")
    if stat.S_ISFIFO(mode):
        # opening a pipe nobody reads would block for ever: check for a reader first
        try:
            os.close(os.open(target, os.O_WRONLY | os.O_NONBLOCK))
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise _cannot_write(target, "it is a named pipe that nobody reads") from None
            raise _cannot_write(target, exc) from exc
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        # /dev/null, /dev/full, a pipe: written in place, never replaced (root could rename a
        # temporary file over the device node, destroying it for every program)
        try:
            write(target)
        except OSError as exc:
            raise _cannot_write(target, exc) from exc
        return target
    if not stat.S_ISREG(mode):
        raise _cannot_write(target, "it is not a regular file (a block device or a socket)")
    if not replace and os.path.lexists(real):
        raise _cannot_write(target, "it exists (kept: replace=False)")
    suffix = "".join(real.suffixes[-2:]) if real.suffixes else ""
    try:
        fd, name = tempfile.mkstemp(prefix=f".{real.name}.", suffix=suffix, dir=real.parent)
    except OSError as exc:
        raise _cannot_write(target, exc) from exc
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(real) if wanted is None else wanted)
        if replace:
            os.replace(tmp, real)
        else:
            _link_new(tmp, real, target)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _cannot_write(target, exc) from exc
        raise
    return target


def _link_new(tmp: Path, real: Path, target: Path) -> None:
    """Put ``tmp`` at ``real`` unless a file is there (then a ``DataError``)."""
    exists = _cannot_write(
        target, "a file appeared there while it was written; it was left as it was"
    )
    try:
        os.link(tmp, real)
    except FileExistsError:
        raise exists from None
    except OSError as exc:
        if exc.errno not in (
            errno.EPERM,
            errno.ENOTSUP,
            errno.EOPNOTSUPP,
            errno.EMLINK,
            errno.EXDEV,
        ):
            raise
        if os.path.lexists(real):  # no hard links here: check, then rename
            raise exists from None
        os.replace(tmp, real)
        return
    tmp.unlink()


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """:func:`atomic_write` of UTF-8 text."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
