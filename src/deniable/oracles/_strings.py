"""Byte strings as fixed-length bit strings, for the heavy-hitter protocols
(:mod:`deniable.oracles._heavy_hitters`).

An item is a ``str`` (encoded UTF-8) or UTF-8 ``bytes`` of 1 to ``L`` bytes with no NUL
byte; it is padded with NUL bytes to ``L`` bytes and read as the bit string of ``8 L`` bits,
first byte first, most significant bit first.  The prefix of ``s`` bits is then the top
``s`` bits.  A string is held as ``W = ceil(L / 8)`` uint64 words, big-endian and
left-aligned (byte 0 is the top byte of word 0; the bits past ``8 L`` are 0), so the prefix
of ``s`` bits is the words ANDed with :func:`prefix_mask`.  The padding is stripped when a
string is decoded; that is why a NUL byte is refused (it could not be told from padding),
and an empty item too (it would be all padding).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, ParameterTypeError

__all__ = [
    "bytes_of",
    "decode_strings",
    "encode_strings",
    "extend_prefixes",
    "prefix_mask",
    "words_of",
]

WordArray = npt.NDArray[np.uint64]


def _item_at(offsets: npt.NDArray[np.int64], position: int) -> int:
    """The item whose bytes hold ``position`` of the joined buffer (``offsets``: starts)."""
    return int(np.searchsorted(offsets, position, side="right") - 1)


def _not_a_sequence(items: Any) -> bool:
    return isinstance(items, str | bytes | bytearray) or not hasattr(items, "__len__")


def _encoded(items: Any) -> list[bytes]:
    """Each item's UTF-8 bytes.  A sequence of ``str`` only (or of ``bytes`` only) is joined
    on NUL, encoded and split again: C loops, no Python step per device (a NUL inside an
    item makes one piece too many, refused by :func:`encode_strings` as a NUL byte)."""
    if _not_a_sequence(items):
        raise ParameterTypeError(
            "`items` must be a sequence of strings (str, or UTF-8 bytes), got "
            f"{type(items).__name__}."
        )
    seq = list(items)
    if seq and all(isinstance(x, str) for x in seq):
        try:
            pieces = "\x00".join(seq).encode("utf-8").split(b"\x00")
        except UnicodeEncodeError:
            pass  # the item-by-item loop below names the item
        else:
            if len(pieces) == len(seq):
                return pieces
    elif seq and all(isinstance(x, bytes) for x in seq):
        pieces = b"\x00".join(seq).split(b"\x00")
        if len(pieces) == len(seq):
            return pieces
    out: list[bytes] = []
    for i, item in enumerate(seq):  # mixed kinds, or to name the offending item
        if isinstance(item, str):
            try:
                out.append(item.encode("utf-8"))
            except UnicodeEncodeError as exc:
                raise DataError(
                    f"`items[{i}]` must be encodable as UTF-8, got a str that is not (at "
                    f"character {exc.start}: {exc.reason}; the item is not shown)."
                ) from None
        elif isinstance(item, bytes | bytearray):
            out.append(bytes(item))
        else:
            raise ParameterTypeError(
                f"`items[{i}]` must be a str or bytes, got {type(item).__name__}."
            )
    return out


def _str_words(items: Any, max_bytes: int) -> WordArray | None:
    """:func:`encode_strings` of a list or tuple of ``str`` items that are all valid (1 to
    ``max_bytes`` bytes in UTF-8, no NUL) by numpy on one buffer: the items joined on NUL
    and encoded once, split at the NUL bytes, each item's bytes scattered into its padded
    row.  ``None`` for anything else (the general path then encodes the items, or names
    the first one it refuses)."""
    if not isinstance(items, list | tuple) or not items:
        return None
    n = len(items)
    try:  # str.join takes str items only (a TypeError for any other)
        buf = np.frombuffer("\x00".join(items).encode("utf-8"), dtype=np.uint8)
    except (TypeError, UnicodeEncodeError):
        return None
    seps = np.flatnonzero(buf == 0)
    if seps.size != n - 1:
        return None  # a NUL inside an item
    starts = np.concatenate(([0], seps + 1))
    lengths = np.concatenate((seps, [buf.size])) - starts
    if not lengths.all() or int(lengths.max()) > max_bytes:
        return None  # an empty item or one too long: refused, by name, on the general path
    fixed = np.zeros((n, max_bytes), dtype=np.uint8)
    last = buf.size - 1
    for c in range(int(lengths.max())):  # byte c of every item: one gather a column
        column = buf[np.minimum(starts + c, last)]
        column[lengths <= c] = 0  # past the item: padding
        fixed[:, c] = column
    return words_of(fixed)


def encode_strings(items: Any, max_bytes: int) -> WordArray:
    """``items`` as an ``(n, ceil(max_bytes / 8))`` uint64 array (module docstring).

    Refuses, naming the first offending item: an item that is not ``str`` or ``bytes``, an
    empty one, one longer than ``max_bytes`` bytes once encoded, one with a NUL byte, bytes
    that are not valid UTF-8 and a ``str`` that cannot be encoded (a lone surrogate).
    """
    fast = _str_words(items, max_bytes)
    if fast is not None:
        return fast
    enc = _encoded(items)
    n = len(enc)
    if n == 0:
        raise DataError("`items` must hold at least one string, got none.")
    lengths = np.fromiter(map(len, enc), dtype=np.int64, count=n)
    offsets = np.concatenate(([0], np.cumsum(lengths + 1)[:-1])).astype(np.int64)
    empty = np.flatnonzero(lengths == 0)
    if empty.size:
        raise DataError(
            f"`items[{int(empty[0])}]` must be a non-empty string (an empty one is all "
            "padding), got ''."
        )
    long = np.flatnonzero(lengths > max_bytes)
    if long.size:
        i = int(long[0])
        raise DataError(
            f"`items[{i}]` must be at most max_bytes = {max_bytes} bytes in UTF-8, got "
            f"{int(lengths[i])} bytes."
        )
    # one buffer, items separated by a 0x0a byte: an incomplete UTF-8 sequence stays invalid
    joined = b"\n".join(enc)
    buffer = np.frombuffer(joined, dtype=np.uint8)
    nul = np.flatnonzero(buffer == 0)
    if nul.size:
        i = _item_at(offsets, int(nul[0]))
        raise DataError(
            f"`items[{i}]` must not contain a NUL byte (it could not be told from the "
            f"padding), got one at byte {int(nul[0]) - int(offsets[i])} (the item is not "
            "shown)."
        )
    try:
        joined.decode("utf-8")
    except UnicodeDecodeError as exc:
        i = _item_at(offsets, exc.start)
        raise DataError(
            f"`items[{i}]` must be valid UTF-8, got bytes that are not (invalid at byte "
            f"{exc.start - int(offsets[i])}: {exc.reason}; the item is not shown)."
        ) from None
    fixed = np.array(enc, dtype=f"S{max_bytes}").view(np.uint8).reshape(n, max_bytes)
    return words_of(fixed)


def words_of(fixed: npt.NDArray[np.uint8]) -> WordArray:
    """``(m, L)`` bytes as ``(m, ceil(L / 8))`` big-endian, left-aligned uint64 words."""
    m, length = fixed.shape
    w = -(-length // 8)
    padded = np.zeros((m, 8 * w), dtype=np.uint8)
    padded[:, :length] = fixed
    return padded.view(">u8").astype(np.uint64)


def bytes_of(words: WordArray, max_bytes: int) -> npt.NDArray[np.uint8]:
    """The inverse of :func:`words_of`: ``(m, L)`` bytes."""
    return np.ascontiguousarray(words.astype(">u8")).view(np.uint8)[:, :max_bytes]


def prefix_mask(bits: int, words: int) -> WordArray:
    """The ``words`` uint64 words whose top ``bits`` bits (word 0 first) are set."""
    out = np.zeros(words, dtype=np.uint64)
    for j in range(words):
        b = min(64, max(0, bits - 64 * j))
        out[j] = np.uint64(((1 << b) - 1) << (64 - b)) if b else np.uint64(0)
    return out


def extend_prefixes(prefixes: WordArray, bits: int, step: int) -> WordArray:
    """Every prefix of ``bits`` bits followed by each of the ``2**step`` bit patterns:
    ``(m 2**step, W)`` words, prefix ``i`` with pattern ``e`` in row ``i 2**step + e``."""
    m, w = prefixes.shape
    ext = np.arange(1 << step, dtype=np.int64)
    out = np.repeat(prefixes, 1 << step, axis=0)
    tail = np.tile(ext, m)
    for j in range(step):  # bit j of the pattern (from its top) goes to position bits + j
        pos = bits + j
        word, shift = divmod(pos, 64)
        bit = ((tail >> (step - 1 - j)) & 1).astype(np.uint64)
        out[:, word] |= bit << np.uint64(63 - shift)
    del w
    return out


def decode_strings(words: WordArray, max_bytes: int) -> list[str | bytes]:
    """The strings of ``words`` with the padding stripped: ``str`` where the bytes are
    UTF-8, else the ``bytes`` (a candidate assembled from prefixes need not be UTF-8)."""
    raw = bytes_of(words, max_bytes)
    out: list[str | bytes] = []
    for row in raw:  # a few candidates (the final list), not the devices
        b = row.tobytes().rstrip(b"\x00")
        try:
            out.append(b.decode("utf-8"))
        except UnicodeDecodeError:
            out.append(b)
    return out
