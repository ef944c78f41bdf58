"""`deniable telemetry simulate --mechanism cms --spec-version 1|2`: the CLI writes the
reports of either CMS spec (2 by default, the library's default), and `aggregate` reads the
spec from the file's key (a spec-1 key names no `spec_version`); a bad value, or the option
for another mechanism, is one `error:` line naming the option."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from _cli import ENV, one_error, run, run_json
from deniable.cli._telemetry_sketch import _SPEC_DEFAULT
from deniable.oracles import CMS, read_report_key, sketch_from_key, write_reports

STRINGS = ["home"] * 40 + ["search"] * 25 + ["settings"] * 20 + ["help"] * 15
ASK = ["home", "search", "settings", "help", "absent"]
SHAPE = {"k": 8, "m": 32, "epsilon": 2.0, "salt": 17}
SIMULATE = shlex.split(
    "telemetry simulate --mechanism cms --epsilon 2 --sketch-rows 8 --sketch-columns 32 "
    "--salt 17 --seed 3"
)


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


def _lines(path: Path, strings: list[str]) -> Path:
    path.write_text("\n".join(strings) + "\n", encoding="utf-8")
    return path


def _simulate(runner: CliRunner, tmp_path: Path, out: str, *more: Any) -> dict[str, Any]:
    """The CLI's reports of STRINGS (one device a line) in a SHAPE sketch at seed 3."""
    values = _lines(tmp_path / "values.txt", STRINGS)
    return dict(run_json(runner, *SIMULATE, "--out", tmp_path / out, "--values", values, *more))


def _aggregate(runner: CliRunner, tmp_path: Path, *args: Any) -> list[Any]:
    ask = _lines(tmp_path / "ask.txt", ASK)
    more = ("--candidates", ask, "--local-workers", 0)
    est = run_json(runner, "telemetry", "aggregate", *args, *more)
    assert est["n"] == len(STRINGS)
    return list(est["candidates"])


def test_the_default_is_the_librarys() -> None:
    (field,) = [f for f in dataclasses.fields(CMS) if f.name == "spec_version"]
    assert _SPEC_DEFAULT == field.default == 2


@pytest.mark.parametrize("version", [1, 2])
def test_the_cli_writes_the_librarys_reports_of_the_spec(
    runner: CliRunner, tmp_path: Path, version: int
) -> None:
    # the library's CMS of that spec on the same seed draws the same reports: the file is
    # the one write_reports writes, and aggregate gives the library's estimate of them
    info = _simulate(runner, tmp_path, "cli.dnrp", "--spec-version", version)
    sketch = CMS(**SHAPE, spec_version=version)
    reports = sketch.randomize(STRINGS, rng=np.random.default_rng(3))
    write_reports(tmp_path / "lib.dnrp", sketch, reports)
    assert (tmp_path / "cli.dnrp").read_bytes() == (tmp_path / "lib.dnrp").read_bytes()
    key = read_report_key(tmp_path / "cli.dnrp")
    assert info["mechanism"] == key == sketch.key
    assert ('"spec_version"' in key) == (version == 2)  # spec 1's key is the old one
    assert sketch_from_key(key).spec_version == version
    assert info["epsilon"] == sketch.epsilon
    lib = sketch.estimate(sketch.tally(reports), ASK).to_dict()
    assert _aggregate(runner, tmp_path, tmp_path / "cli.dnrp") == lib["candidates"]


def test_spec_2_is_the_default_byte_for_byte(runner: CliRunner, tmp_path: Path) -> None:
    default = _simulate(runner, tmp_path, "default.dnrp")
    given = _simulate(runner, tmp_path, "two.dnrp", "--spec-version", 2)
    assert {**default, "file": None, "bytes": None} == {**given, "file": None, "bytes": None}
    assert (tmp_path / "default.dnrp").read_bytes() == (tmp_path / "two.dnrp").read_bytes()
    one = _simulate(runner, tmp_path, "one.dnrp", "--spec-version", 1)
    assert one["mechanism"] != default["mechanism"]  # tallies of the two specs never add


def test_a_spec_1_table_estimates_as_its_report_file(runner: CliRunner, tmp_path: Path) -> None:
    _simulate(runner, tmp_path, "one.dnrp", "--spec-version", 1)
    info = _simulate(runner, tmp_path, "one.parquet", "--spec-version", 1)
    _simulate(runner, tmp_path, "one.csv", "--spec-version", 1)
    want = _aggregate(runner, tmp_path, tmp_path / "one.dnrp")
    assert _aggregate(runner, tmp_path, tmp_path / "one.parquet") == want
    assert (
        _aggregate(runner, tmp_path, tmp_path / "one.csv", "--mechanism", info["mechanism"]) == want
    )


def test_the_table_says_spec_1(runner: CliRunner, tmp_path: Path) -> None:
    values = _lines(tmp_path / "values.txt", STRINGS)
    cmd = shlex.split("telemetry simulate --mechanism cms --epsilon 2 --seed 1")
    common = (*cmd, "--values", values)
    one = run(runner, *common, "--out", tmp_path / "one.dnrp", "--spec-version", 1)
    assert one.exit_code == 0, one.output
    assert ", spec version 1\n" in one.stdout
    two = run(runner, *common, "--out", tmp_path / "two.dnrp")
    assert two.exit_code == 0 and "spec version" not in two.stdout


def test_a_bad_spec_version_is_one_error_line(runner: CliRunner, tmp_path: Path) -> None:
    cand = _lines(tmp_path / "c.txt", ASK)
    out = tmp_path / "x.dnrp"

    def sim(mechanism: str, *more: Any) -> Any:
        given = f"telemetry simulate --mechanism {mechanism} --devices 10 --seed 1 --epsilon 1"
        return run(runner, *shlex.split(given), "--out", out, *more)

    for bad in ("3", "0", "x", "1.0"):
        one_error(
            sim("cms", "--candidates", cand, "--spec-version", bad),
            "`--spec-version` must be 1 or 2",
            f"got {bad!r}",
        )
    one_error(
        sim("hcms", "--candidates", cand, "--spec-version", 1),
        "`--spec-version` do not apply to `--mechanism hcms`",
        "--salt.",
    )
    one_error(
        sim("olh", "--k", 4, "--spec-version", 1),
        "`--spec-version` apply to `--mechanism cms` only",
        "'olh'",
    )
    one_error(
        sim("sfp", "--candidates", cand, "--spec-version", 1),
        "`--spec-version` do not apply to `--mechanism sfp`",
    )
    one_error(
        sim("cms", "--candidates", cand, "--k", 3),
        "`--k` do not apply",
        "--salt and --spec-version.",
    )
    assert not out.exists()
