"""`deniable telemetry`: choose, simulate into a report file, aggregate it in batches; bad
input is one `error:` line with exit status 2 and no file left behind."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
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
    # one table for every oracle, k-ary RR included (one estimate type since 1.1)
    assert "17 more categories" in table.stdout and ": 20 categories, n = 5000" in table.stdout


def test_simulate_takes_the_librarys_registry_and_population(
    runner: CliRunner, tmp_path: Path
) -> None:
    from deniable.cli._telemetry import MECHANISMS
    from deniable.oracles import FREQUENCY_ORACLES, make_oracle
    from deniable.simulation import DevicePopulation

    assert tuple(FREQUENCY_ORACLES) == MECHANISMS  # --help lists the registry, in order
    for mechanism in ("grr", "subset"):
        out = tmp_path / f"{mechanism}.dnrp"
        res = run(runner, "telemetry", "simulate", "--out", str(out), "--devices", "3000",
                  "--k", "12", "--epsilon", "1.5", "--mechanism", mechanism, "--seed", "8",
                  "--json")  # fmt: skip
        assert res.exit_code == 0, res.output
        oracle = make_oracle(mechanism, 1.5, 12)
        assert json.loads(res.stdout)["mechanism"] == oracle.key
        # the devices are the library's Zipf population, drawn and randomized from the seed
        (reports,) = DevicePopulation.zipf(12).reports(
            oracle, 3000, rng=np.random.default_rng(8), batch=3000
        )
        assert tally_file(oracle, out) == oracle.tally(reports)


def test_simulate_is_reproducible_from_its_seed(runner: CliRunner, tmp_path: Path) -> None:
    a, b = tmp_path / "a.dnrp", tmp_path / "b.dnrp"
    for path in (a, b):
        run(runner, "telemetry", "simulate", "--out", str(path), "--devices", "300", "--k",
            "8", "--epsilon", "1", "--seed", "9")  # fmt: skip
    assert a.read_bytes() == b.read_bytes()


def test_bad_input_is_one_error_line_and_no_file(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "x.dnrp"
    one_error(run(runner, "telemetry", "simulate", "--out", str(out), "--devices", "10",
                  "--k", "4", "--epsilon", "1", "--mechanism", "rapor"),
              "`--mechanism` must be one of", "rappor, got 'rapor'")  # fmt: skip
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


# ---- work follows what is asked (issue 14)


def _small_report_file(path: Path, oracle: object, n: int = 3) -> Path:
    import numpy as np

    from deniable.oracles import write_reports

    reports = oracle.randomize(np.zeros(n, dtype=np.int64), rng=np.random.default_rng(0))  # type: ignore[attr-defined]
    write_reports(path, oracle, reports)
    return path


def _category_rows(text: str) -> int:
    """The table rows of categories: lines that start with a category number."""
    return sum(1 for line in text.splitlines() if line.split()[:1] and line.split()[0].isdigit())


def test_aggregate_computes_and_prints_only_the_rows_asked(
    runner: CliRunner, tmp_path: Path
) -> None:
    """k-ary RR (the categorical design's table) printed all k rows whatever --rows said."""
    from deniable.designs import Categorical

    grr = _small_report_file(tmp_path / "grr.dnrp", Categorical.from_epsilon(1.0, k=8192), 50)
    res = run(runner, "aggregate", str(grr), "--rows", "3")
    assert res.exit_code == 0, res.output
    assert _category_rows(res.stdout) == 3 and "8189 more categories" in res.stdout
    res = run(runner, "aggregate", str(grr))  # the default: 32 rows, as for every oracle
    assert _category_rows(res.stdout) == 32 and "8160 more categories" in res.stdout
    res = run(runner, "aggregate", str(grr), "--rows", "5", "--json")
    data = json.loads(res.stdout)
    assert data["k"] == 8192 and data["rows"] == 5
    assert len(data["estimate"]) == len(data["categories"]) == len(data["ci_exact"]) == 5


def test_a_tiny_file_declaring_a_huge_k_gets_a_small_answer_or_one_error(
    runner: CliRunner, tmp_path: Path
) -> None:
    """A 491-byte report file can declare k = 2**24: --json built gigabytes of JSON (and the
    table computed every interval); now --json needs --rows past 65,536 categories and the
    table computes the rows it shows."""
    olh = OLH.from_epsilon(1.0, k=1 << 24)
    path = _small_report_file(tmp_path / "huge-k.dnrp", olh)
    assert path.stat().st_size < 491
    one_error(run(runner, "aggregate", str(path), "--json"), "at most 65,536",
              "k = 16,777,216", "--rows")  # fmt: skip
    res = run(runner, "aggregate", str(path), "--json", "--rows", "2")
    assert res.exit_code == 0 and len(res.stdout) < 4000
    data = json.loads(res.stdout)
    assert data["k"] == 1 << 24 and data["rows"] == 2 and len(data["ci_exact"]) == 2
    res = run(runner, "aggregate", str(path))
    assert res.exit_code == 0 and len(res.stdout) < 6000
    assert _category_rows(res.stdout) == 32 and "16777184 more categories" in res.stdout
    one_error(
        run(runner, "aggregate", str(path), "--rows", "70000"), "`--rows` must be at most 65,536"
    )


def test_a_batch_holds_at_most_batch_bytes_of_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--batch counted reports whatever their size: 2**20 reports of OUE at k = 2**16 are
    8 GB.  A batch now holds at most BATCH_BYTES (128 MB; 64 KB here) of reports."""
    from deniable.oracles import OUE, _files

    oue = OUE.from_epsilon(1.0, k=8192)  # 1 KB a report
    path = _small_report_file(tmp_path / "wide.dnrp", oue, 300)
    monkeypatch.setattr(_files, "BATCH_BYTES", 1 << 16)
    seen: list[int] = []
    tally = tally_file(oue, path, batch=1 << 20, progress=lambda done, total: seen.append(done))
    assert seen == [64, 128, 192, 256, 300]
    assert tally == oue.tally(
        oue.randomize(np.zeros(300, dtype=np.int64), rng=np.random.default_rng(0))
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--bins", "8", "--lower", "0"],
         "`--lower`, `--bins` apply to `--mechanism` hierarchical-histogram, haar-hrr, "
         "square-wave only, got 'olh'."),
        (["--gram", "2"],
         "`--gram` apply to `--mechanism sfp` and `rappor-ngram` only, got 'olh'."),
        (["--step-bits", "4", "--max-bytes", "8"],
         "`--max-bytes`, `--step-bits` apply to `--mechanism pem` and `treehist` only, got 'olh'."),
        (["--salt", "3"], "`--salt` apply to `--mechanism cms` and `hcms` only, got 'olh'."),
    ],
)  # fmt: skip
def test_another_mechanisms_options_are_refused_by_name(
    runner: CliRunner, tmp_path: Path, options: list[str], message: str
) -> None:
    # the whole line: every option given named in the order the command lists them, and to
    # which mechanisms they apply
    out = tmp_path / "x.dnrp"
    res = run(runner, "telemetry", "simulate", "--mechanism", "olh", "--devices", "10",
              "--k", "4", "--epsilon", "1", "--out", out, *options)  # fmt: skip
    assert one_error(res) == f"error: {message}"
    assert not out.exists()


_HOLDS = {
    "pem": ("heavy-hitter reports (PEM/TreeHist), found without a dictionary; their options "
            "are --top-k, --alpha and --level."),
    "hierarchical-histogram": ("the reports of a mechanism of ordered values (its estimate "
                               "takes --range, --quantile and --level)."),
    "sfp": ("sfp reports, strings found without a dictionary; their options are --alpha, "
            "--level and --max-candidates."),
    "rappor-ngram": ("rappor-ngram reports, strings found without a dictionary; their options "
                     "are --alpha, --level, --edge-threshold and --max-candidates."),
}  # fmt: skip
_SIMULATE = {
    "pem": ["--epsilon", "4", "--max-bytes", "4"],
    "hierarchical-histogram": ["--devices", "50", "--epsilon", "1", "--domain", "16"],
    "sfp": ["--epsilon", "6", "--alphabet", "ab", "--max-length", "4"],
    "rappor-ngram": ["--alphabet", "ab", "--max-length", "4", "--cohorts", "4"],
}


@pytest.mark.parametrize("mechanism", sorted(_HOLDS))
def test_aggregate_refuses_options_the_reports_do_not_take(
    runner: CliRunner, tmp_path: Path, mechanism: str
) -> None:
    # the whole line: the options given that these reports do not take, what they hold
    out = tmp_path / "x.dnrp"
    values = tmp_path / "values.txt"
    values.write_text("abba\nba\nab\n" * 10)
    strings = [] if mechanism == "hierarchical-histogram" else ["--values", values]
    res = run(runner, "telemetry", "simulate", "--mechanism", mechanism, "--out", out,
              "--seed", "1", *_SIMULATE[mechanism], *strings)  # fmt: skip
    assert res.exit_code == 0, res.output
    res = run(runner, "telemetry", "aggregate", out, "--candidates", values, "--rows", "3")
    assert one_error(res) == f"error: `--candidates`, `--rows` do not apply to {str(out)!r}: " + (
        f"it holds {_HOLDS[mechanism]}"
    )
