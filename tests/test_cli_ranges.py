"""`deniable telemetry simulate --mechanism hierarchical-histogram|haar-hrr|square-wave` and
`aggregate` of the report file it writes: range shares, quantiles and the distribution of
numbers with their intervals; bad input is one `error:` line with exit status 2 and no file
written.

Statistical checks use fixed seeds; a range share is compared with its closed form (Zipf's
law) within 4 SE (two-sided false-alarm rate 6.3e-5 a comparison under the normal
approximation), a quantile's interval at level 0.9999 must hold the true quantile (the
band's pointwise false-alarm rate 1e-4 at the two prefixes around it)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from _cli import ENV, no_constant, one_error, run
from deniable.oracles import (
    OLH,
    HaarHRR,
    HierarchicalHistogram,
    SquareWave,
    range_from_key,
    read_report_key,
    tally_file,
    write_reports,
)

N = 60_000
D = 256


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


def _json(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout, parse_constant=no_constant))


def _zipf_cdf(t: int, d: int = D) -> float:
    """The share of values at most ``t`` under Zipf's law on ``0..d-1`` (``1 / (j + 1)``)."""
    h = np.cumsum(1.0 / np.arange(1, d + 1))
    return float(h[t] / h[-1])


RANGE_OPTIONS = {
    "hierarchical-histogram": ("--domain", D, "--branching", 4, "--level-oracle", "olh"),
    "haar-hrr": ("--domain", D),
}


@pytest.fixture(scope="module", params=sorted(RANGE_OPTIONS))
def simulated(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path, dict[str, Any]]:
    """N devices, Zipf's law over 0..255, at epsilon 2."""
    mechanism = request.param
    out = tmp_path_factory.mktemp(mechanism) / "day.dnrp"
    info = _json(run(CliRunner(env=ENV), "telemetry", "simulate", "--mechanism", mechanism,
                     "--out", out, "--devices", N, "--epsilon", 2, "--seed", 11,
                     *RANGE_OPTIONS[mechanism], "--json"))  # fmt: skip
    return mechanism, out, info


def test_simulate_writes_a_report_file_of_the_mechanism_it_names(
    simulated: tuple[str, Path, dict[str, Any]],
) -> None:
    mechanism, out, info = simulated
    expected = (
        HierarchicalHistogram(D, 4, 2.0, oracle="olh")
        if mechanism == "hierarchical-histogram"
        else HaarHRR(D, 2.0)
    )
    assert info["mechanism"] == expected.key == read_report_key(out)
    assert range_from_key(info["mechanism"]) == expected
    assert info["devices"] == N and info["seed"] == 11 and info["bytes"] == out.stat().st_size
    assert info["epsilon"] == expected.epsilon <= 2.0
    # a record: the level (one item of the level reports' type: OLH's 8-byte words,
    # Hadamard response's integers), then the widest level's report (OLH: a, b, y)
    item = np.asarray(expected.levels[-1].randomize([0], rng=0)).dtype.itemsize
    record = item * (1 + (3 if mechanism == "hierarchical-histogram" else 1))
    key = info["mechanism"].encode()
    header = 4 + 2 + 4 + len(key) + 4 + 3 + 4 + 8
    assert out.stat().st_size == header + N * record
    assert expected.estimate(tally_file(expected, out)).n == N


def test_aggregate_answers_ranges_and_quantiles_with_intervals(
    runner: CliRunner, simulated: tuple[str, Path, dict[str, Any]]
) -> None:
    mechanism, out, _ = simulated
    ranges = [(0, 0), (0, 9), (10, 200), (37, 255)]
    args = [a for lo, hi in ranges for a in ("--range", f"{lo}:{hi}")]
    data = _json(run(runner, "telemetry", "aggregate", out, *args, "--quantile", 0.5,
                     "--quantile", 0.9, "--level", 0.9999, "--json"))  # fmt: skip
    assert data["mechanism"] == read_report_key(out) and data["n"] == N
    assert sum(data["level_n"]) == N and len(data["leaves"]) == D
    z = 3.890591886413094  # the two-sided 0.9999 normal quantile
    for (lo, hi), ans in zip(ranges, data["ranges"], strict=True):
        truth = _zipf_cdf(hi) - (_zipf_cdf(lo - 1) if lo else 0.0)
        assert (ans["low"], ans["high"]) == (lo, hi)
        assert abs(ans["value"] - truth) < 4 * ans["se"], (mechanism, lo, hi, ans, truth)
        assert ans["ci"] == pytest.approx(
            [ans["value"] - z * ans["se"], ans["value"] + z * ans["se"]]
        )
    for q, found in zip((0.5, 0.9), data["quantiles"], strict=True):
        truth = next(t for t in range(D) if _zipf_cdf(t) >= q)
        low, high = found["interval"]
        assert found["q"] == q and low <= found["value"] <= high
        assert low <= truth <= high, (mechanism, q, found, truth)
    # the table: one row a query, the interval at the level asked
    table = run(runner, "telemetry", "aggregate", out, *args, "--quantile", 0.5)
    assert table.exit_code == 0, table.output
    assert "share of [10, 200]" in table.stdout and "0.5-quantile" in table.stdout
    assert "95% interval" in table.stdout and "epsilon" in table.stdout


