"""Reading telemetry streams: the partition files of a stream's days, their tally (in
process or on a Dask cluster), and the cleaning of temporary files a killed writer left
(the layout and the writing are in :mod:`._streams`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deniable.designs import Tally
from deniable.distributed._sources import require_dask, resolve_mechanism
from deniable.distributed._streams import (
    STREAM_SPEC_FILE,
    _day,
    _days,
    _same_oracle,
    _stored_key,
    _stream_id,
)
from deniable.exceptions import DataError, ParameterError

__all__ = [
    "CLEAN_AFTER",
    "aggregate_heavy_stream",
    "aggregate_sfp_stream",
    "aggregate_stream",
    "clean_stream",
    "stream_files",
    "stream_oracle",
]

#: Seconds a temporary file must be old before :func:`clean_stream` removes it by default.
CLEAN_AFTER = 3600.0


def stream_oracle(root: str | os.PathLike[str], stream: str) -> Any:
    """The oracle stored for ``stream`` (its ``_stream.json``): a frequency oracle, RAPPOR,
    a count mean sketch (CMS, HCMS), PEM or TreeHist, SFP, a range mechanism or Square
    Wave, whatever its key names."""
    sid = _stream_id(stream)
    key = _stored_key(Path(root), sid)
    if key is None:
        raise DataError(f"no stream {sid!r} under {os.fspath(root)!r} (no {STREAM_SPEC_FILE}).")
    return resolve_mechanism(key)


def stream_files(
    root: str | os.PathLike[str], stream: str, *, start: Any = None, end: Any = None
) -> list[Path]:
    """The Parquet files of ``stream`` for the days ``start .. end`` (both included; all
    days by default), in order of day then of writing; temporary files are skipped."""
    sid = _stream_id(stream)
    first = None if start is None else _day(start, "start")
    last = None if end is None else _day(end, "end")
    if first is not None and last is not None and first > last:
        raise ParameterError(f"`start` must not be after `end`, got {first} > {last}.")
    out: list[Path] = []
    for when, folder in _days(Path(root), sid):
        if (first is None or when >= first) and (last is None or when <= last):
            out.extend(sorted(p for p in folder.glob("part-*.parquet") if p.is_file()))
    return out


def aggregate_stream(
    root: str | os.PathLike[str],
    stream: str,
    mechanism: Any = None,
    *,
    start: Any = None,
    end: Any = None,
    **options: Any,
) -> Tally:
    """The tally of ``stream``'s reports of the days ``start .. end`` (all by default),
    computed by :func:`~deniable.distributed.aggregate` (``options``: ``scheduler``,
    ``batch``, ``progress``, ...; ``scheduler=None`` starts a local Dask cluster,
    ``"synchronous"`` counts in this process).  The stream's stored oracle is used, and a
    ``mechanism`` given must be it; no file in the range is the tally of no reports."""
    from deniable.distributed._aggregate import _tally_none, aggregate

    require_dask()
    sid = _stream_id(stream)
    stored = stream_oracle(root, sid)
    if mechanism is not None:
        _same_oracle(Path(root), sid, resolve_mechanism(mechanism), create=False)
    if _is_heavy(stored):
        raise DataError(
            f"stream {sid!r} is a {stored.name} stream: its reports are estimated round by "
            "round, not tallied (aggregate_heavy_stream)."
        )
    if _is_sfp(stored):
        raise DataError(
            f"stream {sid!r} is {'an' if stored.name == 'sfp' else 'a'} {stored.name} stream: "
            "its reports are estimated in stages (aggregate_sfp_stream)."
        )
    files = stream_files(root, sid, start=start, end=end)
    if not files:
        return _tally_none(stored)
    return aggregate(files, stored, **options)


def _is_heavy(oracle: Any) -> bool:
    from deniable.oracles import PEM, TreeHist

    return isinstance(oracle, PEM | TreeHist)


def _is_sfp(oracle: Any) -> bool:
    """SFP or RAPPOR n-grams: strings found in stages (``aggregate_strings``)."""
    from deniable.oracles import SFP, RapporNgram

    return isinstance(oracle, SFP | RapporNgram)


def _staged(
    root: str | os.PathLike[str],
    stream: str,
    start: Any,
    end: Any,
    kind: Callable[[Any], bool],
    named: str,
) -> tuple[Any, list[str]]:
    """The stored protocol of ``stream`` and its partition files of the days ``start ..
    end``, for an estimate in rounds or stages: a protocol ``kind`` refuses (``named``: what
    it must be, "a ... one") or no file is a :class:`~deniable.exceptions.DataError`."""
    require_dask()
    sid = _stream_id(stream)
    stored = stream_oracle(root, sid)
    if not kind(stored):
        raise DataError(
            f"stream {sid!r} is a {stored.name} stream, not {named}: tally it with "
            "aggregate_stream."
        )
    files = stream_files(root, sid, start=start, end=end)
    if not files:
        raise DataError(f"stream {sid!r} has no reports in the days asked for.")
    return stored, [str(f) for f in files]


def aggregate_sfp_stream(
    root: str | os.PathLike[str],
    stream: str,
    *,
    start: Any = None,
    end: Any = None,
    **options: Any,
) -> Any:
    """The strings an SFP or RAPPOR n-gram ``stream``'s reports of the days ``start ..
    end`` (all by default) find, computed by :func:`~deniable.distributed.aggregate_strings`
    from the stream's partitions with its stored protocol (``options``: ``scheduler``,
    ``batch``, ``alpha``, ``max_candidates``, ``level``, n-grams' ``edge_threshold``, ...;
    ``"synchronous"`` counts in this process): the tallies add over the partitions, so the
    :class:`~deniable.oracles.SFPResult` equals the protocol's ``estimate`` of the same
    reports in process (the :class:`~deniable.oracles.NgramDiscovery` its ``discover``).  A
    stream of another oracle, or days without reports, is a
    :class:`~deniable.exceptions.DataError`."""
    from deniable.distributed._strings import aggregate_strings

    stored, files = _staged(root, stream, start, end, _is_sfp, "an SFP or RAPPOR n-gram one")
    return aggregate_strings(files, stored.key, **options)


def aggregate_heavy_stream(
    root: str | os.PathLike[str],
    stream: str,
    *,
    start: Any = None,
    end: Any = None,
    **options: Any,
) -> Any:
    """The heavy hitters of a PEM or TreeHist ``stream``'s reports of the days ``start ..
    end`` (all by default), computed by :func:`~deniable.distributed.aggregate_heavy_hitters`
    from the stream's partitions with its stored protocol (``options``: ``scheduler``,
    ``batch``, ``top_k``, ``alpha``, ``level``, ...; ``"synchronous"`` counts in this
    process): every round reads the reports of its group among all of the days' reports, so
    the result equals the protocol's ``estimate`` of them in process.  A stream of another
    oracle, or days without reports, is a :class:`~deniable.exceptions.DataError`; so is a
    group without a report (the rounds need one in every group)."""
    from deniable.distributed._heavy import aggregate_heavy_hitters

    stored, files = _staged(
        root, stream, start, end, _is_heavy, "a heavy-hitter one (PEM, TreeHist)"
    )
    return aggregate_heavy_hitters(files, stored.key, **options)


def clean_stream(
    root: str | os.PathLike[str], stream: str, *, older_than: float = CLEAN_AFTER
) -> list[Path]:
    """Remove the temporary files a killed writer left in ``stream``'s partitions (hidden
    ``.part-*.tmp`` files at least ``older_than`` seconds old, so that a write in progress
    is left alone) and return them.  Readers ignore these files whether or not they are
    removed."""
    if not isinstance(older_than, int | float) or isinstance(older_than, bool) or older_than < 0:
        raise ParameterError(f"`older_than` must be seconds >= 0, got {older_than!r}.")
    sid = _stream_id(stream)
    cutoff = time.time() - float(older_than)
    removed = []
    for _, folder in _days(Path(root), sid):
        for path in folder.glob(".part-*.tmp"):
            try:
                if path.stat().st_mtime <= cutoff:
                    path.unlink()
                    removed.append(path)
            except FileNotFoundError:
                continue
    return sorted(removed)
