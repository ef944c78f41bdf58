"""Heavy-hitter streams (PEM, TreeHist, SFP, RAPPOR n-grams): the discovered strings of a
UTC day, or of the page's days pooled, computed from the stored records by the library's
own decoding (:func:`deniable.distributed.aggregate_heavy_stream`, for SFP and RAPPOR
n-grams :func:`deniable.distributed.aggregate_sfp_stream`, in this process).

**How records are decoded.**  A device's record carries its group, drawn afresh for every
report and independently of its string, so the records of any set of days are a sample of
every group: round ``j`` reads those records of group ``j`` only
(:meth:`deniable.oracles.PEM.estimate_counts`), with the stream's answer settings
``top_k`` and ``alpha`` (the spec's ``answers``; 16 and 0.05 unless set:
:mod:`._stream_answers`).  Each day is decoded on its own; the pooled estimate decodes the
records of all the days ``start .. end`` as one sample, which is sound when the devices'
strings are stationary over those days (it then estimates the share of reports carrying
each string: a device reporting on several days counts once a report).  The rounds need a
report in every group; a day (or pool) with a group empty is listed with its number of
reports, no strings and the reason.

An SFP day (or pool) is the :class:`~deniable.oracles.SFPResult` of its reports: each
position's fragment-sketch tally and the whole-string sketch's, summed over the days'
partitions (a device's position is drawn afresh for every report, so the pooled reports
are again a sample of every position), estimated at the stream's ``alpha`` and ``max_candidates``
(its answer settings; 0.01 and 1024, the protocol's, unless set): no group to miss, a
position without reports keeps nothing.

A RAPPOR n-gram day (or pool) is the :class:`~deniable.oracles.NgramDiscovery` of its
reports (:meth:`deniable.oracles.RapporNgram.discover`'s four steps, run on the tallies and
the pairs' likelihoods read from the partitions), at the stream's ``alpha``,
``edge_threshold`` and ``max_candidates`` (0.05, 0.02 and 10,000 unless set), with each
string's Wald interval at the page's level.  A device's cohort and pairs are drawn afresh
for every report, whatever its string, so pooled days are again one sample of reports
(stationary strings assumed, as above); a day too small to find anything lists no string.
A day (or pool) whose joined n-grams form more than ``max_candidates`` chains is listed
undecided (its number of reports, no strings and the reason), as a heavy-hitter day with
a group empty.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

from deniable.exceptions import DataError, ParameterError
from deniable.oracles import PEM, SFP, RapporNgram, TreeHist
from deniable.service.analysis._stream_answers import (
    DEFAULT_ALPHA,
    DEFAULT_EDGE_THRESHOLD,
    DEFAULT_NGRAM_MAX_CANDIDATES,
    DEFAULT_SFP_ALPHA,
    DEFAULT_SFP_MAX_CANDIDATES,
    AnswerSettings,
)

__all__ = ["heavy_day", "is_heavy"]


def is_heavy(oracle: Any) -> bool:
    """Whether ``oracle`` is a heavy-hitter protocol (its stream lists discovered strings)."""
    return isinstance(oracle, PEM | TreeHist | SFP | RapporNgram)


def heavy_day(
    root: str | Path,
    stream: str,
    protocol: Any,
    day: str | dt.date,
    level: float,
    settings: AnswerSettings | None = None,
    *,
    end: str | dt.date | None = None,
) -> Any:
    """The ``to_dict()`` of the :class:`~deniable.oracles.HeavyHitters` of ``stream``'s
    records of ``day`` (of the days ``day .. end`` pooled when ``end`` is given: module
    docstring), decoded at ``settings`` (the defaults when None); when the rounds cannot
    run (a group without a report) ``{"method", "n", "heavy_hitters": [], "rounds": [],
    "undecided": why}``; for SFP the ``to_dict()`` of its
    :class:`~deniable.oracles.SFPResult` at the settings' ``alpha`` and
    ``max_candidates``; for RAPPOR n-grams the ``to_dict(level)`` of its
    :class:`~deniable.oracles.NgramDiscovery` at the settings' ``alpha``,
    ``edge_threshold`` and ``max_candidates`` (more chains than that: the keys of
    ``to_dict(level)``, no n-gram, candidate or string, and ``"undecided": why``)."""
    from deniable.distributed import aggregate_heavy_stream, aggregate_sfp_stream

    last = day if end is None else end
    when = "this day" if end is None else "these days"
    if isinstance(protocol, RapporNgram):  # tallies and the pairs' likelihoods
        alpha = DEFAULT_ALPHA if settings is None else settings.alpha
        edge = DEFAULT_EDGE_THRESHOLD if settings is None else settings.edge_threshold
        cap = DEFAULT_NGRAM_MAX_CANDIDATES if settings is None else settings.max_candidates
        try:
            found = aggregate_sfp_stream(
                root, stream, start=day, end=last, scheduler="synchronous", alpha=alpha,
                edge_threshold=edge, max_candidates=cap,
            )  # fmt: skip
        except ParameterError as exc:
            if not str(exc).startswith("`max_candidates`"):
                raise
            return {
                "n": _reports(root, stream, day, last),
                "alpha": alpha,
                "ngram_threshold": None,
                "edge_threshold": edge,
                "string_threshold": None,
                "ngrams": [],
                "candidates": [],
                "strings": [],
                "level": level,
                "undecided": (
                    f"{exc} No string is listed for {when}: the stream's answer settings "
                    f"(max_candidates {cap}, edge_threshold {edge:g}) are fixed with its spec."
                ),
            }
        ngram: dict[str, Any] = found.to_dict(level)
        return ngram
    if isinstance(protocol, SFP):  # tallies: the days' reports estimate
        alpha = DEFAULT_SFP_ALPHA if settings is None else settings.alpha
        most = DEFAULT_SFP_MAX_CANDIDATES if settings is None else settings.max_candidates
        return aggregate_sfp_stream(
            root, stream, start=day, end=last, scheduler="synchronous", level=level,
            alpha=alpha, max_candidates=most,
        ).to_dict()  # fmt: skip
    chosen = settings or AnswerSettings("heavy")
    try:
        found = aggregate_heavy_stream(
            root, stream, start=day, end=last, scheduler="synchronous",
            top_k=chosen.top_k, alpha=chosen.alpha, level=level,
        )  # fmt: skip
    except DataError as exc:
        if "a report in every group" not in str(exc):
            raise
        empty = re.search(r"got none in (\d+)", str(exc))
        which = f"group {empty.group(1)}" if empty else "a group"
        return {
            "method": protocol.method,
            "n": _reports(root, stream, day, last),
            "alpha": chosen.alpha,
            "level": level,
            "heavy_hitters": [],
            "rounds": [],
            "undecided": (
                f"{exc} The rounds need a report in each of the {len(protocol.levels)} "
                f"groups; {which} has no report on {when}."
            ),
        }
    out: dict[str, Any] = found.to_dict()
    return out


def _reports(root: str | Path, stream: str, day: str | dt.date, last: str | dt.date) -> int:
    """The reports (one a row) of ``stream``'s partitions of the days ``day .. last``."""
    import pyarrow.parquet as pq

    from deniable.distributed import stream_files

    files = stream_files(root, stream, start=day, end=last)
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)
