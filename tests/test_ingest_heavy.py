"""PEM and TreeHist in report batches (deniable.batch/1) and telemetry streams: a record is
its 2 + l W uint64 words (group, rows, bucket), checked whole naming the report; a stream's
partitions hold the device records, and its heavy hitters read on a Dask cluster equal the
protocol's estimate of the same records in process; a bad batch is one clear error and
nothing is stored."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _distributed import cluster_client
from deniable.distributed import (
    BATCH_HEADER_SIZE,
    aggregate_heavy_stream,
    aggregate_stream,
    append_batch,
    append_batches,
    append_reports,
    decode_batch,
    decode_json_batch,
    encode_batch,
    encode_json_batch,
    stream_files,
    stream_oracle,
)
from deniable.exceptions import DataError
from deniable.oracles import (
    OUE,
    PEM,
    TreeHist,
    heavy_device_records,
    heavy_from_records,
    heavy_spec,
)

PEM_ = PEM(epsilon=4.0, max_bytes=2, start_bits=8, step_bits=8, top_k=4)  # g = 64: l = 6
TREE = TreeHist(epsilon=2.0, max_bytes=2, top_k=4)
DAY = "2026-11-28"


def items(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    words = np.array(["hi", "yo", "ok", "no", "zz"])
    return [str(s) for s in rng.choice(words, size=n, p=[0.4, 0.3, 0.15, 0.1, 0.05])]


def visible(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


def test_a_heavy_batch_round_trips_at_its_record() -> None:
    rec = heavy_device_records(PEM_, items(200, 1), rng=2)
    body = encode_batch(PEM_, rec)
    width = 2 + 6 * 1  # the group, l = 6 rows of W = 1 word, the bucket
    assert len(body) == BATCH_HEADER_SIZE + 200 * 8 * width
    assert struct.unpack_from("<Q", body, BATCH_HEADER_SIZE)[0] == rec[0, 0]
    assert struct.unpack_from("<Q", body, BATCH_HEADER_SIZE + 8 * (width - 1))[0] == rec[0, -1]
    back = decode_batch(PEM_, body)
    assert back.dtype == np.uint64 and np.array_equal(back, rec)
    doc = json.loads(encode_json_batch(PEM_, rec))
    assert doc["key"] == PEM_.key and doc["reports"][0] == [int(x) for x in rec[0]]
    assert np.array_equal(decode_json_batch(PEM_, json.dumps(doc)), rec)


def _bad() -> dict[str, tuple[bytes, str]]:
    rec = heavy_device_records(PEM_, items(5, 3), rng=4)
    good = encode_batch(PEM_, rec)
    at = BATCH_HEADER_SIZE
    group = bytearray(good)
    struct.pack_into("<Q", group, at + 8 * 8 * 1, 2)  # report 1's group: 2 of 0..1
    row = bytearray(good)
    j = int(rec[2, 0])
    bits = PEM_.levels[j]
    struct.pack_into("<Q", row, at + 8 * (8 * 2 + 1), int(rec[2, 1]) | (1 << (63 - bits)))
    bucket = bytearray(good)
    struct.pack_into("<Q", bucket, at + 8 * (8 * 3 + 7), 64)
    other = PEM(epsilon=4.0, max_bytes=2, start_bits=8, step_bits=4)
    return {
        "truncated": (good[:-3], "(truncated)"),
        "bytes after": (good + b"\0" * 8, "bytes after the last report"),
        "group": (bytes(group), "report 1 has group 2; a group must be in 0..1"),
        "row": (bytes(row), f"report 2 of group {j} has a row bit past its group's prefix"),
        "bucket": (bytes(bucket), "report 3 has bucket 64; a bucket must be in 0..63"),
        "other": (encode_batch(other, heavy_device_records(other, ["a"], rng=1)), "other"),
    }


@pytest.mark.parametrize("case", list(_bad()))
def test_a_bad_heavy_batch_is_one_clear_error_and_nothing_is_stored(
    tmp_path: Path, case: str
) -> None:
    body, words = _bad()[case]
    with pytest.raises(DataError, match="`body`") as info:
        append_batch(tmp_path, "s", PEM_, body, day=DAY)
    assert words in str(info.value)
    assert visible(tmp_path) == []


@pytest.mark.parametrize(
    ("reports", "message"),
    [
        ([[0, 0, 0, 0, 0, 0, 0]], r"lists of 8 whole numbers, got .* shape \(1, 7\)"),
        ([[2, 0, 0, 0, 0, 0, 0, 0]], "report 0 has group 2"),
        ([[0, 1, 0, 0, 0, 0, 0, 0]], "report 0 of group 0 has a row bit past"),
        ([[0, 0, 0, 0, 0, 0, 0, 64]], "report 0 has bucket 64"),
        ([[0, 0, 0, 0, 0, 0, 0, 2**64]], "whole numbers"),
        ([[0, 0, 0, 0, 0, 0, 0, -1]], "whole numbers|0..18446744073709551615"),
        ([[0, 0, 0, 0, 0, 0, 0, 1.0]], "must be whole numbers, got 1.0"),
    ],
)
def test_a_bad_heavy_json_batch_is_one_clear_error(reports: Any, message: str) -> None:
    body = json.dumps({"key": PEM_.key, "reports": reports})
    with pytest.raises(DataError, match=message):
        decode_json_batch(PEM_, body)


def test_a_heavy_stream_holds_records_and_is_not_tallied(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    rec = heavy_device_records(TREE, items(300, 5), rng=6)
    append_batch(tmp_path, "t", TREE, encode_batch(TREE, rec), day=DAY)
    assert stream_oracle(tmp_path, "t").key == TREE.key  # read back by the stored key
    table = pq.read_table(stream_files(tmp_path, "t")[0])
    words = 1 + TREE.base.bucket_bits  # l rows of one word, the bucket
    assert table.column_names == ["group", *(f"report_{i}" for i in range(words))]
    assert table.column("group").to_pylist() == rec[:, 0].tolist()
    again = heavy_device_records(TREE, items(10, 7), rng=8)  # the spec names it too
    for named in (heavy_spec(TREE), json.dumps(heavy_spec(TREE))):
        assert append_reports(tmp_path, "t", named, again, day=DAY).reports == 10
    with pytest.raises(DataError, match="estimated round by round, not tallied"):
        aggregate_stream(tmp_path, "t", scheduler="synchronous")
    append_batch(tmp_path, "o", OUE(k=4, q=0.25), encode_batch(OUE(k=4, q=0.25),
                 OUE(k=4, q=0.25).randomize([1, 2], rng=1)), day=DAY)  # fmt: skip
    with pytest.raises(DataError, match="not a heavy-hitter one"):
        aggregate_heavy_stream(tmp_path, "o", scheduler="synchronous")
    with pytest.raises(DataError, match="no reports in the days"):
        aggregate_heavy_stream(tmp_path, "t", start="2026-11-29", scheduler="synchronous")


client = cluster_client(processes=False)


def test_a_heavy_stream_reads_the_same_on_a_dask_cluster_as_in_process(
    tmp_path: Path, client: Any
) -> None:
    parts = []
    for i in range(3):
        rec = heavy_device_records(PEM_, items(3000 + 400 * i, 10 + i), rng=20 + i)
        parts.append(rec)
        bodies = [encode_batch(PEM_, rec[:1000]), encode_batch(PEM_, rec[1000:])]
        append_batches(tmp_path, "p", PEM_, bodies, day=f"2026-11-{20 + i}")
    every = np.concatenate(parts)
    want = PEM_.estimate(heavy_from_records(PEM_, every))
    here = aggregate_heavy_stream(tmp_path, "p", scheduler="synchronous", top_k=4)
    there = aggregate_heavy_stream(tmp_path, "p", scheduler=client, batch=700, top_k=4)
    assert here == there == want
    assert want.strings[:2] == ("hi", "yo")
    # one day alone: its records only
    day = aggregate_heavy_stream(tmp_path, "p", start="2026-11-21", end="2026-11-21",
                                 scheduler="synchronous", top_k=4)  # fmt: skip
    assert day == PEM_.estimate(heavy_from_records(PEM_, parts[1]))
