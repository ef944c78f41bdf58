"""`aggregate_heavy_hitters`: PEM and TreeHist estimated from report tables on Dask.

The rounds of :class:`~deniable.oracles.PEM` and :class:`~deniable.oracles.TreeHist` are
the server's: round ``j`` counts, among the reports of group ``j``, the support of the
prefixes round ``j - 1`` kept extended by ``step`` bits
(:meth:`~deniable.oracles.PEM.round_counts`).  Support counts add over any split of the
reports, so each round is a map-reduce as :func:`~deniable.distributed.aggregate` does for a
tally: every partition of the tables (a Parquet row-group run, a CSV block) counts the
round's candidates among its reports of group ``j`` and the reports of each group, and the
partial counts are added in a tree.  The protocol's
:meth:`~deniable.oracles.PEM.estimate_counts` then keeps the round's candidates exactly as
in process, so the result **equals** ``protocol.estimate`` of the same reports.  The tables
are read once a round (``G`` rounds: ``len(protocol.levels)``); only the kept prefixes
(at most ``top_k`` a round), the counts and the protocol's parameters cross a process
boundary.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from deniable.designs import Tally
from deniable.distributed._aggregate import (
    CONNECT_TIMEOUT,
    DEFAULT_BATCH,
    LOCAL_WORKERS,
    _run,
    _tasks,
    local_client,
)
from deniable.distributed._sources import checked_call
from deniable.exceptions import DataError, DeniableError, ParameterTypeError

__all__ = ["HeavyRound", "aggregate_heavy_hitters"]


@dataclass(frozen=True)
class ProtocolTask:
    """A step of a protocol estimated in rounds or passes, as an oracle ``aggregate``
    tallies with: its ``protocol``'s key and name."""

    protocol: Any

    @property
    def key(self) -> str:
        """The protocol's key: the tables' key is checked against it."""
        return str(self.protocol.key)

    @property
    def name(self) -> str:
        """The protocol's name (for error messages)."""
        return str(self.protocol.name)


@dataclass(frozen=True)
class HeavyRound(ProtocolTask):
    """Round ``j`` of ``protocol``'s estimate as an oracle ``aggregate`` tallies with: the
    tally of a partition's records is the support counts of ``prefixes`` (extended by
    ``step`` bits) among its reports of group ``j``, then its reports of each group."""

    j: int
    prefixes: np.ndarray[Any, Any]
    step: int

    def tally(self, records: Any) -> Tally:
        """``m`` support counts, then ``G`` group sizes, of ``(n, 2 + l W)`` records."""
        rec = np.asarray(records, dtype=np.uint64)
        groups = np.bincount(rec[:, 0].astype(np.int64), minlength=len(self.protocol.levels))
        mine = np.ascontiguousarray(rec[rec[:, 0] == np.uint64(self.j), 1:])
        reports = self.protocol.oracle(self.protocol.levels[self.j]).check_reports(mine)
        counts = self.protocol.round_counts(self.j, reports, self.prefixes, self.step)
        return Tally(np.concatenate([counts, groups]), mechanism=f"{self.key}#round{self.j}")


@contextmanager
def _session(scheduler: Any, workers: int, timeout: float) -> Iterator[Any]:
    """One cluster for every round: a LocalCluster started for the call (``None``), a
    client of the scheduler's address, the given client, or ``"synchronous"``."""
    if scheduler is None:
        with local_client(workers) as client:
            yield client
    elif isinstance(scheduler, str) and scheduler != "synchronous":
        from distributed import Client

        try:
            client = Client(scheduler, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise DataError(f"`scheduler` {scheduler!r}: cannot reach it ({exc}).") from None
        with client:
            yield client
    else:
        yield scheduler


def aggregate_heavy_hitters(
    source: Any,
    mechanism: Any = None,
    *,
    scheduler: Any = None,
    columns: Sequence[str] | None = None,
    batch: int = DEFAULT_BATCH,
    format: str | None = None,
    local_workers: int = LOCAL_WORKERS,
    timeout: float = CONNECT_TIMEOUT,
    top_k: int | None = None,
    alpha: float | None = 0.05,
    level: float = 0.95,
) -> Any:
    """The heavy hitters of the PEM or TreeHist reports in Parquet or CSV report tables,
    each round counted with Dask (module docstring).

    Parameters
    ----------
    source, scheduler, columns, batch, format, local_workers, timeout
        As for :func:`~deniable.distributed.aggregate` (the tables' columns: ``group``,
        then ``report_0 ..``).
    mechanism : PEM, TreeHist or str, optional
        The protocol or its key (``pem{...}``, ``treehist{...}``).  Default: the key the
        Parquet files carry (a CSV table needs it).  A protocol given is used with its own
        ``top_k`` and ``alpha``.
    top_k, alpha : optional
        The server's choices when the protocol comes from a key: the most candidates a
        round keeps (default 16, the protocols') and the family-wise false-discovery target
        of a round (``None``: top-k only).
    level : float
        The level of the intervals.

    Returns
    -------
    HeavyHitters
        Equal to ``protocol.estimate`` of the same reports in process.

    A table of another protocol, a group out of range or a report its oracle refuses raise
    one :class:`~deniable.exceptions.DataError` naming the file.  Nothing is written.
    """
    from deniable.oracles import PEM, TreeHist, heavy_from_key

    size, workers, found = checked_call(source, mechanism, batch, format, local_workers)
    if not isinstance(found, PEM | TreeHist):
        raise ParameterTypeError(
            f"`mechanism` must be a heavy-hitter protocol (PEM or TreeHist) or its key, got "
            f"{getattr(found, 'key', type(found).__name__)}."
        )
    protocol: Any = found
    if not isinstance(mechanism, PEM | TreeHist):  # from a key: the server's choices
        protocol = heavy_from_key(found.key, top_k=16 if top_k is None else top_k, alpha=alpha)
    count_groups = len(protocol.levels)
    with _session(scheduler, workers, timeout) as where:

        def count(j: int, prefixes: Any, step: int) -> tuple[Any, Any]:
            tasks = _tasks(HeavyRound(protocol, j, prefixes, step), source, format, columns, size)
            counts = _run(tasks, where, workers, timeout, None).counts
            return counts[:-count_groups], counts[-count_groups:]

        try:
            return protocol.estimate_counts(count, level=level)
        except DeniableError:
            raise
        except Exception as exc:  # pragma: no cover - _run wraps the cluster's own
            raise DataError(f"aggregation failed: {type(exc).__name__}: {exc}") from None
