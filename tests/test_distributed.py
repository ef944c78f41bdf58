"""deniable.distributed: report tables tallied on a real Dask cluster (a LocalCluster of two
worker processes) equal the in-process tally and estimate exactly; bad tables are one
clear error naming the problem, and nothing is half-written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from _cli import ENV
from _distributed import cluster_client, write_parts
from deniable.cli import app
from deniable.distributed import (
    KEY_METADATA,
    aggregate,
    report_columns,
    table_mechanism,
    write_report_table,
)
from deniable.exceptions import DataError, ParameterError
from deniable.oracles import GRR, OLH, OUE, HadamardResponse, oracle_from_key

ORACLES = {
    "grr": GRR.from_epsilon(1.0, 16),
    "olh": OLH.from_epsilon(1.0, 64),
    "oue": OUE.from_epsilon(1.0, 20),  # 3 bytes a report, 4 padding bits
    "hadamard": HadamardResponse.from_epsilon(1.0, 16),
}


client = cluster_client(processes=True)


def reports_of(oracle: Any, n: int = 20_000, seed: int = 3) -> Any:
    rng = np.random.default_rng(seed)
    weights = 1 / np.arange(1, oracle.k + 1)
    values = rng.choice(oracle.k, size=n, p=weights / weights.sum())
    return oracle.randomize(values, rng=rng)


def split(path: Path, oracle: Any, reports: Any, suffix: str) -> list[Path]:
    """Write the reports to three files of unequal size (several row groups each)."""
    cuts = [0, len(reports) // 5, len(reports) // 2, len(reports)]
    return write_parts(path, oracle, reports, suffix, cuts, row_group=1500)


@pytest.mark.parametrize("name", sorted(ORACLES))
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_the_cluster_tally_and_estimate_equal_the_in_process_ones(
    client: Any, tmp_path: Path, name: str, suffix: str
) -> None:
    oracle = ORACLES[name]
    reports = reports_of(oracle)
    split(tmp_path, oracle, reports, suffix)
    expected = oracle.tally(reports)
    mechanism = None if suffix == ".parquet" else oracle.key  # a CSV does not name it
    got = aggregate(str(tmp_path / f"part-*{suffix}"), mechanism, scheduler=client, batch=2000)
    assert got == expected and got.mechanism == oracle.key
    a, b = oracle.estimate(got), oracle.estimate(expected)
    assert np.array_equal(a.values, b.values) and np.array_equal(a.variances, b.variances)
    # the same in this process, with no cluster
    assert aggregate(str(tmp_path), oracle, scheduler="synchronous", batch=1024) == expected


def _compress(path: Path, suffix: str) -> Path:
    """``path`` compressed into ``path + suffix`` (gzip, bz2 or zstd), the plain file removed."""
    import pyarrow as pa

    codec = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}[suffix]
    out = Path(str(path) + suffix)
    with pa.CompressedOutputStream(str(out), codec) as sink:
        sink.write(path.read_bytes())
    path.unlink()
    return out


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".zst"])
def test_compressed_csv_tables_stream_and_equal_the_in_process_tally(
    client: Any, tmp_path: Path, suffix: str
) -> None:
    oracle = ORACLES["oue"]
    reports = reports_of(oracle)
    files = split(tmp_path, oracle, reports, ".csv")
    _compress(files[1], suffix)  # one compressed file beside two plain ones
    expected = oracle.tally(reports)
    seen: list[tuple[int, int]] = []
    got = aggregate(str(tmp_path / "part-*"), oracle.key, scheduler=client, batch=1024,
                    progress=lambda done, total: seen.append((done, total)))  # fmt: skip
    assert got == expected
    # one task for the compressed file, blocks for the plain ones; every one reported once
    total = seen[-1][1]
    assert [d for d, _ in seen] == list(range(1, total + 1)) and total >= 3
    assert all(t == total for _, t in seen)
    assert aggregate(str(tmp_path), oracle, scheduler="synchronous", batch=1024) == expected
    # the command line takes them too
    res = run("aggregate", str(tmp_path / f"part-1.csv{suffix}"), "--mechanism", oracle.key,
              "--local-workers", "0", "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    part = reports[len(reports) // 5 : len(reports) // 2]
    assert json.loads(res.stdout)["n"] == len(part)


def test_a_truncated_compressed_csv_is_one_error_naming_it(tmp_path: Path) -> None:
    oracle = ORACLES["grr"]
    path = tmp_path / "r.csv"
    write_report_table(path, oracle, 5000, [reports_of(oracle, 5000)])
    gz = _compress(path, ".gz")
    data = gz.read_bytes()
    gz.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match=r"r\.csv\.gz.*not a CSV of reports"):
        aggregate(str(gz), oracle.key, scheduler="synchronous", batch=1024)
    bad = tmp_path / "s.csv.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(DataError, match=r"s\.csv\.gz.*cannot be read as a CSV"):
        aggregate(str(bad), oracle.key, scheduler="synchronous")
    with pytest.raises(TypeError, match="`progress` must be a callable"):
        aggregate(str(tmp_path / "s.csv.gz"), oracle.key, progress=3)  # type: ignore[arg-type]


def test_an_address_a_list_of_files_and_the_default_local_cluster(
    client: Any, tmp_path: Path
) -> None:
    oracle = ORACLES["olh"]
    reports = reports_of(oracle, n=5000)
    files = split(tmp_path, oracle, reports, ".parquet")
    expected = oracle.tally(reports)
    address = client.scheduler.address
    assert aggregate([str(f) for f in files], scheduler=address) == expected
    assert aggregate(tmp_path, oracle.key) == expected  # starts and closes its own cluster
    assert table_mechanism(files[0]) == oracle.key


def test_columns_are_named_by_report_item_and_parquet_names_its_oracle(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    oue = ORACLES["oue"]
    path = write_report_table(tmp_path / "r.parquet", oue, 10, [reports_of(oue, 10)])
    schema = pq.read_schema(path)
    assert schema.names == ["report_0", "report_1", "report_2"] == list(report_columns(oue))
    assert schema.metadata[KEY_METADATA].decode() == oue.key
    assert str(schema.field("report_0").type) == "uint8"


def test_renamed_columns(tmp_path: Path) -> None:
    grr = ORACLES["grr"]
    reports = reports_of(grr, 3000)
    (tmp_path / "r.csv").write_text("answer\n" + "".join(f"{r}\n" for r in reports.tolist()))
    got = aggregate(tmp_path / "r.csv", grr, columns=["answer"], scheduler="synchronous")
    assert got == grr.tally(reports)


# ---- bad input: one clear error naming the problem


def test_a_truncated_parquet_file_is_refused_before_anything_is_counted(
    client: Any, tmp_path: Path
) -> None:
    oracle = ORACLES["olh"]
    files = split(tmp_path, oracle, reports_of(oracle, 5000), ".parquet")
    data = files[1].read_bytes()
    files[1].write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match=r"part-1\.parquet.* is not a readable Parquet file"):
        aggregate(str(tmp_path / "*.parquet"), scheduler=client)
    files[1].write_bytes(b"not parquet at all")
    with pytest.raises(DataError, match=r"part-1\.parquet"):
        aggregate(str(tmp_path / "*.parquet"), scheduler=client)


def test_a_table_of_another_oracle_is_refused(client: Any, tmp_path: Path) -> None:
    olh, grr = ORACLES["olh"], ORACLES["grr"]
    other = OLH.from_epsilon(2.0, 64)
    split(tmp_path, olh, reports_of(olh, 3000), ".parquet")
    with pytest.raises(DataError, match=r"holds reports of olh.*not of this oracle olh"):
        aggregate(str(tmp_path / "*.parquet"), other, scheduler=client)
    write_report_table(tmp_path / "g.csv", olh, 3000, [reports_of(olh, 3000)])
    with pytest.raises(DataError, match=r"has no column report \(reports of categorical"):
        aggregate(tmp_path / "g.csv", grr, scheduler=client)


def test_values_out_of_range_name_the_file_and_the_values(client: Any, tmp_path: Path) -> None:
    grr, oue = ORACLES["grr"], ORACLES["oue"]
    body = "".join(f"{i % 16}\n" for i in range(5000))
    (tmp_path / "bad.csv").write_text("report\n" + body + "16\n" + body)
    with pytest.raises(DataError, match=r"bad\.csv' block.*`reports`.*0\.\.15, got one outside"):
        aggregate(tmp_path / "bad.csv", grr, scheduler=client, batch=1024)
    (tmp_path / "big.csv").write_text("report_0,report_1,report_2\n1,2,3\n1,300,3\n")
    with pytest.raises(
        DataError,
        match=r"big\.csv' block 0: column 'report_1' must hold values in 0\.\.255 \(uint8\), "
        r"got 300",
    ):
        aggregate(tmp_path / "big.csv", oue, scheduler=client)
    (tmp_path / "text.csv").write_text("report\n1\nabc\n")
    with pytest.raises(
        DataError, match=r"text\.csv' block 0 is not a CSV of reports.*invalid value 'abc'"
    ):
        aggregate(tmp_path / "text.csv", grr, scheduler="synchronous")
    # the padding bits of a packed report (k = 20: the last 4 bits of byte 3)
    (tmp_path / "pad.csv").write_text("report_0,report_1,report_2\n1,2,255\n")
    with pytest.raises(DataError, match=r"pad\.csv' block 0: `reports` must have the padding bits"):
        aggregate(tmp_path / "pad.csv", oue, scheduler="synchronous")


def test_bad_sources_and_options(tmp_path: Path) -> None:
    grr = ORACLES["grr"]
    with pytest.raises(DataError, match="names no file"):
        aggregate(tmp_path / "missing-*.parquet", grr, scheduler="synchronous")
    with pytest.raises(DataError, match="is a directory with no report tables"):
        aggregate(tmp_path, grr, scheduler="synchronous")
    write_report_table(tmp_path / "r.csv", grr, 10, [reports_of(grr, 10)])
    with pytest.raises(ParameterError, match="`mechanism` must be given for CSV"):
        aggregate(tmp_path / "r.csv", scheduler="synchronous")
    with pytest.raises(ParameterError, match="`columns` must name 1 distinct columns"):
        aggregate(tmp_path / "r.csv", grr, columns=["a", "b"], scheduler="synchronous")
    (tmp_path / "r.txt").write_text("report\n1\n")
    with pytest.raises(ParameterError, match="`format` must be given"):
        aggregate(tmp_path / "r.txt", grr, scheduler="synchronous")
    with pytest.raises(DataError, match="`key` must look like"):
        aggregate(tmp_path / "r.csv", "not a key", scheduler="synchronous")
    with pytest.raises(DataError, match=r"`scheduler` 'tcp://127\.0\.0\.1:9': cannot reach it"):
        aggregate(tmp_path / "r.csv", grr, scheduler="tcp://127.0.0.1:9", timeout=1.0)


def test_a_failed_write_leaves_no_table(tmp_path: Path) -> None:
    grr = ORACLES["grr"]
    good = reports_of(grr, 100)
    for suffix in (".parquet", ".csv"):
        out = tmp_path / f"r{suffix}"
        with pytest.raises(DataError, match="`reports`"):
            write_report_table(out, grr, 200, [good, np.full(100, 16, dtype=good.dtype)])
        with pytest.raises(DataError, match="hold 100 reports, not the n = 200 promised"):
            write_report_table(out, grr, 200, [good])
        assert list(tmp_path.iterdir()) == []


def test_importing_the_package_loads_no_dask() -> None:
    code = (
        "import sys, deniable.distributed\n"
        "heavy = [m for m in ('dask', 'distributed', 'fsspec', 'pyarrow', 'pandas')"
        " if m in sys.modules]\n"
        "assert heavy == [], heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# ---- the command line


def run(*args: str) -> Any:
    return CliRunner(env=ENV).invoke(app, list(args), catch_exceptions=False)


def test_simulate_parquet_then_aggregate_on_the_cluster(client: Any, tmp_path: Path) -> None:
    for i, seed in enumerate(("1", "2")):
        out = str(tmp_path / f"day-{i}.parquet")
        res = run("telemetry", "simulate", "--out", out, "--devices", "3000", "--k", "32",
                  "--epsilon", "2", "--seed", seed, "--json")  # fmt: skip
        assert res.exit_code == 0, res.output
        info = json.loads(res.stdout)
        assert (
            info["format"] == "parquet"
            and table_mechanism(tmp_path / f"day-{i}.parquet") == info["mechanism"]
        )
    oracle = oracle_from_key(info["mechanism"])
    expected = aggregate(str(tmp_path / "day-*.parquet"), scheduler="synchronous")
    for how in (["--scheduler", client.scheduler.address], ["--local-workers", "0"]):
        res = run("telemetry", "aggregate", str(tmp_path / "day-*.parquet"), *how, "--json")
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout) == json.loads(
            json.dumps(oracle.estimate(expected).to_dict(0.95))
        )
    res = run("telemetry", "simulate", "--out", str(tmp_path / "day.txt"), "--format", "csv",
              "--devices", "100", "--k", "8", "--epsilon", "1", "--mechanism", "grr",
              "--seed", "1")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (tmp_path / "day.txt").read_text().startswith('"report"\n')


def one_error(result: Any, *needles: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_command_line_errors(tmp_path: Path) -> None:
    grr = ORACLES["grr"]
    write_report_table(tmp_path / "r.csv", grr, 10, [reports_of(grr, 10)])
    one_error(run("telemetry", "aggregate", str(tmp_path / "r.csv")), "`mechanism` must be given")
    one_error(run("telemetry", "aggregate", str(tmp_path / "r.csv"), "--scheduler", "here"),
              "`--scheduler` must be an address")  # fmt: skip
    one_error(run("telemetry", "aggregate", str(tmp_path / "r.csv"), "--local-workers", "65"),
              "`--local-workers` must be at most 64")  # fmt: skip
    one_error(run("telemetry", "aggregate", str(tmp_path / "x.dnrp"), "--scheduler", "tcp://h:1"),
              "apply to Parquet or CSV report tables")  # fmt: skip
    one_error(run("telemetry", "simulate", "--out", str(tmp_path / "o"), "--format", "feather",
                  "--devices", "10", "--k", "4", "--epsilon", "1"),
              "`--format` must be one of")  # fmt: skip
    assert not (tmp_path / "o").exists()


# ---- issue 14: work follows the reports, every file order refused alike, one error line


def test_many_small_row_groups_read_each_footer_once_per_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One task per row group read the file's footer (O(groups)) once per group: quadratic
    in the groups (8,000 groups of one report took 145 s).  Now one task per run of about
    `batch` reports: 3,000 groups of one report at batch 1,024 open the file 3 times (and
    the client once for its columns)."""
    import pyarrow.parquet as pq

    grr = ORACLES["grr"]
    reports = reports_of(grr, 3000)
    path = tmp_path / "tiny-groups.parquet"
    write_report_table(path, grr, len(reports), [reports], row_group=1)
    assert pq.ParquetFile(path).metadata.num_row_groups == 3000
    opened: list[int] = []

    class Counting(pq.ParquetFile):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            opened.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(pq, "ParquetFile", Counting)
    got = aggregate(path, scheduler="synchronous", batch=1024)
    assert got == grr.tally(reports)
    assert len(opened) <= 1 + 3 + 1  # the key, three runs of at most 1,024 groups, the columns


