"""RAPPOR's report tables: a ``cohort`` column (uint16) then the packed bits (``report_i``,
uint8), written by ``write_report_table`` and tallied by ``aggregate`` in this process and
on a Dask LocalCluster to exactly ``Rappor.tally`` of the same reports; a RAPPOR key or
spec names its oracle as any other oracle's does."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from _distributed import cluster_client, write_parts
from deniable.distributed import (
    KEY_METADATA,
    aggregate,
    report_columns,
    resolve_mechanism,
    write_report_table,
)
from deniable.exceptions import DataError
from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import Rappor, RapporClient, oracle_from_key, rappor_spec

RAPPOR = Rappor(m=32, h=2, cohorts=8, f=0.5, p=0.5, q=0.75)


def rappor_reports(n: int = 6000, seed: int = 4) -> Any:
    rng = np.random.default_rng(seed)
    values = rng.choice(np.asarray(["a", "b", "c", "d"]), size=n, p=[0.5, 0.25, 0.15, 0.1])
    return RapporClient(RAPPOR, InMemoryMemoStore()).report(np.arange(n), values, rng=rng)


client = cluster_client(processes=True)


def test_oracle_from_key_and_resolve_mechanism_know_rappor() -> None:
    assert oracle_from_key(RAPPOR.key) == RAPPOR
    assert resolve_mechanism(RAPPOR.key) == RAPPOR
    assert resolve_mechanism(rappor_spec(RAPPOR)) == RAPPOR
    import json

    assert resolve_mechanism(json.dumps(rappor_spec(RAPPOR))) == RAPPOR
    assert resolve_mechanism(RAPPOR) is RAPPOR
    with pytest.raises(DataError, match="not canonical"):
        oracle_from_key(RAPPOR.key.replace('"f":"1/2"', '"f":"2/4"'))
    with pytest.raises(DataError, match=r"`key` .* does not fit RAPPOR: .*`m`"):
        oracle_from_key(RAPPOR.key.replace('"m":32', '"m":12'))


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".csv.gz"])
def test_rappor_tables_tally_as_rappor_in_process_and_on_the_cluster(
    client: Any, tmp_path: Path, suffix: str
) -> None:
    reports = rappor_reports()
    # three files of unequal size, several row groups / blocks each, two batches a file
    cuts = [0, 1000, 3500, len(reports)]
    write_parts(tmp_path, RAPPOR, reports, suffix, cuts, row_group=700, batch=300)
    expected = RAPPOR.tally(reports)
    mechanism = None if suffix == ".parquet" else RAPPOR.key
    here = aggregate(tmp_path, mechanism, scheduler="synchronous", batch=1024)
    there = aggregate(tmp_path, mechanism, scheduler=client, batch=1024)
    assert here.mechanism == there.mechanism == RAPPOR.key
    assert np.array_equal(here.counts, expected.counts)
    assert np.array_equal(there.counts, expected.counts)
    # the decoder reads the table's tally as it reads the report file's
    cand = ["a", "b", "c", "d", "e"]
    assert np.array_equal(RAPPOR.decode(there, cand).values, RAPPOR.decode(expected, cand).values)


def test_the_columns_are_the_cohort_then_the_packed_bits(tmp_path: Path) -> None:
    reports = rappor_reports(50)
    assert report_columns(RAPPOR) == ("cohort", "report_0", "report_1", "report_2", "report_3")
    path = write_report_table(tmp_path / "r.parquet", RAPPOR, 50, [reports])
    table = pq.read_table(path)
    assert table.schema.metadata[KEY_METADATA].decode() == RAPPOR.key
    assert str(table.schema.field("cohort").type) == "uint16"
    assert all(str(table.schema.field(f"report_{i}").type) == "uint8" for i in range(4))
    assert table.column("cohort").to_pylist() == reports.cohorts.tolist()
    bits = np.column_stack([table.column(f"report_{i}").to_numpy() for i in range(4)])
    assert np.array_equal(bits, reports.bits)


def test_a_cohort_out_of_range_is_one_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv.gz"
    rows = "cohort,report_0,report_1,report_2,report_3\n1,0,0,0,0\n8,255,0,0,0\n"
    path.write_bytes(gzip.compress(rows.encode()))
    with pytest.raises(DataError, match=r"bad\.csv\.gz.*'cohort' must hold cohorts 0..7.*got 8"):
        aggregate(path, RAPPOR, scheduler="synchronous")
    plain = tmp_path / "wide.csv"
    plain.write_text("cohort,report_0,report_1,report_2,report_3\n70000,0,0,0,0\n")
    with pytest.raises(DataError, match=r"column 'cohort' must hold values in 0..65535"):
        aggregate(plain, RAPPOR, scheduler="synchronous")
    with pytest.raises(
        DataError,
        match=r"has no column report_1, report_2, report_3 \(reports of rappor need cohort",
    ):
        (tmp_path / "few.csv").write_text("cohort,report_0\n1,0\n")
        aggregate(tmp_path / "few.csv", RAPPOR, scheduler="synchronous")


def test_writing_checks_rappors_reports_and_leaves_no_file(tmp_path: Path) -> None:
    other = Rappor(m=16, h=2, cohorts=8, f=0.5, p=0.5, q=0.75)
    with pytest.raises(DataError, match=r"`reports\.bits` must be a 2-D uint8 array of 2 bytes"):
        write_report_table(tmp_path / "x.parquet", other, 10, [rappor_reports(10)])
    assert not list(tmp_path.iterdir())
