"""Report batches: the body a device posts, binary (``deniable.batch/1``) or JSON.

A **binary batch** holds the reports of one oracle packed at the oracle's own record
(``docs/specs.md``, "Report batches"), all little-endian:

==========  ===========================================================================
bytes       field
==========  ===========================================================================
4           magic ``DNRB``
2           version (``uint16``, 1)
2           flags (``uint16``, 0: none defined)
32          SHA-256 of the oracle's :attr:`key` (UTF-8): the oracle and its parameters
8           number of reports ``n`` (``uint64``)
n w s       the reports, ``w`` items of ``s`` bytes each (the oracle's record: one
            ``uint16``/``uint32`` for k-ary RR, ``ceil(k / 8)`` bytes of packed bits for
            the unary oracles, three ``uint64`` words ``(a, b, bucket)`` for local hashing,
            one ``uint32`` for Hadamard response, ``2 + m / 8`` bytes for RAPPOR: the
            cohort ``uint16`` then the ``m`` packed bits, ``2 + ceil(m / 8)`` bytes for
            CMS: the row ``uint16`` then the ``m`` packed bits, one ``int64`` for HCMS,
            ``2 + l W`` ``uint64`` words for PEM and TreeHist: the group, then the rows of
            the prefix's hash and the bucket, a report file's record for the range
            mechanisms: the level, then the level oracle's report padded to the widest
            level, one ``uint16`` cell for Square Wave, an SFP report file's record for
            SFP: the position, the fragment report, the whole-string report, an
            n-gram report file's record for RAPPOR n-grams: the position pairs, the
            n-gram reports, the full-string report, ...)
==========  ===========================================================================

A **JSON batch** is ``{"key": KEY, "reports": [...]}``: a report is an integer when the
oracle's record has one item, else a list of its ``w`` items (RAPPOR: ``[cohort, byte_0,
..., byte_{m/8-1}]``; CMS: ``[row, byte_0, ..., byte_{ceil(m/8)-1}]``).  RAPPOR's reports
are :class:`~deniable.oracles.RapporReports` in and out (:mod:`._batch_rappor`), CMS's
:class:`~deniable.oracles.SketchReports` (:mod:`._batch_sketch`); every other oracle's
(HCMS's integers and the heavy-hitter records ``[group, word, ...]`` included), arrays.  A
heavy-hitter record is checked whole: its group (``0 .. G - 1``), its rows (no bit past
its group's prefix length) and its bucket (below ``g``): :mod:`._batch_heavy`.  A range
mechanism's reports (HierarchicalHistogram, HaarHRR) are
:class:`~deniable.oracles.LevelReports` in and out, a JSON report ``[level, item_0, ...,
item_{W-1}]``, each checked and named (its level, its padding, its level oracle's check):
:mod:`._batch_range`.

:func:`decode_batch` and :func:`decode_json_batch` check everything before they return: the
magic, version and flags, the oracle (a batch for another oracle or other parameters is
refused), the length (a truncated body, bytes after the last report) and every report (its
shape, and its values against the oracle's domain, as the oracle's own check does).  Bad
input is one :class:`~deniable.exceptions.DataError` naming what is wrong.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.distributed._batch_heavy import check_heavy_records
from deniable.distributed._batch_range import (
    range_from_json,
    range_from_rows,
    range_json,
    range_rows,
    range_wire,
)
from deniable.distributed._batch_rappor import (
    rappor_from_json,
    rappor_from_rows,
    rappor_json,
    rappor_rows,
)
from deniable.distributed._batch_sketch import cms_from_json, cms_from_rows, cms_json, cms_rows
from deniable.distributed._batch_strings import (
    string_from_json,
    string_from_rows,
    string_json,
    string_rows,
)
from deniable.distributed._range_tables import range_mechanism
from deniable.distributed._tables import _cms, _heavy, _rappor, _strings, record, two_dimensional
from deniable.exceptions import DataError, DeniableError, ParameterTypeError

__all__ = [
    "BATCH_HEADER_SIZE",
    "BATCH_MAGIC",
    "BATCH_VERSION",
    "batch_digest",
    "decode_batch",
    "decode_json_batch",
    "encode_batch",
    "encode_json_batch",
]

#: The first four bytes of a binary report batch.
BATCH_MAGIC = b"DNRB"
#: The version of the binary batch format this module writes and reads.
BATCH_VERSION = 1
_HEADER = struct.Struct("<4sHH32sQ")
#: Bytes before the first report of a binary batch.
BATCH_HEADER_SIZE = _HEADER.size


def batch_digest(oracle: Any) -> bytes:
    """The 32 bytes a batch carries to name its oracle: SHA-256 of the oracle's key."""
    return hashlib.sha256(str(oracle.key).encode("utf-8")).digest()


