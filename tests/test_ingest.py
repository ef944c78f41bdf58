"""Telemetry ingestion: binary report batches (deniable.batch/1) decoded and checked against
the stream's oracle, appended to Parquet partitioned by stream and day, durably (a writer
killed by SIGKILL loses no acknowledged batch and leaves no visible partial file), read
back in process and on a Dask cluster with equal tallies; bad input is one clear error and
nothing is written."""

from __future__ import annotations

import datetime as dt
import os
import signal
import struct
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

import deniable
from _distributed import cluster_client
from deniable.distributed import (
    BATCH_HEADER_SIZE,
    STREAM_SPEC_FILE,
    aggregate,
    aggregate_stream,
    append_batch,
    append_batches,
    append_reports,
    clean_stream,
    decode_batch,
    decode_json_batch,
    encode_batch,
    encode_json_batch,
    stream_files,
    stream_oracle,
)
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles import FREQUENCY_ORACLES, GRR, OLH, OUE, make_oracle

DAY = "2026-11-28"


def reports_of(oracle: Any, n: int = 500, seed: int = 1) -> Any:
    rng = np.random.default_rng(seed)
    return oracle.randomize(rng.integers(0, oracle.k, size=n), rng=rng)


def visible(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


# ---- the binary format


@pytest.mark.parametrize("name", sorted(FREQUENCY_ORACLES))
def test_every_oracle_round_trips_through_a_binary_batch(name: str) -> None:
    oracle = make_oracle(name, 1.0, k=300)
    reports = reports_of(oracle)
    body = encode_batch(oracle, reports)
    # the header, then the reports at the oracle's own record, little-endian
    assert body[:4] == b"DNRB"
    assert struct.unpack_from("<HHQ", body, 4)[:2] == (1, 0)
    assert struct.unpack_from("<Q", body, 40)[0] == len(reports)
    assert len(body) == BATCH_HEADER_SIZE + reports.nbytes
    back = decode_batch(oracle, body)
    assert back.dtype == reports.dtype and np.array_equal(back, reports)
    assert np.array_equal(decode_json_batch(oracle, encode_json_batch(oracle, reports)), reports)


def test_the_packing_is_little_endian_at_the_record_width() -> None:
    oracle = GRR.from_epsilon(1.0, k=1000)  # one uint16 a report
    body = encode_batch(oracle, np.array([1, 258, 999], dtype=np.uint16))
    assert body[BATCH_HEADER_SIZE:] == bytes([1, 0, 2, 1, 0xE7, 0x03])
    unary = OUE.from_epsilon(1.0, k=10)  # two bytes of packed bits a report
    assert len(encode_batch(unary, reports_of(unary, 7))) == BATCH_HEADER_SIZE + 14


def _header(
    oracle: Any,
    n: int,
    *,
    magic: bytes = b"DNRB",
    version: int = 1,
    flags: int = 0,
    key: str | None = None,
) -> bytes:
    import hashlib

    digest = hashlib.sha256((key or oracle.key).encode()).digest()
    return struct.pack("<4sHH32sQ", magic, version, flags, digest, n)


@pytest.fixture
def grr() -> Any:
    return GRR.from_epsilon(1.0, k=16)


def bad_bodies(grr: Any) -> dict[str, tuple[bytes, str]]:
    good = encode_batch(grr, np.array([1, 2, 3], dtype=np.uint16))
    other = GRR.from_epsilon(2.0, k=16)  # the same oracle, another epsilon
    return {
        "empty": (b"", "shorter than the 48-byte header"),
        "short header": (good[:20], "shorter than the 48-byte header"),
        "magic": (b"DNRP" + good[4:], "must start with b'DNRB', got b'DNRP'"),
        "version": (_header(grr, 3, version=2) + good[48:], "version 2; this reads version 1"),
        "flags": (_header(grr, 3, flags=1) + good[48:], "`flags` must be 0"),
        "other parameters": (
            encode_batch(other, np.array([1], dtype=np.uint16)),
            "batch for another oracle or other parameters",
        ),
        "other oracle": (
            _header(grr, 3, key=OUE.from_epsilon(1.0, k=16).key) + good[48:],
            "batch for another oracle",
        ),
        "truncated": (good[:-1], "holds 2 whole reports and 1 bytes of a partial one (truncated)"),
        "trailing": (good + b"\0\0", "holds 4 whole reports (bytes after the last report)"),
        "count too big": (_header(grr, 4) + good[48:], "promises 4 reports"),
        "outside the domain": (
            _header(grr, 2) + np.array([3, 16], dtype="<u2").tobytes(),
            "must hold integers in 0..15, got one outside at index 1",
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "empty",
        "short header",
        "magic",
        "version",
        "flags",
        "other parameters",
        "other oracle",
        "truncated",
        "trailing",
        "count too big",
        "outside the domain",
    ],
)
def test_a_bad_binary_batch_is_one_clear_error_and_nothing_is_written(
    tmp_path: Path, grr: Any, case: str
) -> None:
    body, message = bad_bodies(grr)[case]
    with pytest.raises(DataError, match="`body`") as info:
        decode_batch(grr, body)
    assert message in str(info.value)
    with pytest.raises(DataError) as again:
        append_batch(tmp_path, "s", grr, body, day=DAY)
    assert message in str(again.value)
    assert visible(tmp_path) == [] and list(tmp_path.rglob(".*")) == []


def test_reports_the_oracle_could_not_have_made_are_refused() -> None:
    oue = OUE.from_epsilon(1.0, k=10)  # 10 bits in 2 bytes: 6 padding bits
    padded = _header(oue, 1) + bytes([0, 0x80])
    with pytest.raises(DataError, match="padding bits"):
        decode_batch(oue, padded)
    olh = OLH(k=10, g=3, p_truthful=0.5)  # (a, b, bucket): the bucket must be below g
    bucket = _header(olh, 1) + np.array([5, 6, 3], dtype="<u8").tobytes()
    with pytest.raises(DataError, match=r"buckets must be in 0\.\.2, got 3"):
        decode_batch(olh, bucket)


def test_a_bad_json_batch_is_one_clear_error(grr: Any) -> None:
    key = grr.key.replace('"', '\\"')
    cases = {
        "[1, 2]": "JSON object with the fields `key` and `reports`",
        '{"key": "x", "reports": [1]}': "batch for 'x'",
        f'{{"key": "{key}", "reports": [1.5]}}': "whole numbers, got 1.5",
        f'{{"key": "{key}", "reports": [1, 16]}}': "integers in 0..15, got one outside at index 1",
        f'{{"key": "{key}", "reports": [1, -1]}}': "got -1",
        f'{{"key": "{key}", "reports": [[1, 2]]}}': "shape (1, 2)",
        f'{{"key": "{key}", "reports": 3}}': "`reports` must be a list",
        "{": "is not JSON",
        f'{{"key": "{key}", "reports": [true, 2]}}': "got true or false",
    }
    for body, message in cases.items():
        with pytest.raises(DataError) as info:
            decode_json_batch(grr, body)
        assert message in str(info.value), (body, str(info.value))
    with pytest.raises(ParameterTypeError, match="`body` must be bytes"):
        decode_batch(grr, "DNRB")  # type: ignore[arg-type]


# ---- streams on disk


def test_a_stream_spec_changed_under_existing_data_is_refused_not_mixed(tmp_path: Path) -> None:
    first = OUE.from_epsilon(1.0, k=10)
    append_batch(tmp_path, "s", first, encode_batch(first, reports_of(first)), day=DAY)
    before = visible(tmp_path)
    for other in (
        OUE.from_epsilon(2.0, k=10),
        OUE.from_epsilon(1.0, k=11),
        GRR.from_epsilon(1.0, 10),
    ):
        body = encode_batch(other, reports_of(other))
        with pytest.raises(DataError) as info:
            append_batch(tmp_path, "s", other, body, day="2026-11-29")
        assert f"holds reports of {first.key}; refusing reports of {other.key}" in str(info.value)
        with pytest.raises(DataError, match="holds reports of"):
            aggregate_stream(tmp_path, "s", other, scheduler="synchronous")
    assert visible(tmp_path) == before  # nothing written, the spec unchanged
    assert stream_oracle(tmp_path, "s") == first
    # partitions whose spec was removed: no append can be checked against them
    (tmp_path / "stream=s" / STREAM_SPEC_FILE).unlink()
    with pytest.raises(DataError, match=r"has partitions but no _stream\.json"):
        append_batch(tmp_path, "s", first, encode_batch(first, reports_of(first)), day=DAY)


def test_concurrent_first_appends_agree_on_one_oracle(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    oracles = [OUE.from_epsilon(1.0, k=10), OUE.from_epsilon(2.0, k=10)] * 4

    def post(oracle: Any) -> str:
        try:
            append_batch(tmp_path, "s", oracle, encode_batch(oracle, reports_of(oracle)), day=DAY)
        except DataError as exc:
            assert "holds reports of" in str(exc)
            return "refused"
        return str(oracle.key)

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(post, oracles))
    winner = stream_oracle(tmp_path, "s").key
    # every append of the stored oracle landed, every other one was refused: never mixed
    assert outcomes == [o.key if o.key == winner else "refused" for o in oracles]
    assert len(stream_files(tmp_path, "s")) == 4
    assert aggregate_stream(tmp_path, "s", scheduler="synchronous").counts[-1] == 4 * 500


def test_days_are_partitions_and_a_day_range_reads_only_its_days(tmp_path: Path) -> None:
    oracle = OLH.from_epsilon(1.0, k=64)
    days = [dt.date(2026, 11, 27) + dt.timedelta(days=i) for i in range(4)]
    batches = {
        d: [reports_of(oracle, 300 + 10 * i, seed=i + j) for j in range(2)]
        for i, d in enumerate(days)
    }
    for d, parts in batches.items():
        for part in parts:
            stored = append_batch(tmp_path, "s", oracle.key, encode_batch(oracle, part), day=d)
            assert stored.path.parent == tmp_path / "stream=s" / f"day={d.isoformat()}"
            assert stored.reports == len(part) and stored.day == d
    middle = stream_files(tmp_path, "s", start="2026-11-28", end=dt.date(2026, 11, 29))
    assert [p.parent.name for p in middle] == ["day=2026-11-28"] * 2 + ["day=2026-11-29"] * 2
    want = oracle.tally(np.concatenate(batches[days[1]] + batches[days[2]]))
    assert (
        aggregate_stream(tmp_path, "s", start=days[1], end=days[2], scheduler="synchronous") == want
    )
    # the partition files are report tables: `aggregate` reads them by their own key
    everything = oracle.tally(np.concatenate([b for d in days for b in batches[d]]))
    assert aggregate(stream_files(tmp_path, "s"), scheduler="synchronous") == everything
    # no file in the range: the tally of no reports
    assert aggregate_stream(tmp_path, "s", start="2027-01-01", scheduler="synchronous").n == 0
    with pytest.raises(ParameterError, match="`start` must not be after `end`"):
        stream_files(tmp_path, "s", start=days[2], end=days[1])


def test_a_group_of_batches_is_one_file_and_one_bad_body_refuses_the_group(
    tmp_path: Path, grr: Any
) -> None:
    parts = [reports_of(grr, 100, seed=i) for i in range(3)]
    stored = append_batches(tmp_path, "s", grr, [encode_batch(grr, p) for p in parts], day=DAY)
    assert stored.reports == 300 and visible(tmp_path) == sorted(
        [stored.path, tmp_path / "stream=s" / STREAM_SPEC_FILE]
    )
    assert np.array_equal(
        pq.read_table(stored.path).column("report").to_numpy(), np.concatenate(parts)
    )
    with pytest.raises(DataError, match=r"`bodies\[1\]`: .*truncated"):
        append_batches(tmp_path, "s", grr, [encode_batch(grr, parts[0]), b"DNRB"], day=DAY)
    assert len(stream_files(tmp_path, "s")) == 1


def test_bad_stream_ids_days_and_bodies_name_the_parameter(tmp_path: Path, grr: Any) -> None:
    body = encode_batch(grr, reports_of(grr, 5))
    for stream in ("", "../up", "a/b", ".hidden", "x=y", "s" * 129):
        with pytest.raises(ParameterError, match="`stream` must be 1 to 128 letters"):
            append_batch(tmp_path, stream, grr, body, day=DAY)
    for day in ("2026-13-01", "28/11/2026", "2026-1-1"):
        with pytest.raises(ParameterError, match="`day` must be a date 'YYYY-MM-DD'"):
            append_batch(tmp_path, "s", grr, body, day=day)
    with pytest.raises(ParameterTypeError, match=r"`day` must be a datetime\.date"):
        append_batch(tmp_path, "s", grr, body, day=dt.datetime(2026, 11, 28))
    with pytest.raises(DataError, match="at least one report"):
        append_batch(tmp_path, "s", grr, encode_batch(grr, np.empty(0, np.uint16)), day=DAY)
    (tmp_path / "file").write_text("")
    with pytest.raises(DataError, match=r"cannot .*file/stream=s.*Not a directory"):
        append_batch(tmp_path / "file", "s", grr, body, day=DAY)
    (tmp_path / "file").unlink()
    with pytest.raises(DataError, match="no stream 'nothing'"):
        aggregate_stream(tmp_path, "nothing", scheduler="synchronous")
    assert visible(tmp_path) == []


def test_a_leftover_temporary_file_is_ignored_by_readers_and_cleaned(
    tmp_path: Path, grr: Any
) -> None:
    reports = reports_of(grr)
    stored = append_reports(tmp_path, "s", grr, reports, day=DAY)
    partial = stored.path.parent / ".part-00000000000000000001-abcdef.parquet.tmp"
    partial.write_bytes(stored.path.read_bytes()[:100])  # a writer killed mid-file
    assert stream_files(tmp_path, "s") == [stored.path]
    assert aggregate_stream(tmp_path, "s", scheduler="synchronous") == grr.tally(reports)
    assert clean_stream(tmp_path, "s") == []  # too young: perhaps a write in progress
    assert partial.exists()
    assert clean_stream(tmp_path, "s", older_than=0) == [partial]
    assert not partial.exists() and stored.path.exists()


def test_an_append_returns_after_the_file_and_its_directories_are_fsynced(
    tmp_path: Path, grr: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, str]] = []
    fsync, link = os.fsync, os.link

    def record_fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        fsync(fd)

    def record_link(src: Any, dst: Any) -> None:
        events.append(("link", os.fspath(dst)))
        link(src, dst)

    monkeypatch.setattr(os, "fsync", record_fsync)
    monkeypatch.setattr(os, "link", record_link)
    root = tmp_path / "root"
    stored = append_batch(root, "s", grr, encode_batch(grr, reports_of(grr)), day=DAY)
    day = stored.path.parent
    tmp = str(day / f".{stored.path.name}.tmp")
    i = events.index(("fsync", tmp))  # the data reached the disk under its temporary name
    assert events[i + 1] == ("link", str(stored.path))  # then was linked to its name
    assert events[i + 2 :] == [("fsync", str(day))]  # and the directory entry made durable
    # every directory the append created was made durable in its parent
    for made in (root, root / "stream=s", day):
        assert ("fsync", str(made.parent)) in events[:i]


