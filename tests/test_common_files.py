"""``atomic_write`` and special files: a device or a named pipe is written into, never
replaced by a regular file (as root, renaming over ``/dev/null`` would replace the device
for every process on the machine; the CLI fuzz tests pass ``/dev/null`` and ``/dev/full``
as output paths)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from deniable.common import atomic_write, atomic_write_text
from deniable.exceptions import DataError


def test_a_named_pipe_is_written_into_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so the writer can open
    try:
        assert atomic_write_text(fifo, "hello") == fifo
        assert os.read(reader, 100) == b"hello"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no temporary left


def test_a_failed_write_into_a_pipe_names_the_path(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)

    def fail(path: Path) -> None:
        raise PermissionError(13, "Permission denied")

    try:
        with pytest.raises(DataError, match=r"cannot write '.*pipe': Permission denied\.$"):
            atomic_write(fifo, fail)
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_regular_file_is_still_replaced_whole(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    out.write_text("old")
    inode = os.stat(out).st_ino
    atomic_write_text(out, "new")
    assert out.read_text() == "new"
    assert os.stat(out).st_ino != inode  # renamed into place, not rewritten