def test_aggregate_without_queries_gives_the_quartiles(
    runner: CliRunner, simulated: tuple[str, Path, dict[str, Any]]
) -> None:
    _, out, _ = simulated
    data = _json(run(runner, "telemetry", "aggregate", out, "--json"))
    assert [q["q"] for q in data["quantiles"]] == [0.25, 0.5, 0.75] and data["ranges"] == []


def test_the_same_seed_writes_the_same_file(runner: CliRunner, tmp_path: Path) -> None:
    paths = []
    for name in ("a.dnrp", "b.dnrp"):
        result = run(runner, "telemetry", "simulate", "--mechanism", "haar-hrr", "--domain",
                     16, "--epsilon", 1, "--devices", 500, "--seed", 4,
                     "--out", tmp_path / name)  # fmt: skip
        assert result.exit_code == 0, result.output
        paths.append(tmp_path / name)
    assert paths[0].read_bytes() == paths[1].read_bytes()


def test_square_wave_simulates_and_estimates_the_distribution(
    runner: CliRunner, tmp_path: Path
) -> None:
    from scipy import stats

    out = tmp_path / "load.dnrp"
    info = _json(run(runner, "telemetry", "simulate", "--mechanism", "square-wave", "--lower",
                     2, "--upper", 12, "--bins", 64, "--epsilon", 2, "--devices", N,
                     "--seed", 9, "--out", out, "--json"))  # fmt: skip
    sw = SquareWave(2.0, lower=2.0, upper=12.0, bins=64)
    assert info["mechanism"] == sw.key == read_report_key(out)
    assert out.stat().st_size == 4 + 2 + 4 + len(sw.key.encode()) + 4 + 3 + 4 + 8 + 2 * N
    data = _json(run(runner, "telemetry", "aggregate", out, "--quantile", 0.5, "--json"))
    assert data["n"] == N and len(data["shares"]) == 64 and len(data["edges"]) == 65
    assert math.isclose(sum(data["shares"]), 1.0, abs_tol=1e-9)
    # X = 2 + 10 Beta(2, 5): mean 2 + 10 * 2 / 7, exactly unbiased by the moment mean
    moment = data["moment_mean"]
    assert abs(moment["value"] - (2 + 20 / 7)) < 4 * moment["se"]
    low, high = moment["ci"]
    assert low < moment["value"] < high
    # the EMS median against the true one: its bootstrap SE plus the smoothing's bias,
    # which a 64-bin fit keeps well below a bin (10 / 64)
    median = data["quantiles"][0]
    truth = 2 + 10 * float(stats.beta.ppf(0.5, 2, 5))
    assert abs(median["value"] - truth) < 4 * median["se"] + 10 / 64
    assert median["ci"][0] <= median["value"] <= median["ci"][1]
    table = run(runner, "telemetry", "aggregate", out)
    assert table.exit_code == 0, table.output
    assert "mean (moment, unbiased)" in table.stdout and "0.5-quantile" in table.stdout
    # the file's estimate is the library's
    est = sw.estimate(tally_file(sw, out))
    assert data["mean"]["value"] == est.mean().value


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--mechanism", "olh", "--k", 4, "--epsilon", 1, "--domain", 4),
         ("`--domain`", "only", "'olh'")),
        (("--mechanism", "haar-hrr", "--epsilon", 1), ("`--domain`", "must be given")),
        (("--mechanism", "haar-hrr", "--domain", 1000, "--epsilon", 1),
         ("`--domain` must be a power",)),
        (("--mechanism", "haar-hrr", "--domain", 16, "--epsilon", 1, "--bins", 3),
         ("`--bins`", "haar-hrr")),
        (("--mechanism", "hierarchical-histogram", "--domain", 16, "--epsilon", 1,
          "--level-oracle", "sue"), ("`--level-oracle` must be one of",)),
        (("--mechanism", "hierarchical-histogram", "--domain", 2**17, "--epsilon", 1),
         ("`--domain` 131072 is too large for `--level-oracle` oue",)),
        (("--mechanism", "square-wave", "--epsilon", 1, "--lower", 3, "--upper", 2),
         ("`--lower` and `--upper`",)),
        (("--mechanism", "square-wave", "--epsilon", 1, "--k", 3), ("`--k`", "square-wave")),
        (("--mechanism", "square-wave", "--epsilon", 0), ("`--epsilon`",)),
        (("--mechanism", "square-wave", "--epsilon", 1, "--salt", 3), ("`--salt`",)),
        (("--mechanism", "haar-hrr", "--domain", 16, "--epsilon", 1, "--max-bytes", 3),
         ("`--max-bytes`",)),
    ],
)  # fmt: skip
def test_simulate_refuses_bad_options_with_one_line(
    runner: CliRunner, tmp_path: Path, args: tuple[Any, ...], needles: tuple[str, ...]
) -> None:
    out = tmp_path / "x.dnrp"
    one_error(run(runner, "telemetry", "simulate", "--out", out, "--devices", 10, *args),
              *needles)  # fmt: skip
    assert not out.exists()


