"""The server side of the Sequence Fragment Puzzle that is not a sketch: the puzzle piece,
the strings assembled from the kept fragments of a puzzle value, and the sketch's estimate of
many strings a chunk at a time (``deniable.oracles._sfp``)."""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.designs import Tally
from deniable.oracles._cms_base import CountMeanSketch

__all__ = ["Groups", "assemble", "chunked_estimate", "puzzle_piece"]

FloatArray = npt.NDArray[np.float64]
#: A position's kept records: per puzzle value, ``(estimate, fragment code)``.
Groups = dict[int, list[tuple[float, int]]]
#: The name (and version) of the puzzle-piece hash.
PUZZLE_HASH = "deniable.sfp/1"
#: Candidates estimated at a time (each is hashed in every row).
_CHUNK_HASHES = 1 << 22


def puzzle_piece(strings: list[bytes], bits: int) -> npt.NDArray[np.int64]:
    """``p(s)``: the top ``bits`` bits of SHA-256(``"deniable.sfp/1" || 0x00 || s``)."""
    prefix = PUZZLE_HASH.encode() + b"\x00"
    top = (int.from_bytes(hashlib.sha256(prefix + s).digest()[:4], "big") for s in strings)
    return np.fromiter((t >> (32 - bits) for t in top), dtype=np.int64, count=len(strings))


def decode(row: npt.NDArray[np.int64], symbols: int, alphabet: str | None) -> bytes | None:
    """The string of symbol indices ``row`` (padding ``symbols``), or ``None``: padding
    inside, empty, or bytes that are not UTF-8."""
    pad = row == symbols
    length = int(np.argmax(pad)) if pad.any() else row.size
    if length == 0 or not pad[length:].all():
        return None
    if alphabet is None:
        raw = bytes(row[:length].astype(np.uint8).tobytes())
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return raw
    return "".join(alphabet[i] for i in row[:length]).encode("utf-8")


def assemble(
    kept: list[Groups], symbols: int, alphabet: str | None, puzzle_bits: int, max_candidates: int
) -> tuple[list[bytes], int]:
    """The candidates of the kept records ``kept`` (one ``Groups`` a position): per puzzle
    value kept at every position, the cartesian product of its fragments (fragment code
    ``i (A + 1) + j``), at most ``max_candidates`` (while larger, the position with the most
    fragments, the last on a tie, drops its smallest estimate), each decoded and kept when its
    own puzzle piece is the group's; and how many puzzle values were trimmed."""
    base = symbols + 1
    out: dict[bytes, None] = {}
    trimmed = 0
    for p in sorted(set.intersection(*(set(g) for g in kept)) if kept else ()):
        lists = [sorted(g[p], reverse=True) for g in kept]
        if math.prod(len(x) for x in lists) > max_candidates:
            trimmed += 1
            while math.prod(len(x) for x in lists) > max_candidates:
                longest = max(range(len(lists)), key=lambda i: (len(lists[i]), i))
                lists[longest].pop()
        combos = np.array(list(itertools.product(*[[c for _, c in x] for x in lists])))
        sym = np.stack([combos // base, combos % base], axis=2).reshape(len(combos), -1)
        strings = [s for row in sym if (s := decode(row, symbols, alphabet)) is not None]
        if strings:
            match = puzzle_piece(strings, puzzle_bits) == p
            out.update(dict.fromkeys(s for s, ok in zip(strings, match, strict=True) if ok))
    return list(out), trimmed


def chunked_estimate(
    sketch: CountMeanSketch, tally: Tally, items: Any, string: Callable[[Any], Any]
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The sketch's estimate of the (distinct) strings ``string(x)`` of ``items``, a chunk
    at a time (the strings of one chunk at once in memory)."""
    step = max(1, _CHUNK_HASHES // sketch.k)
    parts = [sketch.estimate(tally, [string(x) for x in items[i : i + step]])
             for i in range(0, len(items), step)]  # fmt: skip
    return (
        np.concatenate([e.values for e in parts]),
        np.concatenate([e.se for e in parts]),
        np.concatenate([e.se_fixed for e in parts]),
    )
