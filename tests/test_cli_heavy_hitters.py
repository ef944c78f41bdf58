"""`deniable telemetry simulate --mechanism pem|treehist` and `aggregate` of what it writes:
strings found without a dictionary (no --candidates), with frequencies, intervals and each
round's threshold; a report table aggregated on Dask gives the same answer as the file; bad
input is one `error:` line with exit status 2 naming the option, and no file written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from _cli import ENV, no_constant, one_error, run
from deniable.cli import _telemetry_strings
from deniable.oracles import PEM, TreeHist, read_heavy_file, read_report_key

PLANTED = {"hello": 0.3, "world": 0.2, "foo": 0.1}
N = 20_000


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


def _json(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout, parse_constant=no_constant))


def _values(path: Path) -> Path:
    """N devices: the planted strings at their frequencies, the rest each a string of six
    random letters (26**6 of them: about one device each, frequency ~1/N)."""
    rng = np.random.default_rng(11)
    lines = [s for s, f in PLANTED.items() for _ in range(round(f * N))]
    letters = rng.integers(97, 123, size=(N - len(lines), 6))
    lines += ["".join(map(chr, row)) for row in letters]
    path.write_text("\n".join(rng.permutation(lines)) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("pem")
    values = _values(tmp / "values.txt")
    out = tmp / "day.dnrp"
    info = _json(run(CliRunner(env=ENV), "telemetry", "simulate", "--mechanism", "pem",
                     "--out", out, "--values", values, "--epsilon", 4, "--max-bytes", 6,
                     "--seed", 5, "--json"))  # fmt: skip
    return out, values, info


def test_simulate_writes_the_protocol_its_options_name(
    simulated: tuple[Path, Path, dict[str, Any]],
) -> None:
    out, _, info = simulated
    pem = PEM(epsilon=4.0, max_bytes=6)  # the defaults: start 8, step 4 bits
    assert info["mechanism"] == pem.key == read_report_key(out)
    assert info["devices"] == N and info["strings"] == "--values"
    assert info["levels"] == [8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48]
    assert info["epsilon_per_device"] == 4.0 and info["implemented_epsilon"] <= 4.0
    # a record: the group, the l = log2 g rows of W = 1 word, the bucket (8 bytes each)
    words = 2 + (pem.base.g.bit_length() - 1)
    head = 4 + 2 + 4 + len(pem.key.encode()) + 4 + 3 + 4 + 8
    assert info["bytes"] == out.stat().st_size == head + N * 8 * words
    assert read_heavy_file(pem, out).n == N


def test_aggregate_finds_the_planted_strings_without_candidates(
    runner: CliRunner, simulated: tuple[Path, Path, dict[str, Any]]
) -> None:
    """False alarms: a round keeps a prefix no device of its group holds with probability at
    most alpha = 0.001 (the exact binomial threshold), so over the 11 rounds a string nobody
    planted is listed with probability about 1% or less; the seeds are fixed.  Each planted
    frequency is within 4 SE of its estimate (6e-5 each)."""
    out, _, _ = simulated
    data = _json(run(runner, "telemetry", "aggregate", out, "--alpha", 0.001, "--json"))
    found = {h["string"]: h for h in data["heavy_hitters"]}
    assert set(found) == set(PLANTED)
    for s, f in PLANTED.items():
        h = found[s]
        assert abs(h["frequency"] - f) <= 4 * h["se"]
        assert h["ci"][0] < h["frequency"] < h["ci"][1] and h["utf8"]
    assert data["method"] == "PEM" and data["alpha"] == 0.001 and data["n"] == N
    assert [r["bits"] for r in data["rounds"]] == [8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48]
    for r in data["rounds"]:
        assert r["rule"] == "binomial" and r["kept"] >= 3 and r["threshold"] > 0
        # the threshold that decided is below every planted frequency
        assert r["threshold"] < min(PLANTED.values())
    # the table: the strings and the rounds with their thresholds
    shown = run(runner, "telemetry", "aggregate", out, "--alpha", 0.001)
    assert shown.exit_code == 0, shown.output
    assert "hello" in shown.stdout and "threshold" in shown.stdout and "rounds" in shown.stdout


def test_top_k_caps_each_round(
    runner: CliRunner, simulated: tuple[Path, Path, dict[str, Any]]
) -> None:
    out, _, _ = simulated
    data = _json(run(runner, "telemetry", "aggregate", out, "--top-k", 1, "--json"))
    assert [h["string"] for h in data["heavy_hitters"]] == ["hello"]
    # round 0: three prefixes clear the threshold, the cap keeps one; then only the
    # extensions of "hello"'s prefix are candidates, and one clears it
    assert data["rounds"][0]["rule"] == "top-k" and all(r["kept"] == 1 for r in data["rounds"])


def test_a_table_on_dask_gives_the_files_answer(runner: CliRunner, tmp_path: Path) -> None:
    """TreeHist over --candidates: the same seed writes the same reports to a file and a
    Parquet table; the table aggregated in process (--local-workers 0) equals the file."""
    cand = tmp_path / "c.txt"
    cand.write_text("a\nb\nc\nd\ne\n", encoding="utf-8")
    common = ["--mechanism", "treehist", "--candidates", cand, "--devices", 6000,
              "--epsilon", 3, "--max-bytes", 1, "--seed", 9]  # fmt: skip
    for out in ("r.dnrp", "r.parquet"):
        _json(run(runner, "telemetry", "simulate", "--out", tmp_path / out, *common, "--json"))
    a = _json(run(runner, "telemetry", "aggregate", tmp_path / "r.dnrp", "--json"))
    b = _json(run(runner, "telemetry", "aggregate", tmp_path / "r.parquet", "--local-workers",
                  0, "--json"))  # fmt: skip
    assert {k: v for k, v in a.items() if k != "file"} == {
        k: v for k, v in b.items() if k != "file"
    }
    assert a["mechanism"] == TreeHist(epsilon=3.0, max_bytes=1).key
    # Zipf over 5: 1/(j+1) / H_5, "a" at 0.438, "b" at 0.219
    assert {"a", "b"} <= {h["string"] for h in a["heavy_hitters"]}


def test_a_heavy_stream_aggregates_as_the_library_reads_it(
    runner: CliRunner, tmp_path: Path
) -> None:
    """A PEM stream's days written by the ingestion path: `aggregate --stream-root --stream`
    prints what the library's in-process reading of the same days finds (it was refused)."""
    from deniable.distributed import aggregate_heavy_stream, append_batch, encode_batch
    from deniable.oracles import heavy_device_records

    pem = PEM(epsilon=4.0, max_bytes=2, start_bits=8, step_bits=8)
    rng = np.random.default_rng(3)
    for i, day in enumerate(("2026-11-20", "2026-11-21")):
        items = [str(s) for s in rng.choice(["hi", "yo", "ok", "zz"], size=3000,
                                             p=[0.5, 0.3, 0.15, 0.05])]  # fmt: skip
        rec = heavy_device_records(pem, items, rng=10 + i)
        append_batch(tmp_path, "pages", pem, encode_batch(pem, rec), day=day)
    base = ("telemetry", "aggregate", "--stream-root", tmp_path, "--stream", "pages",
            "--local-workers", 0, "--top-k", 3, "--json")  # fmt: skip
    data = _json(run(runner, *base))
    want = aggregate_heavy_stream(tmp_path, "pages", scheduler="synchronous", top_k=3)
    assert [h["string"] for h in data["heavy_hitters"]] == list(want.strings)
    assert want.strings[:2] == ("hi", "yo")  # the two commonest, planted at 0.5 and 0.3
    one = _json(run(runner, *base, "--start", "2026-11-21"))
    want_one = aggregate_heavy_stream(tmp_path, "pages", start="2026-11-21",
                                      scheduler="synchronous", top_k=3)  # fmt: skip
    assert [h["frequency"] for h in one["heavy_hitters"]] == pytest.approx(
        [float(f) for f in want_one.frequencies], rel=1e-12
    )


