"""`deniable telemetry aggregate --stream-root ROOT --stream ID` on an SFP stream (written by
the ingestion path, several days): it prints what the library's reading of the same days
finds (aggregate_sfp_stream, equal to SFP.estimate in process), one day alone likewise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from _cli import ENV, no_constant, run
from deniable.distributed import aggregate_sfp_stream, append_batch, encode_batch
from deniable.oracles import SFP, sfp_device_reports

SFP_H = SFP(epsilon=6.0, max_length=4, alphabet="abc", puzzle_bits=4, k=16, m=256)


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


def _json(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout, parse_constant=no_constant))


def test_an_sfp_stream_aggregates_as_the_library_reads_it(
    runner: CliRunner, tmp_path: Path
) -> None:
    rng = np.random.default_rng(4)
    for day in ("2026-11-20", "2026-11-21"):
        items = [str(s) for s in rng.choice(["ab", "cab", "c", "bbb"], size=1500,
                                             p=[0.5, 0.3, 0.1, 0.1])]  # fmt: skip
        reports = sfp_device_reports(SFP_H, items, rng=rng)
        append_batch(tmp_path, "words", SFP_H, encode_batch(SFP_H, reports), day=day)
    base = ("telemetry", "aggregate", "--stream-root", tmp_path, "--stream", "words",
            "--local-workers", 0, "--alpha", 0.01, "--json")  # fmt: skip
    data = _json(run(runner, *base))
    want = aggregate_sfp_stream(tmp_path, "words", scheduler="synchronous", alpha=0.01)
    assert [h["string"] for h in data["heavy_hitters"]] == list(want.strings)
    assert {"ab", "cab"} <= set(want.strings)
    assert data["mechanism"] == SFP_H.key and data["n"] == 3000
    one = _json(run(runner, *base, "--start", "2026-11-21"))
    want_one = aggregate_sfp_stream(tmp_path, "words", start="2026-11-21",
                                    scheduler="synchronous", alpha=0.01)  # fmt: skip
    assert one["n"] == 1500
    assert [h["frequency"] for h in one["heavy_hitters"]] == pytest.approx(
        [float(f) for f in want_one.frequencies], rel=1e-12
    )


def test_an_ngram_stream_aggregates_as_the_library_reads_it(
    runner: CliRunner, tmp_path: Path
) -> None:
    # RAPPOR n-gram streams are read by the same library function as SFP's, at the
    # command's alpha and edge threshold (it refused them before)
    from deniable.oracles import Rappor, RapporNgram, rappor_ngram_device_reports

    ng = RapporNgram(Rappor(m=32, h=2, cohorts=2, f=0.25, p=0.25, q=0.75), None, "abc", 2, 4)
    rng = np.random.default_rng(5)
    for day in ("2026-11-20", "2026-11-21"):
        items = [str(s) for s in rng.choice(["abca", "bb", "c"], size=800, p=[0.6, 0.3, 0.1])]
        reports = rappor_ngram_device_reports(ng, items, rng=rng)
        append_batch(tmp_path, "grams", ng, encode_batch(ng, reports), day=day)
    base = ("telemetry", "aggregate", "--stream-root", tmp_path, "--stream", "grams",
            "--local-workers", 0, "--alpha", 0.05, "--edge-threshold", 0.03, "--json")  # fmt: skip
    for start, n in ((None, 1600), ("2026-11-21", 800)):
        data = _json(run(runner, *base, *(() if start is None else ("--start", start))))
        want = aggregate_sfp_stream(tmp_path, "grams", start=start, scheduler="synchronous",
                                    alpha=0.05, edge_threshold=0.03)  # fmt: skip
        assert data["n"] == n and data["mechanism"] == ng.key
        assert data["edge_threshold"] == 0.03 and data["alpha"] == 0.05
        assert [h["string"] for h in data["strings"]] == list(want.strings)
    assert "abca" in want.strings
