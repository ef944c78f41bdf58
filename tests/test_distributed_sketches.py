"""The count mean sketches' report tables on Dask: CMS reports as a ``row`` column then the
packed bits, HCMS reports as one ``report`` column, tallied per partition on a Dask
LocalCluster to exactly the sketch's tally of the same reports (so the estimate is equal);
the sketch resolved from its key or spec; a report the sketch could not make refused naming
the file."""

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
from deniable.oracles import CMS, HCMS, cms_spec

CMS_SKETCH = CMS(k=5, m=12, epsilon=2.0, salt=4)
HCMS_SKETCH = HCMS(k=4, m=16, epsilon=1.0, salt=9)
STRINGS = np.asarray(["apple", "b", "z\u00fcrich", "\U0001f600", "pear"], dtype=object)


def strings(n: int = 5000, seed: int = 3) -> list[str]:
    rng = np.random.default_rng(seed)
    return list(STRINGS[rng.choice(5, size=n, p=[0.4, 0.3, 0.15, 0.1, 0.05])])


client = cluster_client(processes=True)


def test_resolve_mechanism_knows_the_sketches() -> None:
    for sketch in (CMS_SKETCH, HCMS_SKETCH):
        assert resolve_mechanism(sketch.key) == sketch
        assert resolve_mechanism(cms_spec(sketch)) == sketch
        assert resolve_mechanism(json.dumps(cms_spec(sketch))) == sketch
        assert resolve_mechanism(sketch) is sketch
    with pytest.raises(DataError, match="not canonical"):
        resolve_mechanism(HCMS_SKETCH.key.replace('"epsilon":"1"', '"epsilon":"2/2"'))
    spec1 = CMS(k=5, m=12, epsilon=2.0, salt=4, spec_version=1)  # a key from before spec 2
    assert resolve_mechanism(spec1.key) == spec1 and CMS_SKETCH.spec_version == 2
    with pytest.raises(DataError, match="not canonical"):
        resolve_mechanism(spec1.key.replace('"epsilon":"2"', '"epsilon":"4/2"'))


@pytest.mark.parametrize("sketch", [CMS_SKETCH, HCMS_SKETCH], ids=["cms", "hcms"])
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_sketch_tables_tally_as_in_process_and_on_the_cluster(
    client: Any, tmp_path: Path, sketch: Any, suffix: str
) -> None:
    reports = sketch.randomize(strings(), rng=8)
    cuts = [0, 1200, 3100, 5000]
    for i in range(3):  # three files of unequal size, several row groups / blocks each
        piece = reports[cuts[i] : cuts[i + 1]]
        write_report_table(tmp_path / f"part-{i}{suffix}", sketch, len(piece),
                           [piece[:300], piece[300:]], row_group=700)  # fmt: skip
    expected = sketch.tally(reports)
    mechanism = None if suffix == ".parquet" else sketch.key
    here = aggregate(tmp_path, mechanism, scheduler="synchronous", batch=1024)
    there = aggregate(tmp_path, mechanism, scheduler=client, batch=1024)
    assert here.mechanism == there.mechanism == sketch.key
    assert np.array_equal(here.counts, expected.counts)
    assert np.array_equal(there.counts, expected.counts)
    cand = ["apple", "b", "pear", "absent"]
    assert np.array_equal(
        sketch.estimate(there, cand).values, sketch.estimate(expected, cand).values
    )


def test_the_columns_of_the_sketches(tmp_path: Path) -> None:
    reports = CMS_SKETCH.randomize(strings(40), rng=1)
    assert report_columns(CMS_SKETCH) == ("row", "report_0", "report_1")
    assert report_columns(HCMS_SKETCH) == ("report",)
    path = write_report_table(tmp_path / "c.parquet", CMS_SKETCH, 40, [reports])
    table = pq.read_table(path)
    assert table.schema.metadata[KEY_METADATA].decode() == CMS_SKETCH.key
    assert str(table.schema.field("row").type) == "uint16"
    assert table.column("row").to_pylist() == reports.rows.tolist()
    bits = np.column_stack([table.column(f"report_{i}").to_numpy() for i in range(2)])
    assert np.array_equal(bits, reports.bits)
    hpath = write_report_table(tmp_path / "h.parquet", HCMS_SKETCH, 40,
                               [HCMS_SKETCH.randomize(strings(40), rng=1)])  # fmt: skip
    assert str(pq.read_table(hpath).schema.field("report").type) == "int64"


def test_a_report_the_sketch_could_not_make_is_refused_naming_the_file(tmp_path: Path) -> None:
    reports = CMS_SKETCH.randomize(strings(20), rng=2)
    path = write_report_table(tmp_path / "c.parquet", CMS_SKETCH, 20, [reports])
    table = pq.read_table(path)
    rows = table.column("row").to_numpy().copy()
    rows[3] = 5  # a 5-row sketch: rows 0..4
    bad = table.set_column(0, "row", pa.array(rows, type=pa.uint16()))
    pq.write_table(bad, tmp_path / "c.parquet")
    with pytest.raises(DataError, match=r"c\.parquet.*`reports.rows` must be in 0\.\.4, got 5"):
        aggregate(tmp_path, None, scheduler="synchronous")