def _bad(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


def test_bad_input_is_one_error_line_naming_the_option(
    runner: CliRunner, tmp_path: Path, simulated: tuple[Path, Path, dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    out = tmp_path / "x.dnrp"
    good = _bad(tmp_path, "good.txt", b"abc\nde\n")

    def simulate(*args: Any) -> Any:
        return run(runner, "telemetry", "simulate", "--out", out, "--epsilon", 2,
                   "--mechanism", *args)  # fmt: skip

    one_error(simulate("pem", "--values", _bad(tmp_path, "e.txt", b"\n\n\r\n")),
              "`--values`", "at least one string")  # fmt: skip
    one_error(simulate("pem", "--max-bytes", 2, "--values", good), "`--values`", "string 1",
              "max_bytes = 2")  # fmt: skip
    one_error(simulate("pem", "--values", _bad(tmp_path, "u.txt", b"ab\n\xff\xfe\n")),
              "`--values`", "UTF-8")  # fmt: skip
    one_error(simulate("pem", "--values", _bad(tmp_path, "n.txt", b"ab\nc\x00d\n")),
              "`--values`", "NUL")  # fmt: skip
    one_error(simulate("treehist", "--values", good, "--start-bits", 4), "`--start-bits`")
    one_error(simulate("pem", "--values", good, "--sketch-rows", 4), "`--sketch-rows`")
    one_error(simulate("pem", "--values", good, "--k", 4), "`--k`")
    one_error(simulate("olh", "--k", 4, "--devices", 9, "--max-bytes", 3), "`--max-bytes`")
    one_error(simulate("pem", "--values", good, "--max-bytes", 65), "`--max-bytes`", "1..64")
    one_error(simulate("pem", "--values", good, "--step-bits", 9), "`--step-bits`", "1..8")
    one_error(simulate("pem", "--values", good, "--start-bits", 17), "`--start-bits`")
    # --max-bytes 8 by default: prefixes of 8, 12, ..., 64 bits, 15 groups
    one_error(simulate("pem", "--values", good), "`--devices`", "at least 15")
    one_error(simulate("pem", "--values", good, "--candidates", good), "both")
    monkeypatch.setattr(_telemetry_strings, "MAX_LINES_BYTES", 4)
    one_error(simulate("pem", "--values", good), "`--values`", "at most 4 bytes")
    monkeypatch.setattr(_telemetry_strings, "MAX_LINES", 1)
    monkeypatch.setattr(_telemetry_strings, "MAX_LINES_BYTES", 1 << 20)
    one_error(simulate("pem", "--values", good), "`--values`", "at most 1 strings")
    assert not out.exists()
    day = simulated[0]
    one_error(run(runner, "telemetry", "aggregate", day, "--candidates", good),
              "`--candidates`", "without a dictionary")  # fmt: skip
    one_error(run(runner, "telemetry", "aggregate", day, "--top-k", 0), "`--top-k`")
    one_error(run(runner, "telemetry", "aggregate", day, "--method", "lasso"), "`--method`")
    olh = tmp_path / "olh.dnrp"
    made = run(runner, "telemetry", "simulate", "--out", olh, "--devices", 50, "--k", 4,
               "--epsilon", 1, "--seed", 1)  # fmt: skip
    assert made.exit_code == 0, made.output
    one_error(run(runner, "telemetry", "aggregate", olh, "--top-k", 3), "`--top-k`", "'olh'")


def test_an_alphabet_is_in_the_key_and_aggregate_uses_it(runner: CliRunner, tmp_path: Path) -> None:
    """`--alphabet` gives PEM its bytes (the key holds them); `aggregate` reads them from the
    file's key.  A device's report does not depend on the alphabet, so the same seed writes
    the same records with and without it (the default path's output unchanged)."""
    cand = tmp_path / "c.txt"
    cand.write_text("hi\nyo\nok\n", encoding="utf-8")
    common = ["--mechanism", "pem", "--candidates", cand, "--devices", 3000, "--epsilon", 4,
              "--max-bytes", 2, "--start-bits", 8, "--step-bits", 8, "--seed", 1]  # fmt: skip
    pem = PEM(epsilon=4.0, max_bytes=2, start_bits=8, step_bits=8, alphabet=b"hikoy")
    a, b = tmp_path / "a.dnrp", tmp_path / "b.dnrp"
    info = _json(run(runner, "telemetry", "simulate", "--out", a, *common, "--alphabet",
                     "yohik", "--json"))  # fmt: skip
    assert info["mechanism"] == pem.key == read_report_key(a)
    assert '"alphabet":"68696b6f79"' in pem.key  # h i k o y, sorted, in hex
    _json(run(runner, "telemetry", "simulate", "--out", b, *common, "--json"))
    assert read_report_key(b) == PEM(epsilon=4.0, max_bytes=2, start_bits=8, step_bits=8).key
    record = 8 * (2 + (pem.base.g.bit_length() - 1))  # the group, log2 g rows, the bucket
    assert a.read_bytes()[-3000 * record :] == b.read_bytes()[-3000 * record :]
    data = _json(run(runner, "telemetry", "aggregate", a, "--json"))
    assert data["mechanism"] == pem.key
    # Zipf over 3: "hi" at 1 / H_3 = 0.545, "yo" at 0.273; only strings over the alphabet
    found = [h["string"] for h in data["heavy_hitters"]]
    assert {"hi", "yo"} <= set(found) and all(set(s) <= set("hikoy") for s in found)


def test_an_alphabet_table_refuses_another_key_naming_both(
    runner: CliRunner, tmp_path: Path
) -> None:
    cand = tmp_path / "c.txt"
    cand.write_text("hi\nyo\n", encoding="utf-8")
    table = tmp_path / "t.parquet"
    info = _json(run(runner, "telemetry", "simulate", "--out", table, "--mechanism",
                     "treehist", "--candidates", cand, "--devices", 2000, "--epsilon", 3,
                     "--max-bytes", 2, "--alphabet", "hiyo", "--seed", 4, "--json"))  # fmt: skip
    mine = TreeHist(epsilon=3.0, max_bytes=2, alphabet="hiyo").key
    assert info["mechanism"] == mine
    other = TreeHist(epsilon=3.0, max_bytes=2, alphabet="hiy").key
    one_error(run(runner, "telemetry", "aggregate", table, "--mechanism", other,
                  "--local-workers", 0), mine, other)  # fmt: skip
    data = _json(run(runner, "telemetry", "aggregate", table, "--mechanism", mine,
                     "--local-workers", 0, "--json"))  # fmt: skip
    assert data["mechanism"] == mine


def test_a_bad_alphabet_is_one_error_line(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "x.dnrp"
    good = _bad(tmp_path, "good.txt", b"ab\nb\n" * 10)

    def simulate(*args: Any) -> Any:
        return run(runner, "telemetry", "simulate", "--out", out, "--epsilon", 2,
                   "--max-bytes", 2, *args)  # fmt: skip

    for bad in ("", "abb", "ab\0"):
        one_error(simulate("--mechanism", "pem", "--values", good, "--alphabet", bad),
                  "`--alphabet`", "each once", "no NUL", f"got {bad!r}")  # fmt: skip
    one_error(simulate("--mechanism", "treehist", "--values", good, "--alphabet", "a"),
              "`--values`", "string 1", "--alphabet", "byte 1")  # fmt: skip
    # bytes, not characters: "è" is C3 A8, "é" C3 A9 (C3 is in the alphabet, A8 is not)
    accent = _bad(tmp_path, "accent.txt", "é\nè\n".encode() * 10)
    one_error(simulate("--mechanism", "pem", "--values", accent, "--alphabet", "aé"),
              "`--values`", "string 2", "byte 1")  # fmt: skip
    one_error(simulate("--mechanism", "olh", "--k", 3, "--devices", 20, "--alphabet", "ab"),
              "`--alphabet`", "pem, treehist", "'olh'")  # fmt: skip
    assert not out.exists()