def _wire(oracle: Any) -> tuple[np.dtype[Any], np.dtype[Any], int, bool]:
    """``(native dtype, little-endian dtype, items per report, 2-D)`` of ``oracle``."""
    if range_mechanism(oracle) is not None:  # the report file's record (the level's items)
        little, items = range_wire(oracle)
        return little.newbyteorder("="), little, items, True
    dtype, width = record(oracle)
    return dtype, dtype.newbyteorder("<"), width, two_dimensional(oracle)


def _check(oracle: Any, reports: npt.NDArray[Any], what: str) -> None:
    """The oracle's own check of every report (shape, dtype, domain), its error prefixed
    (PEM, TreeHist: each record's group, and its report by its group's prefix oracle)."""
    heavy = _heavy(oracle)
    if heavy is not None:  # each record whole, named by its index in the batch
        check_heavy_records(heavy, reports, what)
        return
    check = getattr(oracle, "check_reports", None) or oracle.tally
    try:
        check(reports)
    except DeniableError as exc:
        raise DataError(f"{what}: {exc}") from None


def encode_batch(oracle: Any, reports: npt.ArrayLike) -> bytes:
    """The binary batch (``deniable.batch/1``) of ``reports`` of ``oracle``: checked by the
    oracle first, so a batch is never made of reports it would refuse.

    >>> from deniable.oracles import GRR
    >>> oracle = GRR.from_epsilon(1.0, k=16)
    >>> body = encode_batch(oracle, oracle.randomize([3, 5, 7], rng=1))
    >>> len(body), body[:4]           # 48-byte header, then 3 reports of one uint16
    (54, b'DNRB')
    >>> decode_batch(oracle, body).tolist() == oracle.randomize([3, 5, 7], rng=1).tolist()
    True
    """
    native, little, _, _ = _wire(oracle)
    indexed = _indexed(oracle)
    if indexed is not None:  # cohort (RAPPOR) or row (CMS) <u2 and the packed bits, checked
        rows: npt.NDArray[np.uint8] = indexed[0](oracle, reports, "`reports`")
        head = _HEADER.pack(BATCH_MAGIC, BATCH_VERSION, 0, batch_digest(oracle), rows.shape[0])
        return head + rows.tobytes()
    arr = np.asarray(reports)
    _check(oracle, arr, "`reports`")
    n = int(arr.shape[0]) if arr.ndim else 0
    head = _HEADER.pack(BATCH_MAGIC, BATCH_VERSION, 0, batch_digest(oracle), n)
    return head + np.ascontiguousarray(arr, dtype=native).astype(little, copy=False).tobytes()


def _indexed(oracle: Any) -> tuple[Any, Any, Any, Any] | None:
    """The record functions ``(rows, from_rows, json, from_json)`` of an oracle whose report
    is an index ``<u2`` then packed bits (RAPPOR, CMS), a level then its level's report (a
    range mechanism), a position then two sketch reports (SFP) or position pairs then RAPPOR
    reports (RAPPOR n-grams; both :mod:`._batch_strings`), else None."""
    if range_mechanism(oracle) is not None:
        return range_rows, range_from_rows, range_json, range_from_json
    if _rappor(oracle) is not None:
        return rappor_rows, rappor_from_rows, rappor_json, rappor_from_json
    if _cms(oracle) is not None:
        return cms_rows, cms_from_rows, cms_json, cms_from_json
    if _strings(oracle) is not None and oracle.name in ("sfp", "rappor-ngram"):  # a file record
        return string_rows, string_from_rows, string_json, string_from_json
    return None


def _bytes(body: Any) -> memoryview:
    if not isinstance(body, bytes | bytearray | memoryview):
        raise ParameterTypeError(
            f"`body` must be bytes (a binary report batch), got {type(body).__name__}."
        )
    view = memoryview(body).cast("B")
    return view


def decode_batch(oracle: Any, body: bytes | bytearray | memoryview) -> Any:
    """The reports of a binary batch of ``oracle`` (``(n,)`` or ``(n, w)``, the oracle's
    dtype; RAPPOR: :class:`~deniable.oracles.RapporReports`; CMS:
    :class:`~deniable.oracles.SketchReports`), after checking the header, the length and
    every report; a batch for another oracle or other parameters, a truncated body, bytes
    after the last report, a wrong magic or version, or a report outside the oracle's
    domain (RAPPOR: a cohort out of range; CMS: a row out of range or a padding bit set) is
    one
    :class:`~deniable.exceptions.DataError` naming it.  The array may share ``body``'s
    memory (read-only)."""
    native, little, width, rows = _wire(oracle)
    data = _bytes(body)
    size = len(data)
    if size < BATCH_HEADER_SIZE:
        raise DataError(
            f"`body` is {size} bytes, shorter than the {BATCH_HEADER_SIZE}-byte header of a "
            "report batch (truncated)."
        )
    magic, version, flags, digest, n = _HEADER.unpack_from(data)
    if magic != BATCH_MAGIC:
        raise DataError(
            f"`body` is not a report batch: it must start with {BATCH_MAGIC!r}, got {magic!r}."
        )
    if version != BATCH_VERSION:
        raise DataError(
            f"`body` is a report batch of version {version}; this reads version {BATCH_VERSION}."
        )
    if flags != 0:
        raise DataError(f"`body` header field `flags` must be 0 (none defined), got {flags}.")
    if digest != batch_digest(oracle):
        raise DataError(
            f"`body` is a batch for another oracle or other parameters (key digest "
            f"{digest.hex()[:16]}...); this stream's oracle is {oracle.key} (digest "
            f"{batch_digest(oracle).hex()[:16]}...)."
        )
    item = width * little.itemsize
    expected = n * item
    got = size - BATCH_HEADER_SIZE
    if got != expected:
        whole, extra = divmod(got, item)
        raise DataError(
            f"`body` holds {got} bytes of reports; its header promises {n} reports of {item} "
            f"bytes ({expected} bytes): it holds {whole} whole reports"
            + (f" and {extra} bytes of a partial one" if extra else "")
            + (" (truncated)." if got < expected else " (bytes after the last report).")
        )
    flat = np.frombuffer(data, dtype=little, count=n * width, offset=BATCH_HEADER_SIZE)
    indexed = _indexed(oracle)
    if indexed is not None:
        return indexed[1](oracle, flat.reshape(n, width), "`body`")
    arr = flat.astype(native, copy=False)
    reports = arr.reshape(n, width) if rows else arr
    _check(oracle, reports, "`body`")
    return reports


