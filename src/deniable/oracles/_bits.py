"""Bit-level helpers of the oracles whose reports are bit vectors (unary encoding, subset
selection): many Bernoulli draws from few words, packing, support counts of packed reports
(and the mixin that tallies them), the report-file records of packed bits after a 16-bit
index (RAPPOR's cohort, a CMS row), and the parity of a bitwise AND (the Hadamard matrix
entries).

**Bit-sliced Bernoulli lanes.**  ``L`` words give 64 independent lanes of an ``L``-bit
uniform number each: lane ``b`` of word ``i`` is bit ``i`` of the lane's number ``U``
(word 0 holds the least significant bits).  A lane is set when ``U >= 2**L - t``, which has
probability exactly ``t / 2**L``.  Evaluated from the least significant word up,
``r = u_i | r`` where bit ``i`` of ``c = 2**L - t`` is 0 and ``r = u_i & r`` where it is 1,
starting from all ones: one bitwise operation per word for 64 draws.

**Packed reports.**  A report of ``k`` bits is ``ceil(k / 8)`` bytes, bit ``j`` in byte
``j // 8`` at position ``j % 8`` (``numpy.packbits(..., bitorder="little")``), the bits
from ``k`` on zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, ParameterTypeError

__all__ = [
    "INDEX_BYTES",
    "indexed_records",
    "lanes",
    "pack_words",
    "packed_bit",
    "packed_support_counts",
    "parity",
    "row_popcounts",
    "split_records",
]

#: Bytes of the index (RAPPOR's cohort, a CMS report's row, a little-endian ``uint16``)
#: before the packed bits of a report file's record.
INDEX_BYTES = 2
_INDEX = np.dtype("<u2")
_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
#: Rows of packed reports unpacked at once when counting (bits: 1024 x k bytes).
_COUNT_ROWS = 1024


def lanes(planes: npt.NDArray[np.uint64], bits: int, set_count: int) -> npt.NDArray[np.uint64]:
    """Bit-sliced Bernoulli(``set_count / 2**bits``) lanes.

    ``planes`` has shape ``(m, bits, W)``: for each of ``m`` reports, ``bits`` planes of
    ``W`` words (plane ``i`` holds bit ``i`` of each lane's number, plane 0 the least
    significant).  Returns ``(m, W)`` words whose bits are the lanes.
    """
    c = (1 << bits) - set_count
    m, _, w = planes.shape
    r = np.full((m, w), _ONES, dtype=np.uint64)
    for i in range(bits):
        if (c >> i) & 1:
            np.bitwise_and(r, planes[:, i, :], out=r)
        else:
            np.bitwise_or(r, planes[:, i, :], out=r)
    return r


def pack_words(r: npt.NDArray[np.uint64], k: int) -> npt.NDArray[np.uint8]:
    """``(m, W)`` words of lanes (lane ``j`` is bit ``j % 64`` of word ``j // 64``) as
    ``(m, ceil(k / 8))`` bytes in the packed order (bit ``j`` at bit ``j % 8`` of byte
    ``j // 8``); the lanes from ``k`` on must already be 0."""
    little = r.astype("<u8", copy=False)
    as_bytes = little.view(np.uint8).reshape(r.shape[0], 8 * r.shape[1])
    return np.ascontiguousarray(as_bytes[:, : (k + 7) // 8])


def _packed(reports: Any, k: int) -> npt.NDArray[np.uint8]:
    """``reports`` checked: a 2-D ``uint8`` array of ``ceil(k / 8)`` bytes a row, the
    padding bits zero."""
    if isinstance(reports, str | bytes):
        raise ParameterTypeError(
            f"`reports` must be an array of packed bit vectors, got {type(reports).__name__}."
        )
    arr = np.asarray(reports)
    width = (k + 7) // 8
    if arr.ndim != 2 or arr.shape[1] != width or arr.dtype != np.uint8:
        raise DataError(
            f"`reports` must be a 2-D uint8 array of packed bit vectors, {width} bytes a row "
            f"(k = {k} bits), got an array of dtype {arr.dtype} and shape {arr.shape}."
        )
    if k % 8 and arr.size:
        pad = np.uint8(0xFF ^ ((1 << (k % 8)) - 1))
        bad = np.flatnonzero(arr[:, -1] & pad)
        if bad.size:
            raise DataError(
                f"`reports` must have the padding bits after bit k - 1 = {k - 1} zero, got "
                f"report {int(bad[0])} with one set."
            )
    return arr


#: Bit ``b`` of each byte value ``v``: ``_BYTE_BITS[v, b]``.
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.int64)
#: Reports of at most this many bytes are counted by a histogram of each byte column.
_HIST_BYTES = 32


def packed_support_counts(
    reports: Any, k: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    """How many packed reports have each of the ``k`` bits set, and the checked reports.

    Reports of at most ``8 * _HIST_BYTES`` bits: a histogram of each byte column (256
    counts), then ``count(bit 8c + b) = sum_v hist_c[v] ((v >> b) & 1)``, exact in int64.
    Wider ones blockwise: ``_COUNT_ROWS`` rows are unpacked at a time and summed in 16-bit
    counters.  Memory beyond the reports is O(k) either way."""
    arr = _packed(reports, k)
    if arr.shape[1] <= _HIST_BYTES:
        hist = np.zeros((arr.shape[1], 256), dtype=np.int64)
        for c in range(arr.shape[1]):
            hist[c] = np.bincount(arr[:, c], minlength=256)
        return np.asarray((hist @ _BYTE_BITS).reshape(-1)[:k], dtype=np.int64), arr
    counts = np.zeros(k, dtype=np.int64)
    acc = np.empty(k, dtype=np.uint16)
    for start in range(0, arr.shape[0], _COUNT_ROWS):
        bits = np.unpackbits(arr[start : start + _COUNT_ROWS], axis=1, count=k, bitorder="little")
        np.add.reduce(bits, axis=0, dtype=np.uint16, out=acc)
        counts += acc
    return counts, arr


def packed_bit(reports: Any, k: int, j: int) -> npt.NDArray[np.bool_]:
    """Bit ``j`` of each packed report, as booleans."""
    arr = _packed(reports, k)
    return np.asarray((arr[:, j >> 3] >> np.uint8(j & 7)) & np.uint8(1), dtype=np.bool_)


class _PackedSupports:
    """The support counts and supports of reports that are ``k`` packed bits (unary
    encoding, longitudinal unary encoding): a mixin named before the oracle's base."""

    k: int

    def _support_counts(self, reports: Any) -> tuple[npt.NDArray[np.int64], int]:
        counts, arr = packed_support_counts(reports, self.k)
        return counts, int(arr.shape[0])

    def _supports(self, reports: Any, value: int) -> npt.NDArray[np.bool_]:
        return packed_bit(reports, self.k, value)


def indexed_records(
    index: npt.NDArray[np.integer[Any]], bits: npt.NDArray[np.uint8], width: int
) -> npt.NDArray[np.uint8]:
    """``(n, INDEX_BYTES + width)`` record bytes: each report's index (``<u2``), then its
    ``width`` bytes of packed bits."""
    n = index.shape[0]
    out = np.empty((n, INDEX_BYTES + width), dtype=np.uint8)
    out[:, :INDEX_BYTES] = index.astype(_INDEX).view(np.uint8).reshape(n, INDEX_BYTES)
    out[:, INDEX_BYTES:] = bits
    return out


def split_records(
    records: npt.NDArray[Any], width: int, what: str
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    """The indices and packed bits of :func:`indexed_records`'s record bytes; records of
    another shape are refused naming ``what``."""
    rec = np.ascontiguousarray(records, dtype=np.uint8)
    if rec.ndim != 2 or rec.shape[1] != INDEX_BYTES + width:
        raise DataError(
            f"{what} records must be rows of {INDEX_BYTES + width} bytes, got shape {rec.shape}."
        )
    index = rec[:, :INDEX_BYTES].copy().view(_INDEX).reshape(-1).astype(np.int64)
    return index, np.ascontiguousarray(rec[:, INDEX_BYTES:])


def row_popcounts(arr: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
    """The number of set bits of each packed row."""
    if hasattr(np, "bitwise_count"):
        return np.asarray(np.bitwise_count(arr).sum(axis=1, dtype=np.int64))
    table = np.array([bin(b).count("1") for b in range(256)], dtype=np.int64)
    return np.asarray(table[arr].sum(axis=1))


def parity(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The parity (number of set bits mod 2) of each unsigned integer, as 0 or 1."""
    if hasattr(np, "bitwise_count"):
        return np.asarray(np.bitwise_count(values) & 1)
    x = values.astype(np.uint64)
    for shift in (32, 16, 8, 4, 2, 1):
        x = x ^ (x >> np.uint64(shift))
    return np.asarray(x & np.uint64(1))
