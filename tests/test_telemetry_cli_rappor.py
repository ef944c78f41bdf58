"""`deniable telemetry simulate --mechanism rappor` and `aggregate --candidates`: strings
into a RAPPOR report file, decoded against candidates with SEs, intervals and the
decoder's diagnostics; bad input is one `error:` line with exit status 2."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from _cli import ENV, no_constant, one_error, run
from deniable.oracles import Rappor, read_report_key, read_report_metadata, tally_file

PAGES = ["home", "search", "settings", "help", "about", "news"]
ABSENT = ["admin", "login", "debug"]


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


def _lines(path: Path, strings: list[str]) -> Path:
    path.write_text("\n".join(strings) + "\n", encoding="utf-8")
    return path


def _json(result: object) -> dict[str, object]:
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    return dict(json.loads(result.stdout, parse_constant=no_constant))  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, object]]:
    """60,000 devices, Zipf's law over PAGES, 16 cohorts and the paper's m, h, f, p, q."""
    runner = CliRunner(env=ENV)
    tmp = tmp_path_factory.mktemp("rappor")
    cand = _lines(tmp / "pages.txt", PAGES)
    out = tmp / "day.dnrp"
    info = _json(run(runner, "telemetry", "simulate", "--mechanism", "rappor", "--out", out,
                     "--devices", 60_000, "--candidates", cand, "--cohorts", 16, "--seed", 11,
                     "--json"))  # fmt: skip
    return out, _lines(tmp / "decode.txt", PAGES + ABSENT), info


def test_simulate_then_aggregate_recovers_the_planted_frequencies(
    runner: CliRunner, simulated: tuple[Path, Path, dict[str, object]]
) -> None:
    out, decode, info = simulated
    rappor = Rappor(m=128, h=2, cohorts=16, f=0.5, p=0.5, q=0.75)
    assert info["mechanism"] == rappor.key == read_report_key(out)
    assert info["devices"] == 60_000 and info["bytes"] == out.stat().st_size
    # epsilon: the permanent response's (any number of reports), then the first report's
    assert info["epsilon"] == pytest.approx(4 * math.log(3), rel=1e-12)
    assert info["epsilon_1"] == pytest.approx(rappor.epsilon, rel=1e-12)
    est = _json(run(runner, "telemetry", "aggregate", out, "--candidates", decode,
                    "--batch", 4096, "--json"))  # fmt: skip
    assert est["n"] == 60_000 and est["method"] == "nnls" and est["level"] == 0.95
    rows = {row["candidate"]: row for row in est["candidates"]}  # type: ignore[attr-defined]
    assert list(rows) == PAGES + ABSENT
    # Zipf's law (s = 1) over the candidates in their order: 1 / ((j + 1) H_6)
    harmonic = sum(1 / (j + 1) for j in range(len(PAGES)))
    for j, page in enumerate(PAGES):
        row = rows[page]
        truth = 1 / ((j + 1) * harmonic)
        # within 4 SEs: a false alarm about 6e-5 a candidate (two-sided normal), 4e-4 in
        # all; the seed is fixed, so the run is the same every time
        assert abs(row["frequency"] - truth) < 4 * row["se"], (page, row, truth)
        assert row["count"] == pytest.approx(row["frequency"] * 60_000)
        lo, hi = row["ci"]
        assert lo < row["frequency"] < hi and hi - lo == pytest.approx(2 * 1.96 * row["se"], 1e-3)
    # the command prints the library's decoding of the file's tally
    lib = rappor.decode(tally_file(rappor, out), PAGES + ABSENT).to_dict()
    assert [r["frequency"] for r in lib["candidates"]] == [rows[c]["frequency"] for c in rows]
    assert [r["se"] for r in lib["candidates"]] == [rows[c]["se"] for c in rows]
    # the four commonest (above 7%) are reported; no absent page is (Bonferroni, alpha 0.05)
    assert all(rows[p]["reported"] for p in PAGES[:4])
    assert not any(rows[a]["reported"] for a in ABSENT)
    # the table: every candidate, the decoder's diagnostics and both epsilons
    table = run(runner, "aggregate", out, "--candidates", decode, "--method", "lasso")
    assert table.exit_code == 0, table.output
    text = " ".join(table.stdout.split())
    assert "candidates reported, n = 60000" in text and "non-negative Lasso" in text
    assert "epsilon 4.3944 over any number of reports of a value" in text
    assert "1.0743 the first report's" in text and "residual scale" in text
    assert all(name in table.stdout for name in PAGES + ABSENT)


def test_values_file_gives_each_device_its_string(runner: CliRunner, tmp_path: Path) -> None:
    strings = ["a"] * 6000 + ["b"] * 2000
    values = _lines(tmp_path / "values.txt", strings)
    out = tmp_path / "v.dnrp"
    info = _json(run(runner, "telemetry", "simulate", "--mechanism", "rappor", "--out", out,
                     "--values", values, "--m", 64, "--h", 1, "--cohorts", 8, "--f", 0.25,
                     "--p", 0.25, "--q", 0.75, "--seed", 2, "--json"))  # fmt: skip
    assert info["devices"] == 8000
    meta = read_report_metadata(out)
    assert meta is not None
    assert {k: meta[k] for k in ("m", "h", "cohorts", "f", "p", "q")} == {
        "m": 64, "h": 1, "cohorts": 8, "f": 0.25, "p": 0.25, "q": 0.75}  # fmt: skip
    cand = _lines(tmp_path / "c.txt", ["a", "b", "c"])
    est = _json(run(runner, "telemetry", "aggregate", out, "--candidates", cand, "--json"))
    rows = {row["candidate"]: row for row in est["candidates"]}  # type: ignore[attr-defined]
    # within 4 SEs of the planted 3/4 and 1/4 (false alarm about 1e-4 in all; fixed seed)
    assert abs(rows["a"]["frequency"] - 0.75) < 4 * rows["a"]["se"]
    assert abs(rows["b"]["frequency"] - 0.25) < 4 * rows["b"]["se"]


def test_simulate_is_reproducible_and_an_infinite_epsilon_is_printed_as_such(
    runner: CliRunner, tmp_path: Path
) -> None:
    cand = _lines(tmp_path / "c.txt", ["x", "y"])
    a, b = tmp_path / "a.dnrp", tmp_path / "b.dnrp"
    for path in (a, b):
        res = run(runner, "telemetry", "simulate", "--mechanism", "rappor", "--out", path,
                  "--devices", 500, "--candidates", cand, "--m", 16, "--seed", 5,
                  "--f", 0)  # fmt: skip
        assert res.exit_code == 0, res.output
    assert a.read_bytes() == b.read_bytes()
    # f = 0: no permanent randomization, so no bound over repeated reports
    assert "∞" in res.stdout and "epsilon ∞ over any number of reports" in " ".join(
        res.stdout.split()
    )
    meta = read_report_metadata(a)
    assert meta is not None and meta["permanent_epsilon"] == "inf"


def test_bad_rappor_input_is_one_error_line(
    runner: CliRunner, tmp_path: Path, simulated: tuple[Path, Path, dict[str, object]]
) -> None:
    out, decode, _ = simulated
    cand = _lines(tmp_path / "c.txt", PAGES)
    new = tmp_path / "new.dnrp"
    sim = ("telemetry", "simulate", "--mechanism", "rappor", "--out", new)
    one_error(run(runner, "aggregate", out), "`--candidates` FILE", "is needed to decode")
    empty = _lines(tmp_path / "empty.txt", [""])
    one_error(run(runner, "aggregate", out, "--candidates", empty),
              "must hold at least one string")  # fmt: skip
    dup = _lines(tmp_path / "dup.txt", ["home", "search", "home"])
    one_error(run(runner, "aggregate", out, "--candidates", dup),
              "must hold distinct strings", "'home' on lines 1 and 3")  # fmt: skip
    one_error(run(runner, "aggregate", out, "--candidates", tmp_path / "missing.txt"),
              "cannot read")  # fmt: skip
    one_error(run(runner, "aggregate", out, "--candidates", decode, "--method", "ridge"),
              "`method` must be one of")  # fmt: skip
    one_error(run(runner, "aggregate", out, "--candidates", decode, "--penalty", 1),
              "`penalty` applies to method='lasso' only")  # fmt: skip
    # a file of another mechanism: the decoder's options are refused
    olh = tmp_path / "olh.dnrp"
    assert run(runner, "telemetry", "simulate", "--out", olh, "--devices", 50, "--k", 8,
               "--epsilon", 1).exit_code == 0  # fmt: skip
    one_error(run(runner, "aggregate", olh, "--candidates", cand),
              "`--candidates` apply to RAPPOR's reports only")  # fmt: skip
    # a RAPPOR file whose header was written for other parameters
    bad = tmp_path / "bad.dnrp"
    bad.write_bytes(out.read_bytes().replace(b'"deniable.rappor/1"', b'"deniable.rappor/2"'))
    one_error(run(runner, "aggregate", bad, "--candidates", decode),
              "other RAPPOR parameters", "hash")  # fmt: skip
    # simulate
    one_error(run(runner, *sim, "--devices", 10), "give --candidates FILE", "got neither")
    one_error(run(runner, *sim, "--devices", 10, "--candidates", cand, "--values", cand),
              "got both")  # fmt: skip
    one_error(run(runner, *sim, "--candidates", cand), "`--devices` must be given")
    one_error(run(runner, *sim, "--devices", 10, "--candidates", dup), "distinct strings")
    one_error(run(runner, *sim, "--devices", 10, "--candidates", cand, "--k", 4, "--epsilon",
                  1), "`--k` and `--epsilon` do not apply")  # fmt: skip
    one_error(run(runner, *sim, "--devices", 10, "--candidates", cand, "--m", 12),
              "`m` (Bloom filter bits) must be a positive multiple of 8, got 12")  # fmt: skip
    one_error(run(runner, *sim, "--devices", 10, "--candidates", cand, "--p", 0.8),
              "`p` must be less than `q`")  # fmt: skip
    one_error(run(runner, *sim, "--devices", 10, "--values", cand, "--devices", 7),
              "number of strings of --values (6)")  # fmt: skip
    # a table whose suffix contradicts --format: refused, nothing written
    one_error(run(runner, "telemetry", "simulate", "--mechanism", "rappor", "--out",
                  tmp_path / "t.parquet", "--format", "csv", "--devices", 10, "--candidates",
                  cand), "--format")  # fmt: skip
    one_error(run(runner, "telemetry", "simulate", "--out", new, "--devices", 10, "--k", 4,
                  "--epsilon", 1, "--m", 64),
              "`--m` apply to `--mechanism rappor` only")  # fmt: skip
    one_error(run(runner, "telemetry", "simulate", "--out", new, "--devices", 10),
              "`--k`, `--epsilon` must be given for `--mechanism olh`")  # fmt: skip
    assert not new.exists() and not (tmp_path / "t.parquet").exists()


def test_huge_candidate_lists_are_refused_before_decoding(
    runner: CliRunner, tmp_path: Path
) -> None:
    r = Rappor(m=1024, h=2, cohorts=1024, f=0.5, p=0.5, q=0.75)
    from deniable.mechanisms import InMemoryMemoStore
    from deniable.oracles import RapporClient, write_reports

    rep = RapporClient(r, InMemoryMemoStore()).report(np.arange(10), ["a"] * 10, rng=1)
    path = write_reports(tmp_path / "wide.dnrp", r, rep)
    cand = _lines(tmp_path / "many.txt", [f"s{i}" for i in range(40)])
    one_error(run(runner, "aggregate", path, "--candidates", cand),
              "`--candidates` must hold at most 32 strings for this file", "got 40")  # fmt: skip
