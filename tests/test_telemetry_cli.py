"""`deniable telemetry`: choose, simulate into a report file, aggregate it in batches; bad
input is one `error:` line with exit status 2 and no file left behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _cli import ENV, one_error, run
from deniable.oracles import OLH, oracle_from_key, read_report_key, tally_file


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


def test_choose_prints_the_ranking_and_the_reason(runner: CliRunner) -> None:
    res = run(runner, "telemetry", "choose", "--k", "4", "--epsilon", "4", "--n", "1000")
    assert res.exit_code == 0, res.output
    assert "GRR has the smallest exact variance" in res.stdout
    data = json.loads(run(runner, "telemetry", "choose", "--k", "4", "--epsilon", "4",
                          "--json").stdout)  # fmt: skip
    assert data["oracle"].startswith("categorical{") and len(data["candidates"]) == 8


@pytest.mark.parametrize("mechanism", ["olh", "olh-linear", "oue", "hadamard", "grr"])
def test_simulate_then_aggregate_in_batches(
    runner: CliRunner, tmp_path: Path, mechanism: str
) -> None:
    out = tmp_path / "day.dnrp"
    res = run(runner, "telemetry", "simulate", "--out", str(out), "--devices", "5000",
              "--k", "20", "--epsilon", "2", "--mechanism", mechanism, "--seed", "4",
              "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    assert info["devices"] == 5000 and info["seed"] == 4 and info["bytes"] == out.stat().st_size
    oracle = oracle_from_key(read_report_key(out))
    assert oracle.key == info["mechanism"]
    agg = run(runner, "telemetry", "aggregate", str(out), "--batch", "1024", "--json")
    assert agg.exit_code == 0, agg.output
    est = json.loads(agg.stdout)
    assert est["n"] == 5000 and len(est["estimate"]) == 20
    assert est == json.loads(json.dumps(oracle.estimate(tally_file(oracle, out)).to_dict()))
    # the commonest value (frequency 1/H_20 = 0.28) is found
    assert abs(est["estimate"][0] - 0.278) < 6 * est["se"][0]
    # `deniable aggregate` is the same command at the top level
    top = run(runner, "aggregate", str(out), "--batch", "2048", "--json")
    assert top.exit_code == 0 and json.loads(top.stdout) == est
    table = run(runner, "telemetry", "aggregate", str(out), "--rows", "3")
    assert table.exit_code == 0
    shown = "17 more categories" if mechanism != "grr" else "Estimate of 20 category shares"
    assert shown in table.stdout


def test_simulate_is_reproducible_from_its_seed(runner: CliRunner, tmp_path: Path) -> None:
    a, b = tmp_path / "a.dnrp", tmp_path / "b.dnrp"
    for path in (a, b):
        run(runner, "telemetry", "simulate", "--out", str(path), "--devices", "300", "--k",
            "8", "--epsilon", "1", "--seed", "9")  # fmt: skip
    assert a.read_bytes() == b.read_bytes()


def test_bad_input_is_one_error_line_and_no_file(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "x.dnrp"
    one_error(run(runner, "telemetry", "simulate", "--out", str(out), "--devices", "10",
                  "--k", "4", "--epsilon", "1", "--mechanism", "rappor"),
              "`--mechanism` must be one of", "got 'rappor'")  # fmt: skip
    one_error(run(runner, "telemetry", "simulate", "--out", str(out), "--devices", "10",
                  "--k", "1", "--epsilon", "1"), "--k")  # fmt: skip
    one_error(run(runner, "telemetry", "simulate", "--out", str(out), "--devices", "10",
                  "--k", "4", "--epsilon", "0"), "`epsilon`")  # fmt: skip
    assert list(tmp_path.iterdir()) == []
    one_error(run(runner, "telemetry", "simulate", "--out", str(out), "--devices", "10000000",
                  "--k", "65536", "--epsilon", "1", "--mechanism", "oue"),
              "larger than 16 GiB")  # fmt: skip
    one_error(run(runner, "telemetry", "choose", "--k", "57216", "--epsilon", "122"),
              "no frequency oracle takes k = 57216")  # fmt: skip
    one_error(run(runner, "telemetry", "aggregate", str(tmp_path / "missing.dnrp")),
              "cannot read")  # fmt: skip
    one_error(run(runner, "telemetry", "aggregate", str(tmp_path)), "is a directory")
    olh = OLH.from_epsilon(1.0, k=10)
    good = tmp_path / "good.dnrp"
    run(runner, "telemetry", "simulate", "--out", str(good), "--devices", "50", "--k", "10",
        "--epsilon", "1", "--seed", "1")  # fmt: skip
    cut = tmp_path / "cut.dnrp"
    cut.write_bytes(good.read_bytes()[:-3])
    one_error(run(runner, "telemetry", "aggregate", str(cut)), "(truncated)")
    one_error(run(runner, "telemetry", "aggregate", str(good), "--batch", "1"), "--batch")
    junk = tmp_path / "junk.dnrp"
    junk.write_bytes(b"hello world, not reports")
    one_error(run(runner, "telemetry", "aggregate", str(junk)), "not a report file")
    assert olh.key == read_report_key(good)
