"""Range and Square Wave streams on disk and on Dask: batches appended as the service
appends them (``append_batches``: every record checked, the level's columns as the report
tables lay them out), then the stream's days tallied by ``aggregate_stream`` on a Dask
LocalCluster exactly as in process and as the mechanism tallies the reports itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _distributed import cluster_client
from deniable.distributed import (
    aggregate_stream,
    append_batches,
    decode_batch,
    encode_batch,
    stream_oracle,
)
from deniable.exceptions import DataError
from deniable.oracles import HaarHRR, HierarchicalHistogram, SquareWave

MECHANISMS = [
    HierarchicalHistogram(16, 4, 2.0, oracle="oue"),
    HierarchicalHistogram(9, 3, 1.0, oracle="olh"),
    HierarchicalHistogram(8, 2, 1.0, oracle="grr"),
    HaarHRR(16, 1.0),
    SquareWave(1.0, lower=0.0, upper=10.0),
]


def _reports(m: Any, n: int, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    if isinstance(m, SquareWave):
        return m.randomize(rng.uniform(0.0, 10.0, n), rng=rng)
    return m.randomize(rng.integers(0, m.domain, n), rng=rng)


client = cluster_client(processes=False)


@pytest.mark.parametrize("m", MECHANISMS, ids=lambda m: m.key[:40])
def test_a_range_stream_reads_the_same_on_a_dask_cluster_as_in_process(
    tmp_path: Path, client: Any, m: Any
) -> None:
    bodies = {}
    for i in range(3):
        body = encode_batch(m, _reports(m, 900 + 100 * i, 30 + i))
        bodies[i] = body
        append_batches(tmp_path, "r", m, [body], day=f"2026-11-{20 + i}")
    assert stream_oracle(tmp_path, "r") == m
    # the mechanism's own tally of each batch's reports (tallies add)
    tallies = [m.tally(decode_batch(m, b)) for b in bodies.values()]
    counts = np.sum([t.counts for t in tallies], axis=0)
    here = aggregate_stream(tmp_path, "r", scheduler="synchronous")
    there = aggregate_stream(tmp_path, "r", scheduler=client, batch=500)
    assert np.array_equal(here.counts, counts) and np.array_equal(there.counts, counts)
    # one day alone: its reports only
    day = aggregate_stream(tmp_path, "r", start="2026-11-21", end="2026-11-21",
                           scheduler=client)  # fmt: skip
    assert np.array_equal(day.counts, tallies[1].counts)


def test_a_bad_range_batch_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    hh = MECHANISMS[0]
    good = encode_batch(hh, _reports(hh, 10, 1))
    bad = bytearray(good)
    bad[48 + 4 * 3] = 9  # report 3's level (little-endian uint16): 9 of 2 levels
    with pytest.raises(DataError, match=r"report 3: its level must be in 0\.\.1"):
        append_batches(tmp_path, "r", hh, [good, bytes(bad)], day="2026-11-20")
    assert not list(tmp_path.rglob("*.parquet"))
