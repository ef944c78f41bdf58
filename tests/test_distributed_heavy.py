"""PEM's and TreeHist's report tables on Dask: a ``group`` column then ``report_0 ..``,
each round's support counts summed over the partitions on a LocalCluster, so the heavy
hitters equal ``protocol.estimate`` of the same reports in process (integer counts add
exactly); a table of another protocol or a group out of range refused naming the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _distributed import cluster_client
from deniable.distributed import (
    aggregate,
    aggregate_heavy_hitters,
    report_columns,
    resolve_mechanism,
    write_report_table,
)
from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles import GRR, PEM, TreeHist, heavy_from_records, heavy_records

PEM_2 = PEM(epsilon=4.0, max_bytes=2, start_bits=8, step_bits=4, top_k=6, g=64)
TREE_1 = TreeHist(epsilon=3.0, max_bytes=1, top_k=4)
client = cluster_client(processes=True)


def _items(n: int, seed: int, width: int = 2) -> list[str]:
    rng = np.random.default_rng(seed)
    heavy = ["hi", "yo", "ok"] if width == 2 else ["h", "y", "o"]
    pool = np.asarray([*heavy, *(f"{chr(97 + i)}{chr(98 + i)}"[:width] for i in range(20))])
    p = np.r_[0.3, 0.2, 0.1, np.full(20, 0.4 / 20)]
    return [str(s) for s in pool[rng.choice(pool.size, size=n, p=p)]]


def _write_parts(directory: Path, protocol: Any, reports: Any, suffix: str) -> list[Path]:
    """The records cut into three files of unequal size (each its own groups' reports)."""
    rec = heavy_records(protocol, reports)
    rec = rec[np.random.default_rng(0).permutation(rec.shape[0])]  # groups mixed in a file
    cuts = [0, rec.shape[0] // 5, rec.shape[0] // 2, rec.shape[0]]
    out = []
    for i in range(3):
        part = heavy_from_records(protocol, rec[cuts[i] : cuts[i + 1]])
        out.append(directory / f"part-{i}{suffix}")
        write_report_table(out[-1], protocol, part.n, [part], row_group=700)
    return out


def test_the_columns_are_the_group_then_the_words() -> None:
    # l = log2 64 = 6 rows of W = 1 word, then the bucket
    assert report_columns(PEM_2) == ("group", *(f"report_{i}" for i in range(7)))
    assert resolve_mechanism(PEM_2.key).key == PEM_2.key


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_dask_equals_in_process(client: Any, tmp_path: Path, suffix: str) -> None:
    reports = PEM_2.randomize(_items(6000, 1), rng=2)
    _write_parts(tmp_path, PEM_2, reports, suffix)
    found = aggregate_heavy_hitters(str(tmp_path / f"*{suffix}"), PEM_2, scheduler=client,
                                    batch=500)  # fmt: skip
    assert found == PEM_2.estimate(reports)
    assert {"hi", "yo", "ok"} <= set(found.strings)


def test_the_key_of_a_parquet_table_names_the_protocol(client: Any, tmp_path: Path) -> None:
    reports = TREE_1.randomize(_items(4000, 3, width=1), rng=4)
    _write_parts(tmp_path, TREE_1, reports, ".parquet")
    found = aggregate_heavy_hitters(str(tmp_path), scheduler="synchronous", top_k=4)
    assert found == TREE_1.estimate(reports)
    wider = aggregate_heavy_hitters(str(tmp_path), scheduler=client, top_k=2, alpha=None)
    assert wider == TreeHist(epsilon=3.0, max_bytes=1, top_k=2, alpha=None).estimate(reports)


def test_bad_tables_are_refused_naming_the_file(tmp_path: Path) -> None:
    reports = PEM_2.randomize(_items(2000, 5), rng=6)
    (tmp_path / "a").mkdir()
    _write_parts(tmp_path / "a", PEM_2, reports, ".parquet")
    other = PEM(epsilon=2.0, max_bytes=2, start_bits=8, step_bits=4, g=64)
    with pytest.raises(DataError, match="not of this oracle"):
        aggregate_heavy_hitters(str(tmp_path / "a"), other, scheduler="synchronous")
    with pytest.raises(ParameterTypeError, match="aggregate_heavy_hitters"):
        aggregate(str(tmp_path / "a"), PEM_2, scheduler="synchronous")  # no one tally
    with pytest.raises(ParameterTypeError, match="heavy-hitter protocol"):
        aggregate_heavy_hitters(str(tmp_path / "a"), GRR.from_epsilon(1.0, k=4).key,
                                scheduler="synchronous")  # fmt: skip
    csv = tmp_path / "bad.csv"
    write_report_table(csv, PEM_2, reports.n, [reports])
    lines = csv.read_text().splitlines()
    lines[3] = "9" + lines[3][lines[3].index(",") :]  # 3 groups (8, 12, 16 bits): 0..2
    csv.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"bad\.csv.*groups 0\.\.2"):
        aggregate_heavy_hitters(str(csv), PEM_2.key, scheduler="synchronous")
