"""The heavy-hitter protocols' records in a report batch (``deniable.batch/1``, :mod:`._batch`).

A record of :class:`~deniable.oracles.PEM` or :class:`~deniable.oracles.TreeHist` is ``2 +
l W`` little-endian ``uint64`` words (a device's group ``j``, the ``l`` rows of its hash in
``W`` words each, its bucket ``y``: ``oracles._heavy_files``), and a JSON report the list of
those words as numbers.  Each record is checked whole, naming its index in the batch: its
group in ``0 .. G - 1``, no row bit past its group's prefix length ``levels[j]`` (a row of
another group's length would be counted in the wrong round), its bucket below ``g``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError

__all__ = ["check_heavy_records"]


def _mask(bits: int, words: int) -> list[int]:
    """The words of a prefix of ``bits`` bits, left-aligned (``oracles._strings``)."""
    out = []
    for i in range(words):
        held = max(0, min(64, bits - 64 * i))
        out.append(((1 << held) - 1) << (64 - held))
    return out


def check_heavy_records(protocol: Any, records: Any, what: str) -> npt.NDArray[np.uint64]:
    """``records`` as checked ``(n, 2 + l W)`` uint64 records of ``protocol`` (module
    docstring); the first bad one is a :class:`~deniable.exceptions.DataError` naming
    ``what``, the record's index and what is wrong."""
    levels = protocol.levels
    l_rows, w, g = protocol.base.bucket_bits, protocol.words, protocol.base.g
    width = 2 + l_rows * w
    rec = np.asarray(records)
    if rec.ndim != 2 or rec.shape[1] != width or rec.dtype.kind not in "iu":
        raise DataError(
            f"{what}: the records of {protocol.key} must be rows of {width} uint64 words (the "
            f"group, {l_rows} rows of {w} words, the bucket), got dtype {rec.dtype} and shape "
            f"{rec.shape}."
        )
    rec = rec.astype(np.uint64, copy=False)
    groups = rec[:, 0]
    bad = np.flatnonzero(groups >= np.uint64(len(levels)))
    if bad.size:
        i = int(bad[0])
        raise DataError(
            f"{what}: report {i} has group {int(groups[i])}; a group must be in "
            f"0..{len(levels) - 1} ({len(levels)} prefix lengths {levels[0]}..{levels[-1]})."
        )
    masks = np.array([_mask(b, w) * l_rows for b in levels], dtype=np.uint64)
    stray = (rec[:, 1:-1] & ~masks[groups.astype(np.intp)]).any(axis=1)
    bad = np.flatnonzero(stray)
    if bad.size:
        i = int(bad[0])
        raise DataError(
            f"{what}: report {i} of group {int(groups[i])} has a row bit past its group's "
            f"prefix length of {levels[int(groups[i])]} bits; rows must be masked to it."
        )
    bad = np.flatnonzero(rec[:, -1] >= np.uint64(g))
    if bad.size:
        i = int(bad[0])
        raise DataError(
            f"{what}: report {i} has bucket {int(rec[i, -1])}; a bucket must be in "
            f"0..{g - 1} (g = {g})."
        )
    return rec
