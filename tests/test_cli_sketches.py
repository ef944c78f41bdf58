"""`deniable telemetry simulate --mechanism cms|hcms` and `aggregate --candidates` of the
report file it writes: strings into a count mean sketch, each candidate's share estimated
with both SE conventions and an interval; bad input is one `error:` line with exit status 2
and no file written."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from _cli import ENV, no_constant, one_error, run
from deniable.oracles import CMS, HCMS, read_report_key, sketch_from_key, tally_file

PAGES = ["home", "search", "settings", "help", "about", "news"]
ABSENT = ["admin", "login"]
N = 40_000


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


def _lines(path: Path, strings: list[str]) -> Path:
    path.write_text("\n".join(strings) + "\n", encoding="utf-8")
    return path


def _json(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout, parse_constant=no_constant))


def _header_bytes(key: str, dtype: str) -> int:
    # DNRP, version, key length and key, dtype length and dtype, width, n (docs: report files)
    return 4 + 2 + 4 + len(key.encode()) + 4 + len(dtype) + 4 + 8


@pytest.fixture(scope="module", params=["cms", "hcms"])
def simulated(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path, Path, dict[str, Any]]:
    """N devices, Zipf's law over PAGES, a 16 x 64 sketch at epsilon 4."""
    mechanism = request.param
    runner = CliRunner(env=ENV)
    tmp = tmp_path_factory.mktemp(mechanism)
    cand = _lines(tmp / "pages.txt", PAGES)
    out = tmp / "day.dnrp"
    info = _json(run(runner, "telemetry", "simulate", "--mechanism", mechanism, "--out", out,
                     "--devices", N, "--candidates", cand, "--epsilon", 4, "--sketch-rows", 16,
                     "--sketch-columns", 64, "--seed", 5, "--json"))  # fmt: skip
    return mechanism, out, _lines(tmp / "ask.txt", PAGES + ABSENT), info


def _stated_epsilon(mechanism: str) -> float:
    """The epsilon a new sketch of ``--epsilon 4`` states: HCMS 4; CMS (spec 2, the
    default) the realized ``2 ln((2**16 - t) / t)``, ``t = ceil(2**16 / (1 + e^2))``."""
    if mechanism == "hcms":
        return 4.0
    t = math.ceil(2**16 / (1 + math.exp(2.0)))
    return 2 * math.log((2**16 - t) / t)


def test_simulate_writes_the_sketch_its_options_name(
    simulated: tuple[str, Path, Path, dict[str, Any]],
) -> None:
    mechanism, out, _, info = simulated
    cls = CMS if mechanism == "cms" else HCMS
    sketch = cls(k=16, m=64, epsilon=4.0, salt=info["salt"])
    assert info["mechanism"] == sketch.key == read_report_key(out)
    assert sketch_from_key(read_report_key(out)) == sketch
    assert 0 <= info["salt"] < 2**32
    assert info["devices"] == N and info["seed"] == 5 and info["format"] == "reports"
    assert info["epsilon"] == pytest.approx(_stated_epsilon(mechanism), rel=1e-14)
    assert info["implemented_epsilon"] <= info["epsilon"] <= 4.0
    # CMS: 2 bytes of row then 64 / 8 bytes of bits; HCMS: one int64 a report
    record, dtype = (2 + 8, "|u1") if mechanism == "cms" else (8, "<i8")
    assert info["bytes"] == out.stat().st_size == _header_bytes(sketch.key, dtype) + N * record


def test_aggregate_recovers_the_planted_frequencies(
    runner: CliRunner, simulated: tuple[str, Path, Path, dict[str, Any]]
) -> None:
    mechanism, out, ask, _ = simulated
    est = _json(run(runner, "telemetry", "aggregate", out, "--candidates", ask, "--batch", 4096,
                    "--json"))  # fmt: skip
    assert est["n"] == N and est["level"] == 0.95
    assert est["epsilon"] == pytest.approx(_stated_epsilon(mechanism), rel=1e-14)
    rows = {row["candidate"]: row for row in est["candidates"]}
    assert list(rows) == PAGES + ABSENT
    harmonic = sum(1 / (j + 1) for j in range(len(PAGES)))
    truth = {p: 1 / ((j + 1) * harmonic) for j, p in enumerate(PAGES)} | dict.fromkeys(ABSENT, 0)
    for name, row in rows.items():
        # within 4 SEs: a false alarm about 6e-5 a candidate (two-sided normal), 1e-3 over
        # the 8 candidates of both sketches; the seed is fixed, so the run is repeatable
        assert abs(row["frequency"] - truth[name]) < 4 * row["se"], (mechanism, name, row)
        assert 0 < row["se_fixed"] <= row["se"] * 1.5
        lo, hi = row["ci"]
        z = 1.959963984540054
        assert lo == pytest.approx(max(row["frequency"] - z * row["se"], 0.0), abs=1e-12)
        assert hi == pytest.approx(min(row["frequency"] + z * row["se"], 1.0), abs=1e-12)
    # the command prints the library's estimate of the file's tally
    sketch = sketch_from_key(read_report_key(out))
    lib = sketch.estimate(tally_file(sketch, out), PAGES + ABSENT).to_dict()
    assert lib["candidates"] == est["candidates"]


