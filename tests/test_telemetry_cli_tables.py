"""`deniable telemetry aggregate` of RAPPOR's report tables (decoded against --candidates)
and of a telemetry stream's days (--stream-root, --stream, --start, --end), in this
process and on a Dask LocalCluster; bad input is one `error:` line with exit status 2."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from _cli import ENV, no_constant, one_error, run
from deniable.distributed import append_batch, encode_batch
from deniable.oracles import OUE, Rappor

PAGES = ["home", "search", "settings", "help", "about", "news"]
ABSENT = ["admin", "login", "debug"]


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


def _json(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout, parse_constant=no_constant))


def _lines(path: Path, strings: list[str]) -> Path:
    path.write_text("\n".join(strings) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def rappor_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The same 40,000 simulated devices (one seed) as a report file, a Parquet table and a
    CSV table."""
    runner = CliRunner(env=ENV)
    tmp = tmp_path_factory.mktemp("rappor-tables")
    cand = _lines(tmp / "pages.txt", PAGES)
    out: dict[str, Any] = {"decode": _lines(tmp / "decode.txt", PAGES + ABSENT)}
    for name in ("day.dnrp", "day.parquet", "day.csv.gz"):
        info = _json(run(runner, "telemetry", "simulate", "--mechanism", "rappor", "--out",
                         tmp / name, "--devices", 40_000, "--candidates", cand, "--cohorts", 16,
                         "--seed", 11, "--json"))  # fmt: skip
        out[name] = (tmp / name, info)
    return out


def test_rappor_tables_round_trip_and_equal_the_report_file(
    runner: CliRunner, rappor_runs: dict[str, Any]
) -> None:
    decode = rappor_runs["decode"]
    rappor = Rappor(m=128, h=2, cohorts=16, f=0.5, p=0.5, q=0.75)
    path, info = rappor_runs["day.parquet"]
    assert info["format"] == "parquet" and info["mechanism"] == rappor.key
    assert rappor_runs["day.csv.gz"][1]["format"] == "csv"
    est = _json(run(runner, "telemetry", "aggregate", path, "--candidates", decode,
                    "--local-workers", 0, "--json"))  # fmt: skip
    assert est["n"] == 40_000
    rows = {row["candidate"]: row for row in est["candidates"]}
    assert list(rows) == PAGES + ABSENT
    harmonic = sum(1 / (j + 1) for j in range(len(PAGES)))
    for j, page in enumerate(PAGES):
        truth = 1 / ((j + 1) * harmonic)  # Zipf's law (s = 1) over the candidates
        # within 4 SEs: a false alarm about 6e-5 a candidate (two-sided normal), 4e-4 in
        # all; the seed is fixed, so the run is the same every time
        assert abs(rows[page]["frequency"] - truth) < 4 * rows[page]["se"], (page, truth)
    assert not any(rows[a]["reported"] for a in ABSENT)
    assert est["epsilon"] == pytest.approx(4 * math.log(3), rel=1e-12)
    # the same devices (one seed) in a report file and a CSV table: the same decoding
    dnrp = _json(run(runner, "telemetry", "aggregate", rappor_runs["day.dnrp"][0],
                     "--candidates", decode, "--json"))  # fmt: skip
    csv = _json(run(runner, "telemetry", "aggregate", rappor_runs["day.csv.gz"][0],
                    "--mechanism", rappor.key, "--candidates", decode, "--local-workers", 0,
                    "--json"))  # fmt: skip
    for other in (dnrp, csv):
        assert other["candidates"] == est["candidates"] and other["n"] == est["n"]
    # on a Dask LocalCluster: the same tally, so the same decoding
    dask = _json(run(runner, "telemetry", "aggregate", path, "--candidates", decode,
                     "--local-workers", 1, "--batch", 4096, "--json"))  # fmt: skip
    assert dask["candidates"] == est["candidates"]
    table = run(runner, "aggregate", path, "--candidates", decode, "--local-workers", 0)
    assert table.exit_code == 0, table.output
    assert "candidates reported, n = 40000" in " ".join(table.stdout.split())


def test_rappor_tables_need_candidates_before_anything_is_counted(
    runner: CliRunner, rappor_runs: dict[str, Any], tmp_path: Path
) -> None:
    path = rappor_runs["day.parquet"][0]
    one_error(run(runner, "aggregate", path, "--local-workers", 0),
              "`--candidates` FILE", "is needed to decode")  # fmt: skip
    dup = _lines(tmp_path / "dup.txt", ["home", "home"])
    one_error(run(runner, "aggregate", path, "--candidates", dup, "--local-workers", 0),
              "must hold distinct strings")  # fmt: skip
    csv = rappor_runs["day.csv.gz"][0]
    one_error(run(runner, "aggregate", csv, "--local-workers", 0, "--mechanism",
                  Rappor(m=128, h=2, cohorts=16, f=0.5, p=0.5, q=0.75).key),
              "`--candidates` FILE")  # fmt: skip


