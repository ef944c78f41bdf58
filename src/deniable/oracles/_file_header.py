"""The header of a report file (``deniable.reports/1``, laid out in
``deniable.oracles._files``): read and checked against the oracle that reads the file, and
the reports after it read in batches.  Shared by the tallies of ``_files`` and the heavy-hitter
reader of ``_heavy_files``."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import load_json
from deniable.common import validation as v
from deniable.exceptions import DataError
from deniable.oracles._rappor_files import check_rappor_metadata

__all__ = ["BATCH_BYTES", "REPORTS_MAGIC", "check_file", "read_batches", "read_whole_file"]

REPORTS_MAGIC = b"DNRP"
_VERSION = 1
#: The version of a file whose header carries a JSON block (RAPPOR's).
_VERSION_BLOCK = 2
#: The longest JSON block a header may carry.
_MAX_BLOCK = 1 << 16
#: The most bytes of reports read at once, whatever ``batch`` says (a report of OUE at
#: k = 2**16 is 8 KB: 2**20 of them would be 8 GB).
BATCH_BYTES = 1 << 27


def _header(fh: Any, path: str) -> tuple[str, str, int, int, int, dict[str, Any] | None]:
    """``(key, dtype, width, n, header bytes, JSON block or None)`` of an open report
    file."""

    def read(size: int, what: str) -> bytes:
        data = fh.read(size)
        if len(data) != size:
            raise DataError(f"report file {path!r} ends inside its header ({what}).")
        return bytes(data)

    if read(4, "magic") != REPORTS_MAGIC:
        raise DataError(f"{path!r} is not a report file (it does not start with DNRP).")
    (version,) = struct.unpack("<H", read(2, "version"))
    if version not in (_VERSION, _VERSION_BLOCK):
        raise DataError(f"report file {path!r} has version {version}; this reads versions 1 and 2.")
    (klen,) = struct.unpack("<I", read(4, "key length"))
    if klen > 1 << 20:
        raise DataError(f"report file {path!r}: key length {klen} is not plausible.")
    key = read(klen, "key").decode("utf-8", errors="replace")
    meta: dict[str, Any] | None = None
    if version == _VERSION_BLOCK:
        (jlen,) = struct.unpack("<I", read(4, "block length"))
        if jlen > _MAX_BLOCK:
            raise DataError(f"report file {path!r}: block length {jlen} is not plausible.")
        text = read(jlen, "block").decode("utf-8", errors="replace")
        loaded = load_json(text, source=f"report file {path!r}: the header's block")
        if not isinstance(loaded, dict):
            raise DataError(f"report file {path!r}: the header's block is not a JSON object.")
        meta = loaded
    (dlen,) = struct.unpack("<I", read(4, "dtype length"))
    if dlen > 16:
        raise DataError(f"report file {path!r}: dtype length {dlen} is not plausible.")
    dt = read(dlen, "dtype").decode("ascii", errors="replace")
    width, n = struct.unpack("<IQ", read(12, "report count"))
    return key, dt, width, n, fh.tell(), meta


def check_file(
    fh: Any, name: str, key: str, dtype: np.dtype[Any], width: int, *, rappor: Any = None
) -> int:
    """The number of reports of the open report file ``fh``, left at its first report,
    after checking its header against ``key`` and the records (RAPPOR: its block against
    ``rappor``) and its size against the header: a :class:`~deniable.exceptions.DataError`
    naming the file otherwise."""
    found, file_dtype, file_width, n, start, meta = _header(fh, name)
    if found != key:
        raise DataError(f"report file {name!r} holds reports of {found}, not of this oracle {key}.")
    if rappor is not None:  # the header's parameters must be the key's
        check_rappor_metadata(rappor, meta, name)
    elif meta is not None:
        raise DataError(
            f"report file {name!r}: a header block is written for RAPPOR only, and "
            f"{found} is not RAPPOR."
        )
    if file_dtype != dtype.str or file_width != width:
        raise DataError(
            f"report file {name!r}: records of {file_width} x {file_dtype}, the oracle "
            f"writes {width} x {dtype.str}."
        )
    record = width * dtype.itemsize
    expected = start + n * record
    actual = os.fstat(fh.fileno()).st_size
    if actual != expected:
        whole, extra = divmod(max(actual - start, 0), record)
        raise DataError(
            f"report file {name!r} is {actual} bytes; its header promises {n} reports "
            f"of {record} bytes ({expected} bytes in all): it holds {whole} whole reports"
            + (f" and {extra} bytes of a partial one" if extra else "")
            + (" (truncated)." if actual < expected else " (bytes after the last report).")
        )
    return int(n)


def read_batches(
    fh: Any, name: str, n: int, dtype: np.dtype[Any], width: int, size: int
) -> Iterable[tuple[int, npt.NDArray[Any]]]:
    """``(reports read so far, batch)`` of a checked file (:func:`check_file`), each batch
    an ``(m, width)`` array of at most ``size`` reports and ``BATCH_BYTES`` (128 MB)."""
    size = min(size, max(1, BATCH_BYTES // (width * dtype.itemsize)))
    done = 0
    while done < n:
        m = min(size, n - done)
        chunk = np.fromfile(fh, dtype=dtype, count=m * width)
        if chunk.size != m * width:  # pragma: no cover - the file shrank while read
            raise DataError(f"report file {name!r} ended early while it was read.")
        done += m
        yield done, chunk.reshape(m, width)


def read_whole_file(
    path: str | os.PathLike[str], key: str, record: tuple[np.dtype[Any], int],
    limits: tuple[Any, Any], progress: Any, what: tuple[str, str],
) -> tuple[str, npt.NDArray[Any]]:  # fmt: skip
    """``(name, records)``: every record of a report file of the mechanism ``key`` (its
    header checked by :func:`check_file`; ``record`` its ``(dtype, width)``), read ``batch``
    at a time (``limits``: the caller's ``batch`` and ``max_bytes``, checked here) for a
    decoder that needs them all at once: a file of more than ``max_bytes`` of reports is
    refused before any is read, naming ``what`` (what a record holds, and who holds them
    all); ``progress(done, total)`` after each batch."""
    size = v.integer("batch", limits[0], minimum=1)
    limit = v.integer("max_bytes", limits[1], minimum=1)
    name = os.fspath(path)
    dtype, width = record
    with open(name, "rb") as fh:
        n = check_file(fh, name, key, dtype, width)
        if n * width * dtype.itemsize > limit:
            raise DataError(
                f"report file {name!r} holds {n} {what[0]} of {width * dtype.itemsize} bytes: "
                f"more than the {limit} bytes {what[1]} may hold in memory (`max_bytes`)."
            )
        parts = []
        for done, chunk in read_batches(fh, name, n, dtype, width, size):
            parts.append(chunk)
            if progress is not None:
                progress(done, n)
    return name, np.concatenate(parts) if parts else np.empty((0, width), dtype=dtype)