def test_simulate_refuses_candidates_and_values(runner: CliRunner, tmp_path: Path) -> None:
    lines = tmp_path / "v.txt"
    lines.write_text("1\n2\n", encoding="utf-8")
    for option in ("--candidates", "--values"):
        one_error(run(runner, "telemetry", "simulate", "--mechanism", "haar-hrr", "--domain", 4,
                      "--epsilon", 1, "--devices", 2, option, lines,
                      "--out", tmp_path / "x.dnrp"), f"`{option}`")  # fmt: skip
    assert not (tmp_path / "x.dnrp").exists()


def test_aggregate_refuses_bad_queries_with_one_line(runner: CliRunner, tmp_path: Path) -> None:
    haar = HaarHRR(16, 1.0)
    path = write_reports(tmp_path / "h.dnrp", haar, haar.randomize(np.arange(200) % 16, rng=1))
    for bad in ("3-5", "5:3", "0:16", "a:b", "-1:2"):
        one_error(run(runner, "telemetry", "aggregate", path, "--range", bad), "`--range`",
                  repr(bad))  # fmt: skip
    for q in ("0", "1.5", "nan"):
        one_error(run(runner, "telemetry", "aggregate", path, "--quantile", q), "`--quantile`")
    for option in (("--top-k", 3), ("--rows", 2), ("--alpha", 0.1), ("--method", "lasso")):
        one_error(run(runner, "telemetry", "aggregate", path, *option), f"`{option[0]}`",
                  "ordered values")  # fmt: skip
    sw = SquareWave(1.0)
    wave = write_reports(tmp_path / "w.dnrp", sw, sw.randomize(np.full(50, 0.5), rng=1))
    one_error(run(runner, "telemetry", "aggregate", wave, "--range", "0:1"), "`--range`",
              "square-wave")  # fmt: skip
    olh = OLH.from_epsilon(1.0, k=8)
    other = write_reports(tmp_path / "o.dnrp", olh, olh.randomize(np.arange(40) % 8, rng=1))
    for option in (("--range", "0:1"), ("--quantile", 0.5)):
        one_error(run(runner, "telemetry", "aggregate", other, *option), f"`{option[0]}`",
                  "another mechanism")  # fmt: skip


@pytest.mark.parametrize("mechanism", ["hierarchical-histogram", "haar-hrr", "square-wave"])
def test_a_report_table_gives_the_report_files_estimate(
    runner: CliRunner, tmp_path: Path, mechanism: str
) -> None:
    opts = {"hierarchical-histogram": ("--domain", 64, "--branching", 4, "--level-oracle", "oue"),
            "haar-hrr": ("--domain", 64), "square-wave": ("--bins", 32)}[mechanism]  # fmt: skip
    queries = (
        ("--quantile", 0.5, "--seed", 4) if mechanism == "square-wave" else ("--range", "3:40")
    )
    results = []
    for name in ("r.dnrp", "r.parquet", "r.csv"):
        sim = run(runner, "telemetry", "simulate", "--mechanism", mechanism, *opts, "--epsilon",
                  2, "--devices", 3000, "--seed", 21, "--out", tmp_path / name)  # fmt: skip
        assert sim.exit_code == 0, sim.output
        key = ("--mechanism", read_report_key(tmp_path / "r.dnrp")) if name == "r.csv" else ()
        results.append(_json(run(runner, "telemetry", "aggregate", tmp_path / name, *queries,
                                 *key, "--local-workers", 0, "--json")))  # fmt: skip
    for other in results[1:]:
        assert {k: x for k, x in other.items() if k != "file"} == {
            k: x for k, x in results[0].items() if k != "file"
        }
    one_error(run(runner, "telemetry", "aggregate", tmp_path / "r.parquet", "--candidates",
                  tmp_path / "r.csv", "--local-workers", 0), "`--candidates`",
              "ordered values")  # fmt: skip