def _keyless_parquet(path: Path, oracle: Any, reports: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = report_columns(oracle)
    rows = np.asarray(reports).reshape(len(reports), len(names))
    pq.write_table(pa.table({c: rows[:, i] for i, c in enumerate(names)}), path)


@pytest.mark.parametrize("order", ["012", "021", "102", "120", "201", "210"])
def test_tables_of_different_oracles_are_refused_whatever_the_order(
    tmp_path: Path, order: str
) -> None:
    """The first file's key chose the oracle: a later keyless file was silently read as its
    reports, and a keyless file first was an error; now every order is refused."""
    olh, other = ORACLES["olh"], OLH.from_epsilon(2.0, 64)
    reports = reports_of(olh, 500)
    makers = [
        lambda p: write_report_table(p, olh, 500, [reports]),
        lambda p: write_report_table(p, other, 500, [reports]),
        lambda p: _keyless_parquet(p, olh, reports),
    ]
    for rank, which in enumerate(order):  # the file names sort in the order given
        makers[int(which)](tmp_path / f"{rank}-file{which}.parquet")
    with pytest.raises(DataError, match=r"different oracles|carries no oracle key"):
        aggregate(tmp_path, scheduler="synchronous")
    (tmp_path / f"{order.index('1')}-file1.parquet").unlink()  # olh and a keyless file
    with pytest.raises(DataError, match=r"file2\.parquet' carries no oracle key"):
        aggregate(tmp_path, scheduler="synchronous")
    # named, the keyless file is read as the oracle given; a keyed one must match it
    assert aggregate(tmp_path, olh, scheduler="synchronous").counts[-1] == 1000
    with pytest.raises(DataError, match="not of this oracle"):
        aggregate(tmp_path, other, scheduler="synchronous")


@pytest.mark.parametrize("names", [("a.csv", "b.parquet"), ("b.csv", "a.parquet")])
def test_a_directory_of_two_formats_is_refused_whatever_the_order(
    tmp_path: Path, names: tuple[str, str]
) -> None:
    grr = ORACLES["grr"]
    for name in names:
        write_report_table(tmp_path / name, grr, 100, [reports_of(grr, 100)])
    for mechanism in (None, grr):
        with pytest.raises(DataError, match=r"mixes report tables of two formats \(csv"):
            aggregate(tmp_path, mechanism, scheduler="synchronous")


def test_a_failed_partition_on_a_local_cluster_is_one_line_on_stderr(tmp_path: Path) -> None:
    """The workers logged the failed task with its traceback (a dozen lines) on stderr."""
    olh = ORACLES["olh"]
    for i in range(2):
        write_report_table(tmp_path / f"d-{i}.parquet", olh, 2000, [reports_of(olh, 2000, i)])
    bad = tmp_path / "d-1.parquet"
    data = bytearray(bad.read_bytes())
    data[4:60] = b"\xff" * 56  # the first page header: the footer still reads
    bad.write_bytes(bytes(data))
    done = subprocess.run(
        [sys.executable, "-m", "deniable.cli", "aggregate", str(tmp_path), "--local-workers", "2"],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "COLUMNS": "100", "NO_COLOR": "1"},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "d-1.parquet" in lines[0] and "row group 0" in lines[0]


@pytest.mark.parametrize("missing", ["dask", "distributed", "fsspec", "pyarrow"])
def test_report_tables_without_the_dask_extra_name_the_extra(tmp_path: Path, missing: str) -> None:
    table = tmp_path / "t.parquet"
    write_report_table(table, ORACLES["grr"], 10, [reports_of(ORACLES["grr"], 10)])
    code = (
        f"import sys; sys.modules[{missing!r}] = None\n"  # `import missing` fails
        "from deniable.cli import main\n"
        f"main(['aggregate', {str(table)!r}])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: Parquet and CSV report tables need the [dask] extra ({missing} is missing): "
        "pip install 'deniable[dask]'."
    ]


def test_a_partition_holds_at_most_batch_bytes_of_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`batch` counted reports whatever their size (OUE at k = 2**16: 8 KB a report, 8 GB
    a partition by default); a partition now holds at most BATCH_BYTES (64 KB here)."""
    import pyarrow.parquet as pq

    from deniable.distributed import _aggregate

    oue = OUE.from_epsilon(1.0, 8192)  # 1 KB a report
    reports = reports_of(oue, 300)
    path = tmp_path / "wide.parquet"
    write_report_table(path, oue, 300, [reports], row_group=16)
    monkeypatch.setattr(_aggregate, "BATCH_BYTES", 1 << 16)
    sizes: list[int] = []
    real = _aggregate._reports

    def counted(table: Any, *args: Any) -> Any:
        sizes.append(table.num_rows)
        return real(table, *args)

    monkeypatch.setattr(_aggregate, "_reports", counted)
    assert aggregate(path, scheduler="synchronous") == oue.tally(reports)
    assert max(sizes) <= 64 and sum(sizes) == 300
    assert pq.ParquetFile(path).metadata.num_row_groups == 19
