"""The report-file form of the mechanisms of ordered values (``deniable.oracles._files``
writes and reads it) and the mechanism a key names.

**A range mechanism's record** (:class:`~deniable.oracles.HierarchicalHistogram`,
:class:`~deniable.oracles.HaarHRR`): its level oracles' reports share one item type (the
same oracle at every level: packed bits are bytes, a Hadamard response's report an
integer, a hashed report ``<u8`` words, k-ary randomized response's category an unsigned
integer, the widest level's type for every level), so a
report is the device's level ``l`` (a little-endian ``uint16``: two items of a byte type,
else one item) then the level oracle's report, its items padded with zeros to the widest
level's ``W``.  A padding item that is not zero, or a level past the last, is refused.

**A Square Wave record** is its cell, one ``<u2`` (``M = G + w <= 20,480`` cells).

**The key** names the mechanism and what builds it:
``hierarchical-histogram{"branching":..,"domain":..,"levels":[...],"oracle":..,
"requested_epsilon":..}``, ``haar-hrr{"domain":..,"levels":[...],"requested_epsilon":..}``
(the level oracles' keys pin what was built), ``square-wave{"b":..,"bins":..,"clip":..,
"epsilon":..,"lower":..,"output_bins":..,"upper":..}``; :func:`range_from_key` parses one
back and refuses a key that is not the canonical key of the mechanism it builds.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, DeniableError, ParameterTypeError
from deniable.oracles._haar import HaarHRR
from deniable.oracles._hierarchical import HierarchicalHistogram
from deniable.oracles._ranges import LevelReports
from deniable.oracles._square_wave import SquareWave

__all__ = [
    "is_range_key",
    "level_layout",
    "range_from_key",
    "range_from_records",
    "range_record",
    "range_records",
]

_MECHANISMS: dict[str, Any] = {
    HierarchicalHistogram.name: HierarchicalHistogram,
    HaarHRR.name: HaarHRR,
    SquareWave.name: SquareWave,
}
_FIELDS = {
    HierarchicalHistogram.name: {"branching", "domain", "levels", "oracle", "requested_epsilon"},
    HaarHRR.name: {"domain", "levels", "requested_epsilon"},
    SquareWave.name: {"b", "bins", "clip", "epsilon", "lower", "output_bins", "upper"},
}
#: The item type of a Square Wave record (its cell).
CELL = np.dtype("<u2")


def is_range_key(key: str) -> bool:
    """Whether ``key`` names a hierarchical histogram, a HaarHRR or a Square Wave."""
    return str(key).partition("{")[0] in _MECHANISMS


def range_from_key(key: str) -> Any:
    """The :class:`~deniable.oracles.HierarchicalHistogram`,
    :class:`~deniable.oracles.HaarHRR` or :class:`~deniable.oracles.SquareWave` whose
    ``key`` is ``key`` (a report file's, a report table's or a tally's); a key that is not
    such a mechanism's canonical one is refused with
    :class:`~deniable.exceptions.DataError`.

    >>> haar = HaarHRR(16, 1.0)
    >>> range_from_key(haar.key) == haar
    True
    """
    from deniable.oracles._spec import _key_parameters, _parameter

    name, params = _key_parameters(key, _MECHANISMS)
    if params is None or set(params) != _FIELDS[name]:
        raise DataError(
            f"`key` must be the key of a hierarchical histogram, a HaarHRR or a Square Wave "
            f"like {HaarHRR(4, 1.0).key}, got {key!r}."
        )
    values: dict[str, Any] = {}
    for n, x in params.items():
        if n == "levels":  # implied by the others: checked by the key comparison below
            continue
        if n in ("oracle", "clip"):
            values[n] = x
        else:
            try:
                values[n] = _parameter(n, x)
            except DeniableError as exc:
                raise DataError(f"`key` {key!r} does not fit {name!r}: {exc}") from None
    try:
        out = _MECHANISMS[name](**values)
    except DeniableError as exc:  # a parameter out of its range, an unknown oracle
        raise DataError(f"`key` {key!r} does not fit {name!r}: {exc}") from None
    if out.key != key:
        raise DataError(f"`key` {key!r} is not canonical (the mechanism's key is {out.key}).")
    return out


def _level_record(oracle: Any) -> tuple[np.dtype[Any], int]:
    """``(item type, items)`` of one report of a level oracle (its own report's layout)."""
    sample = np.asarray(oracle.randomize(np.zeros(1, dtype=np.int64), rng=0))
    width = int(np.prod(sample.shape[1:], dtype=np.int64)) if sample.ndim > 1 else 1
    return sample.dtype.newbyteorder("<"), width


@lru_cache(maxsize=64)
def level_layout(mechanism: Any) -> tuple[np.dtype[Any], int, tuple[int, ...], tuple[bool, ...]]:
    """``(item type, items of the level, items of each level's report, whether each level's
    reports are rows of a 2-D array)`` of a range mechanism's records (module docstring)."""
    kinds = []
    for oracle in mechanism.levels:
        sample = np.asarray(oracle.randomize(np.zeros(1, dtype=np.int64), rng=0))
        kinds.append((_level_record(oracle), sample.ndim > 1))
    # one oracle class at every level; k-ary RR's categories widen with k (uint16, then
    # uint32 past 65,536 values): the widest holds every level's
    dtype = np.result_type(*{d for (d, _), _ in kinds}).newbyteorder("<")
    if dtype.kind not in "iu":  # pragma: no cover - integer reports of one oracle class
        raise DataError(f"the levels of {mechanism.name!r} write reports of several types.")
    return (dtype, max(1, 2 // dtype.itemsize), tuple(w for (_, w), _ in kinds),
            tuple(r for _, r in kinds))  # fmt: skip


def range_record(mechanism: Any) -> tuple[np.dtype[Any], int, bool]:
    """The record of a report (``deniable.oracles._files``): its dtype, items per report and
    whether reports are rows of a 2-D array."""
    if isinstance(mechanism, SquareWave):
        return CELL, 1, False
    if not isinstance(mechanism, HierarchicalHistogram | HaarHRR):
        raise ParameterTypeError(
            f"`mechanism` must be a HierarchicalHistogram, a HaarHRR or a SquareWave, got "
            f"{type(mechanism).__name__}."
        )
    dtype, head, widths, _ = level_layout(mechanism)
    return dtype, head + max(widths), True


def range_records(mechanism: Any, reports: Any) -> npt.NDArray[Any]:
    """The records of ``reports``, checked as ``mechanism.tally`` checks them: a range
    mechanism's ``(n, 1 + W)`` (or ``2 + W`` bytes) rows in device order, Square Wave's
    cells."""
    mechanism.tally(reports)  # every level's reports by its oracle, naming `reports`
    if isinstance(mechanism, SquareWave):
        return np.asarray(reports).astype(CELL)
    dtype, head, widths, _ = level_layout(mechanism)
    level = np.asarray(reports.level, dtype=np.int64)
    out = np.zeros((level.size, head + max(widths)), dtype=dtype)
    if head == 1:
        out[:, 0] = level
    else:  # the level as a little-endian uint16 in the first two bytes
        out[:, :2] = level.astype("<u2").view(np.uint8).reshape(-1, 2)
    for j, width in enumerate(widths):
        rows = np.asarray(reports.reports[j]).reshape(-1, width)
        out[level == j, head : head + width] = rows
    return out


def range_from_records(mechanism: Any, records: npt.NDArray[Any]) -> Any:
    """The reports of records (:class:`~deniable.oracles.LevelReports` in device order, or
    Square Wave's cells); a level past the last or a padding item that is not zero is
    refused (the level oracles check their reports when they are tallied)."""
    if isinstance(mechanism, SquareWave):
        return np.asarray(records).reshape(-1)
    dtype, head, widths, rows2d = level_layout(mechanism)
    rec = np.asarray(records).reshape(-1, head + max(widths))
    if head == 1:
        level = rec[:, 0].astype(np.int64)
    else:
        level = np.ascontiguousarray(rec[:, :2]).view("<u2").reshape(-1).astype(np.int64)
    count = len(widths)
    if level.size and (level.min() < 0 or level.max() >= count):
        bad = int(np.flatnonzero((level < 0) | (level >= count))[0])
        raise DataError(
            f"report {bad}: its level must be in 0..{count - 1} ({mechanism.name} has "
            f"{count} levels), got {int(level[bad])}."
        )
    parts = []
    for j, width in enumerate(widths):
        mine = rec[level == j]
        if np.any(mine[:, head + width :]):
            bad = int(np.flatnonzero(level == j)[np.flatnonzero(mine[:, head + width :].any(1))[0]])
            raise DataError(
                f"report {bad}: the items past its level's report ({width} at level {j}) "
                "must be 0 (padding), got another."
            )
        body = np.ascontiguousarray(mine[:, head : head + width]).astype(dtype.newbyteorder("="))
        parts.append(body if rows2d[j] else body.reshape(-1))
    return LevelReports(level, tuple(parts))
