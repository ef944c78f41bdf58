"""The survey-file reader shared by estimate, analyze, report and regress, and the output
files of the commands: inputs are never destroyed, outputs are never half-written, reading
is honest (blank lines, headers, duplicate columns, accepted values, missing values, errors
that name the first offending value, its row and the count), and large files stream."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from _cli import ENV, run, run_json
from _cli import one_error as one_line_error
from deniable import ForcedResponse, TwoCoin
from deniable.common import atomic_write, same_file
from deniable.designs import StochasticLieDetector
from deniable.exceptions import DataError
from deniable.survey import (
    analyze,
    analyze_file,
    read_reports,
    survey_report,
    survey_report_file,
    write_reports,
)
from deniable.survey._values import BAD, MISSING, report_rule

SLD = StochasticLieDetector(2 / 12, 10 / 12)


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner(env=ENV)


def survey_csv(tmp_path: Path, name: str = "survey.csv") -> Path:
    path = tmp_path / name
    path.write_text("q,region\n1,north\n0,south\n1,north\n1,south\n0,north\n")
    return path


# ------------------------------------------------------------- outputs never destroy inputs


def _spellings(tmp_path: Path, path: Path) -> list[str]:
    (tmp_path / "sub").mkdir(exist_ok=True)
    link = tmp_path / "link.csv"
    link.symlink_to(path)
    hard = tmp_path / "hard.csv"
    os.link(path, hard)
    rel = os.path.relpath(path)
    return [str(path), f"{tmp_path}/sub/../{path.name}", f"./{rel}", str(link), str(hard)]


def test_report_html_onto_its_input_is_refused(runner: CliRunner, tmp_path: Path) -> None:
    path = survey_csv(tmp_path)
    before = path.read_bytes()
    for spelling in _spellings(tmp_path, path):
        res = run(runner, "report", str(path), "-q", "q=two-coin", "--html", spelling)
        one_line_error(res, "`--html`", "same file as the input FILE", str(path))
        assert path.read_bytes() == before, spelling
        res = run(runner, "report", spelling, "-q", "q=two-coin", "--html", str(path))
        one_line_error(res, "same file as the input")
        assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hard.csv", "link.csv", "sub",
                                                          "survey.csv"]  # fmt: skip


def test_report_html_elsewhere_is_written(runner: CliRunner, tmp_path: Path) -> None:
    path = survey_csv(tmp_path)
    out = tmp_path / "page.html"
    out.write_text("old")
    res = run(runner, "report", str(path), "-q", "q=two-coin", "--html", str(out), "--force")
    assert res.exit_code == 0, res.output
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html", "survey.csv"]


def test_failed_html_write_keeps_the_old_file(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = survey_csv(tmp_path)
    out = tmp_path / "page.html"
    out.write_text("old page")
    real = Path.write_text

    def half_then_full_disk(self: Path, text: str, *args: Any, **kwargs: Any) -> int:
        real(self, text[:10], *args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", half_then_full_disk)
    res = run(runner, "report", str(path), "-q", "q=two-coin", "--html", str(out), "--force")
    monkeypatch.undo()
    one_line_error(res, "cannot write", "page.html", "No space left on device")
    assert out.read_text() == "old page"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html", "survey.csv"]


@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_write_reports_is_atomic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: BaseException
) -> None:
    out = tmp_path / "out.csv"
    out.write_text("q\n1\n")
    real = pd.DataFrame.to_csv

    def fail_midway(self: pd.DataFrame, path: Any, *args: Any, **kwargs: Any) -> None:
        real(self.head(1), path, *args, **kwargs)  # part of the data is on disk
        raise exc

    monkeypatch.setattr(pd.DataFrame, "to_csv", fail_midway)
    with pytest.raises(DataError if isinstance(exc, OSError) else KeyboardInterrupt):
        write_reports(pd.DataFrame({"q": [0, 1, 1]}), out)
    monkeypatch.undo()
    assert out.read_text() == "q\n1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_atomic_write_follows_links_keeps_mode_and_refuses_directories(tmp_path: Path) -> None:
    target = tmp_path / "t.txt"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "l.txt"
    link.symlink_to(target)
    atomic_write(link, lambda tmp: tmp.write_text("new"))
    assert link.is_symlink() and target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o640
    with pytest.raises(DataError, match="it is a directory"):
        atomic_write(tmp_path, lambda tmp: tmp.write_text("x"))
    with pytest.raises(DataError, match="cannot write"):
        atomic_write(tmp_path / "no" / "x.txt", lambda tmp: tmp.write_text("x"))
    assert same_file(link, target) and not same_file(link, tmp_path / "other")


def test_plot_output_is_atomic(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.figure import Figure

    out = tmp_path / "plot.png"
    out.write_bytes(b"old plot")

    def broken(self: Any, fname: Any, *args: Any, **kwargs: Any) -> None:
        Path(fname).write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", broken)
    res = run(runner, "privacy", "explain", "--epsilon", "1", "--plot", str(out), "--force")
    monkeypatch.undo()
    assert res.exit_code == 2 and "No space left on device" in res.stderr
    assert out.read_bytes() == b"old plot"
    assert [p.name for p in tmp_path.iterdir()] == ["plot.png"]


# ------------------------------------------------------------------ the header rule


def test_a_bare_list_never_takes_line_1_for_a_header(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "r.txt"
    path.write_text("yes\n1\n0\n")
    res = run(runner, "estimate", "two-coin", "--reports", str(path))
    one_line_error(res, "got 'yes' at line 1", "--column NAME")
    # naming the column says the first line is a header: then 'yes' is its name
    out = run_json(runner, "estimate", "two-coin", "--reports", str(path), "--column", "yes")
    assert out["n"] == 2 and out["yes"] == 1
    res = run(runner, "estimate", "two-coin", "--reports", str(path), "--column", "q")
    one_line_error(res, "`--column` must be one of the header", "'yes'", "got 'q'")


def test_header_rows_are_never_guessed_for_analyze(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "bare.csv"
    path.write_text("1\n0\n1\n")
    res = run(runner, "analyze", str(path), "--column", "q", "--design", "two-coin")
    one_line_error(res, "`column` must be one of the header", "'1'")


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_duplicate_column_names_are_an_error(runner: CliRunner, tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"dup.{kind}"
    if kind == "csv":
        path.write_text("q,x,q\n1,a,0\n0,b,1\n")
    else:
        table = pa.table([pa.array([1, 0]), pa.array(["a", "b"]), pa.array([0, 1])],
                         names=["q", "x", "q"])  # fmt: skip
        pq.write_table(table, path)
    needle = "names column 'q' more than once"
    for args in (
        ("analyze", str(path), "--column", "x", "--design", "two-coin"),
        ("report", str(path), "-q", "q=two-coin"),
        ("estimate", "two-coin", "--reports", str(path), "--column", "q"),
        ("regress", "--design", "two-coin", "--data", str(path), "--formula", "q ~ 1"),
    ):
        one_line_error(run(runner, *args), needle)
    with pytest.raises(DataError, match=needle):
        read_reports(path)


# ------------------------------------------------------------------ values and missing


def test_blank_lines_are_missing_values(runner: CliRunner, tmp_path: Path) -> None:
    bare = tmp_path / "r.txt"
    bare.write_text("1\n\n0\n1\n   \n1\n\n")
    out = run_json(runner, "estimate", "two-coin", "--reports", str(bare))
    assert (out["yes"], out["n"], out["missing"]) == (3, 4, 3)
    one = tmp_path / "one.csv"
    one.write_text("q\n1\n\n0\n1\n\n")
    out = run_json(runner, "analyze", str(one), "--column", "q", "--design", "two-coin")
    assert (out["yes"], out["n"], out["missing"]) == (2, 3, 2)
    # several columns: a blank line is a row whose every value is missing
    two = tmp_path / "two.csv"
    two.write_text("q,g\n1,a\n\n0,b\n")
    out = run_json(runner, "analyze", str(two), "--column", "q", "--design", "two-coin",
                   "--by", "g")  # fmt: skip
    assert out["missing_group"] == 1 and [g["n"] for g in out["groups"]] == [1, 1]
    assert read_reports(two)["q"].isna().sum() == 1


# Cells every reader accepts: (text, code); the same for estimate, analyze, report, regress.
ACCEPTED = [("1", 1), ("0", 0), ("true", 1), ("FALSE", 0), (" 1 ", 1), ("1.0", 1),
            ("0.0", 0), ("+1", 1), ("True", 1), ("NA", MISSING), ("", MISSING),
            ("null", MISSING), ("  ", MISSING)]  # fmt: skip


@pytest.mark.parametrize(("text", "code"), [*ACCEPTED, ("yes", BAD), ("2", BAD), ("0.5", BAD),
                                            ("inf", BAD), ("1e400", BAD), ("-1", BAD)])  # fmt: skip
def test_value_rule(text: str, code: int) -> None:
    assert report_rule(2, "x").code(text) == code


def _accepted_file(tmp_path: Path) -> Path:
    path = tmp_path / "values.csv"
    body = "".join(f'"{text}",{i}\n' for i, (text, _) in enumerate(ACCEPTED))
    path.write_text("q,i\n" + body)
    return path


def _expected() -> tuple[int, int, int]:
    codes = [c for _, c in ACCEPTED]
    return sum(c == 1 for c in codes), sum(c >= 0 for c in codes), codes.count(MISSING)


@pytest.mark.parametrize("command", ["estimate", "analyze", "report", "regress", "library"])
def test_same_accepted_values_everywhere(runner: CliRunner, tmp_path: Path, command: str) -> None:
    path = str(_accepted_file(tmp_path))
    yes, n, miss = _expected()
    if command == "estimate":
        out = run_json(runner, "estimate", "two-coin", "--reports", path, "--column", "q")
        got = (out["yes"], out["n"], out["missing"])
    elif command == "analyze":
        out = run_json(runner, "analyze", path, "--column", "q", "--design", "two-coin")
        got = (out["yes"], out["n"], out["missing"])
    elif command == "report":
        q = run_json(runner, "report", path, "-q", "q=two-coin")["questions"][0]
        got = (round(q["lambda_hat"] * q["n"]), q["n"], q["missing"])
    elif command == "regress":
        out = run_json(runner, "regress", "--design", "two-coin", "--data", path,
                       "--formula", "q ~ 1")  # fmt: skip
        got = (yes, out["nobs"], out["n_dropped"])
        assert out["nobs"] == n
    else:  # the DataFrame API on the file read whole, and on the text as strings
        res = analyze(read_reports(path), "q", TwoCoin())
        got = (round((res.estimate.lambda_hat or 0) * res.n), res.n, res.missing)  # type: ignore[union-attr]
        text = pd.DataFrame({"q": [t for t, _ in ACCEPTED]}, dtype=object)
        again = analyze(text, "q", TwoCoin())
        assert (again.n, again.missing) == (n, miss)
    assert got == (yes, n, miss)


@pytest.mark.parametrize(
    "args",
    [
        ("estimate", "two-coin", "--reports", "{p}", "--column", "q"),
        ("analyze", "{p}", "--column", "q", "--design", "two-coin"),
        ("report", "{p}", "-q", "q=two-coin"),
        ("regress", "--design", "two-coin", "--data", "{p}", "--formula", "q ~ 1"),
    ],
    ids=lambda a: a[0],
)
def test_bad_value_names_first_value_row_and_count(
    runner: CliRunner, tmp_path: Path, args: tuple[str, ...]
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("q\n1\nNA\n0\nyes\n\n2\n1\nno\n")  # 3 offending, 2 missing
    line = one_line_error(run(runner, *(a.format(p=path) for a in args)))
    assert "got 'yes' at data row 4" in line, line
    assert "the first of 3 offending values" in line, line


def test_missing_counted_in_table_and_json_or_an_error(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("q\n1\n\n0\nNA\n1\n")
    for args in (("analyze", str(path), "--column", "q", "--design", "two-coin"),
                 ("estimate", "two-coin", "--reports", str(path), "--column", "q")):  # fmt: skip
        assert run_json(runner, *args)["missing"] == 2
        table = run(runner, *args).stdout
        assert "missing reports (dropped)" in table and " 2 " in table
        one_line_error(run(runner, *args, "--missing", "error"), "2 missing value(s)",
                       "first at data row 2")  # fmt: skip
    rep = run_json(runner, "report", str(path), "-q", "q=two-coin")
    assert rep["questions"][0]["missing"] == 2 and rep["respondents"] == 5
    one_line_error(run(runner, "report", str(path), "-q", "q=two-coin", "--missing", "error"),
                   "missing value")  # fmt: skip
    one_line_error(run(runner, "estimate", "two-coin", "--yes", "3", "--n", "9", "--missing",
                       "error"), "`--missing` applies to --reports only")  # fmt: skip


# ------------------------------------------------------------------ clean file errors


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "No such file"),
        ("dir", "it is a directory"),
        (b"", "it is empty"),
        (b"q\n1\n\xff\xfe\n", "not UTF-8"),
        (b"q,g\n1,a\n0\n", "a row has 1 value(s) where the header has 2"),
        (b"\nq\n1\n", "the header, is blank"),
    ],
    ids=["missing", "directory", "empty", "not-utf8", "ragged", "blank-header"],
)
def test_unreadable_files_are_one_error(
    runner: CliRunner, tmp_path: Path, content: bytes | str | None, needle: str
) -> None:
    path = tmp_path / "f.csv"
    if content == "dir":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    for args in (("analyze", str(path), "--column", "q", "--design", "two-coin"),
                 ("report", str(path), "-q", "q=two-coin"),
                 ("estimate", "two-coin", "--reports", str(path), "--column", "q")):  # fmt: skip
        one_line_error(run(runner, *args), needle, "f.csv")


# ------------------------------------------------------------------ streaming


def _big_frame(n: int = 5000) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    q = rng.integers(0, 2, n).astype(float)
    q[rng.random(n) < 0.05] = np.nan
    region = rng.choice(["north", "south", "east", "10", "9"], n).astype(object)
    region[rng.random(n) < 0.02] = None
    return pd.DataFrame({"q": q, "region": region, "version": rng.integers(1, 3, n),
                         "c": rng.integers(0, 2, n),
                         "note": [f"free text, {i}" for i in range(n)]})  # fmt: skip


def test_small_batches_give_the_same_tally_as_reading_whole(tmp_path: Path) -> None:
    df = _big_frame()
    path = tmp_path / "big.csv"
    df.to_csv(path, index=False)
    calls: list[tuple[int, int]] = []
    res = analyze_file(
        path, "q", TwoCoin(), block_size=1024, progress=lambda a, b: calls.append((a, b))
    )
    assert len(calls) > 20 and calls[-1] == (path.stat().st_size, path.stat().st_size)
    whole = analyze(read_reports(path), "q", TwoCoin())
    assert (res.n, res.missing, res.estimate.value) == (
        whole.n,
        whole.missing,
        whole.estimate.value,
    )
    by = analyze_file(path, "q", TwoCoin(), by="region", block_size=1024)
    whole_by = analyze(df, "q", TwoCoin(), by="region")
    # CSV labels "10" and "9" are text among text: sorted as text; counts equal per label
    got = {str(r.group): (r.n, r.yes, r.missing) for r in by.itertuples()}
    want = {str(r.group): (r.n, r.yes, r.missing) for r in whole_by.itertuples()}
    assert got == want and by.attrs["missing_group"] == whole_by.attrs["missing_group"]
    two = analyze_file(path, "q", SLD, group="version", block_size=2048)
    two_whole = analyze(df, "q", SLD, group="version")
    assert two.estimate.tally == two_whole.estimate.tally  # type: ignore[union-attr]
    questions = {"q": TwoCoin(), "version": ForcedResponse(1 / 6, 1 / 6)}
    count = f"the first of {int((df['version'] == 2).sum())} offending values"
    first = int(np.argmax(df["version"] == 2)) + 1
    with pytest.raises(DataError, match=f"got '2' at data row {first} .*{count}"):
        survey_report_file(path, questions, block_size=999)
    with pytest.raises(DataError, match=f"got 2 at row .*{count}"):
        survey_report(df, questions)
    rep = survey_report_file(path, {"q": TwoCoin(), "c": (SLD, "version")}, block_size=999)
    assert rep.respondents == len(df) and rep.results[0].n == whole.n
    from_file = rep.to_dict()
    assert from_file.pop("file") == str(path)  # where the reports came from
    assert from_file == survey_report(df, {"q": TwoCoin(), "c": (SLD, "version")}).to_dict()


def test_only_offending_values_counted_across_batches(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("q\n" + "1\n" * 3000 + "x\n" + "\n" * 50 + "0\n" * 3000 + "y\n2\n")
    with pytest.raises(DataError, match=r"got 'x' at data row 3001 of .*\(the first of 3 "):
        analyze_file(path, "q", TwoCoin(), block_size=512)


def test_numeric_labels_from_csv_sort_as_numbers(tmp_path: Path) -> None:
    path = tmp_path / "w.csv"
    path.write_text("q,wave\n1,10\n0,9\n1,10\n0,2\n")
    out = analyze_file(path, "q", TwoCoin(), by="wave")
    assert list(out["group"]) == [2, 9, 10]


def test_parquet_with_several_row_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import deniable.survey._files as sf

    df = _big_frame()
    path = tmp_path / "big.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=700)
    assert pq.ParquetFile(path).num_row_groups > 5
    monkeypatch.setattr(sf, "PARQUET_BATCH_ROWS", 300)
    calls: list[int] = []
    res = analyze_file(path, "q", TwoCoin(), progress=lambda a, b: calls.append(a))
    whole = analyze(df, "q", TwoCoin())
    assert len(calls) > 10 and (res.n, res.missing) == (whole.n, whole.missing)
    assert res.estimate.value == whole.estimate.value
    by = analyze_file(path, "q", TwoCoin(), by="region")
    assert by["n"].tolist() == analyze(df, "q", TwoCoin(), by="region")["n"].tolist()


@pytest.mark.parametrize("suffix", [".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst", ".csv.zip"])
def test_compressed_csv(runner: CliRunner, tmp_path: Path, suffix: str) -> None:
    df = _big_frame(2000)
    plain = tmp_path / "plain.csv"
    df.to_csv(plain, index=False)
    data = plain.read_bytes()
    path = tmp_path / f"s{suffix}"
    if suffix == ".csv.gz":
        path.write_bytes(gzip.compress(data))
    elif suffix == ".csv.bz2":
        path.write_bytes(bz2.compress(data))
    elif suffix == ".csv.xz":
        path.write_bytes(lzma.compress(data))
    elif suffix == ".csv.zip":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("s.csv", data)
    else:
        write_reports(df, path)  # zstd through pandas, read back through pyarrow
    res = analyze_file(path, "q", TwoCoin(), block_size=4096)
    whole = analyze(df, "q", TwoCoin())
    assert (res.n, res.missing, res.estimate.value) == (whole.n, whole.missing,
                                                        whole.estimate.value)  # fmt: skip
    out = run_json(runner, "estimate", "two-coin", "--reports", str(path), "--column", "q")
    assert out["n"] == whole.n and out["missing"] == whole.missing


def test_no_progress_bar_in_pipes_or_json(runner: CliRunner, tmp_path: Path) -> None:
    path = survey_csv(tmp_path)
    res = run(runner, "analyze", str(path), "--column", "q", "--design", "two-coin")
    assert res.exit_code == 0 and res.stderr == ""