# ---- durability: a writer killed by SIGKILL mid-batch

WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from deniable.distributed import append_batch, encode_batch
    from deniable.oracles import GRR
    root, size = sys.argv[1], int(sys.argv[2])
    oracle = GRR.from_epsilon(1.0, k=1000)
    bodies = []
    for i in range(40):  # made first, so that the loop below is all appending
        rng = np.random.default_rng(i)
        bodies.append(encode_batch(oracle, oracle.randomize(rng.integers(0, 1000, size), rng=rng)))
    print("ready", -1, flush=True)
    for i, body in enumerate(bodies):
        append_batch(root, "s", oracle, body, day="2026-11-28")
        print("ack", i, flush=True)
    """
)


def test_a_writer_killed_mid_batch_loses_no_acknowledged_batch(tmp_path: Path) -> None:
    size = 200_000  # a batch takes a few milliseconds to write: the kill lands inside one
    env = dict(os.environ, PYTHONPATH=str(Path(deniable.__file__).parents[1]))
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path), str(size)],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    acked = -1
    assert proc.stdout is not None
    for line in proc.stdout:
        acked = int(line.split()[1])
        if acked == 11:
            break
    # kill while batch 12 is being written: its temporary file exists
    folder = tmp_path / "stream=s" / f"day={DAY}"
    caught = False
    for _ in range(1_000_000):
        if any(folder.glob(".part-*.tmp")):
            os.kill(proc.pid, signal.SIGKILL)
            caught = True
            break
    if not caught:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    assert acked == 11 and caught
    oracle = GRR.from_epsilon(1.0, k=1000)
    files = stream_files(tmp_path, "s")
    assert len(files) >= acked + 1  # every acknowledged batch is there
    for i, path in enumerate(files):  # and whole, in order; no visible file is partial
        rng = np.random.default_rng(i)
        want = oracle.randomize(rng.integers(0, 1000, size), rng=rng)
        assert np.array_equal(pq.read_table(path).column("report").to_numpy(), want), path
    left = clean_stream(tmp_path, "s", older_than=0)
    assert all(p.name.startswith(".part-") and p.name.endswith(".tmp") for p in left)
    assert [p for p in tmp_path.rglob(".*")] == []


# ---- the Dask path


client = cluster_client(processes=False)


@pytest.mark.parametrize(
    "oracle",
    [GRR.from_epsilon(1.0, 16), OUE.from_epsilon(1.0, 20), OLH.from_epsilon(1.0, 64)],
    ids=["grr", "oue", "olh"],
)
def test_a_stream_tallies_the_same_on_a_dask_cluster_as_in_process(
    tmp_path: Path, client: Any, oracle: Any
) -> None:
    parts = []
    for i in range(6):
        part = reports_of(oracle, 200 + 37 * i, seed=i)
        parts.append(part)
        append_batch(tmp_path, "s", oracle, encode_batch(oracle, part), day=f"2026-11-{20 + i % 3}")
    here = aggregate_stream(tmp_path, "s", scheduler="synchronous")
    there = aggregate_stream(tmp_path, "s", scheduler=client, batch=100)
    assert here == there == oracle.tally(np.concatenate(parts))
    assert oracle.estimate(here).values.tolist() == oracle.estimate(there).values.tolist()
