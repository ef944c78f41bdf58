"""`aggregate_strings`: SFP and RAPPOR's n-grams estimated from report tables on Dask.

**SFP** (:class:`~deniable.oracles.SFP`): its tally (each position's fragment-sketch tally
and the whole-string sketch's) adds over any split of the reports, so it is one map-reduce
as :func:`~deniable.distributed.aggregate` does for an oracle: every partition of the
tables tallies its records, the partial tallies (as one row of integers) are added in a
tree, and ``SFP.estimate`` of the sum **equals** the estimate of the same reports in
process (integer addition is exact).

**RAPPOR n-grams** (:class:`~deniable.oracles.RapporNgram`), two passes over the tables:

1. each partition tallies its n-gram reports position by position and its full-string
   reports (integers, added in a tree); the client decodes each position's n-grams
   (step 1 of ``deniable.oracles._rappor_ngram_decode``);
2. for each pair of positions, the EM that links their significant n-grams needs the
   likelihood of every report of the pair given each of them: each partition computes
   its reports' likelihoods (``(reports, significant n-grams + 1)`` floats a pair), the
   client joins them in the tables' order and runs the EM, then steps 3 and 4 from the
   full-string tally.

The tallies are the in-process ones and the likelihoods the same rows in the same order,
so the strings, their frequencies and intervals equal ``RapporNgram.discover`` of the same
reports read in the tables' order (the EM's sums are over the same rows; a row's
likelihood computed in a smaller batch may differ in its last bits, which moves no edge
but one exactly at its threshold).  Only tallies, likelihoods and the protocol's
parameters cross a process boundary.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deniable.designs import Tally
from deniable.distributed._aggregate import (
    CONNECT_TIMEOUT,
    DEFAULT_BATCH,
    LOCAL_WORKERS,
    _run,
    _tasks,
)
from deniable.distributed._heavy import ProtocolTask, _session
from deniable.distributed._sources import checked_call
from deniable.exceptions import DataError, DeniableError, ParameterTypeError

__all__ = ["aggregate_strings"]


def _sizes(protocol: Any) -> list[int]:
    """The cells of each tally a partition's row of integers holds, in order."""
    from deniable.oracles import SFP, sfp_from_records, string_record

    if isinstance(protocol, SFP):  # the cells of the tally of no reports
        dtype, width = string_record(protocol)
        empty = protocol.tally(sfp_from_records(protocol, np.empty((0, width), dtype=dtype)))
        return [t.counts.size for t in (*empty.fragments, empty.words)]
    cells = [protocol.ngram.cohorts * (protocol.ngram.m + 1)] * protocol.positions
    full = protocol.full
    return cells + ([] if full is None else [full.cohorts * (full.m + 1)])


@dataclass(frozen=True)
class StringTallies(ProtocolTask):
    """The tallies of a partition's records of ``protocol`` (SFP, or RAPPOR n-grams' pass
    1), as one :class:`~deniable.designs.Tally` of their cells end to end."""

    def tally(self, records: Any) -> Tally:
        """The cells of the partition's tallies (:func:`_sizes`), end to end."""
        from deniable.oracles import SFP, ngram_from_records, sfp_from_records

        rec = np.asarray(records)
        mark = f"{self.key}#tallies"
        if isinstance(self.protocol, SFP):
            t = self.protocol.tally(sfp_from_records(self.protocol, rec))
            return Tally(np.concatenate([x.counts for x in (*t.fragments, t.words)]), mark)
        if not rec.shape[0]:  # no devices: no reports of any position
            return Tally(np.zeros(sum(_sizes(self.protocol)), dtype=np.int64), mark)
        ng = self.protocol
        rep = ngram_from_records(ng, rec)
        flat = rep.positions.reshape(-1)
        parts = [ng.ngram.tally(rep.ngrams[flat == j]).counts for j in range(ng.positions)]
        if ng.full is not None and rep.full is not None:
            parts.append(ng.full.tally(rep.full).counts)
        return Tally(np.concatenate(parts), mark)


def _split(protocol: Any, total: Tally) -> list[Tally]:
    """The tallies of :class:`StringTallies`' row, each bound to its mechanism."""
    from deniable.oracles import SFP

    counts = np.asarray(total.counts)
    bounds = np.cumsum([0, *_sizes(protocol)])
    if isinstance(protocol, SFP):
        keys = [protocol.fragment_sketch.key] * protocol.positions + [protocol.word_sketch.key]
    else:
        keys = [protocol.ngram.key] * protocol.positions
        keys += [] if protocol.full is None else [protocol.full.key]
    return [Tally(counts[a:b], k) for a, b, k in zip(bounds[:-1], bounds[1:], keys, strict=True)]


@dataclass(frozen=True)
class PairRows:
    """Per pair of positions, the likelihood rows of a partition's reports (``+`` joins two
    partitions' rows, the left's first: the tables' order)."""

    rows: dict[tuple[int, int], tuple[Any, Any]] = field(default_factory=dict)

    def __add__(self, other: PairRows) -> PairRows:
        keys = dict.fromkeys([*self.rows, *other.rows])
        joined: dict[tuple[int, int], tuple[Any, Any]] = {}
        for k in keys:
            mine, theirs = self.rows.get(k), other.rows.get(k)
            if mine is None or theirs is None:
                one = mine if theirs is None else theirs
                assert one is not None
                joined[k] = one
            else:
                joined[k] = (np.concatenate([mine[0], theirs[0]]),
                             np.concatenate([mine[1], theirs[1]]))  # fmt: skip
        return PairRows(joined)


