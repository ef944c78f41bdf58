"""RAPPOR in report batches (deniable.batch/1) and telemetry streams: a report is its
cohort (uint16, little-endian) then its m bits packed into m / 8 bytes, in the binary batch;
``[cohort, byte_0, ...]`` in the JSON one; decoded to RapporReports with the shape and every
cohort checked; appended to a stream's Parquet partitions and tallied to exactly
``Rappor.tally`` in process and on a Dask cluster; a bad batch is one clear error and
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
from deniable.exceptions import DataError, ParameterError
from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import Rappor, RapporClient, RapporReports

RAPPOR = Rappor(m=32, h=2, cohorts=8, f=0.5, p=0.5, q=0.75)
DAY = "2026-11-28"


def reports_of(n: int = 400, seed: int = 1, rappor: Rappor = RAPPOR) -> RapporReports:
    rng = np.random.default_rng(seed)
    values = rng.choice(np.asarray(["a", "b", "c"]), size=n, p=[0.6, 0.3, 0.1])
    reports: RapporReports = RapporClient(rappor, InMemoryMemoStore()).report(
        np.arange(n), values, rng=rng
    )
    return reports


def same(a: RapporReports, b: RapporReports) -> bool:
    return np.array_equal(a.cohorts, b.cohorts) and np.array_equal(a.bits, b.bits)


def visible(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


def test_a_rappor_batch_round_trips_at_its_record() -> None:
    reports = reports_of()
    body = encode_batch(RAPPOR, reports)
    assert body[:4] == b"DNRB" and struct.unpack_from("<Q", body, 40)[0] == 400
    # 2 bytes of cohort (little-endian) then m / 8 = 4 bytes of bits, a report
    assert len(body) == BATCH_HEADER_SIZE + 400 * (2 + 4)
    first = body[BATCH_HEADER_SIZE : BATCH_HEADER_SIZE + 6]
    assert struct.unpack_from("<H", first)[0] == reports.cohorts[0]
    assert first[2:] == reports.bits[0].tobytes()
    back = decode_batch(RAPPOR, body)
    assert isinstance(back, RapporReports) and same(back, reports)
    doc = json.loads(encode_json_batch(RAPPOR, reports))
    assert doc["key"] == RAPPOR.key
    assert doc["reports"][0] == [int(reports.cohorts[0]), *reports.bits[0].tolist()]
    assert same(decode_json_batch(RAPPOR, json.dumps(doc)), reports)
    assert RAPPOR.tally(back) == RAPPOR.tally(reports)


def test_a_cohort_is_written_little_endian() -> None:
    big = Rappor(m=8, h=1, cohorts=1000, f=0.5, p=0.5, q=0.75)
    reports = RapporReports(np.array([258, 999]), np.array([[1], [128]], dtype=np.uint8))
    body = encode_batch(big, reports)
    assert body[BATCH_HEADER_SIZE:] == bytes([2, 1, 1, 0xE7, 0x03, 128])


def _header(n: int, key: str = RAPPOR.key) -> bytes:
    import hashlib

    return struct.pack("<4sHH32sQ", b"DNRB", 1, 0, hashlib.sha256(key.encode()).digest(), n)


def bad_bodies() -> dict[str, tuple[bytes, str]]:
    good = encode_batch(RAPPOR, reports_of(3))
    other = Rappor(m=32, h=2, cohorts=8, f=0.5, p=0.25, q=0.75)  # another IRR
    cohort = bytearray(good)
    cohort[BATCH_HEADER_SIZE + 6 : BATCH_HEADER_SIZE + 8] = struct.pack("<H", 8)
    return {
        "truncated": (good[:-1], "holds 2 whole reports and 5 bytes of a partial one (truncated)"),
        "one byte short of a report": (good[:-6], "holds 2 whole reports (truncated)"),
        "trailing": (good + b"\0" * 6, "holds 4 whole reports (bytes after the last report)"),
        "cohort out of range": (bytes(cohort), "report 1 has cohort 8; a cohort must be in 0..7"),
        "other parameters": (encode_batch(other, reports_of(3, rappor=other)), "other parameters"),
        "another oracle's width": (_header(1) + bytes(5), "reports of 6 bytes"),
    }


@pytest.mark.parametrize("case", list(bad_bodies()))
def test_a_bad_rappor_batch_is_one_clear_error_and_nothing_is_stored(
    tmp_path: Path, case: str
) -> None:
    body, message = bad_bodies()[case]
    with pytest.raises(DataError, match="`body`") as info:
        decode_batch(RAPPOR, body)
    assert message in str(info.value)
    with pytest.raises(DataError) as again:
        append_batch(tmp_path, "s", RAPPOR, body, day=DAY)
    assert message in str(again.value)
    # one bad body refuses a group, naming it
    good = encode_batch(RAPPOR, reports_of(2))
    with pytest.raises(DataError, match=r"`bodies\[1\]`"):
        append_batches(tmp_path, "s", RAPPOR, [good, body], day=DAY)
    assert visible(tmp_path) == [] and list(tmp_path.rglob(".*")) == []


@pytest.mark.parametrize(
    ("reports", "message"),
    [
        ([[1, 0, 0, 0]], "lists of 5 whole numbers [cohort, byte_0, ..., byte_3]"),
        ([[8, 0, 0, 0, 0]], "report 0 has cohort 8; a cohort must be in 0..7"),
        ([[0, 0, 0, 0, 0], [-1, 0, 0, 0, 0]], "report 1 has cohort -1"),
        ([[1, 0, 256, 0, 0]], "report 0 holds a byte outside 0..255"),
        ([[1, 0, 0, 0, 0], [1, 0]], "lists of 5 whole numbers"),
        ([[1, 0, 0, 0, 2**70]], "lists of 5 whole numbers"),
        ([3], "lists of 5 whole numbers"),
    ],
)
def test_a_bad_rappor_json_batch_is_one_clear_error(reports: Any, message: str) -> None:
    body = json.dumps({"key": RAPPOR.key, "reports": reports})
    with pytest.raises(DataError) as info:
        decode_json_batch(RAPPOR, body)
    assert message in str(info.value), str(info.value)


def test_encoding_refuses_reports_rappor_would_refuse(tmp_path: Path) -> None:
    wrong = RapporReports(np.array([1]), np.zeros((1, 2), dtype=np.uint8))  # m = 16, not 32
    with pytest.raises(DataError, match=r"`reports`: `reports\.bits` must be a 2-D uint8 array"):
        encode_batch(RAPPOR, wrong)
    with pytest.raises(DataError, match="must be RapporReports"):
        encode_batch(RAPPOR, np.zeros((1, 6), dtype=np.uint8))
    out_of_range = RapporReports(np.array([9]), np.zeros((1, 4), dtype=np.uint8))
    with pytest.raises(ParameterError, match=r"`cohorts` must be in 0..7 \(cohorts = 8\), got 9"):
        append_reports(tmp_path, "s", RAPPOR, out_of_range, day=DAY)
    assert visible(tmp_path) == []


def test_a_rappor_stream_holds_its_reports_in_its_columns(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    first, second = reports_of(300, seed=2), reports_of(200, seed=3)
    append_batch(tmp_path, "r", RAPPOR, encode_batch(RAPPOR, first), day=DAY)
    append_reports(tmp_path, "r", RAPPOR.key, second, day="2026-11-29")
    assert stream_oracle(tmp_path, "r") == RAPPOR
    files = stream_files(tmp_path, "r")
    table = pq.read_table(files[0])
    assert table.column_names == ["cohort", "report_0", "report_1", "report_2", "report_3"]
    assert table.column("cohort").to_pylist() == first.cohorts.tolist()
    every = RAPPOR.tally(first) + RAPPOR.tally(second)
    assert aggregate_stream(tmp_path, "r", scheduler="synchronous") == every
    one = aggregate_stream(tmp_path, "r", start="2026-11-29", scheduler="synchronous")
    assert one == RAPPOR.tally(second)
    # another RAPPOR (another f) is refused, not mixed into the stream
    other = Rappor(m=32, h=2, cohorts=8, f=0.25, p=0.5, q=0.75)
    with pytest.raises(DataError, match="a stream's oracle and its parameters never change"):
        append_batch(tmp_path, "r", other, encode_batch(other, reports_of(5, rappor=other)),
                     day=DAY)  # fmt: skip
    assert len(stream_files(tmp_path, "r")) == 2


client = cluster_client(processes=False)


def test_a_rappor_stream_tallies_the_same_on_a_dask_cluster_as_in_process(
    tmp_path: Path, client: Any
) -> None:
    parts = []
    for i in range(5):
        part = reports_of(150 + 41 * i, seed=10 + i)
        parts.append(part)
        bodies = [encode_batch(RAPPOR, part[:60]), encode_batch(RAPPOR, part[60:])]
        append_batches(tmp_path, "s", RAPPOR, bodies, day=f"2026-11-{20 + i % 3}")
    here = aggregate_stream(tmp_path, "s", scheduler="synchronous")
    there = aggregate_stream(tmp_path, "s", scheduler=client, batch=100)
    expected = RAPPOR.tally(RapporReports(np.concatenate([p.cohorts for p in parts]),
                                          np.concatenate([p.bits for p in parts])))  # fmt: skip
    assert here == there == expected
    cand = ["a", "b", "c", "d"]
    assert np.array_equal(RAPPOR.decode(here, cand).values, RAPPOR.decode(there, cand).values)