ORACLE = OUE(k=12, q=0.2)
DAYS = ["2026-11-26", "2026-11-27", "2026-11-28"]


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    """A stream of three days written by the ingestion path (``append_batch``)."""
    root = tmp_path_factory.mktemp("streams")
    rng = np.random.default_rng(7)
    per_day = []
    for i, day in enumerate(DAYS):
        reports = ORACLE.randomize(rng.integers(0, 12, size=3000 + 1000 * i), rng=rng)
        for part in (reports[:1000], reports[1000:]):  # two batches a day
            append_batch(root, "clicks", ORACLE, encode_batch(ORACLE, part), day=day)
        per_day.append(reports)
    return root, per_day


def test_a_streams_days_aggregate_in_process_and_on_dask(
    runner: CliRunner, stream: tuple[Path, list[Any]]
) -> None:
    root, per_day = stream
    args = ("telemetry", "aggregate", "--stream-root", root, "--stream", "clicks")
    # the last two days, in this process: the estimate of exactly their reports
    got = _json(run(runner, *args, "--start", DAYS[1], "--end", DAYS[2], "--local-workers", 0,
                    "--json"))  # fmt: skip
    tally = ORACLE.tally(np.concatenate(per_day[1:]))
    assert got == json.loads(json.dumps(ORACLE.estimate(tally).to_dict(0.95)))
    assert got["n"] == 4000 + 5000
    # every day, on a Dask LocalCluster: the same as in process
    dask = _json(run(runner, *args, "--local-workers", 1, "--json"))
    here = _json(run(runner, *args, "--local-workers", 0, "--json"))
    assert dask == here and here["n"] == 3000 + 4000 + 5000
    assert here == json.loads(json.dumps(ORACLE.estimate(
        ORACLE.tally(np.concatenate(per_day))).to_dict(0.95)))  # fmt: skip
    # one day, as a table; the stream's own key given is accepted
    table = run(runner, "aggregate", "--stream-root", root, "--stream", "clicks", "--start",
                DAYS[0], "--end", DAYS[0], "--mechanism", ORACLE.key,
                "--local-workers", 0)  # fmt: skip
    assert table.exit_code == 0, table.output
    assert "oue: 12 categories, n = 3000," in table.stdout


def test_bad_stream_input_is_one_error_line(
    runner: CliRunner, stream: tuple[Path, list[Any]], tmp_path: Path
) -> None:
    root, _ = stream
    base = ("aggregate", "--stream-root", root, "--local-workers", 0)
    one_error(run(runner, *base, "--stream", "views"), "`--stream` 'views'",
              "no stream 'views'", "_stream.json")  # fmt: skip
    one_error(run(runner, *base, "--stream", "clicks", "--start", "2027-01-01"),
              "holds no reports in the days 2027-01-01 .. the last day")  # fmt: skip
    one_error(run(runner, *base, "--stream", "clicks", "--start", "2026-11-01", "--end",
                  "2026-11-20"),
              "holds no reports in the days 2026-11-01 .. 2026-11-20")  # fmt: skip
    one_error(run(runner, *base, "--stream", "clicks", "--end", "28/11/2026"),
              "`--end` must be a day YYYY-MM-DD", "'28/11/2026'")  # fmt: skip
    one_error(run(runner, *base, "--stream", "clicks", "--start", "2026-02-30"),
              "`--start` must be a day YYYY-MM-DD")  # fmt: skip
    one_error(run(runner, *base, "--stream", "clicks", "--start", DAYS[2], "--end", DAYS[0]),
              "`start` must not be after `end`")  # fmt: skip
    one_error(run(runner, *base, "--stream", "../x"), "`stream` must be 1 to 128 letters")
    one_error(run(runner, "aggregate", "--stream", "clicks"),
              "`--stream-root` and `--stream` must be given together")  # fmt: skip
    one_error(run(runner, "aggregate", "--stream-root", root, "--start", DAYS[0]),
              "must be given together")  # fmt: skip
    one_error(run(runner, "aggregate", tmp_path / "x.parquet", "--stream-root", root,
                  "--stream", "clicks"), "are two sources")  # fmt: skip
    one_error(run(runner, "aggregate"), "`FILE` must be given", "--stream-root ROOT")
    one_error(run(runner, "aggregate", "--stream-root", tmp_path / "none", "--stream", "clicks"),
              "`--stream-root` must be a folder")  # fmt: skip
    other = OUE(k=12, q=0.25)
    one_error(run(runner, *base, "--stream", "clicks", "--mechanism", other.key),
              "`--mechanism` must be the oracle of stream 'clicks'", ORACLE.key)  # fmt: skip
    cand = _lines(tmp_path / "c.txt", ["a"])
    one_error(run(runner, *base, "--stream", "clicks", "--candidates", cand),
              "`--candidates` apply to RAPPOR's reports only")  # fmt: skip