def test_aggregate_table_shows_the_rows_asked_and_the_epsilon(
    runner: CliRunner, simulated: tuple[str, Path, Path, dict[str, Any]]
) -> None:
    mechanism, out, ask, _ = simulated
    table = run(runner, "telemetry", "aggregate", out, "--candidates", ask, "--rows", 3)
    assert table.exit_code == 0, table.output
    text = " ".join(table.stdout.split())
    assert f"count mean sketch: {len(PAGES + ABSENT)} candidates, n = {N}" in text
    assert "... 5 more candidates (--rows, or --json for all)" in text
    eps = _stated_epsilon(mechanism)
    assert f"epsilon {eps:.4f} per report, any change of a device's string" in text
    assert "SE (fixed) fixed population" in text
    assert all(p in table.stdout for p in PAGES[:3])
    assert not any(p in table.stdout for p in PAGES[3:] + ABSENT)
    top = run(runner, "aggregate", out, "--candidates", ask)  # the top-level alias, 32 rows
    assert top.exit_code == 0 and all(p in top.stdout for p in PAGES + ABSENT)


def test_values_one_device_a_line_and_the_salt(runner: CliRunner, tmp_path: Path) -> None:
    # at epsilon 20 a bit flips with probability 3 / 2**16 (CMS) and the estimate is each
    # string's share, up to hash collisions: 4 strings in 32 rows of 64 columns share no
    # column in most rows, and the estimate removes the expected collision c = 1/64
    strings = ["a"] * 50 + ["b"] * 30 + ["\u00e9t\u00e9"] * 20
    values = _lines(tmp_path / "v.txt", strings)
    out = tmp_path / "v.dnrp"
    info = _json(run(runner, "telemetry", "simulate", "--mechanism", "cms", "--out", out,
                     "--values", values, "--epsilon", 20, "--sketch-rows", 32,
                     "--sketch-columns", 64, "--salt", 17, "--seed", 2, "--json"))  # fmt: skip
    assert info["devices"] == 100 and info["salt"] == 17 and info["strings"] == "--values"
    assert read_report_key(out) == CMS(k=32, m=64, epsilon=20.0, salt=17).key
    ask = _lines(tmp_path / "ask.txt", ["a", "b", "\u00e9t\u00e9", "zz"])
    est = _json(run(runner, "telemetry", "aggregate", out, "--candidates", ask, "--json"))
    got = [row["frequency"] for row in est["candidates"]]
    # each device's one row: the share of its string's column collisions is random; the
    # estimate is within 4 SEs of the shares (false alarm about 6e-5 a candidate)
    for g, row, share in zip(got, est["candidates"], [0.5, 0.3, 0.2, 0.0], strict=True):
        assert abs(g - share) < 4 * row["se"] + 1e-9, (row, share)
    # the default salt is drawn from the seed: the same seed, the same salt; another, another
    again = [_json(run(runner, "telemetry", "simulate", "--mechanism", "hcms", "--out",
                       tmp_path / f"s{i}.dnrp", "--values", values, "--epsilon", 1,
                       "--seed", seed, "--json"))["salt"]
             for i, seed in enumerate([8, 8, 9])]  # fmt: skip
    assert again[0] == again[1] != again[2]


def test_bad_sketch_input_is_one_error_line(runner: CliRunner, tmp_path: Path) -> None:
    cand = _lines(tmp_path / "c.txt", PAGES)
    out = tmp_path / "x.dnrp"

    def sim(*args: Any) -> Any:
        return run(runner, "telemetry", "simulate", "--out", out, "--seed", 1, *args)

    base = ("--devices", 10, "--candidates", cand, "--epsilon", 1)
    one_error(sim("--mechanism", "cms", *base, "--k", 8), "`--k`", "do not apply to",
              "--sketch-rows")  # fmt: skip
    one_error(sim("--mechanism", "hcms", *base, "--cohorts", 4), "`--cohorts`")
    one_error(sim("--mechanism", "olh", "--devices", 10, "--k", 4, "--epsilon", 1,
                  "--sketch-rows", 4), "`--sketch-rows`", "apply to `--mechanism cms`")  # fmt: skip
    one_error(sim("--mechanism", "cms", "--devices", 10, "--epsilon", 1), "give --candidates",
              "got neither")  # fmt: skip
    one_error(sim("--mechanism", "cms", *base, "--values", cand), "got both")
    one_error(sim("--mechanism", "cms", "--devices", 10, "--candidates", cand),
              "`--epsilon` must be given for `--mechanism cms`")  # fmt: skip
    one_error(sim("--mechanism", "hcms", *base, "--sketch-columns", 48),
              "`m` must be a power of two", "got 48")  # fmt: skip
    one_error(sim("--mechanism", "cms", *base, "--salt", 2**32), "`salt`", str(2**32))
    one_error(sim("--mechanism", "cms", *base, "--epsilon", 0), "`epsilon`")
    one_error(sim("--mechanism", "cms", "--values", cand, "--devices", 3, "--epsilon", 1),
              "`--devices` must be the number of strings of --values (6)")  # fmt: skip
    long = _lines(tmp_path / "long.txt", ["ok", "x" * 1025])
    one_error(sim("--mechanism", "cms", "--values", long, "--epsilon", 1),
              "`--values`: string 2", "at most max_bytes = 1024", "got 1025")  # fmt: skip
    one_error(sim("--mechanism", "count-min", *base), "`--mechanism` must be one of",
              "cms, hcms, pem, treehist, rappor")  # fmt: skip
    assert not out.exists()


