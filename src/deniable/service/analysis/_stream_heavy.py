"""Heavy-hitter streams (PEM, TreeHist, SFP): each UTC day's discovered strings, computed
from the day's stored records by the library's own decoding
(:func:`deniable.distributed.aggregate_heavy_stream`, for SFP
:func:`deniable.distributed.aggregate_sfp_stream`, in this process).

**How a day is decoded.**  A device's record carries its group, drawn afresh for every
report and independently of its string, so a day's records are a sample of every group:
round ``j`` of the day's estimate reads the day's records of group ``j`` only
(:meth:`deniable.oracles.PEM.estimate_counts`), with the server's ``top_k`` and ``alpha``
of the stream's protocol (16 and 0.05 unless set).  Days are decoded separately, never
pooled.  The rounds need a report in every group; a day with a group empty is listed with
its number of reports, no strings and the reason.  An SFP day is the
:class:`~deniable.oracles.SFPResult` of its tallies (each position's fragment sketch and
the whole-string sketch; its ``alpha`` the protocol's, 0.01 unless set): no group to miss.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deniable.exceptions import DataError
from deniable.oracles import PEM, SFP, TreeHist

__all__ = ["heavy_day", "is_heavy"]


def is_heavy(oracle: Any) -> bool:
    """Whether ``oracle`` is a heavy-hitter protocol (its stream lists discovered strings)."""
    return isinstance(oracle, PEM | TreeHist | SFP)


def heavy_day(root: str | Path, stream: str, protocol: Any, day: str, level: float) -> Any:
    """The ``to_dict(level)`` of the :class:`~deniable.oracles.HeavyHitters` of ``stream``'s
    records of ``day`` (module docstring); a day whose rounds cannot run (a group without a
    report) is ``{"method", "n", "heavy_hitters": [], "rounds": [], "undecided": why}``."""
    import pyarrow.parquet as pq

    from deniable.distributed import aggregate_heavy_stream, aggregate_sfp_stream, stream_files

    if isinstance(protocol, SFP):  # tallies: every day's reports estimate
        return aggregate_sfp_stream(
            root, stream, start=day, end=day, scheduler="synchronous", level=level
        ).to_dict()
    try:
        found = aggregate_heavy_stream(
            root, stream, start=day, end=day, scheduler="synchronous",
            top_k=protocol.top_k, alpha=protocol.alpha, level=level,
        )  # fmt: skip
    except DataError as exc:
        if "a report in every group" not in str(exc):
            raise
        files = stream_files(root, stream, start=day, end=day)
        n = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        return {
            "method": protocol.method,
            "n": n,
            "alpha": protocol.alpha,
            "level": level,
            "heavy_hitters": [],
            "rounds": [],
            "undecided": (
                f"{exc} The rounds need a report in each of the {len(protocol.levels)} "
                "groups; this day has too few reports."
            ),
        }
    out: dict[str, Any] = found.to_dict()
    return out
