"""Helpers of the Dask and report-table tests (tests/test_distributed.py,
tests/test_distributed_rappor.py, tests/test_ingest*.py, ...): a module-scoped client of a
LocalCluster of two workers, and report tables written as files of unequal size."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from deniable.distributed import write_report_table


def cluster_client(*, processes: bool) -> Any:
    """A module-scoped fixture: a Dask client of a LocalCluster of two one-thread workers
    (worker processes, or threads of this process), its dashboard off.

    In a test module: ``client = cluster_client(processes=True)``."""

    @pytest.fixture(scope="module")
    def client() -> Iterator[Any]:
        from distributed import Client, LocalCluster

        with (
            LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=processes,
                dashboard_address=None,
                scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
            ) as cluster,
            Client(cluster) as c,
        ):
            yield c

    return client


def write_parts(
    directory: Path,
    oracle: Any,
    reports: Any,
    suffix: str,
    cuts: Sequence[int],
    *,
    row_group: int,
    batch: int | None = None,
) -> list[Path]:
    """The reports written to ``part-<i><suffix>`` under ``directory``, part ``i`` the
    reports ``cuts[i]:cuts[i + 1]``, handed to ``write_report_table`` in one batch, or in
    two (the first ``batch`` reports, then the rest)."""
    out = []
    for i in range(len(cuts) - 1):
        piece = reports[cuts[i] : cuts[i + 1]]
        batches = [piece] if batch is None else [piece[:batch], piece[batch:]]
        out.append(directory / f"part-{i}{suffix}")
        write_report_table(out[-1], oracle, len(piece), batches, row_group=row_group)
    return out