@pytest.mark.parametrize("mechanism", ["cms", "hcms"])
def test_report_tables_estimate_as_the_report_file(
    runner: CliRunner, tmp_path: Path, mechanism: str
) -> None:
    # the same seed draws the same salt, strings and reports whatever the format: the
    # tables' tally (in process, --local-workers 0) gives the report file's estimate
    cand = _lines(tmp_path / "c.txt", PAGES)
    ask = _lines(tmp_path / "ask.txt", PAGES + ABSENT)
    common = ("telemetry", "simulate", "--mechanism", mechanism, "--devices", 3000,
              "--candidates", cand, "--epsilon", 2, "--sketch-rows", 8,
              "--sketch-columns", 32, "--seed", 4, "--json")  # fmt: skip
    infos = {suffix: _json(run(runner, *common, "--out", tmp_path / f"day{suffix}"))
             for suffix in (".dnrp", ".parquet", ".csv")}  # fmt: skip
    key = infos[".dnrp"]["mechanism"]
    assert {i["mechanism"] for i in infos.values()} == {key}
    assert infos[".parquet"]["format"] == "parquet"

    def estimate(*args: Any) -> list[Any]:
        out = _json(run(runner, "telemetry", "aggregate", *args, "--candidates", ask,
                        "--local-workers", 0, "--json"))  # fmt: skip
        assert out["n"] == 3000
        return list(out["candidates"])

    want = estimate(tmp_path / "day.dnrp")
    assert estimate(tmp_path / "day.parquet") == want
    assert estimate(tmp_path / "day.csv", "--mechanism", key) == want
    one_error(run(runner, "telemetry", "aggregate", tmp_path / "day.parquet",
                  "--local-workers", 0), "`--candidates` FILE", "is needed")  # fmt: skip
    one_error(run(runner, "telemetry", "aggregate", tmp_path / "day.parquet", "--candidates",
                  ask, "--alpha", 0.1, "--local-workers", 0),
              "`--alpha` apply to RAPPOR")  # fmt: skip


def test_bad_aggregate_input_is_one_error_line(runner: CliRunner, tmp_path: Path) -> None:
    sketch = HCMS(k=4, m=8, epsilon=1.0, salt=3)
    from deniable.oracles import write_reports

    out = tmp_path / "h.dnrp"
    write_reports(out, sketch, sketch.randomize(PAGES * 10, rng=1))
    cand = _lines(tmp_path / "c.txt", PAGES)
    one_error(run(runner, "aggregate", out), "`--candidates` FILE", "HCMS reports")
    one_error(run(runner, "aggregate", out, "--candidates", cand, "--method", "lasso"),
              "`--method` apply to RAPPOR's reports only", "count mean sketch")  # fmt: skip
    dup = _lines(tmp_path / "dup.txt", ["home", "home"])
    one_error(run(runner, "aggregate", out, "--candidates", dup), "must hold distinct strings")
    # 8**4 = 4096 column signatures at most: more candidates cannot be told apart
    many = _lines(tmp_path / "many.txt", [f"s{i}" for i in range(4097)])
    one_error(run(runner, "aggregate", out, "--candidates", many), "`candidates` must be at most")
    cut = tmp_path / "cut.dnrp"
    cut.write_bytes(out.read_bytes()[:-3])
    one_error(run(runner, "aggregate", cut, "--candidates", cand), "truncated")


def test_the_estimate_can_fail_a_wrong_file(runner: CliRunner, tmp_path: Path) -> None:
    # the same reports read as another salt's sketch would not be theirs: the key binds the
    # salt, so the file is refused rather than estimated with the wrong hashes
    sketch = CMS(k=4, m=16, epsilon=2.0, salt=1)
    from deniable.oracles import write_reports

    out = tmp_path / "c.dnrp"
    write_reports(out, sketch, sketch.randomize(["a", "b"] * 20, rng=2))
    other = CMS(k=4, m=16, epsilon=2.0, salt=2)
    with pytest.raises(Exception, match="not of this oracle"):
        tally_file(other, out)
    assert math.isfinite(sketch.estimate(tally_file(sketch, out), ["a"]).values[0])
    assert np.array_equal(
        tally_file(sketch, out, batch=3).counts,
        sketch.tally(sketch.randomize(["a", "b"] * 20, rng=2)).counts,
    )
