"""Output files of the commands (issue 14): no command replaces a file unless told to
(``--force``), none ever writes onto one of its inputs, and an output's format is the one
its flag or its suffix names.

Every command that writes a file is a row of :data:`WRITERS`; the tests run each check
over the table, and :func:`test_every_writing_command_is_in_the_table` walks the command
tree so that a new writing command cannot be forgotten here.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from _cli import ENV, one_error, run
from deniable.cli._base import CliError


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner(env=ENV)


@dataclass(frozen=True)
class Writer:
    """A command that writes a file: its command line (``{out}`` the output, ``{data}`` a
    survey CSV file), the option that names the output, a suffix it writes, what a file it
    wrote starts with, and a suffix of another format it must refuse."""

    name: str
    argv: tuple[str, ...]
    option: str
    suffix: str
    magic: bytes
    wrong: str = ".json"

    def args(self, out: Path | str, data: Path | None = None) -> list[str]:
        return [a.format(out=out, data=data) for a in self.argv]


SVG = b"<?xml"
WRITERS = [
    Writer("report", ("report", "{data}", "-q", "q=two-coin", "--html", "{out}"),
           "--html", ".html", b"<!DOCTYPE html>"),
    Writer("power", ("power", "two-coin", "--n", "50", "--prevalence", "0.6", "--null", "0.5",
                     "--plot", "{out}"), "--plot", ".svg", SVG),
    Writer("privacy shuffle", ("privacy", "shuffle", "--epsilon0", "1", "--n", "1000",
                               "--plot", "{out}"), "--plot", ".svg", SVG),
    Writer("privacy noise", ("privacy", "noise", "--table", "--epsilons", "0.5,1",
                             "--plot", "{out}"), "--plot", ".svg", SVG),
    Writer("privacy explain", ("privacy", "explain", "--epsilon", "1", "--plot", "{out}"),
           "--plot", ".png", b"\x89PNG\r\n\x1a\n"),
    Writer("spec vectors", ("spec", "vectors", "--out", "{out}"), "--out", ".json", b"{",
           wrong=".svg"),
    Writer("telemetry simulate", ("telemetry", "simulate", "--out", "{out}", "--devices", "50",
                                  "--k", "4", "--epsilon", "1", "--seed", "1"),
           "--out", ".dnrp", b"DNRP"),
    Writer("survey demo", ("survey", "demo", "--out", "{out}"), "--out", ".yaml", b"#"),
]  # fmt: skip
IDS = [w.name.replace(" ", "-") for w in WRITERS]
#: Writing commands of another part of issue 14 (cli/_survey.py belongs to the service
#: helper; `survey invite` and `survey demo` take --force there, through claim_output).
# `survey invite` never replaces its file of single-use links, --force or not (they may be
# the only copy of a batch's secrets): tests/service/test_survey_invite.py
# `weight` needs a margins file beside its data: tests/test_cli_sampling_weight.py runs
# these checks on it (an existing output refused byte for byte, never an input, suffixes).
ELSEWHERE = {"survey invite", "weight"}
OUTPUT_OPTIONS = {"--out", "--plot", "--html"}


def _data(tmp_path: Path) -> Path:
    data = tmp_path / "data.csv"
    data.write_text("q\n" + "".join(f"{i % 2}\n" for i in range(40)))
    return data


def _listing(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


def _state(path: Path) -> tuple[bytes, int, int]:
    st = os.stat(path)
    return path.read_bytes(), st.st_ino, st.st_mtime_ns


@pytest.mark.parametrize("writer", WRITERS, ids=IDS)
def test_an_existing_output_is_refused_and_left_byte_for_byte(
    writer: Writer, runner: CliRunner, tmp_path: Path
) -> None:
    data = _data(tmp_path)
    out = tmp_path / f"old{writer.suffix}"
    out.write_bytes(b"precious \x00\xff bytes")
    before, names = _state(out), _listing(tmp_path)
    res = run(runner, *writer.args(out, data))
    one_error(res, f"`{writer.option}`", str(out), "exists", "pass --force to replace it")
    assert _state(out) == before and _listing(tmp_path) == names  # no temporary left


@pytest.mark.parametrize("writer", WRITERS, ids=IDS)
def test_force_replaces_an_existing_output(
    writer: Writer, runner: CliRunner, tmp_path: Path
) -> None:
    data = _data(tmp_path)
    out = tmp_path / f"old{writer.suffix}"
    out.write_bytes(b"old")
    inode = os.stat(out).st_ino
    res = run(runner, *writer.args(out, data), "--force")
    assert res.exit_code == 0, res.output
    assert out.read_bytes().startswith(writer.magic)
    assert os.stat(out).st_ino != inode  # a new file renamed into place, not rewritten
    assert _listing(tmp_path) == sorted(["data.csv", out.name])


@pytest.mark.parametrize("writer", WRITERS, ids=IDS)
def test_a_new_output_is_written_without_force(
    writer: Writer, runner: CliRunner, tmp_path: Path
) -> None:
    data = _data(tmp_path)
    out = tmp_path / f"new{writer.suffix.upper()}"  # the suffix is read case-blind
    res = run(runner, *writer.args(out, data))
    assert res.exit_code == 0, res.output
    assert out.read_bytes().startswith(writer.magic)


@pytest.mark.parametrize("writer", WRITERS, ids=IDS)
def test_a_suffix_of_another_format_is_refused(
    writer: Writer, runner: CliRunner, tmp_path: Path
) -> None:
    data = _data(tmp_path)
    for name in (f"x{writer.wrong}", "x.gif", "x", f"x{writer.suffix}.gz"):
        res = run(runner, *writer.args(tmp_path / name, data), "--force")
        one_error(res, f"`{writer.option}`", name, writer.suffix)
    assert _listing(tmp_path) == ["data.csv"]


def test_every_writing_command_is_in_the_table() -> None:
    import typer

    from deniable.cli import app

    found: dict[str, set[str]] = {}

    def walk(cmd: Any, path: list[str]) -> None:
        names = cmd.list_commands(None) if hasattr(cmd, "list_commands") else []
        for name in names:
            walk(cmd.get_command(None, name), [*path, name])
        if not names:
            found[" ".join(path)] = {o for p in cmd.params for o in p.opts}

    walk(typer.main.get_command(app), [])
    writing = {name for name, opts in found.items() if opts & OUTPUT_OPTIONS}
    assert writing - ELSEWHERE == {w.name for w in WRITERS}
    assert all("--force" in found[w.name] for w in WRITERS)


# ------------------------------------------------------------------ never an input


def _links(tmp_path: Path, target: Path, suffix: str) -> list[Path]:
    """``target`` spelled as an output: itself, a symbolic link and a hard link (named with
    the output suffix, so that only the same-file check can stop them)."""
    sym = tmp_path / f"sym-{target.stem}{suffix}"
    sym.symlink_to(target)
    hard = tmp_path / f"hard-{target.stem}{suffix}"
    os.link(target, hard)
    return [target, sym, hard, Path(f"{tmp_path}/sub/../{sym.name}")]


def test_force_never_writes_onto_an_input(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    data = _data(tmp_path)
    before = data.read_bytes()
    for spelling in _links(tmp_path, data, ".html"):
        for force in ((), ("--force",)):
            res = run(runner, "report", str(data), "-q", "q=two-coin", "--html",
                      str(spelling), *force)  # fmt: skip
            one_error(res, "`--html`", "same file as the input FILE", "even with --force")
            assert data.read_bytes() == before


def test_force_never_writes_onto_the_survey_file(runner: CliRunner, tmp_path: Path) -> None:
    """`report --survey FILE` reads the survey file: before, only the data file was
    protected, and `--html` through a link replaced the survey file."""
    data = tmp_path / "data.csv"
    survey = tmp_path / "survey.yaml"
    assert run(runner, "survey", "demo", "--out", str(survey)).exit_code == 0
    from deniable.survey import load_survey

    ids = [q.id for q in load_survey(survey).questions]
    data.write_text(",".join(ids) + "\n" + "".join(",".join("1" for _ in ids) + "\n"
                                                  for _ in range(5)))  # fmt: skip
    (tmp_path / "sub").mkdir()
    before = survey.read_bytes()
    for spelling in _links(tmp_path, survey, ".html")[1:]:
        res = run(runner, "report", str(data), "--survey", str(survey), "--html",
                  str(spelling), "--force")  # fmt: skip
        one_error(res, "`--html`", "same file as the input --survey")
        assert survey.read_bytes() == before


@pytest.mark.parametrize(
    "argv",
    [
        ("privacy", "explain", "--epsilon", "1", "--force"),
        ("privacy", "shuffle", "--epsilon0", "1", "--n", "1000", "--force"),
        ("privacy", "noise", "--table", "--force"),
        ("power", "two-coin", "--n", "50", "--prevalence", "0.6", "--null", "0.5", "--force"),
    ],
)
def test_force_without_an_output_is_an_error(runner: CliRunner, argv: tuple[str, ...]) -> None:
    one_error(run(runner, *argv), "`--force`", "--plot")


def test_a_secret_keeps_mode_0600_when_replaced(tmp_path: Path) -> None:
    from deniable.cli._files import claim_output

    out = tmp_path / "links.json"
    out.write_text("old")
    out.chmod(0o644)
    with pytest.raises(CliError, match="exists; pass --force"):
        claim_output("--out", str(out), force=False, formats=["json"])
    claimed = claim_output("--out", str(out), force=True, formats=["json"])
    claimed.write_text('{"token": 1}', mode=0o600)
    assert out.read_text() == '{"token": 1}' and stat.S_IMODE(os.stat(out).st_mode) == 0o600
    # a format of the command's own (as `survey invite` may declare its file of links)
    links = {"links": (".txt",)}
    fresh = claim_output("--out", str(tmp_path / "new.txt"), force=False, formats=links)
    assert (fresh.format, fresh.suffix) == ("links", ".txt")
    fresh.write_text("https://x/i/token\n", mode=0o600)
    assert stat.S_IMODE(os.stat(tmp_path / "new.txt").st_mode) == 0o600
    with pytest.raises(CliError, match=r"ending in \.txt"):
        claim_output("--out", str(tmp_path / "new.json"), force=False, formats=links)


# ------------------------------------------------------------------ telemetry formats


def _simulate(runner: CliRunner, out: Path, *extra: str) -> Any:
    return run(runner, "telemetry", "simulate", "--out", str(out), "--devices", "400", "--k",
               "8", "--epsilon", "1", "--mechanism", "grr", "--seed", "3", *extra)  # fmt: skip


#: What a file of each compression starts with (gzip, bzip2, Zstandard frame magic).
COMPRESSED = {".csv.gz": b"\x1f\x8b", ".csv.bz2": b"BZh", ".csv.zst": b"\x28\xb5\x2f\xfd"}


@pytest.mark.parametrize("suffix", sorted(COMPRESSED))
def test_compressed_csv_is_compressed_csv_that_aggregate_reads(
    runner: CliRunner, tmp_path: Path, suffix: str
) -> None:
    """Before: `--out day.csv.gz` wrote a DNRP report file (only `.csv` meant CSV), and
    `--format csv` wrote plain CSV text into the `.gz` file."""
    plain, packed = tmp_path / "day.csv", tmp_path / f"day{suffix}"
    for out, extra in (
        (plain, ()),
        (packed, ()),
        (tmp_path / f"flag{suffix}", ("--format", "csv")),
    ):
        res = _simulate(runner, out, *extra, "--json")
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["format"] == "csv"
    key = json.loads(res.stdout)["mechanism"]
    assert packed.read_bytes().startswith(COMPRESSED[suffix])
    assert (tmp_path / f"flag{suffix}").read_bytes() == packed.read_bytes()
    tallies = []
    for path in (plain, packed):
        res = run(runner, "aggregate", str(path), "--mechanism", key, "--local-workers", "0",
                  "--json")  # fmt: skip
        assert res.exit_code == 0, res.output
        tallies.append(json.loads(res.stdout))
    assert tallies[0] == tallies[1] and tallies[0]["n"] == 400


@pytest.mark.parametrize(
    ("out", "flag", "named"),
    [
        ("day.csv.gz", "parquet", ".csv.gz names csv"),
        ("day.parquet", "csv", ".parquet names parquet"),
        ("day.dnrp", "parquet", ".dnrp names reports"),
        ("day.csv", "reports", ".csv names csv"),
        ("day.json", "csv", ".json names json"),
    ],
)
def test_a_format_flag_that_contradicts_the_suffix_is_refused(
    runner: CliRunner, tmp_path: Path, out: str, flag: str, named: str
) -> None:
    res = _simulate(runner, tmp_path / out, "--format", flag)
    one_error(res, f"`--format {flag}` contradicts `--out`", out, named)
    assert _listing(tmp_path) == []


@pytest.mark.parametrize("out", ["day", "day.bin", "day.parquet.gz", "day.csv.xz", "day.dnrp.zst"])
def test_an_unknown_suffix_without_a_flag_is_refused(
    runner: CliRunner, tmp_path: Path, out: str
) -> None:
    """Before: anything but .parquet, .pq and .csv silently became a DNRP report file."""
    line = one_error(_simulate(runner, tmp_path / out), "`--out`", out, ".dnrp", ".parquet",
                     ".csv.gz", ".csv.zst")  # fmt: skip
    # aggregate does not read .csv.xz, so simulate does not write it
    assert ".csv.xz" not in line.replace(out, "")
    assert _listing(tmp_path) == []


def test_a_flag_decides_for_a_suffix_that_names_no_format(
    runner: CliRunner, tmp_path: Path
) -> None:
    res = _simulate(runner, tmp_path / "day.txt", "--format", "csv")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "day.txt").read_text().startswith('"report"\n')
    one_error(_simulate(runner, tmp_path / "day.parquet.gz", "--format", "parquet"),
              "ends in .gz, a compression this command does not write")  # fmt: skip


def test_a_pipe_names_no_format(runner: CliRunner, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    one_error(_simulate(runner, fifo), "a device or a pipe", "`--format`")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_dev_stdout_into_a_pipe_is_written_into(tmp_path: Path) -> None:
    """`--out /dev/stdout` with stdout a pipe: /dev/stdout links to /proc/self/fd/1, whose
    resolved name is no path; before, it was an error ("No such file or directory")."""
    import subprocess
    import sys

    code = "from deniable.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "spec", "vectors", "--out", "/dev/stdout"],
        capture_output=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    head, _, tail = done.stdout.decode().rpartition("}\n")
    assert json.loads(head + "}")["schema"] == "deniable.vectors/1"
    assert tail.startswith("wrote ") and _listing(tmp_path) == []
