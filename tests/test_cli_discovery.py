"""`deniable telemetry simulate --mechanism sfp|rappor-ngram` and `aggregate` of what it
writes: strings found from their fragments without a dictionary (no --candidates), with
frequencies, intervals and the thresholds that decided; bad input is one `error:` line with
exit status 2 naming the option, and no file written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from _cli import ENV, no_constant, one_error, run
from deniable.oracles import SFP, Rappor, RapporNgram, read_report_key, tally_file

PLANTED = {"abcd": 0.3, "hgf": 0.2, "ca": 0.15}
ALPHABET = "abcdefgh"
N = 10_000
SFP_ARGS = ["--epsilon", 6, "--alphabet", ALPHABET, "--max-length", 4, "--puzzle-bits", 4,
            "--sketch-rows", 16, "--sketch-columns", 256]  # fmt: skip
NGRAM_ARGS = ["--alphabet", ALPHABET, "--max-length", 4, "--cohorts", 16, "--f", 0.25]


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


def _json(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout, parse_constant=no_constant))


def _values(path: Path) -> Path:
    """N devices: the planted strings at their frequencies, the rest each a string of four
    random letters of the alphabet (8**4 = 4096 of them: about one device each)."""
    rng = np.random.default_rng(12)
    lines = [s for s, f in PLANTED.items() for _ in range(round(f * N))]
    letters = rng.integers(0, len(ALPHABET), size=(N - len(lines), 4))
    lines += ["".join(ALPHABET[i] for i in row) for row in letters]
    path.write_text("\n".join(rng.permutation(lines)) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("discovery")
    values = _values(tmp / "values.txt")
    out: dict[str, Any] = {"values": values}
    for name, args in (("sfp", [*SFP_ARGS, "--salt", 3]), ("rappor-ngram", NGRAM_ARGS)):
        path = tmp / f"{name}.dnrp"
        out[name] = path, _json(run(CliRunner(env=ENV), "telemetry", "simulate", "--mechanism",
                                    name, "--out", path, "--values", values, *args, "--seed",
                                    5, "--json"))  # fmt: skip
    return out


def _header(key: str) -> int:
    # DNRP, version, key length and key, dtype length and its 3 characters, width, n
    return 4 + 2 + 4 + len(key.encode()) + 4 + 3 + 4 + 8


def test_simulate_writes_the_protocol_its_options_name(simulated: dict[str, Any]) -> None:
    path, info = simulated["sfp"]
    sfp = SFP(epsilon=6.0, max_length=4, alphabet=ALPHABET, puzzle_bits=4, k=16, m=256, salt=3)
    assert info["mechanism"] == sfp.key == read_report_key(path)
    assert info["devices"] == N and info["strings"] == "--values"
    assert info["epsilon_per_device"] == 6.0 and info["implemented_epsilon"] <= 6.0
    # HCMS: the position and two int64 reports a device
    assert info["bytes"] == path.stat().st_size == _header(sfp.key) + N * 3 * 8
    assert sum(t.n for t in tally_file(sfp, path).fragments) == N
    path, info = simulated["rappor-ngram"]
    rappor = Rappor(m=128, h=2, cohorts=16, f=0.25, p=0.5, q=0.75)  # RAPPOR's defaults
    ng = RapporNgram(rappor, rappor, alphabet=ALPHABET, gram=2, length=4, pairs=1)
    assert info["mechanism"] == ng.key == read_report_key(path)
    # one collection: 2 n-gram reports and the whole string's, each eps_1 of RAPPOR
    assert info["epsilon_per_device"] == pytest.approx(3 * rappor.epsilon, rel=1e-12)
    assert info["permanent_epsilon"] == pytest.approx(3 * rappor.permanent_epsilon, rel=1e-12)
    # the pair (2 bytes), two n-gram reports and the full one, each a <u2 cohort + 16 bytes
    assert info["bytes"] == path.stat().st_size == _header(ng.key) + N * (2 + 3 * 18)


@pytest.mark.parametrize("name", ["sfp", "rappor-ngram"])
def test_aggregate_finds_the_planted_strings_without_candidates(
    runner: CliRunner, simulated: dict[str, Any], name: str
) -> None:
    """False alarms: with --alpha 0.001 each stage keeps a fragment (n-gram) or string of
    frequency 0 with probability at most 0.001 (normal approximation, Bonferroni over the
    stage's tests); the background strings are each held by about 1 device in 10,000, far
    below every threshold, so a string nobody planted is listed with probability about
    0.2% or less; the seeds are fixed.  Each planted frequency is within 4 SE of its
    estimate (6e-5 each)."""
    path, _ = simulated[name]
    data = _json(run(runner, "telemetry", "aggregate", path, "--alpha", 0.001, "--json"))
    rows = data["heavy_hitters"] if name == "sfp" else data["strings"]
    found = {r["string"]: r for r in rows}
    assert set(found) == set(PLANTED)
    for s, f in PLANTED.items():
        r = found[s]
        ci = r["ci"] if name == "sfp" else r["ci_wald"]
        assert abs(r["frequency"] - f) <= 4 * r["se"]
        assert ci[0] < r["frequency"] < ci[1]
    assert data["alpha"] == 0.001 and data["n"] == N and data["file"] == str(path)
    if name == "sfp":  # the thresholds that decided: below every planted frequency
        assert len(data["fragment_thresholds"]) == 2 and data["candidates"] >= 3
        assert max(data["fragment_thresholds"]) < min(PLANTED.values())
        assert 0 < data["word_threshold"] < min(PLANTED.values())
    else:  # levels: Bonferroni over G K n-grams (K = 8**2 + 8 + 1), then the candidates
        assert data["ngram_threshold"] == pytest.approx(0.001 / (2 * 73))
        assert data["string_threshold"] == pytest.approx(0.001 / len(data["candidates"]))
        assert data["edge_threshold"] == 0.02
    shown = run(runner, "telemetry", "aggregate", path, "--alpha", 0.001, "--level", 0.9)
    assert shown.exit_code == 0, shown.output
    assert "abcd" in shown.stdout and "epsilon" in shown.stdout
    assert ("stages" in shown.stdout) if name == "sfp" else ("90% low" in shown.stdout)


def test_the_ngram_edge_threshold_is_the_servers_choice(
    runner: CliRunner, simulated: dict[str, Any]
) -> None:
    # an edge threshold above every joint frequency links no n-grams: no candidate at all
    path, _ = simulated["rappor-ngram"]
    data = _json(run(runner, "telemetry", "aggregate", path, "--edge-threshold", 0.9, "--json"))
    assert data["edge_threshold"] == 0.9 and data["candidates"] == [] and data["strings"] == []


def test_max_candidates_is_the_servers_choice(
    runner: CliRunner, tmp_path: Path, simulated: dict[str, Any]
) -> None:
    """--max-candidates reaches the estimate as the library's own (file and table alike);
    n-grams whose chains exceed it: one error line naming it."""
    from deniable.oracles import rappor_ngram_from_key, read_ngram_file, sfp_from_key

    path, _ = simulated["sfp"]
    data = _json(run(runner, "telemetry", "aggregate", path, "--max-candidates", 1, "--json"))
    sfp = sfp_from_key(read_report_key(path), max_candidates=1)
    want = sfp.estimate(tally_file(sfp, path)).to_dict()
    assert data["heavy_hitters"] == want["heavy_hitters"] and data["trimmed"] == want["trimmed"]
    path, _ = simulated["rappor-ngram"]
    ng = rappor_ngram_from_key(read_report_key(path))
    reports = read_ngram_file(ng, path)
    data = _json(run(runner, "telemetry", "aggregate", path, "--max-candidates", 50, "--json"))
    assert data["strings"] == ng.discover(reports, max_candidates=50).to_dict(0.95)["strings"]
    table = tmp_path / "r.parquet"
    _json(run(runner, "telemetry", "simulate", "--mechanism", "rappor-ngram", "--out", table,
              "--values", simulated["values"], *NGRAM_ARGS, "--seed", 5, "--json"))  # fmt: skip
    for source in (path, table):
        one_error(run(runner, "telemetry", "aggregate", source, "--max-candidates", 1,
                      "--local-workers", 0), "`max_candidates` (1) is exceeded")  # fmt: skip


@pytest.mark.parametrize("name", ["sfp", "rappor-ngram"])
def test_a_table_on_dask_gives_the_files_answer(
    runner: CliRunner, tmp_path: Path, simulated: dict[str, Any], name: str
) -> None:
    """The same seed writes the same reports to a file and a Parquet table; the table
    aggregated in process (--local-workers 0) gives the file's answer, every number."""
    args = [*SFP_ARGS, "--salt", 3] if name == "sfp" else NGRAM_ARGS
    table = tmp_path / "r.parquet"
    _json(run(runner, "telemetry", "simulate", "--mechanism", name, "--out", table,
              "--values", simulated["values"], *args, "--seed", 5, "--json"))  # fmt: skip
    a = _json(run(runner, "telemetry", "aggregate", simulated[name][0], "--json"))
    b = _json(run(runner, "telemetry", "aggregate", table, "--local-workers", 0, "--json"))
    assert a.pop("file") != b.pop("file") and a == b
    assert set(PLANTED) <= {r["string"] for r in a["heavy_hitters" if name == "sfp" else "strings"]}


def _bad(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


def test_bad_input_is_one_error_line_naming_the_option(
    runner: CliRunner, tmp_path: Path, simulated: dict[str, Any]
) -> None:
    out = tmp_path / "x.dnrp"
    good = _bad(tmp_path, "good.txt", b"abc\nde\n")

    def simulate(*args: Any) -> Any:
        return run(runner, "telemetry", "simulate", "--out", out, "--values", good,
                   "--mechanism", *args)  # fmt: skip

    one_error(simulate("sfp", "--alphabet", "abcde"), "`--epsilon`", "must be given")
    one_error(simulate("sfp", *SFP_ARGS, "--gram", 2), "`--gram`", "do not apply", "sfp")
    one_error(simulate("rappor-ngram", "--epsilon", 2), "`--epsilon`", "do not apply")
    one_error(simulate("rappor-ngram", "--k", 4), "`--k`")
    one_error(simulate("sfp", "--epsilon", 2, "--max-length", 65), "`--max-length`", "1..64")
    one_error(simulate("sfp", "--epsilon", 2, "--puzzle-bits", 17), "`--puzzle-bits`", "1..16")
    one_error(simulate("sfp", "--epsilon", 2, "--fragment-share", 1), "`--fragment-share`")
    one_error(simulate("sfp", "--epsilon", 2, "--sketch", "bloom"), "`--sketch`", "cms or hcms")
    one_error(simulate("sfp", "--epsilon", 2, "--alphabet", "aab"), "`--alphabet`", "once")
    one_error(simulate("sfp", "--epsilon", 2, "--max-bytes", 3), "`--max-bytes`", "'sfp'")
    one_error(simulate("sfp", "--epsilon", 2, "--sketch-columns", 100), "`--mechanism sfp`",
              "power of two")  # fmt: skip
    one_error(simulate("rappor-ngram", "--max-length", 5), "`--max-length`", "multiple")
    one_error(simulate("rappor-ngram", "--max-length", 4, "--pairs", 2), "`--pairs`", "1..1")
    one_error(simulate("rappor-ngram", "--alphabet", "abc"), "`--values`", "string 2",
              "--alphabet")  # fmt: skip
    one_error(simulate("sfp", "--epsilon", 2, "--alphabet", "abcde", "--max-length", 2),
              "`--values`", "string 1", "--max-length = 2")  # fmt: skip
    one_error(simulate("olh", "--k", 4, "--devices", 9, "--alphabet", "ab"), "`--alphabet`",
              "'olh'")  # fmt: skip
    one_error(simulate("pem", "--epsilon", 2, "--max-length", 4), "`--max-length`", "'pem'")
    one_error(simulate("cms", "--epsilon", 2, "--puzzle-bits", 4), "`--puzzle-bits`")
    assert not out.exists()
    sfp, ngram = simulated["sfp"][0], simulated["rappor-ngram"][0]
    one_error(run(runner, "telemetry", "aggregate", sfp, "--candidates", good),
              "`--candidates`", "without a dictionary")  # fmt: skip
    one_error(run(runner, "telemetry", "aggregate", ngram, "--top-k", 3), "`--top-k`")
    one_error(run(runner, "telemetry", "aggregate", sfp, "--edge-threshold", 0.1),
              "`--edge-threshold`")  # fmt: skip
    one_error(run(runner, "telemetry", "aggregate", sfp, "--alpha", 1.5), "`--alpha`", "(0, 1)")
    one_error(run(runner, "telemetry", "aggregate", ngram, "--edge-threshold", 0),
              "`--edge-threshold`", "(0, 1)")  # fmt: skip
    one_error(run(runner, "telemetry", "aggregate", sfp, "--max-candidates", 0),
              "`--max-candidates`", "1..1048576, got 0")  # fmt: skip
    one_error(run(runner, "telemetry", "aggregate", ngram, "--max-candidates", 10**6 + 1),
              "`--max-candidates`", "1..1000000")  # fmt: skip
    olh = tmp_path / "olh.dnrp"
    made = run(runner, "telemetry", "simulate", "--out", olh, "--devices", 50, "--k", 4,
               "--epsilon", 1, "--seed", 1)  # fmt: skip
    assert made.exit_code == 0, made.output
    one_error(run(runner, "telemetry", "aggregate", olh, "--edge-threshold", 0.1),
              "`--edge-threshold`", "'olh'")  # fmt: skip
    one_error(run(runner, "telemetry", "aggregate", olh, "--max-candidates", 5),
              "`--max-candidates`", "'olh'")  # fmt: skip
    # the output is claimed before anything is written: an existing file is kept
    kept = run(runner, "telemetry", "simulate", "--out", sfp, "--values", good,
               "--mechanism", "sfp", *SFP_ARGS)  # fmt: skip
    assert kept.exit_code == 2 and "exists" in kept.stderr


def test_a_csv_table_is_read_with_its_key_and_the_salt_follows_the_seed(
    runner: CliRunner, tmp_path: Path, simulated: dict[str, Any]
) -> None:
    """Without --salt, SFP's salt is drawn from the seed (the estimate is unbiased over a
    salt drawn at random): the same seed, the same key; another seed, another salt."""
    values = simulated["values"]

    def simulate(out: str, seed: int) -> dict[str, Any]:
        return _json(run(runner, "telemetry", "simulate", "--mechanism", "sfp", "--out",
                         tmp_path / out, "--values", values, *SFP_ARGS, "--seed", seed,
                         "--json"))  # fmt: skip

    a, b, c = simulate("a.csv", 7), simulate("b.dnrp", 7), simulate("c.dnrp", 8)
    assert a["mechanism"] == b["mechanism"] != c["mechanism"]
    assert json.loads(a["mechanism"][3:])["salt"] != json.loads(c["mechanism"][3:])["salt"]
    one_error(run(runner, "telemetry", "aggregate", tmp_path / "a.csv", "--local-workers", 0),
              "`mechanism`", "CSV")  # fmt: skip
    table = _json(run(runner, "telemetry", "aggregate", tmp_path / "a.csv", "--mechanism",
                      a["mechanism"], "--local-workers", 0, "--json"))  # fmt: skip
    file = _json(run(runner, "telemetry", "aggregate", tmp_path / "b.dnrp", "--json"))
    assert table.pop("file") != file.pop("file") and table == file


def test_an_infinite_epsilon_is_never_printed_finite(runner: CliRunner, tmp_path: Path) -> None:
    # f = 0: a PRR that keeps the Bloom filter, so no bound over repeated collections
    values = _bad(tmp_path, "v.txt", b"ab\nba\nab\n")
    data = _json(run(runner, "telemetry", "simulate", "--mechanism", "rappor-ngram", "--out",
                     tmp_path / "r.dnrp", "--values", values, "--alphabet", "ab",
                     "--max-length", 2, "--gram", 1, "--f", 0, "--json"))  # fmt: skip
    assert data["permanent_epsilon"] == "inf" and data["epsilon_per_device"] < 100