@dataclass(frozen=True)
class StringPairs(ProtocolTask):
    """Pass 2 of RAPPOR n-grams: a partition's likelihood rows of each pair ``labels``
    names (the labels of its two positions' significant n-grams)."""

    labels: dict[tuple[int, int], tuple[list[str], list[str]]]

    def tally(self, records: Any) -> PairRows:
        """The likelihood rows of the partition's reports of each pair."""
        from deniable.oracles import ngram_from_records, pair_likelihoods

        rec = np.asarray(records)
        if not rec.shape[0]:
            return PairRows()
        rep = ngram_from_records(self.protocol, rec)
        return PairRows(pair_likelihoods(self.protocol, rep, self.labels))


def _devices(protocol: Any, tallies: list[Tally]) -> int:
    """The devices of RAPPOR n-grams' tallies: its full reports, one a device, or its
    n-gram reports over ``2 pairs`` a device (each RAPPOR tally's column ``m`` counts)."""

    def reports(rappor: Any, tally: Tally) -> int:
        cells = np.asarray(tally.counts).reshape(rappor.cohorts, rappor.m + 1)
        return int(cells[:, rappor.m].sum())

    if protocol.full is not None:
        return reports(protocol.full, tallies[-1])
    grams = sum(reports(protocol.ngram, t) for t in tallies[: protocol.positions])
    return int(grams // (2 * protocol.pairs))


def _gather(tasks: list[Any], where: Any) -> PairRows:
    """The partitions' rows joined in the tasks' order (the tables' order)."""
    import dask

    if where == "synchronous":
        parts = dask.compute(*tasks, scheduler="synchronous")
    else:
        parts = where.gather(where.compute(tasks))
    total = PairRows()
    for part in parts:
        total = total + part
    return total


def aggregate_strings(
    source: Any,
    mechanism: Any = None,
    *,
    scheduler: Any = None,
    columns: Sequence[str] | None = None,
    batch: int = DEFAULT_BATCH,
    format: str | None = None,
    local_workers: int = LOCAL_WORKERS,
    timeout: float = CONNECT_TIMEOUT,
    alpha: float | None = None,
    edge_threshold: float = 0.02,
    level: float = 0.95,
    max_candidates: int | None = None,
) -> Any:
    """The strings SFP or RAPPOR's n-grams find in Parquet or CSV report tables, their
    tallies (and the n-grams' likelihoods) computed with Dask (module docstring).

    Parameters
    ----------
    source, scheduler, columns, batch, format, local_workers, timeout
        As for :func:`~deniable.distributed.aggregate` (the tables' columns:
        ``report_0 ..``, the records of ``deniable.oracles._string_files``).
    mechanism : SFP, RapporNgram or str, optional
        The protocol or its key (``sfp{...}``, ``rappor-ngram{...}``).  Default: the key
        the Parquet files carry (a CSV table needs it).
    alpha : float, optional
        The family-wise level of each stage (default: SFP's own, 0.01 from a key; the
        n-grams' 0.05).
    edge_threshold : float
        RAPPOR n-grams: the joint frequency that links two n-grams.
    level : float
        SFP: the level of the intervals (the n-grams' are ``NgramDiscovery.ci(level)``).
    max_candidates : int, optional
        The most candidate strings: SFP's a puzzle value assembles, in ``[1, 2^20]``
        (default: the protocol's, 1024 from a key); RAPPOR n-grams' chains of joined
        n-grams, in ``[1, 10^6]`` (default 10,000; more chains is a
        :class:`~deniable.exceptions.ParameterError` naming it, as a value out of range).

    Returns
    -------
    SFPResult or NgramDiscovery
        Equal to ``SFP.estimate`` / ``RapporNgram.discover`` of the same reports in process.

    A table of another protocol or a record its mechanism refuses raises one
    :class:`~deniable.exceptions.DataError` naming the file.  Nothing is written.
    """
    from deniable.oracles import SFP, RapporNgram, SFPTally, discover_tallies, sfp_from_key

    size, workers, found = checked_call(source, mechanism, batch, format, local_workers)
    if not isinstance(found, SFP | RapporNgram):
        raise ParameterTypeError(
            f"`mechanism` must be SFP or RapporNgram or its key, got "
            f"{getattr(found, 'key', type(found).__name__)}."
        )
    protocol: Any = found
    if isinstance(found, SFP) and alpha is not None:  # the server's choice
        protocol = sfp_from_key(found.key, alpha=alpha, max_candidates=found.max_candidates)
    if isinstance(found, SFP) and max_candidates is not None:  # SFP checks it, naming it
        protocol = dataclasses.replace(protocol, max_candidates=max_candidates)
    with _session(scheduler, workers, timeout) as where:
        try:
            tasks = _tasks(StringTallies(protocol), source, format, columns, size)
            tallies = _split(protocol, _run(tasks, where, workers, timeout, None))
            if isinstance(protocol, SFP):
                return protocol.estimate(SFPTally(tuple(tallies[:-1]), tallies[-1],
                                                  protocol.key), level=level)  # fmt: skip

            def loglik(pairs: Any) -> Any:  # pass 2: one more read of the tables
                labels = {pair: (list(a), list(b)) for pair, (a, b) in pairs.items()}
                tasks = _tasks(StringPairs(protocol, labels), source, format, columns, size)
                return _gather(tasks, where).rows

            full = None if protocol.full is None else tallies[-1]
            n = _devices(protocol, tallies)
            return discover_tallies(
                protocol, n, tallies[: protocol.positions], full, loglik,
                alpha=0.05 if alpha is None else alpha, edge_threshold=edge_threshold,
                max_candidates=10_000 if max_candidates is None else max_candidates,
            )  # fmt: skip
        except DeniableError:
            raise
        except Exception as exc:  # pragma: no cover - _run wraps the cluster's own
            raise DataError(f"aggregation failed: {type(exc).__name__}: {exc}") from None
