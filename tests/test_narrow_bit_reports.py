"""Unary oracles with k <= 8 pack a report's bits into one byte: their reports are an
``(n, 1)`` array.  A report file or a one-column report table read back as ``(n,)`` was
refused by the oracle's own tally (``deniable telemetry aggregate`` failed for OUE, SUE,
L-SUE and L-OSUE at k <= 8); read back, they must tally exactly as the reports written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deniable.distributed import aggregate, write_report_table
from deniable.oracles import LSUE, OUE, SUE, tally_file, write_reports

ORACLES = [
    OUE.from_epsilon(1.0, k=4),
    SUE.from_epsilon(1.0, k=8),
    OUE.from_epsilon(1.0, k=12),  # two bytes a report: worked before, stays the same
    LSUE.from_epsilon(2.0, 5),
]


def _reports(oracle: Any, n: int = 3000) -> Any:
    rng = np.random.default_rng(11)
    return oracle.randomize(rng.integers(0, oracle.k, size=n), rng=rng)


@pytest.mark.parametrize("oracle", ORACLES, ids=lambda o: f"{o.name}-k{o.k}")
def test_a_report_file_tallies_as_its_reports(oracle: Any, tmp_path: Path) -> None:
    reports = _reports(oracle)
    path = write_reports(tmp_path / "r.dnrp", oracle, reports)
    assert tally_file(oracle, path, batch=700) == oracle.tally(reports)
    empty = write_reports(tmp_path / "e.dnrp", oracle, reports[:0])
    assert tally_file(oracle, empty) == oracle.tally(reports[:0])


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
@pytest.mark.parametrize("oracle", ORACLES, ids=lambda o: f"{o.name}-k{o.k}")
def test_a_report_table_tallies_as_its_reports(oracle: Any, suffix: str, tmp_path: Path) -> None:
    reports = _reports(oracle)
    write_report_table(tmp_path / f"t{suffix}", oracle, len(reports), [reports], row_group=900)
    got = aggregate(str(tmp_path), oracle, scheduler="synchronous", batch=1024)
    assert got == oracle.tally(reports)
