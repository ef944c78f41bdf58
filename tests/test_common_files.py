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


# ------------------------------------------------------------ replace=False (issue 14)


def test_replace_false_leaves_an_existing_file_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    out.write_bytes(b"old \x00 bytes")
    before = os.stat(out)
    with pytest.raises(DataError, match=r"cannot write '.*out\.txt': it exists \(kept"):
        atomic_write(out, lambda tmp: tmp.write_text("new"), replace=False)
    after = os.stat(out)
    assert out.read_bytes() == b"old \x00 bytes"
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (
        before.st_ino,
        before.st_mtime_ns,
        before.st_size,
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]  # no temporary left


def test_replace_false_loses_no_file_that_appears_while_writing(tmp_path: Path) -> None:
    """The check is the last step (a hard link that fails if the name is taken), not a test
    before the work: a file made meanwhile by another program is kept."""
    out = tmp_path / "out.txt"

    def slow_write(tmp: Path) -> None:
        tmp.write_text("mine")
        out.write_text("theirs")  # another program takes the name meanwhile

    with pytest.raises(DataError, match="a file appeared there"):
        atomic_write(out, slow_write, replace=False)
    assert out.read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_replace_false_writes_a_new_file_with_its_mode(tmp_path: Path) -> None:
    secret = tmp_path / "links.txt"
    atomic_write(secret, lambda tmp: tmp.write_text("token"), mode=0o600, replace=False)
    assert secret.read_text() == "token" and stat.S_IMODE(os.stat(secret).st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["links.txt"]
    # through a dangling link: the file it names is created, the link kept
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "target.txt")
    atomic_write(link, lambda tmp: tmp.write_text("via link"), replace=False)
    assert link.is_symlink() and (tmp_path / "target.txt").read_text() == "via link"


def test_existing_file(tmp_path: Path) -> None:
    from deniable.common import existing_file

    regular = tmp_path / "f.txt"
    regular.write_text("x")
    link = tmp_path / "l.txt"
    link.symlink_to(regular)
    dangling = tmp_path / "d.txt"
    dangling.symlink_to(tmp_path / "nowhere")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert existing_file(regular) and existing_file(link)
    assert not existing_file(dangling) and not existing_file(tmp_path / "missing")
    assert not existing_file(tmp_path) and not existing_file(fifo)
