"""The heavy-hitter protocols' report-file form (:class:`~deniable.oracles.PEM`,
:class:`~deniable.oracles.TreeHist`; ``deniable.oracles._files`` writes it) and the
protocol a key names.

**What a device sends** does not depend on anything the server decides: the device's group
``j`` (drawn independently of its string) and its one report ``(A, y)`` of its prefix of
``levels[j]`` bits (``PrefixOLH``: ``l W`` row words, then the bucket).  The rounds of the
estimate (which prefixes survive) are the server's alone, computed afterwards from the
stored reports, so one file holds every round: a report's group says which round reads it.

**A record** is ``2 + l W`` little-endian ``uint64`` words: the group ``j`` (``0 ..
G - 1``), then the report's ``l W + 1`` words as :class:`~deniable.oracles.HeavyHitterReports`
holds them.  Every report of one protocol has the same width (``W = ceil(max_bytes / 8)``
words a prefix, whatever its length: the bits past it are zero), so the records are fixed
size.  A report table (``deniable.distributed``) has the columns ``group`` (``uint16``:
at most ``8 * 64 = 512`` groups) and ``report_0 .. report_{l W}`` (``uint64``).

**The key** names the protocol and every parameter the reports depend on:
``pem{"epsilon":..,"g":..,"max_bytes":..,"start_bits":..,"step_bits":..}`` or
``treehist{"epsilon":..,"g":..,"max_bytes":..}`` (``g`` resolved), with ``"alphabet"`` (its
sorted bytes in lowercase hex) only when the protocol has one: a key without it names the
protocol of every byte, as before.  ``alpha`` and ``top_k`` are not in it: the server
chooses them when it estimates, from the same reports.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.exceptions import DataError, DeniableError
from deniable.oracles._file_header import read_whole_file
from deniable.oracles._heavy_hitters import PEM, HeavyHitterReports, TreeHist
from deniable.oracles._prefix_alphabet import alphabet_from_hex

__all__ = [
    "heavy_from_key",
    "heavy_from_records",
    "heavy_key",
    "heavy_record",
    "heavy_records",
    "is_heavy_key",
    "read_heavy_file",
]

HeavyHitterProtocol = PEM | TreeHist
_PROTOCOLS: dict[str, type[PEM] | type[TreeHist]] = {"pem": PEM, "treehist": TreeHist}
_FIELDS = {
    "pem": {"epsilon", "g", "max_bytes", "start_bits", "step_bits"},
    "treehist": {"epsilon", "g", "max_bytes"},
}
#: The most bytes of reports :func:`read_heavy_file` holds in memory (the rounds need every
#: report of a group at once).
MAX_READ_BYTES = 1 << 31


def heavy_key(protocol: HeavyHitterProtocol) -> str:
    """The key of ``protocol``'s reports (module docstring).

    >>> heavy_key(TreeHist(epsilon=1.0, max_bytes=2))
    'treehist{"epsilon":"1","g":4,"max_bytes":2}'
    """
    return protocol.key


def is_heavy_key(key: str) -> bool:
    """Whether ``key`` names a heavy-hitter protocol (``pem{...}`` or ``treehist{...}``)."""
    return str(key).partition("{")[0] in _PROTOCOLS


def heavy_from_key(key: str, *, top_k: int = 16, alpha: float | None = 0.05) -> HeavyHitterProtocol:
    """The :class:`~deniable.oracles.PEM` or :class:`~deniable.oracles.TreeHist` whose
    reports ``key`` names, estimating with ``top_k`` and ``alpha`` (not in the key: the
    server's choice); a key that is not a protocol's canonical one is refused with
    :class:`~deniable.exceptions.DataError`.

    >>> pem = PEM(epsilon=2.0, max_bytes=4, step_bits=8)
    >>> back = heavy_from_key(heavy_key(pem))
    >>> (back.levels, back.base) == (pem.levels, pem.base), back.g
    (True, 8)
    """
    from deniable.oracles._spec import _key_parameters, _parameter

    name, params = _key_parameters(key, _PROTOCOLS)
    if params is None or set(params) - {"alphabet"} != _FIELDS[name]:
        raise DataError(
            f"`key` must be a heavy-hitter protocol's key like "
            f"{heavy_key(TreeHist(epsilon=1.0, max_bytes=2))}, got {key!r}."
        )
    try:
        parsed = {n: _parameter(n, x) for n, x in params.items() if n != "alphabet"}
        if "alphabet" in params:
            parsed["alphabet"] = alphabet_from_hex(params["alphabet"], "the alphabet of `key`")
        out = _PROTOCOLS[name](**parsed, top_k=top_k, alpha=alpha)
    except DeniableError as exc:  # a parameter that is no number, or out of its range
        raise DataError(f"`key` {key!r} does not fit {name!r}: {exc}") from None
    if heavy_key(out) != key:
        raise DataError(f"`key` {key!r} is not canonical (the protocol's key is {heavy_key(out)}).")
    return out


def heavy_record(protocol: HeavyHitterProtocol) -> tuple[np.dtype[Any], int, bool]:
    """The record of a report (``deniable.oracles._files``): ``<u8``, ``2 + l W`` words,
    rows of a 2-D array."""
    return np.dtype("<u8"), 1 + protocol.oracle(protocol.levels[0]).report_width, True


def heavy_records(protocol: HeavyHitterProtocol, reports: Any) -> npt.NDArray[np.uint64]:
    """The ``(n, 2 + l W)`` records of ``reports`` (a
    :class:`~deniable.oracles.HeavyHitterReports` of ``protocol``), each group's reports
    checked by its oracle: the group, then the report."""
    if not isinstance(reports, HeavyHitterReports) or reports.levels != protocol.levels:
        raise DataError(
            f"`reports` must be the HeavyHitterReports of {heavy_key(protocol)} (levels "
            f"{protocol.levels}), got {type(reports).__name__}."
        )
    parts = []
    for j, (bits, rep) in enumerate(zip(protocol.levels, reports.reports, strict=True)):
        arr = protocol.oracle(bits).check_reports(rep)
        group = np.full((arr.shape[0], 1), j, dtype=np.uint64)
        parts.append(np.concatenate([group, arr], axis=1))
    return np.concatenate(parts, axis=0)


def heavy_from_records(protocol: HeavyHitterProtocol, records: Any) -> HeavyHitterReports:
    """The :class:`~deniable.oracles.HeavyHitterReports` of ``(n, 2 + l W)`` records, a
    group out of range or a report its oracle refuses raising
    :class:`~deniable.exceptions.DataError`."""
    _, width, _ = heavy_record(protocol)
    rec = np.asarray(records)
    if rec.ndim != 2 or rec.shape[1] != width or rec.dtype.kind not in "iu":
        raise DataError(
            f"`records` of {heavy_key(protocol)} must be rows of {width} uint64 words (the "
            f"group, then the report), got dtype {rec.dtype} and shape {rec.shape}."
        )
    rec = rec.astype(np.uint64, copy=False)
    groups = rec[:, 0]
    count = len(protocol.levels)
    if rec.shape[0] and int(groups.max()) >= count:
        raise DataError(
            f"`records` must have groups 0..{count - 1} ({count} prefix lengths), got "
            f"{int(groups.max())}."
        )
    order = np.argsort(groups, kind="stable")
    bounds = np.searchsorted(groups[order], np.arange(count + 1, dtype=np.uint64))
    body = rec[order, 1:]
    return HeavyHitterReports(
        protocol.levels,
        tuple(
            protocol.oracle(bits).check_reports(
                np.ascontiguousarray(body[bounds[j] : bounds[j + 1]])
            )
            for j, bits in enumerate(protocol.levels)
        ),
    )


def read_heavy_file(
    protocol: HeavyHitterProtocol,
    path: str | os.PathLike[str],
    *,
    batch: int = 1 << 20,
    max_bytes: int = MAX_READ_BYTES,
    progress: Any = None,
) -> HeavyHitterReports:
    """The reports of a report file of ``protocol`` (its header checked as
    :func:`~deniable.oracles.tally_file` checks one), read ``batch`` reports at a time.
    The rounds need every report at once, so a file of more than ``max_bytes`` of reports
    is refused before any is read; ``progress(done, total)`` after each batch."""
    dtype, width, _ = heavy_record(protocol)
    name, records = read_whole_file(
        path, heavy_key(protocol), (dtype, width), (batch, max_bytes), progress,
        ("reports", "the rounds"),
    )  # fmt: skip
    rec = records.astype(np.uint64, copy=False)
    try:
        return heavy_from_records(protocol, rec)
    except DeniableError as exc:
        raise DataError(f"report file {name!r}: {exc}") from None
