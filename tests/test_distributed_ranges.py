"""The range mechanisms' and Square Wave's report tables on Dask: a range report as a
``level`` column then its level oracle's report (padded to the widest level), a Square Wave
report as one ``report`` column, tallied per partition on a Dask LocalCluster to exactly the
mechanism's tally of the same reports (so every range answer and quantile is equal); the
mechanism resolved from its key or spec; a report it could not make refused naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _distributed import cluster_client
from deniable.distributed import (
    KEY_METADATA,
    aggregate,
    report_columns,
    resolve_mechanism,
    write_report_table,
)
from deniable.exceptions import DataError
from deniable.oracles import (
    HaarHRR,
    HierarchicalHistogram,
    LevelReports,
    SquareWave,
    range_spec,
    square_wave_spec,
)

client = cluster_client(processes=True)

MECHANISMS = [
    HierarchicalHistogram(64, 4, 1.0, oracle="oue"),
    HierarchicalHistogram(27, 3, 2.0, oracle="olh"),
    HierarchicalHistogram(16, 2, 1.0, oracle="grr"),
    HaarHRR(32, 1.0),
    SquareWave(1.0, lower=-1.0, upper=4.0, bins=32),
]


def _values(mech: Any, n: int, seed: int = 3) -> Any:
    rng = np.random.default_rng(seed)
    if isinstance(mech, SquareWave):
        return mech.lower + (mech.upper - mech.lower) * rng.beta(2, 5, n)
    return rng.integers(0, mech.domain, n)


def _slice(reports: Any, start: int, stop: int) -> Any:
    """Devices ``start..stop-1`` of the reports (LevelReports: each level's in order)."""
    if not isinstance(reports, LevelReports):
        return reports[start:stop]
    level = reports.level
    parts = []
    for j, rep in enumerate(reports.reports):
        before = int(np.count_nonzero(level[:start] == j))
        inside = int(np.count_nonzero(level[start:stop] == j))
        parts.append(np.asarray(rep)[before : before + inside])
    return LevelReports(level[start:stop], tuple(parts))


def test_resolve_mechanism_knows_the_ranges_and_square_wave() -> None:
    for mech in MECHANISMS:
        spec = square_wave_spec(mech) if isinstance(mech, SquareWave) else range_spec(mech)
        assert resolve_mechanism(mech.key) == mech
        assert resolve_mechanism(spec) == mech
        assert resolve_mechanism(json.dumps(spec)) == mech
        assert resolve_mechanism(mech) is mech
    with pytest.raises(DataError, match="not canonical"):
        key = HaarHRR(4, 1.0).key
        resolve_mechanism(key.replace('"requested_epsilon":"1"', '"requested_epsilon":"2/2"'))


@pytest.mark.parametrize("mech", MECHANISMS, ids=lambda m: m.key[:28])
@pytest.mark.parametrize("suffix", [".parquet", ".csv.gz"])
def test_tables_tally_as_in_process_and_on_the_cluster(
    client: Any, tmp_path: Path, mech: Any, suffix: str
) -> None:
    reports = mech.randomize(_values(mech, 4000), rng=8)
    for i, (a, b) in enumerate(((0, 900), (900, 2500), (2500, 4000))):  # unequal files
        piece = _slice(reports, a, b)
        half = (b - a) // 3
        write_report_table(tmp_path / f"part-{i}{suffix}", mech, b - a,
                           [_slice(piece, 0, half), _slice(piece, half, b - a)],
                           row_group=500)  # fmt: skip
    expected = mech.tally(reports)
    mechanism = None if suffix == ".parquet" else mech.key
    here = aggregate(tmp_path, mechanism, scheduler="synchronous", batch=1024)
    there = aggregate(tmp_path, mechanism, scheduler=client, batch=1024)
    assert here.mechanism == there.mechanism == mech.key
    assert np.array_equal(here.counts, expected.counts)
    assert np.array_equal(there.counts, expected.counts)
    if isinstance(mech, SquareWave):
        assert mech.estimate(there).mean_value == mech.estimate(expected).mean_value
    else:
        a, b = mech.estimate(there), mech.estimate(expected)
        assert a.range(1, mech.domain // 2) == b.range(1, mech.domain // 2)
        assert a.quantile(0.5) == b.quantile(0.5)


def test_the_columns_of_the_ranges_and_square_wave(tmp_path: Path) -> None:
    hh = MECHANISMS[0]  # OUE: packed bits of 1, 2 and 8 bytes
    reports = hh.randomize(_values(hh, 60), rng=1)
    assert report_columns(hh) == ("level", *(f"report_{i}" for i in range(8)))
    path = write_report_table(tmp_path / "h.parquet", hh, 60, [reports])
    table = pq.read_table(path)
    assert table.schema.metadata[KEY_METADATA].decode() == hh.key
    assert str(table.schema.field("level").type) == "uint16"
    assert table.column("level").to_pylist() == reports.level.tolist()
    rows = np.column_stack([table.column(f"report_{i}").to_numpy() for i in range(8)])
    for j, rep in enumerate(reports.reports):
        width = np.asarray(rep).shape[1]
        assert np.array_equal(rows[reports.level == j, :width], rep)
        assert not rows[reports.level == j, width:].any()  # zero padding
    haar = MECHANISMS[3]
    assert report_columns(haar) == ("level", "report")
    sw = MECHANISMS[4]
    assert report_columns(sw) == ("report",)
    wpath = write_report_table(tmp_path / "w.parquet", sw, 30,
                               [sw.randomize(_values(sw, 30), rng=1)])  # fmt: skip
    assert str(pq.read_table(wpath).schema.field("report").type) == "uint16"


def test_a_report_the_mechanism_could_not_make_is_refused_naming_the_file(tmp_path: Path) -> None:
    haar = MECHANISMS[3]
    reports = haar.randomize(_values(haar, 50), rng=2)
    path = write_report_table(tmp_path / "h.parquet", haar, 50, [reports])
    table = pq.read_table(path)
    level = table.column("level").to_numpy().copy()
    level[7] = 5  # five levels: 0..4
    bad = table.set_column(0, "level", pa.array(level, type=pa.uint16()))
    pq.write_table(bad, tmp_path / "h.parquet")
    with pytest.raises(DataError, match=r"h\.parquet.*report 7: its level must be in 0\.\.4"):
        aggregate(tmp_path, None, scheduler="synchronous")
    level[7] = 0
    body = table.column("report").to_numpy().copy()
    body[7] = 1000  # level 0: a Hadamard response over 2 values, reports 0..3
    cols = [pa.array(level, type=pa.uint16()), pa.array(body)]
    pq.write_table(pa.table(cols, schema=table.schema), tmp_path / "h.parquet")
    with pytest.raises(DataError, match=r"h\.parquet.*`reports`"):
        aggregate(tmp_path, None, scheduler="synchronous")