def encode_json_batch(oracle: Any, reports: npt.ArrayLike) -> str:
    """The JSON batch ``{"key": KEY, "reports": [...]}`` of ``reports`` of ``oracle``."""
    indexed = _indexed(oracle)
    if indexed is not None:
        items: list[Any] = indexed[2](oracle, reports)
    else:
        arr = np.asarray(reports)
        _check(oracle, arr, "`reports`")
        items = arr.tolist()
    return json.dumps({"key": oracle.key, "reports": items}, separators=(",", ":"))


def _no_float(text: str) -> Any:
    raise DataError(f"`body` reports must be whole numbers, got {text}.")


def _has_bool(items: list[Any]) -> bool:
    return any(x is True or x is False or (isinstance(x, list) and _has_bool(x)) for x in items)


def decode_json_batch(oracle: Any, body: str | bytes) -> Any:
    """The reports of a JSON batch of ``oracle`` (``{"key": KEY, "reports": [...]}``), after
    checking its key and every report as :func:`decode_batch` does."""
    native, _, width, rows = _wire(oracle)
    if not isinstance(body, str | bytes | bytearray):
        raise ParameterTypeError(
            f"`body` must be JSON text (str or bytes), got {type(body).__name__}."
        )
    try:
        doc = json.loads(body, parse_float=_no_float, parse_constant=_no_float)
    except (ValueError, RecursionError) as exc:
        raise DataError(f"`body` is not JSON: {exc}.") from None
    if not isinstance(doc, dict) or set(doc) != {"key", "reports"}:
        raise DataError(
            "`body` must be a JSON object with the fields `key` and `reports`, got "
            + (f"the fields {', '.join(sorted(map(str, doc)))}." if isinstance(doc, dict)
               else f"{type(doc).__name__}.")
        )  # fmt: skip
    if doc["key"] != oracle.key:
        raise DataError(
            f"`body` is a batch for {doc['key']!r}; this stream's oracle is {oracle.key}."
        )
    items = doc["reports"]
    if not isinstance(items, list):
        raise DataError(f"`body` field `reports` must be a list, got {type(items).__name__}.")
    raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    if (b"true" in raw or b"false" in raw) and _has_bool(items):  # numpy reads true as 1
        raise DataError("`body` reports must be whole numbers, got true or false.")
    indexed = _indexed(oracle)
    if indexed is not None:
        return indexed[3](oracle, items)
    info = np.iinfo(native)
    try:
        arr = np.array(items) if items else np.empty((0, width) if rows else 0, dtype=native)
        if arr.dtype.kind in "fO":  # JSON floats are refused: integers beyond int64
            arr = np.array(items, dtype=np.uint64)  # (64-bit words), or ragged lists
    except (ValueError, OverflowError, TypeError) as exc:
        raise DataError(
            f"`body` reports must be {'lists of ' + str(width) + ' ' if rows else ''}whole "
            f"numbers in {info.min}..{info.max}: {exc}."
        ) from None
    shape = (len(items), width) if rows else (len(items),)
    if arr.dtype.kind not in "iu" or arr.shape != shape:
        raise DataError(
            f"`body` reports must be {'lists of ' + str(width) + ' ' if rows else ''}whole "
            f"numbers, got an array of {arr.dtype} of shape {arr.shape}."
        )
    if arr.size and (int(arr.min()) < info.min or int(arr.max()) > info.max):
        raise DataError(
            f"`body` reports must hold values in {info.min}..{info.max} ({native.name}), got "
            f"{int(arr.min()) if int(arr.min()) < info.min else int(arr.max())}."
        )
    reports = arr.astype(native)
    _check(oracle, reports, "`body`")
    return reports