def test_square_wave_bootstrap_takes_replicates_and_a_seed(
    runner: CliRunner, tmp_path: Path
) -> None:
    sw = SquareWave(2.0, bins=32)
    gen = np.random.default_rng(5)
    path = write_reports(tmp_path / "w.dnrp", sw, sw.randomize(gen.beta(2.0, 5.0, 4000), rng=gen))
    data = _json(run(runner, "telemetry", "aggregate", path, "--quantile", 0.5,
                     "--replicates", 40, "--seed", 7, "--json"))  # fmt: skip
    assert (data["replicates"], data["seed"]) == (40, 7)
    # the library's bootstrap of the same replicates and seed, not the default one
    est = sw.estimate(tally_file(sw, path))
    mean, median = est.mean(replicates=40, seed=7), est.quantile(0.5, replicates=40, seed=7)
    assert data["mean"]["se"] == mean.se and data["mean"]["ci"] == list(mean.ci(0.95, "bootstrap"))
    assert data["quantiles"][0]["se"] == median.se
    assert data["mean"]["se"] != est.mean().se  # 200 replicates from seed 0 differ
    # without --seed: a fresh seed, printed, that repeats the run (the project's rule)
    default = _json(run(runner, "telemetry", "aggregate", path, "--json"))
    seed = default["seed"]
    assert default["replicates"] == 200 and isinstance(seed, int) and seed >= 0
    assert default["mean"]["se"] == est.mean(seed=seed).se
    again = _json(run(runner, "telemetry", "aggregate", path, "--seed", seed, "--json"))
    assert again["mean"] == default["mean"] and again["quantiles"] == default["quantiles"]
    table = run(runner, "telemetry", "aggregate", path, "--replicates", 40, "--seed", 7)
    assert table.exit_code == 0, table.output
    assert "(40 replicates, seed 7)" in " ".join(table.stdout.split())


def test_replicates_and_seed_are_checked_and_refused_for_other_reports(
    runner: CliRunner, tmp_path: Path
) -> None:
    sw = SquareWave(1.0)
    wave = write_reports(tmp_path / "w.dnrp", sw, sw.randomize(np.full(50, 0.5), rng=1))
    for bad in (1, 100_001, -3):
        one_error(run(runner, "telemetry", "aggregate", wave, "--replicates", bad),
                  "`--replicates`", "[2, 100000]", f"got {bad}")  # fmt: skip
    bad_seed = run(runner, "telemetry", "aggregate", wave, "--seed", -1)  # the shared --seed
    assert bad_seed.exit_code == 2 and "--seed" in bad_seed.output and bad_seed.stdout == ""
    haar = HaarHRR(16, 1.0)
    ranges = write_reports(tmp_path / "h.dnrp", haar, haar.randomize(np.arange(200) % 16, rng=1))
    olh = OLH.from_epsilon(1.0, k=8)
    other = write_reports(tmp_path / "o.dnrp", olh, olh.randomize(np.arange(40) % 8, rng=1))
    for path, name in ((ranges, "haar-hrr"), (other, "olh")):
        for option in (("--replicates", 50), ("--seed", 3)):
            one_error(run(runner, "telemetry", "aggregate", path, *option), f"`{option[0]}`",
                      "square-wave reports only", repr(name))  # fmt: skip
    table = tmp_path / "h.parquet"
    sim = run(runner, "telemetry", "simulate", "--mechanism", "haar-hrr", "--domain", 16,
              "--epsilon", 1, "--devices", 300, "--seed", 2, "--out", table)  # fmt: skip
    assert sim.exit_code == 0, sim.output
    one_error(run(runner, "telemetry", "aggregate", table, "--replicates", 50,
                  "--local-workers", 0), "`--replicates`", "'haar-hrr'")  # fmt: skip
